// The pipeline (DESIGN.md §2, §4): one candidate of a plan through
//   implementer -> build (compile cache) -> [debugger] -> tester -> profiler
// with every step recorded in the store (candidate, build with its artifacts, diagnosis,
// measurement, events). The drivers — auto (auto_driver.h), and later hitl and search — decide
// which candidates to evaluate; they all go through Pipeline::Evaluate, so a candidate is
// judged the same way whoever proposed it, and is never "correct" without passing the tester.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agents/debugger.h"
#include "agents/engine.h"
#include "agents/planner.h"
#include "agents/profiler.h"
#include "agents/tester.h"
#include "store/artifact_store.h"
#include "store/store.h"
#include "task/task.h"

namespace mk::agents {

// Told about every agent call and every finished candidate (progress bars, metrics).
class PipelineObserver {
 public:
  virtual ~PipelineObserver() = default;
  // agent: "planner", "implementer", "build", "debugger", "tester", "profiler";
  // status: "ok", "failed" (the agent's verdict on the candidate), or "error" (the agent itself
  // could not run).
  virtual void OnAgent(const std::string& agent, const std::string& status, double seconds) {
    (void)agent, (void)status, (void)seconds;
  }
};

struct PipelineOptions {
  int test_seeds = 2;           // fresh seeds per candidate (task seed + 1, + 2, ...)
  double run_timeout_s = 60;    // one sandboxed run of a candidate, load included
  TimingProtocol protocol;      // the profiler's
  bool diagnose = true;         // run the debugger on failures
  // A candidate whose library (sha256) an earlier candidate of the run built is recorded as its
  // duplicate, neither tested nor timed again (false: `optimize --no-dedupe`, which times it).
  bool dedupe = true;
  std::string repro_dir;        // where the debugger writes repro artifacts (empty: none)
  std::string binary = "maxkernel";  // reproduce_cmd's first word
  std::string maxkernel_version;
  // Limits on the oracle (it runs in this process): the run's time budget and its stop flag.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  const std::atomic<bool>* cancel = nullptr;
  std::string reference_cache_dir;  // the oracle's disk cache (empty: none)
};

// Everything the pipeline works with; owned by the caller, outliving the pipeline.
struct PipelineContext {
  store::Store* store = nullptr;
  store::ArtifactStore* artifacts = nullptr;
  CpuEngine* engine = nullptr;
  PipelineObserver* observer = nullptr;  // may be null
};

struct CandidateOutcome {
  int64_t seq = 0;
  int64_t candidate_id = 0;
  space::Candidate candidate;
  // "correct", "build_failed" (implementer or compiler refused), "test_failed" (wrong, crashed,
  // timed out), "profile_failed" (passed the tester, then failed while timed), "duplicate" (the
  // library of candidate `duplicate_of`, whose verdict and time it shares).
  std::string status;
  std::optional<int64_t> duplicate_of;        // its seq
  std::optional<double> duplicate_median_s;  // the original's median, when it was measured
  std::optional<Profile> profile;  // correct candidates
  std::string message;             // one line for failures
  std::optional<Diagnosis> diagnosis;
  std::map<std::string, std::string> artifacts;  // role -> sha256 (source, library, implementation)
  double elapsed_s = 0;
  bool correct() const { return status == "correct"; }
};

class Pipeline {
 public:
  // `task` and `oracle` (the module as loaded, verified) describe what is optimized; `plan` is
  // the planner's result for it.
  Pipeline(PipelineContext context, task::Task task, const hlo::Module& oracle, const Plan& plan,
           PipelineOptions options);

  // Evaluates `candidate` as candidate `seq` of run `run_id`. Idempotent on (run, seq): a
  // resumed run re-evaluates an unfinished candidate under the same key. Errors are for the
  // store or the machinery failing (disk full, a broken sandbox), never for a bad candidate.
  Result<CandidateOutcome> Evaluate(int64_t run_id, int64_t seq, const space::Candidate& candidate);

  // Compiles the candidates' implementations on up to `threads` threads at once into the
  // compile cache, so that Evaluate's builds of them are cache hits (a batch: compiled in
  // parallel, then timed one at a time by Evaluate). Nothing is stored; a candidate that does
  // not implement or build is left for Evaluate to report. Returns how many built.
  int Prebuild(const std::vector<space::Candidate>& candidates, int threads);

  // A profile request for a built implementation on the task's profiling inputs (seed = task
  // seed), e.g. for an interleaved comparison of two candidates.
  Result<ProfileRequest> ProfileRequestFor(const codegen::Implementation& impl,
                                           const runtime::CompiledLibrary& library);
  // Rebuilds (a compile-cache hit when nothing changed) a stored candidate's implementation.
  Result<std::pair<codegen::Implementation, runtime::CompiledLibrary>> Rebuild(
      const space::Candidate& candidate);

  // The first candidate of this run that built a library: a later candidate building the same
  // bytes is its duplicate. Evaluate remembers its own; a resumed run tells it the stored ones.
  struct KnownLibrary {
    int64_t seq = 0;
    std::optional<double> median_s;  // measured (correct) candidates only
  };
  void RememberLibrary(const std::string& library_sha256, KnownLibrary known);

  // How a candidate with other fusion choices than the plan's (space::Candidate::fusion) gets its
  // plan: the planner run again with those choices. Without one, such a candidate is refused
  // (build_failed, by the implementer).
  using Replanner = std::function<Result<Plan>(const std::map<std::string, bool>& fusion)>;
  void SetReplanner(Replanner replanner) { replanner_ = std::move(replanner); }
  // The plan of `candidate`'s fusion choices: the run's plan, or one planned (once) for them.
  Result<const Plan*> PlanOf(const space::Candidate& candidate);

  const Plan& plan() const { return plan_; }
  const task::Task& task() const { return task_; }

 private:
  template <typename F>
  auto Timed(const std::string& agent, F&& body);
  void Event(int64_t run_id, const std::string& kind, nlohmann::json payload);
  std::optional<Diagnosis> DiagnoseFailure(const space::Candidate& candidate,
                                           const codegen::Implementation& impl,
                                           const Failure& failure);

  PipelineContext ctx_;
  task::Task task_;
  const hlo::Module& oracle_;
  std::string oracle_text_;
  const Plan& plan_;
  PipelineOptions options_;
  std::shared_ptr<std::map<uint64_t, std::vector<hlo::Literal>>> references_;
  std::optional<std::vector<hlo::Literal>> profile_inputs_;
  std::map<std::string, KnownLibrary> libraries_;
  Replanner replanner_;
  std::map<std::map<std::string, bool>, std::unique_ptr<Plan>> other_plans_;
};

}  // namespace mk::agents
