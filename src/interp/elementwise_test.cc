// Elementwise ops against hand-computed values: rounding of bf16/f16 results, XLA's integer
// corner cases (division by zero, INT_MIN / -1, shifts by >= width), NaN rules of max/min and
// clamp, both float orders of compare, and the convert family.
#include <cmath>
#include <cstring>
#include <limits>

#include "interp/test_util.h"

namespace mk::interp {
namespace {

using hlo::DType;
using hlo::Literal;
using testing::MakeLiteral;
using testing::TryRun;
using testing::Values;

// gtest's Test::Run would hide testing::Run inside TEST bodies.
Literal RunHlo(const std::string& text, const std::vector<Literal>& args) {
  return testing::Run(text, args);
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kInt32Min = std::numeric_limits<int32_t>::min();
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

// A module whose root applies `op` (with trailing `attrs`) to parameters of the given shapes.
std::string OpModule(const std::string& op, const std::vector<std::string>& operand_shapes,
                     const std::string& result_shape, const std::string& attrs = "") {
  std::string text = "HloModule m\nENTRY main {\n";
  std::string args;
  for (size_t i = 0; i < operand_shapes.size(); ++i) {
    text += "  p" + std::to_string(i) + " = " + operand_shapes[i] + " parameter(" +
            std::to_string(i) + ")\n";
    args += (i ? ", p" : "p") + std::to_string(i);
  }
  text += "  ROOT r = " + result_shape + " " + op + "(" + args + ")" +
          (attrs.empty() ? "" : ", " + attrs) + "\n}\n";
  return text;
}

std::vector<int64_t> Ints(const Literal& lit) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < lit.num_elements(); ++i) out.push_back(lit.GetInt64(i));
  return out;
}

uint16_t U16BitsAt(const Literal& lit, int64_t i) {
  uint16_t bits;
  std::memcpy(&bits, lit.raw() + 2 * i, 2);
  return bits;
}

Literal F32FromBits(const std::vector<uint32_t>& bits) {
  Literal lit(hlo::Shape(DType::kF32, {static_cast<int64_t>(bits.size())}));
  std::memcpy(lit.raw(), bits.data(), bits.size() * 4);
  return lit;
}

// ---------------------------------------------------------------------------------------------
// Binary arithmetic.

TEST(ElementwiseTest, AddF32) {
  auto r = RunHlo(OpModule("add", {"f32[2,2]", "f32[2,2]"}, "f32[2,2]"),
               {MakeLiteral(DType::kF32, {2, 2}, {1, 2, 3, 4}),
                MakeLiteral(DType::kF32, {2, 2}, {10, 20, 30, 0.5})});
  EXPECT_EQ(Values(r), (std::vector<double>{11, 22, 33, 4.5}));
}

TEST(ElementwiseTest, AddBf16RoundsToNearestEven) {
  // bf16 keeps 8 significant bits: near 1 the spacing is 2^-7, so 1 + 2^-8 is a tie.
  // 1 + 2^-8 -> 1 (even); (1 + 2^-7) + 2^-8 -> 1 + 2^-6 (even); 1 + 2^-8 + 2^-8 is exact.
  auto r = RunHlo(OpModule("add", {"bf16[3]", "bf16[3]"}, "bf16[3]"),
               {MakeLiteral(DType::kBF16, {3}, {1.0, 1.0078125, 1.0}),
                MakeLiteral(DType::kBF16, {3}, {0.00390625, 0.00390625, 0.0078125})});
  EXPECT_EQ(Values(r), (std::vector<double>{1.0, 1.015625, 1.0078125}));
  EXPECT_EQ(U16BitsAt(r, 0), 0x3f80);
  EXPECT_EQ(U16BitsAt(r, 1), 0x3f82);
}

TEST(ElementwiseTest, AddF16RoundsAndOverflows) {
  // f16 spacing near 1 is 2^-10: 1 + 2^-11 ties to 1; (1 + 2^-10) + 2^-11 ties to 1 + 2^-9.
  // 60000 + 10000 exceeds the largest f16 (65504) by more than half a step: inf.
  auto r = RunHlo(OpModule("add", {"f16[3]", "f16[3]"}, "f16[3]"),
               {MakeLiteral(DType::kF16, {3}, {1.0, 1.0009765625, 60000}),
                MakeLiteral(DType::kF16, {3}, {0.00048828125, 0.00048828125, 10000})});
  EXPECT_EQ(Values(r), (std::vector<double>{1.0, 1.001953125, kInf}));
}

TEST(ElementwiseTest, IntegerArithmeticWraps) {
  auto add = RunHlo(OpModule("add", {"s32[2]", "s32[2]"}, "s32[2]"),
                 {MakeLiteral(DType::kS32, {2}, {2147483647, -2147483648.0}),
                  MakeLiteral(DType::kS32, {2}, {1, -1})});
  EXPECT_EQ(Ints(add), (std::vector<int64_t>{kInt32Min, kInt32Max}));
  auto mul = RunHlo(OpModule("multiply", {"s32[2]", "s32[2]"}, "s32[2]"),
                 {MakeLiteral(DType::kS32, {2}, {65536, -3}), MakeLiteral(DType::kS32, {2}, {65536, 7})});
  EXPECT_EQ(Ints(mul), (std::vector<int64_t>{0, -21}));
  // (2^16 - 1)^2 = 2^32 - 2^17 + 1 = 1 mod 2^16; would overflow int if promoted naively.
  auto mul16 = RunHlo(OpModule("multiply", {"u16[1]", "u16[1]"}, "u16[1]"),
                   {MakeLiteral(DType::kU16, {1}, {65535}), MakeLiteral(DType::kU16, {1}, {65535})});
  EXPECT_EQ(Ints(mul16), (std::vector<int64_t>{1}));
  auto add8 = RunHlo(OpModule("add", {"u8[2]", "u8[2]"}, "u8[2]"),
                  {MakeLiteral(DType::kU8, {2}, {200, 16}), MakeLiteral(DType::kU8, {2}, {100, 3})});
  EXPECT_EQ(Ints(add8), (std::vector<int64_t>{44, 19}));
  auto sub = RunHlo(OpModule("subtract", {"s32[1]", "s32[1]"}, "s32[1]"),
                 {MakeLiteral(DType::kS32, {1}, {-2147483648.0}), MakeLiteral(DType::kS32, {1}, {1})});
  EXPECT_EQ(Ints(sub), (std::vector<int64_t>{kInt32Max}));
}

TEST(ElementwiseTest, SignedDivisionAndRemainderCornerCases) {
  const std::vector<double> x = {7, -7, 7, 5, -2147483648.0, -2147483648.0, 0};
  const std::vector<double> y = {2, 2, 0, -1, -1, 0, 0};
  auto div = RunHlo(OpModule("divide", {"s32[7]", "s32[7]"}, "s32[7]"),
                 {MakeLiteral(DType::kS32, {7}, x), MakeLiteral(DType::kS32, {7}, y)});
  EXPECT_EQ(Ints(div), (std::vector<int64_t>{3, -3, -1, -5, kInt32Min, -1, -1}));
  auto rem = RunHlo(OpModule("remainder", {"s32[7]", "s32[7]"}, "s32[7]"),
                 {MakeLiteral(DType::kS32, {7}, x), MakeLiteral(DType::kS32, {7}, y)});
  EXPECT_EQ(Ints(rem), (std::vector<int64_t>{1, -1, 7, 0, 0, kInt32Min, 0}));
}

TEST(ElementwiseTest, UnsignedDivisionByZero) {
  auto div = RunHlo(OpModule("divide", {"u32[2]", "u32[2]"}, "u32[2]"),
                 {MakeLiteral(DType::kU32, {2}, {7, 9}), MakeLiteral(DType::kU32, {2}, {0, 2})});
  EXPECT_EQ(Ints(div), (std::vector<int64_t>{4294967295, 4}));
  auto rem = RunHlo(OpModule("remainder", {"u8[2]", "u8[2]"}, "u8[2]"),
                 {MakeLiteral(DType::kU8, {2}, {7, 9}), MakeLiteral(DType::kU8, {2}, {0, 4})});
  EXPECT_EQ(Ints(rem), (std::vector<int64_t>{7, 1}));
}

TEST(ElementwiseTest, FloatDivideAndRemainder) {
  auto div = RunHlo(OpModule("divide", {"f32[4]", "f32[4]"}, "f32[4]"),
                 {MakeLiteral(DType::kF32, {4}, {1, -1, 0, 1}),
                  MakeLiteral(DType::kF32, {4}, {0, 0, 0, 4})});
  auto v = Values(div);
  EXPECT_EQ(v[0], kInf);
  EXPECT_EQ(v[1], -kInf);
  EXPECT_TRUE(std::isnan(v[2]));
  EXPECT_EQ(v[3], 0.25);
  // fmod: the sign follows the dividend.
  auto rem = RunHlo(OpModule("remainder", {"f32[3]", "f32[3]"}, "f32[3]"),
                 {MakeLiteral(DType::kF32, {3}, {5.5, -5.5, 5.5}),
                  MakeLiteral(DType::kF32, {3}, {2, 2, -2})});
  EXPECT_EQ(Values(rem), (std::vector<double>{1.5, -1.5, 1.5}));
}

TEST(ElementwiseTest, MaxMinPropagateNaN) {
  auto a = MakeLiteral(DType::kF32, {4}, {kNaN, 1, 2, -0.0});
  auto b = MakeLiteral(DType::kF32, {4}, {1, kNaN, 3, 0.0});
  auto mx = Values(RunHlo(OpModule("maximum", {"f32[4]", "f32[4]"}, "f32[4]"), {a, b}));
  auto mn = Values(RunHlo(OpModule("minimum", {"f32[4]", "f32[4]"}, "f32[4]"), {a, b}));
  ASSERT_EQ(mx.size(), 4u);
  ASSERT_EQ(mn.size(), 4u);
  EXPECT_TRUE(std::isnan(mx[0]));
  EXPECT_TRUE(std::isnan(mx[1]));
  EXPECT_EQ(mx[2], 3);
  EXPECT_TRUE(mx[3] == 0 && !std::signbit(mx[3]));
  EXPECT_TRUE(std::isnan(mn[0]));
  EXPECT_TRUE(std::isnan(mn[1]));
  EXPECT_EQ(mn[2], 2);
  EXPECT_TRUE(mn[3] == 0 && std::signbit(mn[3]));

  auto bf = Values(RunHlo(OpModule("maximum", {"bf16[2]", "bf16[2]"}, "bf16[2]"),
                       {MakeLiteral(DType::kBF16, {2}, {kNaN, -4}),
                        MakeLiteral(DType::kBF16, {2}, {5, -8})}));
  EXPECT_TRUE(std::isnan(bf[0]));
  EXPECT_EQ(bf[1], -4);
}

TEST(ElementwiseTest, IntegerMaxMin) {
  auto mx = RunHlo(OpModule("maximum", {"s32[2]", "s32[2]"}, "s32[2]"),
                {MakeLiteral(DType::kS32, {2}, {-3, 5}), MakeLiteral(DType::kS32, {2}, {2, -7})});
  EXPECT_EQ(Ints(mx), (std::vector<int64_t>{2, 5}));
  auto mn = RunHlo(OpModule("minimum", {"u8[2]", "u8[2]"}, "u8[2]"),
                {MakeLiteral(DType::kU8, {2}, {200, 1}), MakeLiteral(DType::kU8, {2}, {100, 2})});
  EXPECT_EQ(Ints(mn), (std::vector<int64_t>{100, 1}));
}

TEST(ElementwiseTest, Power) {
  auto f = RunHlo(OpModule("power", {"f32[3]", "f32[3]"}, "f32[3]"),
               {MakeLiteral(DType::kF32, {3}, {2, 4, 2}), MakeLiteral(DType::kF32, {3}, {10, 0.5, -1})});
  EXPECT_EQ(Values(f), (std::vector<double>{1024, 2, 0.5}));
  auto i = RunHlo(OpModule("power", {"s32[9]", "s32[9]"}, "s32[9]"),
               {MakeLiteral(DType::kS32, {9}, {2, 3, 2, 1, -1, -1, 0, -2, 2}),
                MakeLiteral(DType::kS32, {9}, {10, 0, -1, -5, -3, -4, 0, 3, 32})});
  EXPECT_EQ(Ints(i), (std::vector<int64_t>{1024, 1, 0, 1, -1, 1, 1, -8, 0}));
}

TEST(ElementwiseTest, Atan2) {
  auto r = Values(RunHlo(OpModule("atan2", {"f32[2]", "f32[2]"}, "f32[2]"),
                      {MakeLiteral(DType::kF32, {2}, {1, 1}), MakeLiteral(DType::kF32, {2}, {1, -1})}));
  EXPECT_NEAR(r[0], 0.78539816, 1e-6);
  EXPECT_NEAR(r[1], 2.35619449, 1e-6);
}

TEST(ElementwiseTest, LogicalOps) {
  auto a = MakeLiteral(DType::kS32, {2}, {12, -1});
  auto b = MakeLiteral(DType::kS32, {2}, {10, 5});
  EXPECT_EQ(Ints(RunHlo(OpModule("and", {"s32[2]", "s32[2]"}, "s32[2]"), {a, b})),
            (std::vector<int64_t>{8, 5}));
  EXPECT_EQ(Ints(RunHlo(OpModule("or", {"s32[2]", "s32[2]"}, "s32[2]"), {a, b})),
            (std::vector<int64_t>{14, -1}));
  EXPECT_EQ(Ints(RunHlo(OpModule("xor", {"s32[2]", "s32[2]"}, "s32[2]"), {a, b})),
            (std::vector<int64_t>{6, -6}));
  auto p = MakeLiteral(DType::kPred, {4}, {0, 0, 1, 1});
  auto q = MakeLiteral(DType::kPred, {4}, {0, 1, 0, 1});
  EXPECT_EQ(Ints(RunHlo(OpModule("and", {"pred[4]", "pred[4]"}, "pred[4]"), {p, q})),
            (std::vector<int64_t>{0, 0, 0, 1}));
  EXPECT_EQ(Ints(RunHlo(OpModule("or", {"pred[4]", "pred[4]"}, "pred[4]"), {p, q})),
            (std::vector<int64_t>{0, 1, 1, 1}));
  EXPECT_EQ(Ints(RunHlo(OpModule("xor", {"pred[4]", "pred[4]"}, "pred[4]"), {p, q})),
            (std::vector<int64_t>{0, 1, 1, 0}));
}

TEST(ElementwiseTest, ShiftsByAtLeastTheWidth) {
  // Amounts are unsigned: -1 is 0xffffffff, far beyond the width.
  auto amounts = MakeLiteral(DType::kS32, {4}, {3, 31, 32, -1});
  auto shl = RunHlo(OpModule("shift-left", {"s32[4]", "s32[4]"}, "s32[4]"),
                 {MakeLiteral(DType::kS32, {4}, {1, 1, 1, 1}), amounts});
  EXPECT_EQ(Ints(shl), (std::vector<int64_t>{8, kInt32Min, 0, 0}));
  auto shrl = RunHlo(OpModule("shift-right-logical", {"s32[4]", "s32[4]"}, "s32[4]"),
                  {MakeLiteral(DType::kS32, {4}, {-8, -8, -8, 16}), amounts});
  EXPECT_EQ(Ints(shrl), (std::vector<int64_t>{536870911, 1, 0, 0}));
  auto shra = RunHlo(OpModule("shift-right-arithmetic", {"s32[4]", "s32[4]"}, "s32[4]"),
                  {MakeLiteral(DType::kS32, {4}, {-64, -8, -8, 16}), amounts});
  EXPECT_EQ(Ints(shra), (std::vector<int64_t>{-8, -1, -1, 0}));
  // u8: arithmetic shifts fill with the top bit.
  auto u8 = RunHlo(OpModule("shift-right-arithmetic", {"u8[3]", "u8[3]"}, "u8[3]"),
                {MakeLiteral(DType::kU8, {3}, {0x80, 0x80, 0x40}), MakeLiteral(DType::kU8, {3}, {1, 8, 9})});
  EXPECT_EQ(Ints(u8), (std::vector<int64_t>{0xc0, 0xff, 0}));
  auto u8l = RunHlo(OpModule("shift-left", {"u8[2]", "u8[2]"}, "u8[2]"),
                 {MakeLiteral(DType::kU8, {2}, {255, 1}), MakeLiteral(DType::kU8, {2}, {1, 8})});
  EXPECT_EQ(Ints(u8l), (std::vector<int64_t>{254, 0}));
}

// ---------------------------------------------------------------------------------------------
// Compare, select, clamp.

TEST(ElementwiseTest, CompareTotalOrder) {
  // -0, -0, +NaN, -NaN, +NaN, 1  vs  +0, -0, +NaN, -inf, +inf, +NaN
  auto lhs = F32FromBits({0x80000000u, 0x80000000u, 0x7fc00000u, 0xffc00000u, 0x7fc00000u,
                          0x3f800000u});
  auto rhs = F32FromBits({0x00000000u, 0x80000000u, 0x7fc00000u, 0xff800000u, 0x7f800000u,
                          0x7fc00000u});
  auto lt = RunHlo(OpModule("compare", {"f32[6]", "f32[6]"}, "pred[6]", "direction=LT, type=TOTALORDER"),
                {lhs, rhs});
  EXPECT_EQ(Ints(lt), (std::vector<int64_t>{1, 0, 0, 1, 0, 1}));
  auto eq = RunHlo(OpModule("compare", {"f32[6]", "f32[6]"}, "pred[6]", "direction=EQ, type=TOTALORDER"),
                {lhs, rhs});
  EXPECT_EQ(Ints(eq), (std::vector<int64_t>{0, 1, 1, 0, 0, 0}));
  auto ge = RunHlo(OpModule("compare", {"f32[6]", "f32[6]"}, "pred[6]", "direction=GE, type=TOTALORDER"),
                {lhs, rhs});
  EXPECT_EQ(Ints(ge), (std::vector<int64_t>{0, 1, 1, 0, 1, 0}));
}

TEST(ElementwiseTest, CompareFloatIeee) {
  auto lhs = F32FromBits({0x80000000u, 0x7fc00000u, 0x7fc00000u, 0x3f800000u});  // -0 NaN NaN 1
  auto rhs = F32FromBits({0x00000000u, 0x7fc00000u, 0x3f800000u, 0x40000000u});  // +0 NaN 1 2
  auto eq = RunHlo(OpModule("compare", {"f32[4]", "f32[4]"}, "pred[4]", "direction=EQ"), {lhs, rhs});
  EXPECT_EQ(Ints(eq), (std::vector<int64_t>{1, 0, 0, 0}));
  auto ne = RunHlo(OpModule("compare", {"f32[4]", "f32[4]"}, "pred[4]", "direction=NE, type=FLOAT"),
                {lhs, rhs});
  EXPECT_EQ(Ints(ne), (std::vector<int64_t>{0, 1, 1, 1}));
  auto lt = RunHlo(OpModule("compare", {"f32[4]", "f32[4]"}, "pred[4]", "direction=LT"), {lhs, rhs});
  EXPECT_EQ(Ints(lt), (std::vector<int64_t>{0, 0, 0, 1}));
  auto le = RunHlo(OpModule("compare", {"bf16[2]", "bf16[2]"}, "pred[2]", "direction=LE"),
                {MakeLiteral(DType::kBF16, {2}, {kNaN, 2}), MakeLiteral(DType::kBF16, {2}, {1, 2})});
  EXPECT_EQ(Ints(le), (std::vector<int64_t>{0, 1}));
}

TEST(ElementwiseTest, CompareIntegers) {
  auto a = MakeLiteral(DType::kS32, {3}, {-1, 5, 3});
  auto b = MakeLiteral(DType::kS32, {3}, {1, 5, 2});
  auto gt = RunHlo(OpModule("compare", {"s32[3]", "s32[3]"}, "pred[3]", "direction=GT"), {a, b});
  EXPECT_EQ(Ints(gt), (std::vector<int64_t>{0, 0, 1}));
  auto gt_u = RunHlo(OpModule("compare", {"s32[3]", "s32[3]"}, "pred[3]",
                           "direction=GT, type=UNSIGNED"),
                  {a, b});
  EXPECT_EQ(Ints(gt_u), (std::vector<int64_t>{1, 0, 1}));
  auto ne = RunHlo(OpModule("compare", {"s32[3]", "s32[3]"}, "pred[3]", "direction=NE, type=SIGNED"),
                {a, b});
  EXPECT_EQ(Ints(ne), (std::vector<int64_t>{1, 0, 1}));
  auto u8 = RunHlo(OpModule("compare", {"u8[2]", "u8[2]"}, "pred[2]", "direction=LT"),
                {MakeLiteral(DType::kU8, {2}, {200, 1}), MakeLiteral(DType::kU8, {2}, {100, 2})});
  EXPECT_EQ(Ints(u8), (std::vector<int64_t>{0, 1}));
}

TEST(ElementwiseTest, SelectWithArrayAndScalarPredicate) {
  auto on_true = MakeLiteral(DType::kF32, {3}, {1, 2, 3});
  auto on_false = MakeLiteral(DType::kF32, {3}, {-1, -2, -3});
  auto r = RunHlo(OpModule("select", {"pred[3]", "f32[3]", "f32[3]"}, "f32[3]"),
               {MakeLiteral(DType::kPred, {3}, {1, 0, 1}), on_true, on_false});
  EXPECT_EQ(Values(r), (std::vector<double>{1, -2, 3}));
  auto s = RunHlo(OpModule("select", {"pred[]", "s32[2]", "s32[2]"}, "s32[2]"),
               {MakeLiteral(DType::kPred, {}, {0}), MakeLiteral(DType::kS32, {2}, {7, 8}),
                MakeLiteral(DType::kS32, {2}, {9, 10})});
  EXPECT_EQ(Ints(s), (std::vector<int64_t>{9, 10}));
}

TEST(ElementwiseTest, ClampScalarBoundsAndNaN) {
  auto r = Values(RunHlo(OpModule("clamp", {"f32[]", "f32[5]", "f32[]"}, "f32[5]"),
                      {MakeLiteral(DType::kF32, {}, {0}),
                       MakeLiteral(DType::kF32, {5}, {-1, 0.5, 2, kNaN, 1}),
                       MakeLiteral(DType::kF32, {}, {1})}));
  ASSERT_EQ(r.size(), 5u);
  EXPECT_EQ(r[0], 0);
  EXPECT_EQ(r[1], 0.5);
  EXPECT_EQ(r[2], 1);
  EXPECT_TRUE(std::isnan(r[3]));
  EXPECT_EQ(r[4], 1);
  // A NaN bound propagates: max(NaN, min(x, hi)) is NaN.
  auto n = Values(RunHlo(OpModule("clamp", {"f32[]", "f32[1]", "f32[]"}, "f32[1]"),
                      {MakeLiteral(DType::kF32, {}, {kNaN}), MakeLiteral(DType::kF32, {1}, {3}),
                       MakeLiteral(DType::kF32, {}, {5})}));
  EXPECT_TRUE(std::isnan(n[0]));
  auto i = RunHlo(OpModule("clamp", {"s32[3]", "s32[3]", "s32[3]"}, "s32[3]"),
               {MakeLiteral(DType::kS32, {3}, {0, 0, -5}), MakeLiteral(DType::kS32, {3}, {-3, 4, 9}),
                MakeLiteral(DType::kS32, {3}, {2, 2, 5})});
  EXPECT_EQ(Ints(i), (std::vector<int64_t>{0, 2, 5}));
}

// ---------------------------------------------------------------------------------------------
// Unary.

TEST(ElementwiseTest, UnaryFloatBasics) {
  auto x = MakeLiteral(DType::kF32, {5}, {-2.5, -0.5, 0.5, 1.5, 2.5});
  auto run = [&](const std::string& op) {
    return Values(RunHlo(OpModule(op, {"f32[5]"}, "f32[5]"), {x}));
  };
  EXPECT_EQ(run("abs"), (std::vector<double>{2.5, 0.5, 0.5, 1.5, 2.5}));
  EXPECT_EQ(run("negate"), (std::vector<double>{2.5, 0.5, -0.5, -1.5, -2.5}));
  EXPECT_EQ(run("floor"), (std::vector<double>{-3, -1, 0, 1, 2}));
  EXPECT_EQ(run("ceil"), (std::vector<double>{-2, -0.0, 1, 2, 3}));
  EXPECT_EQ(run("round-nearest-even"), (std::vector<double>{-2, -0.0, 0, 2, 2}));
  EXPECT_EQ(run("round-nearest-afz"), (std::vector<double>{-3, -1, 1, 2, 3}));
}

TEST(ElementwiseTest, SignOfFloatsAndInts) {
  auto f = Values(RunHlo(OpModule("sign", {"f32[5]"}, "f32[5]"),
                      {MakeLiteral(DType::kF32, {5}, {-2, -0.0, 0.0, kNaN, 3})}));
  EXPECT_EQ(f[0], -1);
  EXPECT_TRUE(f[1] == 0 && std::signbit(f[1]));
  EXPECT_TRUE(f[2] == 0 && !std::signbit(f[2]));
  EXPECT_TRUE(std::isnan(f[3]));
  EXPECT_EQ(f[4], 1);
  auto i = RunHlo(OpModule("sign", {"s32[3]"}, "s32[3]"), {MakeLiteral(DType::kS32, {3}, {-5, 0, 7})});
  EXPECT_EQ(Ints(i), (std::vector<int64_t>{-1, 0, 1}));
}

TEST(ElementwiseTest, UnaryTranscendentals) {
  auto run = [&](const std::string& op, std::vector<double> in) {
    int64_t n = static_cast<int64_t>(in.size());
    std::string shape = "f32[" + std::to_string(n) + "]";
    return Values(RunHlo(OpModule(op, {shape}, shape), {MakeLiteral(DType::kF32, {n}, in)}));
  };
  auto near = [](std::vector<double> got, std::vector<double> want) {
    ASSERT_EQ(got.size(), want.size());
    // Relative to the expected value, so that tiny results (expm1(1e-10)) are checked too.
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], 3e-7 * std::fabs(want[i]) + 1e-15) << i;
    }
  };
  near(run("exponential", {0, 1, -1}), {1, 2.718281828, 0.367879441});
  near(run("exponential-minus-one", {0, 1e-10, 1}), {0, 1e-10, 1.718281828});
  near(run("log", {1, 2.718281828, 0.5}), {0, 1, -0.693147181});
  near(run("log-plus-one", {0, 1e-10, 1}), {0, 1e-10, 0.693147181});
  near(run("sqrt", {4, 2, 0}), {2, 1.414213562, 0});
  near(run("rsqrt", {4, 0.25}), {0.5, 2});
  near(run("cbrt", {-27, 8, 2}), {-3, 2, 1.259921050});
  near(run("tanh", {0, 1, -20}), {0, 0.761594156, -1});
  near(run("logistic", {0, 2, -2}), {0.5, 0.880797078, 0.119202922});
  near(run("sine", {0, 1.570796327, 1}), {0, 1, 0.841470985});
  near(run("cosine", {0, 3.141592654, 1}), {1, -1, 0.540302306});
  near(run("tan", {0, 0.785398163, 1}), {0, 1, 1.557407725});
  near(run("erf", {0, 1, -0.5}), {0, 0.842700793, -0.520499878});
  auto edge = run("logistic", {-kInf, kInf});
  EXPECT_EQ(edge, (std::vector<double>{0, 1}));
  auto lg = run("log", {0, -1});
  EXPECT_EQ(lg[0], -kInf);
  EXPECT_TRUE(std::isnan(lg[1]));
}

