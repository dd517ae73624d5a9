// The blocked GEMM path against the interpreter: odd sizes (every edge path), transposed and
// fused operands, batch dims, several contracting and free dims, bf16 (vdpbf16ps where the
// machine has it, AMX tiles where it has those), and schedules from the analytical one to
// edge-heavy ones and the loop nest.
// Sums are reordered (K slices, FMA, bf16 pairs), so each element is compared within a tolerance
// relative to sum_k |a||b|, which the interpreter computes on the absolute values of the inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

#include "analysis/fusion_plan.h"
#include "codegen/cpu/cpu_emitter.h"
#include "codegen/cpu/gemm_epilogue.h"
#include "codegen/cpu/gemm_params.h"
#include "codegen/cpu/test_harness.h"
#include "hlo/parser.h"
#include "interp/interpreter.h"
#include "runtime/cpu_executor.h"

namespace mk::codegen::cpu {
namespace {

using Params = std::map<std::string, int64_t>;

// Every dot below is its own contraction kernel; operands pass through transposes, converts and
// reshapes that the planner fuses into them (so packing reads through their lambdas). The half
// precision dots have K = 71, which spans several K slices under small kc, so their bf16/f16
// results go through f32 partial sums; f16 operands are converted to f32 while packing. N 100
// leaves a last sliver of 4 columns on 32- and 48-column tiles (its narrower micro-kernel). One
// module keeps the test at one compile per schedule.
constexpr const char* kModule = R"(
HloModule gemm_cases
ENTRY main {
  a = f32[37,29] parameter(0)
  b = f32[29,53] parameter(1)
  at = f32[29,37] parameter(2)
  bt = f32[53,29] parameter(3)
  l4 = f32[2,7,3,5] parameter(4)
  r5 = f32[3,2,5,4,6] parameter(5)
  v = f32[29] parameter(6)
  bias = f32[53] parameter(7)
  i1 = s32[6,5] parameter(8)
  i2 = s32[5,4] parameter(9)
  plain = f32[37,53] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  trans = f32[37,53] dot(at, bt), lhs_contracting_dims={0}, rhs_contracting_dims={1}
  multi = f32[2,7,4,6] dot(l4, r5), lhs_batch_dims={0}, lhs_contracting_dims={3,2}, rhs_batch_dims={1}, rhs_contracting_dims={2,0}
  vec = f32[53] dot(v, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  outer = f32[29,53] dot(v, bias), lhs_contracting_dims={}, rhs_contracting_dims={}
  tr = f32[37,29] transpose(at), dimensions={1,0}
  fused = f32[37,53] dot(tr, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[37,53] broadcast(bias), dimensions={1}
  add = f32[37,53] add(fused, bb)
  zero = f32[] constant(0)
  zb = f32[37,53] broadcast(zero), dimensions={}
  relu = f32[37,53] maximum(add, zb)
  ints = s32[6,4] dot(i1, i2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  scalar = f32[] dot(v, v), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  ha = bf16[3,37,71] parameter(10)
  hb = bf16[71,3,53] parameter(11)
  x = f32[37,71] parameter(12)
  w = bf16[53,71] parameter(13)
  bf = bf16[3,37,53] dot(ha, hb), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={1}, rhs_contracting_dims={0}
  f32out = f32[3,37,53] dot(ha, hb), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={1}, rhs_contracting_dims={0}
  xb = bf16[37,71] convert(x)
  conv = bf16[37,53] dot(xb, w), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  h = f16[37,71] parameter(14)
  hw = f16[71,53] parameter(15)
  half = f16[37,53] dot(h, hw), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  b100 = f32[29,100] parameter(16)
  wide = f32[37,100] dot(a, b100), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT out = (f32[37,53], f32[37,53], f32[2,7,4,6], f32[53], f32[29,53], f32[37,53], s32[6,4], f32[], bf16[3,37,53], f32[3,37,53], bf16[37,53], f16[37,53], f32[37,100]) tuple(plain, trans, multi, vec, outer, relu, ints, scalar, bf, f32out, conv, half, wide)
}
)";

// bf16 dots for the AMX tile (32×32, K in 32-deep steps): a batch, odd M/N/K around the tile
// (37×53, K 71: full tiles, edge tiles and a padded last step), a bf16 result, both operands
// transposed (lanes along the lhs's minor dim, k along the rhs's), a convert fused into packing
// with N a whole number of tiles, and two contracting dims with K 15 (below one tile step).
constexpr const char* kAmxModule = R"(
HloModule gemm_amx
ENTRY main {
  ha = bf16[3,37,71] parameter(0)
  hb = bf16[71,3,53] parameter(1)
  bf = bf16[3,37,53] dot(ha, hb), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={1}, rhs_contracting_dims={0}
  f32out = f32[3,37,53] dot(ha, hb), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={1}, rhs_contracting_dims={0}
  ta = bf16[100,67] parameter(2)
  tb = bf16[75,100] parameter(3)
  trans = f32[67,75] dot(ta, tb), lhs_contracting_dims={0}, rhs_contracting_dims={1}
  x = f32[65,40] parameter(4)
  w = bf16[40,96] parameter(5)
  xb = bf16[65,40] convert(x)
  fused = bf16[65,96] dot(xb, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  l4 = bf16[2,33,3,5] parameter(6)
  r5 = bf16[3,2,5,34] parameter(7)
  multi = f32[2,33,34] dot(l4, r5), lhs_batch_dims={0}, lhs_contracting_dims={3,2}, rhs_batch_dims={1}, rhs_contracting_dims={2,0}
  ROOT out = (bf16[3,37,53], f32[3,37,53], f32[67,75], bf16[65,96], f32[2,33,34]) tuple(bf, f32out, trans, fused, multi)
}
)";

// Dots for the inner-product form (GemmParams::inner: a small N, A's rows read in place along
// K). K 100 and 70 end in a partial vector of k (masked loads); M 37 and 19 leave edge rows on
// every tile (8x1, 4x5, 4x6); N 9 leaves a 3-column edge on 6-column tiles. A bias + ReLU
// epilogue on the tiles, a batch (in B's middle dim), B stored [N][K] (its rows copied), a
// bf16 result, B read through a fused convert (packed element by element), and an N of 16,
// where the model keeps the blocked form. With the operands swapped (few rows of A, B stored
// [N][K]): 9 rows of A against 37 of B (edges on both sides of the 4x6 kernel tile, and so
// all four kernels) with a bias + ReLU epilogue and as a bf16 result, and 3 rows over a batch.
constexpr const char* kInnerModule = R"(
HloModule gemm_inner
ENTRY main {
  a = f32[37,100] parameter(0)
  b1 = f32[100,1] parameter(1)
  n1 = f32[37,1] dot(a, b1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  b5 = f32[100,5] parameter(2)
  bias = f32[5] parameter(3)
  d5 = f32[37,5] dot(a, b5), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[37,5] broadcast(bias), dimensions={1}
  add = f32[37,5] add(d5, bb)
  zero = f32[] constant(0)
  zb = f32[37,5] broadcast(zero), dimensions={}
  relu = f32[37,5] maximum(add, zb)
  ba = f32[3,19,70] parameter(4)
  bw = f32[70,3,12] parameter(5)
  batched = f32[3,19,12] dot(ba, bw), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={1}, rhs_contracting_dims={0}
  wt = f32[9,100] parameter(6)
  tw = f32[37,9] dot(a, wt), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  half = bf16[37,9] dot(a, wt), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  b16 = f32[100,16] parameter(7)
  n16 = f32[37,16] dot(a, b16), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  hb = bf16[100,7] parameter(8)
  cb = f32[100,7] convert(hb)
  fusedb = f32[37,7] dot(a, cb), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  x9 = f32[9,100] parameter(9)
  sw9 = f32[9,37] dot(x9, a), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  b37 = f32[37] parameter(10)
  bb37 = f32[9,37] broadcast(b37), dimensions={1}
  swadd = f32[9,37] add(sw9, bb37)
  zb9 = f32[9,37] broadcast(zero), dimensions={}
  swrelu = f32[9,37] maximum(swadd, zb9)
  swh = bf16[9,37] dot(x9, a), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  bx = f32[2,3,100] parameter(11)
  bw2 = f32[2,37,100] parameter(12)
  swb = f32[2,3,37] dot(bx, bw2), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={2}
  ROOT out = (f32[37,1], f32[37,5], f32[3,19,12], f32[37,9], bf16[37,9], f32[37,16], f32[37,7], f32[9,37], bf16[9,37], f32[2,3,37]) tuple(n1, relu, batched, tw, half, n16, fusedb, swrelu, swh, swb)
}
)";

bool HostHasAmx() { return AmxAvailable(target::HostCpu()); }

// The module's implementation for this machine with `params` overriding the initial schedule of
// every contraction kernel.
Result<Implementation> Emit(const hlo::Module& m, const Params& params) {
  MK_ASSIGN_OR_RETURN(analysis::FusionPlan plan, analysis::PlanFusion(m));
  return testing::EmitWithContractionParams(plan, params);
}

// The dots of `text`, emitted under `params`, whose GEMM's comment contains `marker` (the
// GEMM's comment follows its dot's: "// dot %plain f32[37,53]").
std::set<std::string> DotsWhoseGemmSays(const char* text, const Params& params,
                                        const std::string& marker) {
  std::set<std::string> names;
  auto module = hlo::ParseModule(text, "gemm.hlo");
  EXPECT_TRUE(module.ok()) << module.status().ToString();
  if (!module.ok()) return names;
  auto impl = Emit(**module, params);
  EXPECT_TRUE(impl.ok()) << impl.status().ToString();
  if (!impl.ok()) return names;
  for (const auto& src : impl->sources) {
    for (size_t at = src.text.find(marker); at != std::string::npos;
         at = src.text.find(marker, at + 1)) {
      const size_t dot = src.text.rfind("// dot %", at);
      if (dot == std::string::npos) {
        ADD_FAILURE() << "a GEMM saying '" << marker << "' without its dot's comment";
        continue;
      }
      const size_t name = dot + 8;
      names.insert(src.text.substr(name, src.text.find(' ', name) - name));
    }
  }
  return names;
}

class GemmEmitterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cache_dir_ = testing::MakeTempDir("mk-gemm-test"); }
  static void TearDownTestSuite() { std::filesystem::remove_all(cache_dir_); }

  // Runs `text` under `params` (compiled with `march`) and compares every output with the
  // interpreter's. `run_isa`, when set, is MAXKERNEL_CPU_ISA for the run only (the kernel is
  // emitted and built for the host's own level).
  void ExpectAgreement(const char* text, const Params& params,
                       const std::string& march = "-march=native",
                       const char* run_isa = nullptr) {
    auto module = hlo::ParseModule(text, "gemm.hlo");
    ASSERT_TRUE(module.ok()) << module.status().ToString();
    auto impl = Emit(**module, params);
    ASSERT_TRUE(impl.ok()) << impl.status().ToString();
    runtime::CompileOptions copts;
    copts.cache_dir = cache_dir_;
    for (auto& flag : copts.flags) {
      if (flag.rfind("-march=", 0) == 0) flag = march;
    }
    runtime::CompilerDriver compiler(copts);
    runtime::SandboxRunner sandbox;
    runtime::CpuExecutor exec(compiler, sandbox);
    auto lib = exec.Build(*impl);
    ASSERT_TRUE(lib.ok()) << lib.status().ToString();
    auto args = testing::RandomArgs(**module, 7);
    std::vector<hlo::Literal> abs_args;
    for (const auto& a : args) {
      hlo::Literal l = a;
      for (int64_t i = 0; i < l.num_elements(); ++i) {
        if (hlo::IsFloat(l.dtype())) l.SetDouble(i, std::fabs(l.GetDouble(i)));
        else l.SetInt64(i, std::abs(l.GetInt64(i)));
      }
      abs_args.push_back(std::move(l));
    }
    auto want = interp::Evaluate(**module, args);
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    // The epilogues (bias add, relu) only grow this bound, so it stays a valid one.
    auto bound = interp::Evaluate(**module, abs_args);
    ASSERT_TRUE(bound.ok()) << bound.status().ToString();
    if (run_isa != nullptr) setenv("MAXKERNEL_CPU_ISA", run_isa, 1);
    auto got = exec.Run(*lib, *impl, args, runtime::ExecuteOptions{.poison_scratch = true});
    if (run_isa != nullptr) unsetenv("MAXKERNEL_CPU_ISA");
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_TRUE(got->outcome.ok()) << got->outcome.message;
    std::vector<hlo::Literal> w = want->elements(), bd = bound->elements();
    ASSERT_EQ(got->outputs.size(), w.size());
    for (size_t o = 0; o < w.size(); ++o) {
      const hlo::DType t = w[o].dtype();
      // Reordered f32 sums: 1e-5 of sum |a||b| is ~10x the worst case at these K; a bf16/f16
      // result may also round to the neighbouring value.
      const double ulp = t == hlo::DType::kBF16 ? 0x1p-7 : t == hlo::DType::kF16 ? 0x1p-10 : 0;
      for (int64_t i = 0; i < w[o].num_elements(); ++i) {
        double want_v = w[o].GetDouble(i), got_v = got->outputs[o].GetDouble(i);
        double tol = hlo::IsFloat(t) ? 1e-5 * bd[o].GetDouble(i) + ulp * std::fabs(want_v) : 0;
        ASSERT_LE(std::fabs(got_v - want_v), tol)
            << "output " << o << " " << w[o].shape().ToString(false) << " element " << i
            << ": want " << want_v << " got " << got_v;
      }
    }
  }

  static std::string cache_dir_;
};
std::string GemmEmitterTest::cache_dir_;

// Schedules: the analytical one, the loop nest, tiny blocks (every tile an edge, one k per
// slice), odd blocks split over threads (odd kc: every bf16 slice ends in a padded pair), the
// largest tile and blocks with threads over the batch, an NR that only the AVX2 micro-kernel has
// (bf16 packed as f32) with threads over column ranges, and more threads than MR slivers (threads
// split the NR slivers, some get none), one without the C-tile and A/B prefetches, one that
// prefetches A and B 16 k steps ahead, and both loop orders (the model's, then the other; A
// slivers outer with edge tiles and odd slices over column ranges and over the batch), B read in
// place (pack_b 0: a partial last sliver in every panel around a shared panel, over column
// ranges with A slivers outer, over the batch) and B packed where the model reads it in place
// (these dots have a skinny M), A read in place (pack_a 0: a partial last sliver in every
// block, over row blocks, with B in place too over column ranges with A slivers outer, over the
// batch) and both packed where the model reads them in place (these dots also have a skinny
// N). Then K ranges (thread_split 3): odd slices over 3 threads (`outer`, K 1, leaves two
// threads an empty range), A slivers outer over 2, both operands in place. All but the
// analytical one keep bf16 on the register tile (amx=0), which they are about; AmxSchedules()
// covers the tiles.
const std::vector<Params>& Schedules() {
  static const std::vector<Params> kSchedules = {
      {},
      {{"gemm_blocked", 0}},
      {{"mr", 1}, {"nr", 8}, {"kc", 1}, {"mc", 1}, {"nc", 1}, {"threads", 1}, {"amx", 0}},
      {{"mr", 5}, {"nr", 16}, {"kc", 7}, {"mc", 10}, {"nc", 24}, {"threads", 2}, {"thread_split", 0},
       {"amx", 0}},
      {{"mr", 16}, {"nr", 64}, {"kc", 1024}, {"mc", 1024}, {"nc", 8192}, {"unroll_k", 8},
       {"threads", 2}, {"thread_split", 1}, {"amx", 0}},
      {{"mr", 3}, {"nr", 24}, {"kc", 16}, {"mc", 7}, {"nc", 48}, {"unroll_k", 1}, {"threads", 3},
       {"thread_split", 2}, {"amx", 0}},
      {{"mr", 16}, {"nr", 16}, {"kc", 32}, {"threads", 4}, {"thread_split", 0}, {"amx", 0}},
      {{"mr", 7}, {"nr", 48}, {"kc", 64}, {"prefetch_c", 0}, {"prefetch_ab", 0}, {"amx", 0}},
      {{"mr", 4}, {"nr", 32}, {"kc", 128}, {"prefetch_ab", 16}, {"amx", 0}},
      {{"loop_order", 0}, {"amx", 0}},
      {{"mr", 5}, {"nr", 16}, {"kc", 7}, {"nc", 24}, {"threads", 3}, {"thread_split", 2},
       {"loop_order", 1}, {"amx", 0}},
      {{"mr", 3}, {"nr", 24}, {"kc", 16}, {"nc", 48}, {"threads", 2}, {"thread_split", 1},
       {"loop_order", 1}, {"amx", 0}},
      {{"pack_b", 0}, {"mr", 5}, {"nr", 16}, {"kc", 7}, {"mc", 10}, {"nc", 24}, {"threads", 2},
       {"thread_split", 0}, {"amx", 0}},
      {{"pack_b", 0}, {"mr", 3}, {"nr", 24}, {"kc", 16}, {"nc", 48}, {"threads", 3},
       {"thread_split", 2}, {"loop_order", 1}, {"amx", 0}},
      {{"pack_b", 0}, {"mr", 16}, {"nr", 64}, {"threads", 2}, {"thread_split", 1}, {"amx", 0}},
      {{"pack_b", 1}, {"mr", 4}, {"nr", 32}, {"kc", 16}, {"threads", 2}, {"amx", 0}},
      {{"pack_a", 0}, {"mr", 5}, {"nr", 16}, {"kc", 7}, {"mc", 10}, {"nc", 24}, {"threads", 2},
       {"thread_split", 0}, {"amx", 0}},
      {{"pack_a", 0}, {"pack_b", 0}, {"mr", 3}, {"nr", 24}, {"kc", 16}, {"nc", 48},
       {"threads", 3}, {"thread_split", 2}, {"loop_order", 1}, {"amx", 0}},
      {{"pack_a", 0}, {"mr", 16}, {"nr", 64}, {"threads", 2}, {"thread_split", 1}, {"amx", 0}},
      {{"pack_a", 1}, {"pack_b", 1}, {"threads", 2}, {"amx", 0}},
      {{"mr", 5}, {"nr", 16}, {"kc", 7}, {"mc", 10}, {"nc", 24}, {"threads", 3},
       {"thread_split", 3}, {"amx", 0}},
      {{"mr", 3}, {"nr", 24}, {"kc", 16}, {"threads", 2}, {"thread_split", 3}, {"loop_order", 1},
       {"amx", 0}},
      {{"pack_a", 0}, {"pack_b", 0}, {"mr", 4}, {"nr", 16}, {"kc", 9}, {"threads", 2},
       {"thread_split", 3}, {"amx", 0}},
  };
  return kSchedules;
}

TEST_F(GemmEmitterTest, EveryDotAgreesUnderEverySchedule) {
  for (size_t s = 0; s < Schedules().size(); ++s) {
    SCOPED_TRACE("schedule " + std::to_string(s));
    ExpectAgreement(kModule, Schedules()[s]);
  }
}

// The micro-kernels' preprocessor fallbacks: the same source (tiles chosen for this machine)
// built for AVX2 only (f32 through the AVX2 variant, bf16 pairs through the portable loop) and
// for baseline x86-64 (every micro-kernel portable), under the model's schedules and with B
// read in place (f32, and bf16 widened as it is loaded).
TEST_F(GemmEmitterTest, FallbackMicroKernelsAgree) {
  for (const char* march : {"-march=x86-64-v3", "-march=x86-64"}) {
    SCOPED_TRACE(march);
    ExpectAgreement(kModule, {}, march);
    // B read in place, f32 and bf16 widened (AVX2 and portable); A read in place with it.
    ExpectAgreement(kModule, {{"pack_b", 0}, {"amx", 0}}, march);
    ExpectAgreement(kModule, {{"pack_a", 0}, {"pack_b", 0}, {"amx", 0}}, march);
  }
}

// The inner-product form: the model's schedules (inner for every dot of kInnerModule but n16),
// forced on (n16 too, and kModule's plain and wide, with edges of rows and columns; its other
// dots cannot take it and stay blocked) over 3 threads and 1, and forced off; built for this
// machine, for AVX2 only and for baseline x86-64 (the portable loop).
TEST_F(GemmEmitterTest, InnerProductFormAgrees) {
  const std::vector<Params> schedules = {
      {}, {{"inner", 1}, {"threads", 3}}, {{"inner", 1}, {"threads", 1}}, {{"inner", 0}}};
  for (size_t s = 0; s < schedules.size(); ++s) {
    SCOPED_TRACE("schedule " + std::to_string(s));
    ExpectAgreement(kInnerModule, schedules[s]);
  }
  ExpectAgreement(kModule, {{"inner", 1}, {"threads", 2}, {"amx", 0}});
  for (const char* march : {"-march=x86-64-v3", "-march=x86-64"}) {
    SCOPED_TRACE(march);
    ExpectAgreement(kInnerModule, {}, march);
  }
}

// AMX schedules: the analytical one; one tile step per K slice (K 71: slices of 32, 32 and a
// padded 7; bf16 results through f32 partial sums) and one tile per block on one thread; row
// blocks around a shared B panel, with an mr/nr the tile ignores; kc 7, rounded up to a tile
// step, over the batch; K in one deep slice over column ranges without the C prefetch; more
// threads than slivers (some get none); K ranges over 3 threads (whole tile steps: K 71 gives
// one thread none).
const std::vector<Params>& AmxSchedules() {
  static const std::vector<Params> kSchedules = {
      {{"amx", 1}},
      {{"amx", 1}, {"kc", 32}, {"mc", 32}, {"nc", 32}, {"threads", 1}},
      {{"amx", 1}, {"kc", 64}, {"mc", 64}, {"nc", 64}, {"mr", 3}, {"nr", 24}, {"threads", 2},
       {"thread_split", 0}},
      {{"amx", 1}, {"kc", 7}, {"threads", 2}, {"thread_split", 1}},
      {{"amx", 1}, {"kc", 1024}, {"mc", 1024}, {"nc", 8192}, {"threads", 2}, {"thread_split", 2},
       {"prefetch_c", 0}},
      {{"amx", 1}, {"threads", 3}, {"thread_split", 0}},
      {{"amx", 1}, {"prefetch_ab", 0}, {"threads", 2}},
      {{"amx", 1}, {"kc", 32}, {"threads", 3}, {"thread_split", 3}},
  };
  return kSchedules;
}

TEST_F(GemmEmitterTest, AmxTilesAgreeUnderEverySchedule) {
  if (!HostHasAmx()) GTEST_SKIP() << "this CPU has no AMX (amx_tile, amx_bf16)";
  for (size_t s = 0; s < AmxSchedules().size(); ++s) {
    SCOPED_TRACE("amx schedule " + std::to_string(s));
    ExpectAgreement(kAmxModule, AmxSchedules()[s]);
  }
  // The mixed module: amx=1 applies to its bf16 dots; f32, f16 and integer dots ignore it.
  SCOPED_TRACE("mixed module");
  ExpectAgreement(kModule, {{"amx", 1}, {"kc", 32}});
}

// Without tiles the AMX micro-kernel computes the same tile from the same layouts: the source
// built without AMX (vdpbf16ps under -march=cooperlake, plain loops under x86-64-v3), and tiles
// refused at run time (MAXKERNEL_CPU_ISA below amx, as when Linux does not grant them).
TEST_F(GemmEmitterTest, AmxFallbacksAgree) {
  if (!HostHasAmx()) GTEST_SKIP() << "this CPU has no AMX (amx_tile, amx_bf16)";
  const Params amx = {{"amx", 1}, {"kc", 32}, {"threads", 2}};
  for (const char* march : {"-march=cooperlake", "-march=x86-64-v3"}) {
    SCOPED_TRACE(march);
    ExpectAgreement(kAmxModule, amx, march);
  }
  SCOPED_TRACE("MAXKERNEL_CPU_ISA=avx512bf16 at run time");
  ExpectAgreement(kAmxModule, amx, "-march=native", "avx512bf16");
}

// bf16 operands that sit in memory pack through gemm_pack.h's helpers (B: k-row pairs
// interleaved panel-wide; the AMX A sliver: row copies), not element by element. The agreement
// tests above run that code under every schedule; this one keeps it from silently falling back.
TEST_F(GemmEmitterTest, DenseBf16OperandsPackThroughTheHelpers) {
  if (!target::HostCpu().Has("avx512_bf16")) GTEST_SKIP() << "bf16 pairs need avx512_bf16";
  auto module = hlo::ParseModule(kAmxModule, "gemm.hlo");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto source = [&](const Params& params) {
    auto impl = Emit(**module, params);
    EXPECT_TRUE(impl.ok()) << impl.status().ToString();
    std::string text;
    if (impl.ok()) {
      for (const auto& src : impl->sources) text += src.text;
    }
    return text;
  };
  const std::string registers = source(HostHasAmx() ? Params{{"amx", 0}} : Params{});
  EXPECT_NE(registers.find("mk_pack_panel_pairs_bf16("), std::string::npos);
  if (!HostHasAmx()) return;
  const std::string tiles = source({{"amx", 1}});
  EXPECT_NE(tiles.find("mk_pack_panel_pairs_bf16("), std::string::npos);
  EXPECT_NE(tiles.find("mk_pack_rows_bf16("), std::string::npos);
}

// prefetch_ab > 0 under AMX: each call on a B sliver asks L2 for its share of the next sliver
// (a prefetch cannot change results, so the agreement tests above cannot see it; the text can).
TEST_F(GemmEmitterTest, AmxPrefetchesTheNextSliverIntoL2) {
  if (!HostHasAmx()) GTEST_SKIP() << "this CPU has no AMX (amx_tile, amx_bf16)";
  auto module = hlo::ParseModule(kAmxModule, "gemm.hlo");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto source = [&](const Params& params) {
    auto impl = Emit(**module, params);
    EXPECT_TRUE(impl.ok()) << impl.status().ToString();
    return impl.ok() ? impl->sources[0].text : std::string();
  };
  const std::string on = source({{"amx", 1}, {"prefetch_ab", 8}});
  EXPECT_NE(on.find("mk_gemm_amx_32x32_pc_pn("), std::string::npos);
  EXPECT_NE(on.find("_MM_HINT_T1"), std::string::npos);
  // The share: gm_pfl lines per k step from the next sliver, none after the thread's last one.
  EXPECT_NE(on.find("gm_s + 1 < gm_s1 ? gm_bsl + kNR * gm_kpad : nullptr"), std::string::npos);
  EXPECT_NE(on.find("gm_bnext + gm_run * gm_kpad"), std::string::npos);
  const std::string off = source({{"amx", 1}, {"prefetch_ab", 0}});
  EXPECT_EQ(off.find("_pn("), std::string::npos);
  EXPECT_EQ(off.find("_MM_HINT_T1"), std::string::npos);
}

// bf16 operands whose k run contiguous (A [M][K], B stored [N][K]) with even row strides pack
// their pairs as 32-bit words (mk_pack_rows_f32); odd K slices, odd slice starts and a batch
// whose stride is odd fall back to element by element. Bit patterns must survive the f32 view.
constexpr const char* kPairWordsModule = R"(
HloModule pair_words
ENTRY main {
  a = bf16[37,70] parameter(0)
  b = bf16[53,70] parameter(1)
  nt = f32[37,53] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  ab = bf16[3,37,66] parameter(2)
  bb = bf16[3,45,66] parameter(3)
  bt = bf16[3,37,45] dot(ab, bb), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={2}
  ao = bf16[5,33,7] parameter(4)
  bo = bf16[5,40,7] parameter(5)
  odd = f32[5,33,40] dot(ao, bo), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={2}
  ROOT out = (f32[37,53], bf16[3,37,45], f32[5,33,40]) tuple(nt, bt, odd)
}
)";

TEST_F(GemmEmitterTest, Bf16PairsPackAsWordsWhereKIsContiguous) {
  if (!target::HostCpu().Has("avx512_bf16")) GTEST_SKIP() << "bf16 pairs need avx512_bf16";
  auto module = hlo::ParseModule(kPairWordsModule, "gemm.hlo");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  const Params registers = HostHasAmx() ? Params{{"amx", 0}} : Params{};
  auto impl = Emit(**module, registers);
  ASSERT_TRUE(impl.ok()) << impl.status().ToString();
  EXPECT_NE(impl->sources[0].text.find("mk_pack_rows_f32(reinterpret_cast<const float*>("),
            std::string::npos);
  for (size_t s = 0; s < Schedules().size(); ++s) {
    SCOPED_TRACE("schedule " + std::to_string(s));
    ExpectAgreement(kPairWordsModule, Schedules()[s]);
  }
  if (!HostHasAmx()) return;
  for (size_t s = 0; s < AmxSchedules().size(); ++s) {
    SCOPED_TRACE("amx schedule " + std::to_string(s));
    ExpectAgreement(kPairWordsModule, AmxSchedules()[s]);
  }
}

// The last sliver of M % MR rows runs its own kernel over just those rows (37 rows on 5-row
// slivers: 2 rows multiplied, not 5), reading the first rows of the MR-wide packed sliver; the
// column edge's kernel (53 on 16-column slivers) and the kernels of B and A read in place have
// theirs. The agreement tests above check the results on these shapes under every schedule;
// this one keeps the twins from silently dropping back to whole padded slivers.
TEST_F(GemmEmitterTest, TheLastRowsRunTheirOwnKernel) {
  auto module = hlo::ParseModule(kModule, "gemm.hlo");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto source = [&](const Params& params) {
    auto impl = Emit(**module, params);
    EXPECT_TRUE(impl.ok()) << impl.status().ToString();
    return impl.ok() ? impl->sources[0].text : std::string();
  };
  const Params tile{{"mr", 5},     {"nr", 16},     {"kc", 64}, {"threads", 1},
                    {"pack_a", 1}, {"pack_b", 1}, {"amx", 0}};
  const std::string packed = source(tile);
  EXPECT_NE(packed.find(" mk_gemm_f32_2x16_u4_pc_pf8_aw5("), std::string::npos);
  EXPECT_NE(packed.find("(gm_mv == 2 ? mk_gemm_f32_2x16_u4_pc_pf8_aw5 : mk_gemm_f32_5x16_u4_pc_pf8)("),
            std::string::npos);
  if (target::HostCpu().Has("avx512_bf16")) {
    EXPECT_NE(packed.find(" mk_gemm_bf16_2x16_u4_pc_pf8_aw5("), std::string::npos);
  }
  // wide (N 100 on 32-column slivers): the 16-column edge kernel's twin.
  Params wide = tile;
  wide["nr"] = 32;
  EXPECT_NE(source(wide).find("(gm_mv == 2 ? mk_gemm_f32_2x16_u4_pc_pf8_sb_aw5 : "
                              "mk_gemm_f32_5x16_u4_pc_pf8_sb)("),
            std::string::npos);
  // A read in place: the partial sliver is packed row-major, its twin reads rows lda apart.
  Params in_place = tile;
  in_place["pack_a"] = 0;
  in_place["pack_b"] = 0;
  EXPECT_NE(source(in_place).find(" mk_gemm_f32_2x16_u4_pc_pf8_sb_sa("), std::string::npos);
}

// Threads splitting one GEMM's columns with A slivers outer pack one A panel together (each
// its range of slivers, then a barrier), two panels alternating where K has several slices;
// a batched GEMM keeps its private panels. Agreement with one slice and with several, and
// with a team of 2 or 3 threads.
TEST_F(GemmEmitterTest, ColumnRangesShareOnePackedAPanel) {
  auto module = hlo::ParseModule(kModule, "gemm.hlo");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  const Params one_slice{{"mr", 5},          {"nr", 16},          {"kc", 128}, {"nc", 24},
                         {"threads", 2},     {"thread_split", 2}, {"loop_order", 1},
                         {"pack_a", 1},      {"amx", 0},          {"share_a", 1}};
  auto impl = Emit(**module, one_slice);
  ASSERT_TRUE(impl.ok()) << impl.status().ToString();
  const std::string& text = impl->sources[0].text;
  // plain (K 29 in one slice): one shared panel of 40 rows x 29 f32.
  EXPECT_NE(text.find("mkrt::Scratch gm_sap_mem(4640);"), std::string::npos);
  EXPECT_NE(text.find("gm_r < gm_re; gm_r += kMR) {"), std::string::npos);
  EXPECT_NE(text.find("#pragma omp barrier\n            for (int64_t gm_ch = gm_t; gm_ch < kTN; "
                      "gm_ch += gm_nt) {"),
            std::string::npos);
  // multi (batch 2) packs privately.
  const size_t multi = text.find("// dot %multi");
  ASSERT_NE(multi, std::string::npos);
  const size_t multi_end = text.find("// dot %", multi + 1);
  const std::string multi_text = text.substr(multi, multi_end - multi);
  EXPECT_EQ(multi_text.find("gm_sap"), std::string::npos);
  EXPECT_NE(multi_text.find("mkrt::Scratch gm_ap_mem("), std::string::npos);
  // Several slices (kc 7): two panels, by the slice's parity.
  Params slices = one_slice;
  slices["kc"] = 7;
  auto sliced = Emit(**module, slices);
  ASSERT_TRUE(sliced.ok()) << sliced.status().ToString();
  EXPECT_NE(sliced->sources[0].text.find("float* const gm_ap = gm_sap + ((gm_pc / kKC) & 1) * 280;"),
            std::string::npos);
  ExpectAgreement(kModule, one_slice);
  ExpectAgreement(kModule, slices);
  Params three = slices;
  three["threads"] = 3;
  ExpectAgreement(kModule, three);
  // share_a 0 (the model's choice for these small panels): private panels everywhere.
  Params own = one_slice;
  own.erase("share_a");
  auto private_panels = Emit(**module, own);
  ASSERT_TRUE(private_panels.ok()) << private_panels.status().ToString();
  EXPECT_EQ(private_panels->sources[0].text.find("gm_sap"), std::string::npos);
}

TEST_F(GemmEmitterTest, IllegalParametersAreRejectedByName) {
  auto module = hlo::ParseModule(kModule, "gemm.hlo");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  for (const auto& [name, value] : std::vector<std::pair<std::string, int64_t>>{
           {"nr", 12}, {"nr", 72}, {"mr", 0}, {"kc", 0}, {"unroll_k", 99}, {"gemm_blocked", 2},
           {"thread_split", 4}, {"prefetch_c", 2}, {"amx", 2}, {"amx", -1}, {"loop_order", 2}}) {
    auto impl = Emit(**module, {{name, value}});
    ASSERT_FALSE(impl.ok()) << name << "=" << value;
    EXPECT_EQ(impl.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(impl.status().message().find(name), std::string::npos) << impl.status().ToString();
  }
}

TEST(GemmParamsTest, SpaceDeclaresEveryParameterAroundItsInitialValue) {
  auto module = hlo::ParseModule(kModule, "gemm.hlo");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto plan = analysis::PlanFusion(**module);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  CpuEmitter emitter;
  const target::Target target = target::HostCpu();
  int dots = 0;
  for (const auto& k : plan->kernels) {
    if (k.family != analysis::KernelFamily::kContraction || !k.hero) continue;
    ++dots;
    space::KernelSpace space = emitter.SpaceFor(k, target);
    std::set<std::string> names;
    for (const auto& p : space.params) {
      names.insert(p.name);
      EXPECT_TRUE(std::is_sorted(p.values.begin(), p.values.end())) << p.name;
      EXPECT_NE(std::find(p.values.begin(), p.values.end(), p.initial), p.values.end()) << p.name;
    }
    // vector_bits: on AVX-512 machines (kernel_spaces.h).
    const bool wide = target.Has("avx512f");
    EXPECT_EQ(names.count("vector_bits"), wide ? 1u : 0u) << k.hero->name;
    names.erase("vector_bits");
    if (k.hero->name == "ints") {
      EXPECT_EQ(names, (std::set<std::string>{"threads", "gemm_blocked"}));
      continue;
    }
    std::set<std::string> want = {"threads", "gemm_blocked", "mr", "nr", "kc", "mc", "nc",
                                  "unroll_k", "thread_split", "prefetch_c", "prefetch_ab",
                                  "loop_order", "share_a"};
    // AMX: for the bf16×bf16 dots (bf16 pairs), where the machine has the tiles.
    auto g = AnalyzeDot(*k.hero, target);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    const bool bf16_operands = k.hero->name == "bf" || k.hero->name == "f32out" ||
                               k.hero->name == "conv";
    EXPECT_EQ(g->bf16_pairs, bf16_operands && target.Has("avx512_bf16")) << k.hero->name;
    if (g->bf16_pairs && AmxAvailable(target)) want.insert("amx");
    if (PlanGemmEpilogue(k)) want.insert("fuse_epilogue");  // gemm_epilogue_test.cc
    if (g->rhs_columns_contiguous) want.insert("pack_b");
    if (InnerApplies(*g)) want.insert("inner");
    if (g->lhs_rows_contiguous) want.insert("pack_a");
    EXPECT_EQ(names, want) << k.hero->name;
  }
  EXPECT_EQ(dots, 13);
}

// A 2-core AVX-512 target with bf16 and AMX tiles, whatever the host has.
target::Target AmxTarget() {
  target::Target t;
  t.name = "amx-test";
  t.isa = {"avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_bf16", "amx_tile",
           "amx_bf16"};
  t.vector_bytes = 64;
  t.vector_registers = 32;
  t.cores = 2;
  return t;
}

// The amx parameter: rejected by name on a target without the tiles (any host can check this);
// on one with them, the tile is the hardware's whatever mr/nr say, K slices are whole tile steps
// (or all of a short K) and the blocks whole tiles; it does not apply to f32 dots; and the model
// leaves tiles off where they would be mostly padding.
TEST(GemmParamsTest, AmxParameterIsValidatedAndFixesTheTile) {
  auto module = hlo::ParseModule(kAmxModule, "gemm.hlo");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto mod_plain = hlo::ParseModule(kModule, "gemm.hlo");
  ASSERT_TRUE(mod_plain.ok()) << mod_plain.status().ToString();
  auto find = [](const hlo::Module& m, const std::string& name) -> const hlo::Instruction* {
    for (const auto& inst : m.entry()->instructions()) {
      if (inst->name == name) return inst.get();
    }
    return nullptr;
  };
  const target::Target amx = AmxTarget();
  target::Target no_amx = amx;
  no_amx.name = "no-amx-test";
  no_amx.isa.resize(6);
  ASSERT_TRUE(AmxAvailable(amx));
  ASSERT_FALSE(AmxAvailable(no_amx));

  const hlo::Instruction* bf = find(**module, "bf");  // 3 × 37×53, K 71
  ASSERT_NE(bf, nullptr);
  auto g = AnalyzeDot(*bf, amx);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  ASSERT_TRUE(g->bf16_pairs);

  space::Schedule s;
  s.values = {{"amx", 1}, {"mr", 3}, {"nr", 24}, {"kc", 40}, {"mc", 50}, {"nc", 70}};
  auto bad = ResolveGemmParams(s, *g, no_amx);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("amx"), std::string::npos) << bad.status().ToString();

  auto p = ResolveGemmParams(s, *g, amx);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_TRUE(p->amx);
  EXPECT_TRUE(p->bf16_pairs);
  EXPECT_EQ(p->mr, kAmxMr);
  EXPECT_EQ(p->nr, kAmxNr);
  EXPECT_EQ(p->kc, 64);  // 40 rounded up to whole tile steps
  EXPECT_EQ(p->mc, 64);  // whole tiles, capped at M rounded up (37 -> 64)
  EXPECT_EQ(p->nc, 64);  // 70 -> 96, capped at N rounded up (53 -> 64)
  s.values["kc"] = 1000;
  p = ResolveGemmParams(s, *g, amx);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->kc, 71);  // all of K: one slice, padded to 96 when packed
  // Still validated although the tile ignores them.
  s.values["mr"] = 0;
  EXPECT_FALSE(ResolveGemmParams(s, *g, amx).ok());

