#include "server/audit_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>

#include "server/secrets.h"
#include "support/regular_file.h"

namespace mk::server {

namespace {

Status WriteAll(int fd, const std::string& text, const std::string& path) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return IoError("cannot write " + path + ": " + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

// The id of the file's last complete line (0 when the file is missing or empty).
Result<int64_t> LastAnchoredId(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return int64_t{0};
  MK_ASSIGN_OR_RETURN(std::string text, ReadRegularFile(path));
  while (!text.empty() && text.back() == '\n') text.pop_back();
  if (text.empty()) return int64_t{0};
  const size_t start = text.rfind('\n');
  const auto line = nlohmann::json::parse(
      text.substr(start == std::string::npos ? 0 : start + 1), nullptr, false);
  if (!line.is_object() || !line.contains("id") || !line["id"].is_number_integer()) {
    return InvalidArgument(path + ": the last line is not an audit event; the file was cut or "
                                  "edited (run `maxkernel audit verify`)");
  }
  return line["id"].get<int64_t>();
}

}  // namespace

Result<std::string> LoadOrCreateAuditKey(const std::string& path) {
  MK_RETURN_IF_ERROR(InitSecrets());
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if ((st.st_mode & 077) != 0) {
      char mode[8];
      std::snprintf(mode, sizeof mode, "%03o", static_cast<unsigned>(st.st_mode & 0777));
      return InvalidArgument("audit key " + path + " can be read by others (mode " + mode +
                             "); chmod 600 it");
    }
    MK_ASSIGN_OR_RETURN(std::string key, ReadRegularFile(path, 4096));
    while (!key.empty() && (key.back() == '\n' || key.back() == ' ')) key.pop_back();
    if (key.size() < 32) return InvalidArgument("audit key " + path + " is shorter than 32 characters");
    return key;
  }
  const std::string key = RandomHex(32);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return IoError("cannot create audit key " + path + ": " + std::strerror(errno));
  Status written = WriteAll(fd, key + "\n", path);
  ::close(fd);
  MK_RETURN_IF_ERROR(written);
  return key;
}

Result<std::unique_ptr<AuditLog>> AuditLog::Open(store::AccessStore& access,
                                                 std::string jsonl_path, std::string key) {
  MK_ASSIGN_OR_RETURN(int64_t last, LastAnchoredId(jsonl_path));
  return std::unique_ptr<AuditLog>(new AuditLog(access, std::move(jsonl_path), std::move(key), last));
}

Status AuditLog::Sync() {
  std::lock_guard lock(mu_);
  MK_ASSIGN_OR_RETURN(auto events, access_.ListAudit(last_id_, 0));
  if (events.empty()) return Status::Ok();
  std::string text;
  for (const auto& e : events) text += store::AuditJsonLine(e, key_) + "\n";
  const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return IoError("cannot open audit log " + path_ + ": " + std::strerror(errno));
  Status written = WriteAll(fd, text, path_);
  if (written.ok() && ::fsync(fd) != 0) written = IoError("cannot fsync " + path_);
  ::close(fd);
  MK_RETURN_IF_ERROR(written);
  last_id_ = events.back().id;
  return Status::Ok();
}

Result<store::AuditVerdict> AuditLog::Verify() {
  std::lock_guard lock(mu_);
  MK_ASSIGN_OR_RETURN(auto events, access_.ListAudit(0, 0));
  std::string text;
  struct stat st;
  if (::stat(path_.c_str(), &st) == 0) {
    MK_ASSIGN_OR_RETURN(text, ReadRegularFile(path_));
  }
  return store::VerifyAudit(events, text, key_);
}

}  // namespace mk::server
