// Dot and convolution against hand-computed values (the arithmetic is in the comments).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "interp/test_util.h"

namespace mk::interp {
namespace {

using hlo::DType;
using testing::MakeLiteral;
using testing::TryRun;
using testing::Values;

using V = std::vector<double>;

// gtest's Test::Run would hide testing::Run inside TEST bodies.
hlo::Literal Eval(const std::string& text, const std::vector<hlo::Literal>& args) {
  return testing::Run(text, args);
}

// ---------------------------------------------------------------------------------------------
// dot

TEST(Dot, Matmul2D) {
  const char* hlo = R"(HloModule m
ENTRY main {
  a = f32[2,3] parameter(0)
  b = f32[3,2] parameter(1)
  ROOT r = f32[2,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})";
  auto r = Eval(hlo, {MakeLiteral(DType::kF32, {2, 3}, {1, 2, 3, 4, 5, 6}),
                     MakeLiteral(DType::kF32, {3, 2}, {7, 8, 9, 10, 11, 12})});
  // [1*7+2*9+3*11, 1*8+2*10+3*12; 4*7+5*9+6*11, 4*8+5*10+6*12]
  EXPECT_EQ(Values(r), (V{58, 64, 139, 154}));
}

TEST(Dot, BatchDimsNotLeading) {
  // lhs [m=2, batch=2, k=2] holds 1..8; rhs [k=2, batch=2, n=1] holds 1..4.
  const char* hlo = R"(HloModule m
ENTRY main {
  a = f32[2,2,2] parameter(0)
  b = f32[2,2,1] parameter(1)
  ROOT r = f32[2,2,1] dot(a, b), lhs_batch_dims={1}, lhs_contracting_dims={2}, rhs_batch_dims={1}, rhs_contracting_dims={0}
})";
  auto r = Eval(hlo, {MakeLiteral(DType::kF32, {2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}),
                     MakeLiteral(DType::kF32, {2, 2, 1}, {1, 2, 3, 4})});
  // batch 0: rhs column (1,3); m0 row (1,2) -> 7, m1 row (5,6) -> 23.
  // batch 1: rhs column (2,4); m0 row (3,4) -> 22, m1 row (7,8) -> 46.
  EXPECT_EQ(Values(r), (V{7, 23, 22, 46}));
}

TEST(Dot, ContractingDimZeroOnLhs) {
  const char* hlo = R"(HloModule m
ENTRY main {
  a = f32[3,2] parameter(0)
  b = f32[3,2] parameter(1)
  ROOT r = f32[2,2] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}
})";
  auto r = Eval(hlo, {MakeLiteral(DType::kF32, {3, 2}, {1, 2, 3, 4, 5, 6}),
                     MakeLiteral(DType::kF32, {3, 2}, {1, 0, 0, 1, 1, 1})});
  // a^T b: [1+5, 3+5; 2+6, 4+6]
  EXPECT_EQ(Values(r), (V{6, 8, 8, 10}));
}

TEST(Dot, Bf16InputsF32ResultAccumulatesInF32) {
  const char* hlo = R"(HloModule m
ENTRY main {
  a = bf16[1,3] parameter(0)
  b = bf16[3,1] parameter(1)
  ROOT r = f32[1,1] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})";
  // 1 + 2^-8 + 2^-8 = 1.0078125 in f32; bf16 steps would give 1 (1 + 2^-8 ties to even).
  auto r = Eval(hlo, {MakeLiteral(DType::kBF16, {1, 3}, {1, 0.00390625, 0.00390625}),
                     MakeLiteral(DType::kBF16, {3, 1}, {1, 1, 1})});
  EXPECT_EQ(Values(r), (V{1.0078125}));
}

TEST(Dot, Bf16ResultRoundsOnceAtTheEnd) {
  const char* hlo = R"(HloModule m
ENTRY main {
  a = bf16[1,3] parameter(0)
  b = bf16[3,1] parameter(1)
  ROOT r = bf16[1,1] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})";
  // f32 sum 1 + 2^-8 + 2^-9 = 1.005859375 rounds to bf16 1.0078125 (ulp 2^-7). Rounding each
  // step to bf16 would give 1 (1 + 2^-8 is a tie that goes to even, then 1 + 2^-9 rounds down).
  auto r = Eval(hlo, {MakeLiteral(DType::kBF16, {1, 3}, {1, 0.00390625, 0.001953125}),
                     MakeLiteral(DType::kBF16, {3, 1}, {1, 1, 1})});
  EXPECT_EQ(Values(r), (V{1.0078125}));
}