TEST(ElementwiseTest, UnaryBf16RoundsResult) {
  // sqrt(2) = 1.41421356...; the bf16 neighbours are 1.4140625 and 1.421875.
  auto r = RunHlo(OpModule("sqrt", {"bf16[2]"}, "bf16[2]"), {MakeLiteral(DType::kBF16, {2}, {2, 4})});
  EXPECT_EQ(Values(r), (std::vector<double>{1.4140625, 2}));
  // exp(1) = 2.71828...; f16 neighbours are 2.716796875 and 2.71875 (spacing 2^-9).
  auto h = RunHlo(OpModule("exponential", {"f16[1]"}, "f16[1]"), {MakeLiteral(DType::kF16, {1}, {1})});
  EXPECT_EQ(Values(h), (std::vector<double>{2.71875}));
}

TEST(ElementwiseTest, IsFinite) {
  auto r = RunHlo(OpModule("is-finite", {"f32[4]"}, "pred[4]"),
               {MakeLiteral(DType::kF32, {4}, {1, kInf, -kInf, kNaN})});
  EXPECT_EQ(Ints(r), (std::vector<int64_t>{1, 0, 0, 0}));
  auto h = RunHlo(OpModule("is-finite", {"bf16[2]"}, "pred[2]"),
               {MakeLiteral(DType::kBF16, {2}, {-3, kInf})});
  EXPECT_EQ(Ints(h), (std::vector<int64_t>{1, 0}));
}

