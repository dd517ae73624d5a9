#include "benchmarks/bench_jaxbench.h"

#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "agents/implementer.h"
#include "agents/planner.h"
#include "agents/tester.h"
#include "hlo/literal_npy.h"
#include "hlo/verifier.h"
#include "interp/interpreter.h"
#include "runtime/compiler.h"
#include "task/bridge.h"
#include "task/inputs.h"
#include "task/task.h"

namespace mk::bench {

using agents::CompareOutput;
using agents::DescribeOutcome;
using agents::FormatSeconds;
using agents::Implemented;
using agents::KernelRoofline;
using agents::MedianOf;
using agents::OutputCheck;
using agents::Plan;
using agents::PlanRequest;
using agents::RunImplementer;
using agents::RunInterleaved;
using agents::RunPlanner;
using agents::SandboxSide;
using agents::ValidateProtocol;
using agents::XlaBridgeSide;


namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::vector<std::string> SplitComma(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream s(text);
  std::string part;
  while (std::getline(s, part, ',')) {
    while (!part.empty() && part.front() == ' ') part.erase(part.begin());
    while (!part.empty() && part.back() == ' ') part.pop_back();
    parts.push_back(part);
  }
  return parts;
}

std::string Join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string Dims(const hlo::Shape& s) {
  std::string out;
  for (size_t i = 0; i < s.dims().size(); ++i) out += (i ? "x" : "") + std::to_string(s.dims()[i]);
  return out.empty() ? "scalar" : out;
}

}  // namespace

bool CachedTaskIsCurrent(const fs::path& task_dir, const std::string& suite) {
  std::error_code ec;
  if (!fs::exists(task_dir / "task.yaml", ec)) return false;
  auto t = task::LoadTask(task_dir.string());
  if (!t.ok() || t->source_workload.empty()) return false;
  const fs::path workload = fs::path(t->source_workload).is_relative()
                                ? task_dir / t->source_workload
                                : fs::path(t->source_workload);
  const fs::path want = fs::path(suite) / task_dir.parent_path().filename() / "workload.py";
  return fs::exists(workload, ec) && fs::equivalent(workload, want, ec);
}

