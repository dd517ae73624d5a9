// Runs the Python bridge (python3 -m maxkernel_jax, python/) as a subprocess. The C++ side needs
// Python only for what JAX must do: lowering a JAX function, XLA:CPU outputs and timings.
#pragma once

#include <string>
#include <vector>

#include "support/subprocess.h"
#include "support/status.h"

namespace mk::task {

// The Python interpreter: $MAXKERNEL_PYTHON, else "python3" (looked up on PATH).
std::string BridgePython();

// Runs `python -m maxkernel_jax <args...>`. The package is found where pip installed it; the
// source checkout's python/ folder is added to PYTHONPATH as a fallback. The child always runs
// with JAX_PLATFORMS=cpu (libtpu is used compile-only, never as a platform). Returns an error
// only if Python could not be started; the bridge's own exit code is in the result
// (0 ok, 2 bad input with one line on stderr).
Result<ProcessResult> RunBridge(const std::vector<std::string>& args, double timeout_s = 0);

// A bridge failure as a Status: kInvalidArgument carrying the bridge's last stderr line for
// exit code 2, kInternal otherwise (crash, timeout, unexpected code).
Status BridgeFailure(const ProcessResult& result, const std::string& what);

// The suite folder (bench/jaxbench): $MAXKERNEL_SUITE_DIR, else ./bench/jaxbench when it
// exists, else the source checkout's.
std::string DefaultSuiteDir();

}  // namespace mk::task
