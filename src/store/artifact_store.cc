#include "store/artifact_store.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>

#include "support/sha256.h"

namespace mk::store {

namespace fs = std::filesystem;

namespace {

std::string ErrnoText(int error) {
  return std::strerror(error);
}

Result<std::string> ReadWholeFile(const fs::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int error = errno;
    if (error == ENOENT) return NotFound(path.string() + " does not exist");
    return IoError("cannot open " + path.string() + ": " + ErrnoText(error));
  }
  std::string data;
  char buffer[1 << 16];
  while (true) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int error = errno;
      ::close(fd);
      return IoError("cannot read " + path.string() + ": " + ErrnoText(error));
    }
    if (n == 0) break;
    data.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return data;
}

Status FsyncDirectory(const fs::path& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return IoError("cannot open directory " + dir.string() + ": " + ErrnoText(errno));
  int rc = ::fsync(fd);
  int error = errno;
  ::close(fd);
  if (rc != 0) return IoError("cannot fsync directory " + dir.string() + ": " + ErrnoText(error));
  return Status::Ok();
}

// Writes `bytes` to dir/name so that the name appears only with the complete, flushed content.
Status WriteFileAtomically(const fs::path& dir, const std::string& name, std::string_view bytes) {
  std::string temp = (dir / ("." + name + ".tmp-XXXXXX")).string();
  int fd = ::mkstemp(temp.data());
  if (fd < 0)
    return IoError("cannot create a temp file in " + dir.string() + ": " + ErrnoText(errno));
  auto fail = [&](const std::string& what) {
    int error = errno;
    ::close(fd);
    ::unlink(temp.c_str());  // our own unfinished temp file, never stored data
    return IoError(what + " " + temp + ": " + ErrnoText(error));
  };
  size_t written = 0;
  while (written < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail("cannot write");
    written += static_cast<size_t>(n);
  }
  // mkstemp makes 0600 files; artifacts are meant to be read by other tools and users.
  if (::fchmod(fd, 0644) != 0) return fail("cannot chmod");
  if (::fsync(fd) != 0) return fail("cannot fsync");
  if (::close(fd) != 0) {
    int error = errno;
    ::unlink(temp.c_str());
    return IoError("cannot close " + temp + ": " + ErrnoText(error));
  }
  fs::path final_path = dir / name;
  if (::rename(temp.c_str(), final_path.c_str()) != 0) {
    int error = errno;
    ::unlink(temp.c_str());
    return IoError("cannot rename " + temp + " to " + final_path.string() + ": " +
                   ErrnoText(error));
  }
  return FsyncDirectory(dir);
}

Status MakeDirectories(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return IoError("cannot create directory " + dir.string() + ": " + ec.message());
  return Status::Ok();
}

bool ValidMediaType(std::string_view type) {
  if (type.empty() || type.size() > 255 || type.find('/') == std::string_view::npos) return false;
  for (char c : type) {
    if (static_cast<unsigned char>(c) <= ' ' || c == '"' || c == '\\' || c == 127) return false;
  }
  return true;
}

}  // namespace

ArtifactStore::ArtifactStore(fs::path root) : artifacts_root_(std::move(root) / "artifacts") {}

