#include "runtime/compiler.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/sha256.h"
#include "support/subprocess.h"
#include "target/target.h"

namespace mk::runtime {
namespace fs = std::filesystem;

namespace {

std::string DefaultCacheDir() {
  if (const char* env = std::getenv("MAXKERNEL_CACHE"); env && *env) return env;
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.cache/maxkernel/compile";
}

// Writes `data` to `path` atomically (temp file + rename), so a concurrent reader or a killed
// process never sees half a file.
Status WriteFileAtomic(const fs::path& path, const std::string& data) {
  fs::path tmp = path;
  tmp += ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    out << data;
    if (!out) return IoError("cannot write " + tmp.string());
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return IoError("cannot rename " + tmp.string() + ": " + ec.message());
  return Status::Ok();
}

}  // namespace

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
  if (options_.cache_dir.empty()) options_.cache_dir = DefaultCacheDir();
}

Result<std::string> CompilerDriver::CompilerIdentity() {
  if (!identity_.empty()) return identity_;
  MK_ASSIGN_OR_RETURN(ProcessResult r, RunProcess({options_.compiler, "--version"}, 30));
  if (r.exit_code != 0) return NotFound("compiler '" + options_.compiler + "' does not run");
  identity_ = r.out.substr(0, r.out.find('\n'));
  return identity_;
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
  fs::path dir = fs::path(options_.cache_dir) / lib.key.substr(0, 2);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return IoError("cannot create cache directory " + dir.string() + ": " + ec.message());
  fs::path so = dir / (lib.key + ".so");
  fs::path src = dir / (lib.key + ".cc");
  lib.so_path = so.string();
  lib.source_path = src.string();
  if (fs::exists(so)) {
    lib.cache_hit = true;
    return lib;
  }
  MK_RETURN_IF_ERROR(WriteFileAtomic(src, source));
  // Compile to a private name, then rename: two processes compiling the same key race safely.
  fs::path tmp_so = dir / (lib.key + ".so.tmp." + std::to_string(getpid()));
  std::vector<std::string> argv = {options_.compiler};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {src.string(), "-o", tmp_so.string()});
  MK_ASSIGN_OR_RETURN(ProcessResult r, RunProcess(argv, options_.timeout_s));
  lib.compile_seconds = r.seconds;
  if (r.timed_out) {
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
  fs::rename(tmp_so, so, ec);
  if (ec) return IoError("cannot move compiled library into the cache: " + ec.message());
  return lib;
}

}  // namespace mk::runtime
