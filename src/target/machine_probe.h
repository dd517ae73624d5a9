// The machine probe: measures what this CPU can actually do, so that roofline bounds use real
// peaks instead of the nominal clock x lanes x pipes model of HostCpu():
//   - f32 FMA throughput: a register-only loop of independent AVX-512 FMA chains, all cores;
//   - bf16 dot-product throughput (vdpbf16ps, f32 accumulation) when avx512_bf16 exists, and
//     AMX tile throughput (tdpbf16ps) where amx_tile/amx_bf16 exist: the larger is the bf16 peak;
//   - AMX tiles fed from the caches (amx_bf16_fed): the tile loop of a bf16 GEMM whose A slivers
//     stream from L2 past a B sliver held in L1, C loaded and stored per sliver pair. Not a peak
//     (it stays out of the roofline): the rate a pack-then-multiply AMX GEMM can at best sustain,
//     against which `maxkernel doctor` and the benchmark notes size bf16 GEMM targets;
//   - streaming read bandwidth: a vector read-sum over a buffer much larger than the L3, all cores.
// The probe kernels are generated C++ (the sandbox ABI of runtime/kernel_abi.h) and are run by a
// ProbeKernelRunner. This layer sits below the runtime, so the runner is an interface here; the
// one that compiles with the CompilerDriver and runs in the SandboxRunner (so a probe crash
// cannot take the tool down), and LoadOrProbe over the store, live in agents/profiler.h.
// docs/PROFILING.md describes the method and its numbers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/status.h"
#include "target/target.h"

namespace mk::target {

enum class ProbeKernelKind { kFmaF32, kDotBf16, kStreamRead, kAmxBf16, kAmxBf16Fed };
// "fma_f32", "dot_bf16", "stream_read", "amx_bf16", "amx_bf16_fed".
const char* ProbeKernelName(ProbeKernelKind kind);

struct ProbeOptions {
  // Each timed call of a probe kernel is sized to take about this long ...
  double seconds_per_call = 0.25;
  // ... and this many timed calls are made; the fastest one is the result (the others lost time
  // to other processes: on a shared machine only the best is a property of the hardware).
  int repetitions = 4;
  // Independent accumulator chains in the FMA loops: must cover latency x issue rate (4-6
  // cycles x 2 pipes on current AVX-512 cores); 16 leaves slack and fits in the 32 zmm registers.
  int accumulators = 16;
  // Streaming buffer; 0: 4 x L3, at least 256 MiB and at most 1 GiB (so the probe cannot push
  // a small machine into swap). A smaller buffer measures a cache, not memory.
  int64_t stream_bytes = 0;
  double timeout_s = 60;  // per sandboxed request
  // Set by Quick(): the result is marked quick, and a request for the machine's real rates
  // (LoadOrProbeMachine without it) never takes a stored quick result for them.
  bool quick = false;

  // Tiny durations and buffers for tests: numbers are positive but mean nothing.
  static ProbeOptions Quick();
};

// The stream buffer size `options` gives on `host`.
int64_t StreamBufferBytes(const Target& host, const ProbeOptions& options);

// A complete translation unit exporting mk_abi_version and mk_kernel(void** buffers) with
//   buffers[0]: int64_t[1]  work units (FMA: loop trips per thread; stream: passes over the buffer)
//   buffers[1]: double[4]   out: [0] a value that depends on every result (keeps the work alive),
//                           [1] the number of OpenMP threads that ran.
// The vector width is the host's (AVX-512, else AVX2+FMA); kDotBf16 needs avx512_bf16.
Result<std::string> ProbeKernelSource(ProbeKernelKind kind, const Target& host,
                                      const ProbeOptions& options, int64_t stream_bytes);
// Flags the probe sources need beyond the compiler driver's (-O3 -march=native ...).
std::vector<std::string> ProbeKernelFlags();

// Work (FLOPs, or bytes read) of one call with `units` work units on `threads` threads.
double ProbeWorkPerCall(ProbeKernelKind kind, const Target& host, int64_t units, int threads,
                        const ProbeOptions& options, int64_t stream_bytes);

// What one request to the runner measured: each timed call's seconds, and the threads it used.
struct ProbeKernelRun {
  std::vector<double> times_s;
  int threads = 0;
};

// Runs a probe kernel: `warmup` untimed calls, then `repetitions` timed calls, each with
// buffers[0] = units. Implemented by the runtime (agents/profiler.h) and by fakes in tests.
class ProbeKernelRunner {
 public:
  virtual ~ProbeKernelRunner() = default;
  virtual Result<ProbeKernelRun> Run(const std::string& source,
                                     const std::vector<std::string>& flags, int64_t units,
                                     int warmup, int repetitions, double timeout_s) = 0;
  // The compiler's identity ("g++ (Debian 12.2.0-14) 12.2.0"), recorded with the result.
  virtual std::string CompilerIdentity() { return ""; }
};

struct ProbeMeasurement {
  std::string kernel;     // ProbeKernelName
  double rate = 0;        // FLOP/s or bytes/s of the fastest call
  double best_seconds = 0;
  double median_seconds = 0;
  int64_t units = 0;      // work units per call after calibration
  int threads = 0;
  int repetitions = 0;
};

struct MachineProbeResult {
  std::string cpu_model;
  int cores = 0;
  int threads = 0;  // OpenMP threads the kernels ran on
  double peak_flops_f32 = 0;
  std::optional<double> peak_flops_bf16;  // absent: no avx512_bf16
  double bandwidth_bytes_per_s = 0;
  int64_t stream_bytes = 0;
  std::string compiler;
  std::vector<ProbeMeasurement> measurements;
  std::vector<std::string> notes;  // "bf16: absent (no avx512_bf16)", ...
  bool quick = false;  // measured with ProbeOptions::Quick(): its numbers mean little
  // What makes a stored probe stale (agents/profiler.h: LoadStoredMachine): the ISA level the
  // kernels were built for, the boot it ran in (/proc/sys/kernel/random/boot_id: a VM may move
  // to other hardware across a reboot), and the other work on the machine around it (cores
  // busy with other work just before and just after; support/machine_load.h). Empty / absent
  // in probes stored before these were recorded.
  std::string isa_level;
  std::string boot_id;
  std::optional<double> busy_cores_before, busy_cores_after;
};

// This boot's id (/proc/sys/kernel/random/boot_id), or "" where it cannot be read.
std::string CurrentBootId();

nlohmann::json ToJson(const MachineProbeResult& result);
Result<MachineProbeResult> MachineProbeResultFromJson(const nlohmann::json& j);

// Calibrates and runs every probe kernel `host` supports (f32 needs avx512f or avx2+fma; bf16
// needs avx512_bf16). An error when a kernel fails to build or run, or a rate comes out non-finite.
Result<MachineProbeResult> RunMachineProbe(const Target& host, ProbeKernelRunner& runner,
                                           const ProbeOptions& options = {});

// `host` with the probe's peaks and rates_measured = true. Without a bf16 instruction bf16 work
// runs on the f32 FMA units after conversion, so the bf16 peak becomes the f32 one.
Target WithMeasuredRates(Target host, double peak_flops_f32, std::optional<double> peak_flops_bf16,
                         double bandwidth_bytes_per_s);

}  // namespace mk::target