TEST(ElementwiseTest, IntegerUnary) {
  auto x = MakeLiteral(DType::kS32, {4}, {0, 7, -1, -2147483648.0});
  EXPECT_EQ(Ints(RunHlo(OpModule("not", {"s32[4]"}, "s32[4]"), {x})),
            (std::vector<int64_t>{-1, -8, 0, kInt32Max}));
  EXPECT_EQ(Ints(RunHlo(OpModule("popcnt", {"s32[4]"}, "s32[4]"), {x})),
            (std::vector<int64_t>{0, 3, 32, 1}));
  EXPECT_EQ(Ints(RunHlo(OpModule("count-leading-zeros", {"s32[4]"}, "s32[4]"), {x})),
            (std::vector<int64_t>{32, 29, 0, 0}));
  EXPECT_EQ(Ints(RunHlo(OpModule("negate", {"s32[4]"}, "s32[4]"), {x})),
            (std::vector<int64_t>{0, -7, 1, kInt32Min}));
  EXPECT_EQ(Ints(RunHlo(OpModule("abs", {"s32[4]"}, "s32[4]"), {x})),
            (std::vector<int64_t>{0, 7, 1, kInt32Min}));
  auto u = MakeLiteral(DType::kU8, {2}, {0x0f, 1});
  EXPECT_EQ(Ints(RunHlo(OpModule("not", {"u8[2]"}, "u8[2]"), {u})), (std::vector<int64_t>{0xf0, 0xfe}));
  EXPECT_EQ(Ints(RunHlo(OpModule("count-leading-zeros", {"u8[2]"}, "u8[2]"), {u})),
            (std::vector<int64_t>{4, 7}));
  EXPECT_EQ(Ints(RunHlo(OpModule("popcnt", {"u8[2]"}, "u8[2]"), {u})), (std::vector<int64_t>{4, 1}));
  auto p = RunHlo(OpModule("not", {"pred[2]"}, "pred[2]"), {MakeLiteral(DType::kPred, {2}, {1, 0})});
  EXPECT_EQ(Ints(p), (std::vector<int64_t>{0, 1}));
}

