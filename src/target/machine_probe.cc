#include "target/machine_probe.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "target/amx_runtime.h"

namespace mk::target {

namespace {

using json = nlohmann::json;

// Calibration never asks for more work units than this (keeps units * work far from overflow).
constexpr int64_t kMaxUnits = int64_t{1} << 40;

bool UsesAvx512(const Target& host) { return host.Has("avx512f"); }

bool HasAmx(const Target& host) {
  return UsesAvx512(host) && host.Has("amx_tile") && host.Has("amx_bf16");
}

int LanesF32(const Target& host) { return UsesAvx512(host) ? 16 : 8; }

// The vector vocabulary the generated kernels are written in, so one text serves AVX-512 and
// AVX2: the probe must measure the widest FMA the code generator will use.
std::string VectorPrelude(const Target& host) {
  if (UsesAvx512(host)) {
    return R"(#define MKV __m512
#define MKV_LANES 16
#define MKV_SET1 _mm512_set1_ps
#define MKV_FMA _mm512_fmadd_ps
#define MKV_ADD _mm512_add_ps
#define MKV_LOAD _mm512_load_ps
#define MKV_STOREU _mm512_storeu_ps
)";
  }
  return R"(#define MKV __m256
#define MKV_LANES 8
#define MKV_SET1 _mm256_set1_ps
#define MKV_FMA _mm256_fmadd_ps
#define MKV_ADD _mm256_add_ps
#define MKV_LOAD _mm256_load_ps
#define MKV_STOREU _mm256_storeu_ps
)";
}

constexpr const char* kCommonHead = R"(#include <immintrin.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>

extern "C" int mk_abi_version(void) { return 1; }

static inline double mkv_sum(MKV v) {
  float lanes[MKV_LANES];
  MKV_STOREU(lanes, v);
  double s = 0;
  for (int i = 0; i < MKV_LANES; ++i) s += lanes[i];
  return s;
}
)";

// K independent chains acc_k = acc_k * a + b in registers: no memory traffic, so the loop runs
// at the FMA issue rate once K covers latency x pipes. `a` depends on the trip count so the
// compiler cannot fold anything; a < 1 keeps every value finite.
std::string FmaF32Body(int k) {
  std::ostringstream s;
  s << "extern \"C\" void mk_kernel(void** buffers) {\n"
       "  const int64_t trips = *static_cast<const int64_t*>(buffers[0]);\n"
       "  double* out = static_cast<double*>(buffers[1]);\n"
       "  double sink = 0;\n"
       "  int threads = 0;\n"
       "#pragma omp parallel num_threads(omp_get_num_procs()) reduction(+ : sink)\n"
       "  {\n"
       "#pragma omp single\n"
       "    threads = omp_get_num_threads();\n"
       "    const MKV a = MKV_SET1(1.0f - 1.0f / (float)(trips + 2));\n"
       "    const MKV b = MKV_SET1(1e-3f);\n";
  for (int i = 0; i < k; ++i) {
    s << "    MKV acc" << i << " = MKV_SET1(0.5f * omp_get_thread_num() + " << i << ".0f);\n";
  }
  s << "    for (int64_t t = 0; t < trips; ++t) {\n";
  for (int i = 0; i < k; ++i) s << "      acc" << i << " = MKV_FMA(acc" << i << ", a, b);\n";
  s << "    }\n    MKV total = acc0;\n";
  for (int i = 1; i < k; ++i) s << "    total = MKV_ADD(total, acc" << i << ");\n";
  s << "    sink += mkv_sum(total);\n"
       "  }\n"
       "  out[0] = sink;\n"
       "  out[1] = threads;\n"
       "}\n";
  return s.str();
}

