// Compiles generated C++ into a shared object, through a content-addressed cache: the key is the
// sha256 of (source, flags, compiler identity), so rebuilding an unchanged kernel is free and a
// compiler upgrade never reuses stale objects.
//
// The cache is not trusted blindly: every library is stored with a record of its own sha256,
// written when it was built; a cached library whose bytes do not match its record (replaced,
// truncated, or from before records existed) is removed and rebuilt, never handed out. The cache
// directory must be private to this user (created 0700, files 0600; one owned by another user
// or writable by others is refused), so no other local user can plant a library in it.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "support/status.h"

namespace mk::runtime {

// -O3, the host target's -march flags (target::HostCpu(): -march=native, or the explicit
// architecture of the ISA level MAXKERNEL_CPU_ISA caps it at), -std=c++20 -fPIC -shared.
std::vector<std::string> DefaultCompileFlags();

struct CompileOptions {
  std::string compiler;                // empty: $CXX, else g++
  std::vector<std::string> flags = DefaultCompileFlags();
  // Empty: DefaultCompileCacheDir() ($MAXKERNEL_CACHE, ~/.cache/maxkernel/compile, or the
  // per-user /tmp/maxkernel-<uid> when there is no home directory).
  std::string cache_dir;
  double timeout_s = 300;
};

struct CompiledLibrary {
  std::string key;          // sha256 hex of the cache key
  std::string so_path;      // the shared object
  std::string source_path;  // the source it was built from (kept for debugging)
  std::string so_sha256;    // sha256 of the library's bytes, as recorded when it was built
  bool cache_hit = false;
  double compile_seconds = 0;
};

class CompilerDriver {
 public:
  explicit CompilerDriver(CompileOptions options = {});

  // Compiles `source` (a complete translation unit). On a compiler failure the error names the
  // compiler's first error line and the kept source file; the full log is beside the source.
  // `extra_flags` are added after the driver's flags (e.g. -fopenmp from an Implementation).
  // A cache that cannot be used (not creatable, not writable, not private) is an error with
  // ErrorCode::kEnvironment: it says nothing about the source, and no other source would build.
  // Safe to call from several threads at once (a batch of candidates compiled in parallel):
  // every temporary file has a name of its own, and two compiles of one source both succeed.
  Result<CompiledLibrary> Compile(const std::string& source,
                                  const std::vector<std::string>& extra_flags = {});

  // Drops `lib` from the cache (library and record), so that the next Compile of the same
  // source rebuilds it: for a cached library that verified but then failed to load.
  void Evict(const CompiledLibrary& lib);

  // "g++ (Debian 12.2.0-14) 12.2.0": the first line of `compiler --version`, part of the key.
  Result<std::string> CompilerIdentity();
  const CompileOptions& options() const { return options_; }

 private:
  CompileOptions options_;
  std::mutex mu_;  // guards identity_ and cache_root_checked_
  std::string identity_;
  bool cache_root_checked_ = false;
};

// The compile cache when none is configured: $MAXKERNEL_CACHE, else $HOME/.cache/maxkernel/compile,
// else (no HOME) the home directory from the password database, else /tmp/maxkernel-<uid> (checked
// to be ours and private before use).
// Never a directory shared by all users.
std::string DefaultCompileCacheDir();

// maxkernel's per-user cache folder `name` (e.g. "bench-tasks"): $XDG_CACHE_HOME/maxkernel/NAME,
// else ~/.cache/maxkernel/NAME (HOME, else the password database), else
// /tmp/maxkernel-<uid>-NAME. Never a folder shared by all users; check it with
// EnsurePrivateDirectory before trusting what it holds.
std::string UserCacheDir(const std::string& name);

// Makes `dir` (and missing parents) exist as a directory private to this user: created 0700; an
// existing one must be a real directory (not a symlink) owned by the effective uid, and is
// tightened to 0700 if group or others could write to it. Anything else: kEnvironment error.
Status EnsurePrivateDirectory(const std::string& dir);

// Removes `<name>.tmp.<pid>` files in `dir` whose process is gone (a killed compile's leftovers).
// Returns how many were removed.
int RemoveStaleTempFiles(const std::string& dir);

// First line that looks like a compiler diagnostic ("file:line:col: error: ...") in a log.
std::string FirstCompilerError(const std::string& log);

}  // namespace mk::runtime