// ---------------------------------------------------------------------------------------------
// convert, bitcast-convert, reduce-precision.

TEST(ElementwiseTest, ConvertF32ToS32TruncatesAndSaturates) {
  auto r = RunHlo(OpModule("convert", {"f32[8]"}, "s32[8]"),
               {MakeLiteral(DType::kF32, {8}, {1.9, -1.9, 3e9, -3e9, kNaN, kInf, -kInf, 2147483520})});
  EXPECT_EQ(Ints(r), (std::vector<int64_t>{1, -1, kInt32Max, kInt32Min, 0, kInt32Max, kInt32Min,
                                           2147483520}));
  auto u = RunHlo(OpModule("convert", {"f32[4]"}, "u8[4]"),
               {MakeLiteral(DType::kF32, {4}, {-5, 300, 255.9, 3.7})});
  EXPECT_EQ(Ints(u), (std::vector<int64_t>{0, 255, 255, 3}));
}

TEST(ElementwiseTest, ConvertIntToFloatRoundsToNearestEven) {
  // Above 2^24 f32 spacing is 2: 16777217 ties to 16777216, 16777219 ties to 16777220.
  auto f = RunHlo(OpModule("convert", {"s32[3]"}, "f32[3]"),
               {MakeLiteral(DType::kS32, {3}, {16777217, 16777219, -3})});
  EXPECT_EQ(Values(f), (std::vector<double>{16777216, 16777220, -3}));
  // 2^24 + 2^16 + 1 is just above the bf16 tie between 2^24 and 2^24 + 2^17; rounding through
  // f32 first would land exactly on the tie and wrongly pick 2^24.
  auto b = RunHlo(OpModule("convert", {"s32[2]"}, "bf16[2]"),
               {MakeLiteral(DType::kS32, {2}, {16842753, 16842752})});
  EXPECT_EQ(Values(b), (std::vector<double>{16908288, 16777216}));
}

