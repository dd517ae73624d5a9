#include "modes/search/lower_bound.h"

#include <algorithm>

namespace mk::modes::search {

double LowerBound::Kernel(size_t kernel, const std::map<std::string, int64_t>& fixed) const {
  if (kernel >= kernels_.size()) return 0;
  const KernelCost& k = kernels_[kernel];
  double rate = k.bf16 ? std::max(rates_.bf16_flops, rates_.f32_flops) : rates_.f32_flops;
  if (auto t = fixed.find("threads"); t != fixed.end() && t->second > 0 && rates_.cores > 0) {
    const double share = kTurboHeadroom * static_cast<double>(t->second) / rates_.cores;
    rate *= std::min(1.0, share);
  }
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
