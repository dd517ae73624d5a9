// f(n) of the A* search: a lower bound on the time of every completion of a node, from the
// roofline with what the node has fixed (issue 35, item 3). A kernel can go no faster than its
// FLOPs at the compute rate its fixed parameters allow, nor than its bytes at the memory
// bandwidth; kernels run one after another, so the module's bound is their sum.
//
// What a fixed parameter changes today: `threads` caps the compute rate at that share of the
// cores (with kTurboHeadroom, since one core alone may clock higher than all together). Tile
// sizes, vector width and unroll do not enter yet: a bound that counted them would need the
// emitter's edge handling and intrinsics to be modelled, and a bound that is wrong is worse
// than a loose one (a node pruned by a wrong bound is never measured).
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
