// The TPU performance model against times worked out by hand from the v5e / v6e spec figures
// (v5e: 197e12 bf16 FLOP/s, 820e9 B/s, MXU 128, VPU 197e12 / 131072 x 4096 = 6.15625e12 flop/s;
// v6e: 918e12 FLOP/s, MXU 256).
#include "target/tpu_perf_model.h"

#include <gtest/gtest.h>

#include "target/tpu_spec.h"

namespace mk::target {
namespace {

Target Tpu(const char* name) { return TpuTarget(*FindTpuSpec(name)); }

// Peak rates, no overheads: the arithmetic of the pipeline alone.
TpuModelConstants Ideal() {
  TpuModelConstants c;
  c.mxu_efficiency = 1;
  c.hbm_efficiency = 1;
  c.f32_matmul_slowdown = 4;
  c.step_overhead_s = 0;
  c.launch_overhead_s = 0;
  return c;
}

TpuKernelShape Matmul512(int64_t steps) {
  TpuKernelShape k;
  k.name = "mm";
  k.grid_steps = steps;
  k.mxu_m = k.mxu_n = k.mxu_k = 512;
  k.in_bytes_per_step = 2 * 512 * 512 * 2;  // an A and a B block, bf16: 1 MiB
  k.vmem_bytes = 2 * k.in_bytes_per_step + 512 * 512 * 4;
  return k;
}

TEST(TpuPerfModelTest, MxuBoundMatmulHidesAllButTheFirstFetch) {
  // Step compute 2*512^3/197e12 = 1.362616e-6 s > step DMA 1048576/820e9 = 1.278751e-6 s:
  // 1.278751e-6 (first fetch) + 8 x 1.362616e-6 = 12.179681e-6 s.
  Result<TpuModelledTime> t = ModelTpuKernel(Tpu("tpu-v5e"), Matmul512(8), Ideal());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_NEAR(t->seconds, 12.179681e-6, 1e-11);
  EXPECT_NEAR(t->compute_s, 8 * 1.362616e-6, 1e-11);
  EXPECT_NEAR(t->memory_s, 8 * 1.278751e-6, 1e-11);
  EXPECT_EQ(t->bound, "mxu");
  EXPECT_TRUE(t->fits_vmem);
}

TEST(TpuPerfModelTest, ASecondMatmulAddsMxuTimeAndSkippedStepsCostOnlyOverhead) {
  // Flash attention's steps: Q.K^T then P.V, both 512^3 (2 x 1.362616e-6 s of MXU per step).
  TpuKernelShape k = Matmul512(8);
  k.mxu2_m = k.mxu2_n = k.mxu2_k = 512;
  TpuModelConstants c = Ideal();
  c.step_overhead_s = 1e-7;
  Result<TpuModelledTime> dense = ModelTpuKernel(Tpu("tpu-v5e"), k, c);
  ASSERT_TRUE(dense.ok()) << dense.status().ToString();
  // 1.278751e-6 + 8 x 2.725232e-6 + 8 x 1e-7.
  EXPECT_NEAR(dense->seconds, 1.278751e-6 + 8 * 2.725232e-6 + 8e-7, 1e-11);
  // Causal skipping: 3 of the 8 steps do nothing but their overhead.
  k.skipped_steps = 3;
  Result<TpuModelledTime> skipped = ModelTpuKernel(Tpu("tpu-v5e"), k, c);
  ASSERT_TRUE(skipped.ok()) << skipped.status().ToString();
  EXPECT_NEAR(skipped->seconds, 1.278751e-6 + 5 * 2.725232e-6 + 8e-7, 1e-11);
  EXPECT_NEAR(skipped->compute_s, 5 * 2.725232e-6, 1e-11);
  k.skipped_steps = 8;
  EXPECT_FALSE(ModelTpuKernel(Tpu("tpu-v5e"), k, c).ok());
}

TEST(TpuPerfModelTest, HbmBoundKernelPaysEachStepsDma) {
  TpuKernelShape k;
  k.name = "ew";
  k.grid_steps = 4;
  k.vpu_flops_per_step = 512 * 1024;    // 8.51637e-8 s on the VPU
  k.in_bytes_per_step = 2 << 20;        // 2.557502e-6 s
  k.out_bytes_per_step = 1 << 20;       // 1.278751e-6 s
  // 2.557502e-6 + 8.51637e-8 + 3 x 3.836253e-6 + 1.278751e-6 = 15.430178e-6 s.
  Result<TpuModelledTime> t = ModelTpuKernel(Tpu("tpu-v5e"), k, Ideal());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_NEAR(t->seconds, 15.430178e-6, 1e-11);
  EXPECT_EQ(t->bound, "hbm");
  // A quarter of the HBM efficiency: every DMA term four times as long.
  TpuModelConstants slow = Ideal();
  slow.hbm_efficiency = 0.25;
  Result<TpuModelledTime> s = ModelTpuKernel(Tpu("tpu-v5e"), k, slow);
  ASSERT_TRUE(s.ok());
  EXPECT_NEAR(s->seconds, 4 * 15.430178e-6 - 3 * 8.51637e-8, 1e-10);
}

TEST(TpuPerfModelTest, MxuPaddingWasteCounts) {
  auto mxu_time = [](const char* tpu, int64_t m, int64_t n, int64_t kk, bool bf16 = true) {
    TpuKernelShape k;
    k.name = "block";
    k.mxu_m = m;
    k.mxu_n = n;
    k.mxu_k = kk;
    k.mxu_bf16 = bf16;
    return ModelTpuKernel(Tpu(tpu), k, Ideal())->seconds;
  };
  // 128^3 on v5e: 2*128^3/197e12 = 2.12916e-8 s; 100^3 pads to the same tiles.
  EXPECT_NEAR(mxu_time("tpu-v5e", 128, 128, 128), 2.12916e-8, 1e-12);
  EXPECT_DOUBLE_EQ(mxu_time("tpu-v5e", 100, 100, 100), mxu_time("tpu-v5e", 128, 128, 128));
  EXPECT_DOUBLE_EQ(mxu_time("tpu-v5e", 8, 128, 128), mxu_time("tpu-v5e", 128, 128, 128));
  // One more row or column costs a whole second tile.
  EXPECT_DOUBLE_EQ(mxu_time("tpu-v5e", 129, 128, 128), 2 * mxu_time("tpu-v5e", 128, 128, 128));
  EXPECT_DOUBLE_EQ(mxu_time("tpu-v5e", 128, 128, 129), 2 * mxu_time("tpu-v5e", 128, 128, 128));
  // v6e's 256-wide MXU: a 128^3 block is padded to 256^3, 2*256^3/918e12 = 3.65517e-8 s.
  EXPECT_NEAR(mxu_time("tpu-v6e", 128, 128, 128), 3.65517e-8, 1e-12);
  // f32 operands: f32_matmul_slowdown (4) times as long.
  EXPECT_DOUBLE_EQ(mxu_time("tpu-v5e", 256, 256, 256, false),
                   4 * mxu_time("tpu-v5e", 256, 256, 256));
}

TEST(TpuPerfModelTest, CrossLaneReductionsRunOnTheXlu) {
  TpuKernelShape k;
  k.name = "rowsum";
  k.xlu_vregs_per_step = 1000;
  TpuModelConstants c = Ideal();
  c.xlu_cycles_per_vreg = 8;
  // v5e's derived clock is 197e12 / 131072 = 1.502991e9 Hz: 8000 cycles = 5.322721e-6 s.
  Result<TpuModelledTime> t = ModelTpuKernel(Tpu("tpu-v5e"), k, c);
  ASSERT_TRUE(t.ok());
  EXPECT_NEAR(t->seconds, 5.322721e-6, 1e-11);
  EXPECT_EQ(t->bound, "xlu");
  // v5p: two TensorCores, each with its XLU, at 459e12 / 262144 = 1.750946e9 Hz.
  t = ModelTpuKernel(Tpu("tpu-v5p"), k, c);
  ASSERT_TRUE(t.ok());
  EXPECT_NEAR(t->seconds, 8000 / 1.750946e9 / 2, 1e-11);
}

TEST(TpuPerfModelTest, OverheadsAndOneOffCopies) {
  TpuKernelShape empty;
  empty.name = "empty";
  empty.grid_steps = 10;
  // Default constants: 2e-6 launch + 10 x 0.35e-6 per step.
  Result<TpuModelledTime> t = ModelTpuKernel(Tpu("tpu-v5e"), empty);
  ASSERT_TRUE(t.ok());
  EXPECT_NEAR(t->seconds, 5.5e-6, 1e-15);
  EXPECT_EQ(t->bound, "overhead");
  // A block copied once before and once after: 410e6 + 410e6 bytes at 820e9 B/s = 1 ms.
  TpuKernelShape once = empty;
  once.grid_steps = 1;
  once.prologue_bytes = 410'000'000;
  once.epilogue_bytes = 410'000'000;
  Result<TpuModelledTime> o = ModelTpuKernel(Tpu("tpu-v5e"), once, Ideal());
  ASSERT_TRUE(o.ok());
  EXPECT_NEAR(o->seconds, 1e-3, 1e-12);
  EXPECT_EQ(o->bound, "hbm");
}

TEST(TpuPerfModelTest, VmemOverBudgetIsAnErrorNamingBytesAndBudget) {
  TpuKernelShape k = Matmul512(1);
  k.vmem_bytes = (int64_t{128} << 20) + 1;
  Result<TpuModelledTime> t = ModelTpuKernel(Tpu("tpu-v5e"), k);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("134217729"), std::string::npos) << t.status().message();
  EXPECT_NE(t.status().message().find("134217728"), std::string::npos) << t.status().message();
  EXPECT_NE(t.status().message().find("'mm'"), std::string::npos);
  k.vmem_bytes = int64_t{128} << 20;  // exactly the budget fits
  EXPECT_TRUE(ModelTpuKernel(Tpu("tpu-v5e"), k).ok());
  // v4 has only 16 MiB per TensorCore.
  k.vmem_bytes = (16 << 20) + 1;
  EXPECT_FALSE(ModelTpuKernel(Tpu("tpu-v4"), k).ok());
}

TEST(TpuPerfModelTest, RefusesNonTpuTargetsAndEmptyGrids) {
  Target cpu;
  cpu.name = "cpu";
  EXPECT_FALSE(ModelTpuKernel(cpu, Matmul512(1)).ok());
  TpuKernelShape k = Matmul512(0);
  Result<TpuModelledTime> t = ModelTpuKernel(Tpu("tpu-v5e"), k);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("grid_steps"), std::string::npos);
  k = Matmul512(1);
  k.in_bytes_per_step = -1;
  EXPECT_FALSE(ModelTpuKernel(Tpu("tpu-v5e"), k).ok());
}

TEST(TpuPerfModelTest, ConstantsRoundTripThroughJson) {
  TpuModelConstants c;
  c.mxu_efficiency = 0.7;
  c.f32_matmul_slowdown = 2.5;
  c.hbm_efficiency = 0.6;
  c.step_overhead_s = 1e-7;
  c.launch_overhead_s = 3e-6;
  c.xlu_cycles_per_vreg = 33;
  Result<TpuModelConstants> back = TpuModelConstantsFromJson(ToJson(c));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->mxu_efficiency, 0.7);
  EXPECT_EQ(back->f32_matmul_slowdown, 2.5);
  EXPECT_EQ(back->hbm_efficiency, 0.6);
  EXPECT_EQ(back->step_overhead_s, 1e-7);
  EXPECT_EQ(back->launch_overhead_s, 3e-6);
  EXPECT_EQ(back->xlu_cycles_per_vreg, 33);
  EXPECT_FALSE(TpuModelConstantsFromJson({{"mxu_efficiency", "fast"}}).ok());
  EXPECT_EQ(ToJson(*ModelTpuKernel(Tpu("tpu-v5e"), Matmul512(2)))["bound"], "mxu");
}

}  // namespace
}  // namespace mk::target
