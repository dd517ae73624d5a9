#include "agents/profiler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "agents/engine.h"
#include "runtime/shared_region.h"

namespace mk::agents {

namespace {

using codegen::BufferSlot;

double SafeDiv(double num, double den) { return den > 0 ? num / den : 0; }

std::string Pct(double fraction) {
  std::ostringstream s;
  s.precision(3);
  s << fraction * 100 << "%";
  return s.str();
}

std::string Sci(double v) {
  std::ostringstream s;
  s.precision(3);
  s << v;
  return s.str();
}

Status CheckProtocol(const TimingProtocol& p) {
  if (p.warmup < 0) return InvalidArgument("timing protocol: warmup must be >= 0");
  if (p.min_iterations < 1) return InvalidArgument("timing protocol: min_iterations must be >= 1");
  if (p.max_iterations < p.min_iterations) {
    return InvalidArgument("timing protocol: max_iterations must be >= min_iterations");
  }
  if (!(p.min_seconds >= 0) || !std::isfinite(p.min_seconds)) {
    return InvalidArgument("timing protocol: min_seconds must be a finite number >= 0");
  }
  if (!(p.timeout_s > 0)) return InvalidArgument("timing protocol: timeout_s must be > 0");
  return Status::Ok();
}

// The shared buffers of one implementation with the inputs written in, ready for any number of
// sandboxed requests (inputs are never written by a kernel, so they stay valid across runs).
struct PreparedKernel {
  runtime::SharedRegion region;
  std::vector<size_t> outputs;
};

Result<PreparedKernel> Prepare(const ProfileRequest& request) {
  MK_RETURN_IF_ERROR(CheckProtocol(request.protocol));
  if (request.library.so_path.empty()) return InvalidArgument("profile request has no library");
  if (request.flops < 0 || request.bytes < 0) {
    return InvalidArgument("profile request: flops and bytes must be >= 0");
  }
  const codegen::Implementation& impl = request.implementation;
  std::vector<size_t> sizes;
  PreparedKernel prepared;
  size_t num_params = 0;
  for (size_t i = 0; i < impl.buffers.size(); ++i) {
    const BufferSlot& b = impl.buffers[i];
    if (b.bytes < 0) return InvalidArgument("buffer " + std::to_string(i) + " has negative size");
    sizes.push_back(static_cast<size_t>(b.bytes));
    if (b.role == BufferSlot::Role::kOutput) {
      prepared.outputs.push_back(i);
    } else {
      ++num_params;
    }
  }
  if (request.inputs.size() != num_params) {
    return InvalidArgument("the kernel takes " + std::to_string(num_params) + " input(s), got " +
                           std::to_string(request.inputs.size()));
  }
  MK_ASSIGN_OR_RETURN(prepared.region, runtime::SharedRegion::Create(sizes));
  for (size_t i = 0; i < impl.buffers.size(); ++i) {
    const BufferSlot& b = impl.buffers[i];
    if (b.role != BufferSlot::Role::kParameter) continue;
    if (b.index < 0 || static_cast<size_t>(b.index) >= request.inputs.size()) {
      return InvalidArgument("buffer " + std::to_string(i) + " names parameter " +
                             std::to_string(b.index) + ", which does not exist");
    }
    const hlo::Literal& arg = request.inputs[static_cast<size_t>(b.index)];
    if (!arg.shape().SameAs(b.shape) || arg.raw_size() != static_cast<size_t>(b.bytes)) {
      return InvalidArgument("input " + std::to_string(b.index) + " has shape " +
                             arg.shape().ToString(false) + ", the kernel expects " +
                             b.shape.ToString(false));
    }
    std::memcpy(prepared.region.buffer(i), arg.raw(), arg.raw_size());
  }
  return prepared;
}

runtime::RunRequest SandboxRequest(const ProfileRequest& request, const PreparedKernel& prepared,
                                   int min_iterations, double min_seconds, int max_iterations,
                                   const MachineLoad& load) {
  runtime::RunRequest r;
  r.environment = TimingEnvironment(load);
  r.so_path = request.library.so_path;
  r.output_buffers = prepared.outputs;  // poisoned before every call, as the tester does
  r.warmup = request.protocol.warmup;
  r.min_iterations = min_iterations;
  r.min_seconds = min_seconds;
  r.max_iterations = max_iterations;
  r.timeout_s = request.protocol.timeout_s;
  return r;
}

Profile FailedProfile(const ProfileRequest& request, const runtime::RunOutcome& outcome) {
  Profile p = ProfileFromTimes(request, {});
  p.status = runtime::RunStatusName(outcome.status);
  p.message = DescribeOutcome(outcome, request.protocol.timeout_s);
  return p;
}

bool HasFlag(const std::vector<std::string>& flags, const std::string& flag) {
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

// OpenMP code runs on OMP_NUM_THREADS threads when set, else one per core; other code on one.
int ThreadsOf(const ProfileRequest& request) {
  if (!HasFlag(request.implementation.flags, "-fopenmp")) return 1;
  if (const char* env = std::getenv("OMP_NUM_THREADS")) {
    int n = std::atoi(env);
    if (n > 0) return n;
  }
  return std::max(1, request.target.cores);
}

bool ReadsBf16(const hlo::Instruction* inst) {
  if (inst == nullptr) return false;
  if (inst->shape.dtype() == hlo::DType::kBF16) return true;
  // A fused convert(bf16 -> f32) in front of the contraction still streams bf16.
  return inst->opcode == hlo::Opcode::kConvert && inst->operand_count() == 1 &&
         inst->operand(0)->shape.dtype() == hlo::DType::kBF16;
}

}  // namespace

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  double rank = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(values.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(rank));
  size_t hi = std::min(lo + 1, values.size() - 1);
  double frac = rank - static_cast<double>(lo);
  return values[lo] + frac * (values[hi] - values[lo]);
}

TimingStats SummarizeTimes(const std::vector<double>& times_s) {
  TimingStats s;
  s.iterations = static_cast<int64_t>(times_s.size());
  if (times_s.empty()) return s;
  s.median_s = Percentile(times_s, 50);
  s.p10_s = Percentile(times_s, 10);
  s.p90_s = Percentile(times_s, 90);
  double sum = 0;
  for (double t : times_s) sum += t;
  s.mean_s = sum / static_cast<double>(times_s.size());
  s.min_s = *std::min_element(times_s.begin(), times_s.end());
  s.max_s = *std::max_element(times_s.begin(), times_s.end());
  return s;
}

Roofline AnalyzeRoofline(int64_t flops, int64_t bytes, double median_s, double peak_flops,
                         double bandwidth_bytes_per_s) {
  Roofline r;
  r.peak_flops = peak_flops;
  r.bandwidth_bytes_per_s = bandwidth_bytes_per_s;
  r.compute_s = SafeDiv(static_cast<double>(flops), peak_flops);
  r.memory_s = SafeDiv(static_cast<double>(bytes), bandwidth_bytes_per_s);
  r.bound_s = std::max(r.compute_s, r.memory_s);
  r.fraction = SafeDiv(r.bound_s, median_s);
  r.achieved_flops = SafeDiv(static_cast<double>(flops), median_s);
  r.achieved_bytes_per_s = SafeDiv(static_cast<double>(bytes), median_s);
  const double of_peak = SafeDiv(r.achieved_flops, peak_flops);
  const double of_bandwidth = SafeDiv(r.achieved_bytes_per_s, bandwidth_bytes_per_s);
  // How close the dominant resource is to its limit: >= 50% is "at" it; below, the schedule
  // (not the machine) is what holds the kernel back, which the reason says.
  auto closeness = [](double of_limit) {
    return of_limit >= kNearRoofFraction ? std::string(" (near the roof)")
                                         : std::string(" (below half: the schedule limits it)");
  };
  if (r.bound_s < kTinyBoundSeconds && median_s > kOverheadFactor * r.bound_s) {
    r.bottleneck = "overhead";
    r.reason = "bound " + Sci(r.bound_s) + " s is tiny and the median " + Sci(median_s) +
               " s is more than " + Sci(kOverheadFactor) + "x it: fixed per-call costs dominate";
  } else if (r.compute_s >= r.memory_s) {
    r.bottleneck = "compute";
    r.reason = "flops/peak (" + Sci(r.compute_s) + " s) dominates bytes/bandwidth (" +
               Sci(r.memory_s) + " s); achieved " + Pct(of_peak) + " of the peak" +
               closeness(of_peak);
  } else {
    r.bottleneck = "memory";
    r.reason = "bytes/bandwidth (" + Sci(r.memory_s) + " s) dominates flops/peak (" +
               Sci(r.compute_s) + " s); achieved " + Pct(of_bandwidth) + " of the bandwidth" +
               closeness(of_bandwidth);
  }
  return r;
}

Profile ProfileFromTimes(const ProfileRequest& request, const std::vector<double>& times_s) {
  Profile p;
  p.timing = SummarizeTimes(times_s);
  p.flops = request.flops;
  p.bytes = request.bytes;
  p.compute_dtype = request.compute_dtype;
  const double median = p.timing.median_s;
  p.gflops = SafeDiv(static_cast<double>(request.flops), median) / 1e9;
  p.gbytes_per_s = SafeDiv(static_cast<double>(request.bytes), median) / 1e9;
  const double peak = request.compute_dtype == "bf16" ? request.target.peak_flops_bf16
                                                      : request.target.peak_flops_f32;
  p.roofline = AnalyzeRoofline(request.flops, request.bytes, median, peak,
                               request.target.bandwidth_bytes_per_s);
  ProfileEnvironment& env = p.environment;
  env.cpu_model = request.target.model;
  env.compiler = request.compiler_identity;
  env.flags = request.compile_flags;
  for (const std::string& f : request.implementation.flags) {
    if (!HasFlag(env.flags, f)) env.flags.push_back(f);
  }
  env.threads = ThreadsOf(request);
  env.maxkernel_version = request.maxkernel_version;
  env.rates_measured = request.target.rates_measured;
  env.isa_level = request.target.isa_level;
  return p;
}

std::vector<std::pair<std::string, std::string>> TimingEnvironment(const MachineLoad& load) {
  if (load.loaded()) return {{"OMP_PROC_BIND", "false"}, {"OMP_WAIT_POLICY", "passive"}};
  return {{"OMP_PROC_BIND", "close"}, {"OMP_PLACES", "cores"}};
}

namespace {

// What TimingEnvironment gave the worker, as the worker saw it (the user's own OMP_* win).
std::vector<std::string> OmpSeen(const MachineLoad& load) {
  std::vector<std::string> seen;
  for (const auto& [name, value] : TimingEnvironment(load)) {
    const char* user = std::getenv(name.c_str());
    seen.push_back(name + "=" + (user != nullptr ? user : value));
  }
  return seen;
}

}  // namespace

Result<Profile> RunProfiler(const ProfileRequest& request, runtime::SandboxRunner& sandbox) {
  MK_ASSIGN_OR_RETURN(PreparedKernel prepared, Prepare(request));
  const TimingProtocol& protocol = request.protocol;
  const MachineLoad load = SampleMachineLoad(request.target.cores);
  runtime::RunRequest run = SandboxRequest(request, prepared, protocol.min_iterations,
                                           protocol.min_seconds, protocol.max_iterations, load);
  MK_ASSIGN_OR_RETURN(runtime::RunOutcome outcome, sandbox.Run(run, prepared.region));
  if (!outcome.ok()) return FailedProfile(request, outcome);
  // Calls at two speeds (a scheduler slice lost at a barrier in some of them): measure once
  // more, and keep the run whose calls agree, or say the profile is bimodal.
  int remeasured = 0;
  if (SplitsIntoTwoClusters(outcome.times_s)) {
    MK_ASSIGN_OR_RETURN(runtime::RunOutcome again, sandbox.Run(run, prepared.region));
    ++remeasured;
    if (!again.ok()) return FailedProfile(request, again);
    if (!SplitsIntoTwoClusters(again.times_s)) outcome = std::move(again);
  }
  Profile p = ProfileFromTimes(request, outcome.times_s);
  p.bimodal = SplitsIntoTwoClusters(outcome.times_s);
  p.remeasured = remeasured;
  p.environment.load = load;
  p.environment.omp = OmpSeen(load);
  return p;
}

Result<Comparison> CompareInterleaved(const ProfileRequest& a, const ProfileRequest& b,
                                      runtime::SandboxRunner& sandbox, int rounds) {
  if (rounds < 1) return InvalidArgument("an interleaved comparison needs at least one round");
  MK_ASSIGN_OR_RETURN(PreparedKernel prep_a, Prepare(a));
  MK_ASSIGN_OR_RETURN(PreparedKernel prep_b, Prepare(b));
  const TimingProtocol& p = a.protocol;
  const int per_round_min = (p.min_iterations + rounds - 1) / rounds;
  const int per_round_max = std::max(per_round_min, p.max_iterations / rounds);
  const double per_round_seconds = p.min_seconds / rounds;
  // One load sample decides the workers' OpenMP settings for the whole comparison, so the two
  // sides always run alike.
  const MachineLoad load = SampleMachineLoad(a.target.cores);
  const int cores = a.target.cores;
  RoundTimer timer = [&](int side) {
    const ProfileRequest& r = side == 0 ? a : b;
    PreparedKernel& prep = side == 0 ? prep_a : prep_b;
    return sandbox.Run(
        SandboxRequest(r, prep, per_round_min, per_round_seconds, per_round_max, load),
        prep.region);
  };
  MK_ASSIGN_OR_RETURN(Comparison c, CompareWithTimer(a, b, timer, rounds, load, [cores] {
                        return SampleMachineLoad(cores);
                      }));
  c.a.environment.load = c.b.environment.load = load;
  c.a.environment.omp = c.b.environment.omp = OmpSeen(load);
  return c;
}

Result<Comparison> CompareWithTimer(const ProfileRequest& a, const ProfileRequest& b,
                                    const RoundTimer& timer, int rounds,
                                    const MachineLoad& load_before,
                                    const std::function<MachineLoad()>& sample_load) {
  if (rounds < 1) return InvalidArgument("an interleaved comparison needs at least one round");
  const TimingProtocol& pa = a.protocol;
  const TimingProtocol& pb = b.protocol;
  if (pa.warmup != pb.warmup || pa.min_iterations != pb.min_iterations ||
      pa.min_seconds != pb.min_seconds || pa.max_iterations != pb.max_iterations) {
    return InvalidArgument("an interleaved comparison needs one timing protocol for both sides");
  }
  Comparison c;
  c.rounds = rounds;
  c.load_before = load_before;
  std::vector<std::vector<double>> rounds_a, rounds_b;
  // One round: both sides, in alternating order (A B, B A, ...) so neither always runs on the
  // cache and clock state the other left. False with `c` filled in when a side failed.
  auto run_round = [&](int index, std::vector<double>& ta,
                       std::vector<double>& tb) -> Result<bool> {
    for (int k = 0; k < 2; ++k) {
      const int side = (index % 2 == 0) ? k : 1 - k;
      MK_ASSIGN_OR_RETURN(runtime::RunOutcome out, timer(side));
      if (!out.ok()) {
        std::vector<double> all_a, all_b;
        for (const auto& r : rounds_a) all_a.insert(all_a.end(), r.begin(), r.end());
        for (const auto& r : rounds_b) all_b.insert(all_b.end(), r.begin(), r.end());
        c.a = side == 0 ? FailedProfile(a, out) : ProfileFromTimes(a, all_a);
        c.b = side == 1 ? FailedProfile(b, out) : ProfileFromTimes(b, all_b);
        return false;
      }
      (side == 0 ? ta : tb) = std::move(out.times_s);
    }
    return true;
  };
  for (int r = 0; r < rounds; ++r) {
    std::vector<double> ta, tb;
    MK_ASSIGN_OR_RETURN(bool ok, run_round(r, ta, tb));
    if (!ok) return c;
    rounds_a.push_back(std::move(ta));
    rounds_b.push_back(std::move(tb));
  }
  auto ratio_of = [](const std::vector<double>& ta, const std::vector<double>& tb) {
    return SafeDiv(Percentile(ta, 50), Percentile(tb, 50));
  };
  std::vector<double> ratios;
  for (int r = 0; r < rounds; ++r) ratios.push_back(ratio_of(rounds_a[r], rounds_b[r]));
  // Re-measure, once each, the rounds a burst of load or a two-speed side spoiled.
  std::vector<size_t> redo = LoneOutliers(ratios);
  for (int r = 0; r < rounds; ++r) {
    const bool split = SplitsIntoTwoClusters(rounds_a[r]) || SplitsIntoTwoClusters(rounds_b[r]);
    if (split && std::find(redo.begin(), redo.end(), size_t(r)) == redo.end()) redo.push_back(r);
  }
  for (size_t r : redo) {
    std::vector<double> ta, tb;
    MK_ASSIGN_OR_RETURN(bool ok, run_round(static_cast<int>(r), ta, tb));
    if (!ok) return c;
    rounds_a[r] = std::move(ta);
    rounds_b[r] = std::move(tb);
    ratios[r] = ratio_of(rounds_a[r], rounds_b[r]);
    ++c.remeasured_rounds;
  }
  std::vector<double> times_a, times_b;
  for (int r = 0; r < rounds; ++r) {
    times_a.insert(times_a.end(), rounds_a[r].begin(), rounds_a[r].end());
    times_b.insert(times_b.end(), rounds_b[r].begin(), rounds_b[r].end());
  }
  c.round_ratios = ratios;
  c.a = ProfileFromTimes(a, times_a);
  c.b = ProfileFromTimes(b, times_b);
  c.speedup_b_over_a = SafeDiv(c.a.timing.median_s, c.b.timing.median_s);
  c.load_after = sample_load ? sample_load() : load_before;
  c.verdict = JudgeRoundRatios(ratios);
  if (c.loaded()) {
    RequireLoadedMargin(c.verdict,
                        DescribeLoad(c.load_after.loaded() ? c.load_after : c.load_before));
  }
  return c;
}

std::string ComputeDtypeOf(const analysis::Kernel& k) {
  const hlo::Instruction* hero = k.hero;
  if (hero != nullptr &&
      (hero->opcode == hlo::Opcode::kDot || hero->opcode == hlo::Opcode::kConvolution) &&
      hero->operand_count() >= 2 && ReadsBf16(hero->operand(0)) && ReadsBf16(hero->operand(1))) {
    return "bf16";
  }
  return "f32";
}

PlanTotals TotalsOf(const analysis::FusionPlan& plan) {
  PlanTotals t;
  int64_t bf16_flops = 0;
  for (const analysis::Kernel& k : plan.kernels) {
    t.flops += k.flops;
    t.bytes += k.bytes;
    if (ComputeDtypeOf(k) == "bf16") bf16_flops += k.flops;
  }
  if (t.flops > 0 && 2 * bf16_flops > t.flops) t.compute_dtype = "bf16";
  return t;
}

// ---- the machine probe's runtime half -------------------------------------------------------

Result<target::ProbeKernelRun> SandboxProbeRunner::Run(const std::string& source,
                                                       const std::vector<std::string>& flags,
                                                       int64_t units, int warmup,
                                                       int repetitions, double timeout_s) {
  MK_ASSIGN_OR_RETURN(runtime::CompiledLibrary lib, compiler_.Compile(source, flags));
  // buffers[0]: the work units; buffers[1]: the kernel's out[4] (sink, threads).
  MK_ASSIGN_OR_RETURN(runtime::SharedRegion region,
                      runtime::SharedRegion::Create({sizeof(int64_t), 4 * sizeof(double)}));
  std::memcpy(region.buffer(0), &units, sizeof units);
  runtime::RunRequest req;
  req.so_path = lib.so_path;
  req.output_buffers = {1};
  req.warmup = warmup;
  req.min_iterations = repetitions;
  req.max_iterations = repetitions;
  req.timeout_s = timeout_s;
  MK_ASSIGN_OR_RETURN(runtime::RunOutcome outcome, sandbox_.Run(req, region));
  if (!outcome.ok()) {
    return Internal("machine probe kernel failed: " + DescribeOutcome(outcome, timeout_s) +
                    " (source: " + lib.source_path + ")");
  }
  double out[4];
  std::memcpy(out, region.buffer(1), sizeof out);
  target::ProbeKernelRun run;
  run.times_s = std::move(outcome.times_s);
  // A NaN (poison left: the kernel never wrote) or absurd value becomes 0: CheckRun refuses it.
  run.threads = out[1] >= -1 && out[1] <= 1 << 20 ? static_cast<int>(out[1]) : 0;
  return run;
}

std::string SandboxProbeRunner::CompilerIdentity() {
  Result<std::string> id = compiler_.CompilerIdentity();
  return id.ok() ? *id : "";
}

store::MachineProbeRecord ToRecord(const target::MachineProbeResult& result) {
  store::MachineProbeRecord r;
  r.cpu_model = result.cpu_model;
  r.cores = result.cores;
  r.peak_flops_f32 = result.peak_flops_f32;
  r.peak_flops_bf16 = result.peak_flops_bf16;
  r.bandwidth_bytes_per_s = result.bandwidth_bytes_per_s;
  r.details_json = target::ToJson(result).dump();
  return r;
}

namespace {

// This machine, under the name its probes are stored by: a VM may hide the model name, and the
// key must still be stable and non-empty.
target::Target ProbeHost() {
  target::Target host = target::HostCpu();
  if (host.model.empty()) host.model = "unknown cpu";
  return host;
}

}  // namespace

std::string ProbeStaleness(const target::MachineProbeResult& stored, const target::Target& host,
                           const std::string& boot_id) {
  if (stored.cpu_model != host.model) return "it was measured on a " + stored.cpu_model;
  if (stored.cores != host.cores) {
    return "it was measured on " + std::to_string(stored.cores) + " cores";
  }
  if (stored.isa_level.empty() || stored.boot_id.empty() || !stored.busy_cores_before ||
      !stored.busy_cores_after) {
    return "it predates the staleness checks (no ISA level, boot id or load recorded)";
  }
  if (stored.isa_level != host.isa_level) {
    return "it was built for " + stored.isa_level + ", this run builds for " + host.isa_level;
  }
  if (stored.boot_id != boot_id) return "the machine has rebooted since";
  const double busy = std::max(*stored.busy_cores_before, *stored.busy_cores_after);
  // A quick probe's numbers mean nothing anyway (tests, `doctor --quick`).
  if (!stored.quick && busy > kProbeMaxBusyFraction * host.cores) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%.1f of %d cores were busy with other work while it ran", busy,
                  host.cores);
    return buf;
  }
  return "";
}

