// Convolutions as implicit GEMMs in a pallas_call: emitted, run in TPU interpret mode (race
// detection on two cores) through the Python bridge and compared with the reference
// interpreter; and the convolutions that stay in glue, with their reason.
#include "codegen/pallas/conv_call.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "codegen/pallas/conv_plan.h"
#include "codegen/pallas/pallas_emitter.h"
#include "codegen/pallas/pallas_space.h"
#include "target/target.h"
#include "task/bridge.h"
#include "codegen/pallas/pallas_test_util.h"

namespace mk::codegen::pallas {
namespace {

using testing::EmitAndRun;
using testing::KernelsRunning;
using testing::Parse;

// NHWC, stride 2x1, asymmetric padding, a window dilated along W, then bias + relu. H and W
// differ so that a swapped spatial dim shows; C_in 256 in two K steps, C_out 256 in two N
// blocks, output rows one per step (3 steps).
constexpr char kStridedConvBiasRelu[] = R"(
HloModule conv_bias_relu
ENTRY main {
  img = f32[1,5,7,256] parameter(0)
  fil = f32[3,3,256,256] parameter(1)
  bias = f32[256] parameter(2)
  conv = f32[1,3,5,256] convolution(img, fil), window={size=3x3 stride=2x1 pad=1_1x0_2 rhs_dilate=1x2}, dim_labels=b01f_01io->b01f
  bb = f32[1,3,5,256] broadcast(bias), dimensions={3}
  s = f32[1,3,5,256] add(conv, bb)
  zero = f32[] constant(0)
  zb = f32[1,3,5,256] broadcast(zero), dimensions={}
  ROOT out = f32[1,3,5,256] maximum(s, zb)
}
)";

TEST(PallasConvTest, StridedPaddedConvWithBiasReluMatchesTheInterpreter) {
  MK_SKIP_WITHOUT_JAX();
  auto m = Parse(kStridedConvBiasRelu);
  ASSERT_NE(m, nullptr);
  auto run = EmitAndRun(*m, 21, {{"block_rows", 1}, {"bn", 128}, {"bk", 128}});
  ASSERT_TRUE(run.report.value("ok", false)) << run.report.dump() << "\n" << run.source;
  EXPECT_TRUE(run.report.at("races").empty());
  // 2304-term f32 sums (9 taps x 256 channels) added in another order than the interpreter's.
  EXPECT_TRUE(cpu::testing::OutputsNear(run.outputs, run.expected, 1e-3));
  EXPECT_TRUE(KernelsRunning(run.kernel_map, "glue").empty()) << run.kernel_map.dump(2);
  auto pallas = KernelsRunning(run.kernel_map, "pallas");
  ASSERT_EQ(pallas.size(), 1u) << run.kernel_map.dump(2);
  const auto& k = pallas[0];
  EXPECT_EQ(k.at("family"), "contraction");
  // (batch, output rows, C_out blocks, C_in blocks).
  EXPECT_EQ(k.at("grid"), nlohmann::json({1, 3, 2, 2}));
  EXPECT_EQ(k.at("dimension_semantics"), nlohmann::json({"parallel", "parallel", "parallel", "arbitrary"}));
  bool conv_inside = false, relu_inside = false;
  for (const auto& op : k.at("ops_in_pallas")) {
    conv_inside |= op == "conv";
    relu_inside |= op == "out";
  }
  EXPECT_TRUE(conv_inside && relu_inside) << k.dump(2);
  // Per step: one output row of 5 positions computed as 8 (a whole sublane tile, so the tap's
  // rows merge into the matmul's M without a relayout), 9 taps of a 128-deep slice of C_in.
  const auto& shape = k.at("tpu_kernel_shape");
  EXPECT_EQ(shape.at("mxu").at("m"), 8);
  EXPECT_EQ(shape.at("mxu").at("n"), 128);
  EXPECT_EQ(shape.at("mxu").at("k"), 9 * 128);
  EXPECT_EQ(shape.at("grid_steps"), 12);
  EXPECT_NE(run.source.find("pltpu.VMEM((8, 128), jnp.float32)"), std::string::npos) << run.source;
  // C_in in two blocks of 128: a matmul per tap, nothing merged.
  EXPECT_EQ(run.source.find("jnp.concatenate(["), std::string::npos) << run.source;
}

// Output rows that no multiple of 8 divides (10 rows of an NCHW result, blocks of 8: the last
// block has 2 rows), a width that is no whole sublane tile (10, computed as 16), and an
// epilogue that reads a residual blocked like the output: the last block's residual rows past
// the array are never read into a written row, and its extra output rows are dropped.
constexpr char kRaggedRowsResidual[] = R"(
HloModule conv_ragged_rows
ENTRY main {
  x = f32[2,4,12,12] parameter(0)
  w = f32[8,4,3,3] parameter(1)
  r = f32[2,8,10,10] parameter(2)
  c = f32[2,8,10,10] convolution(x, w), window={size=3x3}, dim_labels=bf01_oi01->bf01
  ROOT out = f32[2,8,10,10] add(c, r)
}
)";

