// The auto driver (issue 5, item 2): the metric-driven loop behind `maxkernel optimize`, for
// CI and cron. It plans once, then proposes candidates (NeighbourhoodSearch, or the debugger's
// suggested fix right after a failure) and runs each through the Pipeline until the target
// metric is met, the iteration or time budget is spent, the space is exhausted, or it is asked
// to stop. Every finished step is in the store before the next begins, so a run killed at any
// moment loses nothing finished, and `--resume RUN` continues it: the history is replayed
// into the proposer and an unfinished candidate is evaluated again under its own key.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "agents/pipeline.h"
#include "modes/search/search_options.h"

namespace mk::modes {

using agents::CandidateOutcome;
using agents::CpuEngine;
using agents::PipelineObserver;
using agents::PipelineOptions;


// "roofline>=0.8" (fraction of the roofline bound), "speedup>=1.5" (over the task's recorded
// XLA baseline), "time<=0.002" (median seconds). Empty text: no target (run the budget out).
struct TargetMetric {
  enum class Kind { kNone, kRoofline, kSpeedup, kTime } kind = Kind::kNone;
  double threshold = 0;
  std::string text;
};
Result<TargetMetric> ParseTargetMetric(const std::string& text);

struct AutoOptions {
  int max_iterations = 20;       // candidates in the run (a resumed run counts earlier ones)
  double time_budget_s = 600;    // wall time of this invocation; <= 0: unlimited
  TargetMetric target_metric;
  uint64_t seed = 0;             // the proposer's
  PipelineOptions pipeline;
  int compare_rounds = 6;        // interleaved best-vs-first comparison at the end (0: skip)
  // Interleaved best-vs-XLA:CPU rounds at the end, through the Python bridge (xla_comparison.h;
  // 0: skip). The CLI's default is 5; a bridge that cannot run is reported, not fatal.
  int xla_rounds = 0;
  int profile_kernels = 6;       // time this many kernels of the best alone, for the report
  // Candidates proposed and compiled at once (in parallel, into the compile cache) before they
  // are tested and timed one at a time. 1: one by one, each proposal after the last result.
  int batch = 1;
  // Set: a search run (`maxkernel search`, `optimize --mode search`): the candidates come from
  // a search over the decision graph (modes/search) instead of the neighbourhood walk, the run
  // is stored as mode "search", and the result gains a "search" section.
  std::optional<search::SearchOptions> search;
};

struct AutoRequest {
  std::string task_dir;                 // a new run on this task ...
  std::optional<int64_t> resume_run;    // ... or continue this one (task_dir then ignored)
  AutoOptions options;
  // For a resumed run: options given on the command line replace the stored ones.
  std::optional<int> override_max_iterations;
  std::optional<double> override_time_budget_s;
  const std::atomic<bool>* stop = nullptr;  // set (e.g. by SIGINT): finish the current step, stop
  // Where to write the explored search graph (Graphviz DOT) at the end; "" for none.
  std::string graph_path;
  // Search runs: the cost model to start from (`--model FILE`; modes/search/model_store.h).
  // Empty: the newest model stored for this target and CPU model, if any. A new run only.
  std::string model_file;
  // Search runs: where to write the model the run ranked with at the end, as XGBoost's JSON
  // model (`--save-model FILE`); "" for nowhere.
  std::string save_model_path;
};

struct AutoProgress {
  int64_t run_id = 0;
  int iteration = 0;        // candidates finished in the run so far
  int max_iterations = 0;
  const CandidateOutcome* outcome = nullptr;  // the candidate just finished (null: the run began)
  std::optional<double> best_s;
  std::optional<double> best_roofline_fraction;
  std::optional<double> speedup_vs_baseline;
  std::optional<double> first_s;
  double elapsed_s = 0;
  nlohmann::json search;  // a search run's counts (Proposer::Stats); null otherwise
};

struct AutoCallbacks {
  std::function<void(const AutoProgress&)> on_progress;  // after planning and every candidate
  PipelineObserver* observer = nullptr;
  // Measures the machine's peaks again. Called at most once, when the best kernel ran above
  // 100% of the roofline (the stored peaks are then wrong: never clamped). May be empty.
  std::function<Result<target::Target>()> reprobe;
  // Told what the run does after the loop (the comparisons, the re-probe): they take seconds.
  std::function<void(const std::string&)> on_note;
};

// The run's result in the documented schema ("maxkernel.optimize.result/1", docs/OPTIMIZE.md).
// Errors: bad input (unreadable task, unknown run, a run that cannot be resumed) and store or
// machinery failures; a run without a correct kernel is a result with status "failed".
Result<nlohmann::json> RunAuto(const AutoRequest& request, store::Store& store,
                               store::ArtifactStore& artifacts, CpuEngine& engine,
                               const AutoCallbacks& callbacks = {});

// Whether `run` may continue with --resume: an auto or search run still `running` (killed) or
// `cancelled` (interrupted). InvalidArgument naming the reason otherwise. RunAuto checks it; the
// CLI checks it too before anything slow (the machine probe) starts.
Status CheckRunResumable(const store::RunRecord& run);

}  // namespace mk::modes
