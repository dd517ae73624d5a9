// Per-kernel timing for reports: each kernel of a plan is cut out as a standalone module (its
// fused subgraph, Kernel::ToHloText: inputs become parameters), planned and implemented on its
// own with the candidate's schedule for that kernel, and timed with the profiler on inputs from
// the default generators. This places the kernels on the roofline chart; it is an estimate of
// the kernel inside the module (the caches hold other data there, and data-dependent kernels
// such as sort or gather see random instead of real values), which reports must say.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "agents/engine.h"
#include "agents/planner.h"
#include "agents/profiler.h"

namespace mk::agents {

struct KernelTiming {
  int kernel_id = 0;
  std::optional<double> median_s;  // empty when the kernel could not be timed alone
  std::string error;               // why not
};

// Times up to `max_kernels` kernels of `plan` (those with the largest lower bound first).
// Errors only for a machinery failure; a kernel that cannot be cut out, built or run gets an
// entry with `error` set.
Result<std::vector<KernelTiming>> ProfileKernels(const Plan& plan, const space::Candidate& candidate,
                                                 CpuEngine& engine, const TimingProtocol& protocol,
                                                 int max_kernels);

}  // namespace mk::agents
