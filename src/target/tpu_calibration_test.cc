// The calibration of the TPU model: the default blocking of plain ops (worked out by hand), the
// split, the fit recovering known constants, and the committed fit
// (bench/tpu/model-<gen>.json) reproduced from the committed XLA:TPU estimates.
#include "target/tpu_calibration.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "target/tpu_spec.h"

namespace mk::target {
namespace {

TpuCalibrationSample Matmul(const char* dtype, int64_t m, int64_t n, int64_t k) {
  TpuCalibrationSample s;
  s.name = std::string("matmul_") + dtype + "_" + std::to_string(m) + "x" + std::to_string(n) +
           "x" + std::to_string(k);
  s.kind = "matmul";
  s.dtype = dtype;
  s.m = m;
  s.n = n;
  s.k = k;
  return s;
}

TpuCalibrationSample Rows(const char* kind, const char* dtype, int64_t rows, int64_t cols) {
  TpuCalibrationSample s;
  s.name = std::string(kind) + "_" + dtype + "_" + std::to_string(rows) + "x" +
           std::to_string(cols);
  s.kind = kind;
  s.dtype = dtype;
  s.rows = rows;
  s.cols = cols;
  return s;
}

TEST(TpuCalibrationTest, MatmulBlockingCopiesABlockOnlyWhenItsIndexChanges) {
  // 1024^3 bf16: 512 blocks, grid 2x2x2; K innermost, so both operands change every step.
  Result<TpuKernelShape> k = DefaultTpuBlocking(Matmul("bf16", 1024, 1024, 1024));
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_EQ(k->grid_steps, 8);
  EXPECT_EQ(k->mxu_m, 512);
  EXPECT_TRUE(k->mxu_bf16);
  EXPECT_EQ(k->in_bytes_per_step, 1048576);   // (512*512 + 512*512) * 2
  EXPECT_EQ(k->out_bytes_per_step, 262144);   // 4 output blocks of 512 KiB over 8 steps
  EXPECT_EQ(k->vmem_bytes, 4194304);          // 2 x 3 blocks x 512 KiB + 1 MiB f32 acc
  EXPECT_EQ(k->vpu_flops_per_step, 262144);   // accumulate
  // K in one block (grid 2x2x1): A(i) is copied twice, B(j) every step.
  k = DefaultTpuBlocking(Matmul("bf16", 1024, 1024, 512));
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->grid_steps, 4);
  EXPECT_EQ(k->in_bytes_per_step, 786432);  // (2 + 4) * 512 KiB / 4
  EXPECT_EQ(k->vpu_flops_per_step, 0);
  // Smaller than one block: the block is the array, one step, no accumulator.
  k = DefaultTpuBlocking(Matmul("f32", 200, 300, 500));
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->grid_steps, 1);
  EXPECT_FALSE(k->mxu_bf16);
  EXPECT_EQ(k->in_bytes_per_step, 1000000);  // (200*500 + 500*300) * 4
  EXPECT_EQ(k->out_bytes_per_step, 240000);
  EXPECT_EQ(k->vmem_bytes, 2480000);
}

TEST(TpuCalibrationTest, ReduceAndChainBlocking) {
  // 4096 f32 per row = 16 KiB: 256 rows make the 4 MiB block.
  Result<TpuKernelShape> k = DefaultTpuBlocking(Rows("reduce", "f32", 4096, 4096));
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->grid_steps, 16);
  EXPECT_EQ(k->in_bytes_per_step, 4 << 20);
  EXPECT_EQ(k->out_bytes_per_step, 1024);
  EXPECT_EQ(k->xlu_vregs_per_step, 1024);  // 4 MiB of 4 KiB vregs
  k = DefaultTpuBlocking(Rows("reduce", "bf16", 5, 100));  // fewer than 8 rows: all of them
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->grid_steps, 1);
  EXPECT_EQ(k->in_bytes_per_step, 1000);
  TpuCalibrationSample chain = Rows("chain", "f32", 8192, 2048);
  chain.inputs = 2;
  chain.vpu_ops = 3;
  chain.transcendental_ops = 1;
  k = DefaultTpuBlocking(chain);
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->grid_steps, 32);  // 16 x 2 blocks of (512, 1024)
  EXPECT_EQ(k->in_bytes_per_step, 4 << 20);
  EXPECT_EQ(k->out_bytes_per_step, 2 << 20);
  EXPECT_EQ(k->vpu_flops_per_step, 3 * 524288);
  EXPECT_EQ(k->transcendentals_per_step, 524288);
  EXPECT_FALSE(DefaultTpuBlocking(Rows("scan", "f32", 8, 8)).ok());
  EXPECT_FALSE(DefaultTpuBlocking(Matmul("f32", 0, 8, 8)).ok());
}

