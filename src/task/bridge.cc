#include "task/bridge.h"

#include <cstdlib>
#include <filesystem>

namespace mk::task {
namespace fs = std::filesystem;

namespace {
std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}
}  // namespace

std::string BridgePython() {
  std::string py = Env("MAXKERNEL_PYTHON");
  return py.empty() ? "python3" : py;
}

Result<ProcessResult> RunBridge(const std::vector<std::string>& args, double timeout_s) {
  // `env` sets the variables for the child only; our own environment stays as it is.
  // JAX_PLATFORMS=cpu whatever the caller's: with libtpu installed (TPU targets compile with it,
  // compile-only) jax would otherwise probe for TPUs that are not there and print errors, and a
  // TPU target's compile-only devices come from get_topology_desc, not from the platform list.
  std::vector<std::string> argv = {"env", "JAX_PLATFORMS=cpu"};
  std::error_code ec;
  const std::string python_dir = MK_PYTHON_DIR;
  if (fs::is_directory(python_dir, ec)) {
    std::string path = Env("PYTHONPATH");
    argv.push_back("PYTHONPATH=" + (path.empty() ? python_dir : path + ":" + python_dir));
  }
  argv.push_back(BridgePython());
  argv.push_back("-m");
  argv.push_back("maxkernel_jax");
  argv.insert(argv.end(), args.begin(), args.end());
  auto result = RunProcess(argv, timeout_s);
  if (!result.ok()) {
    return result.status().WithContext("cannot start the Python bridge (" + BridgePython() +
                                       "; set MAXKERNEL_PYTHON)");
  }
  return result;
}

Status BridgeFailure(const ProcessResult& r, const std::string& what) {
  std::string last;
  size_t end = r.err.find_last_not_of(" \n\r\t");
  if (end != std::string::npos) {
    size_t start = r.err.rfind('\n', end);
    last = r.err.substr(start == std::string::npos ? 0 : start + 1, end - (start == std::string::npos ? 0 : start + 1) + 1);
    if (last.rfind("error: ", 0) == 0) last = last.substr(7);
  }
  if (r.timed_out) return Internal(what + ": the Python bridge timed out");
  if (r.signaled) return Internal(what + ": the Python bridge was killed by signal " + std::to_string(r.term_signal));
  if (r.exit_code == 2) return InvalidArgument(what + ": " + (last.empty() ? "bad input" : last));
  if (r.exit_code == 1 && last.find("No module named") != std::string::npos) {
    return NotFound(what + ": the maxkernel_jax package is not installed (" + last +
                    "); run scripts/setup.sh or pip install -e python/");
  }
  return Internal(what + ": the Python bridge failed (exit " + std::to_string(r.exit_code) + ")" +
                  (last.empty() ? "" : ": " + last));
}

std::string DefaultSuiteDir() {
  std::string dir = Env("MAXKERNEL_SUITE_DIR");
  if (!dir.empty()) return dir;
  std::error_code ec;
  if (fs::is_directory("bench/jaxbench", ec)) return "bench/jaxbench";
  return MK_SUITE_DIR;
}

}  // namespace mk::task
