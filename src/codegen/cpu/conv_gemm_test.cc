// Convolutions as implicit GEMMs (conv_gemm.h) against the interpreter, on fresh random inputs:
// stride, low/high and negative padding, window and base (transposed) dilation, reversal,
// feature groups, 1-D/2-D/3-D, batch > 1, both supported output layouts, operand layouts whose
// gather streams and ones whose does not, f32/bf16 operands and results, under schedules from the
// analytical one to tiny blocks (edge tiles everywhere, several K slices, odd KC: padded bf16
// pairs) and both thread settings, bf16 convolutions on AMX tiles where the machine has them,
// plus convolutions the GEMM path does not take (generic loop nest). Outputs are poisoned before each run (the executor's harness), so an element the
// kernel never writes fails. Sums are reordered, so each element is compared within a tolerance
// relative to sum |x||w|, which the interpreter computes on the absolute values of the inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "analysis/fusion_plan.h"
#include "codegen/cpu/conv_gemm.h"
#include "codegen/cpu/cpu_emitter.h"
#include "codegen/cpu/test_harness.h"
#include "hlo/parser.h"
#include "interp/interpreter.h"
#include "runtime/cpu_executor.h"

namespace mk::codegen::cpu {
namespace {

using Params = std::map<std::string, int64_t>;

// One convolution per case; each is its own contraction kernel. `gemm` says whether the
// implicit GEMM path must take it.
struct ConvCase {
  const char* name;
  const char* hlo;  // the ENTRY body: parameters x (and w), then ROOT
  bool gemm;
};

const std::vector<ConvCase>& Cases() {
  static const std::vector<ConvCase> kCases = {
      {"valid_2d", R"(
  x = f32[2,5,9,11] parameter(0)
  w = f32[7,5,3,3] parameter(1)
  ROOT c = f32[2,7,7,9] convolution(x, w), window={size=3x3}, dim_labels=bf01_oi01->bf01)",
       true},
      {"stride_pad", R"(
  x = f32[2,4,10,9] parameter(0)
  w = f32[6,4,3,2] parameter(1)
  ROOT c = f32[2,6,6,3] convolution(x, w), window={size=3x2 stride=2x3 pad=1_2x0_1}, dim_labels=bf01_oi01->bf01)",
       true},
      {"rhs_dilate_negative_pad", R"(
  x = f32[1,3,12,10] parameter(0)
  w = f32[5,3,3,3] parameter(1)
  ROOT c = f32[1,5,9,8] convolution(x, w), window={size=3x3 pad=-1_2x1_-1 rhs_dilate=2x1}, dim_labels=bf01_oi01->bf01)",
       true},
      {"transposed_3d", R"(
  x = f32[2,3,4,5,3] parameter(0)
  w = f32[4,3,4,4,4] parameter(1)
  ROOT c = f32[2,4,8,10,6] convolution(x, w), window={size=4x4x4 pad=2_2x2_2x2_2 lhs_dilate=2x2x2}, dim_labels=bf012_oi012->bf012)",
       true},
      {"lhs_rhs_dilate_stride", R"(
  x = f32[1,2,5,4] parameter(0)
  w = f32[3,2,2,3] parameter(1)
  ROOT c = f32[1,3,5,9] convolution(x, w), window={size=2x3 stride=2x1 pad=1_0x2_1 lhs_dilate=2x3 rhs_dilate=1x2}, dim_labels=bf01_oi01->bf01)",
       true},
      {"groups", R"(
  x = f32[2,6,8,7] parameter(0)
  w = f32[9,2,3,3] parameter(1)
  ROOT c = f32[2,9,6,5] convolution(x, w), window={size=3x3}, dim_labels=bf01_oi01->bf01, feature_group_count=3)",
       true},
      {"conv_1d", R"(
  x = f32[3,4,37] parameter(0)
  w = f32[5,4,3] parameter(1)
  ROOT c = f32[3,5,37] convolution(x, w), window={size=3 pad=1_1}, dim_labels=bf0_oi0->bf0)",
       true},
      {"strided_3d", R"(
  x = f32[1,3,6,7,8] parameter(0)
  w = f32[4,3,2,3,3] parameter(1)
  ROOT c = f32[1,4,5,4,6] convolution(x, w), window={size=2x3x3 stride=1x2x1 pad=0_0x1_1x0_0}, dim_labels=bf012_oi012->bf012)",
       true},
      {"wide", R"(
  x = f32[2,16,20,20] parameter(0)
  w = f32[20,16,3,3] parameter(1)
  ROOT c = f32[2,20,18,20] convolution(x, w), window={size=3x3 pad=0_0x1_1}, dim_labels=bf01_oi01->bf01)",
       true},
      {"reversal", R"(
  x = f32[2,3,7,6] parameter(0)
  w = f32[4,3,3,2] parameter(1)
  ROOT c = f32[2,4,5,5] convolution(x, w), window={size=3x2 rhs_reversal=1x0}, dim_labels=bf01_oi01->bf01)",
       true},
      {"bf16_in_out", R"(
  x = bf16[2,8,9,10] parameter(0)
  w = bf16[6,8,3,3] parameter(1)
  ROOT c = bf16[2,6,9,10] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01)",
       true},
      {"bf16_in_f32_out_groups", R"(
  x = bf16[1,6,7,9] parameter(0)
  w = bf16[4,3,3,3] parameter(1)
  ROOT c = f32[1,4,7,5] convolution(x, w), window={size=3x3 stride=1x2 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01, feature_group_count=2)",
       true},
      {"f32_in_bf16_out_transposed", R"(
  x = f32[1,5,4,6] parameter(0)
  w = f32[3,5,3,3] parameter(1)
  ROOT c = bf16[1,3,9,12] convolution(x, w), window={size=3x3 pad=2_2x2_1 lhs_dilate=2x2}, dim_labels=bf01_oi01->bf01)",
       true},
      {"features_last", R"(
  x = f32[2,9,8,5] parameter(0)
  w = f32[3,3,5,7] parameter(1)
  ROOT c = f32[2,9,6,7] convolution(x, w), window={size=3x3 pad=1_1x0_0}, dim_labels=b01f_01io->b01f)",
       true},
      {"features_last_strided_bf16", R"(
  x = bf16[3,11,4] parameter(0)
  w = bf16[4,3,4] parameter(1)
  ROOT c = bf16[3,6,3] convolution(x, w), window={size=4 stride=2 pad=1_2}, dim_labels=b0f_0oi->b0f)",
       true},
      {"bf16_amx_tiles", R"(
  x = bf16[2,24,9,8] parameter(0)
  w = bf16[40,24,3,3] parameter(1)
  ROOT c = bf16[2,40,9,8] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01)",
       true},
      {"bf16_amx_features_last", R"(
  x = bf16[2,7,9,20] parameter(0)
  w = bf16[3,2,20,36] parameter(1)
  ROOT c = f32[2,7,8,36] convolution(x, w), window={size=3x2 pad=1_1x0_0}, dim_labels=b01f_01io->b01f)",
       true},
      {"bf16_amx_nchw_in_features_last_out", R"(
  x = bf16[2,20,7,9] parameter(0)
  w = bf16[36,20,3,2] parameter(1)
  ROOT c = bf16[2,7,8,36] convolution(x, w), window={size=3x2 pad=1_1x0_0}, dim_labels=bf01_oi01->b01f)",
       true},
      {"input_features_minor", R"(
  x = f32[2,7,6,4] parameter(0)
  w = f32[5,4,2,3] parameter(1)
  ROOT c = f32[2,5,6,4] convolution(x, w), window={size=2x3 pad=0_0x0_0}, dim_labels=b01f_oi01->bf01)",
       true},
      {"generic_layout", R"(
  x = f32[2,4,6,5] parameter(0)
  w = f32[3,4,3,3] parameter(1)
  ROOT c = f32[3,2,4,3] convolution(x, w), window={size=3x3}, dim_labels=bf01_oi01->fb01)",
       false},
      {"generic_batch_groups", R"(
  x = f32[4,6,5,5] parameter(0)
  w = f32[4,6,2,2] parameter(1)
  ROOT c = f32[2,4,4,4] convolution(x, w), window={size=2x2}, dim_labels=bf01_oi01->bf01, batch_group_count=2)",
       false},
  };
  return kCases;
}

