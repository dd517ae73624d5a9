// Convolutions as implicit GEMMs in a pallas_call: emitted, run in TPU interpret mode (race
// detection on two cores) through the Python bridge and compared with the reference
// interpreter; and the convolutions that stay in glue, with their reason.
#include "codegen/pallas/conv_call.h"

#include <gtest/gtest.h>

#include "codegen/pallas/pallas_space.h"
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
  // Per step: one output row of 5 positions, 9 taps of a 128-deep slice of C_in.
  const auto& shape = k.at("tpu_kernel_shape");
  EXPECT_EQ(shape.at("mxu").at("m"), 5);
  EXPECT_EQ(shape.at("mxu").at("n"), 128);
  EXPECT_EQ(shape.at("mxu").at("k"), 9 * 128);
  EXPECT_EQ(shape.at("grid_steps"), 12);
  EXPECT_NE(run.source.find("pltpu.VMEM((5, 128), jnp.float32)"), std::string::npos) << run.source;
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
