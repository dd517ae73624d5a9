#include "modes/auto/auto_driver.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>

#include <unistd.h>

#include "agents/implementer.h"
#include "agents/kernel_profiler.h"
#include "modes/auto/neighbourhood_search.h"
#include "modes/search/features.h"
#include "modes/search/model_store.h"
#include "modes/search/plan_search.h"
#include "agents/xla_comparison.h"
#include "hlo/printer.h"
#include "hlo/verifier.h"
#include "store/lease.h"

namespace mk::modes {

using agents::AnalyzeRoofline;
using agents::ApplyFix;
using agents::CandidateOutcome;
using agents::CompareInterleaved;
using agents::CompareWithXla;
using agents::CompleteCandidate;
using agents::CpuEngine;
using agents::KernelTiming;
using agents::Pipeline;
using agents::PipelineContext;
using agents::Plan;
using agents::PlanRequest;
using agents::PlanTotals;
using agents::ProfileKernels;
using agents::Roofline;
using agents::RunPlanner;
using agents::TimingProtocolFromJson;
using agents::ToJson;
using agents::TotalsOf;
using agents::Verdict;
using agents::XlaComparison;


namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string UtcNow() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

json OptionsToJson(const AutoOptions& o) {
  return {{"max_iterations", o.max_iterations},
          {"time_budget_s", o.time_budget_s},
          {"target_metric", o.target_metric.text},
          {"seed", o.seed},
          {"test_seeds", o.pipeline.test_seeds},
          {"run_timeout_s", o.pipeline.run_timeout_s},
          {"protocol", ToJson(o.pipeline.protocol)},
          {"compare_rounds", o.compare_rounds},
          {"xla_rounds", o.xla_rounds},
          {"profile_kernels", o.profile_kernels},
          {"batch", o.batch},
          {"search", o.search ? search::ToJson(*o.search) : json(nullptr)}};
}

Result<AutoOptions> OptionsFromJson(const json& j, AutoOptions base) {
  try {
    base.max_iterations = j.value("max_iterations", base.max_iterations);
    base.time_budget_s = j.value("time_budget_s", base.time_budget_s);
    MK_ASSIGN_OR_RETURN(base.target_metric,
                        ParseTargetMetric(j.value("target_metric", std::string())));
    base.seed = j.value("seed", base.seed);
    base.pipeline.test_seeds = j.value("test_seeds", base.pipeline.test_seeds);
    base.pipeline.run_timeout_s = j.value("run_timeout_s", base.pipeline.run_timeout_s);
    if (j.contains("protocol")) {
      MK_ASSIGN_OR_RETURN(base.pipeline.protocol, TimingProtocolFromJson(j["protocol"]));
    }
    base.compare_rounds = j.value("compare_rounds", base.compare_rounds);
    base.xla_rounds = j.value("xla_rounds", base.xla_rounds);
    base.profile_kernels = j.value("profile_kernels", base.profile_kernels);
    base.batch = std::max(1, j.value("batch", base.batch));
    if (j.contains("search") && !j["search"].is_null()) {
      MK_ASSIGN_OR_RETURN(search::SearchOptions so, search::SearchOptionsFromJson(j["search"]));
      base.search = so;
    }
  } catch (const json::exception& e) {
    return InvalidArgument(std::string("the run's stored options are damaged: ") + e.what());
  }
  return base;
}

// The reference time "vs XLA" divides by outside an interleaved comparison: the newest XLA:CPU
// baseline the store has for this module on this CPU, else (tasks exported before baselines
// moved to the store) the one in task.yaml.
struct KnownBaseline {
  double median_s = 0;
  std::string engine, engine_version, date, source;
};

std::optional<KnownBaseline> FindBaseline(store::Store& db, const std::string& module_sha,
                                          const std::string& cpu_model, const task::Task& t) {
  if (auto stored = db.LatestBaseline(module_sha, cpu_model, "xla-cpu"); stored.ok() && *stored) {
    const store::BaselineRecord& b = **stored;
    std::time_t secs = static_cast<std::time_t>(b.measured_at);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char date[32];
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return KnownBaseline{b.median_s, b.engine, b.engine_version, date, "store"};
  }
  if (t.baseline && t.baseline->median_s > 0) {
    return KnownBaseline{t.baseline->median_s, t.baseline->engine, "", t.baseline->date,
                         "task.yaml"};
  }
  return std::nullopt;
}

bool MetricMet(const TargetMetric& m, double best_s, double roofline_fraction,
               std::optional<double> baseline_s) {
  switch (m.kind) {
    case TargetMetric::Kind::kNone: return false;
    case TargetMetric::Kind::kRoofline: return roofline_fraction >= m.threshold;
    case TargetMetric::Kind::kSpeedup: return baseline_s && *baseline_s / best_s >= m.threshold;
    case TargetMetric::Kind::kTime: return best_s <= m.threshold;
  }
  return false;
}

// What the store knows about a run's candidates, in seq order.
struct History {
  struct Entry {
    store::CandidateRecord candidate;
    std::optional<store::MeasurementRecord> measurement;
    std::optional<store::DiagnosisRecord> diagnosis;
    std::optional<store::BuildRecord> build;  // the latest
  };
  std::vector<Entry> entries;
};

Result<History> LoadHistory(store::Store& db, int64_t run_id) {
  History h;
  MK_ASSIGN_OR_RETURN(auto candidates, db.ListCandidates(run_id));
  MK_ASSIGN_OR_RETURN(auto measurements, db.ListMeasurements(run_id));
  MK_ASSIGN_OR_RETURN(auto diagnoses, db.ListDiagnoses(run_id));
  std::sort(candidates.begin(), candidates.end(),
            [](const auto& a, const auto& b) { return a.seq < b.seq; });
  for (auto& c : candidates) {
    History::Entry e;
    e.candidate = c;
    for (const auto& m : measurements) {
      if (m.key.candidate_id == c.id && (!e.measurement || m.median_s < e.measurement->median_s)) {
        e.measurement = m;
      }
    }
    for (const auto& d : diagnoses) {
      if (d.candidate_id == c.id) e.diagnosis = d;
    }
    MK_ASSIGN_OR_RETURN(auto builds, db.ListBuilds(c.id));
    if (!builds.empty()) e.build = builds.back();
    h.entries.push_back(std::move(e));
  }
  return h;
}

std::string CandidateStatusText(const History::Entry& e) {
  switch (e.candidate.status) {
    case store::CandidateStatus::kCorrect: return e.measurement ? "correct" : "unmeasured";
    case store::CandidateStatus::kBuildFailed: return "build_failed";
    case store::CandidateStatus::kTestFailed: return "test_failed";
    case store::CandidateStatus::kDuplicate: return "duplicate";
    case store::CandidateStatus::kProposed:
    case store::CandidateStatus::kBuilt: return "unfinished";
  }
  return "unfinished";
}

json NullableNumber(std::optional<double> v) { return v ? json(*v) : json(nullptr); }

}  // namespace