TEST(ElementwiseTest, ConvertBetweenFloats) {
  auto b = RunHlo(OpModule("convert", {"f32[3]"}, "bf16[3]"),
               {MakeLiteral(DType::kF32, {3}, {1.00390625, 1.01171875, 1.00390625 + 0x1p-20})});
  EXPECT_EQ(Values(b), (std::vector<double>{1.0, 1.015625, 1.0078125}));
  auto h = RunHlo(OpModule("convert", {"bf16[4]"}, "f16[4]"),
               {MakeLiteral(DType::kBF16, {4}, {1.5, 65536, 0x1p-20, -0.0})});
  auto hv = Values(h);
  EXPECT_EQ(hv[0], 1.5);
  EXPECT_EQ(hv[1], kInf);
  EXPECT_EQ(hv[2], 0x1p-20);  // an f16 subnormal, exactly 16 * 2^-24
  EXPECT_TRUE(hv[3] == 0 && std::signbit(hv[3]));
  // f64 -> bf16 in one rounding: 1 + 2^-8 + 2^-40 is just above a tie.
  auto d = RunHlo(OpModule("convert", {"f64[1]"}, "bf16[1]"),
               {MakeLiteral(DType::kF64, {1}, {1.0 + 0x1p-8 + 0x1p-40})});
  EXPECT_EQ(Values(d), (std::vector<double>{1.0078125}));
}

