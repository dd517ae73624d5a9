#include "modes/search/lower_bound.h"

#include <algorithm>
#include <optional>

namespace mk::modes::search {

namespace {

std::optional<int64_t> Get(const std::map<std::string, int64_t>& fixed, const char* name) {
  auto it = fixed.find(name);
  if (it == fixed.end()) return std::nullopt;
  return it->second;
}

// The share of a core's FMA peak that `k`'s register tile allows, 1 where the node has not fixed
// what decides it: the blocked form (gemm_blocked 1), not the inner-product form or AMX tiles
// (inner 0, amx absent or 0), and the tile (mr, nr, kc).
double RegisterTileShare(const KernelCost& k, const std::map<std::string, int64_t>& fixed) {
  if (k.gemm_depth <= 0 || k.bf16) return 1;
  const auto blocked = Get(fixed, "gemm_blocked"), inner = Get(fixed, "inner"),
             amx = Get(fixed, "amx"), mr = Get(fixed, "mr"), nr = Get(fixed, "nr"),
             kc = Get(fixed, "kc");
  if (blocked != 1 || inner != 0 || (amx && *amx != 0) || !mr || !nr || !kc) return 1;
  if (*mr <= 0 || *nr <= 0 || *kc <= 0) return 1;
  // The shortest K slice: the emitter caps kc at K, and the last slice holds the remainder.
  int64_t slice = std::min(*kc, k.gemm_depth);
  if (const int64_t rest = k.gemm_depth % slice; rest > 0) slice = rest;
  const int64_t chains = LowerBound::RegisterTileChains(*mr, *nr, slice);
  return std::min(1.0, static_cast<double>(chains) / LowerBound::kChainsForPeak);
}

}  // namespace

int64_t LowerBound::RegisterTileChains(int64_t mr, int64_t nr, int64_t slice) {
  const int64_t vectors = (nr + 7) / 8;
  const int64_t accumulators = mr * vectors;
  // One k step: its FMAs, the B vectors' loads and the A broadcasts (the pointer updates and
  // prefetches are left out: fewer instructions per step means more overlap, a looser bound).
  const int64_t per_step = accumulators + vectors + mr;
  const int64_t overlapped = kWindow / std::max<int64_t>(1, slice * per_step);
  return std::min<int64_t>(accumulators * (1 + overlapped), kChainsForPeak);
}

double LowerBound::Kernel(size_t kernel, const std::map<std::string, int64_t>& fixed) const {
  if (kernel >= kernels_.size()) return 0;
  const KernelCost& k = kernels_[kernel];
  double rate = k.bf16 ? std::max(rates_.bf16_flops, rates_.f32_flops) : rates_.f32_flops;
  // The share of all cores' peak the node allows: its threads (all cores while free), each at
  // the share its register tile allows and clocking up to kTurboHeadroom faster than the
  // all-core rate assumes (a core running latency-bound code, or alone, may clock higher).
  double threads = 1;
  if (auto t = fixed.find("threads"); t != fixed.end() && t->second > 0 && rates_.cores > 0) {
    threads = std::min(1.0, static_cast<double>(t->second) / rates_.cores);
  }
  rate *= std::min(1.0, kTurboHeadroom * threads * RegisterTileShare(k, fixed));
  const double compute = rate > 0 ? static_cast<double>(k.flops) / rate : 0;
  const double memory = rates_.bandwidth > 0 ? static_cast<double>(k.bytes) / rates_.bandwidth : 0;
  return std::max(compute, memory);
}

double LowerBound::Of(const std::vector<std::map<std::string, int64_t>>& fixed) const {
  static const std::map<std::string, int64_t> kNone;
  double total = 0;
  for (size_t k = 0; k < kernels_.size(); ++k) total += Kernel(k, k < fixed.size() ? fixed[k] : kNone);
  return total;
}

}  // namespace mk::modes::search