TEST(TpuCalibrationTest, ParseRefusesSamplesWithoutAnEstimate) {
  nlohmann::json j = {{"samples",
                       {{{"name", "mm"}, {"kind", "matmul"}, {"dtype", "bf16"}, {"m", 8},
                         {"n", 128}, {"k", 128}, {"xla", {{"optimal_seconds", 1e-6}}}}}}};
  Result<std::vector<TpuCalibrationSample>> ok = ParseTpuCalibration(j);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->at(0).xla_seconds, 1e-6);
  j["samples"][0]["xla"]["optimal_seconds"] = 0;
  Result<std::vector<TpuCalibrationSample>> bad = ParseTpuCalibration(j);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'mm'"), std::string::npos);
  EXPECT_FALSE(ParseTpuCalibration(nlohmann::json::array()).ok());
}

TEST(TpuCalibrationTest, SplitAlternatesWithinEachKindInNameOrder) {
  std::vector<TpuCalibrationSample> s = {Matmul("bf16", 3, 1, 1), Rows("reduce", "f32", 2, 2),
                                         Matmul("bf16", 1, 1, 1), Rows("reduce", "f32", 1, 1),
                                         Matmul("bf16", 2, 1, 1)};
  TpuCalibrationSplit split = SplitTpuCalibration(s);
  ASSERT_EQ(split.fit.size(), 3u);
  ASSERT_EQ(split.held_out.size(), 2u);
  EXPECT_EQ(split.fit[0].name, "matmul_bf16_1x1x1");
  EXPECT_EQ(split.fit[1].name, "matmul_bf16_3x1x1");
  EXPECT_EQ(split.fit[2].name, "reduce_f32_1x1");
  EXPECT_EQ(split.held_out[0].name, "matmul_bf16_2x1x1");
  EXPECT_EQ(split.held_out[1].name, "reduce_f32_2x2");
}

// Estimates made by the model itself with known constants: the fit must find them again.
TEST(TpuCalibrationTest, FitRecoversKnownConstants) {
  const Target tpu = TpuTarget(*FindTpuSpec("tpu-v5e"));
  TpuModelConstants truth;
  truth.mxu_efficiency = 0.4;
  truth.hbm_efficiency = 0.45;
  truth.f32_matmul_slowdown = 2;
  truth.step_overhead_s = 1e-7;
  truth.launch_overhead_s = 5e-6;
  truth.xlu_cycles_per_vreg = 30;
  std::vector<TpuCalibrationSample> samples;
  for (int64_t d : {128, 256, 512, 1024, 2048, 4096}) {
    samples.push_back(Matmul("bf16", d, d, d));
    samples.push_back(Matmul("f32", d, d, d));
    samples.push_back(Matmul("bf16", d, 8192 / d * 64, 512));
    samples.push_back(Rows("reduce", "f32", d, 1024));
    TpuCalibrationSample chain = Rows("chain", "bf16", d, 2 * d);
    chain.vpu_ops = 2;
    chain.inputs = 2;
    samples.push_back(chain);
  }
  for (TpuCalibrationSample& s : samples) {
    s.xla_seconds = ModelTpuKernel(tpu, *DefaultTpuBlocking(s), truth)->seconds;
  }
  Result<TpuModelConstants> fit = FitTpuModelConstants(samples, tpu);
  ASSERT_TRUE(fit.ok()) << fit.status().ToString();
  Result<TpuFitQuality> q = EvaluateTpuModel(samples, tpu, *fit);
  ASSERT_TRUE(q.ok());
  EXPECT_LT(q->median_rel_error, 0.01);
  EXPECT_GT(q->spearman_rho, 0.99);
  EXPECT_NEAR(fit->mxu_efficiency, 0.4, 0.02);
  EXPECT_NEAR(fit->hbm_efficiency, 0.45, 0.02);
  EXPECT_NEAR(fit->f32_matmul_slowdown, 2, 0.1);
  EXPECT_NEAR(fit->xlu_cycles_per_vreg, 30, 1.5);
  // The defaults are far from the truth: the fit is what made the error small.
  EXPECT_GT(EvaluateTpuModel(samples, tpu, TpuModelConstants::Default())->median_rel_error, 0.3);
}