bool ArtifactStore::IsValidSha256(std::string_view text) {
  if (text.size() != 64) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

fs::path ArtifactStore::PathFor(std::string_view sha256) const {
  std::string sha(sha256);
  return artifacts_root_ / "sha256" / sha.substr(0, 2) / sha;
}

Status ArtifactStore::WriteMetadata(const ArtifactInfo& info) const {
  nlohmann::ordered_json meta;
  meta["sha256"] = info.sha256;
  meta["size"] = info.size;
  meta["media_type"] = info.media_type;
  fs::path data_path = PathFor(info.sha256);
  return WriteFileAtomically(data_path.parent_path(), info.sha256 + ".meta.json",
                             meta.dump(2) + "\n");
}

Result<std::string> ArtifactStore::Put(std::string_view bytes, std::string_view media_type) {
  if (!ValidMediaType(media_type)) {
    return InvalidArgument("invalid media type '" + std::string(media_type.substr(0, 80)) +
                           "' (expected type/subtype)");
  }
  ArtifactInfo info{Sha256Hex(bytes), static_cast<int64_t>(bytes.size()), std::string(media_type)};
  fs::path path = PathFor(info.sha256);
  fs::path dir = path.parent_path();
  MK_RETURN_IF_ERROR(MakeDirectories(dir));

  Result<std::string> existing = ReadWholeFile(path);
  if (existing.ok() && Sha256Hex(*existing) == info.sha256) {
    // Already stored. The first media type wins; only a missing sidecar (a crash between the
    // two renames) is written now.
    std::error_code ec;
    if (!fs::exists(dir / (info.sha256 + ".meta.json"), ec))
      MK_RETURN_IF_ERROR(WriteMetadata(info));
    return info.sha256;
  }
  if (existing.ok()) {
    // The file under this name is damaged. Keep it (the store never deletes) out of the way.
    fs::path quarantine = artifacts_root_ / "quarantine";
    MK_RETURN_IF_ERROR(MakeDirectories(quarantine));
    auto stamp = std::chrono::system_clock::now().time_since_epoch().count();
    fs::path aside = quarantine / (info.sha256 + "." + std::to_string(stamp));
    if (::rename(path.c_str(), aside.c_str()) != 0) {
      return IoError("cannot move corrupted artifact " + path.string() + " to " + aside.string() +
                     ": " + ErrnoText(errno));
    }
  } else if (existing.status().code() != ErrorCode::kNotFound) {
    return existing.status();
  }
  MK_RETURN_IF_ERROR(WriteFileAtomically(dir, info.sha256, bytes));
  MK_RETURN_IF_ERROR(WriteMetadata(info));
  return info.sha256;
}

Result<std::string> ArtifactStore::Get(std::string_view sha256) const {
  if (!IsValidSha256(sha256)) {
    return InvalidArgument("'" + std::string(sha256.substr(0, 80)) +
                           "' is not a sha256 (64 lowercase hex digits)");
  }
  fs::path path = PathFor(sha256);
  Result<std::string> data = ReadWholeFile(path);
  if (!data.ok()) {
    if (data.status().code() == ErrorCode::kNotFound) {
      return NotFound("artifact " + std::string(sha256) + " not found");
    }
    return data.status().WithContext("artifact " + std::string(sha256));
  }
  std::string actual = Sha256Hex(*data);
  if (actual != sha256) {
    return IoError("artifact " + std::string(sha256) + " is corrupted: its content (" +
                   path.string() + ") hashes to " + actual + "; the file was left in place");
  }
  return data;
}

Result<ArtifactInfo> ArtifactStore::Stat(std::string_view sha256) const {
  if (!IsValidSha256(sha256)) {
    return InvalidArgument("'" + std::string(sha256.substr(0, 80)) +
                           "' is not a sha256 (64 lowercase hex digits)");
  }
  fs::path path = PathFor(sha256);
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return NotFound("artifact " + std::string(sha256) + " not found");
    return IoError("cannot stat " + path.string() + ": " + ErrnoText(errno));
  }
  ArtifactInfo info{std::string(sha256), static_cast<int64_t>(st.st_size),
                    "application/octet-stream"};
  fs::path meta_path = path.parent_path() / (std::string(sha256) + ".meta.json");
  Result<std::string> meta_text = ReadWholeFile(meta_path);
  if (meta_text.ok()) {
    auto meta = nlohmann::json::parse(*meta_text, nullptr, /*allow_exceptions=*/false);
    if (meta.is_object() && meta.contains("media_type") && meta["media_type"].is_string()) {
      info.media_type = meta["media_type"].get<std::string>();
    }
  }
  return info;
}

bool ArtifactStore::Contains(std::string_view sha256) const {
  if (!IsValidSha256(sha256)) return false;
  std::error_code ec;
  return fs::is_regular_file(PathFor(sha256), ec);
}

}  // namespace mk::store
