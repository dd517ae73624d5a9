// reduce, reduce-window and select-and-scatter against hand-computed values.
#include <gtest/gtest.h>

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
hlo::Literal Eval(const std::string& text, const std::vector<hlo::Literal>& args,
                  const InterpreterOptions& options = {}) {
  return testing::Run(text, args, options);
}

// Reducers: `add` is recognized by the fast path; `add_slow` computes the same sum in a form
// the fast path does not recognize, so it goes through the generic per-step calls; `ge_slow`
// likewise for select-and-scatter's select.
std::string Reducers(const std::string& t) {
  return "add {\n  a = " + t + "[] parameter(0)\n  b = " + t + "[] parameter(1)\n  ROOT s = " +
         t + "[] add(a, b)\n}\n"
         "add_slow {\n  a = " + t + "[] parameter(0)\n  b = " + t + "[] parameter(1)\n  s = " +
         t + "[] add(a, b)\n  ROOT c = " + t + "[] copy(s)\n}\n"
         "max {\n  a = " + t + "[] parameter(0)\n  b = " + t + "[] parameter(1)\n  ROOT m = " +
         t + "[] maximum(a, b)\n}\n"
         "ge {\n  a = " + t + "[] parameter(0)\n  b = " + t + "[] parameter(1)\n  ROOT g = " +
         "pred[] compare(a, b), direction=GE\n}\n"
         "ge_slow {\n  a = " + t + "[] parameter(0)\n  b = " + t + "[] parameter(1)\n  g = " +
         "pred[] compare(b, a), direction=LE\n  ROOT c = pred[] copy(g)\n}\n";
}

// ---------------------------------------------------------------------------------------------
// reduce

TEST(Reduce, SumOverTwoDims) {
  for (const char* reducer : {"add", "add_slow"}) {
    std::string hlo = "HloModule m\n" + Reducers("f32") + R"(ENTRY main {
  x = f32[2,3,2] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[3] reduce(x, z), dimensions={0,2}, to_apply=)" + reducer + "\n}\n";
    V x;
    for (int i = 1; i <= 12; ++i) x.push_back(i);
    auto r = Eval(hlo, {MakeLiteral(DType::kF32, {2, 3, 2}, x)});
    // x[i][j][k] = 6i + 2j + k + 1: j=0 -> 1+2+7+8, j=1 -> 3+4+9+10, j=2 -> 5+6+11+12
    EXPECT_EQ(Values(r), (V{18, 26, 34})) << reducer;
  }
}

TEST(Reduce, MaxOverRows) {
  std::string hlo = "HloModule m\n" + Reducers("f32") + R"(ENTRY main {
  x = f32[2,3] parameter(0)
  z = f32[] constant(-inf)
  ROOT r = f32[2] reduce(x, z), dimensions={1}, to_apply=max
})";
  auto r = Eval(hlo, {MakeLiteral(DType::kF32, {2, 3}, {1, 5, 3, -1, -7, -2})});
  EXPECT_EQ(Values(r), (V{5, -1}));
}

TEST(Reduce, AllDimsToScalar) {
  std::string hlo = "HloModule m\n" + Reducers("s32") + R"(ENTRY main {
  x = s32[2] parameter(0)
  z = s32[] constant(0)
  ROOT r = s32[] reduce(x, z), dimensions={0}, to_apply=add
})";
  // 2^31 - 1 + 1 wraps to -2^31
  auto r = Eval(hlo, {MakeLiteral(DType::kS32, {2}, {2147483647, 1})});
  EXPECT_EQ(Values(r), (V{-2147483648.0}));
}

TEST(Reduce, Bf16RoundsEveryStep) {
  for (const char* reducer : {"add", "add_slow"}) {
    std::string hlo = "HloModule m\n" + Reducers("bf16") + R"(ENTRY main {
  x = bf16[4] parameter(0)
  z = bf16[] constant(0)
  ROOT r = bf16[] reduce(x, z), dimensions={0}, to_apply=)" + reducer + "\n}\n";
    // 1 + 2^-8 is a tie between bf16 1 and 1 + 2^-7 and goes to even (1), three times over;
    // an f32 accumulator would have given 1 + 3*2^-8 -> 1.015625.
    auto r = Eval(hlo, {MakeLiteral(DType::kBF16, {4}, {1, 0.00390625, 0.00390625, 0.00390625})});
    EXPECT_EQ(Values(r), (V{1})) << reducer;
  }
}