namespace {

// Exports the workloads whose cached task directory is missing or stale into `dir` (the suite
// export machinery of `maxkernel suite export`, through the bridge).
Status ExportMissing(const JaxbenchOptions& o, const std::string& dir, const BenchProgress& say) {
  const std::string suite = o.suite_dir.empty() ? task::DefaultSuiteDir() : o.suite_dir;
  std::vector<std::string> missing;
  std::error_code ec;
  for (const std::string& id : o.only) {
    const fs::path task_dir = fs::path(dir) / id / o.scale;
    if (CachedTaskIsCurrent(task_dir, suite)) continue;
    fs::remove_all(task_dir, ec);
    missing.push_back(id);
  }
  if (missing.empty()) return Status::Ok();
  if (say)
    say("exporting " + Join(missing, ",") + " (" + o.scale + ") from " + suite + " into " + dir);
  fs::create_directories(dir, ec);
  if (ec) return IoError("cannot create " + dir + ": " + ec.message());
  MK_ASSIGN_OR_RETURN(ProcessResult r,
                      task::RunBridge({"export-suite", "--root", suite, "--scale", o.scale,
                                       "--only", Join(missing, ","), "-o", dir},
                                      1800));
  if (r.exit_code != 0) return task::BridgeFailure(r, "suite export");
  for (const std::string& id : missing) {
    if (!fs::exists(fs::path(dir) / id / o.scale / "task.yaml", ec)) {
      return NotFound("the suite export did not produce " + id + "/" + o.scale);
    }
  }
  return Status::Ok();
}

// Ours against XLA:CPU's outputs on the task's inputs at `seed`, within the task's tolerances.
Result<std::string> CheckAgainstXla(const task::Task& t, const runtime::CompiledLibrary& lib,
                                    const codegen::Implementation& impl, CpuEngine& engine,
                                    uint64_t seed, double timeout_s) {
  std::string pattern = (fs::temp_directory_path() / "maxkernel-bench-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) return IoError("cannot create a temporary directory");
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{pattern};
  MK_ASSIGN_OR_RETURN(
      ProcessResult r,
      task::RunBridge({"expected", t.dir, "--seed", std::to_string(seed), "-o", pattern}, 1800));
  if (r.exit_code != 0) return task::BridgeFailure(r, "XLA:CPU reference outputs");
  MK_ASSIGN_OR_RETURN(auto inputs, task::GenerateInputs(t, seed));
  runtime::ExecuteOptions eo;
  eo.timeout_s = timeout_s;
  MK_ASSIGN_OR_RETURN(runtime::Execution run, engine.Run(lib, impl, inputs, eo));
  if (!run.outcome.ok()) return Internal("our kernel: " + DescribeOutcome(run.outcome, timeout_s));
  if (run.outputs.size() != t.outputs.size()) {
    return Internal("our kernel produced " + std::to_string(run.outputs.size()) +
                    " outputs, the task has " + std::to_string(t.outputs.size()));
  }
  double worst_abs = 0;
  for (size_t i = 0; i < t.outputs.size(); ++i) {
    const std::string path = pattern + "/out" + std::to_string(i) + ".npy";
    MK_ASSIGN_OR_RETURN(hlo::Literal want, hlo::ReadLiteralNpy(path, t.outputs[i].shape,
                                                               "XLA output " + std::to_string(i)));
    OutputCheck check = CompareOutput(run.outputs[i], want, t.outputs[i].atol, t.outputs[i].rtol);
    if (!check.passed()) return Internal("against XLA:CPU: " + check.message);
    worst_abs = std::max(worst_abs, check.max_abs_err);
  }
  return "vs XLA:CPU's outputs, seed " + std::to_string(seed) +
         ", task tolerances, NaN-poisoned outputs (max |error| " + Num(worst_abs) + ")";
}

}  // namespace

Status ParseCompareList(const std::string& text, bool& xla, bool& interp) {
  xla = interp = false;
  for (const std::string& part : SplitComma(text)) {
    if (part == "xla") {
      xla = true;
    } else if (part == "interp") {
      interp = true;
    } else {
      return InvalidArgument("--compare: '" + part + "' is not one of xla, interp");
    }
  }
  if (!xla && !interp) return InvalidArgument("--compare: give xla, interp or both");
  return Status::Ok();
}

Result<std::vector<std::string>> ParseOnlyList(const std::string& text) {
  std::vector<std::string> ids;
  for (const std::string& part : SplitComma(text)) {
    if (part.empty() || part.find('/') != std::string::npos || part == "." || part == "..") {
      return InvalidArgument("--only: '" + part + "' is not a workload id (e.g. --only 12p,8p)");
    }
    if (std::find(ids.begin(), ids.end(), part) != ids.end()) {
      return InvalidArgument("--only: " + part + " is given twice");
    }
    ids.push_back(part);
  }
  if (ids.empty()) return InvalidArgument("--only: give at least one workload id");
  return ids;
}

std::string DefaultBenchTasksDir() { return runtime::UserCacheDir("bench-tasks"); }

InterpreterTiming TimeInterpreter(const hlo::Module& module,
                                  const std::vector<hlo::Literal>& inputs, int runs, double cap_s) {
  InterpreterTiming timing;
  int fds[2];
  if (pipe(fds) != 0) {
    timing.error = std::string("pipe: ") + std::strerror(errno);
    return timing;
  }
  pid_t pid = fork();
  if (pid < 0) {
    timing.error = std::string("fork: ") + std::strerror(errno);
    close(fds[0]);
    close(fds[1]);
    return timing;
  }
  if (pid == 0) {
    // The child: each finished run's seconds go to the parent; -1 means the interpreter failed.
    close(fds[0]);
    for (int r = 0; r < runs; ++r) {
      auto start = Clock::now();
      Result<hlo::Literal> out = interp::Evaluate(module, inputs);
      double seconds = out.ok() ? std::chrono::duration<double>(Clock::now() - start).count() : -1;
      if (write(fds[1], &seconds, sizeof seconds) != static_cast<ssize_t>(sizeof seconds)) _exit(1);
      if (!out.ok()) _exit(1);
    }
    _exit(0);  // no destructors: the parent's sandbox and files are not the child's to close
  }
  close(fds[1]);
  const auto deadline = Clock::now() + std::chrono::duration<double>(cap_s);
  bool done = false;
  while (!done) {
    double left = std::chrono::duration<double>(deadline - Clock::now()).count();
    if (left <= 0) break;
    pollfd p{fds[0], POLLIN, 0};
    int ready = poll(&p, 1, static_cast<int>(std::min(left * 1000 + 1, 1e9)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    double seconds = 0;
    ssize_t got = read(fds[0], &seconds, sizeof seconds);
    if (got != static_cast<ssize_t>(sizeof seconds)) {
      done = true;  // the child finished (or died)
    } else if (seconds < 0) {
      timing.error = "the interpreter failed on this module";
      done = true;
    } else {
      timing.times_s.push_back(seconds);
      if (static_cast<int>(timing.times_s.size()) >= runs) done = true;
    }
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  close(fds[0]);
  if (timing.times_s.empty() && timing.error.empty()) timing.capped = true;
  return timing;
}

Result<json> BestScheduleOfRun(store::Store& db, int64_t run_id, std::string* task_dir) {
  MK_ASSIGN_OR_RETURN(store::RunRecord run, db.GetRun(run_id));
  if (!run.best_candidate_id) {
    return InvalidArgument("run " + std::to_string(run_id) + " has no correct candidate to bench");
  }
  MK_ASSIGN_OR_RETURN(store::CandidateRecord cand, db.GetCandidate(*run.best_candidate_id));
  json schedule = json::parse(cand.schedule_json, nullptr, false);
  if (schedule.is_discarded()) {
    return Internal("run " + std::to_string(run_id) +
                    ": the best candidate's schedule is not JSON");
  }
  if (task_dir) *task_dir = run.task_directory;
  return schedule;
}

Result<std::vector<std::string>> JaxbenchTaskDirs(const JaxbenchOptions& o,
                                                  const BenchProgress& progress) {
  const std::string dir = o.tasks_dir.empty() ? DefaultBenchTasksDir() : o.tasks_dir;
  if (o.tasks_dir.empty()) {
    // The tasks there are compiled and timed as the suite's: the folder must be this user's
    // alone (a task planted by another user would be benchmarked in the suite's name).
    MK_RETURN_IF_ERROR(runtime::EnsurePrivateDirectory(dir));
    MK_RETURN_IF_ERROR(ExportMissing(o, dir, progress));
  } else {
    std::error_code ec;
    for (const std::string& id : o.only) {
      const fs::path p = fs::path(dir) / id / o.scale;
      if (!fs::exists(p / "task.yaml", ec)) {
        return NotFound(p.string() +
                        " has no task.yaml (export it with `maxkernel suite export "
                        "--scale " +
                        o.scale + " --only " + id + " -o " + dir +
                        "`, or leave "
                        "--tasks out to use the cache)");
      }
    }
  }
  std::vector<std::string> dirs;
  for (const std::string& id : o.only) dirs.push_back((fs::path(dir) / id / o.scale).string());
  return dirs;
}

Result<std::vector<BenchRow>> RunJaxbenchBench(const JaxbenchOptions& o, CpuEngine& engine,
                                               const BenchProgress& progress) {
  MK_RETURN_IF_ERROR(ValidateProtocol(o.protocol));
  if (o.interp_runs < 1 || o.interp_runs > 3)
    return InvalidArgument("--interp-runs must be 1, 2 or 3");
  if (!(o.interp_cap_s > 0)) return InvalidArgument("--interp-cap must be > 0 seconds");
  if (o.only.empty()) return InvalidArgument("--only: give at least one workload id");
  if (o.schedule && o.only.size() != 1) {
    return InvalidArgument(
        "a pinned schedule (--from-run, --schedule) needs exactly one workload in --only");
  }
  auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  MK_ASSIGN_OR_RETURN(std::vector<std::string> task_dirs, JaxbenchTaskDirs(o, progress));

  std::vector<BenchRow> rows;
  for (size_t wi = 0; wi < o.only.size(); ++wi) {
    const std::string& task_dir = task_dirs[wi];
    MK_ASSIGN_OR_RETURN(task::LoadedTask loaded, task::LoadTaskWithModule(task_dir));
    MK_RETURN_IF_ERROR(hlo::VerifyModule(*loaded.module));
    const task::Task& t = loaded.task;
    BenchRow row;
    row.name = t.id + " " + t.name;
    std::vector<std::string> shapes;
    for (const task::TaskParameter& p : t.parameters) shapes.push_back(Dims(p.shape));
    row.shape = Join(shapes, " ");
    row.dtype = t.dtype;
    row.flops = t.flops;
    row.details["task_dir"] = task_dir;
    row.details["operator"] = t.operator_name;
    row.details["bytes"] = t.bytes;
    say("[" + std::to_string(wi + 1) + "/" + std::to_string(o.only.size()) + "] " + row.name +
        " (" + o.scale + "): plan, implement, build");

    PlanRequest preq;
    preq.module = loaded.module.get();
    preq.target = engine.target();
    MK_ASSIGN_OR_RETURN(Plan plan, RunPlanner(preq, engine.emitter()));
    space::Candidate candidate = o.schedule ? space::CandidateFromJson(*o.schedule) : plan.initial;
    Result<Implemented> implemented = RunImplementer(plan, candidate, engine.emitter());
    if (!implemented.ok()) {
      if (o.schedule) return implemented.status().WithContext(o.schedule_source);
      row.failed = true;
      row.checked = "not built: " + implemented.status().message();
      rows.push_back(std::move(row));
      continue;
    }
    row.details["schedule"] = space::ToJson(implemented->candidate);
    row.details["schedule_source"] = o.schedule ? o.schedule_source : "planner's initial candidate";
    json families = json::array();
    for (const KernelRoofline& k : plan.kernels) families.push_back(k.family);
    row.details["kernel_families"] = families;
    row.details["plan_lower_bound_s"] = plan.lower_bound_s;
    const codegen::Implementation& impl = implemented->implementation;
    Result<runtime::CompiledLibrary> lib = engine.Build(impl);
    if (!lib.ok()) {
      row.failed = true;
      row.checked = "build failed: " + lib.status().message();
      rows.push_back(std::move(row));
      continue;
    }

    say("  check against XLA:CPU");
    Result<std::string> checked =
        CheckAgainstXla(t, *lib, impl, engine, t.seed + 1, o.protocol.timeout_s);
    if (!checked.ok()) {
      row.failed = true;
      row.checked = "FAILED: " + checked.status().message();
      say("  " + row.checked);
      rows.push_back(std::move(row));
      continue;
    }
    row.checked = *checked;

    MK_ASSIGN_OR_RETURN(auto inputs, task::GenerateInputs(t, t.seed));
    MK_ASSIGN_OR_RETURN(auto ours,
                        SandboxSide::Create(engine.sandbox(), impl, *lib, inputs, o.protocol));
    std::vector<BenchSide*> sides = {ours.get()};
    std::unique_ptr<XlaBridgeSide> xla;
    if (o.xla) {
      if (t.source_workload.empty()) {
        row.skipped.push_back({"xla", "the task has no JAX source"});
      } else {
        xla = std::make_unique<XlaBridgeSide>(task_dir, o.protocol, o.threads);
        sides.push_back(xla.get());
      }
    }
    say("  time: " + std::to_string(o.protocol.rounds) + " interleaved rounds");
    std::vector<SideResult> results = RunInterleaved(sides, o.protocol.rounds, progress);
    row.ours = results[0];
    row.baselines.assign(results.begin() + 1, results.end());

    if (o.interp) {
      say("  interpreter: up to " + std::to_string(o.interp_runs) + " run(s), cap " +
          FormatSeconds(o.interp_cap_s));
      InterpreterTiming it = TimeInterpreter(*loaded.module, inputs, o.interp_runs, o.interp_cap_s);
      if (it.capped) {
        row.capped.push_back({"interp", o.interp_cap_s});
      } else {
        SideResult s;
        s.name = "interp";
        s.samples = it.times_s;
        s.round_medians = it.times_s;
        s.error = it.error;
        if (s.error.empty()) s.median_s = MedianOf(it.times_s);
        s.info = {{"runs", it.times_s.size()},
                  {"cap_s", o.interp_cap_s},
                  {"note", "not interleaved: timed after the rounds, in a forked child"}};
        row.baselines.push_back(s);
      }
    }
    std::string summary = "  ours " + FormatSeconds(row.ours->ok() ? row.ours->median_s : 0);
    for (const SideResult& b : row.baselines) {
      if (auto q = RatioOf(row, b)) {
        char buf[96];
        std::snprintf(buf, sizeof buf, " | %s %s (%.2fx)", b.name.c_str(),
                      FormatSeconds(b.median_s).c_str(), *q);
        summary += buf;
      } else {
        summary += " | " + b.name + " failed: " + b.error;
      }
    }
    for (const CappedBaseline& c : row.capped)
      summary += " | " + c.name + " > " + FormatSeconds(c.cap_s);
    say(summary);
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace mk::bench