// vdpbf16ps: each instruction multiplies 16 lanes x 2 bf16 pairs and adds them into f32
// accumulators (64 FLOPs). a ~ 0.001 and b = 1.0 keep the accumulators finite.
std::string DotBf16Body(int k) {
  std::ostringstream s;
  s << "extern \"C\" void mk_kernel(void** buffers) {\n"
       "  const int64_t trips = *static_cast<const int64_t*>(buffers[0]);\n"
       "  double* out = static_cast<double*>(buffers[1]);\n"
       "  double sink = 0;\n"
       "  int threads = 0;\n"
       "#pragma omp parallel num_threads(omp_get_num_procs()) reduction(+ : sink)\n"
       "  {\n"
       "#pragma omp single\n"
       "    threads = omp_get_num_threads();\n"
       "    const __m512bh a = (__m512bh)_mm512_set1_epi16((short)(0x3A83 + (trips & 1)));\n"
       "    const __m512bh b = (__m512bh)_mm512_set1_epi16((short)0x3F80);\n";
  for (int i = 0; i < k; ++i) {
    s << "    __m512 acc" << i << " = _mm512_set1_ps(0.5f * omp_get_thread_num() + " << i
      << ".0f);\n";
  }
  s << "    for (int64_t t = 0; t < trips; ++t) {\n";
  for (int i = 0; i < k; ++i) {
    s << "      acc" << i << " = _mm512_dpbf16_ps(acc" << i << ", a, b);\n";
  }
  s << "    }\n    __m512 total = acc0;\n";
  for (int i = 1; i < k; ++i) s << "    total = _mm512_add_ps(total, acc" << i << ");\n";
  s << "    sink += mkv_sum(total);\n"
       "  }\n"
       "  out[0] = sink;\n"
       "  out[1] = threads;\n"
       "}\n";
  return s.str();
}

// The start of an AMX probe kernel: the tile runtime, `declarations`, and mk_kernel up to its
// refusal check (a process denied the tile state reports threads = -2).
std::string AmxKernelOpening(const std::string& declarations) {
  return std::string("#include <sys/syscall.h>\n#include <unistd.h>\n\n") +
         AmxTileRuntimeSource() + declarations + R"(
extern "C" void mk_kernel(void** buffers) {
  const int64_t trips = *static_cast<const int64_t*>(buffers[0]);
  double* out = static_cast<double*>(buffers[1]);
  if (!mk_amx_permitted()) {
    out[0] = 0;
    out[1] = -2;
    return;
  }
)";
}

// AMX tiles (amx_bf16): per trip, 4 tdpbf16ps into 4 accumulator tiles from 2 A and 2 B tiles,
// each 16x16 outputs x 32 bf16 products (16384 FLOPs). The bf16 GEMM runs on tiles where the
// CPU has them, so its roofline needs this rate, not vdpbf16ps'. Linux grants the tile state
// per process on request; a refusal comes back as threads = -2 (the probe then skips AMX).
std::string AmxBf16Body() {
  return AmxKernelOpening("") + R"(  double sink = 0;
  int threads = 0;
#pragma omp parallel num_threads(omp_get_num_procs()) reduction(+ : sink)
  {
#pragma omp single
    threads = omp_get_num_threads();
    mk_amx_load_config();
    alignas(64) uint16_t a[16 * 32], b[16 * 32];
    for (int i = 0; i < 16 * 32; ++i) {
      a[i] = (uint16_t)(0x3A83 + (trips & 1));  // ~0.001
      b[i] = 0x3F80;                            // 1.0
    }
    _tile_loadd(4, a, 64);
    _tile_loadd(5, a, 64);
    _tile_loadd(6, b, 64);
    _tile_loadd(7, b, 64);
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int64_t t = 0; t < trips; ++t) {
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
    alignas(64) float c[16 * 16];
    _tile_stored(0, c, 64);
    sink += c[0];
    _tile_stored(3, c, 64);
    sink += c[255] + omp_get_thread_num();
    _tile_release();
  }
  out[0] = sink;
  out[1] = threads;
}
)";
}

// AMX tiles fed from the caches, as a bf16 GEMM's tile loop feeds them (gemm_amx.cc). Eight
// tile registers allow 2x2 tiles of C and one A and B tile pair per step, so one operand must
// stream: here, per thread, a block of kAmxFedSlivers A slivers (32 rows x kAmxFedKc bf16, tile
// rows contiguous: 128 KiB, in L2) passes each B sliver (kAmxFedKc x 32 in k pairs: 16 KiB, in
// L1), and each sliver pair loads its 32x32 f32 C block (C: 256 KiB, in L2), runs kAmxFedKc / 32
// steps of 2 A + 2 B tile loads and 4 tdpbf16ps, and stores it. One trip is every B sliver
// against every A sliver. Measured on the Xeon (session 17), this blocking ran faster than a
// deeper K (both operands from L2) or a narrower one (C traffic), so it is the rate a GEMM that
// packs and then multiplies can at best sustain; buffers are set once per call, untimed cost
// that calibration makes negligible.
constexpr int kAmxFedSlivers = 8, kAmxFedKc = 256;