TEST(ElementwiseTest, ConvertToAndFromPred) {
  auto p = RunHlo(OpModule("convert", {"f32[4]"}, "pred[4]"),
               {MakeLiteral(DType::kF32, {4}, {0, -0.0, 0.5, kNaN})});
  EXPECT_EQ(Ints(p), (std::vector<int64_t>{0, 0, 1, 1}));
  auto q = RunHlo(OpModule("convert", {"s32[3]"}, "pred[3]"), {MakeLiteral(DType::kS32, {3}, {0, 2, -1})});
  EXPECT_EQ(Ints(q), (std::vector<int64_t>{0, 1, 1}));
  auto f = RunHlo(OpModule("convert", {"pred[2]"}, "f32[2]"), {MakeLiteral(DType::kPred, {2}, {1, 0})});
  EXPECT_EQ(Values(f), (std::vector<double>{1, 0}));
  auto w = RunHlo(OpModule("convert", {"s32[2]"}, "s8[2]"), {MakeLiteral(DType::kS32, {2}, {300, -129})});
  EXPECT_EQ(Ints(w), (std::vector<int64_t>{44, 127}));
}

TEST(ElementwiseTest, BitcastConvert) {
  auto s = RunHlo(OpModule("bitcast-convert", {"f32[2]"}, "s32[2]"),
               {MakeLiteral(DType::kF32, {2}, {1.0, -2.0})});
  EXPECT_EQ(Ints(s), (std::vector<int64_t>{0x3f800000, -1073741824}));
  auto f = RunHlo(OpModule("bitcast-convert", {"s32[2]"}, "f32[2]"),
               {MakeLiteral(DType::kS32, {2}, {0x40400000, -1082130432})});
  EXPECT_EQ(Values(f), (std::vector<double>{3.0, -1.0}));
  // Narrowing adds a minor dimension; the low half comes first (little-endian element order).
  auto u = RunHlo(OpModule("bitcast-convert", {"f32[2]"}, "u16[2,2]"),
               {MakeLiteral(DType::kF32, {2}, {1.0, -2.0})});
  EXPECT_EQ(Ints(u), (std::vector<int64_t>{0, 0x3f80, 0, 0xc000}));
  auto back = RunHlo(OpModule("bitcast-convert", {"u16[2,2]"}, "f32[2]"),
                  {MakeLiteral(DType::kU16, {2, 2}, {0, 0x3f80, 0, 0x4000})});
  EXPECT_EQ(Values(back), (std::vector<double>{1.0, 2.0}));
}