std::string ModuleText(const ConvCase& c) {
  return std::string("HloModule ") + c.name + "\nENTRY main {" + c.hlo + "\n}\n";
}

class ConvGemmTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cache_dir_ = testing::MakeTempDir("mk-conv-gemm-test"); }
  static void TearDownTestSuite() { std::filesystem::remove_all(cache_dir_); }

  // The module's implementation with `params` overriding the initial schedule of every
  // contraction kernel.
  Result<Implementation> Emit(const hlo::Module& m, const Params& params) {
    MK_ASSIGN_OR_RETURN(analysis::FusionPlan plan, analysis::PlanFusion(m));
    return testing::EmitWithContractionParams(plan, params);
  }

  // Runs case `c` under `params` and compares its output with the interpreter's.
  void ExpectAgreement(const ConvCase& c, const Params& params, uint32_t seed) {
    SCOPED_TRACE(c.name);
    auto module = hlo::ParseModule(ModuleText(c), "conv.hlo");
    ASSERT_TRUE(module.ok()) << module.status().ToString();
    auto impl = Emit(**module, params);
    ASSERT_TRUE(impl.ok()) << impl.status().ToString();
    // The path taken: the implicit GEMM, unless the case (or the schedule) rules it out.
    std::string text;
    for (const auto& src : impl->sources) text += src.text;
    const bool want_gemm = c.gemm && !(params.count("gemm_blocked") && params.at("gemm_blocked") == 0);
    EXPECT_EQ(text.find("as an implicit GEMM") != std::string::npos, want_gemm);
    EXPECT_EQ(text.find("generic loop nest") != std::string::npos, !want_gemm);
    runtime::CompileOptions copts;
    copts.cache_dir = cache_dir_;
    runtime::CompilerDriver compiler(copts);
    runtime::SandboxRunner sandbox;
    runtime::CpuExecutor exec(compiler, sandbox);
    auto lib = exec.Build(*impl);
    ASSERT_TRUE(lib.ok()) << lib.status().ToString();
    auto args = testing::RandomArgs(**module, seed);
    std::vector<hlo::Literal> abs_args;
    for (const auto& a : args) {
      hlo::Literal l = a;
      for (int64_t i = 0; i < l.num_elements(); ++i) l.SetDouble(i, std::fabs(l.GetDouble(i)));
      abs_args.push_back(std::move(l));
    }
    auto want = interp::Evaluate(**module, args);
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    auto bound = interp::Evaluate(**module, abs_args);
    ASSERT_TRUE(bound.ok()) << bound.status().ToString();
    auto got = exec.Run(*lib, *impl, args, runtime::ExecuteOptions{.poison_scratch = true});
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_TRUE(got->outcome.ok()) << got->outcome.message;
    ASSERT_EQ(got->outputs.size(), 1u);
    const hlo::Literal& w = *want;
    const hlo::DType t = w.dtype();
    // Reordered f32 sums: 1e-5 of sum |x||w| is well above the worst case at these K; a bf16
    // result may also round to the neighbouring value.
    const double ulp = t == hlo::DType::kBF16 ? 0x1p-7 : 0;
    for (int64_t i = 0; i < w.num_elements(); ++i) {
      const double want_v = w.GetDouble(i), got_v = got->outputs[0].GetDouble(i);
      const double tol = 1e-5 * bound->GetDouble(i) + ulp * std::fabs(want_v);
      ASSERT_LE(std::fabs(got_v - want_v), tol)
          << w.shape().ToString(false) << " element " << i << ": want " << want_v << " got "
          << got_v;
    }
  }

  static std::string cache_dir_;
};
std::string ConvGemmTest::cache_dir_;

