#include "runtime/compiler.h"

#include <atomic>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <sstream>

#include "support/regular_file.h"
#include "support/sha256.h"
#include "support/subprocess.h"
#include "target/target.h"

namespace mk::runtime {
namespace fs = std::filesystem;

namespace {

std::string NonEmptyEnv(const char* name) {
  const char* value = std::getenv(name);
  return value && *value ? value : "";
}

std::string HomeFromPasswordDatabase() {
  struct passwd entry;
  struct passwd* found = nullptr;
  std::vector<char> buffer(16384);
  if (::getpwuid_r(::geteuid(), &entry, buffer.data(), buffer.size(), &found) != 0 ||
      found == nullptr || found->pw_dir == nullptr) {
    return "";
  }
  return found->pw_dir;
}

// A whole file of the cache; symlinks and other file types are refused (one planted in the
// cache is never read, a FIFO never blocks).
Result<std::string> ReadCacheFile(const fs::path& path) {
  return ReadRegularFile(path.string(), std::numeric_limits<uint64_t>::max(), "a cache file",
                         Symlinks::kRefuse);
}

// Writes `data` to `path` atomically (a 0600 temp file + rename), so a concurrent reader or a
// killed process never sees half a file. Failing to write into the cache is an environment error.
// ".<n>.tmp.<pid>": private to this process (RemoveStaleTempFiles reads the pid after the last
// ".tmp.") and, by the counter, to this call, so threads compiling at once never share one.
std::string TempSuffix() {
  static std::atomic<uint64_t> counter{0};
  return "." + std::to_string(counter.fetch_add(1)) + ".tmp." + std::to_string(getpid());
}

Status WriteFileAtomic(const fs::path& path, const std::string& data) {
  fs::path tmp = path;
  tmp += TempSuffix();
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    return EnvironmentError("compile cache: cannot write " + tmp.string() + ": " +
                            std::strerror(errno));
  }
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int error = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return EnvironmentError("compile cache: cannot write " + tmp.string() + ": " +
                              std::strerror(error));
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) {
    ::unlink(tmp.c_str());
    return EnvironmentError("compile cache: cannot write " + tmp.string());
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return EnvironmentError("compile cache: cannot rename " + tmp.string() + ": " + ec.message());
  }
  return Status::Ok();
}

fs::path RecordPath(const fs::path& so) {
  fs::path record = so;
  record += ".sha256";
  return record;
}

// The cached library's sha256 if its bytes match the record written when it was built; empty
// when the library is missing, unreadable, has no record, or does not match it.
std::string VerifiedLibrarySha(const fs::path& so) {
  Result<std::string> record = ReadCacheFile(RecordPath(so));
  if (!record.ok()) return "";
  std::string expected = record->substr(0, record->find_first_of(" \n"));
  Result<std::string> bytes = ReadCacheFile(so);
  if (!bytes.ok()) return "";
  std::string actual = Sha256Hex(*bytes);
  return actual == expected ? actual : "";
}

// $HOME, else the password database's home; "" for a user without one. "/" is the home of
// system users (nobody); it is not theirs to write.
std::string OwnHomeDirectory() {
  std::string home = NonEmptyEnv("HOME");
  if (home.empty()) home = HomeFromPasswordDatabase();
  return home == "/" ? "" : home;
}

}  // namespace

std::string DefaultCompileCacheDir() {
  if (std::string env = NonEmptyEnv("MAXKERNEL_CACHE"); !env.empty()) return env;
  if (std::string home = OwnHomeDirectory(); !home.empty()) return home + "/.cache/maxkernel/compile";
  // Directly the per-user directory, so that the ownership check in EnsurePrivateDirectory covers
  // the directory another user could otherwise have created first.
  return "/tmp/maxkernel-" + std::to_string(::geteuid());
}

std::string UserCacheDir(const std::string& name) {
  if (std::string xdg = NonEmptyEnv("XDG_CACHE_HOME"); !xdg.empty()) {
    return xdg + "/maxkernel/" + name;
  }
  if (std::string home = OwnHomeDirectory(); !home.empty()) {
    return home + "/.cache/maxkernel/" + name;
  }
  return "/tmp/maxkernel-" + std::to_string(::geteuid()) + "-" + name;
}

Status EnsurePrivateDirectory(const std::string& dir) {
  if (dir.empty()) return EnvironmentError("compile cache: no directory given");
  // Create missing levels one at a time, each 0700 (create_directories would use the umask).
  fs::path path = fs::path(dir).lexically_normal();
  fs::path partial;
  for (const fs::path& part : path) {
    partial /= part;
    if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST) {
      return EnvironmentError("compile cache: cannot create " + partial.string() + ": " +
                              std::strerror(errno));
    }
  }
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    return EnvironmentError("compile cache: cannot stat " + path.string() + ": " +
                            std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) {
    return EnvironmentError("compile cache: " + path.string() +
                            " is not a directory (a symlink or a file); refusing to use it");
  }
  if (st.st_uid != ::geteuid()) {
    return EnvironmentError("compile cache: " + path.string() + " is owned by uid " +
                            std::to_string(st.st_uid) + ", not by this user (uid " +
                            std::to_string(::geteuid()) +
                            "); refusing to load libraries from it (set MAXKERNEL_CACHE)");
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && ::chmod(path.c_str(), 0700) != 0) {
    return EnvironmentError("compile cache: " + path.string() +
                            " is writable by others and cannot be restricted: " +
                            std::strerror(errno));
  }
  if (::access(path.c_str(), W_OK | X_OK) != 0) {
    return EnvironmentError("compile cache: " + path.string() + " is not writable: " +
                            std::strerror(errno));
  }
  return Status::Ok();
}

