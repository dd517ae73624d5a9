#include "agents/pipeline.h"

#include <algorithm>
#include <atomic>
#include <fstream>
#include <sstream>
#include <thread>

#include "agents/implementer.h"
#include "hlo/printer.h"
#include "task/inputs.h"

namespace mk::agents {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

Result<std::string> ReadBinaryFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError("cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string FirstLine(const std::string& text) {
  size_t nl = text.find('\n');
  return nl == std::string::npos ? text : text.substr(0, nl);
}

}  // namespace

Pipeline::Pipeline(PipelineContext context, task::Task task, const hlo::Module& oracle,
                   const Plan& plan, PipelineOptions options)
    : ctx_(context),
      task_(std::move(task)),
      oracle_(oracle),
      oracle_text_(hlo::PrintModule(oracle)),
      plan_(plan),
      options_(std::move(options)),
      references_(std::make_shared<std::map<uint64_t, std::vector<hlo::Literal>>>()) {}

template <typename F>
auto Pipeline::Timed(const std::string& agent, F&& body) {
  auto start = Clock::now();
  auto result = body();
  if (ctx_.observer) {
    std::string status = "ok";
    if constexpr (requires { result.ok(); }) {
      if (!result.ok()) status = "error";
    }
    ctx_.observer->OnAgent(agent, status, SecondsSince(start));
  }
  return result;
}

void Pipeline::Event(int64_t run_id, const std::string& kind, json payload) {
  // Events are the audit trail, not the data: losing one must not fail the candidate.
  (void)ctx_.store->AddEvent(run_id, kind, payload.dump());
}

std::optional<Diagnosis> Pipeline::DiagnoseFailure(const space::Candidate& candidate,
                                                   const codegen::Implementation& impl,
                                                   const Failure& failure) {
  if (!options_.diagnose) return std::nullopt;
  DebugRequest request;
  request.module_text = oracle_text_;
  request.candidate = candidate;
  request.implementation = impl;
  request.failure = failure;
  request.task_yaml = task::TaskToYaml(task_);
  request.task_dir = task_.dir;
  request.seeds = {failure.seed};
  request.timeout_s = options_.run_timeout_s;
  request.deadline = options_.deadline;
  request.cancel = options_.cancel;
  DebugOptions debug;
  debug.artifact_dir = options_.repro_dir;
  debug.binary = options_.binary;
  auto start = Clock::now();
  Result<Diagnosis> d = Diagnose(request, *ctx_.engine, debug);
  if (ctx_.observer) ctx_.observer->OnAgent("debugger", d.ok() ? "ok" : "error", SecondsSince(start));
  if (!d.ok()) return std::nullopt;
  return *d;
}

void Pipeline::RememberLibrary(const std::string& library_sha256, KnownLibrary known) {
  libraries_.emplace(library_sha256, known);  // the first one told stays
}

Result<ProfileRequest> Pipeline::ProfileRequestFor(const codegen::Implementation& impl,
                                                   const runtime::CompiledLibrary& library) {
  if (!profile_inputs_) {
    MK_ASSIGN_OR_RETURN(auto inputs, task::GenerateInputs(task_, task_.seed));
    profile_inputs_ = std::move(inputs);
  }
  ProfileRequest r;
  r.implementation = impl;
  r.library = library;
  r.inputs = *profile_inputs_;
  r.target = plan_.target;
  PlanTotals totals = TotalsOf(plan_.fusion);
  // The task's own counts are the user's definition of the work; the plan's are the fallback.
  r.flops = task_.flops > 0 ? task_.flops : totals.flops;
  r.bytes = task_.bytes > 0 ? task_.bytes : totals.bytes;
  r.compute_dtype = totals.compute_dtype;
  r.protocol = options_.protocol;
  Result<std::string> identity = ctx_.engine->compiler().CompilerIdentity();
  r.compiler_identity = identity.ok() ? *identity : "";
  r.compile_flags = ctx_.engine->compiler().options().flags;
  for (const auto& f : impl.flags) r.compile_flags.push_back(f);
  r.maxkernel_version = options_.maxkernel_version;
  return r;
}