std::string AmxBf16FedBody() {
  std::ostringstream s;
  s << AmxKernelOpening("\nstatic const int kSlivers = " + std::to_string(kAmxFedSlivers) +
                        ", kSteps = " + std::to_string(kAmxFedKc / 32) + ";\n")
    << R"(  // Per sliver and k step: two 16-row tiles of 64 bytes (512 bf16 each); per C block 32x32.
  const size_t sliver = (size_t)kSteps * 2 * 512, c_floats = (size_t)kSlivers * kSlivers * 1024;
  double sink = 0;
  int threads = 0;
  bool failed = false;
#pragma omp parallel num_threads(omp_get_num_procs()) reduction(+ : sink) reduction(|| : failed)
  {
#pragma omp single
    threads = omp_get_num_threads();
    uint16_t* a = static_cast<uint16_t*>(aligned_alloc(64, kSlivers * sliver * 2));
    uint16_t* b = static_cast<uint16_t*>(aligned_alloc(64, kSlivers * sliver * 2));
    float* c = static_cast<float*>(aligned_alloc(64, c_floats * 4));
    if (a == nullptr || b == nullptr || c == nullptr) {
      failed = true;
    } else {
      for (size_t i = 0; i < kSlivers * sliver; ++i) {
        a[i] = (uint16_t)(0x3A83 + (trips & 1));  // ~0.001
        b[i] = 0x3F80;                            // 1.0
      }
      for (size_t i = 0; i < c_floats; ++i) c[i] = 0;
      mk_amx_load_config();
      for (int64_t t = 0; t < trips; ++t) {
        for (int j = 0; j < kSlivers; ++j) {
          const uint16_t* bs = b + j * sliver;
          for (int i = 0; i < kSlivers; ++i) {
            const uint16_t* as = a + i * sliver;
            float* cs = c + (j * kSlivers + i) * 1024;
            _tile_loadd(0, cs, 128);
            _tile_loadd(1, cs + 16, 128);
            _tile_loadd(2, cs + 512, 128);
            _tile_loadd(3, cs + 528, 128);
            for (int k = 0; k < kSteps; ++k) {
              _tile_loadd(4, as + k * 1024, 64);
              _tile_loadd(5, as + k * 1024 + 512, 64);
              _tile_loadd(6, bs + k * 1024, 64);
              _tile_loadd(7, bs + k * 1024 + 512, 64);
              _tile_dpbf16ps(0, 4, 6);
              _tile_dpbf16ps(1, 4, 7);
              _tile_dpbf16ps(2, 5, 6);
              _tile_dpbf16ps(3, 5, 7);
            }
            _tile_stored(0, cs, 128);
            _tile_stored(1, cs + 16, 128);
            _tile_stored(2, cs + 512, 128);
            _tile_stored(3, cs + 528, 128);
          }
        }
      }
      _tile_release();
      sink += c[0] + c[c_floats - 1] + omp_get_thread_num();
    }
    free(a);
    free(b);
    free(c);
  }
  out[0] = sink;
  out[1] = failed ? -1 : threads;
}
)";
  return s.str();
}

