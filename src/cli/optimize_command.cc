// `maxkernel optimize`: the auto driver (agents/auto_driver.h) from the command line — the main
// job a user runs. Progress on stderr (a redrawn line on a terminal, one line per candidate
// otherwise), a final table (or the result JSON with --json) on stdout, an HTML report, a
// Prometheus textfile. SIGINT stops after the current step and leaves a resumable run.
// docs/OPTIMIZE.md documents the options, the result schema and the exit codes.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "modes/auto/auto_driver.h"
#include "modes/auto/tpu_auto.h"
#include "modes/search/search_options.h"
#include "agents/pipeline_metrics.h"
#include "agents/profiler.h"
#include "report/report_html.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "store/artifact_store.h"
#include "store/data_dir.h"
#include "store/sqlite_store.h"
#include "support/machine_load.h"
#include "support/metrics.h"
#include "target/target.h"
#include "task/task.h"

namespace mk::cli {
namespace {

using nlohmann::json;

constexpr int kExitInterrupted = 130;  // the shell's convention for a SIGINT-ended command

struct OptimizeOptions {
  std::string task;
  std::string target = "cpu";
  std::optional<int> max_iterations;
  std::optional<double> time_budget_s;
  std::string target_metric;
  uint64_t seed = 0;
  int test_seeds = 2;
  double min_time = 0.2;
  double run_timeout_s = 60;
  std::optional<int64_t> resume;
  std::string db;
  std::string report;
  std::string metrics_file;
  bool json = false;
  bool quiet = false;
  bool probe = false;
  bool no_probe = false;
  int profile_kernels = 6;
  int batch = 1;
  int xla_rounds = 5;
  bool no_dedupe = false;
  // auto (the neighbourhood walk) or search (modes/search: the decision graph); `maxkernel
  // search` is `optimize --mode search`.
  std::string mode = "auto";
  std::string algorithm = "astar";
  double epsilon = 1.0;
  int beam_width = 8;
  int fusion_decisions = modes::search::SearchOptions{}.fusion_decisions;
  bool no_analytical_init = false;
  std::string graph;
  std::string model;       // --model FILE: the cost model to start from
  std::string save_model;  // --save-model FILE
  std::string command = "optimize";  // how the resume hint names the command
};

std::atomic<bool> g_stop{false};
extern "C" void OnSigint(int) { g_stop.store(true); }

std::string Seconds(double s) {
  char buf[32];
  if (s >= 1) std::snprintf(buf, sizeof buf, "%.3f s", s);
  else if (s >= 1e-3) std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
  else std::snprintf(buf, sizeof buf, "%.1f us", s * 1e6);
  return buf;
}

// The progress display: one redrawn line on a terminal, plain lines otherwise (CI logs).
class Progress {
 public:
  explicit Progress(bool quiet) : quiet_(quiet), tty_(isatty(STDERR_FILENO) != 0) {}
  ~Progress() { Finish(); }