TEST(Reduce, Bf16HighPrecisionAddUsesWideAccumulator) {
  std::string hlo = "HloModule m\n" + Reducers("bf16") + R"(ENTRY main {
  x = bf16[4] parameter(0)
  z = bf16[] constant(0)
  ROOT r = bf16[] reduce(x, z), dimensions={0}, to_apply=add
})";
  InterpreterOptions options;
  options.high_precision = true;
  // 1 + 3*2^-8 = 1.01171875 is halfway between 1.0078125 (odd) and 1.015625 (even).
  auto r = Eval(hlo, {MakeLiteral(DType::kBF16, {4}, {1, 0.00390625, 0.00390625, 0.00390625})},
                options);
  EXPECT_EQ(Values(r), (V{1.015625}));
}

// (value, index) pairs: the larger value wins, ties go to the lower index.
const char* kArgmax = R"(argmax {
  av = f32[] parameter(0)
  ai = s32[] parameter(1)
  bv = f32[] parameter(2)
  bi = s32[] parameter(3)
  gt = pred[] compare(av, bv), direction=GT
  eq = pred[] compare(av, bv), direction=EQ
  lower = pred[] compare(ai, bi), direction=LT
  tie = pred[] and(eq, lower)
  keep = pred[] or(gt, tie)
  v = f32[] select(keep, av, bv)
  i = s32[] select(keep, ai, bi)
  ROOT t = (f32[], s32[]) tuple(v, i)
}
)";

TEST(Reduce, MultiOperandArgmax) {
  std::string hlo = std::string("HloModule m\n") + kArgmax + R"(ENTRY main {
  x = f32[2,3] parameter(0)
  idx = s32[2,3] parameter(1)
  zv = f32[] constant(-inf)
  zi = s32[] constant(0)
  ROOT r = (f32[2], s32[2]) reduce(x, idx, zv, zi), dimensions={1}, to_apply=argmax
})";
  auto r = Eval(hlo, {MakeLiteral(DType::kF32, {2, 3}, {1, 5, 3, 7, 2, 7}),
                      MakeLiteral(DType::kS32, {2, 3}, {0, 1, 2, 0, 1, 2})});
  ASSERT_EQ(r.elements().size(), 2u);
  // row 0: max 5 at 1; row 1: 7 at 0 and 2, the lower index wins.
  EXPECT_EQ(Values(r.elements()[0]), (V{5, 7}));
  EXPECT_EQ(Values(r.elements()[1]), (V{1, 0}));
}

TEST(Reduce, RepeatedDimensionIsAnError) {
  std::string hlo = "HloModule m\n" + Reducers("f32") + R"(ENTRY main {
  x = f32[2,3] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[3] reduce(x, z), dimensions={0,0}, to_apply=add
})";
  EXPECT_FALSE(TryRun(hlo, {MakeLiteral(DType::kF32, {2, 3}, V(6, 1))}).ok());
}

// ---------------------------------------------------------------------------------------------
// reduce-window

std::string Window1D(const std::string& reducer, const std::string& window, int64_t in,
                     int64_t out) {
  return "HloModule m\n" + Reducers("f32") + "ENTRY main {\n  x = f32[" + std::to_string(in) +
         "] parameter(0)\n  z = f32[] constant(0)\n  ROOT r = f32[" + std::to_string(out) +
         "] reduce-window(x, z), window={" + window + "}, to_apply=" + reducer + "\n}\n";
}

