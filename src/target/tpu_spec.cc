#include "target/tpu_spec.h"

#include <algorithm>
#include <array>

namespace mk::target {

namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// Peak bf16 FLOP/s and HBM bytes/s per chip: Google Cloud's TPU documentation, one page per
// generation (the `source` column). VMEM per TensorCore, MXUs per TensorCore and the MXU side:
// jax's jax/_src/pallas/mosaic/tpu_info.py (jax 0.10.2), which is also what the wheel's
// pltpu.get_tpu_info_for_chip returns. Where the wheel's chip total differs from the published
// figure (v4 HBM 1.23 TB/s, v5p HBM 2.46 TB/s) the published one is kept; bench/tpu/specs.json
// records both.
constexpr std::array<TpuSpec, 5> kSpecs = {{
    {"tpu-v4", "v4", "TPU v4", 2, 275e12, 1.2e12, 16 * kMiB, 128, 4, "v4:2x2x1",
     "https://cloud.google.com/tpu/docs/v4"},
    {"tpu-v5e", "v5e", "TPU v5e", 1, 197e12, 0.82e12, 128 * kMiB, 128, 4, "v5e:2x2",
     "https://cloud.google.com/tpu/docs/v5e"},
    {"tpu-v5p", "v5p", "TPU v5p", 2, 459e12, 2.76e12, 64 * kMiB, 128, 4, "v5p:2x2x1",
     "https://cloud.google.com/tpu/docs/v5p"},
    {"tpu-v6e", "v6e", "TPU v6e (Trillium)", 1, 918e12, 1.64e12, 128 * kMiB, 256, 2, "v6e:2x2",
     "https://cloud.google.com/tpu/docs/v6e"},
    // libtpu 0.0.42 names this generation "tpu7x" in topologies ("7x:..." is refused).
    {"tpu-7x", "7x", "TPU7x (Ironwood)", 2, 2307e12, 7.4e12, 64 * kMiB, 256, 2, "tpu7x:2x2x1",
     "https://cloud.google.com/tpu/docs/tpu7x"},
}};

// The assumptions TpuClockHz and the VPU/EUP rates state in the header.
constexpr int kAssumedMxusPerCore = 4;
constexpr double kVregElements = 8 * 128;
constexpr int kValuSlots = 4;

}  // namespace

std::span<const TpuSpec> TpuSpecs() { return kSpecs; }

const TpuSpec* FindTpuSpec(std::string_view name) {
  for (const TpuSpec& s : kSpecs) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::string TpuTargetNames() {
  std::string names;
  for (const TpuSpec& s : kSpecs) {
    if (!names.empty()) names += ", ";
    names += s.name;
  }
  return names;
}

Target TpuTarget(const TpuSpec& spec) {
  Target t;
  t.name = std::string(spec.name);
  t.kind = TargetKind::kTpu;
  t.model = std::string(spec.model);
  t.cores = spec.tensorcores_per_chip;
  // A vreg is (8 sublanes, 128 lanes) of 32-bit words.
  t.vector_bytes = 8 * 128 * 4;
  t.vector_registers = 64;
  t.peak_flops_bf16 = spec.peak_bf16_flops;
  // No f32 peak is published. An f32 matmul at Precision.HIGHEST is six bf16 MXU passes; at
  // DEFAULT precision XLA:TPU runs it as one bf16 pass (the model's f32_matmul_slowdown is
  // fitted to what XLA:TPU estimates).
  t.peak_flops_f32 = spec.peak_bf16_flops / 6;
  t.bandwidth_bytes_per_s = spec.hbm_bytes_per_s;
  t.rates_measured = false;
  t.vmem_bytes = spec.vmem_bytes;
  t.mxu_dim = spec.mxu_dim;
  t.tpu_topology = std::string(spec.topology);
  // No CPU caches: VMEM is the level the blocks live in.
  t.l1_bytes = t.l2_bytes = t.l3_bytes = 0;
  return t;
}

double TpuClockHz(const Target& tpu) {
  const double per_cycle = double(std::max(tpu.cores, 1)) * kAssumedMxusPerCore *
                           double(tpu.mxu_dim) * tpu.mxu_dim * 2;
  return per_cycle > 0 ? tpu.peak_flops_bf16 / per_cycle : 0;
}

double TpuVpuFlopsPerS(const Target& tpu) {
  return TpuClockHz(tpu) * std::max(tpu.cores, 1) * kVregElements * kValuSlots;
}

double TpuEupOpsPerS(const Target& tpu) {
  return TpuClockHz(tpu) * std::max(tpu.cores, 1) * kVregElements;
}

}  // namespace mk::target
