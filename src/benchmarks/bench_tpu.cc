#include "benchmarks/bench_tpu.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "agents/tester.h"
#include "agents/tpu_fallback.h"
#include "agents/tpu_runner.h"
#include "benchmarks/bench_jaxbench.h"
#include "hlo/verifier.h"
#include "support/text_escape.h"
#include "target/target.h"
#include "task/bridge.h"
#include "task/task.h"

namespace mk::bench {

namespace {

using nlohmann::json;

std::string FirstLine(const std::string& s, size_t max = 160) {
  std::string line = s.substr(0, s.find('\n'));
  return line.size() > max ? line.substr(0, max) + "..." : line;
}

std::string Sci(std::optional<double> v) {
  if (!v) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", *v);
  return buf;
}

void XlaEstimate(const std::string& dir, const target::Target& tpu, TpuGenerationResult& g) {
  const json j = agents::XlaTpuEstimate(dir, tpu);
  if (!j.value("ok", false)) {
    g.xla_error = FirstLine(j.contains("error") && j["error"].is_string()
                                ? j["error"].get<std::string>()
                                : j.value(json::json_pointer("/error/message"), std::string("refused")));
  } else if (double s = j.value(json::json_pointer("/cost/optimal_seconds"), 0.0); s > 0) {
    g.xla_estimate_s = s;
  } else {
    g.xla_error = "no optimal_seconds in XLA:TPU's cost analysis";
  }
}

}  // namespace

Result<std::vector<TpuBenchRow>> RunTpuBench(const TpuBenchOptions& o, const BenchProgress& progress) {
  if (o.generations.empty()) return InvalidArgument("no TPU generation to bench");
  std::vector<target::Target> tpus;
  for (const std::string& g : o.generations) {
    MK_ASSIGN_OR_RETURN(target::Target t, target::TargetByName("tpu-" + g));
    tpus.push_back(std::move(t));
  }
  JaxbenchOptions jo;
  jo.scale = o.scale;
  jo.tasks_dir = o.tasks_dir;
  if (o.only.empty()) {
    // Every workload of the suite: the folders holding a workload.py, in name order (and only
    // those: JaxbenchOptions' own default list would add its three workloads a second time).
    jo.only.clear();
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(task::DefaultSuiteDir(), ec)) {
      if (std::filesystem::exists(e.path() / "workload.py", ec)) {
        jo.only.push_back(e.path().filename().string());
      }
    }
    std::sort(jo.only.begin(), jo.only.end());
    if (jo.only.empty()) return NotFound("no workloads under " + task::DefaultSuiteDir());
  } else {
    jo.only = o.only;
  }
  MK_ASSIGN_OR_RETURN(std::vector<std::string> dirs, JaxbenchTaskDirs(jo, progress));
  std::vector<TpuBenchRow> rows;
  for (size_t i = 0; i < dirs.size(); ++i) {
    TpuBenchRow row;
    row.id = jo.only[i];
    row.dir = dirs[i];
    if (progress) progress("[" + std::to_string(i + 1) + "/" + std::to_string(dirs.size()) + "] " + row.id);
    Result<task::LoadedTask> loaded = task::LoadTaskWithModule(dirs[i]);
    if (!loaded.ok()) {
      row.error = loaded.status().message();
      rows.push_back(std::move(row));
      continue;
    }
    row.name = loaded->task.name;
    for (size_t g = 0; g < tpus.size(); ++g) {
      agents::TpuRunner runner(tpus[g]);
      TpuGenerationResult& res = row.generations[o.generations[g]];
      // Built first, with the kernels the compiler refuses fallen back to glue (tpu_fallback.h).
      Result<agents::TpuBuilt> built = agents::LowerAndBuildWithGlueFallback(runner, *loaded->module);
      Result<codegen::Implementation> impl =
          built.ok() ? Result<codegen::Implementation>(built->implementation) : runner.Lower(*loaded->module);
      if (!impl.ok()) {
        row.error = FirstLine(impl.status().message());
        break;
      }
      if (built.ok()) {
        for (const auto& f : built->fallbacks) res.fallbacks.push_back(f.function + ": " + FirstLine(f.reason));
      }
      if (g == 0) {
        for (const auto& s : impl->sources) {
          if (s.name != "kernel_map.json") continue;
          json map = json::parse(s.text, nullptr, false);
          if (!map.is_object()) continue;
          for (const json& k : map.value("kernels", json::array())) {
            // A kernel fused into another's pallas_call (flash attention) runs in Pallas too.
            const std::string runs = k.value("runs", "");
            if (runs == "pallas" || runs == "fused") ++row.pallas_kernels;
            else {
              ++row.glue_kernels;
              row.glue_reasons.push_back(k.value("name", "") + ": " + k.value("reason", ""));
            }
          }
        }
      }
      if (g == 0 && o.check && o.scale == "ci") {
        // The tester builds it too (libtpu compile-only for this generation).
        agents::TestRequest tr;
        tr.task_dir = dirs[i];
        tr.implementation = *impl;
        tr.num_seeds = o.seeds;
        tr.timeout_s = 900;
        tr.oracle_timeout_s = 900;
        Result<agents::TestReport> report = agents::RunTester(tr, runner);
        if (!report.ok()) {
          row.check = "failed: " + FirstLine(report.status().message());
        } else {
          row.check = report->passed() ? "passed" : "failed: " + FirstLine(report->status + ": " + report->message);
          res.compiled = report->status != "build-failed" && report->status != "lower-failed";
          if (report->status == "build-failed") res.compile_error = FirstLine(report->message);
        }
      } else {
        if (g == 0) row.check = o.check ? "skipped: interpret mode runs at ci scale only" : "skipped";
        if (!built.ok()) {
          res.compile_error = FirstLine(built.status().message());
        } else {
          res.compiled = built->build.ok;
          if (!built->build.ok) {
            // A fallback stopped by its time cap says so first (its note ends the message).
            res.compile_error = (built->stopped_by_time ? "glue fallback stopped at its time cap: " : "") +
                                FirstLine(built->build.message);
          }
        }
      }
      Result<agents::TpuModelledTime> t = agents::ModelTpuImplementation(*impl, tpus[g]);
      if (t.ok()) res.modelled_s = t->seconds;
      else res.model_error = FirstLine(t.status().message());
      if (o.xla_estimate) XlaEstimate(dirs[i], tpus[g], res);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

json ToJson(const TpuBenchRow& r) {
  json gens = json::object();
  for (const auto& [g, res] : r.generations) {
    json j = {{"compiled", res.compiled},
              {"modelled_s", res.modelled_s ? json(*res.modelled_s) : json(nullptr)},
              {"xla_tpu_estimate_s", res.xla_estimate_s ? json(*res.xla_estimate_s) : json(nullptr)}};
    if (res.modelled_s && res.xla_estimate_s && *res.modelled_s > 0) {
      j["modelled_ratio"] = *res.xla_estimate_s / *res.modelled_s;
    }
    if (!res.compile_error.empty()) j["compile_error"] = res.compile_error;
    j["glue_fallback"] = res.fallbacks;
    if (!res.model_error.empty()) j["model_error"] = res.model_error;
    if (!res.xla_error.empty()) j["xla_error"] = res.xla_error;
    gens[g] = j;
  }
  return {{"id", r.id}, {"name", r.name}, {"dir", r.dir}, {"pallas_kernels", r.pallas_kernels},
          {"glue_kernels", r.glue_kernels}, {"glue", r.glue_reasons}, {"check", r.check},
          {"generations", gens}, {"error", r.error.empty() ? json(nullptr) : json(r.error)}};
}

std::string FormatTpuTable(const std::vector<TpuBenchRow>& rows,
                           const std::vector<std::string>& generations) {
  std::ostringstream out;
  out << "modelled times (the TPU performance model) and XLA:TPU's own estimates (libtpu cost "
         "analysis), seconds; ratio = XLA:TPU estimate / ours. No TPU measured any of it.\n"
         "compiled yes+N: the compiler accepted it once N kernels it refused fell back to XLA glue.\n";
  out << "id     pallas glue  check    ";
  for (const auto& g : generations) out << "| " << g << ": compiled modelled   xla-est    ratio ";
  out << "\n";
  for (const TpuBenchRow& r : rows) {
    char head[96];
    std::snprintf(head, sizeof head, "%-6s %6d %4d  %-8s ", OneLineText(r.id).c_str(), r.pallas_kernels,
                  r.glue_kernels, OneLineText(r.check.substr(0, 8)).c_str());
    out << head;
    for (const auto& g : generations) {
      auto it = r.generations.find(g);
      if (it == r.generations.end()) {
        out << "| -";
        continue;
      }
      const TpuGenerationResult& x = it->second;
      std::optional<double> ratio;
      if (x.modelled_s && x.xla_estimate_s && *x.modelled_s > 0) ratio = *x.xla_estimate_s / *x.modelled_s;
      char cell[128];
      // "yes+2": compiled with two kernels fallen back to XLA glue.
      std::string compiled = x.compiled ? "yes" : "NO";
      if (!x.fallbacks.empty()) compiled += "+" + std::to_string(x.fallbacks.size());
      std::snprintf(cell, sizeof cell, "| %-4s %-8s %-10s %-10s %-6s ", "", compiled.c_str(),
                    Sci(x.modelled_s).c_str(), Sci(x.xla_estimate_s).c_str(), Sci(ratio).c_str());
      out << cell;
    }
    if (!r.error.empty()) out << " error: " << OneLineText(r.error);
    out << "\n";
  }
  return out.str();
}

}  // namespace mk::bench