Result<std::optional<ProbedMachine>> LoadStoredMachine(store::Store& store, bool quick_ok,
                                                       std::string* stale_reason) {
  const target::Target host = ProbeHost();
  MK_ASSIGN_OR_RETURN(std::optional<store::MachineProbeRecord> stored,
                      store.LatestMachineProbe(host.model, host.cores));
  if (!stored) return std::optional<ProbedMachine>();
  auto details = target::MachineProbeResultFromJson(
      nlohmann::json::parse(stored->details_json, nullptr, false));
  const std::string stale = details.ok() ? ProbeStaleness(*details, host, target::CurrentBootId())
                                         : "its details are unreadable";
  if (!stale.empty()) {
    if (stale_reason != nullptr) *stale_reason = stale;
    return std::optional<ProbedMachine>();
  }
  // A quick probe (tests, `doctor --quick`) only answers another quick request: its tiny
  // buffers measure a cache, not memory, and must not become the machine's rates.
  if (!quick_ok && details->quick) return std::optional<ProbedMachine>();
  ProbedMachine machine;
  machine.record = std::move(*stored);
  machine.target = target::WithMeasuredRates(host, machine.record.peak_flops_f32,
                                             machine.record.peak_flops_bf16,
                                             machine.record.bandwidth_bytes_per_s);
  return std::optional<ProbedMachine>(std::move(machine));
}