  // The model: tiles for this dot; the register tile without AMX or with amx=0.
  EXPECT_TRUE(InitialGemmParams(*g, amx).amx);
  EXPECT_FALSE(InitialGemmParams(*g, no_amx).amx);
  space::Schedule off;
  off.values = {{"amx", 0}};
  p = ResolveGemmParams(off, *g, amx);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_FALSE(p->amx);
  EXPECT_LE(p->mr, 16);
  // K 15 is mostly padding in one 32-deep step: the model keeps the register tile.
  const hlo::Instruction* multi = find(**module, "multi");
  ASSERT_NE(multi, nullptr);
  auto gm = AnalyzeDot(*multi, amx);
  ASSERT_TRUE(gm.ok()) << gm.status().ToString();
  EXPECT_FALSE(InitialAmx(*gm, amx));

  // Threads on tiles take column ranges like the register tile (the next B sliver prefetched
  // into L2 made them as fast as a shared panel at every size measured), and row blocks
  // where N is too narrow to give each thread two slivers.
  DotGeometry square = *g;
  square.batch = 1;
  square.m = square.n = square.k = 2048;
  GemmParams tiles = InitialGemmParams(square, amx, true);
  tiles.threads = 2;
  EXPECT_EQ(InitialThreadSplit(square, tiles), ThreadSplit::kColumns);
  square.n = 96;
  EXPECT_EQ(InitialThreadSplit(square, tiles), ThreadSplit::kBlocks);

