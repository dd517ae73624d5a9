// The oracle's expected outputs, kept on disk between processes: interpreting a module can take
// minutes, and every `check` and `optimize` of the same task on the same seeds wants the same
// answer. An entry is keyed by the sha256 of (interpreter version, module text, the inputs'
// shapes and bytes, the precision option): the inputs stand for (seed, generators), so an edited
// task.yaml never reuses another task's answer. Each entry is stored with the sha256 of its bytes
// and verified on every read; an entry that does not verify (or does not fit the module's output
// shapes) is removed and recomputed, so the cache cannot be used to plant expected results. The
// directory is private to the user (0700, files 0600), like the compile cache it lives in.
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

class ReferenceDiskCache {
 public:
  explicit ReferenceDiskCache(std::string dir) : dir_(std::move(dir)) {}

  static std::string Key(const hlo::Module& module, const std::vector<hlo::Literal>& args,
                         bool high_precision);

  // The outputs stored under `key`, when present, verified and of the `leaf_shapes` given.
  std::optional<std::vector<hlo::Literal>> Load(const std::string& key,
                                                const std::vector<hlo::Shape>& leaf_shapes);
  // Stores `leaves` under `key` (atomically; a failure to write only costs a recomputation).
  Status Store(const std::string& key, const std::vector<hlo::Literal>& leaves);

  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

}  // namespace mk::agents