// The analytical schedule; tiny blocks on one thread (every tile an edge, odd KC: several K
// slices and bf16 slices ending in a padded pair); odd blocks over two threads sharing the B
// panel; column ranges; the batch; K ranges over three threads; and the generic loop nest.
// Those that shape the register tile
// keep bf16 on it (amx=0); AmxSchedules() covers the tiles.
const std::vector<Params>& Schedules() {
  static const std::vector<Params> kSchedules = {
      {},
      {{"mr", 3}, {"nr", 16}, {"kc", 7}, {"mc", 6}, {"nc", 32}, {"threads", 1}, {"amx", 0}},
      {{"mr", 5}, {"nr", 32}, {"kc", 16}, {"mc", 10}, {"nc", 64}, {"threads", 2},
       {"thread_split", 0}, {"amx", 0}},
      {{"mr", 4}, {"nr", 16}, {"kc", 32}, {"threads", 2}, {"thread_split", 2}, {"amx", 0}},
      {{"kc", 9}, {"threads", 2}, {"thread_split", 1}, {"amx", 0}},
      {{"mr", 4}, {"nr", 16}, {"kc", 7}, {"threads", 3}, {"thread_split", 3}, {"amx", 0}},
      {{"gemm_blocked", 0}},
  };
  return kSchedules;
}