TEST(ReduceWindow, MaxPool2x2Stride2) {
  std::string hlo = "HloModule m\n" + Reducers("f32") + R"(ENTRY main {
  x = f32[4,4] parameter(0)
  z = f32[] constant(-inf)
  ROOT r = f32[2,2] reduce-window(x, z), window={size=2x2 stride=2x2}, to_apply=max
})";
  V x;
  for (int i = 0; i < 16; ++i) x.push_back(i);
  auto r = Eval(hlo, {MakeLiteral(DType::kF32, {4, 4}, x)});
  // bottom-right corner of each 2x2 block of 0..15
  EXPECT_EQ(Values(r), (V{5, 7, 13, 15}));
}

TEST(ReduceWindow, SumPoolWithPadding) {
  for (const char* reducer : {"add", "add_slow"}) {
    auto r = Eval(Window1D(reducer, "size=3 pad=1_1", 4, 4),
                  {MakeLiteral(DType::kF32, {4}, {1, 2, 3, 4})});
    // (pad 1 2) (1 2 3) (2 3 4) (3 4 pad): the sums an average pool divides by its counts
    EXPECT_EQ(Values(r), (V{3, 6, 9, 7})) << reducer;
  }
}

TEST(ReduceWindow, AvgPool2DWithPaddingAndCounts) {
  // Average pool as JAX writes it: a sum window divided by a window of ones (the counts).
  std::string hlo = "HloModule m\n" + Reducers("f32") + R"(ENTRY main {
  x = f32[2,2] parameter(0)
  z = f32[] constant(0)
  one = f32[] constant(1)
  ones = f32[2,2] broadcast(one), dimensions={}
  s = f32[3,3] reduce-window(x, z), window={size=2x2 pad=1_1x1_1}, to_apply=add
  n = f32[3,3] reduce-window(ones, z), window={size=2x2 pad=1_1x1_1}, to_apply=add
  ROOT r = f32[3,3] divide(s, n)
})";
  auto r = Eval(hlo, {MakeLiteral(DType::kF32, {2, 2}, {1, 2, 3, 4})});
  // corners see one element, edges two, the centre all four: (1+2)/2, (1+3)/2, (2+4)/2, ...
  EXPECT_EQ(Values(r), (V{1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4}));
}

TEST(ReduceWindow, DilatedWindow) {
  auto r = Eval(Window1D("add", "size=2 rhs_dilate=2", 5, 3),
                {MakeLiteral(DType::kF32, {5}, {1, 2, 3, 4, 5})});
  // x[i] + x[i+2]
  EXPECT_EQ(Values(r), (V{4, 6, 8}));
}

TEST(ReduceWindow, BaseDilationAndStride) {
  auto r = Eval(Window1D("add_slow", "size=2 lhs_dilate=2", 3, 4),
                {MakeLiteral(DType::kF32, {3}, {1, 2, 3})});
  // dilated 1 _ 2 _ 3 (holes hold the init value 0): [1, 2, 2, 3]
  EXPECT_EQ(Values(r), (V{1, 2, 2, 3}));
  auto s = Eval(Window1D("add", "size=2 stride=3", 7, 2),
                {MakeLiteral(DType::kF32, {7}, {1, 2, 3, 4, 5, 6, 7})});
  EXPECT_EQ(Values(s), (V{3, 9}));  // windows at 0 and 3
}

TEST(ReduceWindow, MultiOperandArgmax) {
  std::string hlo = std::string("HloModule m\n") + kArgmax + R"(ENTRY main {
  x = f32[4] parameter(0)
  idx = s32[4] parameter(1)
  zv = f32[] constant(-inf)
  zi = s32[] constant(0)
  ROOT r = (f32[3], s32[3]) reduce-window(x, idx, zv, zi), window={size=2}, to_apply=argmax
})";
  auto r = Eval(hlo, {MakeLiteral(DType::kF32, {4}, {1, 5, 3, 5}),
                      MakeLiteral(DType::kS32, {4}, {0, 1, 2, 3})});
  ASSERT_EQ(r.elements().size(), 2u);
  // windows (1 5) (5 3) (3 5)
  EXPECT_EQ(Values(r.elements()[0]), (V{5, 5, 5}));
  EXPECT_EQ(Values(r.elements()[1]), (V{1, 1, 3}));
}

