// The audit log's outside anchor: every event of the store's chain (store/audit_chain.h) is
// also written, in order, as one JSON line with an HMAC under the server's key, to a file that a
// log shipper (Loki, Vector, ...) can take off the machine. `Sync()` after each change writes
// whatever the file lacks, so a crash between a commit and its line only delays the line.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "store/access.h"
#include "store/audit_chain.h"
#include "support/status.h"

namespace mk::server {

// The HMAC key: read from `path`, or made (32 random bytes, hex) when the file is missing. The
// file must be private to its owner (mode 0600): a key others can read anchors nothing.
Result<std::string> LoadOrCreateAuditKey(const std::string& path);

class AuditLog {
 public:
  // Reads the file's last event id, so that Sync() continues after it.
  static Result<std::unique_ptr<AuditLog>> Open(store::AccessStore& access,
                                                std::string jsonl_path, std::string key);

  // Appends the events the file does not have yet. Thread-safe.
  Status Sync();
  // Checks the store's chain and the file's anchors (what `maxkernel audit verify` prints).
  Result<store::AuditVerdict> Verify();

  const std::string& path() const { return path_; }

 private:
  AuditLog(store::AccessStore& access, std::string path, std::string key, int64_t last_id)
      : access_(access), path_(std::move(path)), key_(std::move(key)), last_id_(last_id) {}

  store::AccessStore& access_;
  const std::string path_;
  const std::string key_;
  std::mutex mu_;
  int64_t last_id_ = 0;
};

}  // namespace mk::server