TEST(ElementwiseTest, ReducePrecision) {
  // To bf16's format: ties to even, and a value just above a tie rounds up; NaN stays NaN.
  auto b = Values(RunHlo(OpModule("reduce-precision", {"f32[4]"}, "f32[4]",
                               "exponent_bits=8, mantissa_bits=7"),
                      {MakeLiteral(DType::kF32, {4}, {1.00390625, 1.00390625 + 0x1p-20, kNaN,
                                                      1.01171875})}));
  EXPECT_EQ(b[0], 1.0);
  EXPECT_EQ(b[1], 1.0078125);
  EXPECT_TRUE(std::isnan(b[2]));
  EXPECT_EQ(b[3], 1.015625);
  // To f16's format: 70000 overflows to inf, 1e-8 (below f16's normals) flushes to a signed 0.
  auto h = Values(RunHlo(OpModule("reduce-precision", {"f32[4]"}, "f32[4]",
                               "exponent_bits=5, mantissa_bits=10"),
                      {MakeLiteral(DType::kF32, {4}, {70000, 1e-8, -1e-8, 1.0 + 0x1p-11})}));
  EXPECT_EQ(h[0], kInf);
  EXPECT_TRUE(h[1] == 0 && !std::signbit(h[1]));
  EXPECT_TRUE(h[2] == 0 && std::signbit(h[2]));
  EXPECT_EQ(h[3], 1.0);
}

