// Row reductions computed by a GEMM's tiles (gemm_row_reduce.h) against the interpreter and
// against the same kernel emitted without them (fuse_epilogue 0: the GEMM stored, then the
// reduces over it), on edge tiles, several K slices (a stored result), one K slice (no result
// buffer), register and AMX tiles, and threads splitting columns or rows.
#include "codegen/cpu/gemm_row_reduce.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "codegen/cpu/cpu_emitter.h"
#include "codegen/cpu/test_harness.h"
#include "hlo/parser.h"
#include "interp/interpreter.h"

namespace mk::codegen::cpu {
namespace {

using Params = std::map<std::string, int64_t>;

//   ce: 13p's cross-entropy on an f32 GEMM: each row's logsumexp minus its labelled logit.
//   bt: a batched bf16 GEMM (f32 result; AMX tiles where the host has them) scaled, then per
//       row its logsumexp and its minimum.
constexpr const char* kModule = R"(
HloModule rows
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] maximum(a, b)
}
min {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] minimum(a, b)
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
ENTRY main {
  x = f32[37,71] parameter(0)
  w = f32[71,53] parameter(1)
  labels = s32[37] parameter(2)
  ha = bf16[3,37,71] parameter(3)
  hb = bf16[71,3,53] parameter(4)
  ninf = f32[] constant(-inf)
  pinf = f32[] constant(inf)
  zero = f32[] constant(0)
  ce = f32[37,53] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  m = f32[37] reduce(ce, ninf), dimensions={1}, to_apply=max
  m1 = f32[37,1] reshape(m)
  m2 = f32[37] reshape(m1)
  mb = f32[37,53] broadcast(m2), dimensions={0}
  d = f32[37,53] subtract(ce, mb)
  e = f32[37,53] exponential(d)
  s = f32[37] reduce(e, zero), dimensions={1}, to_apply=add
  ls = f32[37] log(s)
  lse = f32[37] add(m, ls)
  iota = s32[37,53] iota(), iota_dimension=1
  lb = s32[37,53] broadcast(labels), dimensions={0}
  hit = pred[37,53] compare(iota, lb), direction=EQ
  zb = f32[37,53] broadcast(zero), dimensions={}
  pick = f32[37,53] select(hit, ce, zb)
  p = f32[37] reduce(pick, zero), dimensions={1}, to_apply=add
  loss = f32[37] subtract(lse, p)
  bt = f32[3,37,53] dot(ha, hb), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={1}, rhs_contracting_dims={0}
  half = f32[] constant(0.5)
  hb2 = f32[3,37,53] broadcast(half), dimensions={}
  sc = f32[3,37,53] multiply(bt, hb2)
  bm = f32[3,37] reduce(sc, ninf), dimensions={2}, to_apply=max
  bmb = f32[3,37,53] broadcast(bm), dimensions={0,1}
  bd = f32[3,37,53] subtract(sc, bmb)
  be = f32[3,37,53] exponential(bd)
  bs = f32[3,37] reduce(be, zero), dimensions={2}, to_apply=add
  bls = f32[3,37] log(bs)
  blse = f32[3,37] add(bm, bls)
  bmin = f32[3,37] reduce(sc, pinf), dimensions={2}, to_apply=min
  ROOT out = (f32[37], f32[3,37], f32[3,37]) tuple(loss, blse, bmin)
}
)";

// Fused whatever the result's size (the planner's default waits for results past the cache).
analysis::FusionOptions AnySize() {
  analysis::FusionOptions o;
  o.row_reduction_min_bytes = 0;
  return o;
}

class GemmRowReduceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cache_dir_ = testing::MakeTempDir("mk-gemm-row-reduce"); }
  static void TearDownTestSuite() { std::filesystem::remove_all(cache_dir_); }

  // The outputs with `params` overriding every contraction kernel's initial schedule.
  std::vector<hlo::Literal> Run(const analysis::FusionPlan& plan,
                                const std::vector<hlo::Literal>& args, const Params& params,
                                std::string* source) {
    return testing::RunWithContractionParams(plan, args, params, cache_dir_, source);
  }

  static std::string cache_dir_;
};
std::string GemmRowReduceTest::cache_dir_;

