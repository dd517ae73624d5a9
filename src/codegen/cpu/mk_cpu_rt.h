// maxkernel CPU runtime support: scalar semantics every generated CPU kernel includes verbatim
// (the text of this file is embedded into the maxkernel binary and pasted at the top of each
// generated translation unit, so generated sources are self-contained). Semantics follow XLA:
// bf16/f16 compute in f32 and round to nearest even; integer arithmetic wraps; x/0 and shifts
// past the width have XLA's defined results; max/min propagate NaN.
// It is deliberately independent of the interpreter's code: the interpreter is the oracle these
// semantics are checked against.
#pragma once

// The interpreter computes a*b+c as two rounded operations; a fused multiply-add (which GCC
// forms by default under -march=native) would change the last bit of every dot, convolution and
// reduction, so contraction is off for the whole generated translation unit.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>
#ifdef _OPENMP
#include <omp.h>
#endif

namespace mkrt {

// ---- 16-bit floats ---------------------------------------------------------------------------
// Branch-free (selects, not early returns) so that loops converting whole rows vectorize; the
// results are bit-identical to the straightforward branchy forms.
constexpr uint32_t f2u(float f) { return __builtin_bit_cast(uint32_t, f); }
constexpr float u2f(uint32_t u) { return __builtin_bit_cast(float, u); }
constexpr uint64_t d2u(double d) { return __builtin_bit_cast(uint64_t, d); }
constexpr double u2d(uint64_t u) { return __builtin_bit_cast(double, u); }

constexpr float bf16_to_f32(uint16_t h) { return u2f(static_cast<uint32_t>(h) << 16); }
// Round to nearest even; a NaN stays a (quiet) NaN with its sign and top payload bits.
constexpr uint16_t f32_to_bf16(float f) {
  const uint32_t u = f2u(f);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t quiet = (u >> 16) | 0x40u;
  return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? quiet : rounded);
}
constexpr float round_bf16(float f) { return bf16_to_f32(f32_to_bf16(f)); }
// The bf16 bits of a value that is exactly a bf16 already (an HLO bf16 value: every one is
// rounded where it is computed): no second rounding, which vectorized bf16 stores paid for twice.
constexpr uint16_t bf16_bits(float exact) { return static_cast<uint16_t>(f2u(exact) >> 16); }

