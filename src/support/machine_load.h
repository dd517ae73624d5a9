// How busy the machine is with other work, recorded with every measurement (DESIGN.md §5):
// timings taken while other jobs compete for the cores are slower and noisier, and a two-thread
// kernel can wait a whole scheduler slice at a barrier.
//
// Two figures: the kernel's 1-minute load average (/proc/loadavg: familiar, but it counts our
// own compiles and kernels, and lags by a minute), and `busy_cores`, the CPU time the whole
// machine spent busy during a short window in which this process sleeps (/proc/stat deltas,
// steal included): that is other work, now.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "support/status.h"

namespace mk {

// A machine is "loaded" when other work took more than this fraction of its cores.
inline constexpr double kLoadedBusyFraction = 0.25;

struct MachineLoad {
  double load_avg_1m = 0;  // /proc/loadavg's first field
  double busy_cores = 0;   // other work during the sample window, in cores (0 .. cores)
  int cores = 1;
  double window_s = 0;     // 0: busy_cores was not sampled
  bool loaded() const { return busy_cores > kLoadedBusyFraction * cores; }
};

// CPU time counters of /proc/stat's "cpu" line: busy (user, nice, system, irq, softirq, steal)
// and total (busy + idle + iowait), in clock ticks.
struct CpuTicks {
  uint64_t busy = 0, total = 0;
};
Result<CpuTicks> ParseProcStatCpuLine(const std::string& line);
Result<double> ParseLoadAverage(const std::string& proc_loadavg);

// Samples the machine: sleeps `window_s` (at most 1 s) between two reads of /proc/stat. Where
// /proc is unreadable the figures stay 0 and window_s 0.
MachineLoad SampleMachineLoad(int cores, double window_s = 0.05);

nlohmann::json ToJson(const MachineLoad& load);
// "quiet", or "loaded: 1.9 of 2 cores busy with other work (load average 3.8)".
std::string DescribeLoad(const MachineLoad& load);

}  // namespace mk
