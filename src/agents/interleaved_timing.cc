#include "agents/interleaved_timing.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <thread>

#include "agents/engine.h"
#include "agents/profiler.h"
#include "task/bridge.h"

namespace mk::agents {

namespace {

using nlohmann::json;

std::string Fixed(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

Status ValidateProtocol(const BenchProtocol& p) {
  if (p.rounds < 1) return InvalidArgument("--rounds must be at least 1");
  if (p.warmup < 0) return InvalidArgument("--warmup must be 0 or more");
  if (p.min_iterations < 1) return InvalidArgument("--min-iterations must be at least 1");
  if (!(p.min_seconds >= 0) || !std::isfinite(p.min_seconds)) {
    return InvalidArgument("--min-time must be a finite number of seconds >= 0");
  }
  if (p.max_iterations < p.min_iterations) {
    return InvalidArgument("max iterations must be >= --min-iterations");
  }
  if (!(p.timeout_s > 0)) return InvalidArgument("the round timeout must be > 0");
  return Status::Ok();
}

double MedianOf(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::vector<SideResult> RunInterleaved(const std::vector<BenchSide*>& sides, int rounds,
                                       const std::function<void(const std::string&)>& progress) {
  std::vector<SideResult> results(sides.size());
  for (size_t s = 0; s < sides.size(); ++s) results[s].name = sides[s]->name();
  for (int r = 0; r < rounds; ++r) {
    std::string line = "  round " + std::to_string(r + 1) + "/" + std::to_string(rounds) + ":";
    for (size_t s = 0; s < sides.size(); ++s) {
      SideResult& res = results[s];
      if (!res.error.empty()) continue;  // a failed side sits out the remaining rounds
      Result<RoundTimes> times = sides[s]->Round(r);
      if (!times.ok()) {
        res.error = times.status().message();
        line += " " + res.name + " failed;";
        continue;
      }
      if (times->times_s.empty()) {
        res.error = "round " + std::to_string(r + 1) + " produced no times";
        line += " " + res.name + " failed;";
        continue;
      }
      res.medians_only = times->medians_only;
      res.round_medians.push_back(MedianOf(times->times_s));
      res.samples.insert(res.samples.end(), times->times_s.begin(), times->times_s.end());
      line += " " + res.name + " " + FormatSeconds(res.round_medians.back()) + ";";
    }
    if (progress) progress(line);
  }
  for (size_t s = 0; s < sides.size(); ++s) {
    SideResult& res = results[s];
    res.info = sides[s]->Info();
    if (res.error.empty()) res.median_s = MedianOf(res.samples);
  }
  return results;
}

// ---- ours, in the sandbox ---------------------------------------------------------------------

Result<std::unique_ptr<SandboxSide>> SandboxSide::Create(runtime::SandboxRunner& sandbox,
                                                         const codegen::Implementation& impl,
                                                         const runtime::CompiledLibrary& library,
                                                         const std::vector<hlo::Literal>& inputs,
                                                         const BenchProtocol& protocol) {
  MK_RETURN_IF_ERROR(ValidateProtocol(protocol));
  std::vector<size_t> sizes, outputs;
  for (size_t i = 0; i < impl.buffers.size(); ++i) {
    const codegen::BufferSlot& b = impl.buffers[i];
    if (b.bytes < 0) return InvalidArgument("buffer " + std::to_string(i) + " has a negative size");
    sizes.push_back(static_cast<size_t>(b.bytes));
    if (b.role == codegen::BufferSlot::Role::kOutput) outputs.push_back(i);
  }
  MK_ASSIGN_OR_RETURN(runtime::SharedRegion region, runtime::SharedRegion::Create(sizes));
  for (size_t i = 0; i < impl.buffers.size(); ++i) {
    const codegen::BufferSlot& b = impl.buffers[i];
    if (b.role != codegen::BufferSlot::Role::kParameter) continue;
    if (b.index < 0 || static_cast<size_t>(b.index) >= inputs.size()) {
      return InvalidArgument("the kernel reads parameter " + std::to_string(b.index) + " but " +
                             std::to_string(inputs.size()) + " inputs were given");
    }
    const hlo::Literal& arg = inputs[static_cast<size_t>(b.index)];
    if (arg.raw_size() != static_cast<size_t>(b.bytes)) {
      return InvalidArgument("input " + std::to_string(b.index) + " has " +
                             std::to_string(arg.raw_size()) + " bytes, the kernel expects " +
                             std::to_string(b.bytes));
    }
    std::memcpy(region.buffer(i), arg.raw(), arg.raw_size());
  }
  std::unique_ptr<SandboxSide> side(
      new SandboxSide(sandbox, std::move(region), std::move(outputs), library.so_path, protocol));
  // The profiler's OpenMP settings for the load the bench starts under (profiler.h).
  const MachineLoad load = SampleMachineLoad(static_cast<int>(std::thread::hardware_concurrency()));
  side->environment_ = TimingEnvironment(load);
  side->info_ = {{"implementation", impl.hash}, {"flags", impl.flags}, {"load", ToJson(load)}};
  return side;
}

Result<RoundTimes> SandboxSide::Round(int) {
  runtime::RunRequest r;
  r.environment = environment_;
  r.so_path = so_path_;
  r.output_buffers = outputs_;
  r.warmup = protocol_.warmup;
  r.min_iterations = protocol_.min_iterations;
  r.min_seconds = protocol_.min_seconds;
  r.max_iterations = protocol_.max_iterations;
  r.timeout_s = protocol_.timeout_s;
  MK_ASSIGN_OR_RETURN(runtime::RunOutcome outcome, sandbox_.Run(r, region_));
  if (!outcome.ok()) return Internal("our kernel: " + DescribeOutcome(outcome, r.timeout_s));
  RoundTimes t;
  t.times_s = std::move(outcome.times_s);
  return t;
}

// ---- XLA:CPU, through the bridge ------------------------------------------------------------

Result<RoundTimes> XlaBridgeSide::Round(int) {
  MK_ASSIGN_OR_RETURN(
      ProcessResult r,
      task::RunBridge(
          {"time", task_dir_, "--min-runs", std::to_string(protocol_.min_iterations), "--min-time",
           Num(protocol_.min_seconds), "--warmup", std::to_string(std::max(1, protocol_.warmup)),
           "--threads", std::to_string(threads_)},
          protocol_.timeout_s));
  if (r.timed_out) return Internal("XLA:CPU timing timed out");
  if (r.exit_code != 0) return task::BridgeFailure(r, "XLA:CPU timing");
  json j = json::parse(r.out, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("median_s") || !j["median_s"].is_number()) {
    return Internal("the bridge printed no timing JSON: " + r.out.substr(0, 200));
  }
  if (info_.empty()) {
    for (const char* key : {"engine", "jax_version", "cpu", "threads"}) {
      if (j.contains(key)) info_[key] = j[key];
    }
    info_["runs_per_round"] = json::array();
  }
  info_["runs_per_round"].push_back(j.value("runs", 0));
  RoundTimes t;
  t.times_s = {j["median_s"].get<double>()};
  t.medians_only = true;
  return t;
}

std::string FormatSeconds(double s) {
  if (!(s > 0)) return "-";
  if (s >= 1) return Fixed("%.3f s", s);
  if (s >= 1e-3) return Fixed("%.3f ms", s * 1e3);
  return Fixed("%.1f us", s * 1e6);
}

}  // namespace mk::agents
