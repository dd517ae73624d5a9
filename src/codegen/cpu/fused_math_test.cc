// fused_math.h: which op compositions are recognized (jax.nn.softplus as printed by XLA, with
// operand orders swapped and the x - 0 form) and which are not (a nonzero or unknown "zero", a
// different value under the abs, other types).
#include "codegen/cpu/fused_math.h"

#include <gtest/gtest.h>

#include "hlo/parser.h"

namespace mk::codegen::cpu {
namespace {

constexpr const char* kModule = R"(
HloModule softplus
ENTRY main {
  x = f32[4,8] parameter(0)
  y = f32[4,8] parameter(1)
  h = bf16[4,8] parameter(2)
  z = f32[] constant(0)
  zb = f32[4,8] broadcast(z), dimensions={}
  nz = f32[] constant(-0)
  nzr = f32[1,1] reshape(nz)
  nzb = f32[4,8] broadcast(nzr), dimensions={0,1}
  one = f32[] constant(1)
  oneb = f32[4,8] broadcast(one), dimensions={}
  zeros = f32[4,8] constant({{0,0,0,0,0,0,0,0},{0,0,0,0,0,0,0,0},{0,0,0,0,0,0,0,0},{0,0,0,0,0,0,0,0}})

  m = f32[4,8] maximum(x, zb)
  a = f32[4,8] abs(x)
  n = f32[4,8] negate(a)
  e = f32[4,8] exponential(n)
  l = f32[4,8] log-plus-one(e)
  jax = f32[4,8] add(m, l)

  m2 = f32[4,8] maximum(nzb, x)
  swapped = f32[4,8] add(l, m2)

  d = f32[4,8] subtract(x, zeros)
  a3 = f32[4,8] abs(d)
  n3 = f32[4,8] negate(a3)
  e3 = f32[4,8] exponential(n3)
  l3 = f32[4,8] log-plus-one(e3)
  minus_zero = f32[4,8] add(m, l3)

  m4 = f32[4,8] maximum(x, oneb)
  max_one = f32[4,8] add(m4, l)

  m5 = f32[4,8] maximum(x, y)
  max_param = f32[4,8] add(m5, l)

  m6 = f32[4,8] maximum(y, zb)
  other_x = f32[4,8] add(m6, l)

  e7 = f32[4,8] exponential(a)
  l7 = f32[4,8] log-plus-one(e7)
  no_negate = f32[4,8] add(m, l7)

  hz = bf16[] constant(0)
  hzb = bf16[4,8] broadcast(hz), dimensions={}
  hm = bf16[4,8] maximum(h, hzb)
  ha = bf16[4,8] abs(h)
  hn = bf16[4,8] negate(ha)
  he = bf16[4,8] exponential(hn)
  hl = bf16[4,8] log-plus-one(he)
  half = bf16[4,8] add(hm, hl)

  ROOT t = (f32[4,8], f32[4,8], f32[4,8], f32[4,8], f32[4,8], f32[4,8], f32[4,8], bf16[4,8]) tuple(jax, swapped, minus_zero, max_one, max_param, other_x, no_negate, half)
}
)";

class FusedMathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = hlo::ParseModule(kModule, "softplus.hlo");
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    module_ = std::move(*m);
  }
  const hlo::Instruction& Get(const std::string& name) const {
    const hlo::Instruction* i = module_->entry()->FindInstruction(name);
    EXPECT_NE(i, nullptr) << name;
    return *i;
  }
  std::unique_ptr<hlo::Module> module_;
};

TEST_F(FusedMathTest, RecognizesSoftplusAsJaxWritesIt) {
  const hlo::Instruction* x = &Get("x");
  EXPECT_EQ(SoftplusInput(Get("jax")), x);
  EXPECT_EQ(SoftplusInput(Get("swapped")), x);     // add and max operands swapped, -0
  EXPECT_EQ(SoftplusInput(Get("minus_zero")), x);  // abs(x - 0), a zero array constant
}

TEST_F(FusedMathTest, RejectsLookalikes) {
  EXPECT_EQ(SoftplusInput(Get("max_one")), nullptr);    // max(x, 1)
  EXPECT_EQ(SoftplusInput(Get("max_param")), nullptr);  // max(x, y): y is not known to be 0
  EXPECT_EQ(SoftplusInput(Get("other_x")), nullptr);    // max(y, 0) + log1p(exp(-|x|))
  EXPECT_EQ(SoftplusInput(Get("no_negate")), nullptr);  // log1p(exp(|x|))
  EXPECT_EQ(SoftplusInput(Get("half")), nullptr);       // bf16: every op rounds, keep them
  EXPECT_EQ(SoftplusInput(Get("l")), nullptr);          // not an add
}

TEST_F(FusedMathTest, ZeroSplatsThroughBroadcastsAndReshapes) {
  EXPECT_TRUE(IsZeroSplat(Get("zb")));
  EXPECT_TRUE(IsZeroSplat(Get("nzb")));
  EXPECT_TRUE(IsZeroSplat(Get("zeros")));
  EXPECT_FALSE(IsZeroSplat(Get("oneb")));
  EXPECT_FALSE(IsZeroSplat(Get("y")));
}

}  // namespace
}  // namespace mk::codegen::cpu