nlohmann::json ReadJson(const std::string& relative) {
  std::ifstream in(std::string(MK_SOURCE_DIR) + "/" + relative);
  EXPECT_TRUE(in.good()) << relative;
  return nlohmann::json::parse(in, nullptr, false);
}

// The committed fit (bench/tpu/model-<gen>.json) is what the fit gives on the committed XLA:TPU
// estimates, and on the held-out half it beats the default constants and ranks the shapes as
// XLA:TPU does (rho >= 0.8, the target; docs/TPU.md gives the figures).
TEST(TpuCalibrationTest, CommittedFitReproducesAndHoldsOut) {
  for (const char* gen : {"v5e", "v6e"}) {
    SCOPED_TRACE(gen);
    const nlohmann::json cal = ReadJson(std::string("bench/tpu/calibration-") + gen + ".json");
    const nlohmann::json model = ReadJson(std::string("bench/tpu/model-") + gen + ".json");
    ASSERT_FALSE(cal.is_discarded() || model.is_discarded());
    Result<std::vector<TpuCalibrationSample>> samples = ParseTpuCalibration(cal);
    ASSERT_TRUE(samples.ok()) << samples.status().ToString();
    EXPECT_GE(samples->size(), 60u);
    const Target tpu = TpuTarget(*FindTpuSpec(std::string("tpu-") + gen));
    const TpuCalibrationSplit split = SplitTpuCalibration(*samples);
    Result<TpuModelConstants> fit = FitTpuModelConstants(split.fit, tpu);
    ASSERT_TRUE(fit.ok());
    Result<TpuModelConstants> committed = TpuModelConstantsFromJson(model["constants"]);
    ASSERT_TRUE(committed.ok());
    EXPECT_NEAR(fit->mxu_efficiency, committed->mxu_efficiency, 1e-9);
    EXPECT_NEAR(fit->hbm_efficiency, committed->hbm_efficiency, 1e-9);
    EXPECT_NEAR(fit->f32_matmul_slowdown, committed->f32_matmul_slowdown, 1e-9);
    EXPECT_NEAR(fit->step_overhead_s, committed->step_overhead_s, 1e-15);
    EXPECT_NEAR(fit->launch_overhead_s, committed->launch_overhead_s, 1e-15);
    EXPECT_NEAR(fit->xlu_cycles_per_vreg, committed->xlu_cycles_per_vreg, 1e-9);
    Result<TpuFitQuality> fitted = EvaluateTpuModel(split.held_out, tpu, *fit);
    Result<TpuFitQuality> defaults =
        EvaluateTpuModel(split.held_out, tpu, TpuModelConstants::Default());
    ASSERT_TRUE(fitted.ok() && defaults.ok());
    EXPECT_NEAR(fitted->median_rel_error,
                model["quality"]["fitted"]["held_out"]["median_rel_error"].get<double>(), 1e-9);
    EXPECT_LT(fitted->median_rel_error, defaults->median_rel_error);
    EXPECT_GE(fitted->spearman_rho, 0.8);
    // The compiled-in copy is the committed one.
    const TpuModelConstants built_in = FittedTpuModelConstants(tpu);
    EXPECT_DOUBLE_EQ(built_in.mxu_efficiency, committed->mxu_efficiency);
    EXPECT_DOUBLE_EQ(built_in.f32_matmul_slowdown, committed->f32_matmul_slowdown);
    EXPECT_DOUBLE_EQ(built_in.hbm_efficiency, committed->hbm_efficiency);
    EXPECT_DOUBLE_EQ(built_in.step_overhead_s, committed->step_overhead_s);
    EXPECT_DOUBLE_EQ(built_in.launch_overhead_s, committed->launch_overhead_s);
    EXPECT_DOUBLE_EQ(built_in.xlu_cycles_per_vreg, committed->xlu_cycles_per_vreg);
  }
  // Generations without a fit keep the defaults.
  const TpuModelConstants v4 = FittedTpuModelConstants(TpuTarget(*FindTpuSpec("tpu-v4")));
  EXPECT_EQ(v4.mxu_efficiency, TpuModelConstants::Default().mxu_efficiency);
  EXPECT_EQ(v4.launch_overhead_s, TpuModelConstants::Default().launch_overhead_s);
}

}  // namespace
}  // namespace mk::target
