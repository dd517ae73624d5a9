// Micro-benchmark: mk_cpu_rt.h's vectorizable float math (the loops GCC auto-vectorizes in
// generated kernels) against SLEEF's vector functions (1.0-ulp variants, 8 and 16 lanes) and
// glibc's scalar float functions. Not a test; docs/VECTOR_MATH.md has the table and the decision.
// Build and run with bench/vector_math/run.sh (needs libsleef-dev).
//
// Throughput: ns per element over an L2-resident array of inputs spread over each function's
// interesting range, best of `rounds` interleaved rounds (each round times every variant once).
// Accuracy: max ulp error against double over every 127th float bit pattern (as
// vector_math_probe.inc measures it).
#include <sleef.h>

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "codegen/cpu/mk_cpu_rt.h"

namespace {

constexpr long kN = 1 << 15;  // 128 KiB of inputs, 128 KiB of outputs

using Loop = void (*)(const float*, float*, long);

#define OURS(name, expr) \
  __attribute__((noinline)) void name(const float* in, float* out, long n) { \
    for (long i = 0; i < n; ++i) out[i] = expr;                              \
  }
OURS(ours_exp, mkrt::vexp(in[i]))
OURS(ours_expm1, mkrt::vexpm1(in[i]))
OURS(ours_log, mkrt::vlog(in[i]))
OURS(ours_log1p, mkrt::vlog1p(in[i]))
OURS(ours_tanh, mkrt::vtanh(in[i]))
OURS(ours_erf, mkrt::verf(in[i]))
OURS(ours_logistic, mkrt::logistic(in[i]))
// glibc, scalar: what the generated loops called before.
OURS(libm_exp, std::exp(in[i]))
OURS(libm_expm1, std::expm1(in[i]))
OURS(libm_log, std::log(in[i]))
OURS(libm_log1p, std::log1p(in[i]))
OURS(libm_tanh, std::tanh(in[i]))
OURS(libm_erf, std::erf(in[i]))
OURS(libm_logistic, 1.0f / (1.0f + std::exp(-in[i])))

// SLEEF: n is a multiple of 16 here.
#define SLEEF16(name, fn) \
  __attribute__((noinline)) void name(const float* in, float* out, long n) { \
    for (long i = 0; i < n; i += 16) _mm512_storeu_ps(out + i, fn(_mm512_loadu_ps(in + i))); \
  }
#define SLEEF8(name, fn) \
  __attribute__((noinline)) void name(const float* in, float* out, long n) { \
    for (long i = 0; i < n; i += 8) _mm256_storeu_ps(out + i, fn(_mm256_loadu_ps(in + i))); \
  }
SLEEF16(sleef16_exp, Sleef_expf16_u10avx512f)
SLEEF16(sleef16_expm1, Sleef_expm1f16_u10avx512f)
SLEEF16(sleef16_log, Sleef_logf16_u10avx512f)
SLEEF16(sleef16_log1p, Sleef_log1pf16_u10avx512f)
SLEEF16(sleef16_tanh, Sleef_tanhf16_u10avx512f)
SLEEF16(sleef16_erf, Sleef_erff16_u10avx512f)
__m512 sleef16_logistic_v(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.0f);
  return _mm512_div_ps(one, _mm512_add_ps(one, Sleef_expf16_u10avx512f(_mm512_sub_ps(_mm512_setzero_ps(), x))));
}
SLEEF16(sleef16_logistic, sleef16_logistic_v)
SLEEF8(sleef8_exp, Sleef_expf8_u10avx2)
SLEEF8(sleef8_expm1, Sleef_expm1f8_u10avx2)
SLEEF8(sleef8_log, Sleef_logf8_u10avx2)
SLEEF8(sleef8_log1p, Sleef_log1pf8_u10avx2)
SLEEF8(sleef8_tanh, Sleef_tanhf8_u10avx2)
SLEEF8(sleef8_erf, Sleef_erff8_u10avx2)
__m256 sleef8_logistic_v(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f);
  return _mm256_div_ps(one, _mm256_add_ps(one, Sleef_expf8_u10avx2(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}
SLEEF8(sleef8_logistic, sleef8_logistic_v)

double ref_logistic(double x) {
  return x >= 0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x));
}

