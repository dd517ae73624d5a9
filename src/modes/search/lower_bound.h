// f(n) of the A* search: a lower bound on the time of every completion of a node, from the
// roofline with what the node has fixed (issue 35, item 3). A kernel can go no faster than its
// FLOPs at the compute rate its fixed parameters allow, nor than its bytes at the memory
// bandwidth; kernels run one after another, so the module's bound is their sum.
//
// What a fixed parameter changes:
// - `threads` caps the compute rate at that share of the cores (with kTurboHeadroom, since one
//   core alone may clock higher than all together);
// - a blocked f32 GEMM's register tile (`mr`, `nr`, `kc`; RegisterTileChains): its micro-kernel
//   (codegen/cpu/gemm_microkernel.cc) keeps mr x nr/8 accumulators, each a chain of dependent
//   FMAs (intrinsics, no -ffast-math: the compiler never splits a chain). A core needs about
//   pipes x latency chains in flight to reach its FMA peak; fewer cap its rate, except that
//   the out-of-order window overlaps the chains of the next micro-kernel call with this one's
//   when a K slice is short.
// Tile fit, padding and unroll do not enter yet: a bound that is wrong is worse than a loose one
// (a node pruned by a wrong bound is never measured). Admissibility is checked against every
// measurement of the committed search tables on the CPU they were measured on
// (lower_bound_test.cc) and, per run, against what the run measures (GraphSearch::Stats).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mk::modes::search {

struct KernelCost {
  int64_t flops = 0;
  int64_t bytes = 0;
  bool bf16 = false;  // its compute is bounded by the bf16 rate
  // A dot the emitter may run as a blocked GEMM on 8-lane (AVX2) register tiles: its depth K.
  // 0: not one (another contraction, an AVX-512 build, or not a GEMM), and the register tile
  // does not enter the bound.
  int64_t gemm_depth = 0;
};

struct MachineRates {
  double f32_flops = 0;   // FLOP/s, all cores
  double bf16_flops = 0;  // FLOP/s, all cores (0: none; the f32 rate bounds bf16 kernels too)
  double bandwidth = 0;   // bytes/s
  int cores = 1;
};

class LowerBound {
 public:
  // One clocked core may run this much faster than its share of the all-core rate.
  static constexpr double kTurboHeadroom = 1.25;
  // Independent FMA chains a core needs for its peak: 2 pipes x 4 cycles of latency on every
  // x86-64 seen here (8); 6 leaves room for a shorter latency or a higher clock than the rates
  // assume. (AVX-512 builds do not use the rule: Zen 4 runs one 512-bit FMA a cycle.)
  static constexpr int kChainsForPeak = 6;
  // Instructions the out-of-order window holds: at least the reorder buffer of every x86-64
  // core seen (Zen 3 256, Zen 4 320, Zen 5 448, Golden Cove 512).
  static constexpr int kWindow = 512;

  // The independent FMA chains a core keeps in flight on a mr x nr register tile (8 lanes)
  // whose K slices are `slice` deep: mr x nr/8 accumulators, times the calls the window
  // overlaps. At most `kChainsForPeak` matters.
  static int64_t RegisterTileChains(int64_t mr, int64_t nr, int64_t slice);

  LowerBound(std::vector<KernelCost> kernels, MachineRates rates)
      : kernels_(std::move(kernels)), rates_(rates) {}

  // Seconds; `fixed` holds the values set so far, by parameter name (a missing one is free).
  double Kernel(size_t kernel, const std::map<std::string, int64_t>& fixed) const;
  // The sum over kernels; `fixed` has one map per kernel.
  double Of(const std::vector<std::map<std::string, int64_t>>& fixed) const;
  size_t kernels() const { return kernels_.size(); }

 private:
  std::vector<KernelCost> kernels_;
  MachineRates rates_;
};

}  // namespace mk::modes::search
