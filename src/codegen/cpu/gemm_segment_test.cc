// A GEMM's group norm run group by group in its tiles (gemm_segment.h) against the
// interpreter and against the same kernel emitted without it (fuse_epilogue 0: the GEMM stored,
// then the passes over it), on edge rows, several K slices, a batch, threads splitting rows or
// columns, tiles that hold whole groups, and tiles that do not (the passes then run after the
// GEMM, in one loop over the rows).
#include "codegen/cpu/gemm_segment.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "codegen/cpu/cpu_emitter.h"
#include "codegen/cpu/gemm_params.h"
#include "codegen/cpu/test_harness.h"
#include "hlo/parser.h"
#include "interp/interpreter.h"

namespace mk::codegen::cpu {
namespace {

using Params = std::map<std::string, int64_t>;

//   gn: 29k's form on a [37,96] GEMM: swish + bias, then 3 groups of 32 columns (mean, variance
//       about it, normalized), then an affine output over the rows' groups.
//   bn: a batched GEMM [2,13,64] (no epilogue chain: the dot is the group norm's input), 2
//       groups of 32 per row, its mean as an output beside the normalized value.
constexpr const char* kModule = R"(
HloModule segments
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
ENTRY main {
  x = f32[37,40] parameter(0)
  w = f32[40,96] parameter(1)
  bias = f32[96] parameter(2)
  gamma = f32[37,3] parameter(3)
  ha = f32[2,13,40] parameter(4)
  hb = f32[2,40,64] parameter(5)
  zero = f32[] constant(0)
  one = f32[] constant(1)
  eps = f32[] constant(1e-5)
  n32 = f32[] constant(32)
  dot = f32[37,96] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ng = f32[37,96] negate(dot)
  ex = f32[37,96] exponential(ng)
  ob = f32[37,96] broadcast(one), dimensions={}
  den = f32[37,96] add(ex, ob)
  sw = f32[37,96] divide(dot, den)
  bb = f32[37,96] broadcast(bias), dimensions={1}
  y = f32[37,96] add(sw, bb)
  r = f32[37,3,32] reshape(y)
  sum = f32[37,3] reduce(r, zero), dimensions={2}, to_apply=add
  nb = f32[37,3] broadcast(n32), dimensions={}
  mean = f32[37,3] divide(sum, nb)
  mb = f32[37,3,32] broadcast(mean), dimensions={0,1}
  d = f32[37,3,32] subtract(r, mb)
  sq = f32[37,3,32] multiply(d, d)
  ss = f32[37,3] reduce(sq, zero), dimensions={2}, to_apply=add
  var = f32[37,3] divide(ss, nb)
  eb = f32[37,3] broadcast(eps), dimensions={}
  ve = f32[37,3] add(var, eb)
  inv = f32[37,3] rsqrt(ve)
  gi = f32[37,3] multiply(inv, gamma)
  ib = f32[37,3,32] broadcast(gi), dimensions={0,1}
  gn = f32[37,3,32] multiply(d, ib)
  bt = f32[2,13,64] dot(ha, hb), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  br = f32[2,13,2,32] reshape(bt)
  bs = f32[2,13,2] reduce(br, zero), dimensions={3}, to_apply=add
  bnb = f32[2,13,2] broadcast(n32), dimensions={}
  bmean = f32[2,13,2] divide(bs, bnb)
  bmb = f32[2,13,2,32] broadcast(bmean), dimensions={0,1,2}
  bd = f32[2,13,2,32] subtract(br, bmb)
  bsq = f32[2,13,2,32] multiply(bd, bd)
  bss = f32[2,13,2] reduce(bsq, zero), dimensions={3}, to_apply=add
  bvar = f32[2,13,2] divide(bss, bnb)
  beb = f32[2,13,2] broadcast(eps), dimensions={}
  bve = f32[2,13,2] add(bvar, beb)
  binv = f32[2,13,2] rsqrt(bve)
  bib = f32[2,13,2,32] broadcast(binv), dimensions={0,1,2}
  bn = f32[2,13,2,32] multiply(bd, bib)
  ROOT out = (f32[37,3,32], f32[2,13,2,32], f32[2,13,2]) tuple(gn, bn, bmean)
}
)";

// The planner's default fuses groups of 64 columns only (fusion_plan.h); the passes' code is the
// same for these groups of 32, on tiles of 32 or 64 columns.
analysis::FusionOptions Groups32() {
  analysis::FusionOptions o;
  o.segment_min = 32;
  return o;
}

class GemmSegmentTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cache_dir_ = testing::MakeTempDir("mk-gemm-segment"); }
  static void TearDownTestSuite() { std::filesystem::remove_all(cache_dir_); }
  static std::string cache_dir_;
};
std::string GemmSegmentTest::cache_dir_;

