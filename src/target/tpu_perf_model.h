// The TPU performance model: what a Pallas kernel would take on a TPU generation, from the shape
// of its grid and blocks (codegen/pallas fills TpuKernelShape for every pallas_call it emits).
// No TPU measured any of it: every figure it gives is "modelled". Its constants are fitted to
// XLA:TPU's own cost_analysis() estimates of plain ops (docs/TPU.md says how, and how well).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/status.h"
#include "target/target.h"

namespace mk::target {

// One pallas_call, as the model sees it.
struct TpuKernelShape {
  std::string name;             // the plan kernel's name
  int64_t grid_steps = 1;       // product of the grid's extents
  // Per grid step: MXU work as the block matmul's dims (0 when the step has no matmul), other
  // arithmetic on the VPU, transcendentals on the EUP.
  int64_t mxu_m = 0, mxu_n = 0, mxu_k = 0;
  bool mxu_bf16 = true;         // operands in bf16 (f32 matmuls run at a fraction of the rate)
  // A second block matmul per step, after the first (flash attention's P.V after its Q.K^T);
  // 0 when the step has one.
  int64_t mxu2_m = 0, mxu2_n = 0, mxu2_k = 0;
  // Grid steps whose compute and DMA are skipped (pl.when on causal blocks wholly above the
  // diagonal, with the K/V index held so no new block is copied): each costs only the per-step
  // overhead.
  int64_t skipped_steps = 0;
  int64_t vpu_flops_per_step = 0;
  int64_t transcendentals_per_step = 0;
  // Vector registers (4 KiB: 8 x 128 words) reduced across the 128 lanes per step, on the XLU
  // (a row reduction over the last axis). A kernel that first adds rows together on the VPU
  // sends only its partial sums here.
  int64_t xlu_vregs_per_step = 0;
  // Bytes moved between HBM and VMEM per step: blocks whose index changes from one step to the
  // next are copied in (or out); a block whose index stays is not copied again.
  int64_t in_bytes_per_step = 0;
  int64_t out_bytes_per_step = 0;
  // Bytes copied once, before the first or after the last step (a block that never changes).
  int64_t prologue_bytes = 0;
  int64_t epilogue_bytes = 0;
  // VMEM the kernel holds at once: every block twice (double buffering) plus scratch.
  int64_t vmem_bytes = 0;
};

// The constants the model is calibrated on (TpuModelConstants::Default() before any fit).
struct TpuModelConstants {
  double mxu_efficiency = 0.9;     // share of the MXU peak a well-shaped block reaches
  double f32_matmul_slowdown = 4;  // f32 operands vs bf16 on the MXU
  double hbm_efficiency = 0.85;    // share of the HBM peak a DMA stream reaches
  double step_overhead_s = 0.35e-6;  // per grid step: pipeline bookkeeping, DMA issue
  double launch_overhead_s = 2e-6;   // per pallas_call
  double xlu_cycles_per_vreg = 8;    // a cross-lane reduction of one vreg (log2(128) = 7 steps)
  static TpuModelConstants Default() { return {}; }
};

struct TpuModelledTime {
  double seconds = 0;       // modelled, never measured
  double compute_s = 0;     // per-step compute summed over the grid
  double memory_s = 0;      // per-step DMA summed over the grid
  bool fits_vmem = true;    // vmem_bytes within the generation's VMEM
  std::string bound;        // "mxu", "vpu", "eup", "xlu", "hbm", "overhead": the largest part
};

// The modelled time of one kernel on `tpu` (a Target of kind kTpu). A kernel whose blocks do
// not fit VMEM is an InvalidArgument naming the bytes, not a slow time.
//   seconds = launch + (prologue + epilogue bytes) / HBM
//           + first step's in-DMA + compute + (active - 1) x max(compute, in + out DMA)
//           + last step's out-DMA + steps x step overhead
// (active = steps - skipped_steps)
// where a step's compute is the busiest of MXU (block dims padded up to multiples of mxu_dim),
// VPU, EUP (rates: target/tpu_spec.h) and XLU (xlu_cycles_per_vreg at the derived clock), and
// DMA runs at hbm_efficiency x the HBM peak.
Result<TpuModelledTime> ModelTpuKernel(const Target& tpu, const TpuKernelShape& kernel,
                                       const TpuModelConstants& c = TpuModelConstants::Default());

nlohmann::json ToJson(const TpuKernelShape& k);
nlohmann::json ToJson(const TpuModelledTime& t);
nlohmann::json ToJson(const TpuModelConstants& c);
// The constants as ToJson writes them (bench/tpu/model-<gen>.json's "constants"); a key left
// out keeps its default, a key that is not a number is an InvalidArgument.
Result<TpuModelConstants> TpuModelConstantsFromJson(const nlohmann::json& j);

}  // namespace mk::target
