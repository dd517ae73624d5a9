// Rank statistics shared by the model checks (the TPU model against XLA:TPU's estimates, the
// search's cost model against measurements).
#pragma once

#include <vector>

namespace mk {

// 1-based ranks of `v` in ascending order; ties get the mean of their ranks.
std::vector<double> Ranks(const std::vector<double>& v);

// Spearman's rank correlation of two equally long series (ties get their mean rank); 0 when
// either is constant, shorter than 2, or the lengths differ.
double SpearmanRho(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace mk
