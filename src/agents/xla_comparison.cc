#include "agents/xla_comparison.h"

#include <algorithm>

#include "agents/interleaved_timing.h"

namespace mk::agents {

Result<XlaComparison> CompareWithXla(const std::string& task_dir, const ProfileRequest& ours,
                                     runtime::SandboxRunner& sandbox, int rounds) {
  if (rounds < 1) return InvalidArgument("a comparison with XLA needs at least one round");
  BenchProtocol protocol;
  protocol.rounds = rounds;
  protocol.warmup = std::max(1, ours.protocol.warmup);
  protocol.min_iterations = std::max(3, ours.protocol.min_iterations);
  protocol.min_seconds = std::max(0.1, ours.protocol.min_seconds);
  protocol.timeout_s = std::max(120.0, ours.protocol.timeout_s);
  XlaComparison c;
  c.rounds = rounds;
  c.load_before = SampleMachineLoad(ours.target.cores);
  MK_ASSIGN_OR_RETURN(auto side, SandboxSide::Create(sandbox, ours.implementation, ours.library,
                                                     ours.inputs, protocol));
  XlaBridgeSide xla(task_dir, protocol, ours.target.cores);
  std::vector<SideResult> results = RunInterleaved({side.get(), &xla}, rounds, nullptr);
  c.load_after = SampleMachineLoad(ours.target.cores);
  if (!results[0].ok()) return Internal("timing our kernel beside XLA: " + results[0].error);
  if (!results[1].ok()) return Internal("XLA:CPU: " + results[1].error);
  c.ours_median_s = results[0].median_s;
  c.xla_median_s = results[1].median_s;
  c.speedup = c.xla_median_s / c.ours_median_s;
  c.xla_info = results[1].info;
  const size_t n = std::min(results[0].round_medians.size(), results[1].round_medians.size());
  for (size_t r = 0; r < n; ++r) {
    if (results[0].round_medians[r] > 0) {
      c.round_ratios.push_back(results[1].round_medians[r] / results[0].round_medians[r]);
    }
  }
  c.verdict = JudgeRoundRatios(c.round_ratios);
  // The same rule as the profiler's comparisons: under load a verdict needs the wider margin.
  if (c.load_before.loaded() || c.load_after.loaded()) {
    RequireLoadedMargin(c.verdict,
                        DescribeLoad(c.load_after.loaded() ? c.load_after : c.load_before));
  }
  return c;
}

nlohmann::json ToJson(const XlaComparison& c) {
  return {{"engine", "xla:cpu"},
          {"rounds", c.rounds},
          {"ours_median_s", c.ours_median_s},
          {"xla_median_s", c.xla_median_s},
          {"speedup", c.speedup},
          {"round_ratios", c.round_ratios},
          {"verdict", ToJson(c.verdict)},
          {"load_before", ToJson(c.load_before)},
          {"load_after", ToJson(c.load_after)},
          {"xla", c.xla_info}};
}

}  // namespace mk::agents