constexpr float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  const uint32_t special = sign | 0x7f800000u | (m << 13);                      // inf / NaN
  const uint32_t sub = sign | f2u(static_cast<float>(m) * 5.9604644775390625e-08f);  // m * 2^-24
  const uint32_t normal = sign | ((e + 112u) << 23) | (m << 13);
  return u2f(e == 0x1fu ? special : e == 0 ? sub : normal);
}
constexpr uint16_t f32_to_f16(float f) {
  const uint32_t u = f2u(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t a = u & 0x7fffffffu;
  // Subnormal in f16: a * 2^24 (exact, below 2^10) rounded to an integer, ties to even: adding
  // 2^23 makes the float's unit in the last place 1, so the addition itself rounds.
  const uint32_t sub = f2u(u2f(a) * 16777216.0f + 8388608.0f) - 0x4b000000u;
  const uint32_t normal = (a + 0x0fffu + ((a >> 13) & 1u) - 0x38000000u) >> 13;
  const uint32_t r = a > 0x7f800000u   ? 0x7e00u
                     : a >= 0x477ff000u ? 0x7c00u
                     : a < 0x38800000u  ? sub
                                        : normal;
  return static_cast<uint16_t>(sign | r);
}
constexpr float round_f16(float f) { return f16_to_f32(f32_to_f16(f)); }

// ---- integers: wrapping arithmetic without UB ------------------------------------------------
template <typename T> using U = std::make_unsigned_t<T>;
template <typename T> inline T wadd(T a, T b) { return static_cast<T>(static_cast<U<T>>(a) + static_cast<U<T>>(b)); }
template <typename T> inline T wsub(T a, T b) { return static_cast<T>(static_cast<U<T>>(a) - static_cast<U<T>>(b)); }
template <typename T> inline T wmul(T a, T b) {
  using W = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, U<T>>;
  return static_cast<T>(static_cast<W>(static_cast<U<T>>(a)) * static_cast<W>(static_cast<U<T>>(b)));
}
template <typename T> inline T wneg(T a) { return wsub<T>(T{0}, a); }
template <typename T> inline T iabs(T a) {
  if constexpr (std::is_signed_v<T>) return a < 0 ? wneg(a) : a; else return a;
}
template <typename T> inline T idiv(T a, T b) {
  if (b == 0) return std::is_signed_v<T> ? T(-1) : std::numeric_limits<T>::max();
  if constexpr (std::is_signed_v<T>) {
    if (a == std::numeric_limits<T>::min() && b == T(-1)) return a;
  }
  return static_cast<T>(a / b);
}
template <typename T> inline T irem(T a, T b) {
  if (b == 0) return a;
  if constexpr (std::is_signed_v<T>) {
    if (a == std::numeric_limits<T>::min() && b == T(-1)) return T(0);
  }
  return static_cast<T>(a % b);
}
template <typename T> inline T shl(T a, T b) {
  if (static_cast<U<T>>(b) >= sizeof(T) * 8) return T(0);
  return static_cast<T>(static_cast<U<T>>(a) << static_cast<U<T>>(b));
}
template <typename T> inline T shr_logical(T a, T b) {
  if (static_cast<U<T>>(b) >= sizeof(T) * 8) return T(0);
  return static_cast<T>(static_cast<U<T>>(a) >> static_cast<U<T>>(b));
}
template <typename T> inline T shr_arith(T a, T b) {
  using S = std::make_signed_t<T>;
  S sa = static_cast<S>(a);
  if (static_cast<U<T>>(b) >= sizeof(T) * 8) return static_cast<T>(sa < 0 ? S(-1) : S(0));
  return static_cast<T>(sa >> static_cast<U<T>>(b));
}
template <typename T> inline T ipow(T base, T exp) {
  if constexpr (std::is_signed_v<T>) {
    if (exp < 0) return base == 1 ? T(1) : base == -1 ? ((exp & 1) ? T(-1) : T(1)) : T(0);
  }
  T result = 1;
  U<T> e = static_cast<U<T>>(exp);
  while (e) {
    if (e & 1) result = wmul(result, base);
    base = wmul(base, base);
    e >>= 1;
  }
  return result;
}
template <typename T> inline T popcnt(T a) { return static_cast<T>(__builtin_popcountll(static_cast<uint64_t>(static_cast<U<T>>(a)))); }
template <typename T> inline T clz(T a) {
  uint64_t v = static_cast<uint64_t>(static_cast<U<T>>(a));
  int bits = static_cast<int>(sizeof(T) * 8);
  return static_cast<T>(v == 0 ? bits : __builtin_clzll(v) - (64 - bits));
}
template <typename T> inline T isign(T a) {
  if constexpr (std::is_signed_v<T>) return a > 0 ? T(1) : a < 0 ? T(-1) : T(0);
  else return a > 0 ? T(1) : T(0);
}

// ---- floats -----------------------------------------------------------------------------------
// Selects only, no short-circuit: GCC left the `||` form's loops scalar where the max was a
// lane accumulator (13p's fused row maximum: 16 scalar stores, then a stalled vector load).
template <typename F> inline F fmax_nan(F a, F b) {
  const F m = a > b ? a : b;
  const F bn = b != b ? b : m;
  return a != a ? a : bn;
}
template <typename F> inline F fmin_nan(F a, F b) {
  const F m = a < b ? a : b;
  const F bn = b != b ? b : m;
  return a != a ? a : bn;
}
template <typename F> inline F fsign(F a) { return a != a ? a : a > 0 ? F(1) : a < 0 ? F(-1) : a; }
template <typename F> inline F logistic(F a) { return F(1) / (F(1) + std::exp(-a)); }
template <typename F> inline F rsqrt(F a) { return F(1) / std::sqrt(a); }
template <typename F> inline F round_afz(F a) { return std::round(a); }
template <typename F> inline F round_even(F a) { return std::nearbyint(a); }

// ---- vectorizable float math ------------------------------------------------------------------
// exp, expm1, log, log1p, tanh, erf, logistic and tanh(softplus(x)) for float (the compute type
// of f32, bf16 and f16) written so that GCC vectorizes the loops that call them: straight-line
// code, a range reduction plus a polynomial, special inputs (NaN, +-inf, +-0, denormals,
// over/underflow) handled by selects instead of branches, no tables. libm's float functions are
// opaque calls that keep every loop containing one scalar. The double overloads are std::'s.
// Accuracy over the whole float range, checked by vector_math_test.cc against double: exp,
// expm1, log, log1p, logistic <= 2 ulp; tanh, erf <= 3 ulp; tanh_softplus <= 4 ulp (with FMA;
// without, logistic <= 2.5). The polynomial coefficients come from tools/fit_vector_math.py
// (a Remez-style fit; rerun it to change a degree or an interval). docs/VECTOR_MATH.md.
namespace vm {
// Explicit fused multiply-add where the target has one (the pragma above keeps the compiler from
// forming them on its own); a*b+c otherwise, which costs the polynomials a fraction of an ulp.
inline float fma(float a, float b, float c) {
#ifdef __FMA__
  return __builtin_fmaf(a, b, c);
#else
  return a * b + c;
#endif
}
inline float copysign_of(float magnitude, float sign_of) {
  return u2f(f2u(magnitude) | (f2u(sign_of) & 0x80000000u));
}
inline float abs(float x) { return u2f(f2u(x) & 0x7fffffffu); }
// c ? a : b on the bits. A plain ?: between computed values lets GCC sink the computation of the
// value used by only one arm into a branch, and under the default -ftrapping-math it then does
// not speculate the floating-point operations back out: the loop stays scalar ("control flow in
// loop"). With the select on the bits there is no branch to sink into.
inline float select(bool c, float a, float b) {
  const uint32_t m = 0u - static_cast<uint32_t>(c);
  return u2f((f2u(a) & m) | (f2u(b) & ~m));
}
// 2^k for -126 <= k <= 127.
inline float pow2(int32_t k) { return u2f(static_cast<uint32_t>(k + 127) << 23); }
// ln2 split so that k * kLn2Hi is exact for |k| < 2^15 (Cody and Waite).
constexpr float kLn2Hi = 0x1.63p-1f, kLn2Lo = -0x1.bd0106p-13f;
constexpr float kLog2e = 0x1.715476p+0f;
// Adding 1.5 * 2^23 rounds a float of magnitude < 2^22 to an integer, which then sits in the low
// mantissa bits: the integer is read from the bits, with no float -> int conversion.
constexpr float kRoundMagic = 0x1.8p23f;
// x = k ln2 + r, |r| <= ln2/2 (plus rounding): returns r, sets k. |x| < 2^21.
inline float reduce_ln2(float x, int32_t& k) {
  const float t = fma(x, kLog2e, kRoundMagic);
  const float kf = t - kRoundMagic;
  k = static_cast<int32_t>(f2u(t) - f2u(kRoundMagic));
  return fma(-kf, kLn2Lo, fma(-kf, kLn2Hi, x));
}
// log(2^e (1 + f)) for f in [-1/3, 1/3].
inline float log_reduced(float f, int32_t e) {
  float q = -0x1.07e5f4p-3f;
  q = fma(q, f, 0x1.1e73a0p-3f);
  q = fma(q, f, -0x1.f32078p-4f);
  q = fma(q, f, 0x1.1ed424p-3f);
  q = fma(q, f, -0x1.559d36p-3f);
  q = fma(q, f, 0x1.99d05ep-3f);
  q = fma(q, f, -0x1.fffef4p-3f);
  q = fma(q, f, 0x1.555506p-2f);
  q = fma(q, f, -0x1.p-1f);  // log(1 + f) = f + f^2 q(f)
  const float ef = static_cast<float>(e);
  return fma(ef, kLn2Hi, f + fma(f * f, q, ef * kLn2Lo));  // e ln2hi is exact
}
// Splits a positive normal float x = 2^e m, m in [2/3, 4/3): returns m - 1 (exact), sets e.
inline float split_log(float x, int32_t& e) {
  const uint32_t ix = f2u(x) - 0x3f2aaaabu;  // bits of 2/3
  e = static_cast<int32_t>(ix) >> 23;
  return u2f((ix & 0x007fffffu) + 0x3f2aaaabu) - 1.0f;
}
// e^r for |r| <= ln2/2 (plus rounding): 1 + r + r^2 q(r).
inline float exp_reduced(float r) {
  float q = 0x1.6a5198p-10f;
  q = fma(q, r, 0x1.12397cp-7f);
  q = fma(q, r, 0x1.5558acp-5f);
  q = fma(q, r, 0x1.555492p-3f);
  q = fma(q, r, 0x1.fffffcp-2f);
  return 1.0f + fma(r * r, q, r);
}
// e^x for x >= -87.3, where the result is normal (or overflows to inf): vexp without its
// subnormal path, a third cheaper. For exps whose argument cannot be that small (tanh's e^2|x|,
// erf's tail); x below is clamped to -87.3 (2^-126), NaN passes.
inline float exp_normal(float x) {
  const float xc = x > 88.8f ? 88.8f : (x < -87.3f ? -87.3f : x);
  int32_t k;
  const float r = reduce_ln2(xc, k);
  const int32_t k1 = k >> 1;
  return exp_reduced(r) * pow2(k1) * pow2(k - k1);
}
}  // namespace vm

inline float vexp(float x) {
  // exp(x) overflows above 88.72 and rounds to 0 below -103.97; the clamp keeps k in [-150, 128]
  // and lets NaN through.
  const float xc = x > 88.8f ? 88.8f : (x < -104.0f ? -104.0f : x);
  int32_t k;
  const float r = vm::reduce_ln2(xc, k);
  const float p = vm::exp_reduced(r);
  // k >= -126: 2^k in two factors; the first product is exact, the second rounds once (to
  // infinity where the result is one). Lanes with k <= -127 take -125 here, a normal product
  // that the select below discards.
  const int32_t kn = k < -126 ? -125 : k;
  const int32_t k1 = kn >> 1;
  const float normal = p * vm::pow2(k1) * vm::pow2(kn - k1);
  // k <= -127, a subnormal (or zero) result: its bits, as an integer, are p * 2^(k + 149)
  // rounded to nearest (even), which is < 2^23 and computed in normal floats. A multiply whose
  // result is subnormal costs a microcode assist on Intel cores: exp over inputs in
  // [-104, -87.3] (a log-softmax over a large vocabulary has many) was 12x slower per element.
  const int32_t ks = k > -127 ? -127 : k;
  const float m = vm::fma(p, vm::pow2(ks + 149), 0x1p23f);  // the integer in the low bits
  const float sub = u2f(f2u(m) - f2u(0x1p23f));
  // For NaN, k is meaningless: the normal path (NaN) is kept.
  const uint32_t use_sub = (k <= -127 ? 0xffffffffu : 0u) & (xc == xc ? 0xffffffffu : 0u);
  return u2f((f2u(sub) & use_sub) | (f2u(normal) & ~use_sub));
}
inline double vexp(double x) { return std::exp(x); }

inline float vexpm1(float x) {
  // expm1 rounds to -1 below -17.4; above 88.72 it overflows.
  const float xc = x > 88.8f ? 88.8f : (x < -25.0f ? -25.0f : x);
  int32_t k;
  const float r = vm::reduce_ln2(xc, k);
  float q = 0x1.9e72dap-13f;
  q = vm::fma(q, r, 0x1.6d3a36p-10f);
  q = vm::fma(q, r, 0x1.1112d8p-7f);
  q = vm::fma(q, r, 0x1.5554f8p-5f);
  q = vm::fma(q, r, 0x1.555554p-3f);
  q = vm::fma(q, r, 0x1.p-1f);
  const float pm = vm::fma(r * r, q, r);  // e^r - 1
  // expm1(x) = 2^k pm + (2^k - 1), one rounding (2^k pm is exact). 2^128 is not a float: k = 128
  // uses 2^127 (2 pm + 1) + (2^127 - 1).
  // (Selects feeding floating-point arithmetic are written as arithmetic too: GCC would otherwise
  // branch on them to fold the constant arm, the problem vm::select avoids.)
  const bool top = k == 128;
  const float s = vm::pow2(k - static_cast<int32_t>(top));
  const float pmx = vm::select(top, pm + pm + 1.0f, pm);
  const float res = vm::fma(s, pmx, s - 1.0f);
  return vm::select(x == 0.0f, x, res);  // keeps -0
}
inline double vexpm1(double x) { return std::expm1(x); }

inline float vlog(float x) {
  // Denormals are scaled up first (0 and negatives are replaced below).
  const bool sub = x < 0x1p-126f;
  int32_t e;
  const float f = vm::split_log(vm::select(sub, x * 0x1p23f, x), e);
  const float res = vm::log_reduced(f, e - 23 * static_cast<int32_t>(sub));  // see vexpm1
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float special = vm::select(x < 0.0f, nan, vm::select(x == 0.0f, -inf, x));  // x: NaN, inf
  return vm::select((x != x) | (x <= 0.0f) | (x == inf), special, res);
}
inline double vlog(double x) { return std::log(x); }

inline float vlog1p(float x) {
  // 1 + x = u + c exactly (c is the rounding error of u = 1 + x, exact for |x| < 2^24); the
  // reduction of u to 2^e (1 + f) adds c 2^-e to f, so log1p(x) = log(1 + x) for small x.
  const float u = 1.0f + x;
  const float c = x - (u - 1.0f);
  int32_t e;
  float f = vm::split_log(u, e);
  f = vm::fma(c, vm::pow2(-(e < 126 ? e : 126)), f);
  const float res = vm::log_reduced(f, e);
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // x itself for NaN, inf and +-0 (keeps -0).
  const float special = vm::select(x < -1.0f, nan, vm::select(x == -1.0f, -inf, x));
  return vm::select((x != x) | (x <= -1.0f) | (x == 0.0f) | (x == inf), special, res);
}
inline double vlog1p(double x) { return std::log1p(x); }

inline float vtanh(float x) {
  const float a = vm::abs(x);
  // |x| < 0.625: tanh(a) = a + a^3 P(a^2).
  const float a2 = a * a;
  float p = -0x1.753152p-8f;
  p = vm::fma(p, a2, 0x1.51ffcep-6f);
  p = vm::fma(p, a2, -0x1.b8367cp-5f);
  p = vm::fma(p, a2, 0x1.1106fap-3f);
  p = vm::fma(p, a2, -0x1.555532p-2f);
  const float small = vm::fma(a * a2, p, a);
  // Otherwise tanh(a) = 1 - 2 / (e^2a + 1) (>= 0.55, so the subtraction loses nothing); e^2a
  // overflows to inf past 44, giving 1.
  const float large = 1.0f - 2.0f / (vm::exp_normal(a + a) + 1.0f);
  return vm::copysign_of(vm::select(a < 0.625f, small, large), x);
}
inline double vtanh(double x) { return std::tanh(x); }

inline float verf(float x) {
  const float a = vm::abs(x);
  // |x| < 0.921875: erf(a) = a P(a^2), the constant 2/sqrt(pi) as a float hi + lo pair.
  const float a2 = a * a;
  float p = 0x1.5e8b66p-14f;
  p = vm::fma(p, a2, -0x1.aad8b0p-11f);
  p = vm::fma(p, a2, 0x1.54dc9ep-8f);
  p = vm::fma(p, a2, -0x1.b8113cp-6f);
  p = vm::fma(p, a2, 0x1.ce2e34p-4f);
  p = vm::fma(p, a2, -0x1.812744p-2f);
  p = vm::fma(p, a2, -0x1.f7ac92p-25f);
  const float small = vm::fma(a, 0x1.20dd76p+0f, a * p);
  // Up to 3.9375: erf(a) = 1 - exp(-a^2 + h(a)), h = log(erfc(a)) + a^2 in t = a - 2.4375.
  // Beyond, erfc(a) < 2^-25 and erf rounds to 1 (the clamp also keeps NaN).
  const float ac = a > 3.9375f ? 3.9375f : a;
  const float t = ac - 2.4375f;
  float h = -0x1.63d9cep-16f;
  h = vm::fma(h, t, 0x1.35c44ap-14f);
  h = vm::fma(h, t, -0x1.d877c6p-12f);
  h = vm::fma(h, t, 0x1.2ecf88p-9f);
  h = vm::fma(h, t, -0x1.75e0a2p-7f);
  h = vm::fma(h, t, 0x1.dcbc9ap-5f);
  h = vm::fma(h, t, -0x1.707592p-2f);
  h = vm::fma(h, t, -0x1.88d854p+0f);
  const float large = 1.0f - vm::exp_normal(vm::fma(-ac, ac, h));  // argument >= -16
  return vm::copysign_of(vm::select(a < 0.921875f, small, large), x);
}
inline double verf(double x) { return std::erf(x); }

// 1 / (1 + e^-x) = e^x / (1 + e^x): with e = e^-|x| <= 1 nothing overflows, and a very negative x
// gives the (denormal) e^x rather than 1 / inf. The quotient is corrected once for the rounding
// of 1 + e and of the division, so the error is essentially that of exp.
inline float logistic(float x) {
  const float e = vexp(-vm::abs(x));
  const float d = 1.0f + e, dl = e - (d - 1.0f);  // d + dl = 1 + e exactly
  const float num = vm::select(x >= 0.0f, 1.0f, e);
  const float inv = 1.0f / d;
  const float q = num * inv;
  const float r = vm::fma(-q, d, num) - q * dl;  // num - q (1 + e)
  return vm::fma(r, inv, q);
}

// tanh(softplus(x)) = tanh(log(1 + e^x)), mish's factor, as one exp and one division:
// with u = e^x, tanh(log(1 + u)) = ((1 + u)^2 - 1) / ((1 + u)^2 + 1) = n / (n + 2), n = u (u + 2).
// The chain it replaces (max, abs, exp, log1p, add, tanh) costs an exp, a log1p and a tanh's exp
// and division. Above 20 the result is 1.0f (tanh(20) rounds to it) and n would overflow near 44,
// so x is clamped there (NaN passes the clamp); -inf gives 0, +inf 1.
inline float tanh_softplus(float x) {
  const float u = vexp(x > 20.0f ? 20.0f : x);
  const float n = u * (u + 2.0f);
  return n / (n + 2.0f);
}
inline double tanh_softplus(double x) { return std::tanh(std::log1p(std::exp(x))); }

// XLA's total order for floats: -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN.
inline int64_t total_key(double d) {
  int64_t i; std::memcpy(&i, &d, 8);
  return i < 0 ? -(i & std::numeric_limits<int64_t>::max()) - 1 : i;
}
inline int64_t total_key(float f) {
  int32_t i; std::memcpy(&i, &f, 4);
  return i < 0 ? -static_cast<int64_t>(i & 0x7fffffff) - 1 : i;
}

// Float -> integer as XLA converts: NaN -> 0, saturate, truncate toward zero.
template <typename I, typename F> inline I f2i(F x) {
  if (x != x) return I(0);
  constexpr double lo = static_cast<double>(std::numeric_limits<I>::min());
  constexpr double hi = static_cast<double>(std::numeric_limits<I>::max());
  double d = static_cast<double>(x);
  if (d <= lo) return std::numeric_limits<I>::min();
  if (d >= hi) return std::numeric_limits<I>::max();
  return static_cast<I>(d);
}

// reduce-precision: round `x` to a float with `ebits` exponent and `mbits` mantissa bits.
inline float reduce_precision(float x, int ebits, int mbits) {
  uint32_t u = f2u(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return x;
  if (mbits < 23) {
    uint32_t shift = 23 - mbits;
    uint32_t half = (1u << (shift - 1)) - 1;
    u += half + ((u >> shift) & 1u);
    u &= ~((1u << shift) - 1);
  }
  if (ebits < 8) {
    int32_t max_exp = (1 << (ebits - 1)) - 1;
    int32_t min_exp = 1 - max_exp;
    int32_t e = static_cast<int32_t>((u >> 23) & 0xff) - 127;
    uint32_t sign = u & 0x80000000u;
    if (e > max_exp) u = sign | 0x7f800000u;
    else if (e < min_exp) u = sign;
  }
  return u2f(u);
}


// ---- indices ----------------------------------------------------------------------------------
// Any integer index value as int64_t; unsigned values past INT64_MAX saturate (then clamp).
template <typename T> inline int64_t index_of(T v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? 1 : 0;
  } else if constexpr (std::is_unsigned_v<T>) {
    return static_cast<uint64_t>(v) > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
               ? std::numeric_limits<int64_t>::max()
               : static_cast<int64_t>(v);
  } else {
    return static_cast<int64_t>(v);
  }
}

// ---- random bits: the generators XLA expands rng-bit-generator into ---------------------------
inline uint32_t rotl32(uint32_t v, int d) { return (v << d) | (v >> (32 - d)); }

// Threefry-2x32, 20 rounds, XLA's key schedule.
inline void threefry2x32(uint32_t key0, uint32_t key1, uint32_t in0, uint32_t in1,
                         uint32_t* out0, uint32_t* out1) {
  static constexpr int kRot[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  const uint32_t ks[3] = {key0, key1, 0x1BD11BDAu ^ key0 ^ key1};
  uint32_t x0 = in0 + ks[0], x1 = in1 + ks[1];
  for (int block = 0; block < 5; ++block) {
    const int* rot = kRot + (block % 2 == 0 ? 0 : 4);
    for (int r = 0; r < 4; ++r) {
      x0 += x1;
      x1 = rotl32(x1, rot[r]);
      x1 ^= x0;
    }
    x0 += ks[(block + 1) % 3];
    x1 += ks[(block + 2) % 3] + static_cast<uint32_t>(block + 1);
  }
  *out0 = x0;
  *out1 = x1;
}

// Philox-4x32, 10 rounds.
inline void philox4x32(const uint32_t counter[4], uint32_t key0, uint32_t key1, uint32_t out[4]) {
  uint32_t x[4] = {counter[0], counter[1], counter[2], counter[3]};
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(x[0]) * 0xD2511F53u;
    const uint64_t p1 = static_cast<uint64_t>(x[2]) * 0xCD9E8D57u;
    const uint32_t y0 = static_cast<uint32_t>(p1 >> 32) ^ x[1] ^ key0;
    const uint32_t y1 = static_cast<uint32_t>(p1);
    const uint32_t y2 = static_cast<uint32_t>(p0 >> 32) ^ x[3] ^ key1;
    const uint32_t y3 = static_cast<uint32_t>(p0);
    x[0] = y0, x[1] = y1, x[2] = y2, x[3] = y3;
    key0 += 0x9E3779B9u;
    key1 += 0xBB67AE85u;
  }
  for (int i = 0; i < 4; ++i) out[i] = x[i];
}

// Philox words for a 128-bit counter (lo, hi), one block of four words per counter step.
// Returns the number of blocks used.
inline uint64_t philox_words(uint64_t key, uint64_t lo, uint64_t hi, int64_t n, uint32_t* out) {
  const uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  const int64_t blocks = (n + 3) / 4;
  for (int64_t b = 0; b < blocks; ++b) {
    const uint64_t l = lo + static_cast<uint64_t>(b);
    const uint64_t h = l < lo ? hi + 1 : hi;
    const uint32_t ctr[4] = {static_cast<uint32_t>(l), static_cast<uint32_t>(l >> 32),
                             static_cast<uint32_t>(h), static_cast<uint32_t>(h >> 32)};
    uint32_t w[4];
    philox4x32(ctr, k0, k1, w);
    for (int64_t j = 0; j < 4 && 4 * b + j < n; ++j) out[4 * b + j] = w[j];
  }
  return static_cast<uint64_t>(blocks);
}

// Threefry 32-bit outputs as XLA lays them out: the output is split into two halves along one
// dimension (`split_full` long, `split_half` = ceil(split_full / 2) counters), each call yielding
// two neighbouring elements along it; counters run row-major over (outer, split_half, inner).
// Returns the number of counters used.
inline uint64_t threefry_bits32(uint64_t key, uint64_t counter, int64_t outer, int64_t split_half,
                                int64_t split_full, int64_t inner, uint32_t* out) {
  const uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  int64_t c = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t a = 0; a < split_half; ++a) {
      for (int64_t in = 0; in < inner; ++in, ++c) {
        const uint64_t ctr = counter + static_cast<uint64_t>(c);
        uint32_t x[2];
        threefry2x32(k0, k1, static_cast<uint32_t>(ctr), static_cast<uint32_t>(ctr >> 32), &x[0],
                     &x[1]);
        for (int64_t sel = 0; sel < 2; ++sel) {
          const int64_t i = 2 * a + sel;
          if (i < split_full) out[(o * split_full + i) * inner + in] = x[sel];
        }
      }
    }
  }
  return static_cast<uint64_t>(c);
}