// A read-sum over a buffer allocated and first-touched (in parallel, with the same static split
// as the timed loop, so pages sit near the core that reads them) by the first call: the sandbox
// runs a warm-up call first, so allocation never lands in a timed call. The buffer must hold
// non-zero data: untouched pages all map the one zero page and would be read from cache. The
// empty asm with a memory clobber stops the compiler from hoisting a pass out of the pass loop.
std::string StreamReadBody(int64_t stream_bytes) {
  std::ostringstream s;
  s << "static const int64_t kVectors = " << stream_bytes << "LL / (int64_t)sizeof(MKV);\n"
    << R"(static float* g_buffer = nullptr;

static void split(int64_t n, int t, int nt, int64_t* lo, int64_t* hi) {
  *lo = n * t / nt;
  *hi = n * (t + 1) / nt;
}

extern "C" void mk_kernel(void** buffers) {
  const int64_t passes = *static_cast<const int64_t*>(buffers[0]);
  double* out = static_cast<double*>(buffers[1]);
  if (g_buffer == nullptr) {
    g_buffer = static_cast<float*>(aligned_alloc(64, (size_t)kVectors * sizeof(MKV)));
    if (g_buffer == nullptr) {
      out[0] = 0;
      out[1] = -1;  // the host reports an allocation failure
      return;
    }
#pragma omp parallel num_threads(omp_get_num_procs())
    {
      int64_t lo, hi;
      split(kVectors, omp_get_thread_num(), omp_get_num_threads(), &lo, &hi);
      for (int64_t i = lo * MKV_LANES; i < hi * MKV_LANES; ++i) {
        g_buffer[i] = 1e-3f * (float)(i & 1023);
      }
    }
  }
  double sink = 0;
  int threads = 0;
#pragma omp parallel num_threads(omp_get_num_procs()) reduction(+ : sink)
  {
#pragma omp single
    threads = omp_get_num_threads();
    int64_t lo, hi;
    split(kVectors, omp_get_thread_num(), omp_get_num_threads(), &lo, &hi);
    MKV s0 = MKV_SET1(0), s1 = MKV_SET1(0), s2 = MKV_SET1(0), s3 = MKV_SET1(0);
    for (int64_t p = 0; p < passes; ++p) {
      const float* v = g_buffer + lo * MKV_LANES;
      int64_t n = hi - lo, i = 0;
      for (; i + 4 <= n; i += 4) {
        s0 = MKV_ADD(s0, MKV_LOAD(v + (i + 0) * MKV_LANES));
        s1 = MKV_ADD(s1, MKV_LOAD(v + (i + 1) * MKV_LANES));
        s2 = MKV_ADD(s2, MKV_LOAD(v + (i + 2) * MKV_LANES));
        s3 = MKV_ADD(s3, MKV_LOAD(v + (i + 3) * MKV_LANES));
      }
      for (; i < n; ++i) s0 = MKV_ADD(s0, MKV_LOAD(v + i * MKV_LANES));
      __asm__ __volatile__("" ::: "memory");
    }
    sink += mkv_sum(MKV_ADD(MKV_ADD(s0, s1), MKV_ADD(s2, s3)));
  }
  out[0] = sink;
  out[1] = threads;
}
)";
  return s.str();
}

double Min(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

Status CheckRun(const ProbeKernelRun& run, ProbeKernelKind kind) {
  std::string name = ProbeKernelName(kind);
  if (run.threads == -1) return IoError("probe " + name + ": could not allocate its buffer");
  if (run.threads == -2) return Unimplemented("probe " + name + ": the OS refused the AMX tile state");
  if (run.threads < 1) {
    return Internal("probe " + name + " reported " + std::to_string(run.threads) + " threads");
  }
  if (run.times_s.empty()) return Internal("probe " + name + " returned no timings");
  for (double t : run.times_s) {
    if (!(t > 0) || !std::isfinite(t)) {
      return Internal("probe " + name + " returned a non-positive or non-finite time");
    }
  }
  return Status::Ok();
}

// Grows the work per call until one call takes a measurable fraction of the target duration,
// then scales it to the target: the rate is work / time, so the work only needs to dwarf the
// fixed costs of a call (thread wake-up, the timer).
Result<ProbeMeasurement> MeasureKernel(ProbeKernelKind kind, const Target& host,
                                       ProbeKernelRunner& runner, const ProbeOptions& options,
                                       int64_t stream_bytes) {
  MK_ASSIGN_OR_RETURN(std::string source, ProbeKernelSource(kind, host, options, stream_bytes));
  const std::vector<std::string> flags = ProbeKernelFlags();
  const double calibrated_floor = options.seconds_per_call / 8;
  int64_t units = kind == ProbeKernelKind::kStreamRead ? 1 : 1024;
  double seconds = 0;
  for (int step = 0;; ++step) {
    MK_ASSIGN_OR_RETURN(ProbeKernelRun run,
                        runner.Run(source, flags, units, /*warmup=*/1, /*repetitions=*/1,
                                   options.timeout_s));
    MK_RETURN_IF_ERROR(CheckRun(run, kind));
    seconds = Min(run.times_s);
    if (seconds >= calibrated_floor || step >= 16 || units >= kMaxUnits) break;
    double grow = std::clamp(1.5 * calibrated_floor / seconds, 2.0, 64.0);
    units = std::min<int64_t>(kMaxUnits, static_cast<int64_t>(units * grow));
  }
  double scaled = std::round(units * options.seconds_per_call / seconds);
  units = std::clamp<int64_t>(static_cast<int64_t>(std::min(scaled, 1e15)), 1, kMaxUnits);
  MK_ASSIGN_OR_RETURN(ProbeKernelRun run,
                      runner.Run(source, flags, units, /*warmup=*/1, options.repetitions,
                                 options.timeout_s));
  MK_RETURN_IF_ERROR(CheckRun(run, kind));
  ProbeMeasurement m;
  m.kernel = ProbeKernelName(kind);
  m.units = units;
  m.threads = run.threads;
  m.repetitions = static_cast<int>(run.times_s.size());
  m.best_seconds = Min(run.times_s);
  m.median_seconds = Median(run.times_s);
  m.rate = ProbeWorkPerCall(kind, host, units, run.threads, options, stream_bytes) / m.best_seconds;
  if (!(m.rate > 0) || !std::isfinite(m.rate)) {
    return Internal("probe " + m.kernel + " produced a non-positive or non-finite rate");
  }
  return m;
}

}  // namespace

