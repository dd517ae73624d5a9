// The profiler agent: how fast is a (tested) implementation, and how far from what the machine
// allows? It times a compiled library in the sandbox under a fixed protocol (warm-up calls, then
// repetitions until both an iteration count and a time floor are met, capped by a maximum),
// summarizes the times (median, p10, p90, mean, min), turns the plan's FLOPs and bytes into
// GFLOP/s and GB/s, and compares the median with the roofline bound
//   bound = max(flops / peak(dtype), bytes / bandwidth)
// of the target (measured peaks when the machine probe ran: target.rates_measured). Every
// profile records the environment it was measured in (DESIGN.md §5). Speedups must come from
// CompareInterleaved, which alternates the two implementations (A B A B ...) in one run, so a
// machine that gets busier or cooler halfway through affects both sides alike.
//
// The machine probe's runtime half also lives here: target/machine_probe.h cannot use the
// runtime (it sits below it), so SandboxProbeRunner (compile with the CompilerDriver, run in the
// SandboxRunner) and LoadOrProbe (the store's probe keyed by CPU model, or a fresh probe) are
// in this file. docs/PROFILING.md has the rules and the numbers.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "agents/timing_verdict.h"
#include "analysis/fusion_plan.h"
#include "codegen/emitter.h"
#include "hlo/literal.h"
#include "runtime/compiler.h"
#include "runtime/sandbox.h"
#include "store/store.h"
#include "support/machine_load.h"
#include "target/machine_probe.h"
#include "target/target.h"

