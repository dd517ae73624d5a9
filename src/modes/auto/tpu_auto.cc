#include "modes/auto/tpu_auto.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>

#include "agents/implementer.h"
#include "agents/planner.h"
#include "agents/tester.h"
#include "agents/tpu_fallback.h"
#include "agents/tpu_runner.h"
#include "codegen/pallas/pallas_emitter.h"
#include "hlo/printer.h"
#include "hlo/verifier.h"
#include "modes/search/plan_search.h"
#include "task/inputs.h"
#include "task/task.h"

namespace mk::modes {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

struct Modelled {
  int64_t candidate_id = 0;
  int64_t seq = 0;
  space::Candidate candidate;
  codegen::Implementation impl;
  agents::TpuModelledTime time;
};

// Stores a candidate's implementation (its artifact, kernel.py, a build row) and, when the model
// takes it, its modelled time as the candidate's measurement. The outer Result is the store's;
// the inner one the model's verdict.
Result<Result<agents::TpuModelledTime>> StoreModelled(store::Store& db, store::ArtifactStore& artifacts,
                                                      int64_t run_id, int64_t cid,
                                                      const codegen::Implementation& impl,
                                                      const target::Target& tpu) {
  Result<agents::TpuModelledTime> t = agents::ModelTpuImplementation(impl, tpu);
  MK_ASSIGN_OR_RETURN(std::string impl_sha,
                      artifacts.Put(codegen::ImplementationToJson(impl).dump(), "application/json"));
  MK_ASSIGN_OR_RETURN(std::string source, agents::SourceNamed(impl, "kernel.py"));
  MK_ASSIGN_OR_RETURN(std::string source_sha, artifacts.Put(source, "text/x-python"));
  (void)db.SetCandidateImplementation(cid, impl_sha);
  store::NewBuild nb;
  nb.candidate_id = cid;
  nb.artifacts = {{"implementation", impl_sha}, {"source", source_sha}};
  MK_RETURN_IF_ERROR(db.AddBuild(nb).status());
  if (!t.ok()) return t;
  (void)db.SetCandidateStatus(cid, store::CandidateStatus::kBuilt);
  store::NewMeasurement m;
  m.run_id = run_id;
  m.key = {cid, 0};
  m.median_s = m.p10_s = m.p90_s = t->seconds;
  m.environment_json = json{{"kind", "modelled"}, {"target", tpu.name}, {"model", "target/tpu_perf_model.h"}}.dump();
  MK_RETURN_IF_ERROR(db.AddMeasurement(m).status());
  return t;
}

}  // namespace