Result<const Plan*> Pipeline::PlanOf(const space::Candidate& candidate) {
  if (candidate.fusion == plan_.fusion_choices) return &plan_;
  if (auto it = other_plans_.find(candidate.fusion); it != other_plans_.end()) return it->second.get();
  if (!replanner_) {
    return InvalidArgument("the candidate makes fusion choices of its own, and this run plans "
                           "only its planner's kernels");
  }
  MK_ASSIGN_OR_RETURN(Plan plan, replanner_(candidate.fusion));
  auto owned = std::make_unique<Plan>(std::move(plan));
  const Plan* out = owned.get();
  other_plans_.emplace(candidate.fusion, std::move(owned));
  return out;
}

namespace {

Result<Implemented> ImplementOnPlan(Result<const Plan*> plan, const space::Candidate& candidate,
                                    const codegen::Emitter& emitter) {
  if (!plan.ok()) return plan.status();
  return RunImplementer(**plan, candidate, emitter);
}

}  // namespace

Result<std::pair<codegen::Implementation, runtime::CompiledLibrary>> Pipeline::Rebuild(
    const space::Candidate& candidate) {
  MK_ASSIGN_OR_RETURN(Implemented impl,
                      ImplementOnPlan(PlanOf(candidate), candidate, ctx_.engine->emitter()));
  MK_ASSIGN_OR_RETURN(runtime::CompiledLibrary lib, ctx_.engine->Build(impl.implementation));
  return std::make_pair(std::move(impl.implementation), std::move(lib));
}