  // An f32 dot: amx=1 is legal on the AMX target and changes nothing.
  const hlo::Instruction* plain = find(**mod_plain, "plain");
  ASSERT_NE(plain, nullptr);
  auto gf = AnalyzeDot(*plain, amx);
  ASSERT_TRUE(gf.ok()) << gf.status().ToString();
  space::Schedule on;
  on.values = {{"amx", 1}};
  p = ResolveGemmParams(on, *gf, amx);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_FALSE(p->amx);
  EXPECT_EQ(p->mr, InitialGemmParams(*gf, amx).mr);
}

// share_a: the model shares the A panel where one slice's panel is at least a quarter of L3
// (2048^3 f32 on a 32 MiB L3: 16 MiB), not below (1024^3's 2 MiB slices, the suite's
// 512x2048x2048), nor for a batch, nor without the column split; a schedule can ask either way.
TEST(GemmParamsTest, ThreadsShareTheAPanelWhereItCrowdsL3) {
  auto module = hlo::ParseModule(kModule, "gemm.hlo");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  const hlo::Instruction* plain = (*module)->entry()->FindInstruction("plain");
  ASSERT_NE(plain, nullptr);
  target::Target t = AmxTarget();  // the default caches: 1 MiB L2, 32 MiB L3
  auto g = AnalyzeDot(*plain, t);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  auto with = [&](int64_t batch, int64_t m, int64_t n, int64_t k) {
    DotGeometry d = *g;
    d.batch = batch;
    d.m = m;
    d.n = n;
    d.k = k;
    return d;
  };
  const GemmParams big = InitialGemmParams(with(1, 2048, 2048, 2048), t);
  ASSERT_EQ(big.order, LoopOrder::kASliverOuter);
  ASSERT_EQ(big.split, ThreadSplit::kColumns);
  EXPECT_TRUE(big.share_a);
  EXPECT_TRUE(ShareAPays(with(1, 2048, 2048, 2048), big, t));
  EXPECT_FALSE(InitialGemmParams(with(1, 1024, 1024, 1024), t).share_a);
  EXPECT_FALSE(InitialGemmParams(with(1, 512, 2048, 2048), t).share_a);
  GemmParams batched = big;
  EXPECT_FALSE(ShareAPays(with(2, 2048, 2048, 2048), batched, t));
  GemmParams one_thread = big;
  one_thread.threads = 1;
  EXPECT_FALSE(ShareAPays(with(1, 2048, 2048, 2048), one_thread, t));
  GemmParams rows = big;
  rows.split = ThreadSplit::kBlocks;
  EXPECT_FALSE(ShareAPays(with(1, 2048, 2048, 2048), rows, t));
  auto resolve = [&](const DotGeometry& dot, std::map<std::string, int64_t> values) {
    space::Schedule s;
    s.values = std::move(values);
    return ResolveGemmParams(s, dot, t);
  };
  auto asked = resolve(with(1, 1024, 1024, 1024), {{"share_a", 1}});
  ASSERT_TRUE(asked.ok()) << asked.status().ToString();
  EXPECT_TRUE(asked->share_a);
  auto refused = resolve(with(1, 2048, 2048, 2048), {{"share_a", 0}});
  ASSERT_TRUE(refused.ok()) << refused.status().ToString();
  EXPECT_FALSE(refused->share_a);
  auto model = resolve(with(1, 2048, 2048, 2048), {});
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_TRUE(model->share_a);
  auto bad = resolve(with(1, 2048, 2048, 2048), {{"share_a", 2}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("share_a"), std::string::npos);
}

// loop_order: the model runs f32 register tiles A sliver outer with an NC panel sized for L2,
// or deep slices and an L3 panel for a result past a quarter of L3; the order is dropped where
// it cannot run (AMX tiles, a shared B panel, an A panel over kMaxAPanelBytes); an NC the
// schedule names is kept; and the emitted GEMM says which order ran.
TEST(GemmParamsTest, LoopOrderRunsWhereItCan) {
  auto module = hlo::ParseModule(kModule, "gemm.hlo");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  const hlo::Instruction* plain = nullptr;
  for (const auto& inst : (*module)->entry()->instructions()) {
    if (inst->name == "plain") plain = inst.get();
  }
  ASSERT_NE(plain, nullptr);
  target::Target t = AmxTarget();
  t.l2_bytes = 2 << 20;
  t.l3_bytes = 64 << 20;
  auto g = AnalyzeDot(*plain, t);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  DotGeometry big = *g;
  big.m = big.n = big.k = 4096;
  const GemmParams init = InitialGemmParams(big, t);
  EXPECT_EQ(init.split, ThreadSplit::kColumns);
  EXPECT_EQ(init.order, LoopOrder::kASliverOuter);
  // The 64 MiB result outgrows a quarter of L3: deep slices (DeepenSlices), 2048 f32, and a B
  // panel of an eighth of L3 (8 MiB: 1024 columns of 8 KiB).
  EXPECT_EQ(init.kc, kDeepKc);
  EXPECT_EQ(init.nc, 1024);
  {
    // A second pass of the model (gemm_space.cc's, after the threads) keeps the order and NC.
    GemmParams again = init;
    SetInitialLoopOrder(big, t, again);
    DeepenSlices(big, t, again);
    EXPECT_EQ(again.order, LoopOrder::kASliverOuter);
    EXPECT_EQ(again.kc, init.kc);
    EXPECT_EQ(again.nc, init.nc);
    // A result within a quarter of L3 (1024 x 4096 f32, 16 MiB): 512 f32 deep slices, the
    // panel in a quarter of L2 (512 KiB is 256 columns).
    DotGeometry quarter = big;
    quarter.m = 1024;
    const GemmParams q = InitialGemmParams(quarter, t);
    EXPECT_EQ(q.order, LoopOrder::kASliverOuter);
    EXPECT_EQ(q.kc, 512);
    EXPECT_EQ(q.nc, 256);
    // Many GEMMs, each thread's within a quarter of L3, all of them past L3 (32 of 256 x 4096,
    // 128 MiB): the slices stay, the row segments are a page (1024 f32 columns).
    DotGeometry batched = quarter;
    batched.batch = 32;
    batched.m = 256;
    const GemmParams bt = InitialGemmParams(batched, t);
    EXPECT_EQ(bt.split, ThreadSplit::kBatch);
    EXPECT_EQ(bt.kc, 512);
    EXPECT_EQ(bt.nc, 1024);
    // A K of one shallow slice has nothing to deepen, and keeps the L2 panel (2 MiB / 4 / 1
    // KiB of packed column is 512 columns).
    DotGeometry shallow = big;
    shallow.k = 256;
    const GemmParams sh = InitialGemmParams(shallow, t);
    EXPECT_EQ(sh.kc, 256);
    EXPECT_EQ(sh.nc, 512);
    // Where all rows at 2048 f32 would outgrow kMaxAPanelBytes, the slices are as deep as it
    // lets them be, balanced over K: 6000 rows (6006 packed) take 3 slices of 1368.
    DotGeometry rows6000 = big;
    rows6000.m = 6000;
    const GemmParams r = InitialGemmParams(rows6000, t);
    EXPECT_EQ(r.order, LoopOrder::kASliverOuter);
    EXPECT_EQ(r.kc, 1368);
    EXPECT_TRUE(ASliverOuterApplies(rows6000, r));
  }
  auto resolve = [&](const DotGeometry& dot, std::map<std::string, int64_t> values) {
    space::Schedule s;
    s.values = std::move(values);
    auto p = ResolveGemmParams(s, dot, t);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return p.ok() ? *p : GemmParams{};
  };
  GemmParams p = resolve(big, {{"loop_order", 0}, {"kc", 512}});
  EXPECT_EQ(p.order, LoopOrder::kBSliverOuter);
  EXPECT_EQ(p.nc, 4096);  // the L3 panel of the B-sliver-outer order (8 MiB of 512 f32 deep)
  p = resolve(big, {{"loop_order", 1}, {"nc", 1024}});
  EXPECT_EQ(p.order, LoopOrder::kASliverOuter);
  EXPECT_EQ(p.nc, 1024);
  // Around a shared B panel the order cannot run.
  p = resolve(big, {{"loop_order", 1}, {"thread_split", 0}});
  EXPECT_EQ(p.order, LoopOrder::kBSliverOuter);
  // One thread has nothing to share: it runs.
  p = resolve(big, {{"loop_order", 1}, {"threads", 1}, {"thread_split", 0}});
  EXPECT_EQ(p.order, LoopOrder::kASliverOuter);
  // The initial schedule runs as the model made it (deep slices and all).
  p = resolve(big, {});
  EXPECT_EQ(p.order, LoopOrder::kASliverOuter);
  EXPECT_EQ(p.kc, kDeepKc);
  // All of M for one slice past kModelAPanelBytes (9000 rows x 512 x 4 bytes > 16 MiB): the
  // model keeps the B-sliver-outer order; a schedule may still ask for it.
  DotGeometry tall = big;
  tall.m = 9000;
  const GemmParams tall_init = InitialGemmParams(tall, t);
  EXPECT_EQ(tall_init.order, LoopOrder::kBSliverOuter);
  EXPECT_EQ(tall_init.kc, 512);
  p = resolve(tall, {{"loop_order", 1}});
  EXPECT_EQ(p.order, LoopOrder::kASliverOuter);
  // ... but not past kMaxAPanelBytes (24000 x 512 x 4 bytes > 40 MiB).
  tall.m = 24000;
  EXPECT_FALSE(ASliverOuterApplies(tall, InitialGemmParams(tall, t)));
  p = resolve(tall, {{"loop_order", 1}});
  EXPECT_EQ(p.order, LoopOrder::kBSliverOuter);
  // AMX tiles keep their own order.
  DotGeometry bf = big;
  bf.lhs_type = bf.rhs_type = hlo::DType::kBF16;
  bf.bf16_pairs = true;
  p = resolve(bf, {{"amx", 1}, {"loop_order", 1}});
  EXPECT_TRUE(p.amx);
  EXPECT_EQ(p.order, LoopOrder::kBSliverOuter);

  // The emitted text names the order it ran.
  auto one = hlo::ParseModule(R"(
HloModule one
ENTRY main {
  a = f32[64,80] parameter(0)
  b = f32[80,96] parameter(1)
  ROOT d = f32[64,96] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})", "one.hlo");
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  auto plan = analysis::PlanFusion(**one);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  const target::Target host = target::HostCpu();
  for (int order : {0, 1}) {
    CpuEmitter emitter;
    space::Candidate c;
    for (const auto& k : plan->kernels) {
      space::Schedule s = emitter.SpaceFor(k, host).Initial();
      if (k.family == analysis::KernelFamily::kContraction) {
        s.values["loop_order"] = order;
        s.values["threads"] = 1;  // nothing shared: the order can run
      }
      c.kernels.push_back(s);
    }
    auto impl = emitter.Emit(*plan, c, host);
    ASSERT_TRUE(impl.ok()) << impl.status().ToString();
    std::string text;
    for (const auto& src : impl->sources) text += src.text;
    EXPECT_EQ(text.find("A slivers outer") != std::string::npos, order == 1) << order;
  }
}

// An AVX-512 target with nothing else (no AMX, no bf16): the register tile's model.
target::Target Avx512Target() {
  target::Target t;
  t.isa = {"avx2", "fma", "avx512f"};
  t.vector_bytes = 64;
  t.vector_registers = 32;
  return t;
}

TEST(GemmParamsTest, AnalyticalTileFitsTheRegisterFile) {
  auto module = hlo::ParseModule(kModule, "gemm.hlo");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  const hlo::Instruction* plain = (*module)->entry()->FindInstruction("plain");
  ASSERT_NE(plain, nullptr);
  const target::Target avx512 = Avx512Target();
  target::Target avx2 = avx512;
  avx2.isa = {"avx2", "fma"};
  avx2.vector_bytes = 32;
  avx2.vector_registers = 16;
  for (const target::Target& t : {avx512, avx2}) {
    auto g = AnalyzeDot(*plain, t);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    EXPECT_EQ(g->m, 37);
    EXPECT_EQ(g->n, 53);
    EXPECT_EQ(g->k, 29);
    GemmParams p = InitialGemmParams(*g, t);
    const int64_t lanes = t.vector_bytes / 4, nv = p.nr / lanes;
    EXPECT_EQ(p.nr % lanes, 0);
    // Accumulators + B vectors + the A broadcast fit the register file, using most of it.
    EXPECT_LE(p.mr * nv + nv + 1, t.vector_registers);
    EXPECT_GE(p.mr * nv, t.vector_registers / 3);
    EXPECT_LE(p.kc, 29);
    EXPECT_EQ(p.mc % p.mr, 0);
    EXPECT_EQ(p.nc % p.nr, 0);
  }
}

// The register tile pads M to whole tiles; past 5% padded rows the model takes the tile that
// pads least: 64 and 128 output channels on 8x48 rather than 14x32 (70 and 140 rows), 24 on
// 6x64 (equal accumulators to 8x48, fewer loads per FMA); 512 (518 rows) keeps 14x32.
TEST(GemmParamsTest, TileRowsFollowM) {
  auto module = hlo::ParseModule(kModule, "gemm.hlo");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  const hlo::Instruction* plain = (*module)->entry()->FindInstruction("plain");
  ASSERT_NE(plain, nullptr);
  const target::Target avx512 = Avx512Target();
  auto g = AnalyzeDot(*plain, avx512);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  DotGeometry d = *g;
  d.k = 512;
  d.n = 4096;
  const std::vector<std::tuple<int64_t, int64_t, int64_t>> cases = {
      {512, 14, 32}, {1024, 14, 32}, {64, 8, 48}, {128, 8, 48}, {24, 6, 64}, {37, 13, 32}};
  for (const auto& [m, mr, nr] : cases) {
    d.m = m;
    const GemmParams p = InitialGemmParams(d, avx512);
    EXPECT_EQ(p.mr, mr) << "M " << m;
    EXPECT_EQ(p.nr, nr) << "M " << m;
    EXPECT_EQ(p.mc % p.mr, 0) << "M " << m;
  }
}

// B read in place (pack_b 0): the model's choice where few A slivers would reuse a packed B
// sliver (a skinny M), with threads over column ranges and a K slice that keeps the sliver in
// half of L1 (16 deep for a single A sliver); never for bf16 pairs (the schedule cannot force
// it either) or a B whose columns are not contiguous; and the emitter reads in place only the
// dots whose B it finds in memory with contiguous columns.
TEST(GemmParamsTest, SkinnyMReadsBInPlace) {
  auto module = hlo::ParseModule(kModule, "gemm.hlo");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  target::Target t = Avx512Target();
  t.cores = 2;
  t.l1_bytes = 48 << 10;
  auto geometry = [&](const char* name) {
    const hlo::Instruction* dot = (*module)->entry()->FindInstruction(name);
    EXPECT_NE(dot, nullptr) << name;
    auto g = dot ? AnalyzeDot(*dot, t) : Result<DotGeometry>(InvalidArgument("missing"));
    EXPECT_TRUE(g.ok()) << g.status().ToString();
    return g.ok() ? *g : DotGeometry{};
  };
  DotGeometry d = geometry("plain");
  EXPECT_TRUE(d.rhs_columns_contiguous);
  EXPECT_FALSE(geometry("trans").rhs_columns_contiguous);  // B stored [N][K]
  EXPECT_FALSE(geometry("multi").rhs_columns_contiguous);  // two contracting dims
  d.n = d.k = 2048;
  const std::vector<std::tuple<int64_t, bool, int64_t>> cases = {
      // M, B packed, KC
      {1, false, 16}, {17, false, 128}, {64, false, 128}, {512, true, 512}};
  for (const auto& [m, packed, kc] : cases) {
    d.m = m;
    const GemmParams p = InitialGemmParams(d, t);
    EXPECT_EQ(p.pack_b, packed) << "M " << m;
    EXPECT_EQ(p.kc, kc) << "M " << m;
    if (!packed) {
      EXPECT_EQ(p.split, ThreadSplit::kColumns) << "M " << m;
    }
    // 48 KiB of L1: a 128-deep sliver of the 8x48 (M 17, 64) tiles fills half of it.
    if (m == 17 || m == 64) {
      EXPECT_EQ(p.nr, 48) << "M " << m;
    }
  }
  DotGeometry bt = geometry("trans");
  bt.m = 17;
  EXPECT_TRUE(InitialGemmParams(bt, t).pack_b);
  // bf16 pairs (on an AMX target): up to kBf16InPlaceMaxRows rows B is read in place and
  // multiplied in f32; past them AMX tiles, whose K slice fills half of L1 up to 64 rows (384
  // deep, balanced over K 2048: 6 slices of 344, or 352 in whole tile steps).
  target::Target amx = AmxTarget();
  amx.l1_bytes = 48 << 10;
  DotGeometry bf = d;
  bf.lhs_type = bf.rhs_type = hlo::DType::kBF16;
  bf.bf16_pairs = true;
  const std::vector<std::tuple<int64_t, bool, bool, int64_t>> bf_cases = {
      // M, B packed, AMX, KC
      {1, false, false, 16}, {12, false, false, 344}, {13, true, true, 352},
      {64, true, true, 352}, {65, true, true, 2048}};
  for (const auto& [m, packed, tiles, kc] : bf_cases) {
    bf.m = m;
    const GemmParams bp = InitialGemmParams(bf, amx);
    EXPECT_EQ(bp.pack_b, packed) << "bf16 M " << m;
    EXPECT_EQ(bp.bf16_pairs, packed) << "bf16 M " << m;
    EXPECT_EQ(bp.amx, tiles) << "bf16 M " << m;
    EXPECT_EQ(bp.kc, kc) << "bf16 M " << m;
  }
  bf.m = 8;
  bf.rhs_columns_contiguous = false;  // B stored [N][K]: pairs, whatever the schedule says
  EXPECT_TRUE(InitialGemmParams(bf, amx).pack_b);
  space::Schedule off;
  off.values = {{"pack_b", 0}, {"amx", 0}};
  auto p = ResolveGemmParams(off, bf, amx);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_TRUE(p->pack_b);
  EXPECT_TRUE(p->bf16_pairs);
  off.values = {{"pack_b", 2}};
  EXPECT_FALSE(ResolveGemmParams(off, d, t).ok());

  // Emitted with pack_b 0 (and amx 0) for every dot: in place exactly where B is an f32 or
  // bf16 array with contiguous columns (plain, vec, fused, wide; bf and f32out), packed
  // elsewhere.
  EXPECT_EQ(DotsWhoseGemmSays(kModule, {{"pack_b", 0}, {"amx", 0}}, "B in place"),
            (std::set<std::string>{"plain", "vec", "fused", "wide", "bf", "f32out"}));
}

// Threads over column ranges need a few slivers each (else each thread's packing of all of A
// weighs on its few columns) and a split within 5% as even as the row blocks'.
TEST(GemmParamsTest, ColumnRangesNeedSeveralSliversPerThread) {
  target::Target t = Avx512Target();
  t.cores = 2;
  DotGeometry d;
  d.blockable = true;
  d.m = 4096, d.n = 100, d.k = 4096;
  GemmParams p = InitialGemmParams(d, t);
  EXPECT_EQ(p.nr, 32);
  EXPECT_EQ(p.split, ThreadSplit::kBlocks);  // 4 slivers of 32 for 2 threads
  d.m = 128, d.n = 2048, d.k = 2048;
  d.rhs_columns_contiguous = false;  // packed B
  p = InitialGemmParams(d, t);
  EXPECT_TRUE(p.pack_b);
  EXPECT_EQ(p.split, ThreadSplit::kColumns);  // 43 slivers of 48 against 16 row slivers
  d.m = d.n = d.k = 2048;
  EXPECT_EQ(InitialGemmParams(d, t).split, ThreadSplit::kColumns);
}

// K ranges for a small result over a deep K (DepthSplitPays): not for a shallow K, a result
// past kDepthMaxResult, a batch the threads share, the inner-product form or one thread. The
// schedule may ask for them anywhere (thread_split 3), and for nothing past them.
TEST(GemmParamsTest, DeepKSplitsOverK) {
  target::Target t = Avx512Target();
  t.cores = 2;
  DotGeometry d;
  d.blockable = true;
  d.rhs_columns_contiguous = true;
  auto split = [&](int64_t m, int64_t n, int64_t k) {
    d.m = m, d.n = n, d.k = k;
    return InitialGemmParams(d, t).split;
  };
  EXPECT_EQ(split(128, 128, 8192), ThreadSplit::kDepth);
  EXPECT_EQ(split(64, 256, 4096), ThreadSplit::kDepth);
  EXPECT_EQ(split(512, 512, 4096), ThreadSplit::kDepth);
  EXPECT_NE(split(512, 512, 2048), ThreadSplit::kDepth);    // K under 8 x 512
  EXPECT_NE(split(1024, 512, 8192), ThreadSplit::kDepth);   // result past 512 x 512
  EXPECT_NE(split(64, 64, 512), ThreadSplit::kDepth);       // K under kDepthMinK
  EXPECT_NE(split(2048, 2048, 2048), ThreadSplit::kDepth);
  d.batch = 4;
  EXPECT_EQ(split(128, 128, 8192), ThreadSplit::kBatch);
  d.batch = 1;
  d.lhs_rows_contiguous = true;  // N of 8: the inner-product form
  d.m = 64, d.n = 8, d.k = 8192;
  GemmParams p = InitialGemmParams(d, t);
  EXPECT_TRUE(p.inner);
  EXPECT_NE(p.split, ThreadSplit::kDepth);
  t.cores = 1;
  EXPECT_NE(split(128, 128, 8192), ThreadSplit::kDepth);

  t = target::HostCpu();
  space::Schedule s;
  s.values["thread_split"] = 3;
  s.values["threads"] = 2;
  d.lhs_rows_contiguous = false;
  d.m = d.n = d.k = 256;
  auto resolved = ResolveGemmParams(s, d, t);
  ASSERT_TRUE(resolved.ok()) << resolved.status().ToString();
  EXPECT_EQ(resolved->split, ThreadSplit::kDepth);
  s.values["thread_split"] = 4;
  resolved = ResolveGemmParams(s, d, t);
  ASSERT_FALSE(resolved.ok());
  EXPECT_NE(resolved.status().message().find("thread_split"), std::string::npos);
}

// A skinny N shrinks NR to whole vectors over it and grows MR to what the registers then hold;
// from one NR (32) on, the tile is the model's usual one.
TEST(GemmParamsTest, TileColumnsFollowASkinnyN) {
  const target::Target avx512 = Avx512Target();
  DotGeometry d;
  d.blockable = true;
  d.m = 4096, d.k = 4096;
  const std::vector<std::tuple<int64_t, int64_t, int64_t>> cases = {
      // N, MR, NR
      {8, 16, 16}, {16, 16, 16}, {20, 14, 32}, {64, 14, 32}, {100, 14, 32}};
  for (const auto& [n, mr, nr] : cases) {
    d.n = n;
    const GemmParams p = InitialGemmParams(d, avx512);
    EXPECT_EQ(p.mr, mr) << "N " << n;
    EXPECT_EQ(p.nr, nr) << "N " << n;
  }
}

// A read in place (pack_a 0): the model's choice for an f32 A contiguous along K and at most
// 128 columns, with at most 8 rows per tile and K slices of up to 4096 (balanced); packed for
// more columns, a bf16-pair GEMM or an A that is not contiguous along K (the schedule cannot
// force it there). The emitter reads in place exactly the dots whose A it finds in memory.
TEST(GemmParamsTest, SkinnyNReadsAInPlace) {
  const target::Target avx512 = Avx512Target();
  DotGeometry d;
  d.blockable = true;
  d.lhs_rows_contiguous = true;
  d.rhs_columns_contiguous = true;
  d.m = 4096;
  const std::vector<std::tuple<int64_t, int64_t, bool, int64_t, int64_t>> cases = {
      // N, K, A packed, MR, KC
      {16, 4096, false, 8, 4096}, {100, 5000, false, 8, 2504}, {128, 4096, false, 8, 4096},
      {129, 4096, true, 14, 512}};
  for (const auto& [n, k, packed, mr, kc] : cases) {
    d.n = n;
    d.k = k;
    const GemmParams p = InitialGemmParams(d, avx512);
    EXPECT_EQ(p.pack_a, packed) << "N " << n;
    EXPECT_EQ(p.mr, mr) << "N " << n;
    EXPECT_EQ(p.kc, kc) << "N " << n;
  }
  d.n = 64;
  d.k = 4096;
  DotGeometry strided = d;
  strided.lhs_rows_contiguous = false;
  EXPECT_TRUE(InitialGemmParams(strided, avx512).pack_a);
  space::Schedule off;
  off.values = {{"pack_a", 0}};
  auto p = ResolveGemmParams(off, strided, avx512);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_TRUE(p->pack_a);
  DotGeometry bf = d;
  bf.lhs_rows_contiguous = false;  // a bf16 A is never "contiguous rows" (f32 only)
  bf.lhs_type = bf.rhs_type = hlo::DType::kBF16;
  bf.bf16_pairs = true;
  p = ResolveGemmParams(off, bf, avx512);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_TRUE(p->pack_a);
  off.values = {{"pack_a", 2}};
  EXPECT_FALSE(ResolveGemmParams(off, d, avx512).ok());

  // kModule under the model (inner form off): A in place on plain and wide (fused reads its A
  // through a transpose, vec has no rows, the others are not contiguous along K or not f32).
  EXPECT_EQ(DotsWhoseGemmSays(kModule, {}, "A in place"),
            (std::set<std::string>{"plain", "wide"}));
}

// The inner-product form: the model's choice for an f32 A contiguous along K, at most 12
// columns and K of at least 64; its tile by N (AVX-512: 24 accumulators at most; AVX2: 12);
// "inner" 1 forces it wherever it applies and nowhere else. The emitter runs it exactly on
// the dots whose A it finds in memory: under the model, all of kInnerModule's but n16 (16
// columns); forced, kModule's plain and wide (fused reads its A through a transpose).
TEST(GemmParamsTest, SmallNTakesTheInnerProductForm) {
  const target::Target avx512 = Avx512Target();
  target::Target avx2 = avx512;
  avx2.isa = {"avx2", "fma"};
  avx2.vector_bytes = 32;
  avx2.vector_registers = 16;
  DotGeometry d;
  d.blockable = true;
  d.lhs_rows_contiguous = true;
  d.m = 4096, d.k = 4096;
  const std::vector<std::tuple<int64_t, bool, int64_t, int64_t>> cases = {
      // N, inner, MR, NR (AVX-512)
      {1, true, 8, 1}, {4, true, 6, 4}, {5, true, 4, 5}, {8, true, 3, 8},
      {12, true, 4, 6}, {13, false, 4, 6}, {16, false, 4, 6}};
  for (const auto& [n, inner, mr, nr] : cases) {
    d.n = n;
    const GemmParams p = InitialGemmParams(d, avx512);
    EXPECT_EQ(p.inner, inner) << "N " << n;
    EXPECT_EQ(p.inner_mr, mr) << "N " << n;
    EXPECT_EQ(p.inner_nr, nr) << "N " << n;
  }
  d.n = 8;
  const GemmParams p2 = InitialGemmParams(d, avx2);
  EXPECT_TRUE(p2.inner);
  EXPECT_EQ(p2.inner_mr, 2);
  EXPECT_EQ(p2.inner_nr, 6);
  d.k = 63;
  EXPECT_FALSE(InitialGemmParams(d, avx512).inner);
  // Swapped: B stored [N][K] too and M under N; the tile's columns are then over M.
  DotGeometry sw = d;
  sw.rhs_rows_contiguous = true;
  sw.m = 1, sw.n = 4096, sw.k = 4096;
  GemmParams ps = InitialGemmParams(sw, avx512);
  EXPECT_TRUE(ps.inner);
  EXPECT_TRUE(ps.inner_swapped);
  EXPECT_EQ(ps.inner_mr, 8);
  EXPECT_EQ(ps.inner_nr, 1);
  EXPECT_EQ(GemmTiles(sw, ps), 512);
  sw.m = 13;
  EXPECT_FALSE(InitialGemmParams(sw, avx512).inner);
  sw.m = 12, sw.n = 8;  // M over N: not swapped, the usual form over 8 columns
  ps = InitialGemmParams(sw, avx512);
  EXPECT_TRUE(ps.inner);
  EXPECT_FALSE(ps.inner_swapped);
  d.k = 4096;
  DotGeometry strided = d;
  strided.lhs_rows_contiguous = false;
  EXPECT_FALSE(InitialGemmParams(strided, avx512).inner);
  space::Schedule on;
  on.values = {{"inner", 1}};
  d.n = 100;
  auto forced = ResolveGemmParams(on, d, avx512);
  ASSERT_TRUE(forced.ok()) << forced.status().ToString();
  EXPECT_TRUE(forced->inner);
  forced = ResolveGemmParams(on, strided, avx512);
  ASSERT_TRUE(forced.ok()) << forced.status().ToString();
  EXPECT_FALSE(forced->inner);
  on.values = {{"inner", 2}};
  EXPECT_FALSE(ResolveGemmParams(on, d, avx512).ok());

  // Which dots the emitter runs in the inner-product form.
  auto inner_dots = [](const char* text, const Params& params) {
    return DotsWhoseGemmSays(text, params, "inner-product GEMM");
  };
  EXPECT_EQ(inner_dots(kInnerModule, {}),
            (std::set<std::string>{"n1", "d5", "batched", "tw", "half", "fusedb", "sw9", "swh",
                                   "swb"}));
  EXPECT_EQ(inner_dots(kModule, {{"inner", 1}}), (std::set<std::string>{"plain", "wide"}));
  EXPECT_TRUE(inner_dots(kInnerModule, {{"inner", 0}}).empty());
}

// The model gives a GEMM no more threads than it has register tiles (of the form it runs) unless
// it splits K: one 8x16 tile over a K of 512 runs on one thread; over 8192 each thread takes a
// K range of it, in the parameters and in the kernel space's initial schedule.
TEST(GemmParamsTest, NoMoreThreadsThanTiles) {
  target::Target t = Avx512Target();
  t.cores = 2;
  DotGeometry d;
  d.blockable = true;
  d.lhs_rows_contiguous = d.rhs_columns_contiguous = true;
  d.m = 8, d.n = 16, d.k = 512;  // A in place: an 8x16 tile, too shallow for K ranges
  GemmParams p = InitialGemmParams(d, t);
  EXPECT_EQ(GemmTiles(d, p), 1);
  EXPECT_EQ(p.threads, 1);
  d.k = 8192;  // deep enough: both threads take a K range of the one tile
  p = InitialGemmParams(d, t);
  EXPECT_EQ(p.threads, 2);
  EXPECT_EQ(p.split, ThreadSplit::kDepth);
  d.m = 4096;
  EXPECT_EQ(InitialGemmParams(d, t).threads, 2);
  d.m = 3, d.n = 8, d.k = 65536;  // the inner-product form: one 3x8 tile
  p = InitialGemmParams(d, t);
  EXPECT_TRUE(p.inner);
  EXPECT_EQ(p.threads, 1);
  d.m = 6;
  EXPECT_EQ(InitialGemmParams(d, t).threads, 2);

  auto module = hlo::ParseModule(R"(
HloModule one_tile
ENTRY main {
  a = f32[8,8192] parameter(0)
  b = f32[8192,16] parameter(1)
  ROOT d = f32[8,16] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)", "one_tile.hlo");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto plan = analysis::PlanFusion(**module);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->kernels.size(), 1u);
  target::Target host = target::HostCpu();
  host.cores = 2;
  const space::Schedule s = CpuEmitter().SpaceFor(plan->kernels[0], host).Initial();
  // The space follows InitialGemmParams: the one tile's K split over both threads.
  EXPECT_EQ(s.Get("threads", 0), 2);
  EXPECT_EQ(s.Get("thread_split", 0), 3);
}

TEST(GemmParamsTest, IntegerDotsAreNotBlockable) {
  auto module = hlo::ParseModule(kModule, "gemm.hlo");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  for (const auto& inst : (*module)->entry()->instructions()) {
    if (inst->opcode != hlo::Opcode::kDot) continue;
    auto g = AnalyzeDot(*inst, target::HostCpu());
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    EXPECT_EQ(g->blockable, inst->name != "ints") << inst->name;
  }
}

}  // namespace
}  // namespace mk::codegen::cpu