int RemoveStaleTempFiles(const std::string& dir) {
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    size_t at = name.rfind(".tmp.");
    if (at == std::string::npos) continue;
    std::string pid_text = name.substr(at + 5);
    if (pid_text.empty() || pid_text.size() > 9 ||
        pid_text.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    pid_t pid = static_cast<pid_t>(std::stol(pid_text));
    // Alive (or not ours to signal, EPERM): leave it; only a pid that no longer exists is stale.
    if (pid <= 0 || pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
    std::error_code rm;
    if (fs::remove(entry.path(), rm)) ++removed;
  }
  return removed;
}

std::string FirstCompilerError(const std::string& log) {
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("error:") != std::string::npos) return line;
  }
  std::istringstream again(log);
  while (std::getline(again, line)) {
    if (!line.empty()) return line;
  }
  return "(no compiler output)";
}

std::vector<std::string> DefaultCompileFlags() {
  std::vector<std::string> flags = target::HostCpu().compile_flags;
  flags.insert(flags.end(), {"-std=c++20", "-fPIC", "-shared"});
  return flags;
}

CompilerDriver::CompilerDriver(CompileOptions options) : options_(std::move(options)) {
  if (options_.compiler.empty()) {
    const char* cxx = std::getenv("CXX");
    options_.compiler = cxx && *cxx ? cxx : "g++";
  }
  if (options_.cache_dir.empty()) options_.cache_dir = DefaultCompileCacheDir();
}

Result<std::string> CompilerDriver::CompilerIdentity() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!identity_.empty()) return identity_;
  MK_ASSIGN_OR_RETURN(ProcessResult r, RunProcess({options_.compiler, "--version"}, 30));
  if (r.exit_code != 0) return NotFound("compiler '" + options_.compiler + "' does not run");
  identity_ = r.out.substr(0, r.out.find('\n'));
  return identity_;
}

void CompilerDriver::Evict(const CompiledLibrary& lib) {
  std::error_code ec;
  fs::remove(RecordPath(lib.so_path), ec);
  fs::remove(lib.so_path, ec);
}

Result<CompiledLibrary> CompilerDriver::Compile(const std::string& source,
                                                const std::vector<std::string>& extra_flags) {
  MK_ASSIGN_OR_RETURN(std::string identity, CompilerIdentity());
  std::vector<std::string> flags = options_.flags;
  flags.insert(flags.end(), extra_flags.begin(), extra_flags.end());
  std::string key_text = identity + "\n";
  for (const auto& f : flags) key_text += f + "\n";
  key_text += source;
  CompiledLibrary lib;
  lib.key = Sha256Hex(key_text);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!cache_root_checked_) {
      MK_RETURN_IF_ERROR(EnsurePrivateDirectory(options_.cache_dir));
      cache_root_checked_ = true;
    }
  }
  fs::path dir = fs::path(options_.cache_dir) / lib.key.substr(0, 2);
  MK_RETURN_IF_ERROR(EnsurePrivateDirectory(dir.string()));
  fs::path so = dir / (lib.key + ".so");
  fs::path src = dir / (lib.key + ".cc");
  lib.so_path = so.string();
  lib.source_path = src.string();
  std::error_code ec;
  if (fs::exists(fs::symlink_status(so, ec))) {
    lib.so_sha256 = VerifiedLibrarySha(so);
    if (!lib.so_sha256.empty()) {
      lib.cache_hit = true;
      return lib;
    }
    // Replaced, truncated or unrecorded: never hand it out; rebuild it below.
    Evict(lib);
  }
  RemoveStaleTempFiles(dir.string());
  MK_RETURN_IF_ERROR(WriteFileAtomic(src, source));
  // Compile to a private name, then rename: two processes compiling the same key race safely.
  fs::path tmp_so = dir / (lib.key + ".so" + TempSuffix());
  std::vector<std::string> argv = {options_.compiler};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {src.string(), "-o", tmp_so.string()});
  MK_ASSIGN_OR_RETURN(ProcessResult r, RunProcess(argv, options_.timeout_s));
  lib.compile_seconds = r.seconds;
  if (r.timed_out) {
    fs::remove(tmp_so, ec);
    return Status(ErrorCode::kInternal, "compiler timed out after " +
                                            std::to_string(options_.timeout_s) + " s on " +
                                            src.string());
  }
  if (r.exit_code != 0) {
    fs::path log = dir / (lib.key + ".log");
    (void)WriteFileAtomic(log, r.err + r.out);
    fs::remove(tmp_so, ec);
    return InvalidArgument("compiling " + src.string() + " failed: " + FirstCompilerError(r.err) +
                           " (full log: " + log.string() + ")");
  }
  ::chmod(tmp_so.c_str(), 0600);
  Result<std::string> bytes = ReadCacheFile(tmp_so);
  if (!bytes.ok()) {
    fs::remove(tmp_so, ec);
    return EnvironmentError("compile cache: " + tmp_so.string() + ": " + bytes.status().message());
  }
  lib.so_sha256 = Sha256Hex(*bytes);
  // The record first: a library without a matching record is never used, so a crash between the
  // two renames costs a rebuild, never trust in the wrong bytes.
  MK_RETURN_IF_ERROR(WriteFileAtomic(RecordPath(so), lib.so_sha256 + "\n"));
  fs::rename(tmp_so, so, ec);
  if (ec) {
    fs::remove(tmp_so, ec);
    return EnvironmentError("compile cache: cannot move the compiled library into " +
                            dir.string() + ": " + ec.message());
  }
  return lib;
}

}  // namespace mk::runtime
