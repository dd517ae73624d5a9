// Scalar numerics shared by the elementwise and data-movement evaluators: the type an element
// computes in, exact conversions between element types (XLA's convert rules), and the integer
// and float corner cases (division by zero, shifts by >= width, NaN-propagating max/min, the
// total order). Header-only so that typed loops inline them.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "hlo/literal.h"

namespace mk::interp::scalar {

using hlo::DType;

// bf16 and f16 compute in f32 and round the result back (XLA's rule); every other type
// computes in itself.
template <typename T> struct ComputeOfT { using type = T; };
template <> struct ComputeOfT<hlo::bf16_t> { using type = float; };
template <> struct ComputeOfT<hlo::f16_t> { using type = float; };
template <typename T> using ComputeOf = typename ComputeOfT<T>::type;

template <DType D>
inline constexpr bool kIsFloatType =
    D == DType::kF16 || D == DType::kBF16 || D == DType::kF32 || D == DType::kF64;
template <DType D>
inline constexpr bool kIsSignedType =
    D == DType::kS8 || D == DType::kS16 || D == DType::kS32 || D == DType::kS64;
template <DType D>
inline constexpr bool kIsUnsignedType =
    D == DType::kU8 || D == DType::kU16 || D == DType::kU32 || D == DType::kU64;

// ---------------------------------------------------------------------------------------------
// Conversions.

// Rounds d to float with round-to-odd. A later RNE rounding to bf16/f16 of this float equals a
// direct RNE rounding of d (float keeps >= 2 extra bits), which plain double->float->bf16
// rounding does not guarantee (double rounding).
inline float RoundToOddFloat(double d) {
  float f = static_cast<float>(d);
  if (std::isnan(d) || static_cast<double>(f) == d) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
  return BitsToFloat(FloatBits(f) | 1u);
}

// The same for a 64-bit integer magnitude: exact below 2^53, else truncated with a sticky bit.
inline double RoundToOddDouble(uint64_t magnitude) {
  if (magnitude < (uint64_t{1} << 53)) return static_cast<double>(magnitude);
  int shift = 64 - 53 - std::countl_zero(magnitude);
  uint64_t kept = magnitude >> shift;
  if ((magnitude & ((uint64_t{1} << shift) - 1)) != 0) kept |= 1;
  return std::ldexp(static_cast<double>(kept), shift);
}

// Any float value (given exactly as double) to float element type D, rounded RNE.
template <DType D>
inline typename hlo::NativeOf<D>::type FloatTo(double d) {
  if constexpr (D == DType::kF64) {
    return d;
  } else if constexpr (D == DType::kF32) {
    return static_cast<float>(d);
  } else if constexpr (D == DType::kBF16) {
    return hlo::bf16_t(RoundToOddFloat(d));
  } else {
    return hlo::f16_t(RoundToOddFloat(d));
  }
}

// Float -> integer as XLA converts: truncate toward zero, NaN -> 0, saturate at the range.
template <DType D>
inline typename hlo::NativeOf<D>::type FloatToInt(double x) {
  using T = typename hlo::NativeOf<D>::type;
  if (std::isnan(x)) return T{0};
  // A limit that is not exactly representable as double rounds away from zero (2^63, 2^64),
  // so every x strictly inside the double limits truncates to a value in range.
  constexpr double kMax = static_cast<double>(std::numeric_limits<T>::max());
  constexpr double kMin = static_cast<double>(std::numeric_limits<T>::min());
  if (x >= kMax) return std::numeric_limits<T>::max();
  if (x <= kMin) return std::numeric_limits<T>::min();
  return static_cast<T>(std::trunc(x));
}

// The value of an element of type D: double for floats (exact), int64/uint64 for integers.
template <DType D>
inline auto Widen(typename hlo::NativeOf<D>::type v) {
  if constexpr (kIsFloatType<D>) {
    return static_cast<double>(static_cast<ComputeOf<typename hlo::NativeOf<D>::type>>(v));
  } else if constexpr (kIsSignedType<D>) {
    return static_cast<int64_t>(v);
  } else {  // unsigned and pred
    return static_cast<uint64_t>(v);
  }
}

// One element of type From converted to type To, with XLA's convert semantics.
template <DType From, DType To>
inline typename hlo::NativeOf<To>::type Convert(typename hlo::NativeOf<From>::type v) {
  using ToT = typename hlo::NativeOf<To>::type;
  auto w = Widen<From>(v);
  if constexpr (To == DType::kPred) {
    return static_cast<uint8_t>(w != 0 ? 1 : 0);
  } else if constexpr (kIsFloatType<From>) {
    if constexpr (kIsFloatType<To>) return FloatTo<To>(w);
    else return FloatToInt<To>(w);
  } else if constexpr (kIsFloatType<To>) {
    // Integer -> float. f32/f64: the hardware conversion is one correctly rounded step.
    if constexpr (To == DType::kF64 || To == DType::kF32) {
      return static_cast<ToT>(w);
    } else if constexpr (std::is_signed_v<decltype(w)>) {
      uint64_t mag = w < 0 ? 0 - static_cast<uint64_t>(w) : static_cast<uint64_t>(w);
      double d = RoundToOddDouble(mag);
      return FloatTo<To>(w < 0 ? -d : d);
    } else {
      return FloatTo<To>(RoundToOddDouble(w));
    }
  } else {
    return static_cast<ToT>(w);  // integer -> integer wraps (modular since C++20)
  }
}

// ---------------------------------------------------------------------------------------------
// Float helpers.

// NaN-propagating maximum/minimum (IEEE 754-2019 maximum/minimum: -0 < +0), as XLA's max/min.
template <typename C>
inline C FloatMax(C a, C b) {
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  if (a == b) return std::signbit(a) ? b : a;  // prefers +0 over -0
  return a > b ? a : b;
}
template <typename C>
inline C FloatMin(C a, C b) {
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  if (a == b) return std::signbit(a) ? a : b;  // prefers -0 over +0
  return a < b ? a : b;
}

template <typename C>
inline C FloatSign(C x) {
  if (std::isnan(x) || x == C(0)) return x;
  return std::copysign(C(1), x);
}

// A signed integer whose order is XLA's total order of the float's bits:
// -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN.
template <typename T>
inline auto TotalOrderKey(T v) {
  using Bits = std::conditional_t<sizeof(T) == 2, uint16_t,
                                  std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>;
  using Key = std::make_signed_t<Bits>;
  Bits bits;
  std::memcpy(&bits, &v, sizeof(T));
  Key key = static_cast<Key>(bits);
  if (key < 0) key = static_cast<Key>(key ^ std::numeric_limits<Key>::max());
  return key;
}

// ---------------------------------------------------------------------------------------------
// Integer helpers. Arithmetic goes through uint64_t so that overflow wraps instead of being UB
// (narrow unsigned types would otherwise promote to int and could overflow).

template <typename T> inline T WrapAdd(T a, T b) {
  return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
template <typename T> inline T WrapSub(T a, T b) {
  return static_cast<T>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
template <typename T> inline T WrapMul(T a, T b) {
  return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
template <typename T> inline T WrapNeg(T a) { return static_cast<T>(0 - static_cast<uint64_t>(a)); }

// XLA: x / 0 = -1 (all bits set) for signed, max for unsigned; INT_MIN / -1 = INT_MIN.
template <typename T> inline T IntDiv(T a, T b) {
  if (b == 0) {
    if constexpr (std::is_signed_v<T>) return T(-1);
    else return std::numeric_limits<T>::max();
  }
  if constexpr (std::is_signed_v<T>) {
    if (a == std::numeric_limits<T>::min() && b == T(-1)) return a;
  }
  return static_cast<T>(a / b);
}
// XLA: x % 0 = x; INT_MIN % -1 = 0. The sign follows the dividend (C truncation).
template <typename T> inline T IntRem(T a, T b) {
  if (b == 0) return a;
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return T(0);
  }
  return static_cast<T>(a % b);
}

// Integer power by squaring, wrapping. A negative exponent gives 0, except for bases 1 and -1.
template <typename T> inline T IntPow(T base, T exponent) {
  if constexpr (std::is_signed_v<T>) {
    if (exponent < 0) {
      if (base == T(1)) return T(1);
      if (base == T(-1)) return (exponent & 1) ? T(-1) : T(1);
      return T(0);
    }
  }
  uint64_t result = 1, b = static_cast<uint64_t>(base);
  for (uint64_t e = static_cast<uint64_t>(exponent); e != 0; e >>= 1) {
    if (e & 1) result *= b;
    b *= b;
  }
  return static_cast<T>(result);
}

// Shift amounts are read as unsigned; an amount >= the bit width shifts everything out.
template <typename T> inline T ShiftLeft(T a, T amount) {
  using U = std::make_unsigned_t<T>;
  U n = static_cast<U>(amount);
  if (n >= sizeof(T) * 8) return T(0);
  return static_cast<T>(static_cast<uint64_t>(static_cast<U>(a)) << n);
}
template <typename T> inline T ShiftRightLogical(T a, T amount) {
  using U = std::make_unsigned_t<T>;
  U n = static_cast<U>(amount);
  if (n >= sizeof(T) * 8) return T(0);
  return static_cast<T>(static_cast<U>(a) >> n);
}
template <typename T> inline T ShiftRightArithmetic(T a, T amount) {
  using U = std::make_unsigned_t<T>;
  using S = std::make_signed_t<T>;
  U n = static_cast<U>(amount);
  S s = static_cast<S>(a);
  if (n >= sizeof(T) * 8) return static_cast<T>(s < 0 ? S(-1) : S(0));
  return static_cast<T>(static_cast<S>(s >> n));  // arithmetic for negatives since C++20
}

}  // namespace mk::interp::scalar
