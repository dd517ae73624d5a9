#include "modes/search/bound_check.h"

#include <algorithm>
#include <map>
#include <memory>

#include "agents/planner.h"
#include "codegen/emitter.h"
#include "hlo/parser.h"
#include "hlo/verifier.h"
#include "modes/search/plan_search.h"
#include "space/schedule.h"

namespace mk::modes::search {

using nlohmann::json;

namespace {

// The bound of one stored module on `host` with a candidate's fusion choices, planned once per
// module and choices.
struct PlannedBound {
  std::unique_ptr<hlo::Module> module;
  std::optional<LowerBound> bound;
  std::string error;
};

PlannedBound PlanBound(const std::string& text, const target::Target& host,
                       const codegen::Emitter& emitter, const std::map<std::string, bool>& fusion) {
  PlannedBound out;
  auto module = hlo::ParseModule(text);
  if (!module.ok()) {
    out.error = "its stored module does not parse: " + module.status().message();
    return out;
  }
  out.module = std::move(*module);
  if (Status v = hlo::VerifyModule(*out.module); !v.ok()) {
    out.error = "its stored module does not verify: " + v.message();
    return out;
  }
  agents::PlanRequest req;
  req.module = out.module.get();
  req.target = host;
  req.fusion.overrides = fusion;
  auto plan = agents::RunPlanner(req, emitter);
  if (!plan.ok()) {
    out.error = "its module cannot be planned: " + plan.status().message();
    return out;
  }
  out.bound = BoundOfPlan(*plan);
  return out;
}

}  // namespace

Result<BoundCheckReport> CheckBoundOverStore(store::Store& db, const store::ArtifactStore& artifacts,
                                             const target::Target& host,
                                             std::optional<int64_t> only_run) {
  BoundCheckReport report;
  report.cpu_model = host.model;
  report.isa_level = host.isa_level;
  MK_ASSIGN_OR_RETURN(std::unique_ptr<codegen::Emitter> emitter, codegen::EmitterFor(host));
  auto emitter_ref = [&emitter]() -> const codegen::Emitter& { return *emitter; };
  std::vector<store::RunRecord> runs;
  if (only_run) {
    MK_ASSIGN_OR_RETURN(store::RunRecord r, db.GetRun(*only_run));
    runs.push_back(std::move(r));
  } else {
    MK_ASSIGN_OR_RETURN(runs, db.ListRuns(0));
  }
  std::sort(runs.begin(), runs.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  std::map<std::string, PlannedBound> planned;  // by module sha256 and fusion choices
  auto bound_for = [&](const std::string& sha, const std::map<std::string, bool>& fusion) -> PlannedBound& {
    std::string key = sha;
    for (const auto& [choice, fuse] : fusion) key += "|" + choice + (fuse ? "=fuse" : "=apart");
    auto it = planned.find(key);
    if (it != planned.end()) return it->second;
    auto text = artifacts.Get(sha);
    PlannedBound pb;
    if (!text.ok()) {
      pb.error = "its module " + sha.substr(0, 12) + " is not in the artifact store";
    } else {
      pb = PlanBound(*text, host, emitter_ref(), fusion);
    }
    return planned.emplace(key, std::move(pb)).first->second;
  };
  std::vector<double> ratios;
  for (const store::RunRecord& run : runs) {
    const std::string name = "run " + std::to_string(run.id);
    if (run.target != "cpu") {
      report.runs_skipped.push_back(name + ": target " + run.target + " (the bound is the CPU's)");
      continue;
    }
    MK_ASSIGN_OR_RETURN(std::vector<store::MeasurementRecord> ms, db.ListMeasurements(run.id));
    std::vector<const store::MeasurementRecord*> here;
    for (const auto& m : ms) {
      const json env = json::parse(m.environment_json, nullptr, false);
      const bool same = env.is_object() && env.value("cpu_model", "") == host.model &&
                        env.value("isa_level", "") == host.isa_level;
      if (same) {
        here.push_back(&m);
      } else {
        ++report.measurements_other_machine;
      }
    }
    if (here.empty()) continue;
    MK_ASSIGN_OR_RETURN(store::TaskRecord task, db.GetTask(run.task_id));
    const PlannedBound& planner_plan = bound_for(task.module_sha256, {});
    if (!planner_plan.bound) {
      report.runs_skipped.push_back(name + ": " + planner_plan.error);
      continue;
    }
    ++report.runs_checked;
    for (const store::MeasurementRecord* m : here) {
      MK_ASSIGN_OR_RETURN(store::CandidateRecord cand, db.GetCandidate(m->key.candidate_id));
      const json sj = json::parse(cand.schedule_json, nullptr, false);
      if (!sj.is_object() && !sj.is_array()) continue;
      const space::Candidate c = space::CandidateFromJson(sj);
      // A candidate of other fusion choices is bounded by the plan they give.
      const PlannedBound& its_plan = bound_for(task.module_sha256, c.fusion);
      if (!its_plan.bound) {
        report.runs_skipped.push_back(name + ": candidate " + std::to_string(cand.id) + ": " +
                                      its_plan.error);
        continue;
      }
      const LowerBound& bound = *its_plan.bound;
      if (c.kernels.size() != bound.kernels()) {
        report.runs_skipped.push_back(name + ": candidate " + std::to_string(cand.id) + " has " +
                                      std::to_string(c.kernels.size()) + " kernels, the plan " +
                                      std::to_string(bound.kernels()));
        continue;
      }
      std::vector<std::map<std::string, int64_t>> fixed;
      for (const space::Schedule& s : c.kernels) fixed.push_back(s.values);
      const double b = bound.Of(fixed);
      ++report.measurements_checked;
      if (m->median_s > 0) ratios.push_back(b / m->median_s);
      if (b > m->median_s) {
        report.violations.push_back({run.id, cand.id, b, m->median_s, cand.schedule_json});
      }
    }
  }
  if (!ratios.empty()) {
    auto mid = ratios.begin() + static_cast<std::ptrdiff_t>(ratios.size() / 2);
    std::nth_element(ratios.begin(), mid, ratios.end());
    report.median_bound_over_measured = *mid;
  }
  return report;
}

json ToJson(const BoundCheckReport& r) {
  json violations = json::array();
  for (const BoundViolation& v : r.violations) {
    json schedule = json::parse(v.schedule_json, nullptr, false);
    violations.push_back({{"run", v.run_id},
                          {"candidate", v.candidate_id},
                          {"bound_s", v.bound_s},
                          {"measured_s", v.measured_s},
                          {"schedule", schedule.is_discarded() ? json(v.schedule_json) : schedule}});
  }
  return {{"cpu_model", r.cpu_model},
          {"isa_level", r.isa_level},
          {"runs_checked", r.runs_checked},
          {"measurements_checked", r.measurements_checked},
          {"measurements_other_machine", r.measurements_other_machine},
          {"runs_skipped", r.runs_skipped},
          {"violations", violations},
          {"median_bound_over_measured",
           r.median_bound_over_measured ? json(*r.median_bound_over_measured) : json(nullptr)},
          {"ok", r.ok()}};
}

}  // namespace mk::modes::search
