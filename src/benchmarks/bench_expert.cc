#include "benchmarks/bench_expert.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "agents/pipeline.h"
#include "agents/planner.h"
#include "agents/tester.h"
#include "benchmarks/bench_jaxbench.h"
#include "hlo/verifier.h"
#include "modes/auto/auto_driver.h"
#include "modes/search/plan_search.h"
#include "task/task.h"

namespace mk::bench {

namespace {

using nlohmann::json;

// The same sandbox and tester gates a pipeline candidate passes, on one fresh seed (the task's
// seed + 1: not the profiling inputs).
Status CheckAgainstReference(const std::string& task_dir, const task::Task& task,
                             const codegen::Implementation& impl, agents::CpuEngine& engine,
                             const std::string& who) {
  agents::TestRequest tr;
  tr.task_dir = task_dir;
  tr.implementation = impl;
  tr.seeds = {task.seed + 1};
  tr.reference_cache_dir = engine.compiler().options().cache_dir + "/oracle";
  MK_ASSIGN_OR_RETURN(agents::TestReport report, agents::RunTester(tr, engine));
  if (!report.passed()) return Internal(who + " failed the tester: " + report.message);
  return Status::Ok();
}

// One side of the comparison: its plan (kept alive: the pipeline and the implementation point
// into it), the pipeline that builds it, and what was built.
struct Side {
  agents::Plan plan;
  std::unique_ptr<agents::Pipeline> pipeline;
  std::optional<modes::search::FusionSpace> fusion;
  codegen::Implementation impl;
  runtime::CompiledLibrary lib;
};

Result<std::unique_ptr<Side>> BuildSide(const task::LoadedTask& loaded, const std::string& task_dir,
                                        bool analytical, const space::Candidate* candidate,
                                        agents::CpuEngine& engine, store::Store& db,
                                        store::ArtifactStore& artifacts,
                                        const agents::TimingProtocol& protocol,
                                        agents::PlanRequest& preq, const std::string& who) {
  auto side = std::make_unique<Side>();
  preq.module = loaded.module.get();
  preq.target = engine.target();
  preq.space.analytical = analytical;
  MK_ASSIGN_OR_RETURN(side->plan, agents::RunPlanner(preq, engine.emitter()));
  agents::PipelineOptions po;
  po.protocol = protocol;
  side->pipeline = std::make_unique<agents::Pipeline>(
      agents::PipelineContext{&db, &artifacts, &engine, nullptr}, loaded.task, *loaded.module,
      side->plan, po);
  // The search's best may carry fusion choices of its own: planned again with them.
  if (auto fs = modes::search::FusionSpaceOf(preq, side->plan, engine.emitter()); fs.ok()) {
    side->fusion = std::move(*fs);
    side->pipeline->SetReplanner(side->fusion->replan);
  }
  const space::Candidate& c = candidate ? *candidate : side->plan.initial;
  auto built = side->pipeline->Rebuild(c);
  if (!built.ok()) return built.status().WithContext(who + " does not build");
  side->impl = std::move(built->first);
  side->lib = std::move(built->second);
  MK_RETURN_IF_ERROR(CheckAgainstReference(task_dir, loaded.task, side->impl, engine, who));
  return side;
}

std::string Ratio(const std::optional<double>& r) {
  if (!r) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", *r);
  return buf;
}

}  // namespace

const std::vector<std::string>& DefaultExpertWorkloads() {
  static const std::vector<std::string> ids = {"18k", "19k", "20k", "27k", "30k", "34k", "35k",
                                               "37k", "39k", "41k", "44k", "47k", "12p"};
  return ids;
}

Status ValidateExpertOptions(const ExpertOptions& o) {
  if (o.only.empty()) return InvalidArgument("--only: give at least one workload id");
  if (o.budget < 1) return InvalidArgument("--budget must be at least 1");
  if (o.batch < 1) return InvalidArgument("--batch must be at least 1");
  if (o.rounds < agents::kMinVerdictRounds) {
    return InvalidArgument("--rounds must be at least " + std::to_string(agents::kMinVerdictRounds) +
                           " for a verdict");
  }
  if (o.fusion_decisions > modes::search::SearchOptions::kMaxFusionDecisions) {
    return InvalidArgument("--fusion-decisions must be at most " +
                           std::to_string(modes::search::SearchOptions::kMaxFusionDecisions));
  }
  MK_RETURN_IF_ERROR(modes::search::ParseAlgorithm(o.algorithm).status());
  if (!(o.protocol.min_seconds > 0)) return InvalidArgument("--min-time must be > 0 seconds");
  if (o.protocol.min_iterations < 1) return InvalidArgument("--min-iterations must be at least 1");
  if (o.protocol.warmup < 0) return InvalidArgument("--warmup must be 0 or more");
  return Status::Ok();
}

Result<std::vector<ExpertRow>> RunExpertBench(const ExpertOptions& o, agents::CpuEngine& engine,
                                              store::Store& db, store::ArtifactStore& artifacts,
                                              const BenchProgress& progress) {
  MK_RETURN_IF_ERROR(ValidateExpertOptions(o));
  auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  JaxbenchOptions jo;
  jo.scale = o.scale;
  jo.only = o.only;
  jo.tasks_dir = o.tasks_dir;
  MK_ASSIGN_OR_RETURN(std::vector<std::string> task_dirs, JaxbenchTaskDirs(jo, progress));

  modes::search::SearchOptions so;
  MK_ASSIGN_OR_RETURN(so.algorithm, modes::search::ParseAlgorithm(o.algorithm));
  so.analytical_init = false;
  if (o.fusion_decisions >= 0) so.fusion_decisions = o.fusion_decisions;

  std::vector<ExpertRow> rows;
  for (size_t wi = 0; wi < o.only.size(); ++wi) {
    ExpertRow row;
    row.id = o.only[wi];
    row.task_dir = task_dirs[wi];
    MK_ASSIGN_OR_RETURN(task::LoadedTask loaded, task::LoadTaskWithModule(row.task_dir));
    MK_RETURN_IF_ERROR(hlo::VerifyModule(*loaded.module));
    row.name = loaded.task.name;
    const std::string head = "[" + std::to_string(wi + 1) + "/" + std::to_string(o.only.size()) +
                             "] " + row.id + " " + row.name + " (" + o.scale + ")";

    // 1. The search, as `maxkernel search TASK --no-analytical-init --budget N` runs it.
    modes::AutoRequest req;
    req.task_dir = row.task_dir;
    req.model_file = o.model_file;
    modes::AutoOptions& ao = req.options;
    ao.max_iterations = o.budget;
    ao.time_budget_s = o.time_budget_s;
    ao.seed = o.seed;
    ao.batch = o.batch;
    ao.compare_rounds = 0;    // the comparison that matters here is against the expert
    ao.profile_kernels = 0;
    ao.xla_rounds = 0;
    ao.pipeline.protocol = o.protocol;
    ao.search = so;
    modes::AutoCallbacks cb;
    int last_shown = -1;
    cb.on_progress = [&](const modes::AutoProgress& p) {
      // A line every 8 candidates and at the end: enough to see a long search move.
      if (p.iteration == last_shown || (p.iteration % 8 != 0 && p.iteration != p.max_iterations)) {
        return;
      }
      last_shown = p.iteration;
      std::string best = p.best_s ? agents::FormatSeconds(*p.best_s) : "-";
      say(head + ": search " + std::to_string(p.iteration) + "/" +
          std::to_string(p.max_iterations) + ", best " + best);
    };
    say(head + ": search (" + o.algorithm + ", no analytical init, budget " +
        std::to_string(o.budget) + ")");
    const auto started = std::chrono::steady_clock::now();
    Result<json> result = modes::RunAuto(req, db, artifacts, engine, cb);
    row.search_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (!result.ok()) {
      row.error = "search: " + result.status().ToString();
      rows.push_back(std::move(row));
      continue;
    }
    row.run_id = result->value("run_id", int64_t{0});
    row.search = result->value("search", json(nullptr));
    row.measured = result->value("iterations", 0);
    const json best = result->value("best", json(nullptr));
    if (!best.is_object() || !best.contains("schedule") || !best["schedule"].is_object()) {
      row.error = "the search (run " + std::to_string(row.run_id) + ") found no correct candidate";
      rows.push_back(std::move(row));
      continue;
    }
    row.search_schedule = best["schedule"];
    const space::Candidate found = space::CandidateFromJson(row.search_schedule);

    // 2-3. Both built and checked, then timed side by side.
    say(head + ": build and check the expert's and the search's kernels");
    agents::PlanRequest expert_req, search_req;
    auto expert = BuildSide(loaded, row.task_dir, /*analytical=*/true, nullptr, engine, db,
                            artifacts, o.protocol, expert_req, "the expert's candidate");
    auto searched = expert.ok() ? BuildSide(loaded, row.task_dir, /*analytical=*/false, &found,
                                            engine, db, artifacts, o.protocol, search_req,
                                            "the search's best")
                                : Result<std::unique_ptr<Side>>(expert.status());
    if (!expert.ok() || !searched.ok()) {
      row.error = (expert.ok() ? searched.status() : expert.status()).ToString();
      rows.push_back(std::move(row));
      continue;
    }
    row.expert_schedule = space::ToJson((*expert)->plan.initial);
    row.expert_library = (*expert)->lib.so_sha256;
    row.search_library = (*searched)->lib.so_sha256;
    if (row.expert_library == row.search_library) {
      row.ratio = 1.0;
      say(head + ": the search's best is the expert's own library");
      rows.push_back(std::move(row));
      continue;
    }
    auto ra = (*expert)->pipeline->ProfileRequestFor((*expert)->impl, (*expert)->lib);
    auto rb = (*searched)->pipeline->ProfileRequestFor((*searched)->impl, (*searched)->lib);
    if (!ra.ok() || !rb.ok()) {
      row.error = (ra.ok() ? rb.status() : ra.status()).ToString();
      rows.push_back(std::move(row));
      continue;
    }
    say(head + ": expert against search, " + std::to_string(o.rounds) + " interleaved rounds");
    auto cmp = agents::CompareInterleaved(*ra, *rb, engine.sandbox(), o.rounds);
    if (!cmp.ok()) {
      row.error = "comparison: " + cmp.status().ToString();
    } else if (!cmp->a.ok() || !cmp->b.ok()) {
      row.error = "a kernel failed while timed: " + (cmp->a.ok() ? cmp->b.message : cmp->a.message);
    } else {
      row.ratio = cmp->speedup_b_over_a;
      row.comparison = std::move(*cmp);
      say(head + ": search/expert speed " + Ratio(row.ratio) + " (" +
          row.comparison->verdict.reason + ")");
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

json ToJson(const ExpertRow& r) {
  json j = {{"id", r.id},
            {"name", r.name},
            {"task_dir", r.task_dir},
            {"run_id", r.run_id},
            {"measured", r.measured},
            {"search_seconds", r.search_seconds},
            {"search", r.search},
            {"expert_schedule", r.expert_schedule},
            {"search_schedule", r.search_schedule},
            {"expert_library", r.expert_library},
            {"search_library", r.search_library},
            {"ratio", r.ratio ? json(*r.ratio) : json(nullptr)},
            {"error", r.error.empty() ? json(nullptr) : json(r.error)}};
  if (r.comparison) {
    const agents::Comparison& c = *r.comparison;
    j["comparison"] = {{"expert_median_s", c.a.timing.median_s},
                       {"search_median_s", c.b.timing.median_s},
                       {"rounds", c.rounds},
                       {"round_ratios", c.round_ratios},
                       {"remeasured_rounds", c.remeasured_rounds},
                       {"verdict", agents::ToJson(c.verdict)},
                       {"load_before", ToJson(c.load_before)},
                       {"load_after", ToJson(c.load_after)}};
  }
  return j;
}

json ExpertSummary(const std::vector<ExpertRow>& rows) {
  std::vector<double> ratios;
  json below = json::array(), failed = json::array();
  for (const ExpertRow& r : rows) {
    if (!r.ratio) {
      failed.push_back(r.id);
      continue;
    }
    ratios.push_back(*r.ratio);
    if (*r.ratio < 0.90) below.push_back(r.id);
  }
  json s = {{"workloads", rows.size()}, {"compared", ratios.size()}, {"below_090", below},
            {"failed", failed}};
  if (ratios.empty()) {
    s["mean_ratio"] = s["geomean_ratio"] = s["min_ratio"] = nullptr;
    s["goal_mean_098"] = s["goal_none_below_090"] = false;
    return s;
  }
  double sum = 0, logs = 0;
  for (double r : ratios) sum += r, logs += std::log(r);
  const double mean = sum / ratios.size();
  s["mean_ratio"] = mean;
  s["geomean_ratio"] = std::exp(logs / ratios.size());
  s["min_ratio"] = *std::min_element(ratios.begin(), ratios.end());
  // A workload that could not be compared counts against both goals: its share is unknown.
  s["goal_mean_098"] = mean >= 0.98 && failed.empty();
  s["goal_none_below_090"] = below.empty() && failed.empty();
  return s;
}

std::string FormatExpertTable(const std::vector<ExpertRow>& rows, const json& summary) {
  std::ostringstream out;
  char line[512];
  std::snprintf(line, sizeof line, "%-5s %-30s %8s %9s %12s %12s %8s  %s\n", "id", "workload",
                "measured", "search_s", "expert", "search", "ratio", "verdict");
  out << line;
  for (const ExpertRow& r : rows) {
    std::string expert = "-", found = "-", verdict;
    if (r.comparison) {
      expert = agents::FormatSeconds(r.comparison->a.timing.median_s);
      found = agents::FormatSeconds(r.comparison->b.timing.median_s);
      verdict = r.comparison->verdict.reason;
    } else if (r.ratio) {
      verdict = "the same library";
    } else {
      verdict = "FAILED: " + r.error;
    }
    std::snprintf(line, sizeof line, "%-5s %-30.30s %8d %9.0f %12s %12s %8s  %s\n", r.id.c_str(),
                  r.name.c_str(), r.measured, r.search_seconds, expert.c_str(), found.c_str(),
                  Ratio(r.ratio).c_str(), verdict.c_str());
    out << line;
  }
  auto num = [&](const char* key) {
    return summary[key].is_number() ? Ratio(summary[key].get<double>()) : std::string("-");
  };
  out << "ratio = expert median / search median (> 1: the search's kernel is faster)\n";
  out << "compared " << summary.value("compared", 0) << " of " << summary.value("workloads", 0)
      << "; mean " << num("mean_ratio") << " (goal >= 0.98: "
      << (summary.value("goal_mean_098", false) ? "met" : "NOT met") << "), geomean "
      << num("geomean_ratio") << ", min " << num("min_ratio") << " (goal: none below 0.90: "
      << (summary.value("goal_none_below_090", false) ? "met" : "NOT met") << ")\n";
  return out.str();
}

}  // namespace mk::bench