const char* ProbeKernelName(ProbeKernelKind kind) {
  switch (kind) {
    case ProbeKernelKind::kFmaF32: return "fma_f32";
    case ProbeKernelKind::kDotBf16: return "dot_bf16";
    case ProbeKernelKind::kStreamRead: return "stream_read";
    case ProbeKernelKind::kAmxBf16: return "amx_bf16";
    case ProbeKernelKind::kAmxBf16Fed: return "amx_bf16_fed";
  }
  return "unknown";
}

ProbeOptions ProbeOptions::Quick() {
  ProbeOptions o;
  o.seconds_per_call = 0.005;
  o.repetitions = 2;
  o.stream_bytes = 4 << 20;
  o.timeout_s = 30;
  o.quick = true;
  return o;
}

int64_t StreamBufferBytes(const Target& host, const ProbeOptions& options) {
  int64_t bytes = options.stream_bytes;
  if (bytes <= 0) {
    bytes = std::clamp<int64_t>(4 * std::max<int64_t>(host.l3_bytes, 0), int64_t{256} << 20,
                                int64_t{1} << 30);
  }
  // Whole vectors of 64 bytes, at least one per thread's unrolled step.
  return std::max<int64_t>(4096, bytes / 4096 * 4096);
}

Result<std::string> ProbeKernelSource(ProbeKernelKind kind, const Target& host,
                                      const ProbeOptions& options, int64_t stream_bytes) {
  if (!UsesAvx512(host) && !(host.Has("avx2") && host.Has("fma"))) {
    return Unimplemented("machine probe needs AVX-512 or AVX2+FMA; this CPU has neither");
  }
  if (options.accumulators < 1 || options.accumulators > 24) {
    return InvalidArgument("probe accumulators must be in [1, 24] (32 vector registers)");
  }
  std::string text = "// maxkernel machine probe: " + std::string(ProbeKernelName(kind)) +
                     " (generated; docs/PROFILING.md)\n" + VectorPrelude(host) + kCommonHead;
  switch (kind) {
    case ProbeKernelKind::kFmaF32:
      return text + FmaF32Body(options.accumulators);
    case ProbeKernelKind::kDotBf16:
      if (!host.Has("avx512_bf16") || !UsesAvx512(host)) {
        return Unimplemented("bf16 probe needs avx512_bf16, which this CPU lacks");
      }
      return text + DotBf16Body(options.accumulators);
    case ProbeKernelKind::kStreamRead:
      if (stream_bytes < 4096) return InvalidArgument("probe stream buffer under 4 KiB");
      return text + StreamReadBody(stream_bytes);
    case ProbeKernelKind::kAmxBf16:
      if (!HasAmx(host)) return Unimplemented("AMX probe needs amx_tile and amx_bf16");
      return text + AmxBf16Body();
    case ProbeKernelKind::kAmxBf16Fed:
      if (!HasAmx(host)) return Unimplemented("AMX probe needs amx_tile and amx_bf16");
      return text + AmxBf16FedBody();
  }
  return InvalidArgument("unknown probe kernel");
}

std::vector<std::string> ProbeKernelFlags() { return {"-fopenmp"}; }