Result<json> RunTpuAuto(const TpuAutoRequest& request, store::Store& db,
                        store::ArtifactStore& artifacts) {
  if (request.tpu.kind != target::TargetKind::kTpu) return InvalidArgument("not a TPU target");
  if (request.budget < 1) return InvalidArgument("the budget must be at least 1");
  const auto start = Clock::now();
  std::string task_dir = std::filesystem::absolute(request.task_dir).lexically_normal().string();
  while (task_dir.size() > 1 && task_dir.back() == '/') task_dir.pop_back();
  MK_ASSIGN_OR_RETURN(task::LoadedTask loaded, task::LoadTaskWithModule(task_dir));
  MK_RETURN_IF_ERROR(hlo::VerifyModule(*loaded.module));
  MK_RETURN_IF_ERROR(task::CheckBuffersFitInMemory(loaded.task));
  MK_ASSIGN_OR_RETURN(std::string module_sha,
                      artifacts.Put(hlo::PrintModule(*loaded.module), "text/x-hlo"));
  store::TaskRecord tr;
  tr.directory = task_dir;
  tr.module_sha256 = module_sha;
  tr.yaml = task::TaskToYaml(loaded.task);
  MK_ASSIGN_OR_RETURN(int64_t task_id, db.UpsertTask(tr));
  json config = {{"task_dir", task_dir},
                 {"module_artifact", module_sha},
                 {"budget", request.budget},
                 {"seed", request.seed},
                 {"test_seeds", request.test_seeds},
                 {"search", search::ToJson(request.search)},
                 {"profiler", "the TPU performance model (modelled, no TPU)"}};
  store::NewRun nr;
  nr.task_id = task_id;
  nr.mode = store::RunMode::kAuto;
  nr.target = request.tpu.name;
  nr.config_json = config.dump();
  MK_ASSIGN_OR_RETURN(int64_t run_id, db.CreateRun(nr));
  (void)db.AddEvent(run_id, "run.started", config.dump());

  // ---- plan and search, with the model as the profiler -------------------------------------
  codegen::pallas::PallasEmitter emitter;
  agents::PlanRequest preq;
  preq.module = loaded.module.get();
  preq.target = request.tpu;
  Result<agents::Plan> plan = agents::RunPlanner(preq, emitter);
  if (!plan.ok()) {
    (void)db.FinishRun(run_id, store::RunStatus::kFailed);
    return plan.status();
  }
  search::SearchOptions so = request.search;
  so.use_model = false;
  Result<std::unique_ptr<search::GraphSearch>> searched =
      search::SearchPlan(*plan, so, request.seed + static_cast<uint64_t>(run_id));
  if (!searched.ok()) {
    (void)db.FinishRun(run_id, store::RunStatus::kFailed);
    return searched.status();
  }
  std::unique_ptr<search::GraphSearch> proposer = std::move(*searched);
  std::vector<Modelled> modelled;
  json candidates = json::array();
  for (int64_t seq = 0; seq < request.budget; ++seq) {
    std::optional<space::Candidate> next = proposer->Next();
    if (!next) break;
    Result<agents::Implemented> impl = agents::RunImplementer(*plan, *next, emitter);
    store::NewCandidate nc{run_id, seq, space::ToJson(*next).dump(), ""};
    MK_ASSIGN_OR_RETURN(int64_t cid, db.AddCandidate(nc));
    json row = {{"seq", seq}, {"schedule", space::ToJson(*next)}};
    if (!impl.ok()) {
      (void)db.SetCandidateStatus(cid, store::CandidateStatus::kBuildFailed);
      proposer->Record(*next, std::nullopt);
      row["status"] = "emit_failed";
      row["error"] = impl.status().message();
      candidates.push_back(row);
      continue;
    }
    MK_ASSIGN_OR_RETURN(Result<agents::TpuModelledTime> t,
                        StoreModelled(db, artifacts, run_id, cid, impl->implementation, request.tpu));
    if (!t.ok()) {
      (void)db.SetCandidateStatus(cid, store::CandidateStatus::kBuildFailed);
      proposer->Record(impl->candidate, std::nullopt);
      row["status"] = "model_refused";
      row["error"] = t.status().message();
      candidates.push_back(row);
      continue;
    }
    proposer->Record(impl->candidate, t->seconds);
    row["status"] = "modelled";
    row["modelled_s"] = t->seconds;
    candidates.push_back(row);
    modelled.push_back({cid, seq, impl->candidate, impl->implementation, *t});
  }
  std::sort(modelled.begin(), modelled.end(),
            [](const Modelled& a, const Modelled& b) { return a.time.seconds < b.time.seconds; });

  // ---- check the best: interpret mode + the real compiler ----------------------------------
  agents::TpuRunner runner(request.tpu);
  json checked = json::array();
  const Modelled* best = nullptr;
  json best_report, best_compile;
  int64_t next_seq = static_cast<int64_t>(candidates.size());
  json fallbacks = json::array();
  for (size_t i = 0; i < modelled.size() && static_cast<int>(i) < request.max_checked; ++i) {
    // Built first: kernels the compiler refuses fall back to XLA glue (agents/tpu_fallback.h).
    // The fallen-back module is a candidate of its own, stored and modelled like the others.
    Result<agents::TpuBuilt> built = agents::BuildWithGlueFallback(runner, plan->fusion, modelled[i].candidate);
    if (built.ok() && !built->fallbacks.empty()) {
      const int64_t seq = next_seq++;
      store::NewCandidate nc{run_id, seq, space::ToJson(built->candidate).dump(), ""};
      MK_ASSIGN_OR_RETURN(int64_t cid, db.AddCandidate(nc));
      MK_ASSIGN_OR_RETURN(Result<agents::TpuModelledTime> t,
                          StoreModelled(db, artifacts, run_id, cid, built->implementation, request.tpu));
      json row = {{"seq", seq}, {"schedule", space::ToJson(built->candidate)}, {"fallback_of", modelled[i].seq}};
      json fb = agents::ToJson(*built);
      fb["seq"] = seq;
      fb["fallback_of"] = modelled[i].seq;
      fallbacks.push_back(fb);
      if (!t.ok()) {
        (void)db.SetCandidateStatus(cid, store::CandidateStatus::kBuildFailed);
        row["status"] = "model_refused";
        row["error"] = t.status().message();
        candidates.push_back(row);
        continue;
      }
      row["status"] = "modelled";
      row["modelled_s"] = t->seconds;
      candidates.push_back(row);
      (void)db.AddEvent(run_id, "tpu.glue_fallback", fb.dump());
      modelled[i] = {cid, seq, built->candidate, built->implementation, *t};
    }
    agents::TestRequest tr;
    tr.task_dir = task_dir;
    tr.implementation = modelled[i].impl;
    tr.num_seeds = request.test_seeds;
    tr.timeout_s = request.run_timeout_s;
    tr.oracle_timeout_s = request.run_timeout_s;
    MK_ASSIGN_OR_RETURN(agents::TestReport report, agents::RunTester(tr, runner));
    json rj = agents::ToJson(report);
    checked.push_back({{"seq", modelled[i].seq}, {"status", report.status}, {"message", report.message}});
    (void)db.SetCandidateStatus(modelled[i].candidate_id,
                                report.passed() ? store::CandidateStatus::kCorrect
                                : report.status == "build-failed" ? store::CandidateStatus::kBuildFailed
                                                                  : store::CandidateStatus::kTestFailed);
    if (report.passed()) {
      best = &modelled[i];
      best_report = rj;
      best_compile = runner.last_compile();
      MK_RETURN_IF_ERROR(db.SetRunBest(run_id, best->candidate_id));
      break;
    }
  }

  json result;
  result["schema"] = "maxkernel.optimize.result/1";
  result["run_id"] = run_id;
  result["mode"] = "auto";
  result["status"] = best ? "succeeded" : "failed";
  result["task"] = {{"id", loaded.task.id}, {"name", loaded.task.name}, {"dir", task_dir},
                    {"scale", loaded.task.scale}};
  result["target"] = {{"name", request.tpu.name}, {"kind", "tpu"}, {"model", request.tpu.model},
                      {"peak_bf16_flops", request.tpu.peak_flops_bf16},
                      {"hbm_bytes_per_s", request.tpu.bandwidth_bytes_per_s},
                      {"vmem_bytes", request.tpu.vmem_bytes}};
  result["iterations"] = static_cast<int64_t>(candidates.size());
  result["search"] = proposer->Stats();
  result["candidates"] = candidates;
  result["checked"] = checked;
  result["plan"] = agents::ToJson(*plan);
  json tpu = {{"label", "modelled: no TPU ran or timed any of this"}, {"glue_fallback", fallbacks}};
  if (best) {
    result["best"] = {{"candidate_id", best->candidate_id},
                      {"seq", best->seq},
                      {"schedule", space::ToJson(best->candidate)},
                      {"modelled_s", best->time.seconds},
                      {"model", agents::ToJson(best->time)},
                      {"test", best_report},
                      {"compile", best_compile},
                      {"implementation_hash", best->impl.hash}};
  } else {
    result["best"] = nullptr;
  }
  if (request.xla_estimate) {
    json xla = agents::XlaTpuEstimate(task_dir, request.tpu);
    tpu["xla_tpu_estimate"] = xla;
    const double xla_s = xla.value(json::json_pointer("/cost/optimal_seconds"), 0.0);
    if (best && xla_s > 0 && best->time.seconds > 0) {
      tpu["modelled_ratio"] = xla_s / best->time.seconds;  // > 1: ours modelled faster
    }
  }
  result["tpu"] = tpu;
  result["elapsed_s"] = SecondsSince(start);
  MK_ASSIGN_OR_RETURN(std::string result_sha, artifacts.Put(result.dump(2), "application/json"));
  result["result_artifact"] = result_sha;
  (void)db.AddEvent(run_id, "run.finished", json{{"status", result["status"]}, {"result_artifact", result_sha}}.dump());
  MK_RETURN_IF_ERROR(db.FinishRun(run_id, best ? store::RunStatus::kSucceeded : store::RunStatus::kFailed));
  return result;
}

}  // namespace mk::modes