// AMX tiles: the model's blocks; one tile step per K slice and one tile per block on one thread
// (every K slice padded, several slices); row blocks over two threads sharing the B panel; column
// ranges with kc rounded up from 9; the batch; K ranges.
const std::vector<Params>& AmxSchedules() {
  static const std::vector<Params> kSchedules = {
      {{"amx", 1}},
      {{"amx", 1}, {"kc", 32}, {"mc", 32}, {"nc", 32}, {"threads", 1}},
      {{"amx", 1}, {"kc", 64}, {"mc", 64}, {"nc", 64}, {"threads", 2}, {"thread_split", 0}},
      {{"amx", 1}, {"kc", 9}, {"threads", 2}, {"thread_split", 2}},
      {{"amx", 1}, {"threads", 2}, {"thread_split", 1}},
      {{"amx", 1}, {"kc", 32}, {"threads", 2}, {"thread_split", 3}},
  };
  return kSchedules;
}

TEST_F(ConvGemmTest, EveryConvolutionAgreesUnderEverySchedule) {
  for (size_t s = 0; s < Schedules().size(); ++s) {
    SCOPED_TRACE("schedule " + std::to_string(s));
    for (const ConvCase& c : Cases()) ExpectAgreement(c, Schedules()[s], 11 + static_cast<uint32_t>(s));
  }
}

// bf16 convolutions on AMX tiles (amx=1: A = the kernel or the gathered input, packed in rows).
TEST_F(ConvGemmTest, Bf16ConvolutionsAgreeOnAmxTiles) {
  if (!AmxAvailable(target::HostCpu())) GTEST_SKIP() << "this CPU has no AMX (amx_tile, amx_bf16)";
  for (size_t s = 0; s < AmxSchedules().size(); ++s) {
    SCOPED_TRACE("amx schedule " + std::to_string(s));
    for (const ConvCase& c : Cases()) {
      if (!c.gemm || std::string(c.hlo).find("x = bf16") == std::string::npos) continue;
      ExpectAgreement(c, AmxSchedules()[s], 31 + static_cast<uint32_t>(s));
    }
  }
}

TEST(ConvGemmAnalysisTest, GemmViewOfAnNchwConvolution) {
  auto module = hlo::ParseModule(ModuleText(Cases()[5]), "conv.hlo");  // groups
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  const hlo::Instruction* conv = (*module)->entry()->root();
  auto cg = AnalyzeConv(*conv, target::HostCpu());
  ASSERT_TRUE(cg.ok()) << cg.status().ToString();
  EXPECT_EQ(cg->fallback, "");
  EXPECT_TRUE(cg->features_are_m);
  EXPECT_EQ(cg->g.batch, 2 * 3);  // batch x groups
  EXPECT_EQ(cg->g.m, 3);          // output features per group
  EXPECT_EQ(cg->g.n, 6 * 5);      // output positions
  EXPECT_EQ(cg->g.k, 2 * 3 * 3);  // input features per group x window
  EXPECT_TRUE(cg->g.blockable);
}

