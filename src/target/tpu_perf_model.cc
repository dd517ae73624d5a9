#include "target/tpu_perf_model.h"

#include <algorithm>
#include <iterator>

#include "target/tpu_spec.h"

namespace mk::target {

namespace {

int64_t RoundUp(int64_t v, int64_t multiple) {
  return multiple <= 0 ? v : (v + multiple - 1) / multiple * multiple;
}

Status CheckInputs(const Target& tpu, const TpuKernelShape& k, const TpuModelConstants& c) {
  if (tpu.kind != TargetKind::kTpu || tpu.mxu_dim <= 0 || tpu.peak_flops_bf16 <= 0 ||
      tpu.bandwidth_bytes_per_s <= 0) {
    return InvalidArgument("the TPU performance model needs a TPU target with an MXU side, a "
                           "bf16 peak and an HBM bandwidth; '" + tpu.name + "' is not one");
  }
  if (k.grid_steps < 1) {
    return InvalidArgument("kernel '" + k.name + "': grid_steps must be at least 1, got " +
                           std::to_string(k.grid_steps));
  }
  if (k.skipped_steps >= k.grid_steps) {
    return InvalidArgument("kernel '" + k.name + "': skipped_steps must leave at least one step");
  }
  for (int64_t v : {k.mxu_m, k.mxu_n, k.mxu_k, k.mxu2_m, k.mxu2_n, k.mxu2_k, k.skipped_steps, k.vpu_flops_per_step, k.transcendentals_per_step,
                    k.xlu_vregs_per_step, k.in_bytes_per_step, k.out_bytes_per_step, k.prologue_bytes,
                    k.epilogue_bytes, k.vmem_bytes}) {
    if (v < 0) return InvalidArgument("kernel '" + k.name + "': a negative size in its shape");
  }
  if (c.mxu_efficiency <= 0 || c.hbm_efficiency <= 0 || c.f32_matmul_slowdown <= 0 ||
      c.step_overhead_s < 0 || c.launch_overhead_s < 0 || c.xlu_cycles_per_vreg < 0) {
    return InvalidArgument("TPU model constants out of range (efficiencies and the f32 "
                           "slowdown must be positive, overheads not negative)");
  }
  return Status();
}

}  // namespace

Result<TpuModelledTime> ModelTpuKernel(const Target& tpu, const TpuKernelShape& k,
                                       const TpuModelConstants& c) {
  if (Status s = CheckInputs(tpu, k, c); !s.ok()) return s;
  if (tpu.vmem_bytes > 0 && k.vmem_bytes > tpu.vmem_bytes) {
    return InvalidArgument("kernel '" + k.name + "' needs " + std::to_string(k.vmem_bytes) +
                           " bytes of VMEM (its blocks double-buffered, plus scratch), over " +
                           tpu.name + "'s budget of " + std::to_string(tpu.vmem_bytes) +
                           " bytes per TensorCore");
  }

  // Compute of one step. The MXU works on mxu_dim x mxu_dim tiles: every dim of the block
  // matmul is padded up to a multiple of the MXU side, and the padding costs as much as real
  // work. The MXU, VPU and EUP issue from the same VLIW bundles in parallel, so a step takes as
  // long as its busiest unit.
  double mxu_s = 0;
  double rate = tpu.peak_flops_bf16 * c.mxu_efficiency;
  if (!k.mxu_bf16) rate /= c.f32_matmul_slowdown;
  auto padded_flops = [&](int64_t m, int64_t n, int64_t kk) {
    if (m <= 0 || n <= 0 || kk <= 0) return 0.0;
    return 2.0 * double(RoundUp(m, tpu.mxu_dim)) * double(RoundUp(n, tpu.mxu_dim)) *
           double(RoundUp(kk, tpu.mxu_dim));
  };
  mxu_s = (padded_flops(k.mxu_m, k.mxu_n, k.mxu_k) + padded_flops(k.mxu2_m, k.mxu2_n, k.mxu2_k)) / rate;
  const double vpu_s = double(k.vpu_flops_per_step) / TpuVpuFlopsPerS(tpu);
  const double eup_s = double(k.transcendentals_per_step) / TpuEupOpsPerS(tpu);
  // Each TensorCore has its own XLU.
  const double xlu_s = double(k.xlu_vregs_per_step) * c.xlu_cycles_per_vreg /
                       (TpuClockHz(tpu) * std::max(tpu.cores, 1));
  const double compute_step = std::max({mxu_s, vpu_s, eup_s, xlu_s});

  const double bw = tpu.bandwidth_bytes_per_s * c.hbm_efficiency;
  const double in_step = double(k.in_bytes_per_step) / bw;
  const double out_step = double(k.out_bytes_per_step) / bw;
  const double dma_step = in_step + out_step;
  const double steps = double(k.grid_steps);
  const double active = double(k.grid_steps - k.skipped_steps);

  // Double buffering: while step i computes, step i+1's blocks come in and step i-1's go out.
  // The first step's inputs and the last step's outputs have nothing to hide behind; between
  // them each step takes the longer of its compute and its DMA.
  const double pipeline =
      in_step + compute_step + (active - 1) * std::max(compute_step, dma_step) + out_step;
  const double once = double(k.prologue_bytes + k.epilogue_bytes) / bw;
  const double overhead = c.launch_overhead_s + steps * c.step_overhead_s;

  TpuModelledTime t;
  t.seconds = overhead + once + pipeline;
  t.compute_s = active * compute_step;
  t.memory_s = active * dma_step + once;
  t.fits_vmem = true;
  // What the time is mostly made of.
  struct Part {
    const char* name;
    double s;
  };
  const Part parts[] = {{"mxu", active * mxu_s},
                        {"vpu", active * vpu_s},
                        {"eup", active * eup_s},
                        {"xlu", active * xlu_s},
                        {"hbm", t.memory_s},
                        {"overhead", overhead}};
  t.bound = std::max_element(std::begin(parts), std::end(parts),
                             [](const Part& a, const Part& b) { return a.s < b.s; })
                ->name;
  return t;
}

nlohmann::json ToJson(const TpuKernelShape& k) {
  return {{"name", k.name},
          {"grid_steps", k.grid_steps},
          {"mxu", {{"m", k.mxu_m}, {"n", k.mxu_n}, {"k", k.mxu_k}, {"bf16", k.mxu_bf16}}},
          {"mxu2", {{"m", k.mxu2_m}, {"n", k.mxu2_n}, {"k", k.mxu2_k}}},
          {"skipped_steps", k.skipped_steps},
          {"vpu_flops_per_step", k.vpu_flops_per_step},
          {"transcendentals_per_step", k.transcendentals_per_step},
          {"xlu_vregs_per_step", k.xlu_vregs_per_step},
          {"in_bytes_per_step", k.in_bytes_per_step},
          {"out_bytes_per_step", k.out_bytes_per_step},
          {"prologue_bytes", k.prologue_bytes},
          {"epilogue_bytes", k.epilogue_bytes},
          {"vmem_bytes", k.vmem_bytes}};
}

nlohmann::json ToJson(const TpuModelledTime& t) {
  return {{"modelled_s", t.seconds}, {"compute_s", t.compute_s}, {"memory_s", t.memory_s},
          {"fits_vmem", t.fits_vmem}, {"bound", t.bound}};
}

nlohmann::json ToJson(const TpuModelConstants& c) {
  return {{"mxu_efficiency", c.mxu_efficiency},
          {"f32_matmul_slowdown", c.f32_matmul_slowdown},
          {"hbm_efficiency", c.hbm_efficiency},
          {"step_overhead_s", c.step_overhead_s},
          {"launch_overhead_s", c.launch_overhead_s},
          {"xlu_cycles_per_vreg", c.xlu_cycles_per_vreg}};
}

Result<TpuModelConstants> TpuModelConstantsFromJson(const nlohmann::json& j) {
  TpuModelConstants c;
  if (!j.is_object()) return InvalidArgument("TPU model constants: expected a JSON object");
  auto read = [&](const char* key, double& into) -> Status {
    if (!j.contains(key)) return Status();
    if (!j[key].is_number()) return InvalidArgument(std::string("TPU model constants: '") + key +
                                                    "' must be a number");
    into = j[key].get<double>();
    return Status();
  };
  for (auto [key, field] : {std::pair{"mxu_efficiency", &c.mxu_efficiency},
                            std::pair{"f32_matmul_slowdown", &c.f32_matmul_slowdown},
                            std::pair{"hbm_efficiency", &c.hbm_efficiency},
                            std::pair{"step_overhead_s", &c.step_overhead_s},
                            std::pair{"launch_overhead_s", &c.launch_overhead_s},
                            std::pair{"xlu_cycles_per_vreg", &c.xlu_cycles_per_vreg}}) {
    if (Status s = read(key, *field); !s.ok()) return s;
  }
  return c;
}

}  // namespace mk::target
