// sort: fast-path comparators (one LT/GT compare), the general path (JAX's jnp.sort comparator),
// multiple operands, stability and the IEEE total order. Expected orders are worked out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "interp/test_util.h"

namespace mk::interp {
namespace {

using hlo::DType;
using testing::MakeLiteral;
using testing::TryRun;
using testing::Values;

// gtest's Test::Run hides a plain `Run` inside test bodies.
hlo::Literal Eval(const std::string& text, const std::vector<hlo::Literal>& args) {
  return testing::Run(text, args);
}

// A one-operand sort module: `type` the element type, `dims` its dims, `compare` the root of
// the comparator over parameters p0, p1.
std::string SortModule(const std::string& type, const std::string& dims, int sort_dim,
                       const std::string& compare) {
  return "HloModule m\ncmp {\n  p0 = " + type + "[] parameter(0)\n  p1 = " + type +
         "[] parameter(1)\n  ROOT c = pred[] " + compare + "\n}\nENTRY main {\n  x = " + type +
         "[" + dims + "] parameter(0)\n  ROOT s = " + type + "[" + dims +
         "] sort(x), dimensions={" + std::to_string(sort_dim) + "}, is_stable=true, to_apply=cmp\n}\n";
}

TEST(SortTest, AscendingF32) {
  auto out = Eval(SortModule("f32", "5", 0, "compare(p0, p1), direction=LT"),
                  {MakeLiteral(DType::kF32, {5}, {3, 1, 2, -5, 0.5})});
  EXPECT_EQ(Values(out), (std::vector<double>{-5, 0.5, 1, 2, 3}));
}

TEST(SortTest, DescendingWithGtAndWithSwappedParameters) {
  auto in = MakeLiteral(DType::kS32, {5}, {3, -1, 7, 3, 0});
  EXPECT_EQ(Values(Eval(SortModule("s32", "5", 0, "compare(p0, p1), direction=GT"), {in})),
            (std::vector<double>{7, 3, 3, 0, -1}));
  EXPECT_EQ(Values(Eval(SortModule("s32", "5", 0, "compare(p1, p0), direction=LT"), {in})),
            (std::vector<double>{7, 3, 3, 0, -1}));
}

TEST(SortTest, UnsignedUsesUnsignedOrder) {
  auto in = MakeLiteral(DType::kU8, {4}, {200, 3, 255, 0});
  EXPECT_EQ(Values(Eval(SortModule("u8", "4", 0, "compare(p0, p1), direction=LT"), {in})),
            (std::vector<double>{0, 3, 200, 255}));
}

// Sorting a 2x3 matrix along each dimension.
TEST(SortTest, AlongEitherDimension) {
  auto in = MakeLiteral(DType::kF32, {2, 3}, {5, 1, 3, 0, 6, 2});
  EXPECT_EQ(Values(Eval(SortModule("f32", "2,3", 1, "compare(p0, p1), direction=LT"), {in})),
            (std::vector<double>{1, 3, 5, 0, 2, 6}));
  EXPECT_EQ(Values(Eval(SortModule("f32", "2,3", 0, "compare(p0, p1), direction=LT"), {in})),
            (std::vector<double>{0, 1, 2, 5, 6, 3}));
}

TEST(SortTest, Bf16Descending) {
  auto in = MakeLiteral(DType::kBF16, {4}, {0.5, -2, 8, 1.5});
  EXPECT_EQ(Values(Eval(SortModule("bf16", "4", 0, "compare(p0, p1), direction=GT"), {in})),
            (std::vector<double>{8, 1.5, 0.5, -2}));
}

// lax.sort((keys, values), num_keys=1) as JAX emits it: equal keys keep their input order.
const char* kKeyValueSort = R"(
HloModule m
region_0.1 {
  sort.6 = f32[] parameter(2)
  sort.7 = f32[] parameter(3)
  sort.4 = s32[] parameter(0)
  sort.5 = s32[] parameter(1)
  ROOT lt_to.1 = pred[] compare(sort.4, sort.5), direction=DIR
}
ENTRY main.2 {
  k.1 = s32[6] parameter(0)
  v.1 = f32[6] parameter(1)
  ROOT sort.11 = (s32[6], f32[6]) sort(k.1, v.1), dimensions={0}, is_stable=true, to_apply=region_0.1
})";

TEST(SortTest, KeyValueIsStable) {
  auto keys = MakeLiteral(DType::kS32, {6}, {3, 1, 3, 2, 1, 3});
  auto vals = MakeLiteral(DType::kF32, {6}, {10, 11, 12, 13, 14, 15});
  std::string text = kKeyValueSort;
  text.replace(text.find("DIR"), 3, "LT");
  auto out = Eval(text, {keys, vals});
  ASSERT_EQ(out.elements().size(), 2u);
  EXPECT_EQ(Values(out.elements()[0]), (std::vector<double>{1, 1, 2, 3, 3, 3}));
  EXPECT_EQ(Values(out.elements()[1]), (std::vector<double>{11, 14, 13, 10, 12, 15}));

  text = kKeyValueSort;
  text.replace(text.find("DIR"), 3, "GT");
  out = Eval(text, {keys, vals});
  EXPECT_EQ(Values(out.elements()[0]), (std::vector<double>{3, 3, 3, 2, 1, 1}));
  EXPECT_EQ(Values(out.elements()[1]), (std::vector<double>{10, 12, 15, 13, 11, 14}));
}

// Sorting by the second operand: compare(p2, p3).
TEST(SortTest, KeyInSecondOperand) {
  const char* hlo = R"(
HloModule m
cmp {
  a0 = f32[] parameter(0)
  a1 = f32[] parameter(1)
  b0 = s32[] parameter(2)
  b1 = s32[] parameter(3)
  ROOT c = pred[] compare(b0, b1), direction=LT
}
ENTRY main {
  v = f32[3] parameter(0)
  k = s32[3] parameter(1)
  ROOT s = (f32[3], s32[3]) sort(v, k), dimensions={0}, to_apply=cmp
})";
  auto out = Eval(hlo, {MakeLiteral(DType::kF32, {3}, {0.5, 1.5, 2.5}),
                        MakeLiteral(DType::kS32, {3}, {9, -4, 0})});
  EXPECT_EQ(Values(out.elements()[0]), (std::vector<double>{1.5, 2.5, 0.5}));
  EXPECT_EQ(Values(out.elements()[1]), (std::vector<double>{-4, 0, 9}));
}