TEST(Dot, IntegerDotWraps) {
  const char* hlo = R"(HloModule m
ENTRY main {
  a = s32[2,2] parameter(0)
  b = s32[2,2] parameter(1)
  ROOT r = s32[2,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})";
  auto r = Eval(hlo, {MakeLiteral(DType::kS32, {2, 2}, {1, 2, 2147483647, 1}),
                     MakeLiteral(DType::kS32, {2, 2}, {5, 6, 1, 1})});
  // row 0: [1*5+2*1, 1*6+2*1] = [7, 8]; row 1 wraps mod 2^32:
  // 5*(2^31-1)+1 = 2*2^32 + 2^31 - 4 -> 2147483644; 6*(2^31-1)+1 = 3*2^32 - 5 -> -5.
  EXPECT_EQ(Values(r), (V{7, 8, 2147483644, -5}));
}

TEST(Dot, VectorDotProductHasScalarResult) {
  const char* hlo = R"(HloModule m
ENTRY main {
  a = f32[3] parameter(0)
  b = f32[3] parameter(1)
  ROOT r = f32[] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}
})";
  auto r = Eval(hlo, {MakeLiteral(DType::kF32, {3}, {1, 2, 3}),
                     MakeLiteral(DType::kF32, {3}, {4, 5, 6})});
  EXPECT_EQ(Values(r), (V{32}));
}

TEST(Dot, WrongResultShapeIsAnError) {
  const char* hlo = R"(HloModule m
ENTRY main {
  a = f32[2,3] parameter(0)
  b = f32[3,2] parameter(1)
  ROOT r = f32[3,3] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})";
  auto r = TryRun(hlo, {MakeLiteral(DType::kF32, {2, 3}, V(6, 1)),
                        MakeLiteral(DType::kF32, {3, 2}, V(6, 1))});
  EXPECT_FALSE(r.ok());
}

TEST(Dot, Large512IsFastEnough) {
  // Not a timing assertion: exercises the packed path at bench size (all ones -> K).
  const char* hlo = R"(HloModule m
ENTRY main {
  a = f32[512,512] parameter(0)
  b = f32[512,512] parameter(1)
  ROOT r = f32[512,512] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})";
  hlo::Literal ones(hlo::Shape(DType::kF32, {512, 512}));
  for (int64_t i = 0; i < ones.num_elements(); ++i) ones.data<float>()[i] = 1.0f;
  auto start = std::chrono::steady_clock::now();
  auto r = Eval(hlo, {ones, ones});
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("512^3 f32 dot: %.3f s\n", secs);
  ASSERT_EQ(r.num_elements(), 512 * 512);
  EXPECT_EQ(r.data<float>()[0], 512.0f);
  EXPECT_EQ(r.data<float>()[512 * 512 - 1], 512.0f);
}

// ---------------------------------------------------------------------------------------------
// convolution, 1-D: input [batch, spatial, feature] = [1, 5, 1] holding 1..5

std::string Conv1D(const std::string& window, int64_t in, int64_t ksize, int64_t out) {
  return "HloModule m\nENTRY main {\n  x = f32[1," + std::to_string(in) +
         ",1] parameter(0)\n  k = f32[" + std::to_string(ksize) +
         ",1,1] parameter(1)\n  ROOT r = f32[1," + std::to_string(out) +
         ",1] convolution(x, k), window={" + window + "}, dim_labels=b0f_0io->b0f\n}\n";
}

hlo::Literal Input1D(const V& v) {
  return MakeLiteral(DType::kF32, {1, static_cast<int64_t>(v.size()), 1}, v);
}
hlo::Literal Kernel1D(const V& v) {
  return MakeLiteral(DType::kF32, {static_cast<int64_t>(v.size()), 1, 1}, v);
}

TEST(Conv, OneDimensionalValid) {
  auto r = Eval(Conv1D("size=3", 5, 3, 3), {Input1D({1, 2, 3, 4, 5}), Kernel1D({1, 2, 3})});
  // out[i] = x[i] + 2 x[i+1] + 3 x[i+2]
  EXPECT_EQ(Values(r), (V{14, 20, 26}));
}

TEST(Conv, StrideAndPadding) {
  auto r = Eval(Conv1D("size=3 stride=2 pad=1_1", 5, 3, 3),
               {Input1D({1, 2, 3, 4, 5}), Kernel1D({1, 2, 3})});
  // padded 0 1 2 3 4 5 0, windows at 0, 2, 4: [0+2+6, 2+6+12, 4+10+0]
  EXPECT_EQ(Values(r), (V{8, 20, 14}));
}

TEST(Conv, NegativePaddingCrops) {
  auto r = Eval(Conv1D("size=3 pad=-1_0", 5, 3, 2),
               {Input1D({1, 2, 3, 4, 5}), Kernel1D({1, 2, 3})});
  // cropped input 2 3 4 5: [2+6+12, 3+8+15]
  EXPECT_EQ(Values(r), (V{20, 26}));
}

