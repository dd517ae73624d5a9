// `maxkernel bench --suite search` (issue 35, item 7): how well the search algorithms find the
// best point of a space, judged against that space measured exhaustively.
//
// A benchmark kernel is a suite task at ci scale plus a sub-space: a few parameters of one of
// its kernels with their domains, every other parameter fixed at the planner's initial value
// (SearchKernels(), data). Two parts:
// - BuildSearchTable measures every point of a sub-space through the pipeline `optimize` uses
//   (plan, implement, build, test, profile; agents::Pipeline) and writes bench/search/NAME.json:
//   the CPU model and ISA level it was measured on, the task, the sub-space, what the search's
//   bound and the cost model need (kernel costs, machine rates, one feature row per point), and
//   every point's median time or failure. It resumes from the partial file it rewrites as it goes.
// - ReplaySearchTables runs each algorithm over each table's sub-space with "measure" = look the
//   point up in the table, over several seeds ("replay": valid only on the CPU model the table was
//   measured on), and the cost model leave-one-table-out (trained on the other tables' rows).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agents/engine.h"
#include "agents/planner.h"
#include "benchmarks/bench_gemm.h"
#include "modes/search/lower_bound.h"
#include "space/schedule.h"
#include "support/status.h"

namespace mk::bench {

struct SubspaceParam {
  std::string name;
  std::vector<int64_t> values;  // ascending, each in the plan's declared domain
};

// One benchmark kernel: its table's name, the suite workload (ci scale), the kernel of its plan
// and the parameters that vary.
struct SearchKernelDef {
  std::string name;
  std::string task_id;
  std::string family;  // what the list calls it ("row reduction / norm", ...)
  int kernel = 0;
  std::vector<SubspaceParam> params;
  // "" (any), or the ISA level whose plans declare these values (8-lane register tiles are
  // AVX2's): a wider CPU builds the table with MAXKERNEL_CPU_ISA=<level>.
  std::string isa_level;
};
const std::vector<SearchKernelDef>& SearchKernels();
Result<SearchKernelDef> FindSearchKernel(const std::string& name);

struct TablePoint {
  std::map<std::string, int64_t> values;  // the sub-space's parameters only
  std::string status;                     // "correct", or the pipeline's failure status
  std::optional<double> median_s;         // correct points
  std::string message;                    // failures: one line
  std::string library;                    // sha256 of the built library ("" if none)
  std::vector<float> features;            // modes::search::FeatureMap of the full candidate
};

struct SearchTable {
  std::string path;  // where it was read from (for messages)
  std::string name, task_id, task_dir, family;
  std::string cpu_model, isa_level, date, commit, note;
  int kernel = 0;
  std::vector<SubspaceParam> params;
  std::vector<space::Schedule> initial;  // the planner's initial candidate, per kernel
  std::vector<double> weights;           // per kernel: its share of the plan's bound
  std::vector<modes::search::KernelCost> costs;
  modes::search::MachineRates rates;
  std::vector<std::string> feature_names;
  std::vector<TablePoint> points;  // one per point of the sub-space, in odometer order
  bool complete = false;
  nlohmann::json measured_with;  // the protocol, load average, ...

  uint64_t SpaceSize() const;
  // The full candidate of a point's values (the other parameters at their initial values).
  space::Candidate CandidateOf(const std::map<std::string, int64_t>& values) const;
};

nlohmann::json ToJson(const SearchTable& t);
// A table from its JSON; every error names `origin` (the file).
Result<SearchTable> SearchTableFromJson(const nlohmann::json& j, const std::string& origin);
Result<SearchTable> LoadSearchTable(const std::string& path);

// Where a CPU's tables live: bench/search/<cpu model and ISA level, lower-case, dashed>
// ("bench/search/amd-epyc-avx2"). A replay is valid only on the CPU model a table was measured
// on, so each CPU model's tables sit apart and a build on another one never overwrites them.
std::string SearchTableFolder(const std::string& cpu_model, const std::string& isa_level);

struct BuildTableOptions {
  std::string name;
  std::string out_dir = "bench/search";  // the CLI passes SearchTableFolder(this CPU)
  // DIR/<id>/ci/task.yaml; empty: bench/jaxbench when it holds the task, else the export cache.
  std::string tasks_dir;
  double min_time_s = 0.05;
  int test_seeds = 1;
  std::string note;  // recorded in the table (e.g. "measured on a loaded machine")
};
// Whether `plan` (the task's, on this CPU) declares the sub-space: the kernel exists and has
// each parameter, and every value is in its domain. The error names what is not.
Status CheckSubspace(const SearchKernelDef& def, const agents::Plan& plan);

// Measures the table's missing points and writes it; returns the file's path.
Result<std::string> BuildSearchTable(const BuildTableOptions& o, agents::CpuEngine& engine,
                                     const BenchProgress& progress);

struct ReplayOptions {
  int seeds = 5;
  double within = 0.03;       // "near the best": time <= best * (1 + within)
  double budget_share = 0.05; // the budget at which the best found is reported
  std::string host_cpu;       // this machine's CPU model: tables measured elsewhere are refused
};

// Every table replayed (they must be complete and measured on `host_cpu`). JSON:
// {"label": "replay", "cpu", "seeds", "within", "budget_share",
//  "tables": [{"name", "task", "family", "space_size", "correct", "best_s", "near_best_share",
//              "algorithms": [{"name", "needed": [per seed], "needed_median", "needed_share",
//                              "best_at_budget_over_best": [per seed], "..._median",
//                              "pruned_share_median", "admissible"}],
//              "random_over_astar", "ranking": {"trained_on", "spearman", "top10_recall"}}]}
Result<nlohmann::json> ReplaySearchTables(const std::vector<SearchTable>& tables,
                                          const ReplayOptions& o);
std::string FormatSearchReplay(const nlohmann::json& replay);

// The cost model of every table's correct points (each table a ranking group), as XGBoost's
// JSON model: the "model trained on the suite" a search on this CPU starts from with
// `search --model FILE` (transfer). The tables must be this CPU's and share one feature width.
Result<std::string> TrainSuiteModel(const std::vector<SearchTable>& tables);

}  // namespace mk::bench