// Output b,spatial,f: A is the gathered input, which threads must not each pack whole.
TEST(ConvGemmAnalysisTest, FeaturesLastGathersAAndSplitsRowBlocks) {
  auto module = hlo::ParseModule(ModuleText(Cases()[13]), "conv.hlo");  // features_last
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto cg = AnalyzeConv(*(*module)->entry()->root(), target::HostCpu());
  ASSERT_TRUE(cg.ok()) << cg.status().ToString();
  EXPECT_FALSE(cg->features_are_m);
  EXPECT_TRUE(cg->g.gathered_a);
  EXPECT_EQ(cg->g.batch, 1);
  EXPECT_EQ(cg->g.m, 2 * 9 * 6);  // batch x output positions
  EXPECT_EQ(cg->g.n, 7);
  EXPECT_EQ(cg->g.k, 3 * 3 * 5);  // window x input features, the kernel's (HWIO) order
  GemmParams p;
  p.threads = 2;
  p.mr = 4;
  p.nr = 8;
  cg->g.n = 1000;  // many column slivers: a dot would split columns
  EXPECT_EQ(InitialThreadSplit(cg->g, p), ThreadSplit::kBlocks);
  cg->g.gathered_a = false;
  EXPECT_EQ(InitialThreadSplit(cg->g, p), ThreadSplit::kColumns);
}

TEST(ConvGemmAnalysisTest, UnsupportedConvolutionsSayWhy) {
  for (const ConvCase& c : Cases()) {
    if (c.gemm) continue;
    auto module = hlo::ParseModule(ModuleText(c), "conv.hlo");
    ASSERT_TRUE(module.ok()) << module.status().ToString();
    auto cg = AnalyzeConv(*(*module)->entry()->root(), target::HostCpu());
    ASSERT_TRUE(cg.ok()) << cg.status().ToString();
    EXPECT_NE(cg->fallback, "") << c.name;
  }
}

// A convolution kernel on the GEMM path declares the GEMM's parameters around the analytical
// point; one on the generic path only its threads.
TEST(ConvGemmAnalysisTest, SpaceDeclaresTheGemmParameters) {
  CpuEmitter emitter;
  const target::Target target = target::HostCpu();
  for (const ConvCase& c : Cases()) {
    SCOPED_TRACE(c.name);
    auto module = hlo::ParseModule(ModuleText(c), "conv.hlo");
    ASSERT_TRUE(module.ok()) << module.status().ToString();
    auto plan = analysis::PlanFusion(**module);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    int convs = 0;
    for (const auto& k : plan->kernels) {
      if (!k.hero || k.hero->opcode != hlo::Opcode::kConvolution) continue;
      ++convs;
      std::set<std::string> names;
      for (const auto& p : emitter.SpaceFor(k, target).params) {
        names.insert(p.name);
        EXPECT_NE(std::find(p.values.begin(), p.values.end(), p.initial), p.values.end()) << p.name;
      }
      EXPECT_EQ(names.count("vector_bits"), target.Has("avx512f") ? 1u : 0u);
      names.erase("vector_bits");
      std::set<std::string> want =
          c.gemm ? std::set<std::string>{"threads", "gemm_blocked", "mr", "nr", "kc", "mc", "nc",
                                         "unroll_k", "thread_split", "prefetch_c", "prefetch_ab",
                                         "loop_order", "share_a"}
                 : std::set<std::string>{"threads"};
      // AMX tiles: bf16 input and kernel (bf16 pairs), where the machine has them.
      auto cg = AnalyzeConv(*k.hero, target);
      ASSERT_TRUE(cg.ok()) << cg.status().ToString();
      if (c.gemm && cg->g.bf16_pairs && AmxAvailable(target)) want.insert("amx");
      EXPECT_EQ(names, want);
    }
    EXPECT_EQ(convs, 1);
  }
}

}  // namespace
}  // namespace mk::codegen::cpu
