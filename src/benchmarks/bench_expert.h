// `maxkernel bench --suite expert` (issue 35, "against the expert"): does the search, with the
// planner's fitted rules turned off, find kernels as fast as the planner's analytical candidate
// (the hand-fitted "expert")?
//
// Per suite workload (bench scale by default):
// 1. a search run exactly as a user would start it: `search --no-analytical-init --budget N`
//    (modes::RunAuto with SearchOptions{analytical_init = false}), stored in the given store;
// 2. the expert's candidate: the planner's initial candidate with its rules on;
// 3. both built and checked against the reference (one fresh seed), then timed interleaved in
//    one sitting (agents::CompareInterleaved; A = expert, B = the search's best), so the ratio
//    expert median / search median is "the search's speed as a share of the expert's".
// A search whose best is the expert's very library is reported as such (ratio 1, not timed).
// The summary holds the goals: mean ratio >= 0.98, no workload below 0.90.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agents/engine.h"
#include "agents/profiler.h"
#include "benchmarks/bench_gemm.h"
#include "store/artifact_store.h"
#include "store/store.h"
#include "support/status.h"

namespace mk::bench {

// The default workloads: twelve GEMM and convolution workloads of the suite (plain epilogues,
// activation chains, a residual, two convolutions) and 12p's RMSNorm.
const std::vector<std::string>& DefaultExpertWorkloads();

struct ExpertOptions {
  std::vector<std::string> only = DefaultExpertWorkloads();
  std::string scale = "bench";
  std::string tasks_dir;          // as JaxbenchOptions::tasks_dir (empty: the export cache)
  std::string algorithm = "astar";
  int budget = 64;                // measurements per search
  int batch = 1;                  // candidates compiled at once by the search
  double time_budget_s = 0;       // per search run; <= 0: unlimited
  int rounds = 8;                 // interleaved rounds of the expert-vs-search comparison
  int fusion_decisions = -1;      // < 0: the search's default
  std::string model_file;         // the cost model to start from ("" : the store's newest)
  uint64_t seed = 0;
  agents::TimingProtocol protocol;  // the search's measurements and the comparison's
};
// Every option in range; the error names the flag.
Status ValidateExpertOptions(const ExpertOptions& o);

struct ExpertRow {
  std::string id, name, task_dir;
  std::string error;  // set: the row failed (search, build or check), no timing
  int64_t run_id = 0;
  nlohmann::json search;  // the run's "search" section (measured, pruned, predicted, ...)
  int measured = 0;       // candidates the search evaluated
  nlohmann::json expert_schedule, search_schedule;
  std::string expert_library, search_library;  // sha256 of the built libraries
  std::optional<agents::Comparison> comparison;
  // Expert median / search median: > 1 means the search's kernel is faster. Set when timed, or
  // 1 when both are one library.
  std::optional<double> ratio;
  double search_seconds = 0;  // wall time of the search run
};

Result<std::vector<ExpertRow>> RunExpertBench(const ExpertOptions& options,
                                              agents::CpuEngine& engine, store::Store& db,
                                              store::ArtifactStore& artifacts,
                                              const BenchProgress& progress);

// {"rows": [...], "summary": {"workloads", "compared", "mean_ratio", "geomean_ratio",
//  "min_ratio", "below_090": [ids], "goal_mean_098", "goal_none_below_090", "failed": [ids]}}
nlohmann::json ToJson(const ExpertRow& row);
nlohmann::json ExpertSummary(const std::vector<ExpertRow>& rows);
std::string FormatExpertTable(const std::vector<ExpertRow>& rows, const nlohmann::json& summary);

}  // namespace mk::bench