TEST(PallasConvTest, RaggedRowBlocksWithAResidualMatchTheInterpreter) {
  MK_SKIP_WITHOUT_JAX();
  auto m = Parse(kRaggedRowsResidual);
  ASSERT_NE(m, nullptr);
  auto run = EmitAndRun(*m, 31, {{"block_rows", 8}});
  ASSERT_TRUE(run.report.value("ok", false)) << run.report.dump() << "\n" << run.source;
  EXPECT_TRUE(run.report.at("races").empty());
  EXPECT_TRUE(cpu::testing::OutputsNear(run.outputs, run.expected, 1e-4));
  auto pallas = KernelsRunning(run.kernel_map, "pallas");
  ASSERT_EQ(pallas.size(), 1u) << run.kernel_map.dump(2);
  // (batch, ceil(10 / 8) row blocks, C_out, C_in).
  EXPECT_EQ(pallas[0].at("grid"), nlohmann::json({2, 2, 1, 1}));
  // 8 rows x 16 computed positions per step; the image padded to 2 x 8 + 2 rows, 16 + 2 wide.
  EXPECT_EQ(pallas[0].at("tpu_kernel_shape").at("mxu").at("m"), 8 * 16);
  // 4 channels per tap: the 9 taps' rows are concatenated along K (36 deep), one MXU pass of
  // 128, against the kernel passed as [9 x 4, 8].
  EXPECT_EQ(pallas[0].at("tpu_kernel_shape").at("mxu").at("k"), 128);
  EXPECT_NE(run.source.find("jnp.concatenate(["), std::string::npos) << run.source;
  EXPECT_NE(run.source.find("pl.BlockSpec((36, 8)"), std::string::npos) << run.source;
  EXPECT_NE(run.source.find("pl.BlockSpec((None, 1, 18, 18, 4)"), std::string::npos) << run.source;
}

// The suite's bench-scale 3x3 convolution (18k, 22k, 34k: 62x62 output rows, which no multiple
// of 8 divides): the initial schedule blocks the rows so that a step's matmul is at most
// kConvInitialMaxM rows, instead of one whole image per step. That whole-image body took
// libtpu 387 s to compile for v5e (session 27); blocks of 16 rows compile in seconds.
constexpr char kBenchScaleConv[] = R"(
HloModule bench_conv
ENTRY main {
  x = f32[8,64,64,64] parameter(0)
  w = f32[128,64,3,3] parameter(1)
  ROOT c = f32[8,128,62,62] convolution(x, w), window={size=3x3}, dim_labels=bf01_oi01->bf01
}
)";

