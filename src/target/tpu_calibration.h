// Calibrating the TPU performance model against XLA:TPU's own estimates of plain ops.
//
// bench/tpu/calibration-<gen>.json (written by python3 -m maxkernel_jax.tpu_calibration) holds
// matmuls, row reductions and elementwise chains, each with XLA:TPU's cost_analysis()
// optimal_seconds from a compile-only compile. Each sample becomes a TpuKernelShape through a
// default blocking (DefaultTpuBlocking), the samples are split in two halves deterministically,
// the model's constants are fitted on one half and judged on the other. No TPU measured any of
// it: both sides of the comparison are estimates (docs/TPU.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/status.h"
#include "target/target.h"
#include "target/tpu_perf_model.h"

namespace mk::target {

struct TpuCalibrationSample {
  std::string name;
  std::string kind;   // "matmul" (m, n, k), "reduce" (rows, cols: over the last axis),
                      // "chain" (rows, cols: elementwise ops)
  std::string dtype;  // "bf16" or "f32" (inputs and output)
  int64_t m = 0, n = 0, k = 0;
  int64_t rows = 0, cols = 0;
  int64_t vpu_ops = 0, transcendental_ops = 0;  // chain: per element
  int64_t inputs = 1;                           // chain: arrays read
  double xla_seconds = 0;                       // XLA:TPU's optimal_seconds (an estimate)
};

// The samples of a calibration file's JSON ("samples": [...]); a malformed one is an
// InvalidArgument naming it.
Result<std::vector<TpuCalibrationSample>> ParseTpuCalibration(const nlohmann::json& j);

// The kernel a Pallas implementation of a plain op would be, with the default blocking:
// - matmul: 512 x 512 x 512 blocks clipped to the shape, grid (M/bm, N/bn, K/bk) with K
//   innermost; an operand block is copied again only when its index changes; an f32
//   accumulator in VMEM when K takes more than one block;
// - reduce: blocks of br full rows, br the largest power of two in 8..512 whose block fits
//   4 MiB (all rows when there are fewer than 8); every vreg of a block reduced across lanes;
// - chain: (512, 1024) blocks clipped to the shape, one block per input and one out.
Result<TpuKernelShape> DefaultTpuBlocking(const TpuCalibrationSample& s);

// Fit and held-out halves: within each kind, in name order, alternate samples go to each half.
struct TpuCalibrationSplit {
  std::vector<TpuCalibrationSample> fit, held_out;
};
TpuCalibrationSplit SplitTpuCalibration(std::vector<TpuCalibrationSample> samples);

struct TpuFitQuality {
  int samples = 0;
  double median_rel_error = 0;  // median of |modelled - xla| / xla
  double spearman_rho = 0;      // rank correlation of modelled and xla times
};

// How well the model with constants `c` reproduces XLA:TPU's estimates of `samples`.
Result<TpuFitQuality> EvaluateTpuModel(const std::vector<TpuCalibrationSample>& samples,
                                       const Target& tpu, const TpuModelConstants& c);

// The constants minimizing the absolute log error over `samples`: a deterministic coordinate
// search in log space from `start`, each constant kept in a plausible range (efficiencies in
// [0.05, 1], the f32 slowdown in [1, 16], overheads in [1 ns, 100 us], XLU cycles per vreg in
// [1, 128]). The loss is the sum of absolute log errors (robust to the few shapes XLA:TPU
// estimates by rules the model does not share).
Result<TpuModelConstants> FitTpuModelConstants(
    const std::vector<TpuCalibrationSample>& samples, const Target& tpu,
    const TpuModelConstants& start = TpuModelConstants::Default());

// The constants fitted for `tpu`'s generation (bench/tpu/model-<gen>.json, compiled in so the
// model needs no file at run time; target_test checks the two agree), or Default() for a
// generation without a fit (v4, v5p, 7x). A fit leaves launch_overhead_s at its floor: XLA:TPU's
// estimates of single fusions carry no launch cost (docs/TPU.md).
TpuModelConstants FittedTpuModelConstants(const Target& tpu);


}  // namespace mk::target