// TOTALORDER: -NaN < -Inf < -1 < -0 < +0 < 1 < +Inf < +NaN.
TEST(SortTest, TotalOrderPlacesNaNsAndSignedZeros) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  auto in = MakeLiteral(DType::kF32, {8}, {nan, 1, 0.0, -nan, -inf, -0.0, inf, -1});
  auto out = Eval(SortModule("f32", "8", 0, "compare(p0, p1), direction=LT, type=TOTALORDER"),
                  {in});
  auto v = Values(out);
  ASSERT_EQ(v.size(), 8u);
  EXPECT_TRUE(std::isnan(v[0]) && std::signbit(v[0]));
  EXPECT_EQ(v[1], -inf);
  EXPECT_EQ(v[2], -1);
  EXPECT_TRUE(v[3] == 0 && std::signbit(v[3]));
  EXPECT_TRUE(v[4] == 0 && !std::signbit(v[4]));
  EXPECT_EQ(v[5], 1);
  EXPECT_EQ(v[6], inf);
  EXPECT_TRUE(std::isnan(v[7]) && !std::signbit(v[7]));

  // Descending total order is the exact reverse.
  out = Eval(SortModule("f32", "8", 0, "compare(p0, p1), direction=GT, type=TOTALORDER"), {in});
  v = Values(out);
  EXPECT_TRUE(std::isnan(v[0]) && !std::signbit(v[0]));
  EXPECT_TRUE(v[4] == 0 && std::signbit(v[4]));
  EXPECT_TRUE(std::isnan(v[7]) && std::signbit(v[7]));
}

// jnp.sort's comparator (canonicalizes NaN and -0, then a TOTALORDER compare) goes through the
// general path: -0 and 0 compare equal and keep their input order; NaN sorts last.
TEST(SortTest, JaxSortComparatorGeneralPath) {
  const char* hlo = R"(
HloModule m
region_0.1 {
  sort.2 = f32[] parameter(0)
  ne.2 = pred[] compare(sort.2, sort.2), direction=NE
  constant.2 = f32[] constant(nan)
  constant.3 = f32[] constant(0)
  eq.2 = pred[] compare(sort.2, constant.3), direction=EQ
  select_n.4 = f32[] select(eq.2, constant.3, sort.2)
  select_n.5 = f32[] select(ne.2, constant.2, select_n.4)
  sort.3 = f32[] parameter(1)
  ne.3 = pred[] compare(sort.3, sort.3), direction=NE
  eq.3 = pred[] compare(sort.3, constant.3), direction=EQ
  select_n.6 = f32[] select(eq.3, constant.3, sort.3)
  select_n.7 = f32[] select(ne.3, constant.2, select_n.6)
  ROOT lt_to.1 = pred[] compare(select_n.5, select_n.7), direction=LT, type=TOTALORDER
}
ENTRY main {
  x = f32[6] parameter(0)
  ROOT s = f32[6] sort(x), dimensions={0}, is_stable=true, to_apply=region_0.1
})";
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto v = Values(Eval(hlo, {MakeLiteral(DType::kF32, {6}, {3, 1, nan, -0.0, 0.0, -1})}));
  ASSERT_EQ(v.size(), 6u);
  EXPECT_EQ(v[0], -1);
  EXPECT_TRUE(v[1] == 0 && std::signbit(v[1]));
  EXPECT_TRUE(v[2] == 0 && !std::signbit(v[2]));
  EXPECT_EQ(v[3], 1);
  EXPECT_EQ(v[4], 3);
  EXPECT_TRUE(std::isnan(v[5]));
}

TEST(SortTest, ComparatorWithWrongArityIsAnError) {
  const char* hlo = R"(
HloModule m
cmp {
  p0 = f32[] parameter(0)
  p1 = f32[] parameter(1)
  ROOT c = pred[] compare(p0, p1), direction=LT
}
ENTRY main {
  x = f32[3] parameter(0)
  y = f32[3] parameter(1)
  ROOT s = (f32[3], f32[3]) sort(x, y), dimensions={0}, to_apply=cmp
})";
  auto r = TryRun(hlo, {MakeLiteral(DType::kF32, {3}, {1, 2, 3}),
                        MakeLiteral(DType::kF32, {3}, {1, 2, 3})});
  EXPECT_FALSE(r.ok());
}

}  // namespace
}  // namespace mk::interp