TEST(PallasConvTest, TheInitialScheduleBlocksABenchScaleImageByRows) {
  auto m = Parse(kBenchScaleConv);
  ASSERT_NE(m, nullptr);
  auto plan = analysis::PlanFusion(*m);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  const auto t = target::TargetByName("tpu-v5e");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const KernelDecision d = Decide(plan->kernels[0], *t);
  ASSERT_TRUE(d.plan.pallas) << d.plan.glue_reason;
  ASSERT_EQ(d.space.params[0].name, "block_rows");
  // Every multiple of 8 below 62, and 62.
  EXPECT_EQ(d.space.params[0].values, (std::vector<int64_t>{8, 16, 24, 32, 40, 48, 56, 62}));
  const int64_t rows = d.space.params[0].initial;
  EXPECT_EQ(rows, 16);  // 16 rows x 64 computed positions = 1024
  auto impl = PallasEmitter().Emit(*plan, testing::CandidateFor(*plan, *t), *t);
  ASSERT_TRUE(impl.ok()) << impl.status().ToString();
  const auto map = nlohmann::json::parse(impl->sources[1].text);
  const auto& k = map.at("kernels").at(0);
  EXPECT_EQ(k.at("runs"), "pallas");
  EXPECT_EQ(k.at("grid"), nlohmann::json({8, 4, 1, 1}));
  EXPECT_LE(k.at("tpu_kernel_shape").at("mxu").at("m").get<int64_t>(), kConvInitialMaxM);
  // The image: 4 blocks x 16 rows + 2, 64 computed positions + 2.
  EXPECT_NE(impl->sources[0].text.find("pl.BlockSpec((None, 1, 66, 66, 64)"), std::string::npos)
      << impl->sources[0].text;
}

// That bench-scale convolution, emitted with its initial schedule, compiled by libtpu for v5e
// and v6e (compile-only). Skipped without libtpu.
TEST(PallasConvTest, TheBenchScaleConvCompilesForV5eAndV6e) {
  MK_SKIP_WITHOUT_JAX();
  auto m = Parse(kBenchScaleConv);
  ASSERT_NE(m, nullptr);
  auto plan = analysis::PlanFusion(*m);
  ASSERT_TRUE(plan.ok());
  for (const std::string gen : {"v5e", "v6e"}) {
    SCOPED_TRACE(gen);
    const auto t = target::TargetByName("tpu-" + gen);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    auto impl = PallasEmitter().Emit(*plan, testing::CandidateFor(*plan, *t), *t);
    ASSERT_TRUE(impl.ok()) << impl.status().ToString();
    const std::string dir = cpu::testing::MakeTempDir("mk-conv-compile");
    std::ofstream(dir + "/kernel.py") << impl->sources[0].text;
    // The whole-image kernel this replaces ran 387 s here; 120 s bounds a regression to it.
    auto r = task::RunBridge({"pallas-compile", "--module", dir + "/kernel.py", "--generation", gen, "--json"}, 120);
    std::filesystem::remove_all(dir);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    if (r->exit_code != 0 && r->err.find("libtpu is not installed") != std::string::npos) {
      GTEST_SKIP() << r->err;
    }
    ASSERT_FALSE(r->timed_out) << "libtpu took over 120 s on the bench-scale convolution";
    ASSERT_EQ(r->exit_code, 0) << r->err;
    const auto j = nlohmann::json::parse(r->out);
    EXPECT_TRUE(j.value("ok", false)) << j.dump() << "\n" << impl->sources[0].text;
  }
}

// NCHW as JAX exports it (bf01_oi01->bf01), the layout of the suite's convolutions.
constexpr char kNchwConv[] = R"(
HloModule conv_nchw
ENTRY main {
  x = f32[2,4,10,12] parameter(0)
  w = f32[8,4,3,3] parameter(1)
  ROOT c = f32[2,8,8,10] convolution(x, w), window={size=3x3}, dim_labels=bf01_oi01->bf01
}
)";