  // `took`: the candidate's own wall time (implement, build, test, profile).
  void Update(const modes::AutoProgress& p, std::optional<double> took) {
    if (quiet_) return;
    std::string line = "[" + std::to_string(p.iteration) + "/" + std::to_string(p.max_iterations) + "]";
    if (p.outcome) {
      line += " cand " + std::to_string(p.outcome->seq) + ": " + p.outcome->status;
      if (p.outcome->profile) line += " " + Seconds(p.outcome->profile->timing.median_s);
      if (took) line += Format(", took %.2f s", *took);
    } else {
      line += " run " + std::to_string(p.run_id) + " planned";
    }
    if (p.best_s) {
      line += " | best " + Seconds(*p.best_s);
      if (p.first_s && *p.best_s > 0) line += Format("  x%.2f vs first", *p.first_s / *p.best_s);
      if (p.speedup_vs_baseline) line += Format("  x%.2f vs XLA", *p.speedup_vs_baseline);
      if (p.best_roofline_fraction) line += Format("  %.1f%% roofline", 100 * *p.best_roofline_fraction);
    }
    if (!p.search.is_null()) {
      line += " | measured " + std::to_string(p.iteration) + ", pruned " +
              Format("%.3g", p.search.value("pruned_points", 0.0)) + " points (" +
              Format("%.1f%%", 100 * p.search.value("pruned_share", 0.0)) + "), frontier " +
              std::to_string(p.search.value("frontier", 0));
    }
    line += Format("  (elapsed %.1f s)", p.elapsed_s);
    if (tty_) {
      std::string bar = Bar(p.iteration, p.max_iterations);
      std::fprintf(stderr, "\r\033[K%s %s", bar.c_str(), line.c_str());
      open_line_ = true;
    } else {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
    std::fflush(stderr);
  }
  void Note(const std::string& text) {
    if (quiet_) return;
    Finish();
    std::fprintf(stderr, "%s\n", text.c_str());
  }
  void Finish() {
    if (open_line_) std::fprintf(stderr, "\n");
    open_line_ = false;
  }

 private:
  static std::string Format(const char* fmt, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, fmt, v);
    return buf;
  }
  static std::string Bar(int done, int total) {
    constexpr int kWidth = 20;
    int filled = total > 0 ? std::min(kWidth, done * kWidth / total) : 0;
    return "[" + std::string(static_cast<size_t>(filled), '#') +
           std::string(static_cast<size_t>(kWidth - filled), '.') + "]";
  }
  bool quiet_, tty_;
  bool open_line_ = false;
};

// Forwards agent timings to the metrics and counts finished candidates.
class CountingObserver final : public agents::PipelineObserver {
 public:
  explicit CountingObserver(agents::PipelineMetrics* metrics) : metrics_(metrics) {}
  void OnAgent(const std::string& agent, const std::string& status, double seconds) override {
    if (metrics_) metrics_->OnAgent(agent, status, seconds);
  }

