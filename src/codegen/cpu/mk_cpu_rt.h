// maxkernel CPU runtime support: scalar semantics every generated CPU kernel includes verbatim
// (the text of this file is embedded into the maxkernel binary and pasted at the top of each
// generated translation unit, so generated sources are self-contained). Semantics follow XLA:
// bf16/f16 compute in f32 and round to nearest even; integer arithmetic wraps; x/0 and shifts
// past the width have XLA's defined results; max/min propagate NaN.
// It is deliberately independent of the interpreter's code: the interpreter is the oracle these
// semantics are checked against.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <type_traits>

namespace mkrt {

// ---- 16-bit floats ---------------------------------------------------------------------------
inline uint32_t f2u(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float u2f(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

inline float bf16_to_f32(uint16_t h) { return u2f(static_cast<uint32_t>(h) << 16); }
inline uint16_t f32_to_bf16(float f) {
  uint32_t u = f2u(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
inline float round_bf16(float f) { return bf16_to_f32(f32_to_bf16(f)); }

inline float f16_to_f32(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1f) return u2f(sign | 0x7f800000u | (m << 13));
  if (e == 0) {
    float v = static_cast<float>(m) * 5.9604644775390625e-08f;  // m * 2^-24
    return sign ? -v : v;
  }
  return u2f(sign | ((e + 112u) << 23) | (m << 13));
}
inline uint16_t f32_to_f16(float f) {
  uint32_t u = f2u(f);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00u;
  if (a >= 0x477ff000u) return sign | 0x7c00u;
  if (a < 0x38800000u) {  // subnormal in f16: round a * 2^24 to an integer, ties to even
    float scaled = u2f(a) * 16777216.0f;
    float r = std::nearbyint(scaled);  // default rounding mode: to nearest even
    return sign | static_cast<uint16_t>(r);
  }
  a += 0x0fffu + ((a >> 13) & 1u);
  return sign | static_cast<uint16_t>((a - 0x38000000u) >> 13);
}
inline float round_f16(float f) { return f16_to_f32(f32_to_f16(f)); }

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
template <typename F> inline F fmax_nan(F a, F b) { return (a != a || b != b) ? std::numeric_limits<F>::quiet_NaN() : (a > b ? a : b); }
template <typename F> inline F fmin_nan(F a, F b) { return (a != a || b != b) ? std::numeric_limits<F>::quiet_NaN() : (a < b ? a : b); }
template <typename F> inline F fsign(F a) { return a != a ? a : a > 0 ? F(1) : a < 0 ? F(-1) : a; }
template <typename F> inline F logistic(F a) { return F(1) / (F(1) + std::exp(-a)); }
template <typename F> inline F rsqrt(F a) { return F(1) / std::sqrt(a); }
template <typename F> inline F round_afz(F a) { return std::round(a); }
template <typename F> inline F round_even(F a) { return std::nearbyint(a); }

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

// ---- scratch memory ---------------------------------------------------------------------------
struct Scratch {
  void* p = nullptr;
  explicit Scratch(size_t bytes) { p = std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64); }
  ~Scratch() { std::free(p); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
};

}  // namespace mkrt
