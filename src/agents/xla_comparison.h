// Our best kernel against XLA:CPU, interleaved in the run that produced it (DESIGN.md §5): one
// round of ours in the sandbox, one round of XLA through the Python bridge, alternating, the
// round ratios judged like every comparison (timing_verdict.h). `optimize` ends with it, so
// its "vs XLA" is measured on the same machine state as the kernel, not divided by a median
// recorded at another time.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agents/profiler.h"
#include "agents/timing_verdict.h"
#include "support/machine_load.h"

namespace mk::agents {

struct XlaComparison {
  int rounds = 0;
  double ours_median_s = 0, xla_median_s = 0;
  double speedup = 0;                // xla / ours over all rounds' medians (> 1: ours faster)
  std::vector<double> round_ratios;  // xla round median / ours round median
  RatioVerdict verdict;              // "faster": ours is faster than XLA
  MachineLoad load_before, load_after;
  nlohmann::json xla_info;           // the bridge's engine, jax version, threads
};

// `ours` is a ready profile request (Pipeline::ProfileRequestFor); `task_dir` a task the bridge
// can time (`python -m maxkernel_jax time`). Errors: the bridge is missing or failed (the
// caller reports them; a run is not failed for them).
Result<XlaComparison> CompareWithXla(const std::string& task_dir, const ProfileRequest& ours,
                                     runtime::SandboxRunner& sandbox, int rounds);

nlohmann::json ToJson(const XlaComparison& c);

}  // namespace mk::agents