TEST_F(GemmSegmentTest, PlannedIntoBothGemmKernels) {
  auto module = hlo::ParseModule(kModule, "segments.hlo");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto plan = analysis::PlanFusion(**module, Groups32());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->kernels.size(), 2u) << plan->Summary();
  for (const auto& k : plan->kernels) {
    EXPECT_EQ(k.family, analysis::KernelFamily::kContraction);
    auto e = KernelSegmentEpilogue(k);
    ASSERT_TRUE(e) << k.name;
    EXPECT_EQ(e->segment, 32);
    const space::Schedule initial = CpuEmitter().SpaceFor(k, target::HostCpu()).Initial();
    EXPECT_EQ(initial.Get("fuse_epilogue", -1), 1);
    // Tiles of whole groups from the start.
    EXPECT_EQ(initial.Get("nr", 0) % 32, 0);
  }
}

// Tiles of whole groups on either register file: with AVX2's 16 registers no multiple of 32
// at least 40 columns wide fits, so the widest narrower one (32) does; AVX-512 keeps the rule
// of the narrowest multiple at least as wide.
TEST(RegisterTileWithNrMultipleTest, FitsTheRegisterFileOfEachIsa) {
  target::Target avx2;
  avx2.isa = {"avx2", "fma"};
  avx2.vector_bytes = 32;
  avx2.vector_registers = 16;
  EXPECT_EQ(RegisterTileWithNrMultiple(avx2, 40, 32, 37), std::make_pair(int64_t{2}, int64_t{32}));
  EXPECT_EQ(RegisterTileWithNrMultiple(avx2, 16, 32, 37), std::make_pair(int64_t{2}, int64_t{32}));
  EXPECT_EQ(RegisterTileWithNrMultiple(avx2, 16, 128, 37), std::nullopt);
  target::Target avx512;
  avx512.isa = {"avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512dq"};
  avx512.vector_bytes = 64;
  avx512.vector_registers = 32;
  EXPECT_EQ(RegisterTileWithNrMultiple(avx512, 48, 32, 37), std::make_pair(int64_t{6}, int64_t{64}));
  EXPECT_EQ(RegisterTileWithNrMultiple(avx512, 16, 32, 37), std::make_pair(int64_t{14}, int64_t{32}));
}

TEST_F(GemmSegmentTest, AgreesWithTheInterpreterAndTheStoredGemm) {
  auto module = hlo::ParseModule(kModule, "segments.hlo");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto plan = analysis::PlanFusion(**module, Groups32());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  // The model's schedule; K slices of 16 with edge rows over 3 threads splitting columns and
  // 64-column tiles (two groups each); rows blocks shared by 2 threads; 16-column tiles (half a
  // group: the passes run after the GEMM); the serial reduce order; K ranges (fused: the GEMM
  // splits columns instead, the passes in its tiles; stored: over K).
  struct Case {
    Params params;
    bool in_tiles;
  };
  const std::vector<Case> cases = {
      {{}, true},
      {{{"mr", 5}, {"nr", 64}, {"kc", 16}, {"mc", 10}, {"threads", 3}, {"thread_split", 2}},
       true},
      {{{"mr", 3}, {"nr", 32}, {"kc", 96}, {"mc", 6}, {"threads", 2}, {"thread_split", 0}},
       true},
      {{{"mr", 4}, {"nr", 16}, {"kc", 32}, {"threads", 2}}, false},
      {{{"reduce_lanes", 1}, {"threads", 1}}, true},
      {{{"mr", 5}, {"nr", 64}, {"kc", 16}, {"threads", 2}, {"thread_split", 3}}, true},
  };
  for (uint32_t seed : {5u, 6u}) {
    auto args = testing::RandomArgs(**module, seed);
    auto want = interp::Evaluate(**module, args);
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    const std::vector<hlo::Literal> w = want->elements();
    for (size_t c = 0; c < cases.size(); ++c) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " case " + std::to_string(c));
      Params fused = cases[c].params, stored = cases[c].params;
      fused["fuse_epilogue"] = 1;
      stored["fuse_epilogue"] = 0;
      std::string fused_src, stored_src;
      auto a = testing::RunWithContractionParams(*plan, args, fused, cache_dir_, &fused_src);
      auto b = testing::RunWithContractionParams(*plan, args, stored, cache_dir_, &stored_src);
      // The per-group loop in both GEMMs' tiles, or in neither.
      EXPECT_EQ(testing::Occurrences(fused_src, "gm_sg = gm_j / "), cases[c].in_tiles ? 2u : 0u);
      EXPECT_EQ(testing::Occurrences(stored_src, "gm_sg"), 0u);
      // Sums of 32 terms in another order, then divided by a standard deviation.
      ASSERT_TRUE(testing::OutputsNear(a, w, 2e-4));
      ASSERT_TRUE(testing::OutputsNear(b, w, 2e-4));
    }
  }
}

}  // namespace
}  // namespace mk::codegen::cpu
