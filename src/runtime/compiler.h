// Compiles generated C++ into a shared object, through a content-addressed cache: the key is the
// sha256 of (source, flags, compiler identity), so rebuilding an unchanged kernel is free and a
// compiler upgrade never reuses stale objects.
#pragma once

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
  std::string cache_dir;               // empty: $MAXKERNEL_CACHE or ~/.cache/maxkernel/compile
  double timeout_s = 300;
};

struct CompiledLibrary {
  std::string key;          // sha256 hex of the cache key
  std::string so_path;      // the shared object
  std::string source_path;  // the source it was built from (kept for debugging)
  bool cache_hit = false;
  double compile_seconds = 0;
};

class CompilerDriver {
 public:
  explicit CompilerDriver(CompileOptions options = {});

  // Compiles `source` (a complete translation unit). On a compiler failure the error names the
  // compiler's first error line and the kept source file; the full log is beside the source.
  // `extra_flags` are added after the driver's flags (e.g. -fopenmp from an Implementation).
  Result<CompiledLibrary> Compile(const std::string& source,
                                  const std::vector<std::string>& extra_flags = {});

  // "g++ (Debian 12.2.0-14) 12.2.0": the first line of `compiler --version`, part of the key.
  Result<std::string> CompilerIdentity();
  const CompileOptions& options() const { return options_; }

 private:
  CompileOptions options_;
  std::string identity_;
};

// First line that looks like a compiler diagnostic ("file:line:col: error: ...") in a log.
std::string FirstCompilerError(const std::string& log);

}  // namespace mk::runtime