TEST(ElementwiseTest, MapAppliesComputationPerElement) {
  const std::string text = R"(HloModule m
mul_add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  m = f32[] multiply(x, y)
  ROOT s = f32[] add(m, x)
}
ENTRY main {
  a = f32[3] parameter(0)
  b = f32[3] parameter(1)
  ROOT r = f32[3] map(a, b), dimensions={0}, to_apply=mul_add
}
)";
  auto r = RunHlo(text, {MakeLiteral(DType::kF32, {3}, {1, 2, 3}), MakeLiteral(DType::kF32, {3}, {4, 5, 6})});
  EXPECT_EQ(Values(r), (std::vector<double>{5, 12, 21}));
}

TEST(ElementwiseTest, MismatchedOperandIsAnErrorNotACrash) {
  // The declared result is larger than the operands: must be refused (by the verifier or here).
  auto r = TryRun(OpModule("add", {"f32[2]", "f32[2]"}, "f32[3]"),
                  {MakeLiteral(DType::kF32, {2}, {1, 2}), MakeLiteral(DType::kF32, {2}, {3, 4})});
  EXPECT_FALSE(r.ok());
  auto c = TryRun(OpModule("compare", {"f32[2]", "s32[2]"}, "pred[2]", "direction=EQ"),
                  {MakeLiteral(DType::kF32, {2}, {1, 2}), MakeLiteral(DType::kS32, {2}, {1, 2})});
  EXPECT_FALSE(c.ok());
}

}  // namespace
}  // namespace mk::interp