TEST(Conv, LhsDilationIsTransposedConv) {
  auto r = Eval(Conv1D("size=3 pad=1_1 lhs_dilate=2", 3, 3, 5),
               {Input1D({1, 2, 3}), Kernel1D({1, 2, 3})});
  // dilated+padded input: 0 1 0 2 0 3 0
  // out: [0+2+0, 1+0+6, 0+4+0, 2+0+9, 0+6+0]
  EXPECT_EQ(Values(r), (V{2, 7, 4, 11, 6}));
}

TEST(Conv, RhsDilation) {
  auto r = Eval(Conv1D("size=2 rhs_dilate=2", 5, 2, 3),
               {Input1D({1, 2, 3, 4, 5}), Kernel1D({1, 10})});
  // out[i] = x[i] + 10 x[i+2]
  EXPECT_EQ(Values(r), (V{31, 42, 53}));
}

TEST(Conv, WindowReversal) {
  auto r = Eval(Conv1D("size=3 rhs_reversal=1", 5, 3, 3),
               {Input1D({1, 2, 3, 4, 5}), Kernel1D({1, 2, 3})});
  // kernel read backwards (3 2 1): [3+4+3, 6+6+4, 9+8+5]
  EXPECT_EQ(Values(r), (V{10, 16, 22}));
}

TEST(Conv, TwoDimensionalStrideTwo) {
  const char* hlo = R"(HloModule m
ENTRY main {
  x = f32[1,4,4,1] parameter(0)
  k = f32[2,2,1,1] parameter(1)
  ROOT r = f32[1,2,2,1] convolution(x, k), window={size=2x2 stride=2x2}, dim_labels=b01f_01io->b01f
})";
  V x;
  for (int i = 0; i < 16; ++i) x.push_back(i);
  auto r = Eval(hlo, {MakeLiteral(DType::kF32, {1, 4, 4, 1}, x),
                     MakeLiteral(DType::kF32, {2, 2, 1, 1}, {1, 1, 1, 1})});
  // 2x2 block sums of 0..15 laid out 4x4: 0+1+4+5, 2+3+6+7, 8+9+12+13, 10+11+14+15
  EXPECT_EQ(Values(r), (V{10, 18, 42, 50}));
}

TEST(Conv, NchwLayoutTwoChannels) {
  const char* hlo = R"(HloModule m
ENTRY main {
  x = f32[1,2,2,2] parameter(0)
  k = f32[2,2,1,1] parameter(1)
  ROOT r = f32[1,2,2,2] convolution(x, k), window={size=1x1}, dim_labels=bf01_oi01->bf01
})";
  // channel 0 = 1 2 3 4, channel 1 = 5 6 7 8; out 0 = c0 + c1, out 1 = c0 - c1.
  auto r = Eval(hlo, {MakeLiteral(DType::kF32, {1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}),
                     MakeLiteral(DType::kF32, {2, 2, 1, 1}, {1, 1, 1, -1})});
  EXPECT_EQ(Values(r), (V{6, 8, 10, 12, -4, -4, -4, -4}));
}

TEST(Conv, NchwSpatialWindow) {
  const char* hlo = R"(HloModule m
ENTRY main {
  x = f32[1,1,3,3] parameter(0)
  k = f32[1,1,2,2] parameter(1)
  ROOT r = f32[1,1,2,2] convolution(x, k), window={size=2x2}, dim_labels=bf01_oi01->bf01
})";
  // kernel [[1,0],[0,1]]: out[i][j] = x[i][j] + x[i+1][j+1] on x = 1..9 (3x3)
  auto r = Eval(hlo, {MakeLiteral(DType::kF32, {1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}),
                     MakeLiteral(DType::kF32, {1, 1, 2, 2}, {1, 0, 0, 1})});
  EXPECT_EQ(Values(r), (V{6, 8, 12, 14}));
}

TEST(Conv, ThreeDimensional) {
  const char* hlo = R"(HloModule m
ENTRY main {
  x = f32[1,2,2,2,1] parameter(0)
  k = f32[2,2,2,1,1] parameter(1)
  ROOT r = f32[1,1,1,1,1] convolution(x, k), window={size=2x2x2}, dim_labels=b012f_012io->b012f
})";
  V v{1, 2, 3, 4, 5, 6, 7, 8};
  auto r = Eval(hlo, {MakeLiteral(DType::kF32, {1, 2, 2, 2, 1}, v),
                     MakeLiteral(DType::kF32, {2, 2, 2, 1, 1}, v)});
  // sum of squares 1..8
  EXPECT_EQ(Values(r), (V{204}));
}

