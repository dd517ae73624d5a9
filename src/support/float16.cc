#include "support/float16.h"

namespace mk {

uint16_t FloatToF16(float f) {
  uint32_t u = FloatBits(f);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00u;           // NaN
  if (abs >= 0x477ff000u) return sign | 0x7c00u;          // rounds to >= 65520 -> inf
  if (abs < 0x38800000u) {                                // below the smallest normal: subnormal
    // Value = abs as float; f16 subnormal unit is 2^-24. Round-to-nearest-even of value / 2^-24.
    float a = BitsToFloat(abs);
    float scaled = a * 16777216.0f;  // exact: multiplying by a power of two
    // Manual RNE on a value < 1024.
    uint32_t whole = static_cast<uint32_t>(scaled);
    float frac = scaled - static_cast<float>(whole);
    if (frac > 0.5f || (frac == 0.5f && (whole & 1u))) ++whole;
    return sign | static_cast<uint16_t>(whole);
  }
  // Normal: rebias exponent from 127 to 15 and round the 23-bit mantissa to 10 bits.
  uint32_t mant_lsb = (abs >> 13) & 1u;
  abs += 0x0fffu + mant_lsb;
  return sign | static_cast<uint16_t>((abs - 0x38000000u) >> 13);
}

float F16ToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return BitsToFloat(sign | 0x7f800000u | (mant << 13));  // inf / NaN
  if (exp == 0) {
    if (mant == 0) return BitsToFloat(sign);
    float v = static_cast<float>(mant) * (1.0f / 16777216.0f);  // mant * 2^-24
    return sign ? -v : v;
  }
  return BitsToFloat(sign | ((exp + 112u) << 23) | (mant << 13));
}

}  // namespace mk