Result<TargetMetric> ParseTargetMetric(const std::string& text) {
  TargetMetric m;
  m.text = text;
  if (text.empty()) return m;
  auto bad = [&] {
    return InvalidArgument("--target-metric '" + text +
                           "': expected roofline>=F (0 < F <= 1), speedup>=X (X > 0, over the "
                           "task's XLA baseline) or time<=SECONDS");
  };
  size_t op = text.find_first_of("<>");
  if (op == std::string::npos || op + 1 >= text.size() || text[op + 1] != '=') return bad();
  std::string name = text.substr(0, op);
  std::string value = text.substr(op + 2);
  char* end = nullptr;
  m.threshold = std::strtod(value.c_str(), &end);
  if (value.empty() || end == nullptr || *end != '\0' || !std::isfinite(m.threshold) ||
      m.threshold <= 0) {
    return bad();
  }
  if (name == "roofline" && text[op] == '>' && m.threshold <= 1) m.kind = TargetMetric::Kind::kRoofline;
  else if (name == "speedup" && text[op] == '>') m.kind = TargetMetric::Kind::kSpeedup;
  else if (name == "time" && text[op] == '<') m.kind = TargetMetric::Kind::kTime;
  else return bad();
  return m;
}

Status CheckRunResumable(const store::RunRecord& run) {
  if (run.status != store::RunStatus::kRunning && run.status != store::RunStatus::kCancelled) {
    return InvalidArgument("run " + std::to_string(run.id) + " already finished (" +
                           std::string(store::RunStatusName(run.status)) +
                           "); start a new run instead");
  }
  if (run.mode != store::RunMode::kAuto && run.mode != store::RunMode::kSearch) {
    return InvalidArgument("run " + std::to_string(run.id) + " is a " +
                           std::string(store::RunModeName(run.mode)) +
                           " run; only auto and search runs resume here");
  }
  return Status::Ok();
}

