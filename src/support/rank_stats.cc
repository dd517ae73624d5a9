#include "support/rank_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace mk {

std::vector<double> Ranks(const std::vector<double>& v) {
  std::vector<size_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]]) ++j;
    const double mean_rank = 0.5 * static_cast<double>(i + j) + 1;
    for (size_t k = i; k <= j; ++k) r[idx[k]] = mean_rank;
    i = j + 1;
  }
  return r;
}

double SpearmanRho(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size() || a.size() < 2) return 0;
  const std::vector<double> ra = Ranks(a), rb = Ranks(b);
  const double mean = (static_cast<double>(a.size()) + 1) / 2;
  double cov = 0, va = 0, vb = 0;
  for (size_t i = 0; i < ra.size(); ++i) {
    cov += (ra[i] - mean) * (rb[i] - mean);
    va += (ra[i] - mean) * (ra[i] - mean);
    vb += (rb[i] - mean) * (rb[i] - mean);
  }
  return va > 0 && vb > 0 ? cov / std::sqrt(va * vb) : 0;
}

}  // namespace mk