TEST(ReduceWindow, WrongResultShapeIsAnError) {
  EXPECT_FALSE(TryRun(Window1D("add", "size=2", 5, 5),
                      {MakeLiteral(DType::kF32, {5}, {1, 2, 3, 4, 5})})
                   .ok());
}

// ---------------------------------------------------------------------------------------------
// select-and-scatter

TEST(SelectAndScatter, MaxPoolGradient) {
 for (std::string fns : {"select=ge, scatter=add", "select=ge_slow, scatter=add_slow"}) {
  std::string hlo = "HloModule m\n" + Reducers("f32") + R"(ENTRY main {
  x = f32[4,4] parameter(0)
  g = f32[2,2] parameter(1)
  z = f32[] constant(0)
  ROOT r = f32[4,4] select-and-scatter(x, g, z), window={size=2x2 stride=2x2}, )" + fns + "\n}\n";
  auto r = Eval(hlo, {MakeLiteral(DType::kF32, {4, 4},
                                  {1, 5, 2, 0,  //
                                   3, 4, 8, 6,  //
                                   7, 0, 1, 1,  //
                                   2, 9, 1, 3}),
                      MakeLiteral(DType::kF32, {2, 2}, {10, 20, 30, 40})});
  // block maxima: 5 at (0,1), 8 at (1,2), 9 at (3,1), 3 at (3,3)
  EXPECT_EQ(Values(r), (V{0, 10, 0, 0,  //
                          0, 0, 20, 0,  //
                          0, 0, 0, 0,   //
                          0, 30, 0, 40}))
      << fns;
 }
}

TEST(SelectAndScatter, OverlappingWindowsAndTies) {
 for (std::string fns : {"select=ge, scatter=add", "select=ge_slow, scatter=add_slow"}) {
  std::string hlo = "HloModule m\n" + Reducers("f32") + R"(ENTRY main {
  x = f32[4] parameter(0)
  g = f32[3] parameter(1)
  z = f32[] constant(0)
  ROOT r = f32[4] select-and-scatter(x, g, z), window={size=2}, )" + fns + "\n}\n";
  auto r = Eval(hlo, {MakeLiteral(DType::kF32, {4}, {1, 3, 3, 2}),
                      MakeLiteral(DType::kF32, {3}, {1, 10, 100})});
  // windows (1 3) -> index 1; (3 3) -> GE keeps the first, index 1; (3 2) -> index 2.
  EXPECT_EQ(Values(r), (V{0, 11, 100, 0})) << fns;
 }
}

TEST(SelectAndScatter, PaddingIsNeverSelected) {
  std::string hlo = "HloModule m\n" + Reducers("f32") + R"(ENTRY main {
  x = f32[2] parameter(0)
  g = f32[2] parameter(1)
  z = f32[] constant(0)
  ROOT r = f32[2] select-and-scatter(x, g, z), window={size=2 stride=2 pad=1_1}, select=ge, scatter=add
})";
  // Negative operand values: a zero pad would win a GE comparison if it were a candidate.
  auto r = Eval(hlo, {MakeLiteral(DType::kF32, {2}, {-5, -1}),
                      MakeLiteral(DType::kF32, {2}, {7, 8})});
  EXPECT_EQ(Values(r), (V{7, 8}));
}

TEST(SelectAndScatter, SourceShapeMismatchIsAnError) {
  std::string hlo = "HloModule m\n" + Reducers("f32") + R"(ENTRY main {
  x = f32[4] parameter(0)
  g = f32[2] parameter(1)
  z = f32[] constant(0)
  ROOT r = f32[4] select-and-scatter(x, g, z), window={size=2}, select=ge, scatter=add
})";
  EXPECT_FALSE(TryRun(hlo, {MakeLiteral(DType::kF32, {4}, V(4, 1)),
                            MakeLiteral(DType::kF32, {2}, V(2, 1))})
                   .ok());
}

}  // namespace
}  // namespace mk::interp