 private:
  agents::PipelineMetrics* metrics_;
};

// The last folder of a path ("suite/12p/" -> "12p").
std::string FolderName(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// `took_s`: each candidate's own duration, by seq, for those this invocation ran.
// A verdict's reason without the ratio and interval the summary line already printed
// ("x1.194 [1.178, 1.209] over 6 rounds: the whole interval is above +2%" -> "the whole ...").
std::string WhyOfVerdict(const json& verdict) {
  std::string reason = verdict.value("reason", "");
  const size_t cut = reason.find(" rounds: ");
  if (!reason.empty() && reason[0] == 'x' && cut != std::string::npos) {
    reason = reason.substr(cut + 9);
  }
  return reason;
}

void PrintTable(const json& r, const std::map<int64_t, double>& took_s) {
  const json& task = r["task"];
  std::printf("run %lld: %s (%s, %s) on %s — %s (%s)\n", r["run_id"].get<long long>(),
              task.value("id", "").c_str(), task.value("name", "").c_str(),
              task.value("scale", "").c_str(), r["target"].value("model", "").c_str(),
              r.value("status", "").c_str(), r.value("stop_reason", "").c_str());
  std::printf("\n  %4s  %-12s  %12s  %9s  %8s  %s\n", "seq", "status", "median", "roofline", "took",
              "schedule");
  for (const json& c : r["candidates"]) {
    std::string t = c["median_s"].is_number() ? Seconds(c["median_s"].get<double>()) : "-";
    std::string roof = "-";
    if (c["roofline_fraction"].is_number()) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.1f%%", 100 * c["roofline_fraction"].get<double>());
      roof = buf;
    }
    std::string took = "-";
    auto it = took_s.find(c["seq"].get<int64_t>());
    if (it != took_s.end()) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.2f s", it->second);
      took = buf;
    }
    std::string sched = c["schedule"].dump();
    if (sched.size() > 60) sched = sched.substr(0, 57) + "...";
    std::printf("  %4lld  %-12s  %12s  %9s  %8s  %s\n", c["seq"].get<long long>(),
                c.value("status", "").c_str(), t.c_str(), roof.c_str(), took.c_str(), sched.c_str());
  }
  const json& best = r["best"];
  std::printf("\n");
  if (!best.is_object()) {
    std::printf("no correct kernel was produced\n");
    return;
  }
  std::printf("best       candidate %lld: %s (p10 %s, p90 %s)\n", best["seq"].get<long long>(),
              Seconds(best["median_s"].get<double>()).c_str(),
              Seconds(best["p10_s"].get<double>()).c_str(),
              Seconds(best["p90_s"].get<double>()).c_str());
  const json& cmp = best["comparison_with_first"];
  if (cmp.is_object() && cmp.contains("speedup")) {
    // The challenger against the first, interleaved: ratio, interval, verdict, what was kept.
    const json& v = cmp["verdict"];
    std::printf("vs first   candidate %lld x%.2f [%.2f, %.2f] %s over %d interleaved rounds%s; "
                "kept %s\n",
                cmp["challenger_seq"].get<long long>(), v.value("ratio", 0.0),
                v["ci95"][0].get<double>(), v["ci95"][1].get<double>(),
                v.value("verdict", "").c_str(), cmp["rounds"].get<int>(),
                cmp["load_after"].value("loaded", false) ? " (machine loaded)" : "",
                cmp.value("kept", "") == "first" ? "the first" : "the challenger");
    std::printf("           %s\n", WhyOfVerdict(v).c_str());
  } else if (cmp.is_object()) {
    std::printf("vs first   %s\n", cmp["verdict"].value("reason", "not compared").c_str());
  } else if (best["speedup_vs_first"].is_number()) {
    std::printf("vs first   x%.2f (the first is the best)\n", best["speedup_vs_first"].get<double>());
  }
  const json& xla = best["comparison_with_xla"];
  if (xla.is_object() && xla.contains("speedup")) {
    const json& v = xla["verdict"];
    std::printf("vs XLA     x%.2f [%.2f, %.2f] %s (XLA:CPU %s, ours %s; %d interleaved rounds%s)\n",
                v.value("ratio", 0.0), v["ci95"][0].get<double>(),
                v["ci95"][1].get<double>(), v.value("verdict", "").c_str(),
                Seconds(xla["xla_median_s"].get<double>()).c_str(),
                Seconds(xla["ours_median_s"].get<double>()).c_str(), xla["rounds"].get<int>(),
                xla["load_after"].value("loaded", false) ? ", machine loaded" : "");
    std::printf("           %s\n", WhyOfVerdict(v).c_str());
  } else if (xla.is_object()) {
    std::printf("vs XLA     not measured: %s\n", xla.value("error", "").c_str());
  }
  if (best["speedup_vs_baseline"].is_number()) {
    std::printf("recorded   x%.2f vs the task's recorded baseline (%s, recorded %s)\n",
                best["speedup_vs_baseline"].get<double>(),
                Seconds(r["baseline"]["median_s"].get<double>()).c_str(),
                r["baseline"].value("date", "").c_str());
  } else if (!xla.is_object()) {
    std::printf("vs XLA     not measured (--xla-rounds 0, and no baseline recorded)\n");
  }
  if (best["roofline_fraction"].is_number()) {
    std::printf("roofline   %.1f%% (%s-bound; %s peaks)\n", 100 * best["roofline_fraction"].get<double>(),
                best.value("bottleneck", "").c_str(), r["target"].value("peaks_source", "").c_str());
  } else {
    std::printf("roofline   - (%s)\n", best.value("roofline_note", "no peaks").c_str());
  }
  std::printf("throughput %.2f GFLOP/s, %.2f GB/s\n", best["gflops"].get<double>(),
              best["gbps"].get<double>());
  for (const auto& [role, sha] : best["artifacts"].items()) {
    std::printf("artifact   %-14s %s\n", role.c_str(), sha.get<std::string>().c_str());
  }
}

// `optimize --target tpu-*`: the TPU model as the profiler (modes/auto/tpu_auto.h).
Result<int> RunTpuOptimize(const OptimizeOptions& o, target::Target tpu) {
  if (o.resume) return InvalidArgument("--resume is for CPU runs; a TPU run takes seconds, start a new one");
  if (!o.model.empty() || !o.save_model.empty()) {
    return InvalidArgument("--model and --save-model are for --target cpu search runs");
  }
  if (o.task.empty()) return InvalidArgument("give a task directory");
  modes::TpuAutoRequest req;
  req.task_dir = o.task;
  req.tpu = std::move(tpu);
  req.budget = o.max_iterations.value_or(64);
  if (req.budget < 1) return InvalidArgument("--max-iterations must be at least 1");
  MK_ASSIGN_OR_RETURN(req.search.algorithm, modes::search::ParseAlgorithm(o.algorithm));
  req.search.epsilon = o.epsilon;
  req.search.beam_width = o.beam_width;
  req.search.analytical_init = !o.no_analytical_init;
  MK_ASSIGN_OR_RETURN(req.search, modes::search::SearchOptionsFromJson(modes::search::ToJson(req.search)));
  req.seed = o.seed;
  if (o.test_seeds < 1) return InvalidArgument("--test-seeds must be at least 1");
  req.test_seeds = o.test_seeds;
  req.run_timeout_s = std::max(o.run_timeout_s, 600.0);
  req.xla_estimate = o.xla_rounds > 0;
  MK_ASSIGN_OR_RETURN(store::DataDir dir, store::ResolveDataDir(o.db));
  MK_RETURN_IF_ERROR(store::EnsureDataDir(dir));
  MK_ASSIGN_OR_RETURN(auto db, store::SqliteStore::Open(dir.db_path.string()));
  store::ArtifactStore artifacts(dir.root);
  if (!o.quiet) {
    std::fprintf(stderr, "%s: modelling up to %d candidates, then checking the best in TPU "
                 "interpret mode and compiling it with libtpu (compile-only)\n",
                 req.tpu.name.c_str(), req.budget);
  }
  MK_ASSIGN_OR_RETURN(json result, modes::RunTpuAuto(req, *db, artifacts));
  if (!o.report.empty()) {
    // The same report as a CPU run's, with its TPU section: where each operation runs, and
    // every time labelled modelled.
    std::string html = report::RenderOptimizeReport(result, {});
    MK_ASSIGN_OR_RETURN(std::string report_sha, artifacts.Put(html, "text/html"));
    result["report_artifact"] = report_sha;
    (void)db->AddEvent(result.value("run_id", int64_t{0}), "run.report",
                       json{{"report_artifact", report_sha}}.dump());
    MK_RETURN_IF_ERROR(WriteFilesAtomically({{o.report, html}}));
  }
  if (o.json) {
    std::cout << result.dump(2) << "\n";
  } else {
    std::printf("run        %lld (%s, %s)\n", static_cast<long long>(result.value("run_id", int64_t{0})),
                req.tpu.name.c_str(), result.value("status", "").c_str());
    const json& best = result["best"];
    if (best.is_object()) {
      std::printf("best       candidate %lld: modelled %s (checked in interpret mode on %d seeds, "
                  "compiled by libtpu)\n",
                  static_cast<long long>(best.value("seq", int64_t{0})),
                  Seconds(best.value("modelled_s", 0.0)).c_str(), req.test_seeds);
    }
    if (result["tpu"].contains("modelled_ratio")) {
      std::printf("vs XLA:TPU modelled ratio x%.2f (XLA:TPU's own estimate / our model; no TPU "
                  "measured either)\n", result["tpu"]["modelled_ratio"].get<double>());
    }
    if (!o.report.empty()) std::printf("report     %s\n", o.report.c_str());
  }
  return result.value("status", "") == "succeeded" ? kExitOk : kExitFailed;
}

Result<int> RunOptimize(const OptimizeOptions& o) {
  if (o.target != "cpu") {
    MK_ASSIGN_OR_RETURN(target::Target t, target::TargetByName(o.target));
    if (t.kind == target::TargetKind::kTpu) return RunTpuOptimize(o, std::move(t));
    return Unimplemented("target '" + o.target + "' is not available yet (available: cpu, tpu-*)");
  }
  if (o.task.empty() == !o.resume.has_value()) {
    return InvalidArgument("give a task directory, or --resume RUN (not both)");
  }
  modes::AutoRequest req;
  req.task_dir = o.task;
  req.resume_run = o.resume;
  modes::AutoOptions& ao = req.options;
  if (o.max_iterations) {
    if (*o.max_iterations < 1) return InvalidArgument("--max-iterations must be at least 1");
    ao.max_iterations = *o.max_iterations;
    req.override_max_iterations = o.max_iterations;
  }
  if (o.time_budget_s) {
    ao.time_budget_s = *o.time_budget_s;
    req.override_time_budget_s = o.time_budget_s;
  }
  MK_ASSIGN_OR_RETURN(ao.target_metric, modes::ParseTargetMetric(o.target_metric));
  ao.seed = o.seed;
  if (o.test_seeds < 1) return InvalidArgument("--test-seeds must be at least 1");
  ao.pipeline.test_seeds = o.test_seeds;
  ao.pipeline.run_timeout_s = o.run_timeout_s;
  ao.pipeline.protocol.min_seconds = o.min_time;
  ao.pipeline.maxkernel_version = MK_VERSION;
  if (o.profile_kernels < 0) return InvalidArgument("--profile-kernels must be 0 or more");
  ao.profile_kernels = o.profile_kernels;
  if (o.batch < 1) return InvalidArgument("--batch must be at least 1");
  ao.batch = o.batch;
  if (o.xla_rounds < 0) return InvalidArgument("--xla-rounds must be >= 0");
  ao.xla_rounds = o.xla_rounds;
  ao.pipeline.dedupe = !o.no_dedupe;
  if (o.mode == "search") {
    modes::search::SearchOptions so;
    MK_ASSIGN_OR_RETURN(so.algorithm, modes::search::ParseAlgorithm(o.algorithm));
    so.epsilon = o.epsilon;
    so.beam_width = o.beam_width;
    so.analytical_init = !o.no_analytical_init;
    so.fusion_decisions = o.fusion_decisions;
    MK_ASSIGN_OR_RETURN(so, modes::search::SearchOptionsFromJson(modes::search::ToJson(so)));
    ao.search = so;
  } else if (o.mode != "auto") {
    return InvalidArgument("--mode must be auto or search, not '" + o.mode + "'");
  }
  req.graph_path = o.graph;
  if ((!o.model.empty() || !o.save_model.empty()) && o.mode != "search") {
    return InvalidArgument("--model and --save-model are for search runs (`maxkernel search`, "
                           "`optimize --mode search`)");
  }
  req.model_file = o.model;
  req.save_model_path = o.save_model;

  MK_ASSIGN_OR_RETURN(store::DataDir dir, store::ResolveDataDir(o.db));
  MK_RETURN_IF_ERROR(store::EnsureDataDir(dir));
  MK_ASSIGN_OR_RETURN(auto db, store::SqliteStore::Open(dir.db_path.string()));
  store::ArtifactStore artifacts(dir.root);
  ao.pipeline.repro_dir = (dir.root / "repros").string();

  // Bad input is reported before anything slow (the machine probe) starts.
  std::string task_label;  // the metrics' `task` label: the task's id, else its folder's name
  if (o.resume) {
    Result<store::RunRecord> run = db->GetRun(*o.resume);
    if (!run.ok()) {
      return NotFound("no run " + std::to_string(*o.resume) + " in " + dir.db_path.string());
    }
    MK_RETURN_IF_ERROR(modes::CheckRunResumable(*run));
    Result<store::TaskRecord> stored = db->GetTask(run->task_id);
    Result<task::Task> parsed =
        stored.ok() ? task::ParseTaskYaml(stored->yaml) : Result<task::Task>(stored.status());
    task_label = parsed.ok() ? parsed->id : "";
    if (task_label.empty()) task_label = FolderName(run->task_directory);
  } else {
    MK_ASSIGN_OR_RETURN(task::LoadedTask loaded, task::LoadTaskWithModule(o.task));
    task_label = loaded.task.id.empty() ? FolderName(o.task) : loaded.task.id;
  }

  Progress progress(o.quiet);
  agents::CpuEngine engine;
  if (o.probe && o.no_probe) return InvalidArgument("--probe and --no-probe contradict each other");
  std::string stale;
  MK_ASSIGN_OR_RETURN(auto stored, agents::LoadStoredMachine(*db, /*quick_ok=*/false, &stale));
  if (o.no_probe) {
    // Current stored peaks when there are some; the nominal model otherwise (reported as such).
    if (stored) engine.set_target(stored->target);
  } else {
    if (!stored || o.probe) {
      progress.Note(stale.empty() ? "probing this CPU's peak FLOP/s and bandwidth (stored for later runs) ..."
                                  : "the stored machine probe is stale (" + stale + "); probing again ...");
    }
    MK_ASSIGN_OR_RETURN(target::Target probed, agents::LoadOrProbe(*db, o.probe || !stored));
    engine.set_target(probed);
  }
  // A kernel above 100% of the roofline means the peaks are wrong: measure them again, once.
  auto reprobe = [&db]() -> Result<target::Target> { return agents::LoadOrProbe(*db, true); };

  MetricsRegistry registry;
  MK_ASSIGN_OR_RETURN(std::unique_ptr<agents::PipelineMetrics> metrics,
                      agents::PipelineMetrics::Create(registry, task_label, o.target));
  CountingObserver observer(metrics.get());
  modes::AutoCallbacks callbacks;
  callbacks.observer = &observer;
  callbacks.reprobe = reprobe;
  callbacks.on_note = [&progress](const std::string& text) { progress.Note(text); };
  if (const MachineLoad load = SampleMachineLoad(engine.target().cores, 0.2); load.loaded()) {
    progress.Note("warning: the machine is " + DescribeLoad(load) +
                  "; timings are noisy, and a verdict needs its interval beyond 10% "
                  "(docs/PROFILING.md)");
  }
  // A candidate's own duration: from the previous progress report (the plan, or the candidate
  // before it) to its own. Candidates of an earlier, resumed invocation have none.
  std::map<int64_t, double> took_s;  // by seq
  double last_report_s = 0;
  callbacks.on_progress = [&](const modes::AutoProgress& p) {
    std::optional<double> took;
    if (p.outcome) {
      metrics->OnCandidate(p.outcome->status);
      took = p.elapsed_s - last_report_s;
      took_s[p.outcome->seq] = *took;
    }
    last_report_s = p.elapsed_s;
    progress.Update(p, took);
  };

  g_stop.store(false);
  req.stop = &g_stop;
  struct sigaction sa {}, old {}, old_term {};
  sa.sa_handler = OnSigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old);
  // SIGTERM (a service stopping, `timeout`, `kill`) is handled like SIGINT: the run is left
  // cancelled and resumable, not `running`.
  sigaction(SIGTERM, &sa, &old_term);
  auto started = std::chrono::steady_clock::now();
  Result<json> result = modes::RunAuto(req, *db, artifacts, engine, callbacks);
  sigaction(SIGINT, &old, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  progress.Finish();
  double duration = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (!result.ok()) {
    // The run's error is what the user needs; the textfile still records it (status "error"),
    // so a failing cron job shows on the dashboard instead of leaving the last good file.
    metrics->OnRunError(duration);
    if (!o.metrics_file.empty()) (void)registry.WriteTextfile(o.metrics_file);
    return result.status();
  }
  metrics->OnResult(*result, duration);

  std::vector<OutputFile> files;
  if (!o.report.empty()) {
    report::ReportExtras extras;  // the report shows the best kernel's source, from the store
    json sha = result->value(json::json_pointer("/best/artifacts/source"), json());
    if (sha.is_string()) {
      if (auto source = artifacts.Get(sha.get<std::string>()); source.ok()) extras.best_source = *source;
    }
    std::string html = report::RenderOptimizeReport(*result, extras);
    MK_ASSIGN_OR_RETURN(std::string report_sha, artifacts.Put(html, "text/html"));
    (*result)["report_artifact"] = report_sha;
    (void)db->AddEvent(result->value("run_id", int64_t{0}), "run.report",
                       json{{"report_artifact", report_sha}}.dump());
    files.push_back({o.report, html});
  }
  if (!files.empty()) MK_RETURN_IF_ERROR(WriteFilesAtomically(files));
  if (!o.metrics_file.empty()) MK_RETURN_IF_ERROR(registry.WriteTextfile(o.metrics_file));

  if (o.json) {
    std::cout << result->dump(2) << "\n";
  } else {
    PrintTable(*result, took_s);
    if (!o.report.empty()) std::printf("report     %s\n", o.report.c_str());
    if (!o.metrics_file.empty()) std::printf("metrics    %s\n", o.metrics_file.c_str());
  }
  std::string status = result->value("status", "");
  if (status == "cancelled") {
    std::fprintf(stderr, "interrupted: resume with `maxkernel %s --resume %lld%s`\n",
                 o.command.c_str(),
                 static_cast<long long>(result->value("run_id", int64_t{0})),
                 o.db.empty() ? "" : (" --db " + o.db).c_str());
    return kExitInterrupted;
  }
  return status == "succeeded" ? kExitOk : kExitFailed;
}

// The options `optimize` and `search` share.
void AddRunOptions(CLI::App* cmd, OptimizeOptions* o) {
  cmd->add_option("task", o->task, "Task directory (task.yaml + module.hlo)");
  cmd->add_option("--target", o->target,
                  "Target to generate for: cpu (measured here), or tpu-v4|tpu-v5e|tpu-v5p|tpu-v6e|"
                  "tpu-7x (Pallas; modelled, checked in TPU interpret mode, compiled by libtpu)");
  cmd->add_option("--time-budget", o->time_budget_s,
                  "Seconds this invocation may spend (default 600; 0 = unlimited)");
  cmd->add_option("--target-metric", o->target_metric,
                  "Stop once met: roofline>=F, speedup>=X (over the task's XLA baseline), "
                  "time<=SECONDS");
  cmd->add_option("--seed", o->seed, "Seed of the candidate proposer (default 0)");
  cmd->add_option("--test-seeds", o->test_seeds,
                  "Fresh input seeds each candidate is tested on (default 2)");
  cmd->add_option("--min-time", o->min_time,
                  "Seconds of timed runs per candidate, at least (default 0.2)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--timeout", o->run_timeout_s, "Seconds one run of a candidate may take (default 60)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--resume", o->resume, "Continue run RUN (killed or interrupted)");
  cmd->add_option("--db", o->db, "Database file (default: DATA_DIR/maxkernel.db)");
  cmd->add_option("--report", o->report, "Write an HTML report (self-contained) to FILE");
  cmd->add_option("--metrics-file", o->metrics_file,
                  "Write Prometheus metrics to FILE (node_exporter textfile format)");
  cmd->add_option("--batch", o->batch,
                  "Propose and compile this many candidates at once (in parallel, one compiler "
                  "per candidate up to N), then test and time them one at a time (default 1: "
                  "each proposal waits for the last result)");
  cmd->add_option("--profile-kernels", o->profile_kernels,
                  "Time this many kernels of the best candidate alone, for the report's roofline "
                  "chart (default 6; 0 = none)");
  cmd->add_option("--xla-rounds", o->xla_rounds,
                  "Time the best against XLA:CPU in this many interleaved rounds at the end, "
                  "through the Python bridge (default 5; 0 = none)");
  cmd->add_flag("--no-dedupe", o->no_dedupe,
                "Time a candidate even when an earlier one built the same library (an A/A check "
                "of the timing protocol); by default it is recorded as that one's duplicate");
  cmd->add_flag("--json", o->json, "Print the result as JSON (schema in docs/OPTIMIZE.md)");
  cmd->add_flag("-q,--quiet", o->quiet, "No progress output");
  cmd->add_flag("--probe", o->probe, "Measure this CPU's peaks again before the run");
  cmd->add_flag("--no-probe", o->no_probe,
                "Never measure: use stored peaks, else the nominal model (quick runs, tests)");
}

// The search knobs (`search`, and `optimize --mode search`).
void AddSearchOptions(CLI::App* cmd, OptimizeOptions* o) {
  cmd->add_option("--algorithm", o->algorithm,
                  "astar (best-first by the roofline bound, pruning what cannot beat the best), "
                  "beam, evolutionary (mutation and crossover of the fastest points, each "
                  "generation ranked by the cost model), random, exhaustive (default astar)");
  cmd->add_option("--epsilon", o->epsilon,
                  "Weighted A*: prune what cannot beat the best by this factor (>= 1; default 1)");
  cmd->add_option("--beam-width", o->beam_width, "Beam search: nodes kept per level (default 8)");
  cmd->add_option("--fusion-decisions", o->fusion_decisions,
                  "How many of the planner's fusion choices (an epilogue in the GEMM's tiles or a "
                  "pass of its own, row reductions in the GEMM or after, ...) are decisions of the "
                  "search: those whose flip alone moves the roofline bound most (default 4; 0 "
                  "keeps the planner's kernels; at most 8; each at most doubles the plans "
                  "searched). CPU targets; a TPU search keeps the planner's kernels");
  cmd->add_flag("--no-analytical-init", o->no_analytical_init,
                "Start from each parameter domain's median value instead of the planner's "
                "analytical candidate");
  cmd->add_option("--graph", o->graph, "Write the explored decision graph (Graphviz DOT) to FILE");
  cmd->add_option("--model", o->model,
                  "Start the cost model from FILE (an XGBoost model, or one --save-model wrote) "
                  "instead of the newest model stored for this target and CPU model");
  cmd->add_option("--save-model", o->save_model,
                  "Write the cost model the run ranked with at the end to FILE (XGBoost's JSON "
                  "model; --model reads it)");
}

const char* kExitFooter =
    "Exit codes: 0 a correct kernel was produced, 1 none was, 2 bad input, 130 interrupted "
    "(the run can be resumed with --resume RUN).";

}  // namespace

