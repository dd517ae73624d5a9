#include "codegen/cpu/cpu_emitter.h"
#include "codegen/cpu/test_harness.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "analysis/fusion_plan.h"
#include "hlo/parser.h"
#include "interp/interpreter.h"
#include "runtime/cpu_executor.h"

namespace mk::codegen::cpu {
namespace {

class CpuEmitterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cache_dir_ = testing::MakeTempDir("mk-codegen-test"); }
  static void TearDownTestSuite() { std::filesystem::remove_all(cache_dir_); }

  // Compiles `text` for the CPU, runs it and the interpreter on the same random inputs and
  // expects every output element to agree within `tol` (relative to max(1, |expected|)).
  void ExpectMatchesInterpreter(const std::string& text, double tol = 1e-5,
                                analysis::FusionOptions options = {}) {
    auto module = hlo::ParseModule(text, "test.hlo");
    ASSERT_TRUE(module.ok()) << module.status().ToString();
    auto plan = analysis::PlanFusion(**module, options);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    CpuEmitter emitter;
    target::Target target = target::HostCpu();
    space::Candidate candidate;
    for (const auto& k : plan->kernels) candidate.kernels.push_back(emitter.SpaceFor(k, target).Initial());
    auto impl = emitter.Emit(*plan, candidate, target);
    ASSERT_TRUE(impl.ok()) << impl.status().ToString();
    runtime::CompileOptions copts;
    copts.cache_dir = cache_dir_;
    runtime::CompilerDriver compiler(copts);
    runtime::SandboxRunner sandbox;
    runtime::CpuExecutor exec(compiler, sandbox);
    auto lib = exec.Build(*impl);
    ASSERT_TRUE(lib.ok()) << lib.status().ToString();
    for (uint32_t seed = 1; seed <= 2; ++seed) {
      auto args = testing::RandomArgs(**module, seed);
      auto expected = interp::Evaluate(**module, args);
      ASSERT_TRUE(expected.ok()) << expected.status().ToString();
      std::vector<hlo::Literal> want;
      if (expected->shape().is_tuple()) want = expected->elements();
      else want.push_back(*expected);
      auto got = exec.Run(*lib, *impl, args, runtime::ExecuteOptions{.poison_scratch = true});
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      ASSERT_TRUE(got->outcome.ok()) << got->outcome.message;
      ASSERT_EQ(got->outputs.size(), want.size());
      for (size_t o = 0; o < want.size(); ++o) {
        ASSERT_TRUE(got->outputs[o].shape().SameAs(want[o].shape()));
        for (int64_t i = 0; i < want[o].num_elements(); ++i) {
          double w = want[o].GetDouble(i), g = got->outputs[o].GetDouble(i);
          if (std::isnan(w)) {
            EXPECT_TRUE(std::isnan(g)) << "output " << o << " element " << i;
            continue;
          }
          ASSERT_LE(std::fabs(w - g), tol * std::max(1.0, std::fabs(w)))
              << "output " << o << " element " << i << ": want " << w << " got " << g;
        }
      }
    }
  }

  static std::string cache_dir_;
};
std::string CpuEmitterTest::cache_dir_;

TEST_F(CpuEmitterTest, GemmBiasRelu) {
  ExpectMatchesInterpreter(R"(
HloModule gemm
ENTRY main {
  x = f32[8,16] parameter(0)
  w = f32[16,32] parameter(1)
  b = f32[32] parameter(2)
  dot = f32[8,32] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[8,32] broadcast(b), dimensions={1}
  add = f32[8,32] add(dot, bb)
  zero = f32[] constant(0)
  zb = f32[8,32] broadcast(zero), dimensions={}
  ROOT relu = f32[8,32] maximum(add, zb)
}
)");
}

TEST_F(CpuEmitterTest, SoftmaxBf16WithF32Statistics) {
  ExpectMatchesInterpreter(R"(
HloModule softmax
max_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  xb = bf16[4,64] parameter(0)
  x = f32[4,64] convert(xb)
  ninf = f32[] constant(-inf)
  mx = f32[4] reduce(x, ninf), dimensions={1}, to_apply=max_f32
  mxb = f32[4,64] broadcast(mx), dimensions={0}
  sub = f32[4,64] subtract(x, mxb)
  e = f32[4,64] exponential(sub)
  zero = f32[] constant(0)
  sum = f32[4] reduce(e, zero), dimensions={1}, to_apply=add_f32
  sumb = f32[4,64] broadcast(sum), dimensions={0}
  d = f32[4,64] divide(e, sumb)
  ROOT out = bf16[4,64] convert(d)
}
)", 0);
}

TEST_F(CpuEmitterTest, DataMovementAndTupleOutputs) {
  ExpectMatchesInterpreter(R"(
HloModule moves
ENTRY main {
  x = f32[4,6] parameter(0)
  t = f32[6,4] transpose(x), dimensions={1,0}
  r = f32[3,8] reshape(t)
  s = f32[2,4] slice(r), slice={[1:3], [0:8:2]}
  zero = f32[] constant(0)
  p = f32[5,7] pad(s, zero), padding=1_1_1x-1_4
  rv = f32[5,7] reverse(p), dimensions={0,1}
  i = s32[5,7] iota(), iota_dimension=1
  c = f32[5,14] concatenate(rv, p), dimensions={1}
  ROOT out = (f32[5,14], s32[5,7], f32[4,6]) tuple(c, i, x)
}
)", 0);
}

TEST_F(CpuEmitterTest, IntegerSemantics) {
  ExpectMatchesInterpreter(R"(
HloModule ints
ENTRY main {
  a = s32[64] parameter(0)
  b = s32[64] parameter(1)
  d = s32[64] divide(a, b)
  r = s32[64] remainder(a, b)
  sl = s32[64] shift-left(a, b)
  sr = s32[64] shift-right-arithmetic(a, b)
  m = s32[64] multiply(d, r)
  x = s32[64] xor(sl, sr)
  ROOT out = s32[64] add(m, x)
}
)", 0);
}

TEST_F(CpuEmitterTest, ArgmaxMultiOperandReduce) {
  ExpectMatchesInterpreter(R"(
HloModule argmax
argmax_fn {
  av = f32[] parameter(0)
  ai = s32[] parameter(1)
  bv = f32[] parameter(2)
  bi = s32[] parameter(3)
  gt = pred[] compare(av, bv), direction=GT
  eq = pred[] compare(av, bv), direction=EQ
  lt = pred[] compare(ai, bi), direction=LT
  tie = pred[] and(eq, lt)
  keep = pred[] or(gt, tie)
  v = f32[] select(keep, av, bv)
  i = s32[] select(keep, ai, bi)
  ROOT r = (f32[], s32[]) tuple(v, i)
}
ENTRY main {
  x = f32[8,32] parameter(0)
  idx = s32[8,32] iota(), iota_dimension=1
  ninf = f32[] constant(-inf)
  z = s32[] constant(0)
  red = (f32[8], s32[8]) reduce(x, idx, ninf, z), dimensions={1}, to_apply=argmax_fn
  ROOT i = s32[8] get-tuple-element(red), index=1
}
)", 0);
}

}  // namespace
}  // namespace mk::codegen::cpu