Result<ProbedMachine> LoadOrProbeMachine(store::Store& store, bool force,
                                         const target::ProbeOptions& options,
                                         const runtime::CompileOptions& compile_options) {
  if (!force) {
    MK_ASSIGN_OR_RETURN(std::optional<ProbedMachine> stored,
                        LoadStoredMachine(store, options.quick));
    if (stored) return std::move(*stored);
  }
  ProbedMachine machine;
  const target::Target host = ProbeHost();
  runtime::CompilerDriver compiler(compile_options);
  runtime::SandboxRunner sandbox;
  SandboxProbeRunner runner(compiler, sandbox);
  const MachineLoad before = SampleMachineLoad(host.cores, 0.2);
  MK_ASSIGN_OR_RETURN(target::MachineProbeResult result,
                      target::RunMachineProbe(host, runner, options));
  const MachineLoad after = SampleMachineLoad(host.cores, 0.2);
  result.busy_cores_before = before.busy_cores;
  result.busy_cores_after = after.busy_cores;
  machine.record = ToRecord(result);
  MK_ASSIGN_OR_RETURN(machine.record.id, store.AddMachineProbe(machine.record));
  MK_ASSIGN_OR_RETURN(std::optional<store::MachineProbeRecord> stored,
                      store.LatestMachineProbe(host.model, host.cores));
  if (stored.has_value()) machine.record = std::move(*stored);  // with the store's timestamp
  machine.target = target::WithMeasuredRates(host, result.peak_flops_f32, result.peak_flops_bf16,
                                             result.bandwidth_bytes_per_s);
  machine.probed_now = true;
  return machine;
}

Result<target::Target> LoadOrProbe(store::Store& store, bool force,
                                   const target::ProbeOptions& options) {
  MK_ASSIGN_OR_RETURN(ProbedMachine machine, LoadOrProbeMachine(store, force, options));
  return machine.target;
}

}  // namespace mk::agents
