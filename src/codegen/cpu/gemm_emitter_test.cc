// The blocked GEMM path against the interpreter: odd sizes (every edge path), transposed and
// fused operands, batch dims, several contracting and free dims, bf16 (vdpbf16ps where the
// machine has it), and schedules from the analytical one to edge-heavy ones and the loop nest.
// Sums are reordered (K slices, FMA, bf16 pairs), so each element is compared within a tolerance
// relative to sum_k |a||b|, which the interpreter computes on the absolute values of the inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "analysis/fusion_plan.h"
#include "codegen/cpu/cpu_emitter.h"
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
// results go through f32 partial sums; f16 operands are converted to f32 while packing. One
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
  ROOT out = (f32[37,53], f32[37,53], f32[2,7,4,6], f32[53], f32[29,53], f32[37,53], s32[6,4], f32[], bf16[3,37,53], f32[3,37,53], bf16[37,53], f16[37,53]) tuple(plain, trans, multi, vec, outer, relu, ints, scalar, bf, f32out, conv, half)
}
)";

class GemmEmitterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cache_dir_ = testing::MakeTempDir("mk-gemm-test"); }
  static void TearDownTestSuite() { std::filesystem::remove_all(cache_dir_); }

  // The module's implementation with `params` overriding the initial schedule of every
  // contraction kernel.
  Result<Implementation> Emit(const hlo::Module& m, const Params& params) {
    MK_ASSIGN_OR_RETURN(analysis::FusionPlan plan, analysis::PlanFusion(m));
    CpuEmitter emitter;
    target::Target target = target::HostCpu();
    space::Candidate candidate;
    for (const auto& k : plan.kernels) {
      space::Schedule s = emitter.SpaceFor(k, target).Initial();
      if (k.family == analysis::KernelFamily::kContraction) {
        for (const auto& [name, v] : params) s.values[name] = v;
      }
      candidate.kernels.push_back(s);
    }
    return emitter.Emit(plan, candidate, target);
  }

  // Runs `text` under `params` (compiled with `march`) and compares every output with the
  // interpreter's.
  void ExpectAgreement(const char* text, const Params& params,
                       const std::string& march = "-march=native") {
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
    auto got = exec.Run(*lib, *impl, args, runtime::ExecuteOptions{.poison_scratch = true});
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
// split the NR slivers, some get none), and one without the C-tile prefetch.
const std::vector<Params>& Schedules() {
  static const std::vector<Params> kSchedules = {
      {},
      {{"gemm_blocked", 0}},
      {{"mr", 1}, {"nr", 8}, {"kc", 1}, {"mc", 1}, {"nc", 1}, {"threads", 1}},
      {{"mr", 5}, {"nr", 16}, {"kc", 7}, {"mc", 10}, {"nc", 24}, {"threads", 2}, {"thread_split", 0}},
      {{"mr", 16}, {"nr", 64}, {"kc", 1024}, {"mc", 1024}, {"nc", 8192}, {"unroll_k", 8},
       {"threads", 2}, {"thread_split", 1}},
      {{"mr", 3}, {"nr", 24}, {"kc", 16}, {"mc", 7}, {"nc", 48}, {"unroll_k", 1}, {"threads", 3},
       {"thread_split", 2}},
      {{"mr", 16}, {"nr", 16}, {"kc", 32}, {"threads", 4}, {"thread_split", 0}},
      {{"mr", 7}, {"nr", 48}, {"kc", 64}, {"prefetch_c", 0}},
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
// for baseline x86-64 (every micro-kernel portable).
TEST_F(GemmEmitterTest, FallbackMicroKernelsAgree) {
  for (const char* march : {"-march=x86-64-v3", "-march=x86-64"}) {
    SCOPED_TRACE(march);
    ExpectAgreement(kModule, {}, march);
  }
}

TEST_F(GemmEmitterTest, IllegalParametersAreRejectedByName) {
  auto module = hlo::ParseModule(kModule, "gemm.hlo");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  for (const auto& [name, value] : std::vector<std::pair<std::string, int64_t>>{
           {"nr", 12}, {"nr", 72}, {"mr", 0}, {"kc", 0}, {"unroll_k", 99}, {"gemm_blocked", 2},
           {"thread_split", 3}, {"prefetch_c", 2}}) {
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
    if (k.hero->name == "ints") {
      EXPECT_EQ(names, (std::set<std::string>{"threads", "gemm_blocked"}));
      continue;
    }
    EXPECT_EQ(names, (std::set<std::string>{"threads", "gemm_blocked", "mr", "nr", "kc", "mc", "nc",
                                            "unroll_k", "thread_split", "prefetch_c"}))
        << k.hero->name;
  }
  EXPECT_EQ(dots, 12);
}

TEST(GemmParamsTest, AnalyticalTileFitsTheRegisterFile) {
  auto module = hlo::ParseModule(kModule, "gemm.hlo");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  const hlo::Instruction* plain = nullptr;
  for (const auto& inst : (*module)->entry()->instructions()) {
    if (inst->name == "plain") plain = inst.get();
  }
  ASSERT_NE(plain, nullptr);
  target::Target avx512;
  avx512.isa = {"avx2", "fma", "avx512f"};
  avx512.vector_bytes = 64;
  avx512.vector_registers = 32;
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
