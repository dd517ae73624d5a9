// The oracle's expected outputs, kept on disk between processes: interpreting a module can take
// minutes, and every `check` and `optimize` of the same task on the same seeds wants the same
// answer. An entry is keyed by the sha256 of (interpreter version, module text, the inputs'
// shapes and bytes, the precision option): the inputs stand for (seed, generators), so an edited
// task.yaml never reuses another task's answer. Each entry is stored with the sha256 of its bytes
// and verified on every read; an entry that does not verify (or does not fit the module's output
// shapes) is removed and recomputed, so the cache cannot be used to plant expected results. The
// directory is private to the user (0700, files 0600), like the compile cache it lives in.
// It is bounded: after each store the least recently used entries (by modification time, which
// a verified read renews) are removed until the entries' total fits the cap.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hlo/literal.h"
#include "hlo/module.h"
#include "support/status.h"

namespace mk::agents {

// Bump when the interpreter's numerics change: old entries then stop matching.
inline constexpr const char* kReferenceInterpreterVersion = "interp-1";

// The default cap on the entries' total size: a few full-scale expected outputs (13p's logits
// are 4 GiB at full scale; such an entry is stored and then pruned by the next store).
inline constexpr int64_t kReferenceCacheMaxBytes = int64_t{2} << 30;

class ReferenceDiskCache {
 public:
  explicit ReferenceDiskCache(std::string dir, int64_t max_bytes = kReferenceCacheMaxBytes)
      : dir_(std::move(dir)), max_bytes_(max_bytes) {}

  static std::string Key(const hlo::Module& module, const std::vector<hlo::Literal>& args,
                         bool high_precision);

  // The outputs stored under `key`, when present, verified and of the `leaf_shapes` given.
  std::optional<std::vector<hlo::Literal>> Load(const std::string& key,
                                                const std::vector<hlo::Shape>& leaf_shapes);
  // Stores `leaves` under `key` (atomically; a failure to write only costs a recomputation).
  Status Store(const std::string& key, const std::vector<hlo::Literal>& leaves);

  const std::string& dir() const { return dir_; }

  // Removes least recently used entries (data and record) until the entries' total size is at
  // most the cap, keeping `keep` (the entry just stored) if it alone exceeds it. Returns how
  // many entries were removed.
  int Prune(const std::string& keep = "");

 private:
  std::string dir_;
  int64_t max_bytes_;
};

}  // namespace mk::agents