double ProbeWorkPerCall(ProbeKernelKind kind, const Target& host, int64_t units, int threads,
                        const ProbeOptions& options, int64_t stream_bytes) {
  const double per_thread_trips = static_cast<double>(units) * options.accumulators;
  switch (kind) {
    case ProbeKernelKind::kFmaF32:
      return per_thread_trips * threads * LanesF32(host) * 2.0;
    case ProbeKernelKind::kDotBf16:
      return per_thread_trips * threads * 64.0;  // 16 lanes x 2 pairs x (mul + add)
    case ProbeKernelKind::kStreamRead:
      // The threads split one buffer: the bytes read do not depend on their number.
      return static_cast<double>(units) * static_cast<double>(stream_bytes);
    case ProbeKernelKind::kAmxBf16:
      // 4 tdpbf16ps per trip, each 16 x 16 outputs x 32 products x (mul + add).
      return static_cast<double>(units) * threads * 4 * 16384.0;
    case ProbeKernelKind::kAmxBf16Fed:
      // Per trip every B sliver against every A sliver, kAmxFedKc / 32 steps of 4 tdpbf16ps.
      return static_cast<double>(units) * threads * kAmxFedSlivers * kAmxFedSlivers *
             (kAmxFedKc / 32) * 4 * 16384.0;
  }
  return 0;
}

Result<MachineProbeResult> RunMachineProbe(const Target& host, ProbeKernelRunner& runner,
                                           const ProbeOptions& options) {
  if (options.repetitions < 1) return InvalidArgument("probe repetitions must be >= 1");
  if (!(options.seconds_per_call > 0) || !(options.timeout_s > 0)) {
    return InvalidArgument("probe durations must be positive");
  }
  MachineProbeResult result;
  result.cpu_model = host.model;
  result.cores = host.cores;
  result.compiler = runner.CompilerIdentity();
  result.quick = options.quick;
  result.stream_bytes = StreamBufferBytes(host, options);
  result.isa_level = host.isa_level;
  result.boot_id = CurrentBootId();

  MK_ASSIGN_OR_RETURN(ProbeMeasurement f32,
                      MeasureKernel(ProbeKernelKind::kFmaF32, host, runner, options, 0));
  result.peak_flops_f32 = f32.rate;
  result.threads = f32.threads;
  result.measurements.push_back(f32);
  if (!UsesAvx512(host)) result.notes.push_back("f32: AVX2 (256-bit) FMA; no avx512f");

  if (host.Has("avx512_bf16") && UsesAvx512(host)) {
    MK_ASSIGN_OR_RETURN(ProbeMeasurement bf16,
                        MeasureKernel(ProbeKernelKind::kDotBf16, host, runner, options, 0));
    result.peak_flops_bf16 = bf16.rate;
    result.measurements.push_back(bf16);
    // Tiles are what the bf16 GEMM uses where they exist: their rate is the bf16 peak. A
    // refused or failed tile probe leaves the vdpbf16ps rate and says why.
    if (HasAmx(host)) {
      auto amx = MeasureKernel(ProbeKernelKind::kAmxBf16, host, runner, options, 0);
      if (amx.ok()) {
        result.peak_flops_bf16 = std::max(bf16.rate, amx->rate);
        result.measurements.push_back(*amx);
        result.notes.push_back("bf16: peak from AMX tiles (amx_bf16)");
        // What a GEMM's tile loop sustains from the caches: recorded beside the peak, not
        // in it (the roofline keeps the instruction's rate).
        auto fed = MeasureKernel(ProbeKernelKind::kAmxBf16Fed, host, runner, options, 0);
        if (fed.ok()) {
          result.measurements.push_back(*fed);
        } else {
          result.notes.push_back("bf16: AMX fed from the caches not measured (" +
                                 fed.status().message() + ")");
        }
      } else {
        result.notes.push_back("bf16: AMX not measured (" + amx.status().message() + ")");
      }
    }
  } else {
    result.notes.push_back("bf16: absent (no avx512_bf16 instruction)");
  }

  MK_ASSIGN_OR_RETURN(ProbeMeasurement stream,
                      MeasureKernel(ProbeKernelKind::kStreamRead, host, runner, options,
                                    result.stream_bytes));
  result.bandwidth_bytes_per_s = stream.rate;
  result.measurements.push_back(stream);
  if (result.stream_bytes < 2 * host.l3_bytes) {
    result.notes.push_back("stream buffer (" + std::to_string(result.stream_bytes >> 20) +
                           " MiB) is not much larger than the L3: bandwidth is a cache's");
  }
  return result;
}

