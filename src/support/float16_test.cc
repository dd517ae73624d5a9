#include "support/float16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace mk {
namespace {

TEST(Bf16Test, RoundsToNearestEven) {
  // 1 + 2^-8 is exactly halfway between bf16 1.0 and 1.0078125: ties go to even (1.0).
  EXPECT_EQ(RoundToBf16(1.0f + 0x1p-8f), 1.0f);
  // 1 + 3*2^-8 is halfway between 1.0078125 (odd) and 1.015625 (even): rounds up.
  EXPECT_EQ(RoundToBf16(1.0f + 3 * 0x1p-8f), 1.015625f);
  EXPECT_EQ(RoundToBf16(1.0f + 0x1p-8f + 0x1p-20f), 1.0078125f);
  EXPECT_TRUE(std::isnan(RoundToBf16(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(RoundToBf16(std::numeric_limits<float>::infinity()),
            std::numeric_limits<float>::infinity());
  // The largest float rounds to inf in bf16 (it is above bf16 max + half an ulp).
  EXPECT_TRUE(std::isinf(RoundToBf16(std::numeric_limits<float>::max())));
}

TEST(F16Test, RoundTripsAndRounds) {
  EXPECT_EQ(RoundToF16(1.0f), 1.0f);
  EXPECT_EQ(RoundToF16(65504.0f), 65504.0f);
  EXPECT_TRUE(std::isinf(RoundToF16(65520.0f)));
  EXPECT_EQ(RoundToF16(65519.0f), 65504.0f);
  EXPECT_EQ(RoundToF16(0x1p-24f), 0x1p-24f);     // smallest subnormal
  EXPECT_EQ(RoundToF16(0x1p-25f), 0.0f);         // halfway to zero: ties to even (0)
  EXPECT_EQ(RoundToF16(3 * 0x1p-25f), 0x1p-23f); // 1.5 units: ties to even (2 units)
  EXPECT_EQ(RoundToF16(1.0f + 0x1p-11f), 1.0f);  // halfway, even
  EXPECT_EQ(RoundToF16(-2.5f), -2.5f);
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    float f = F16ToFloat(static_cast<uint16_t>(h));
    EXPECT_EQ(FloatToF16(f), h) << h;
  }
}

}  // namespace
}  // namespace mk
