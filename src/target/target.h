// What code is generated for and what it can achieve: the ISA, parallelism, caches and peak
// rates the planner's roofline and the emitters' schedules are derived from.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "support/status.h"

namespace mk::target {

enum class TargetKind { kCpu, kTpu, kCuda };

struct Target {
  std::string name;  // "cpu", "tpu-v5e", "cuda-sm90"
  TargetKind kind = TargetKind::kCpu;
  std::string model;              // "AMD EPYC 9B45", "TPU v5e", "H200"
  // cpu: avx2, fma, avx512f, avx512bw, avx512vl, avx512_bf16, amx_tile, amx_bf16 (Intel tiles)
  std::vector<std::string> isa;
  int cores = 1;                  // cpu cores / TPU TensorCores / GPU SMs
  int vector_bytes = 32;          // widest SIMD register the code may use
  int vector_registers = 16;      // architectural SIMD registers (AVX-512: 32, AVX2: 16)
  int64_t l1_bytes = 32 << 10, l2_bytes = 1 << 20, l3_bytes = 32 << 20;
  // Peak rates used by the roofline bound. `rates_measured` says whether they come from a
  // machine probe (issue: profiler) or from a nominal model (clock x lanes x FMA units).
  double peak_flops_f32 = 0, peak_flops_bf16 = 0, bandwidth_bytes_per_s = 0;
  bool rates_measured = false;
  // cpu: the ISA level code is built for (isa_level.h: "avx2", "avx512", "avx512bf16", "amx"),
  // the host's own unless MAXKERNEL_CPU_ISA lowers it, and the flags that build for it
  // (-march=native at the host's level, else an explicit -march).
  std::string isa_level;
  std::vector<std::string> compile_flags;
  // tpu: on-chip vector memory per TensorCore, the MXU's side (128 or 256), and the libtpu
  // topology that gives compile-only devices for this generation ("v5e:2x2"; empty when libtpu
  // has none, e.g. 7x, which is then modelled from its published figures alone).
  int64_t vmem_bytes = 0;
  int mxu_dim = 0;
  std::string tpu_topology;

  bool Has(const std::string& feature) const;
};

// The machine this process runs on (reads /proc/cpuinfo, the kernel's cache folders and
// sysconf), at the ISA level MAXKERNEL_CPU_ISA asks for, capped at what the host runs (a value
// the variable does not take is ignored here; the CLI refuses it at start-up).
Target HostCpu();

// The bytes of the level-`level` data (L1) or unified (L2, L3) cache that a CPU's sysfs cache
// folder (/sys/devices/system/cpu/cpu0/cache: index*/level, type, size such as "32768K")
// lists; 0 where it lists none. HostCpu prefers it to sysconf, whose figure can be wrong in a
// VM: glibc gave 320 MiB of L3 on a Zen 4 EPYC whose sysfs and lscpu say 32 MiB.
int64_t SysfsCacheBytes(const std::string& cache_dir, int level);

// "cpu" (this machine), or a TPU generation from the spec table (target/tpu_spec.h: "tpu-v4",
// "tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu-7x"). Any other name is an InvalidArgument listing
// every supported name.
Result<Target> TargetByName(const std::string& name);

}  // namespace mk::target