TEST(Conv, FeatureGroupCountTwo) {
  const char* hlo = R"(HloModule m
ENTRY main {
  x = f32[1,2,2] parameter(0)
  k = f32[1,1,4] parameter(1)
  ROOT r = f32[1,2,4] convolution(x, k), window={size=1}, dim_labels=b0f_0io->b0f, feature_group_count=2
})";
  // x[s][c]: s0 = (1, 2), s1 = (3, 4). Outputs 0,1 read channel 0; outputs 2,3 read channel 1.
  auto r = Eval(hlo, {MakeLiteral(DType::kF32, {1, 2, 2}, {1, 2, 3, 4}),
                     MakeLiteral(DType::kF32, {1, 1, 4}, {1, 10, 100, 1000})});
  EXPECT_EQ(Values(r), (V{1, 10, 200, 2000, 3, 30, 400, 4000}));
}

TEST(Conv, Depthwise) {
  const char* hlo = R"(HloModule m
ENTRY main {
  x = f32[1,3,2] parameter(0)
  k = f32[2,1,2] parameter(1)
  ROOT r = f32[1,2,2] convolution(x, k), window={size=2}, dim_labels=b0f_0io->b0f, feature_group_count=2
})";
  // channel 0 = 1 2 3 with taps (1, 3); channel 1 = 10 20 30 with taps (2, 4).
  // out0 = [1+6, 2+9]; out1 = [20+80, 40+120]; laid out [s][o].
  auto r = Eval(hlo, {MakeLiteral(DType::kF32, {1, 3, 2}, {1, 10, 2, 20, 3, 30}),
                     MakeLiteral(DType::kF32, {2, 1, 2}, {1, 2, 3, 4})});
  EXPECT_EQ(Values(r), (V{7, 100, 11, 160}));
}

TEST(Conv, BatchGroupCountTwo) {
  const char* hlo = R"(HloModule m
ENTRY main {
  x = f32[2,2,1] parameter(0)
  k = f32[1,1,2] parameter(1)
  ROOT r = f32[1,2,2] convolution(x, k), window={size=1}, dim_labels=b0f_0io->b0f, batch_group_count=2
})";
  // Output feature 0 reads batch 0 (1, 2) times 10; output feature 1 reads batch 1 (3, 4)
  // times 100. Laid out [s][o].
  auto r = Eval(hlo, {MakeLiteral(DType::kF32, {2, 2, 1}, {1, 2, 3, 4}),
                     MakeLiteral(DType::kF32, {1, 1, 2}, {10, 100})});
  EXPECT_EQ(Values(r), (V{10, 300, 20, 400}));
}

TEST(Conv, Bf16ResultAccumulatesInF32) {
  const char* hlo = R"(HloModule m
ENTRY main {
  x = bf16[1,3,1] parameter(0)
  k = bf16[3,1,1] parameter(1)
  ROOT r = bf16[1,1,1] convolution(x, k), window={size=3}, dim_labels=b0f_0io->b0f
})";
  // Same numbers as Dot.Bf16ResultRoundsOnceAtTheEnd.
  auto r = Eval(hlo, {MakeLiteral(DType::kBF16, {1, 3, 1}, {1, 0.00390625, 0.001953125}),
                     MakeLiteral(DType::kBF16, {3, 1, 1}, {1, 1, 1})});
  EXPECT_EQ(Values(r), (V{1.0078125}));
}

TEST(Conv, IntegerConv) {
  auto hlo = Conv1D("size=2", 3, 2, 2);
  for (auto pos = hlo.find("f32"); pos != std::string::npos; pos = hlo.find("f32")) {
    hlo.replace(pos, 3, "s32");
  }
  auto r = Eval(hlo, {MakeLiteral(DType::kS32, {1, 3, 1}, {1, -2, 3}),
                     MakeLiteral(DType::kS32, {2, 1, 1}, {5, 7})});
  // [5 - 14, -10 + 21]
  EXPECT_EQ(Values(r), (V{-9, 11}));
}

TEST(Conv, WrongSpatialResultIsAnError) {
  auto r = TryRun(Conv1D("size=3", 5, 3, 4), {Input1D({1, 2, 3, 4, 5}), Kernel1D({1, 2, 3})});
  EXPECT_FALSE(r.ok());
}

TEST(Conv, KernelFeatureMismatchIsAnError) {
  const char* hlo = R"(HloModule m
ENTRY main {
  x = f32[1,2,3] parameter(0)
  k = f32[1,2,2] parameter(1)
  ROOT r = f32[1,2,2] convolution(x, k), window={size=1}, dim_labels=b0f_0io->b0f
})";
  auto r = TryRun(hlo, {MakeLiteral(DType::kF32, {1, 2, 3}, V(6, 1)),
                        MakeLiteral(DType::kF32, {1, 2, 2}, V(4, 1))});
  EXPECT_FALSE(r.ok());
}

}  // namespace
}  // namespace mk::interp