Target WithMeasuredRates(Target host, double peak_flops_f32, std::optional<double> peak_flops_bf16,
                         double bandwidth_bytes_per_s) {
  host.peak_flops_f32 = peak_flops_f32;
  host.peak_flops_bf16 = peak_flops_bf16.value_or(peak_flops_f32);
  host.bandwidth_bytes_per_s = bandwidth_bytes_per_s;
  host.rates_measured = true;
  return host;
}

json ToJson(const MachineProbeResult& r) {
  json measurements = json::array();
  for (const ProbeMeasurement& m : r.measurements) {
    measurements.push_back({{"kernel", m.kernel},
                            {"rate", m.rate},
                            {"best_seconds", m.best_seconds},
                            {"median_seconds", m.median_seconds},
                            {"units", m.units},
                            {"threads", m.threads},
                            {"repetitions", m.repetitions}});
  }
  json j = {{"cpu_model", r.cpu_model},
            {"cores", r.cores},
            {"threads", r.threads},
            {"peak_flops_f32", r.peak_flops_f32},
            {"peak_flops_bf16", nullptr},
            {"bandwidth_bytes_per_s", r.bandwidth_bytes_per_s},
            {"stream_bytes", r.stream_bytes},
            {"compiler", r.compiler},
            {"measurements", measurements},
            {"notes", r.notes},
            {"quick", r.quick}};
  if (r.peak_flops_bf16.has_value()) j["peak_flops_bf16"] = *r.peak_flops_bf16;
  j["isa_level"] = r.isa_level;
  j["boot_id"] = r.boot_id;
  j["busy_cores_before"] = r.busy_cores_before ? json(*r.busy_cores_before) : json(nullptr);
  j["busy_cores_after"] = r.busy_cores_after ? json(*r.busy_cores_after) : json(nullptr);
  return j;
}

std::string CurrentBootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

Result<MachineProbeResult> MachineProbeResultFromJson(const json& j) {
  // nlohmann's typed accessors throw on a type mismatch; bad stored JSON must be an error value.
  try {
    if (!j.is_object()) return InvalidArgument("machine probe result is not a JSON object");
    MachineProbeResult r;
    r.cpu_model = j.at("cpu_model").get<std::string>();
    r.cores = j.at("cores").get<int>();
    r.threads = j.value("threads", 0);
    r.peak_flops_f32 = j.at("peak_flops_f32").get<double>();
    if (j.contains("peak_flops_bf16") && !j["peak_flops_bf16"].is_null()) {
      r.peak_flops_bf16 = j["peak_flops_bf16"].get<double>();
    }
    r.bandwidth_bytes_per_s = j.at("bandwidth_bytes_per_s").get<double>();
    r.stream_bytes = j.value("stream_bytes", int64_t{0});
    r.compiler = j.value("compiler", std::string());
    if (j.contains("measurements")) {
      for (const json& m : j.at("measurements")) {
        ProbeMeasurement pm;
        pm.kernel = m.at("kernel").get<std::string>();
        pm.rate = m.at("rate").get<double>();
        pm.best_seconds = m.value("best_seconds", 0.0);
        pm.median_seconds = m.value("median_seconds", 0.0);
        pm.units = m.value("units", int64_t{0});
        pm.threads = m.value("threads", 0);
        pm.repetitions = m.value("repetitions", 0);
        r.measurements.push_back(pm);
      }
    }
    if (j.contains("notes")) r.notes = j.at("notes").get<std::vector<std::string>>();
    r.quick = j.value("quick", false);
    r.isa_level = j.value("isa_level", std::string());
    r.boot_id = j.value("boot_id", std::string());
    for (auto [key, field] : {std::pair{"busy_cores_before", &r.busy_cores_before},
                              std::pair{"busy_cores_after", &r.busy_cores_after}}) {
      if (j.contains(key) && j[key].is_number()) *field = j[key].get<double>();
    }
    return r;
  } catch (const json::exception& e) {
    return InvalidArgument(std::string("bad machine probe JSON: ") + e.what());
  }
}

}  // namespace mk::target
