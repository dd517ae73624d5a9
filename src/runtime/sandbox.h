// Runs candidate kernels out of process. A small fork server is started once; for each request
// it forks a worker that maps the shared buffers, loads the library, poisons the output buffers,
// runs the kernel and times it. A crash (signal), a hang (timeout) or running out of memory kills
// only the worker and comes back as a structured outcome; if the server itself dies it is
// restarted on the next request. The calling process and its data are never touched.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "runtime/shared_region.h"
#include "support/status.h"

namespace mk::runtime {

struct RunRequest {
  std::string so_path;
  std::vector<size_t> output_buffers;  // indices of buffers poisoned before every run
  uint8_t poison_byte = 0xFF;          // 0xFF.. is NaN in every float type
  // Scratch blocks the kernel takes are filled with 0xFF too (mk_cpu_rt.h's ScratchPool, through
  // MK_SCRATCH_POISON in the worker): a read of scratch the kernel did not write gives NaN.
  bool poison_scratch = false;
  int warmup = 0;
  int min_iterations = 1;              // run at least this many timed iterations ...
  double min_seconds = 0;              // ... and until this much time was spent timing
  int max_iterations = 1000000;
  double timeout_s = 30;               // for the whole request, load included
  size_t memory_limit_bytes = 0;       // address-space limit of the worker; 0 = none
  // Set in the worker before the library is loaded, where the environment does not already set
  // them (the user's own OMP_* win): the profiler's OpenMP placement and wait policy.
  std::vector<std::pair<std::string, std::string>> environment;
};

enum class RunStatus { kOk, kCrashed, kTimedOut, kOutOfMemory, kLoadFailed, kInternalError };
const char* RunStatusName(RunStatus s);

struct RunOutcome {
  RunStatus status = RunStatus::kInternalError;
  int signal = 0;             // kCrashed: the signal
  std::string message;        // human-readable explanation
  std::vector<double> times_s;  // one per timed iteration (kOk)
  bool ok() const { return status == RunStatus::kOk; }
};

class SandboxRunner {
 public:
  SandboxRunner() = default;
  ~SandboxRunner();
  SandboxRunner(const SandboxRunner&) = delete;
  SandboxRunner& operator=(const SandboxRunner&) = delete;

  // Runs `request` on `region`'s buffers (inputs already written by the caller; outputs are read
  // back from the region afterwards). Errors are only for failures of the sandbox machinery.
  Result<RunOutcome> Run(const RunRequest& request, SharedRegion& region);

  // Starts the server now, if it is not running (Run starts it on first use). A caller that is
  // about to run OpenMP code in this process (XGBoost's predictions) starts it first: the server
  // and its workers are forked from here, and a fork inherits libgomp's thread-pool state
  // without the pool's threads, so a kernel's `omp parallel num_threads(2)` in a worker forked
  // after that waits for them forever.
  Status Start() { return EnsureServer(); }

  pid_t server_pid() const { return server_pid_; }
  int restarts() const { return restarts_; }

 private:
  Status EnsureServer();
  void StopServer();

  pid_t server_pid_ = -1;
  int sock_ = -1;
  int restarts_ = -1;  // the first start is not a restart
};

}  // namespace mk::runtime