namespace mk::agents {

struct TimingProtocol {
  int warmup = 3;              // untimed calls first (page faults, caches, thread pool start)
  int min_iterations = 10;     // timed calls: at least this many ...
  double min_seconds = 0.2;    // ... and until this much time was spent in them ...
  int max_iterations = 100000; // ... but never more than this many
  double timeout_s = 120;      // for one sandboxed request, load included
};

struct ProfileRequest {
  codegen::Implementation implementation;  // its buffer ABI says how to lay the inputs out
  runtime::CompiledLibrary library;        // built from `implementation`
  std::vector<hlo::Literal> inputs;        // entry parameters in order
  target::Target target;                   // peaks and bandwidth for the roofline
  int64_t flops = 0;                       // the plan's totals (PlanTotals)
  int64_t bytes = 0;
  std::string compute_dtype = "f32";       // "bf16": the bf16 peak bounds the compute
  TimingProtocol protocol;
  // Recorded in the profile's environment (the caller knows them; the library does not).
  std::string compiler_identity;
  std::vector<std::string> compile_flags;
  // MK_VERSION is defined for the cli layer only, so the caller passes it in.
  std::string maxkernel_version;
};

// Order statistics of a list of times. Percentiles interpolate linearly between the two nearest
// ranks (p-th percentile at rank p/100 * (n - 1), 0-based), so the median of an even count is the
// mean of the middle two and p10/p90 are exact for hand-made lists.
struct TimingStats {
  double median_s = 0, p10_s = 0, p90_s = 0, mean_s = 0, min_s = 0, max_s = 0;
  int64_t iterations = 0;
};
TimingStats SummarizeTimes(const std::vector<double>& times_s);
double Percentile(std::vector<double> values, double p);

// Where the time goes, by the rule in docs/PROFILING.md:
//   overhead: the bound is tiny (< kTinyBoundSeconds) and median > kOverheadFactor x bound:
//             fixed costs of a call (thread wake-up, loop setup) dominate; no peak says anything.
//   compute:  otherwise, when flops/peak >= bytes/bandwidth;
//   memory:   otherwise.
// The reason line adds whether the kernel reaches kNearRoofFraction (50%) of the dominant
// resource's limit: at or above it the machine limits the kernel, below it the schedule does.
inline constexpr double kTinyBoundSeconds = 10e-6;
inline constexpr double kOverheadFactor = 10;
inline constexpr double kNearRoofFraction = 0.5;

struct Roofline {
  double peak_flops = 0;             // the peak used (f32 or bf16)
  double bandwidth_bytes_per_s = 0;
  double compute_s = 0;              // flops / peak
  double memory_s = 0;               // bytes / bandwidth
  double bound_s = 0;                // max of the two
  double fraction = 0;               // bound / median (1 = at the roofline)
  double achieved_flops = 0;         // flops / median
  double achieved_bytes_per_s = 0;   // bytes / median
  std::string bottleneck;            // "compute", "memory", "overhead"
  std::string reason;                // one line: which rule fired, with the numbers
};
Roofline AnalyzeRoofline(int64_t flops, int64_t bytes, double median_s, double peak_flops,
                         double bandwidth_bytes_per_s);

struct ProfileEnvironment {
  std::string cpu_model;
  std::string isa_level;        // what the kernel was built for (target.h: "avx2", ...)
  std::string compiler;
  std::vector<std::string> flags;
  int threads = 1;
  std::string maxkernel_version;
  bool rates_measured = false;  // the roofline used probed (true) or nominal (false) peaks
  MachineLoad load;             // sampled just before the timed calls
  // The OpenMP settings the sandbox gave the worker (TimingEnvironment), as NAME=VALUE.
  std::vector<std::string> omp;
};

// The OpenMP environment a timed worker gets, where the user's environment does not set it:
// on a quiet machine threads are pinned (OMP_PROC_BIND=close, OMP_PLACES=cores: no migrations
// between timed calls) and wait as libgomp does by default (spin briefly, then sleep: what the
// kernel meets in production); on a loaded one they are not pinned (the scheduler may move a
// thread off a core another job holds) and OMP_WAIT_POLICY=passive (a thread spinning at a
// barrier would burn the slice its preempted sibling needs). docs/PROFILING.md.
std::vector<std::pair<std::string, std::string>> TimingEnvironment(const MachineLoad& load);

struct Profile {
  // "ok", or the sandbox outcome of a failed run ("crashed", "timed-out", ...) with `message`.
  std::string status = "ok";
  std::string message;
  TimingStats timing;
  // The calls' times split into two clusters (timing_verdict.h) even after one re-measurement:
  // the median is one of two speeds, and the profile says so.
  bool bimodal = false;
  int remeasured = 0;  // times the calls were re-measured because they were bimodal
  int64_t flops = 0, bytes = 0;
  std::string compute_dtype = "f32";
  double gflops = 0, gbytes_per_s = 0;  // from the median
  Roofline roofline;
  ProfileEnvironment environment;
  bool ok() const { return status == "ok"; }
};

// Times one implementation. Errors are for bad requests and sandbox failures; a kernel that
// crashes or times out gives a Profile with that status.
Result<Profile> RunProfiler(const ProfileRequest& request, runtime::SandboxRunner& sandbox);

// A Profile from times measured elsewhere (the statistics, roofline and environment rules
// applied to `times_s`); RunProfiler and CompareInterleaved use it, tests call it directly.
Profile ProfileFromTimes(const ProfileRequest& request, const std::vector<double>& times_s);

struct Comparison {
  Profile a, b;
  int rounds = 0;
  // a.median / b.median over all of each side's times: > 1 means B is faster.
  double speedup_b_over_a = 0;
  // The same ratio per round (median of A's times in round r / median of B's), after
  // re-measurement: what the verdict is computed from.
  std::vector<double> round_ratios;
  RatioVerdict verdict;        // on round_ratios (timing_verdict.h)
  int remeasured_rounds = 0;   // rounds run again: a lone outlier ratio, or a bimodal side
  MachineLoad load_before, load_after;
  bool loaded() const { return load_before.loaded() || load_after.loaded(); }
};

// Alternates A and B for `rounds` rounds (A B, then B A, ...), each side running
// ceil(min_iterations / rounds) iterations and min_seconds / rounds per round after its own
// warm-up, so both see the same machine conditions. A round whose ratio lies alone far from the
// others, or in which a side's calls split into two speeds, is run again (at most `rounds` extra
// rounds). Then the verdict. Both requests' protocols must be equal (the comparison is fair).
Result<Comparison> CompareInterleaved(const ProfileRequest& a, const ProfileRequest& b,
                                      runtime::SandboxRunner& sandbox, int rounds = 8);

// One side's calls of one round: side 0 is A, 1 is B. CompareInterleaved's sandbox runs, or a
// synthetic timer in tests.
using RoundTimer = std::function<Result<runtime::RunOutcome>(int side)>;
// `load_before` is the machine's load when the comparison started; `sample_load` (none: the
// load stays `load_before`) samples it again at the end.
Result<Comparison> CompareWithTimer(const ProfileRequest& a, const ProfileRequest& b,
                                    const RoundTimer& timer, int rounds,
                                    const MachineLoad& load_before = {},
                                    const std::function<MachineLoad()>& sample_load = nullptr);

// Sum of the kernels' flops and bytes, and the dtype whose peak bounds the plan: "bf16" when
// more than half of the flops are in kernels whose contraction reads bf16 operands.
struct PlanTotals {
  int64_t flops = 0, bytes = 0;
  std::string compute_dtype = "f32";
};
PlanTotals TotalsOf(const analysis::FusionPlan& plan);
// "bf16" for a contraction kernel whose two operands are read as bf16, else "f32": the dtype
// whose peak bounds the kernel's compute.
std::string ComputeDtypeOf(const analysis::Kernel& kernel);

nlohmann::json ToJson(const TimingProtocol& protocol);
Result<TimingProtocol> TimingProtocolFromJson(const nlohmann::json& j);
nlohmann::json ToJson(const ProfileRequest& request);
Result<ProfileRequest> ProfileRequestFromJson(const nlohmann::json& j);
nlohmann::json ToJson(const Profile& profile);
Result<Profile> ProfileFromJson(const nlohmann::json& j);
nlohmann::json ToJson(const Comparison& comparison);
nlohmann::json TargetToJson(const target::Target& target);
Result<target::Target> TargetFromJson(const nlohmann::json& j);

// ---- the machine probe's runtime half -------------------------------------------------------

// Compiles probe kernels through the CompilerDriver (cached by source) and runs them in the
// SandboxRunner: a probe that crashes or hangs is an error, never the end of the process.
class SandboxProbeRunner final : public target::ProbeKernelRunner {
 public:
  SandboxProbeRunner(runtime::CompilerDriver& compiler, runtime::SandboxRunner& sandbox)
      : compiler_(compiler), sandbox_(sandbox) {}
  Result<target::ProbeKernelRun> Run(const std::string& source,
                                     const std::vector<std::string>& flags, int64_t units,
                                     int warmup, int repetitions, double timeout_s) override;
  std::string CompilerIdentity() override;

