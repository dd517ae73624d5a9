// Content-addressed artifact store: sources, binaries, logs, reports, debugger JSON — any bytes,
// named by their sha256 and kept under ROOT/artifacts/sha256/ab/abcdef... (ab = first two hex
// digits, so no directory grows past a few thousand entries).
//
// - Put is atomic (temp file in the same directory, fsync, rename, fsync of the directory): a
//   reader or a crash never sees half an artifact. Putting content that exists is a no-op.
// - Get re-hashes what it reads; a file whose content no longer matches its name is reported
//   as corrupted (naming the sha) and left where it is.
// - Nothing is ever deleted. A corrupted file that a Put would replace is first moved aside to
//   ROOT/artifacts/quarantine/.
// - Metadata (size, media type) lives beside each artifact in `<sha>.meta.json`.
// Safe for several processes at once: every write is a rename of a private temp file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "support/status.h"

namespace mk::store {

struct ArtifactInfo {
  std::string sha256;
  int64_t size = 0;
  std::string media_type;  // "text/x-c++src", "application/x-sharedlib", "application/json", ...
};

class ArtifactStore {
 public:
  // `root` is the data directory (data_dir.h); artifacts go under root/artifacts/.
  explicit ArtifactStore(std::filesystem::path root);

  // Stores `bytes` (when not already there) and returns its sha256.
  Result<std::string> Put(std::string_view bytes,
                          std::string_view media_type = "application/octet-stream");
  // The bytes of artifact `sha256`, verified against the name. NotFound when absent.
  Result<std::string> Get(std::string_view sha256) const;
  // Size and media type without reading the content.
  Result<ArtifactInfo> Stat(std::string_view sha256) const;
  bool Contains(std::string_view sha256) const;

  // Where artifact `sha256` lives (whether or not it exists). `sha256` must be valid.
  std::filesystem::path PathFor(std::string_view sha256) const;
  const std::filesystem::path& artifacts_root() const { return artifacts_root_; }

  static bool IsValidSha256(std::string_view text);

 private:
  Status WriteMetadata(const ArtifactInfo& info) const;

  std::filesystem::path artifacts_root_;  // root/artifacts
};

}  // namespace mk::store