struct Fn {
  const char* name;
  float lo, hi;  // timing inputs: uniform in [lo, hi]
  double (*ref)(double);
  Loop ours, sleef16, sleef8, libm;
};
const Fn kFns[] = {
    {"exp", -20, 20, [](double x) { return std::exp(x); }, ours_exp, sleef16_exp, sleef8_exp, libm_exp},
    {"expm1", -5, 5, [](double x) { return std::expm1(x); }, ours_expm1, sleef16_expm1, sleef8_expm1, libm_expm1},
    {"log", 1e-3f, 1e3f, [](double x) { return std::log(x); }, ours_log, sleef16_log, sleef8_log, libm_log},
    {"log1p", -0.9f, 10, [](double x) { return std::log1p(x); }, ours_log1p, sleef16_log1p, sleef8_log1p, libm_log1p},
    {"tanh", -5, 5, [](double x) { return std::tanh(x); }, ours_tanh, sleef16_tanh, sleef8_tanh, libm_tanh},
    {"erf", -4, 4, [](double x) { return std::erf(x); }, ours_erf, sleef16_erf, sleef8_erf, libm_erf},
    {"logistic", -20, 20, ref_logistic, ours_logistic, sleef16_logistic, sleef8_logistic, libm_logistic},
};

double ulp_error(float got, double want) {
  if (std::isnan(want)) return std::isnan(got) ? 0 : INFINITY;
  if (std::isnan(got)) return INFINITY;
  if (std::fabs(want) >= double(FLT_MAX) + std::ldexp(1.0, 103)) {
    return (std::isinf(got) && (got > 0) == (want > 0)) ? 0 : INFINITY;
  }
  const double g = std::isinf(got) ? std::copysign(std::ldexp(1.0, 128), got) : got;
  const double a = std::fabs(want);
  int e;
  std::frexp(a, &e);
  const double ulp = a < std::ldexp(1.0, -126) ? std::ldexp(1.0, -149) : std::ldexp(1.0, e - 24);
  return std::fabs(g - want) / ulp;
}

double max_ulp(Loop f, double (*ref)(double), const std::vector<float>& sweep) {
  std::vector<float> out(sweep.size());
  f(sweep.data(), out.data(), static_cast<long>(sweep.size()));
  double worst = 0;
  for (size_t i = 0; i < sweep.size(); ++i) worst = std::max(worst, ulp_error(out[i], ref(sweep[i])));
  return worst;
}

double ns_per_element(Loop f, const float* in, float* out) {
  const int reps = 20;
  auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < reps; ++r) {
    f(in, out, kN);
    asm volatile("" ::"r"(out) : "memory");
  }
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / (reps * double(kN));
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 15;
  const char* label = argc > 2 ? argv[2] : "";
  std::vector<float> sweep;
  for (unsigned long b = 0; b < (1ul << 32); b += 127) sweep.push_back(mkrt::u2f(static_cast<uint32_t>(b)));
  std::vector<float> in(kN), out(kN);
  if (argc <= 3) {  // a third argument: rows only (run.sh appends a second build's rows)
    std::printf("| function | ours ns/elt | SLEEF f16 (zmm) ns/elt | SLEEF f8 (ymm) ns/elt | glibc scalar ns/elt | ours max ulp | SLEEF f16 max ulp |\n");
    std::printf("|---|---|---|---|---|---|---|\n");
  }
  for (const Fn& fn : kFns) {
    unsigned s = 12345;
    for (long i = 0; i < kN; ++i) {
      s = s * 1664525u + 1013904223u;
      in[i] = fn.lo + (fn.hi - fn.lo) * static_cast<float>(s >> 8) * 0x1p-24f;
    }
    const Loop loops[4] = {fn.ours, fn.sleef16, fn.sleef8, fn.libm};
    double best[4] = {INFINITY, INFINITY, INFINITY, INFINITY};
    for (int r = 0; r < rounds; ++r) {
      for (int v = 0; v < 4; ++v) best[v] = std::min(best[v], ns_per_element(loops[v], in.data(), out.data()));
    }
    std::printf("| %s%s | %.3f | %.3f | %.3f | %.2f | %.2f | %.3g |\n", fn.name, label, best[0], best[1], best[2],
                best[3], max_ulp(fn.ours, fn.ref, sweep), max_ulp(fn.sleef16, fn.ref, sweep));
    std::fflush(stdout);
  }
}