void RegisterOptimizeCommand(CLI::App& app, CommandResult& result) {
  auto o = std::make_shared<OptimizeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "optimize",
      "Find the fastest correct kernel for a task: plan, then implement, build, test and profile "
      "candidates until the target metric or the budget is reached (auto mode)");
  AddRunOptions(cmd, o.get());
  cmd->add_option("--max-iterations", o->max_iterations,
                  "Candidates to measure in the run (default 20; a resumed run counts earlier "
                  "ones; a duplicate of an earlier library is recorded but not counted)");
  cmd->add_option("--mode", o->mode, "auto (a neighbourhood walk from the planner's candidate) "
                                     "or search (the same as `maxkernel search`)");
  AddSearchOptions(cmd, o.get());
  cmd->footer(kExitFooter);
  cmd->callback([o, &result] { RunCommand(result, [&] { return RunOptimize(*o); }); });

  auto s = std::make_shared<OptimizeOptions>();
  s->mode = "search";
  s->command = "search";
  CLI::App* search = app.add_subcommand(
      "search",
      "Search the decision graph of a task (the planner's fusion choices, then the declared "
      "parameters of the kernels they give) for the fastest correct candidate, pruning with a "
      "roofline lower bound before anything is measured");
  AddRunOptions(search, s.get());
  search->add_option("--budget", s->max_iterations,
                     "Measurements the search may spend (default 20): the same count as "
                     "`optimize --max-iterations`; a duplicate candidate or library costs nothing");
  AddSearchOptions(search, s.get());
  search->footer(kExitFooter);
  search->callback([s, &result] { RunCommand(result, [&] { return RunOptimize(*s); }); });
}

}  // namespace mk::cli