Result<json> RunAuto(const AutoRequest& request, store::Store& db, store::ArtifactStore& artifacts,
                     CpuEngine& engine, const AutoCallbacks& callbacks) {
  auto start = Clock::now();
  AutoOptions options = request.options;
  int64_t run_id = 0;
  std::string task_dir = request.task_dir;

  // ---- the run: new, or the one to resume ------------------------------------------------
  std::string stored_module_sha;
  // The run's owner: one process at a time works on a run (sec, hole 5; docs/STORE.md "Leases").
  std::unique_ptr<store::LeaseKeeper> lease;
  auto take_lease = [&]() -> Status {
    Result<std::unique_ptr<store::LeaseKeeper>> taken =
        store::LeaseKeeper::Acquire(db, store::RunLeaseResource(run_id), store::LeaseHolderId());
    if (!taken.ok()) {
      return taken.status().WithContext("run " + std::to_string(run_id) +
                                        " is being worked on by another process");
    }
    lease = std::move(*taken);
    return Status::Ok();
  };
  // The cost model a search starts from: chosen when the run starts, kept with its options.
  search::Prior prior;
  const size_t feature_columns = search::FeatureMap::Names().size();
  const bool uses_model = options.search && options.search->use_model;
  if (!request.model_file.empty() && request.resume_run) {
    return InvalidArgument("--model is chosen when a run starts; run " +
                           std::to_string(*request.resume_run) + " resumes with its own prior");
  }
  if (request.resume_run) {
    run_id = *request.resume_run;
    Result<store::RunRecord> run = db.GetRun(run_id);
    if (!run.ok()) return NotFound("no run " + std::to_string(run_id) + " in this database");
    MK_RETURN_IF_ERROR(CheckRunResumable(*run));
    json config = json::parse(run->config_json, nullptr, false);
    if (!config.is_object()) return InvalidArgument("run " + std::to_string(run_id) + " has no readable options");
    MK_ASSIGN_OR_RETURN(options, OptionsFromJson(config, options));
    if (request.override_max_iterations) options.max_iterations = *request.override_max_iterations;
    if (request.override_time_budget_s) options.time_budget_s = *request.override_time_budget_s;
    task_dir = config.value("task_dir", run->task_directory);
    stored_module_sha = config.value("module_artifact", std::string());
    if (options.search && options.search->use_model && config.contains("search_prior")) {
      MK_RETURN_IF_ERROR(engine.sandbox().Start());  // before the prior predicts (sandbox.h)
      MK_ASSIGN_OR_RETURN(prior, search::PriorOfArtifact(artifacts, config["search_prior"], feature_columns));
    }
  } else if (!request.model_file.empty() && !(options.search && options.search->use_model)) {
    return InvalidArgument("--model is for search runs that use the cost model");
  }
  // Stored absolute, so the run resumes (and exports) from any working directory.
  {
    std::error_code ec;
    std::filesystem::path abs = std::filesystem::absolute(task_dir, ec);
    if (!ec) task_dir = abs.lexically_normal().string();
    while (task_dir.size() > 1 && task_dir.back() == '/') task_dir.pop_back();
  }
  MK_ASSIGN_OR_RETURN(task::LoadedTask loaded, task::LoadTaskWithModule(task_dir));
  MK_RETURN_IF_ERROR(hlo::VerifyModule(*loaded.module));
  std::string module_text = hlo::PrintModule(*loaded.module);
  std::string module_yaml = task::TaskToYaml(loaded.task);
  MK_ASSIGN_OR_RETURN(std::string module_sha, artifacts.Put(module_text, "text/x-hlo"));
  if (request.resume_run) {
    if (!stored_module_sha.empty() && stored_module_sha != module_sha) {
      return InvalidArgument("the module of " + task_dir + " changed since run " +
                             std::to_string(run_id) + " started; start a new run");
    }
    MK_RETURN_IF_ERROR(take_lease());
    MK_RETURN_IF_ERROR(db.ResumeRun(run_id));
    (void)db.AddEvent(run_id, "run.resumed", json{{"pid", static_cast<int64_t>(::getpid())}}.dump());
  } else {
    if (options.target_metric.kind == TargetMetric::Kind::kSpeedup &&
        !FindBaseline(db, module_sha, engine.target().model, loaded.task)) {
      return InvalidArgument(task_dir + " has no recorded baseline for --target-metric " +
                             options.target_metric.text + "; record one with `maxkernel baseline " +
                             task_dir + " --xla`");
    }
    store::TaskRecord tr;
    tr.directory = task_dir;
    tr.module_sha256 = module_sha;
    tr.yaml = module_yaml;
    MK_ASSIGN_OR_RETURN(int64_t task_id, db.UpsertTask(tr));
    store::NewRun nr;
    nr.task_id = task_id;
    nr.mode = options.search ? store::RunMode::kSearch : store::RunMode::kAuto;
    nr.target = engine.target().name;
    if (uses_model) {
      // Before the prior predicts anything (runtime/sandbox.h, Start).
      MK_RETURN_IF_ERROR(engine.sandbox().Start());
      MK_ASSIGN_OR_RETURN(prior, search::ChoosePrior(db, artifacts, request.model_file,
                                                     engine.target().name, engine.target().model,
                                                     feature_columns));
    }
    json config = OptionsToJson(options);
    config["task_dir"] = task_dir;
    config["module_artifact"] = module_sha;
    if (uses_model) config["search_prior"] = prior.ToJson();
    nr.config_json = config.dump();
    MK_ASSIGN_OR_RETURN(run_id, db.CreateRun(nr));
    MK_RETURN_IF_ERROR(take_lease());
    (void)db.AddEvent(run_id, "run.started", config.dump());
  }
  const task::Task& task = loaded.task;
  const std::optional<KnownBaseline> known_baseline =
      FindBaseline(db, module_sha, engine.target().model, task);
  std::optional<double> baseline_s;
  if (known_baseline) baseline_s = known_baseline->median_s;

  // ---- plan -------------------------------------------------------------------------------
  PlanRequest preq;
  preq.module = loaded.module.get();
  preq.target = engine.target();
  preq.space.analytical = !options.search || options.search->analytical_init;
  auto plan_start = Clock::now();
  Result<Plan> plan = RunPlanner(preq, engine.emitter());
  if (callbacks.observer) {
    callbacks.observer->OnAgent("planner", plan.ok() ? "ok" : "error", SecondsSince(plan_start));
  }
  if (!plan.ok()) {
    (void)db.AddEvent(run_id, "run.plan_failed", json{{"error", plan.status().ToString()}}.dump());
    (void)db.FinishRun(run_id, store::RunStatus::kFailed);
    return plan.status();
  }
  PipelineContext ctx{&db, &artifacts, &engine, callbacks.observer};
  // The oracle runs in this process: it honours the time budget and the stop flag (sec, hole 3).
  options.pipeline.cancel = request.stop;
  if (options.time_budget_s > 0) {
    options.pipeline.deadline = start + std::chrono::duration_cast<Clock::duration>(
                                            std::chrono::duration<double>(options.time_budget_s));
  }
  options.pipeline.reference_cache_dir = engine.compiler().options().cache_dir + "/oracle";
  Pipeline pipeline(ctx, task, *loaded.module, *plan, options.pipeline);
  // Candidates with fusion choices of their own (a search's fusion decisions, a resumed run's,
  // a person's edit) are planned again with them.
  Result<search::FusionSpace> fusion_space = search::FusionSpaceOf(preq, *plan, engine.emitter());
  if (fusion_space.ok()) pipeline.SetReplanner(fusion_space->replan);

  std::vector<double> weights;
  for (const auto& k : plan->kernels) weights.push_back(k.lower_bound_s);
  const uint64_t proposer_seed = options.seed + static_cast<uint64_t>(run_id);
  std::unique_ptr<Proposer> proposer;
  search::GraphSearch* graph_search = nullptr;  // the proposer, for a search run
  if (options.search) {
    auto gs = search::SearchPlan(*plan, *options.search, proposer_seed, std::move(prior.model),
                                 fusion_space.ok() ? &*fusion_space : nullptr);
    prior.model.reset();
    if (!gs.ok()) {
      (void)db.AddEvent(run_id, "run.plan_failed", json{{"error", gs.status().ToString()}}.dump());
      (void)db.FinishRun(run_id, store::RunStatus::kFailed);
      return gs.status();
    }
    graph_search = gs->get();
    proposer = std::move(*gs);
  } else {
    proposer = std::make_unique<NeighbourhoodSearch>(plan->spaces, plan->initial, weights,
                                                     proposer_seed);
  }
  Proposer& search = *proposer;

  // ---- replay the history of a resumed run -------------------------------------------------
  MK_ASSIGN_OR_RETURN(History history, LoadHistory(db, run_id));
  std::vector<std::pair<int64_t, space::Candidate>> unfinished;
  std::optional<std::pair<int64_t, double>> best;  // candidate id, median
  std::optional<double> first_s;
  int64_t next_seq = 0;
  // Candidates that spent the budget: duplicates of an earlier library do not.
  int evaluated = 0;
  std::map<std::string, std::optional<double>> library_times;
  for (const auto& e : history.entries) {
    space::Candidate c = space::CandidateFromJson(json::parse(e.candidate.schedule_json, nullptr, false));
    next_seq = std::max(next_seq, e.candidate.seq + 1);
    std::string st = CandidateStatusText(e);
    if (st == "unfinished" || st == "unmeasured") {
      unfinished.push_back({e.candidate.seq, c});
      continue;
    }
    std::optional<double> t;
    if (st == "correct") t = e.measurement->median_s;
    const std::string library =
        e.build && e.build->artifacts.count("library") ? e.build->artifacts.at("library") : "";
    if (st == "duplicate") {
      if (auto known = library_times.find(library); known != library_times.end()) t = known->second;
      search.Record(c, t);
      continue;
    }
    ++evaluated;
    if (!library.empty() && !library_times.count(library)) {
      library_times[library] = t;
      pipeline.RememberLibrary(library, Pipeline::KnownLibrary{e.candidate.seq, t});
    }
    search.Record(c, t);
    if (t && (!best || *t < best->second)) best = {e.candidate.id, *t};
    if (e.candidate.seq == 0 && t) first_s = t;
  }

  // The peaks behind the roofline: the plan's, unless the run measured them again.
  target::Target roof_target = plan->target;
  auto roofline_of = [&](double median_s) {
    PlanTotals totals = TotalsOf(plan->fusion);
    int64_t flops = task.flops > 0 ? task.flops : totals.flops;
    int64_t bytes = task.bytes > 0 ? task.bytes : totals.bytes;
    double peak = totals.compute_dtype == "bf16" && roof_target.peak_flops_bf16 > 0
                      ? roof_target.peak_flops_bf16
                      : roof_target.peak_flops_f32;
    return AnalyzeRoofline(flops, bytes, median_s, peak, roof_target.bandwidth_bytes_per_s);
  };
  auto progress = [&](const CandidateOutcome* outcome, int iteration) {
    if (!callbacks.on_progress) return;
    AutoProgress p;
    p.run_id = run_id;
    p.iteration = iteration;
    p.max_iterations = options.max_iterations;
    p.outcome = outcome;
    if (best) {
      p.best_s = best->second;
      if (const double fraction = roofline_of(best->second).fraction; fraction <= 1) {
        p.best_roofline_fraction = fraction;
      }
      if (baseline_s) p.speedup_vs_baseline = *baseline_s / best->second;
    }
    p.first_s = first_s;
    p.elapsed_s = SecondsSince(start);
    if (options.search) p.search = search.Stats();
    callbacks.on_progress(p);
  };
  int finished = evaluated;
  progress(nullptr, finished);
  // Duplicates cost a build (a cache hit) each; a space that proposes little else ends here.
  const int64_t max_proposals = 4 * static_cast<int64_t>(options.max_iterations) + 16;

  // ---- the loop ---------------------------------------------------------------------------
  std::string stop_reason;
  std::optional<space::Candidate> suggested;  // the debugger's fix for the last failure
  std::deque<std::pair<int64_t, space::Candidate>> batch;  // proposed and compiled, not evaluated
  auto metric_met = [&] {
    return best && MetricMet(options.target_metric, best->second,
                             roofline_of(best->second).fraction, baseline_s);
  };
  while (true) {
    if (request.stop && request.stop->load()) { stop_reason = "interrupted"; break; }
    if (lease->lost()) return Internal("run " + std::to_string(run_id) + ": lost its lease to another process; stopped without writing more");
    if (metric_met()) { stop_reason = "target_metric_met"; break; }
    if (unfinished.empty() && batch.empty() && evaluated >= options.max_iterations) {
      stop_reason = "max_iterations";
      break;
    }
    if (unfinished.empty() && batch.empty() && next_seq >= max_proposals) {
      stop_reason = "space_exhausted";
      break;
    }
    if (options.time_budget_s > 0 && SecondsSince(start) >= options.time_budget_s) {
      stop_reason = "time_budget";
      break;
    }
    int64_t seq;
    space::Candidate candidate;
    if (!unfinished.empty()) {
      seq = unfinished.front().first;
      candidate = unfinished.front().second;
      unfinished.erase(unfinished.begin());
    } else if (!batch.empty()) {
      seq = batch.front().first;
      candidate = batch.front().second;
      batch.pop_front();
    } else {
      std::optional<space::Candidate> next;
      if (suggested && !search.Tried(*suggested)) next = suggested;
      suggested.reset();
      if (!next) next = search.Next();
      if (!next) { stop_reason = "space_exhausted"; break; }
      seq = next_seq++;
      candidate = *next;
      if (options.batch > 1) {
        // A batch: up to `batch` proposals (no more than the budget left), compiled in parallel
        // into the compile cache, then evaluated (and timed) one at a time from the queue.
        std::vector<space::Candidate> all = {candidate};
        const int room = std::min(options.batch, options.max_iterations - evaluated);
        while (static_cast<int>(all.size()) < room && next_seq < max_proposals) {
          std::optional<space::Candidate> more = search.Next();
          if (!more) break;
          batch.push_back({next_seq++, *more});
          all.push_back(*more);
        }
        if (all.size() > 1) {
          const int built = pipeline.Prebuild(all, options.batch);
          (void)db.AddEvent(run_id, "batch.compiled",
                            json{{"first_seq", seq}, {"candidates", all.size()}, {"built", built}}.dump());
        }
      }
    }
    Result<CandidateOutcome> evaluation = pipeline.Evaluate(run_id, seq, candidate);
    if (!evaluation.ok() && evaluation.status().code() == ErrorCode::kEnvironment) {
      // Not the candidate's fault (e.g. an unwritable compile cache): stop, resumable.
      (void)db.AddEvent(run_id, "run.environment_error",
                        json{{"error", evaluation.status().message()}}.dump());
      (void)db.FinishRun(run_id, store::RunStatus::kCancelled);
    }
    if (!evaluation.ok() && evaluation.status().code() == ErrorCode::kCancelled) {
      // The oracle stopped: an interrupt or the time budget, never the candidate's fault.
      stop_reason = request.stop && request.stop->load() ? "interrupted" : "time_budget";
      break;
    }
    MK_ASSIGN_OR_RETURN(CandidateOutcome outcome, std::move(evaluation));
    std::optional<double> t;
    if (outcome.correct()) t = outcome.profile->timing.median_s;
    if (outcome.status == "duplicate") {
      // Same bytes, same speed: the search learns it, the budget is not spent, the best does
      // not move.
      search.Record(outcome.candidate, outcome.duplicate_median_s);
      search.Record(candidate, outcome.duplicate_median_s);
      progress(&outcome, finished);
      continue;
    }
    ++evaluated;
    search.Record(outcome.candidate, t);
    search.Record(candidate, t);  // the proposal as given, when the implementer completed it
    if (t && (!best || *t < best->second)) {
      best = {outcome.candidate_id, *t};
      MK_RETURN_IF_ERROR(db.SetRunBest(run_id, outcome.candidate_id));
    }
    if (seq == 0 && t) first_s = t;
    if (!outcome.correct() && outcome.diagnosis && !outcome.diagnosis->suggested_fix.empty()) {
      suggested = ApplyFix(outcome.candidate, *outcome.diagnosis);
      if (!CompleteCandidate(*plan, *suggested).ok()) suggested.reset();
    }
    ++finished;
    progress(&outcome, finished);
  }

  // ---- the comparison that decides "speedup over the first candidate" -----------------------
  MK_ASSIGN_OR_RETURN(history, LoadHistory(db, run_id));
  const History::Entry* best_entry = nullptr;
  const History::Entry* first_entry = nullptr;
  for (const auto& e : history.entries) {
    if (e.candidate.seq == 0) first_entry = &e;
    if (best && e.candidate.id == best->first) best_entry = &e;
  }
  json comparison = nullptr;
  std::optional<double> speedup_vs_first;
  const bool was_interrupted = request.stop && request.stop->load();
  if (best_entry && first_entry && first_entry->measurement) {
    if (best_entry == first_entry) {
      speedup_vs_first = 1.0;
    } else if (was_interrupted) {
      // Two separate measurements taken at different times are not a ratio worth printing.
      comparison = {{"verdict", {{"verdict", "not compared"},
                                 {"reason", "the run was interrupted before the interleaved "
                                            "comparison of the best with the first"}}},
                    {"challenger_seq", best_entry->candidate.seq},
                    {"kept", "best"}};
    } else if (options.compare_rounds > 0) {
      // Separate measurements drift with the machine's load; only an interleaved A/B run in one
      // sitting gives a ratio worth reporting, and only its verdict may change what is shipped.
      auto rebuild = [&](const History::Entry& e) {
        return pipeline.Rebuild(space::CandidateFromJson(json::parse(e.candidate.schedule_json)));
      };
      auto a = rebuild(*first_entry);
      auto b = rebuild(*best_entry);
      if (a.ok() && b.ok()) {
        auto ra = pipeline.ProfileRequestFor(a->first, a->second);
        auto rb = pipeline.ProfileRequestFor(b->first, b->second);
        if (ra.ok() && rb.ok()) {
          auto cmp = CompareInterleaved(*ra, *rb, engine.sandbox(), options.compare_rounds);
          if (cmp.ok() && cmp->a.ok() && cmp->b.ok()) {
            speedup_vs_first = cmp->speedup_b_over_a;
            comparison = {{"rounds", cmp->rounds},
                          {"first_median_s", cmp->a.timing.median_s},
                          {"best_median_s", cmp->b.timing.median_s},
                          {"speedup", cmp->speedup_b_over_a},
                          {"round_ratios", cmp->round_ratios},
                          {"remeasured_rounds", cmp->remeasured_rounds},
                          {"verdict", ToJson(cmp->verdict)},
                          {"load_before", ToJson(cmp->load_before)},
                          {"load_after", ToJson(cmp->load_after)},
                          {"challenger_seq", best_entry->candidate.seq}};
            // The search's best won a single measurement; side by side it must be faster beyond
            // the margin to replace the analytical point. Slower or inconclusive: the first is
            // shipped, and the result and the event say why.
            if (cmp->verdict.verdict != Verdict::kFaster) {
              comparison["kept"] = "first";
              speedup_vs_first = 1.0;
              best = {first_entry->candidate.id, first_entry->measurement->median_s};
              best_entry = first_entry;
              MK_RETURN_IF_ERROR(db.SetRunBest(run_id, first_entry->candidate.id));
              (void)db.AddEvent(run_id, "run.best_reverted",
                                json{{"challenger_seq", comparison["challenger_seq"]},
                                     {"interleaved_speedup", cmp->speedup_b_over_a},
                                     {"verdict", ToJson(cmp->verdict)}}.dump());
            } else {
              comparison["kept"] = "best";
            }
          }
        }
      }
    }
  }

  // ---- the best against XLA:CPU, interleaved in this run ------------------------------------
  json xla_comparison = nullptr;
  if (best_entry && options.xla_rounds > 0 && !was_interrupted) {
    if (callbacks.on_note) {
      callbacks.on_note("timing the best against XLA:CPU, " + std::to_string(options.xla_rounds) +
                        " interleaved rounds ...");
    }
    auto built = pipeline.Rebuild(
        space::CandidateFromJson(json::parse(best_entry->candidate.schedule_json)));
    Result<XlaComparison> xla = built.status();
    if (built.ok()) {
      auto req = pipeline.ProfileRequestFor(built->first, built->second);
      xla = req.ok() ? CompareWithXla(task_dir, *req, engine.sandbox(), options.xla_rounds)
                     : Result<XlaComparison>(req.status());
    }
    xla_comparison = xla.ok() ? ToJson(*xla) : json{{"error", xla.status().message()}};
    if (xla.ok()) {
      // The XLA side's time is a baseline for later runs of this module on this CPU.
      store::BaselineRecord b;
      b.module_sha256 = module_sha;
      b.cpu_model = engine.target().model;
      b.engine = "xla-cpu";
      b.engine_version = "jax " + xla->xla_info.value("jax_version", std::string("?"));
      b.median_s = xla->xla_median_s;
      b.runs = xla->rounds;
      b.details_json = xla_comparison.dump();
      (void)db.AddBaseline(b);
    }
    (void)db.AddEvent(run_id, "run.xla_compared", xla_comparison.dump());
  }

  // ---- the roofline: above 100% means the peaks are wrong --------------------------------
  json roofline_note = nullptr;
  if (const double before =
          best_entry && best_entry->measurement ? roofline_of(best_entry->measurement->median_s).fraction : 0;
      before > 1) {
    Result<target::Target> again = callbacks.reprobe
                                       ? callbacks.reprobe()
                                       : Result<target::Target>(NotFound("no re-probe here"));
    if (again.ok()) {
      roof_target = *again;
      (void)db.AddEvent(run_id, "run.reprobed",
                        json{{"reason", "the best ran above 100% of the roofline"},
                             {"fraction_before", before}}.dump());
    }
    if (roofline_of(best_entry->measurement->median_s).fraction > 1) {
      roofline_note = "the kernel ran faster than the measured peaks allow; the machine probe is "
                      "wrong (`maxkernel doctor --probe` measures it again), so no roofline figure "
                      "is given";
    }
  }

  // ---- the result -------------------------------------------------------------------------
  bool interrupted = stop_reason == "interrupted";
  store::RunStatus final_status = interrupted ? store::RunStatus::kCancelled
                                  : best      ? store::RunStatus::kSucceeded
                                              : store::RunStatus::kFailed;
  json result;
  result["schema"] = "maxkernel.optimize.result/1";
  result["run_id"] = run_id;
  result["status"] = std::string(store::RunStatusName(final_status));
  result["stop_reason"] = stop_reason;
  result["date"] = UtcNow();
  result["task"] = {{"id", task.id}, {"name", task.name}, {"dir", task_dir}, {"scale", task.scale},
                    {"dtype", task.dtype}, {"flops", task.flops}, {"bytes", task.bytes}};
  // The peaks the roofline used; a CPU without a bf16 instruction has no bf16 peak to show.
  const bool has_bf16 = roof_target.Has("avx512_bf16") || roof_target.Has("amx_bf16");
  result["target"] = {{"name", roof_target.name},
                      {"model", roof_target.model},
                      {"cores", roof_target.cores},
                      {"isa_level", roof_target.isa_level},
                      {"compile_flags", roof_target.compile_flags},
                      {"peak_flops_f32", roof_target.peak_flops_f32},
                      {"peak_flops_bf16", has_bf16 && roof_target.peak_flops_bf16 > 0
                                              ? json(roof_target.peak_flops_bf16)
                                              : json(nullptr)},
                      {"bandwidth_bytes_per_s", roof_target.bandwidth_bytes_per_s},
                      {"peaks_source", roof_target.rates_measured ? "probe" : "nominal"}};
  result["options"] = OptionsToJson(options);
  // Candidates that spent the budget; duplicates of an earlier library are counted apart.
  int64_t duplicates = 0;
  for (const auto& e : history.entries) {
    if (e.candidate.status == store::CandidateStatus::kDuplicate) ++duplicates;
  }
  result["iterations"] = static_cast<int64_t>(history.entries.size()) - duplicates;
  result["duplicates"] = duplicates;
  result["elapsed_s"] = SecondsSince(start);
  result["baseline"] = known_baseline ? json{{"engine", known_baseline->engine},
                                             {"engine_version", known_baseline->engine_version},
                                             {"median_s", known_baseline->median_s},
                                             {"date", known_baseline->date},
                                             {"source", known_baseline->source}}
                                      : json(nullptr);
  result["first"] = first_entry && first_entry->measurement
                        ? json{{"seq", 0},
                               {"candidate_id", first_entry->candidate.id},
                               {"median_s", first_entry->measurement->median_s}}
                        : json(nullptr);
  if (best_entry && best_entry->measurement) {
    const auto& m = *best_entry->measurement;
    Roofline r = roofline_of(m.median_s);
    json arts = json::object();
    if (best_entry->build) {
      for (const auto& [role, sha] : best_entry->build->artifacts) arts[role] = sha;
    }
    result["best"] = {
        {"seq", best_entry->candidate.seq},
        {"candidate_id", best_entry->candidate.id},
        {"median_s", m.median_s},
        {"p10_s", m.p10_s},
        {"p90_s", m.p90_s},
        {"gflops", r.achieved_flops / 1e9},
        {"gbps", r.achieved_bytes_per_s / 1e9},
        // Never above 1: a figure past the roof is withheld with a note, not clamped.
        {"roofline_fraction", r.fraction > 1 ? json(nullptr) : json(r.fraction)},
        {"roofline_note", roofline_note},
        {"bottleneck", r.bottleneck},
        {"speedup_vs_first", NullableNumber(speedup_vs_first)},
        // Against the baseline recorded with the task (another time, another load): see
        // comparison_with_xla for the interleaved figure.
        {"speedup_vs_baseline", baseline_s ? json(*baseline_s / m.median_s) : json(nullptr)},
        {"comparison_with_first", comparison},
        {"comparison_with_xla", xla_comparison},
        {"schedule", json::parse(best_entry->candidate.schedule_json, nullptr, false)},
        {"artifacts", arts}};
  } else {
    result["best"] = nullptr;
  }
  // The plan the best candidate ran: the planner's, or the one its fusion choices gave.
  const Plan* best_plan = &*plan;
  std::optional<space::Candidate> best_candidate;
  if (best_entry) {
    best_candidate = space::CandidateFromJson(json::parse(best_entry->candidate.schedule_json, nullptr, false));
    if (Result<const Plan*> p = pipeline.PlanOf(*best_candidate); p.ok()) best_plan = *p;
  }
  json plan_json = ToJson(*best_plan);
  for (auto& k : plan_json["kernels"]) k["measured_s"] = nullptr;
  if (best_entry && options.profile_kernels > 0 && !(request.stop && request.stop->load())) {
    const space::Candidate& c = *best_candidate;
    auto timings = ProfileKernels(*best_plan, c, engine, options.pipeline.protocol, options.profile_kernels);
    if (timings.ok()) {
      for (const KernelTiming& t : *timings) {
        for (auto& k : plan_json["kernels"]) {
          if (k["id"] != t.kernel_id) continue;
          k["measured_s"] = NullableNumber(t.median_s);
          if (!t.error.empty()) k["measured_error"] = t.error;
        }
      }
    }
  }
  result["plan"] = plan_json;
  json candidates = json::array();
  std::optional<double> best_so_far;
  std::map<std::string, int64_t> first_seq_of_library;
  for (const auto& e : history.entries) {
    std::optional<double> t;
    if (e.measurement && e.candidate.status == store::CandidateStatus::kCorrect) t = e.measurement->median_s;
    if (t && (!best_so_far || *t < *best_so_far)) best_so_far = t;
    const std::string library =
        e.build && e.build->artifacts.count("library") ? e.build->artifacts.at("library") : "";
    json duplicate_of = nullptr;
    if (!library.empty()) {
      auto [it, first] = first_seq_of_library.emplace(library, e.candidate.seq);
      if (!first && e.candidate.status == store::CandidateStatus::kDuplicate) duplicate_of = it->second;
    }
    // The measurement's spread and the machine's load while it ran (profiler.h).
    json load = nullptr;
    if (e.measurement) {
      json env = json::parse(e.measurement->environment_json, nullptr, false);
      if (env.is_object() && env.contains("load")) load = env["load"];
    }
    candidates.push_back(
        {{"seq", e.candidate.seq},
         {"candidate_id", e.candidate.id},
         {"status", CandidateStatusText(e)},
         {"median_s", NullableNumber(t)},
         {"best_so_far_s", NullableNumber(best_so_far)},
         {"roofline_fraction",
          t && roofline_of(*t).fraction <= 1 ? json(roofline_of(*t).fraction) : json(nullptr)},
         {"p10_s", t ? json(e.measurement->p10_s) : json(nullptr)},
         {"p90_s", t ? json(e.measurement->p90_s) : json(nullptr)},
         {"load", load},
         {"library", library.empty() ? json(nullptr) : json(library)},
         {"duplicate_of", duplicate_of},
         {"elapsed_s", e.candidate.created_at},
         {"schedule", json::parse(e.candidate.schedule_json, nullptr, false)},
         {"diagnosis", e.diagnosis ? json(e.diagnosis->diagnosis_class + ": " + e.diagnosis->message)
                                   : json(nullptr)}});
  }
  // elapsed_s per candidate: seconds from the first candidate's creation (the store's clock).
  if (!candidates.empty()) {
    double t0 = candidates.front()["elapsed_s"].get<double>();
    for (auto& c : candidates) c["elapsed_s"] = c["elapsed_s"].get<double>() - t0;
  }
  result["candidates"] = candidates;
  result["mode"] = options.search ? "search" : "auto";
  if (options.search) {
    result["search"] = search.Stats();
    if (options.search->use_model) result["search"]["prior"] = prior.ToJson();
    // The model this run trained is kept for the next search on this target and CPU model.
    json saved = nullptr;
    if (graph_search && graph_search->TrainedModel()) {
      Result<std::string> sha = search::SaveRunModel(db, artifacts, run_id, engine.target().name,
                                                     engine.target().model,
                                                     *graph_search->TrainedModel(),
                                                     graph_search->TrainedRows());
      saved = sha.ok() ? json(*sha) : json{{"error", sha.status().message()}};
    }
    if (result["search"]["model"].is_object()) result["search"]["model"]["saved_sha256"] = saved;
    if (!request.save_model_path.empty()) {
      const search::CostModel* m = graph_search ? graph_search->CurrentModel() : nullptr;
      json exported = {{"path", request.save_model_path}};
      Result<std::string> bytes = m ? m->SerializeXgboost()
                                    : Result<std::string>(NotFound(
                                          "no model to save: the run measured fewer than " +
                                          std::to_string(search::GraphSearch::kMinRowsToTrain) +
                                          " candidates and had no prior, or the model is off"));
      if (bytes.ok()) {
        std::ofstream out(request.save_model_path, std::ios::binary | std::ios::trunc);
        out << *bytes;
        out.close();
        if (!out) bytes = IoError("cannot write " + request.save_model_path);
      }
      if (!bytes.ok()) exported["error"] = bytes.status().message();
      result["search"]["model_export"] = exported;
    }
  }
  if (!request.graph_path.empty()) {
    std::ofstream dot(request.graph_path);
    dot << search.GraphDot();
    if (!dot) return IoError("cannot write the search graph to " + request.graph_path);
  }

  MK_ASSIGN_OR_RETURN(std::string result_sha, artifacts.Put(result.dump(2), "application/json"));
  result["result_artifact"] = result_sha;
  (void)db.AddEvent(run_id, "run.finished",
                    json{{"status", result["status"]}, {"stop_reason", stop_reason},
                         {"result_artifact", result_sha}}.dump());
  MK_RETURN_IF_ERROR(db.FinishRun(run_id, final_status));
  return result;
}

}  // namespace mk::modes
