// The TPU generations maxkernel targets, as published: one row per generation, the source of
// every figure cited beside it (and in docs/TPU.md). bench/tpu/specs.json holds the same table
// as data; target_test checks the two agree and python/tests/test_tpu_spec.py checks the data
// against what the jax/libtpu wheel says (pltpu.get_tpu_info_for_chip).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "support/status.h"
#include "target/target.h"

namespace mk::target {

struct TpuSpec {
  std::string_view name;       // target name: "tpu-v5e"
  std::string_view chip;       // pltpu.ChipVersion value: "v5e"
  std::string_view model;      // "TPU v5e"
  int tensorcores_per_chip = 1;
  double peak_bf16_flops = 0;  // per chip, published
  double hbm_bytes_per_s = 0;  // per chip, published
  int64_t vmem_bytes = 0;      // per TensorCore
  int mxu_dim = 128;           // the MXU's side (128x128 or 256x256 systolic array)
  int mxus_per_core = 4;       // as jax's tpu_info.py lists them
  std::string_view topology;   // libtpu topology with compile-only devices ("" if none)
  std::string_view source;     // where the peak and bandwidth figures are published
};

// Every generation, oldest first.
std::span<const TpuSpec> TpuSpecs();

// The row named `name` ("tpu-v5e"), or nullptr.
const TpuSpec* FindTpuSpec(std::string_view name);

// "tpu-v4, tpu-v5e, ..." for error messages.
std::string TpuTargetNames();

// The Target of a generation: kind kTpu, rates per chip (a Pallas grid's "parallel" dimensions
// split over a megacore chip's two TensorCores), VMEM per TensorCore.
Target TpuTarget(const TpuSpec& spec);

// Rates no one publishes, derived from a TPU Target under stated assumptions (docs/TPU.md):
// - the clock is the bf16 peak over (TensorCores x 4 MXUs x mxu_dim^2 x 2 flops). This gives
//   the known clocks of v4 (1.05 GHz), v5e (1.5 GHz) and v5p (1.75 GHz); for v6e and 7x it
//   assumes 4 MXUs per TensorCore, where jax's table lists 2 (which would mean 3.5 and 4.4 GHz).
// - the VPU retires one (8,128) f32 vector op per cycle on each of 4 VALU slots;
// - the EUP (exp, log, rsqrt, tanh, ...) one (8,128) vector per cycle.
double TpuClockHz(const Target& tpu);
double TpuVpuFlopsPerS(const Target& tpu);
double TpuEupOpsPerS(const Target& tpu);

}  // namespace mk::target