int Pipeline::Prebuild(const std::vector<space::Candidate>& candidates, int threads) {
  std::vector<codegen::Implementation> impls;
  for (const auto& c : candidates) {
    Result<Implemented> impl = ImplementOnPlan(PlanOf(c), c, ctx_.engine->emitter());
    if (impl.ok()) impls.push_back(std::move(impl->implementation));
  }
  std::atomic<size_t> next{0};
  std::atomic<int> built{0};
  auto work = [&] {
    for (size_t i = next++; i < impls.size(); i = next++) {
      if (ctx_.engine->Build(impls[i]).ok()) ++built;
    }
  };
  std::vector<std::thread> pool;
  const size_t n = std::min<size_t>(impls.size(), static_cast<size_t>(std::max(1, threads)));
  for (size_t t = 1; t < n; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  return built.load();
}

Result<CandidateOutcome> Pipeline::Evaluate(int64_t run_id, int64_t seq,
                                            const space::Candidate& proposed) {
  auto start = Clock::now();
  CandidateOutcome out;
  out.seq = seq;
  out.candidate = proposed;
  store::Store& db = *ctx_.store;

  // Implement. A candidate the implementer refuses still gets a row: the run's history must
  // show every proposal, and a resumed run must not propose it again.
  auto implemented = Timed("implementer", [&] {
    return ImplementOnPlan(PlanOf(proposed), proposed, ctx_.engine->emitter());
  });
  if (implemented.ok()) out.candidate = implemented->candidate;
  store::NewCandidate nc;
  nc.run_id = run_id;
  nc.seq = seq;
  nc.schedule_json = space::ToJson(out.candidate).dump();
  MK_ASSIGN_OR_RETURN(out.candidate_id, db.AddCandidate(nc));
  if (!implemented.ok()) {
    out.status = "build_failed";
    out.message = "implementer: " + implemented.status().message();
    store::NewBuild nb;
    nb.candidate_id = out.candidate_id;
    nb.status = store::BuildStatus::kFailed;
    nb.diagnosis = out.message;
    MK_RETURN_IF_ERROR(db.AddBuild(nb).status());
    MK_RETURN_IF_ERROR(db.SetCandidateStatus(out.candidate_id, store::CandidateStatus::kBuildFailed));
    Event(run_id, "candidate.build_failed", {{"seq", seq}, {"message", out.message}});
    out.elapsed_s = SecondsSince(start);
    return out;
  }
  const codegen::Implementation& impl = implemented->implementation;
  const std::string& source = impl.sources.empty() ? std::string() : impl.sources.front().text;
  MK_ASSIGN_OR_RETURN(out.artifacts["source"], ctx_.artifacts->Put(source, "text/x-c++src"));
  MK_ASSIGN_OR_RETURN(out.artifacts["implementation"],
                      ctx_.artifacts->Put(codegen::ImplementationToJson(impl).dump(),
                                          "application/json"));
  MK_RETURN_IF_ERROR(db.SetCandidateImplementation(out.candidate_id, impl.hash));

  // Build.
  auto build_start = Clock::now();
  Result<runtime::CompiledLibrary> lib = ctx_.engine->Build(impl);
  double compile_s = SecondsSince(build_start);
  if (ctx_.observer) ctx_.observer->OnAgent("build", lib.ok() ? "ok" : "failed", compile_s);
  // An unusable compile cache is the machine's fault, not the candidate's: stop the run with one
  // environment error instead of recording every candidate as build_failed.
  if (!lib.ok() && lib.status().code() == ErrorCode::kEnvironment) return lib.status();
  store::NewBuild nb;
  nb.candidate_id = out.candidate_id;
  nb.compile_seconds = lib.ok() && lib->cache_hit ? lib->compile_seconds : compile_s;
  if (!lib.ok()) {
    out.status = "build_failed";
    out.message = FirstLine(lib.status().message());
    out.diagnosis = DiagnoseFailure(out.candidate, impl, FailureFromCompileError(lib.status()));
    nb.status = lib.status().message().find("timed out") != std::string::npos
                    ? store::BuildStatus::kTimeout
                    : store::BuildStatus::kFailed;
    nb.artifacts = out.artifacts;
    nb.diagnosis = out.message;
    MK_ASSIGN_OR_RETURN(int64_t build_id, db.AddBuild(nb));
    if (out.diagnosis) {
      store::NewDiagnosis nd;
      nd.candidate_id = out.candidate_id;
      nd.build_id = build_id;
      nd.diagnosis_class = FailureClassName(out.diagnosis->failure_class);
      nd.message = out.diagnosis->summary;
      MK_ASSIGN_OR_RETURN(nd.artifact_sha256,
                          ctx_.artifacts->Put(ToJson(*out.diagnosis).dump(), "application/json"));
      MK_RETURN_IF_ERROR(db.AddDiagnosis(nd).status());
    }
    MK_RETURN_IF_ERROR(db.SetCandidateStatus(out.candidate_id, store::CandidateStatus::kBuildFailed));
    Event(run_id, "candidate.build_failed", {{"seq", seq}, {"message", out.message}});
    out.elapsed_s = SecondsSince(start);
    return out;
  }
  MK_ASSIGN_OR_RETURN(std::string so_bytes, ReadBinaryFile(lib->so_path));
  MK_ASSIGN_OR_RETURN(out.artifacts["library"],
                      ctx_.artifacts->Put(so_bytes, "application/x-sharedlib"));
  nb.status = store::BuildStatus::kOk;
  nb.artifacts = out.artifacts;
  MK_ASSIGN_OR_RETURN(int64_t build_id, db.AddBuild(nb));
  const std::string library_sha = out.artifacts["library"];
  if (auto known = libraries_.find(library_sha); options_.dedupe && known != libraries_.end()) {
    // The same bytes as an earlier candidate: the same verdict and the same speed. Running it
    // again would spend the budget on measurement noise.
    out.status = "duplicate";
    out.duplicate_of = known->second.seq;
    out.duplicate_median_s = known->second.median_s;
    MK_RETURN_IF_ERROR(db.SetCandidateStatus(out.candidate_id, store::CandidateStatus::kDuplicate));
    Event(run_id, "candidate.duplicate",
          {{"seq", seq}, {"duplicate_of_seq", known->second.seq}, {"library", library_sha}});
    out.elapsed_s = SecondsSince(start);
    return out;
  }
  libraries_[library_sha] = KnownLibrary{seq, std::nullopt};
  MK_RETURN_IF_ERROR(db.SetCandidateStatus(out.candidate_id, store::CandidateStatus::kBuilt));

  // Test on fresh seeds (not the profiling seed), with the oracle's outputs cached per seed.
  TestRequest tr;
  tr.task_dir = task_.dir;
  tr.implementation = impl;
  for (int i = 0; i < options_.test_seeds; ++i) tr.seeds.push_back(task_.seed + 1 + static_cast<uint64_t>(i));
  tr.timeout_s = options_.run_timeout_s;
  tr.reference_cache = references_;
  tr.deadline = options_.deadline;
  tr.cancel = options_.cancel;
  tr.reference_cache_dir = options_.reference_cache_dir;
  auto test_start = Clock::now();
  Result<TestReport> report = RunTester(tr, *ctx_.engine);
  if (ctx_.observer) {
    ctx_.observer->OnAgent("tester", !report.ok() ? "error" : report->passed() ? "ok" : "failed",
                           SecondsSince(test_start));
  }
  if (!report.ok()) return report.status().WithContext("testing candidate " + std::to_string(seq));
  if (!report->passed()) {
    out.status = "test_failed";
    out.message = report->message;
    out.diagnosis = DiagnoseFailure(out.candidate, impl, FailureFromTestReport(*report));
    store::NewDiagnosis nd;
    nd.candidate_id = out.candidate_id;
    nd.build_id = build_id;
    nd.diagnosis_class = out.diagnosis ? FailureClassName(out.diagnosis->failure_class) : "unknown";
    nd.message = out.diagnosis ? out.diagnosis->summary : out.message;
    if (out.diagnosis) {
      MK_ASSIGN_OR_RETURN(nd.artifact_sha256,
                          ctx_.artifacts->Put(ToJson(*out.diagnosis).dump(), "application/json"));
    }
    MK_RETURN_IF_ERROR(db.AddDiagnosis(nd).status());
    MK_RETURN_IF_ERROR(db.SetCandidateStatus(out.candidate_id, store::CandidateStatus::kTestFailed));
    Event(run_id, "candidate.test_failed", {{"seq", seq}, {"message", out.message}});
    out.elapsed_s = SecondsSince(start);
    return out;
  }
  MK_RETURN_IF_ERROR(db.SetCandidateStatus(out.candidate_id, store::CandidateStatus::kCorrect));

  // Profile.
  MK_ASSIGN_OR_RETURN(ProfileRequest pr, ProfileRequestFor(impl, *lib));
  auto profile_start = Clock::now();
  Result<Profile> profile = RunProfiler(pr, ctx_.engine->sandbox());
  if (ctx_.observer) {
    ctx_.observer->OnAgent("profiler", !profile.ok() ? "error" : profile->ok() ? "ok" : "failed",
                           SecondsSince(profile_start));
  }
  if (!profile.ok()) return profile.status().WithContext("profiling candidate " + std::to_string(seq));
  if (!profile->ok()) {
    // Correct on the test seeds, yet it failed while timed (a flaky crash, a timeout under
    // load): not a candidate anyone should ship.
    out.status = "profile_failed";
    out.message = profile->status + ": " + profile->message;
    MK_RETURN_IF_ERROR(db.SetCandidateStatus(out.candidate_id, store::CandidateStatus::kTestFailed));
    store::NewDiagnosis nd;
    nd.candidate_id = out.candidate_id;
    nd.build_id = build_id;
    nd.diagnosis_class = profile->status == "timed-out" ? "timeout" : "crash";
    nd.message = "while profiling: " + out.message;
    MK_RETURN_IF_ERROR(db.AddDiagnosis(nd).status());
    Event(run_id, "candidate.profile_failed", {{"seq", seq}, {"message", out.message}});
    out.elapsed_s = SecondsSince(start);
    return out;
  }
  store::NewMeasurement m;
  m.run_id = run_id;
  m.key = {out.candidate_id, 0};
  m.median_s = profile->timing.median_s;
  m.p10_s = profile->timing.p10_s;
  m.p90_s = profile->timing.p90_s;
  m.iterations = profile->timing.iterations;
  json env = ToJson(*profile);
  m.environment_json = env.contains("environment") ? env["environment"].dump() : "{}";
  MK_RETURN_IF_ERROR(db.AddMeasurement(m).status());
  out.status = "correct";
  libraries_[library_sha].median_s = profile->timing.median_s;
  out.profile = std::move(*profile);
  Event(run_id, "candidate.measured",
        {{"seq", seq}, {"median_s", out.profile->timing.median_s},
         {"roofline_fraction", out.profile->roofline.fraction}});
  out.elapsed_s = SecondsSince(start);
  return out;
}

}  // namespace mk::agents