TEST(PallasConvTest, NchwConvMatchesTheInterpreter) {
  MK_SKIP_WITHOUT_JAX();
  auto m = Parse(kNchwConv);
  ASSERT_NE(m, nullptr);
  // Rows of the output land in its second-to-last dim: blocks of 8 rows (the (8,128) rule).
  auto run = EmitAndRun(*m, 23);
  ASSERT_TRUE(run.report.value("ok", false)) << run.report.dump() << "\n" << run.source;
  EXPECT_TRUE(cpu::testing::OutputsNear(run.outputs, run.expected, 1e-4));
  auto pallas = KernelsRunning(run.kernel_map, "pallas");
  ASSERT_EQ(pallas.size(), 1u) << run.kernel_map.dump(2);
  EXPECT_EQ(pallas[0].at("grid"), nlohmann::json({2, 1, 1, 1}));
}

// A transposed 3-D convolution as JAX writes it: the input dilated (lhs_dilate), padded, in
// bf16 with an f32 result. Runs as a plain convolution of the dilated, padded input.
constexpr char kTransposed3d[] = R"(
HloModule conv_transpose_3d
ENTRY main {
  x = bf16[1,4,3,4,4] parameter(0)
  w = bf16[8,4,2,3,3] parameter(1)
  ROOT c = f32[1,8,6,8,8] convolution(x, w), window={size=2x3x3 pad=1_1x1_2x1_2 lhs_dilate=2x2x2}, dim_labels=bf012_oi012->bf012
}
)";

TEST(PallasConvTest, TransposedThreeDimensionalConvMatchesTheInterpreter) {
  MK_SKIP_WITHOUT_JAX();
  auto m = Parse(kTransposed3d);
  ASSERT_NE(m, nullptr);
  auto run = EmitAndRun(*m, 29);
  ASSERT_TRUE(run.report.value("ok", false)) << run.report.dump() << "\n" << run.source;
  EXPECT_TRUE(cpu::testing::OutputsNear(run.outputs, run.expected, 1e-2));
  ASSERT_EQ(KernelsRunning(run.kernel_map, "pallas").size(), 1u) << run.kernel_map.dump(2);
}

// A depthwise convolution (feature_group_count = channels) is not one GEMM: glue, saying why.
TEST(PallasConvTest, AGroupedConvStaysInGlueWithItsReason) {
  auto m = Parse(R"(
HloModule depthwise
ENTRY main {
  x = f32[1,8,8,16] parameter(0)
  w = f32[3,3,1,16] parameter(1)
  ROOT c = f32[1,8,8,16] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=16
}
)");
  ASSERT_NE(m, nullptr);
  auto plan = analysis::PlanFusion(*m);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->kernels.size(), 1u);
  const BlockPlan p = PlanBlocks(plan->kernels[0]);
  EXPECT_FALSE(p.pallas);
  EXPECT_NE(p.glue_reason.find("feature_group_count=16"), std::string::npos) << p.glue_reason;
}

// Every point of a convolution's declared space fits VMEM and keeps C_in/C_out blocks MXU-wide.
TEST(PallasConvTest, TheDeclaredSpaceIsLegal) {
  auto m = Parse(kStridedConvBiasRelu);
  ASSERT_NE(m, nullptr);
  auto plan = analysis::PlanFusion(*m);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  const auto t = testing::TpuV5e(int64_t{4} << 20);  // a small VMEM: the space must shrink
  const KernelDecision d = Decide(plan->kernels[0], t);
  ASSERT_TRUE(d.plan.pallas) << d.plan.glue_reason;
  ASSERT_EQ(d.space.params.size(), 3u);
  std::vector<std::vector<int64_t>> doms;
  for (const auto& p : d.space.params) doms.push_back(p.values);
  for (int64_t rows : doms[0]) {
    for (int64_t bn : doms[1]) {
      for (int64_t bk : doms[2]) {
        EXPECT_EQ(bn % 128, 0);
        EXPECT_EQ(bk % 128, 0);
        EXPECT_LE(VmemBytes(d.plan, {1, rows, bn, bk}), t.vmem_bytes) << rows << " " << bn << " " << bk;
      }
    }
  }
  // bn = bk = 256 needs two 9x256x256 f32 kernel blocks: more than 4 MiB.
  EXPECT_LT(doms[1].back() * doms[2].back(), 256 * 256);
}

}  // namespace
}  // namespace mk::codegen::pallas
