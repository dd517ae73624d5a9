// Which small values the CPU emitter computes once per call, and that the kernels reading the
// hoisted arrays agree with the interpreter.
#include "codegen/cpu/hoist_plan.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

#include "codegen/cpu/test_harness.h"
#include "hlo/parser.h"
#include "interp/interpreter.h"

namespace mk::codegen::cpu {
namespace {

// A retention-style decay mask ([4,64,64]: per head h, gamma_h^(i-j) below the diagonal, as
// exp(log(gamma_h) * (i - j))) whose per-head log(1 - 2^(-5-h)) is derived from an iota, then
// scaled by x and normalized by its row sums. lg is the last small value before the broadcast;
// g feeds only lg; half (an iota times a constant) costs nothing; rs, one per row, reads a
// reduce and is left to the row loop.
const char* kModule = R"(
HloModule decay
add_fn {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[4,64,64] parameter(0)
  one = f32[] constant(1)
  c5 = f32[] constant(-5)
  ln2 = f32[] constant(0.693147182)
  zero = f32[] constant(0)
  hal = f32[] constant(0.5)
  h = f32[4] iota(), iota_dimension=0
  c5b = f32[4] broadcast(c5), dimensions={}
  e0 = f32[4] subtract(c5b, h)
  ln2b = f32[4] broadcast(ln2), dimensions={}
  e1 = f32[4] multiply(e0, ln2b)
  g = f32[4] exponential(e1)
  oneb = f32[4] broadcast(one), dimensions={}
  gm = f32[4] subtract(oneb, g)
  lg = f32[4] log(gm)
  i = s32[64,64] iota(), iota_dimension=0
  j = s32[64,64] iota(), iota_dimension=1
  d = s32[64,64] subtract(i, j)
  df = f32[64,64] convert(d)
  below = pred[64,64] compare(i, j), direction=GE
  lgb = f32[4,64,64] broadcast(lg), dimensions={0}
  dfb = f32[4,64,64] broadcast(df), dimensions={1,2}
  p = f32[4,64,64] multiply(lgb, dfb)
  ex = f32[4,64,64] exponential(p)
  belowb = pred[4,64,64] broadcast(below), dimensions={1,2}
  zb = f32[4,64,64] broadcast(zero), dimensions={}
  mask = f32[4,64,64] select(belowb, ex, zb)
  hi = f32[64] iota(), iota_dimension=0
  halb = f32[64] broadcast(hal), dimensions={}
  half = f32[64] multiply(hi, halb)
  halfb = f32[4,64,64] broadcast(half), dimensions={2}
  xm = f32[4,64,64] multiply(x, mask)
  xh = f32[4,64,64] add(xm, halfb)
  s = f32[4,64] reduce(xh, zero), dimensions={2}, to_apply=add_fn
  rs = f32[4,64] rsqrt(s)
  rsb = f32[4,64,64] broadcast(rs), dimensions={0,1}
  ROOT y = f32[4,64,64] multiply(xh, rsb)
}
)";

class HoistPlanTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cache_dir_ = testing::MakeTempDir("mk-hoist-plan"); }
  static void TearDownTestSuite() { std::filesystem::remove_all(cache_dir_); }
  static std::string cache_dir_;
};
std::string HoistPlanTest::cache_dir_;

TEST_F(HoistPlanTest, OnlyTheLastCostlySmallValueBeforeABroadcastIsHoisted) {
  auto module = hlo::ParseModule(kModule, "decay.hlo");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto plan = analysis::PlanFusion(**module);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  std::set<std::string> hoisted;
  for (const auto& k : plan->kernels) {
    for (const hlo::Instruction* inst : PlanHoisted(k)) hoisted.insert(inst->name);
  }
  EXPECT_EQ(hoisted, (std::set<std::string>{"lg"}));
}

TEST_F(HoistPlanTest, KernelsReadingHoistedValuesAgreeWithTheInterpreter) {
  auto module = hlo::ParseModule(kModule, "decay.hlo");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto plan = analysis::PlanFusion(**module);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  for (uint32_t seed : {1u, 2u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    auto args = testing::RandomArgs(**module, seed);
    auto want = interp::Evaluate(**module, args);
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    std::string source;
    auto got = testing::RunWithContractionParams(*plan, args, {}, cache_dir_, &source);
    EXPECT_EQ(testing::Occurrences(source, "once per call, not per element"), 1u) << source;
    // exp and log in the kernel's polynomials against libm's, then a row sum and an rsqrt.
    ASSERT_TRUE(testing::OutputsNear(got, {*want}, 1e-5));
  }
}

}  // namespace
}  // namespace mk::codegen::cpu
