// `maxkernel bench --suite jaxbench`: suite workloads (bench/jaxbench) as exported tasks
// (DIR/<id>/<scale>), our kernel (the planner's initial candidate, or a stored run's best one)
// checked once against XLA:CPU's own outputs, then timed interleaved with XLA:CPU through the
// Python bridge (`python -m maxkernel_jax time`), one bridge process per round. The interpreter
// can be timed too, for 1-3 runs under a time cap (it is slow; beyond the cap it is reported as
// a lower bound).
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "benchmarks/bench.h"
#include "benchmarks/bench_gemm.h"
#include "agents/engine.h"
#include "hlo/literal.h"
#include "hlo/module.h"
#include "store/store.h"
#include "support/status.h"

namespace mk::bench {


struct JaxbenchOptions {
  std::string scale = "bench";
  std::vector<std::string> only = {"12p", "8p", "1p"};
  bool xla = true;
  bool interp = false;
  // DIR/<id>/<scale>/task.yaml; empty: DefaultBenchTasksDir(), exported there when missing.
  std::string tasks_dir;
  std::string suite_dir;  // the suite to export from (empty: task::DefaultSuiteDir())
  int threads = 2;
  BenchProtocol protocol;
  double interp_cap_s = 60;  // per workload, all interpreter runs together
  int interp_runs = 1;       // 1 to 3
  // A pinned candidate (e.g. the best of an optimize run; one workload only); absent: the
  // planner's initial one. `schedule_source` says where it came from.
  std::optional<nlohmann::json> schedule;
  std::string schedule_source;
};

// "a,b" -> {xla, interp} flags; each item must be xla or interp.
Status ParseCompareList(const std::string& text, bool& xla, bool& interp);
// "12p,8p" -> ids (non-empty, no repeats; the suite decides whether they exist).
Result<std::vector<std::string>> ParseOnlyList(const std::string& text);

// Whether the cached task in `task_dir` (CACHE/<id>/<scale>) can be reused for the suite in
// `suite`: it loads and its workload file is that suite's <id>/workload.py. A cache that outlived
// the checkout which exported it is stale and is exported again.
bool CachedTaskIsCurrent(const std::filesystem::path& task_dir, const std::string& suite);

// runtime::UserCacheDir("bench-tasks"): $XDG_CACHE_HOME/maxkernel/bench-tasks, else
// ~/.cache/maxkernel/bench-tasks, else /tmp/maxkernel-<uid>-bench-tasks; never a shared folder.
std::string DefaultBenchTasksDir();

// DIR/<id>/<o.scale> for each of `o.only`, in order: from `o.tasks_dir`, which must hold them,
// or from the cache (DefaultBenchTasksDir), exported there through the bridge when missing or
// stale.
Result<std::vector<std::string>> JaxbenchTaskDirs(const JaxbenchOptions& o,
                                                  const BenchProgress& progress);

// The interpreter, run in a forked child so that the cap can stop it: up to `runs` runs while
// the total stays under `cap_s`. `times_s` holds the runs that finished; `capped` is true when
// not even one did.
struct InterpreterTiming {
  std::vector<double> times_s;
  bool capped = false;
  std::string error;
};
InterpreterTiming TimeInterpreter(const hlo::Module& module,
                                  const std::vector<hlo::Literal>& inputs, int runs, double cap_s);

// The schedule of run `run_id`'s best candidate, as stored by `optimize`; `task_dir` is set to
// the run's task directory when the run recorded it.
Result<nlohmann::json> BestScheduleOfRun(store::Store& db, int64_t run_id, std::string* task_dir);

Result<std::vector<BenchRow>> RunJaxbenchBench(const JaxbenchOptions& options, CpuEngine& engine,
                                               const BenchProgress& progress);

}  // namespace mk::bench