 private:
  runtime::CompilerDriver& compiler_;
  runtime::SandboxRunner& sandbox_;
};

// The store's row for a probe result.
store::MachineProbeRecord ToRecord(const target::MachineProbeResult& result);

struct ProbedMachine {
  target::Target target;          // HostCpu() with the measured rates (rates_measured = true)
  store::MachineProbeRecord record;
  bool probed_now = false;        // false: loaded from the store
};

// A stored probe no longer describes this machine when the CPU model, the core count, the ISA
// level or the boot differ, or when other work took more than half of the cores while it ran
// (its peaks would be too low, and kernels would pass 100% of them). The reason, or "" when it
// is current. Probes stored before these facts were recorded are stale.
inline constexpr double kProbeMaxBusyFraction = 0.5;
std::string ProbeStaleness(const target::MachineProbeResult& stored, const target::Target& host,
                           const std::string& boot_id);

// The newest probe stored for this CPU (model and core count); nullopt when there is none,
// when it is stale (ProbeStaleness, said in `stale_reason`), or when it is a quick one and
// `quick_ok` is false. Never measures anything.
Result<std::optional<ProbedMachine>> LoadStoredMachine(store::Store& store, bool quick_ok,
                                                       std::string* stale_reason = nullptr);

// The newest probe stored for this CPU (model and core count), or - when there is none, or
// `force` - a fresh probe, which is stored before it is returned.
Result<ProbedMachine> LoadOrProbeMachine(store::Store& store, bool force,
                                         const target::ProbeOptions& options = {},
                                         const runtime::CompileOptions& compile_options = {});
Result<target::Target> LoadOrProbe(store::Store& store, bool force,
                                   const target::ProbeOptions& options = {});

}  // namespace mk::agents
