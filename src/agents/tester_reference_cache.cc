#include "agents/tester_reference_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sys/time.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>

#include "hlo/printer.h"
#include "runtime/compiler.h"
#include "support/regular_file.h"
#include "support/sha256.h"

namespace mk::agents {

namespace fs = std::filesystem;

namespace {

// A cache file's bytes; nothing for a missing or unreadable one, a symlink or a non-file.
std::optional<std::string> ReadRegular(const fs::path& path) {
  Result<std::string> data = ReadRegularFile(path.string(), std::numeric_limits<uint64_t>::max(),
                                             "a cache file", Symlinks::kRefuse);
  if (!data.ok()) return std::nullopt;
  return std::move(*data);
}

Status WritePrivateAtomic(const fs::path& path, const std::string& data) {
  fs::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return IoError("cannot write " + tmp.string() + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      ::unlink(tmp.c_str());
      return IoError("cannot write " + tmp.string());
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return IoError("cannot write " + path.string());
  }
  return Status::Ok();
}

}  // namespace

std::string ReferenceDiskCache::Key(const hlo::Module& module,
                                    const std::vector<hlo::Literal>& args, bool high_precision) {
  std::string text = std::string(kReferenceInterpreterVersion) + "\n";
  text += high_precision ? "high\n" : "default\n";
  text += Sha256Hex(hlo::PrintModule(module)) + "\n";
  for (const hlo::Literal& arg : args) {
    text += arg.shape().ToString(false) + " ";
    text += Sha256Hex(std::string_view(reinterpret_cast<const char*>(arg.raw()), arg.raw_size()));
    text += "\n";
  }
  return Sha256Hex(text);
}

std::optional<std::vector<hlo::Literal>> ReferenceDiskCache::Load(
    const std::string& key, const std::vector<hlo::Shape>& leaf_shapes) {
  // Only a directory that is ours and private can hold answers we trust.
  if (dir_.empty() || !runtime::EnsurePrivateDirectory(dir_).ok()) return std::nullopt;
  fs::path data_path = fs::path(dir_) / (key + ".out");
  fs::path record_path = fs::path(dir_) / (key + ".out.sha256");
  std::optional<std::string> data = ReadRegular(data_path);
  if (!data) return std::nullopt;
  std::optional<std::string> record = ReadRegular(record_path);
  std::vector<hlo::Literal> leaves;
  size_t offset = 0;
  bool fits = record && record->substr(0, record->find_first_of(" \n")) == Sha256Hex(*data);
  for (size_t i = 0; fits && i < leaf_shapes.size(); ++i) {
    hlo::Literal leaf(leaf_shapes[i]);
    if (offset + leaf.raw_size() > data->size()) {
      fits = false;
      break;
    }
    std::memcpy(leaf.raw(), data->data() + offset, leaf.raw_size());
    offset += leaf.raw_size();
    leaves.push_back(std::move(leaf));
  }
  if (!fits || offset != data->size()) {
    // Tampered with, truncated or from another layout: never used, recomputed instead.
    std::error_code ec;
    fs::remove(data_path, ec);
    fs::remove(record_path, ec);
    return std::nullopt;
  }
  ::utimes(data_path.c_str(), nullptr);  // recently used: the last to be pruned
  return leaves;
}

Status ReferenceDiskCache::Store(const std::string& key, const std::vector<hlo::Literal>& leaves) {
  if (dir_.empty()) return Status::Ok();
  MK_RETURN_IF_ERROR(runtime::EnsurePrivateDirectory(dir_));
  std::string data;
  for (const hlo::Literal& leaf : leaves) {
    data.append(reinterpret_cast<const char*>(leaf.raw()), leaf.raw_size());
  }
  fs::path data_path = fs::path(dir_) / (key + ".out");
  // The record first: data without a matching record is never used.
  MK_RETURN_IF_ERROR(
      WritePrivateAtomic(fs::path(dir_) / (key + ".out.sha256"), Sha256Hex(data) + "\n"));
  MK_RETURN_IF_ERROR(WritePrivateAtomic(data_path, data));
  Prune(key);
  return Status::Ok();
}

int ReferenceDiskCache::Prune(const std::string& keep) {
  struct Entry {
    fs::path data;
    int64_t bytes;
    fs::file_time_type used;
  };
  std::vector<Entry> entries;
  int64_t total = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    if (p.extension() != ".out" || !it->is_regular_file(ec)) continue;
    const int64_t bytes = static_cast<int64_t>(it->file_size(ec));
    const fs::file_time_type used = it->last_write_time(ec);
    if (ec) continue;
    total += bytes;
    if (p.stem().string() != keep) entries.push_back({p, bytes, used});
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.used < b.used; });
  int removed = 0;
  for (const Entry& e : entries) {
    if (total <= max_bytes_) break;
    fs::path record = e.data;
    record += ".sha256";
    fs::remove(record, ec);  // the record first: a data file without one is never used
    fs::remove(e.data, ec);
    total -= e.bytes;
    ++removed;
  }
  return removed;
}

}  // namespace mk::agents