TEST_F(GemmRowReduceTest, PlannedIntoBothGemmKernels) {
  auto module = hlo::ParseModule(kModule, "rows.hlo");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto plan = analysis::PlanFusion(**module, AnySize());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  // Two contraction kernels, each with its reduces; nothing else.
  ASSERT_EQ(plan->kernels.size(), 2u) << plan->Summary();
  size_t reduces = 0;
  for (const auto& k : plan->kernels) {
    EXPECT_EQ(k.family, analysis::KernelFamily::kContraction);
    auto e = KernelRowReduceEpilogue(k);
    ASSERT_TRUE(e) << k.name;
    reduces += e->reduces.size();
    // The space says so: fused from the start.
    EXPECT_EQ(CpuEmitter().SpaceFor(k, target::HostCpu()).Initial().Get("fuse_epilogue", -1), 1);
  }
  EXPECT_EQ(reduces, 6u);
}

TEST_F(GemmRowReduceTest, AgreesWithTheInterpreterAndTheStoredGemm) {
  auto module = hlo::ParseModule(kModule, "rows.hlo");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto plan = analysis::PlanFusion(**module, AnySize());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  // The analytical schedule (one K slice: no result buffer); tiny tiles and K slices (edge
  // tiles, a stored result) over 3 threads splitting columns; row blocks shared by 2 threads
  // with their slivers split in groups; the register tile for bf16; K ranges, which the fused
  // GEMMs turn into column ranges (the stored ones run them).
  const std::vector<Params> schedules = {
      {},
      {{"mr", 5}, {"nr", 16}, {"kc", 16}, {"mc", 10}, {"nc", 32}, {"threads", 3},
       {"thread_split", 2}, {"amx", 0}},
      {{"mr", 3}, {"nr", 32}, {"kc", 96}, {"mc", 6}, {"threads", 2}, {"thread_split", 0}},
      {{"mr", 4}, {"nr", 48}, {"kc", 32}, {"threads", 2}, {"thread_split", 2}, {"amx", 0},
       {"loop_order", 1}},
      {{"mr", 5}, {"nr", 16}, {"kc", 16}, {"threads", 2}, {"thread_split", 3}, {"amx", 0}},
  };
  for (uint32_t seed : {5u, 6u}) {
    auto args = testing::RandomArgs(**module, seed);
    // Labels in range, some rows' label past the columns (a pick of 0).
    for (int64_t i = 0; i < args[2].num_elements(); ++i) args[2].SetInt64(i, (i * 7 + seed) % 60);
    auto want = interp::Evaluate(**module, args);
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    const std::vector<hlo::Literal> w = want->elements();
    for (size_t s = 0; s < schedules.size(); ++s) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " schedule " + std::to_string(s));
      Params fused = schedules[s], stored = schedules[s];
      fused["fuse_epilogue"] = 1;
      stored["fuse_epilogue"] = 0;
      std::string fused_src, stored_src;
      auto a = Run(*plan, args, fused, &fused_src);
      auto b = Run(*plan, args, stored, &stored_src);
      // Both GEMMs reduce on their tiles (one thread id per GEMM region); unfused, neither.
      EXPECT_EQ(
          testing::Occurrences(fused_src, "const int64_t gm_tid = omp_get_thread_num();"), 2u);
      EXPECT_EQ(testing::Occurrences(stored_src, "gm_tid"), 0u);
      // One K slice (kc >= K = 71): no result buffer, the tiles read from the micro-kernel's.
      EXPECT_EQ(fused_src.find("__builtin_trap") != std::string::npos, s == 0 || s == 2);
      // Sums of 53 terms in another order; exp rescaled per lane (a few ulps each).
      ASSERT_TRUE(testing::OutputsNear(a, w, 1e-4));
      ASSERT_TRUE(testing::OutputsNear(b, w, 1e-4));
    }
  }
}

}  // namespace
}  // namespace mk::codegen::cpu
