// Bit-exact conversions between float and the 16-bit floating types (bfloat16, IEEE half).
// Rounding is round-to-nearest-even, as XLA does when an f32 result is narrowed; NaN stays NaN.
#pragma once

#include <cstdint>
#include <cstring>

namespace mk {

inline uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float BitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline uint16_t FloatToBf16(float f) {
  uint32_t u = FloatBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);  // quiet NaN
  uint32_t lsb = (u >> 16) & 1u;
  u += 0x7fffu + lsb;
  return static_cast<uint16_t>(u >> 16);
}
inline float Bf16ToFloat(uint16_t h) { return BitsToFloat(static_cast<uint32_t>(h) << 16); }

uint16_t FloatToF16(float f);
float F16ToFloat(uint16_t h);

// Rounds a float to the nearest value representable in the 16-bit type (stays a float).
inline float RoundToBf16(float f) { return Bf16ToFloat(FloatToBf16(f)); }
inline float RoundToF16(float f) { return F16ToFloat(FloatToF16(f)); }

}  // namespace mk
