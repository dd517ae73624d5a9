// `maxkernel bench --aa TASK`: the timing protocol checked against itself. One library (the
// planner's initial candidate for the task, checked by the tester first) is compared with
// itself in `trials` interleaved comparisons (profiler.h: CompareInterleaved). A protocol that
// can be trusted says "inconclusive" nearly every time: with a 95% interval, about 1 trial in
// 20 may say "faster" or "slower" by chance, and none should on a quiet machine. On a loaded one
// this is how to see whether the verdicts still hold (docs/PROFILING.md).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agents/engine.h"
#include "agents/profiler.h"

namespace mk::bench {

using agents::Comparison;
using agents::CpuEngine;
using agents::TimingProtocol;
using agents::ToJson;


struct AaOptions {
  std::string task_dir;
  int trials = 20;
  int rounds = 8;           // per comparison
  TimingProtocol protocol;  // per comparison (its min_seconds is split over the rounds)
};

struct AaResult {
  std::string task_id;
  std::string library_sha256;  // the one library timed against itself
  std::vector<Comparison> trials;
  int faster = 0, slower = 0, inconclusive = 0;
  MachineLoad load_start, load_end;
};

Result<AaResult> RunAaBench(const AaOptions& options, CpuEngine& engine,
                            const std::function<void(const std::string&)>& progress);

nlohmann::json ToJson(const AaResult& result);
std::string FormatAaTable(const AaResult& result);

}  // namespace mk::bench