inline uint64_t threefry_bits64(uint64_t key, uint64_t counter, int64_t n, uint64_t* out) {
  const uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t ctr = counter + static_cast<uint64_t>(i);
    uint32_t x0, x1;
    threefry2x32(k0, k1, static_cast<uint32_t>(ctr), static_cast<uint32_t>(ctr >> 32), &x0, &x1);
    out[i] = static_cast<uint64_t>(x0) | (static_cast<uint64_t>(x1) << 32);
  }
  return static_cast<uint64_t>(n);
}

inline uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
inline double unit_fraction(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

// ---- large constants: filled or decoded once, when the library is loaded ---------------------
template <typename T> inline bool fill_n(T* p, int64_t n, T v) {
  for (int64_t i = 0; i < n; ++i) p[i] = v;
  return true;
}
// Decodes `n` bytes of base64 text `s` (with '=' padding) into `out`.
inline bool decode_base64(unsigned char* out, int64_t n, const char* s) {
  unsigned char value[256] = {};
  for (int c = 'A'; c <= 'Z'; ++c) value[c] = static_cast<unsigned char>(c - 'A');
  for (int c = 'a'; c <= 'z'; ++c) value[c] = static_cast<unsigned char>(c - 'a' + 26);
  for (int c = '0'; c <= '9'; ++c) value[c] = static_cast<unsigned char>(c - '0' + 52);
  value[static_cast<unsigned char>('+')] = 62;
  value[static_cast<unsigned char>('/')] = 63;
  const unsigned char* u = reinterpret_cast<const unsigned char*>(s);
  for (int64_t i = 0; i < n; i += 3, u += 4) {
    const uint32_t v = (uint32_t{value[u[0]]} << 18) | (uint32_t{value[u[1]]} << 12) |
                       (uint32_t{value[u[2]]} << 6) | value[u[3]];
    out[i] = static_cast<unsigned char>(v >> 16);
    if (i + 1 < n) out[i + 1] = static_cast<unsigned char>(v >> 8);
    if (i + 2 < n) out[i + 2] = static_cast<unsigned char>(v);
  }
  return true;
}

// ---- threads ----------------------------------------------------------------------------------
// Row buffers of a row-fused kernel: one slot per thread that may run the row loop. The builtin
// (unlike omp.h's function) is known to the compiler as pure, so it leaves the loops it is in.
inline int thread_index() {
#ifdef _OPENMP
  return __builtin_omp_get_thread_num();
#else
  return 0;
#endif
}
// Threads of the enclosing parallel region (1 outside one).
inline int thread_count() {
#ifdef _OPENMP
  return omp_get_num_threads();
#else
  return 1;
#endif
}
inline size_t thread_slots(int pinned) {
#ifdef _OPENMP
  const int m = omp_get_max_threads();
  return static_cast<size_t>(m > pinned ? m : pinned);
#else
  return static_cast<size_t>(pinned > 1 ? pinned : 1);
#endif
}

// ---- scratch memory ---------------------------------------------------------------------------
// Kernels take their temporaries per call. Freshly allocated big blocks are mmapped, faulted in
// page by page and unmapped again on every call (a third of a call for a module with a 65 MB
// temporary), so freed blocks are pooled for the next call, as XLA keeps its temp buffers. Each
// thread has its own pool: a thread gets back the blocks it used last time, still in its core's
// caches (a shared pool handed a 256^3 GEMM's packing buffers to the other core's thread and
// made the call 3x slower). A pool holds at most MK_SCRATCH_CACHE_MB (default 1024) MiB of free
// blocks; 0 disables it. MK_SCRATCH_POISON=1 fills every block handed out with 0xFF bytes (NaN
// as float), so a kernel that reads scratch it did not write shows up in testing instead of
// reading stale values. A pool is not shared between threads (get() is the calling thread's).
class ScratchPool {
 public:
  // The calling thread's pool, configured from the environment.
  static ScratchPool& get() {
    thread_local ScratchPool pool(EnvLimit(), EnvPoison());
    return pool;
  }

  ScratchPool(size_t limit_bytes, bool poison) : limit_(limit_bytes), poison_(poison) {}
  ScratchPool(const ScratchPool&) = delete;
  ScratchPool& operator=(const ScratchPool&) = delete;
  ~ScratchPool() {
    for (const Block& b : free_) std::free(b.p);
  }

  // Free bytes held for reuse.
  size_t held() const { return held_; }

  void* acquire(size_t bytes, size_t* cap) {
    void* p = nullptr;
    // Smallest free block that fits and is not more than twice as big.
    size_t best = free_.size();
    for (size_t i = 0; i < free_.size(); ++i) {
      if (free_[i].cap >= bytes && free_[i].cap / 2 <= bytes &&
          (best == free_.size() || free_[i].cap < free_[best].cap)) {
        best = i;
      }
    }
    if (best != free_.size()) {
      p = free_[best].p;
      *cap = free_[best].cap;
      held_ -= *cap;
      free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(best));
    }
    if (!p) {
      *cap = (bytes + 63) / 64 * 64 + 64;
      p = std::aligned_alloc(64, *cap);
    }
    if (p && poison_) std::memset(p, 0xFF, bytes);
    return p;
  }

  void release(void* p, size_t cap) {
    if (!p) return;
    free_.push_back({p, cap});
    held_ += cap;
    // Over the cap: free the oldest blocks first.
    while (held_ > limit_ && !free_.empty()) {
      held_ -= free_.front().cap;
      std::free(free_.front().p);
      free_.erase(free_.begin());
    }
  }

 private:
  struct Block {
    void* p;
    size_t cap;
  };
  std::vector<Block> free_;
  size_t held_ = 0, limit_ = 0;
  bool poison_ = false;

  static size_t EnvLimit() {
    const char* mb = std::getenv("MK_SCRATCH_CACHE_MB");
    return static_cast<size_t>(mb ? std::strtoull(mb, nullptr, 10) : 1024ull) << 20;
  }
  static bool EnvPoison() {
    const char* poison = std::getenv("MK_SCRATCH_POISON");
    return poison && poison[0] == '1';
  }
};

struct Scratch {
  void* p = nullptr;
  size_t cap = 0;
  explicit Scratch(size_t bytes) { p = ScratchPool::get().acquire(bytes, &cap); }
  ~Scratch() { ScratchPool::get().release(p, cap); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
};

}  // namespace mkrt
