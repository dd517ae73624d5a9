#include "benchmarks/bench_aa.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "agents/implementer.h"
#include "agents/planner.h"
#include "agents/tester.h"
#include "hlo/verifier.h"
#include "support/sha256.h"
#include "task/inputs.h"
#include "task/task.h"

namespace mk::bench {

using agents::CompareInterleaved;
using agents::Comparison;
using agents::CpuEngine;
using agents::Implemented;
using agents::Plan;
using agents::PlanRequest;
using agents::PlanTotals;
using agents::ProfileRequest;
using agents::RunImplementer;
using agents::RunPlanner;
using agents::RunTester;
using agents::TestReport;
using agents::TestRequest;
using agents::ToJson;
using agents::TotalsOf;
using agents::Verdict;
using agents::VerdictName;
using agents::kMinVerdictRounds;


Result<AaResult> RunAaBench(const AaOptions& o, CpuEngine& engine,
                            const std::function<void(const std::string&)>& progress) {
  if (o.trials < 1) return InvalidArgument("--trials must be at least 1");
  if (o.rounds < kMinVerdictRounds) {
    return InvalidArgument("--rounds must be at least " + std::to_string(kMinVerdictRounds) +
                           " for a verdict");
  }
  auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  MK_ASSIGN_OR_RETURN(task::LoadedTask loaded, task::LoadTaskWithModule(o.task_dir));
  MK_RETURN_IF_ERROR(hlo::VerifyModule(*loaded.module));
  PlanRequest preq;
  preq.module = loaded.module.get();
  preq.target = engine.target();
  MK_ASSIGN_OR_RETURN(Plan plan, RunPlanner(preq, engine.emitter()));
  MK_ASSIGN_OR_RETURN(Implemented impl, RunImplementer(plan, plan.initial, engine.emitter()));
  MK_ASSIGN_OR_RETURN(runtime::CompiledLibrary lib, engine.Build(impl.implementation));
  // Checked before it is timed, like every kernel a benchmark times.
  TestRequest tr;
  tr.task_dir = o.task_dir;
  tr.implementation = impl.implementation;
  tr.num_seeds = 1;
  MK_ASSIGN_OR_RETURN(TestReport report, RunTester(tr, engine));
  if (!report.passed()) {
    return Internal("the initial candidate of " + o.task_dir + " failed the tester: " + report.message);
  }
  AaResult result;
  result.task_id = loaded.task.id;
  {
    std::ifstream in(lib.so_path, std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    result.library_sha256 = Sha256Hex(bytes.str());
  }
  ProfileRequest req;
  req.implementation = impl.implementation;
  req.library = lib;
  MK_ASSIGN_OR_RETURN(req.inputs, task::GenerateInputs(loaded.task, loaded.task.seed));
  req.target = engine.target();
  const PlanTotals totals = TotalsOf(plan.fusion);
  req.flops = totals.flops;
  req.bytes = totals.bytes;
  req.compute_dtype = totals.compute_dtype;
  req.protocol = o.protocol;
  result.load_start = SampleMachineLoad(req.target.cores, 0.2);
  say("A/A: " + loaded.task.id + ", library " + result.library_sha256.substr(0, 12) +
      " against itself, " + std::to_string(o.trials) + " trials of " + std::to_string(o.rounds) +
      " interleaved rounds; machine " + DescribeLoad(result.load_start));
  for (int t = 0; t < o.trials; ++t) {
    MK_ASSIGN_OR_RETURN(Comparison c, CompareInterleaved(req, req, engine.sandbox(), o.rounds));
    if (!c.a.ok() || !c.b.ok()) {
      return Internal("trial " + std::to_string(t + 1) + ": the kernel failed while timed: " +
                      (c.a.ok() ? c.b.message : c.a.message));
    }
    switch (c.verdict.verdict) {
      case Verdict::kFaster: ++result.faster; break;
      case Verdict::kSlower: ++result.slower; break;
      case Verdict::kInconclusive: ++result.inconclusive; break;
    }
    char line[256];
    std::snprintf(line, sizeof line, "  trial %2d: %-12s %s", t + 1, VerdictName(c.verdict.verdict),
                  c.verdict.reason.c_str());
    say(line);
    result.trials.push_back(std::move(c));
  }
  result.load_end = SampleMachineLoad(req.target.cores, 0.2);
  return result;
}

nlohmann::json ToJson(const AaResult& r) {
  nlohmann::json trials = nlohmann::json::array();
  for (const Comparison& c : r.trials) {
    trials.push_back({{"verdict", ToJson(c.verdict)},
                      {"round_ratios", c.round_ratios},
                      {"remeasured_rounds", c.remeasured_rounds},
                      {"load_before", ToJson(c.load_before)},
                      {"load_after", ToJson(c.load_after)}});
  }
  return {{"mode", "aa"},
          {"task", r.task_id},
          {"library_sha256", r.library_sha256},
          {"trials", trials},
          {"faster", r.faster},
          {"slower", r.slower},
          {"inconclusive", r.inconclusive},
          {"load_start", ToJson(r.load_start)},
          {"load_end", ToJson(r.load_end)}};
}

std::string FormatAaTable(const AaResult& r) {
  std::ostringstream out;
  const int n = static_cast<int>(r.trials.size());
  out << "A/A " << r.task_id << " (library " << r.library_sha256.substr(0, 12) << "): " << n
      << " trials: " << r.faster << " faster, " << r.slower << " slower, " << r.inconclusive
      << " inconclusive\n";
  out << "machine at start: " << DescribeLoad(r.load_start) << "; at end: " << DescribeLoad(r.load_end)
      << "\n";
  out << (r.faster + r.slower <= std::max(1, n / 20)
              ? "the protocol held: a library against itself was (nearly) never called faster or slower\n"
              : "the protocol did NOT hold: a library against itself was called faster or slower "
                "more often than 1 in 20\n");
  return out.str();
}

}  // namespace mk::bench
