// What the cost model sees of a candidate (issue 35, item 4): one fixed-length row of floats,
// the same layout for every task, so a model trained on the suite ranks a new task's points.
// Analytic features of the plan (FLOPs, bytes, intensity, its families' shares of the bound),
// the candidate's lower bound, the values of the parameters the CPU emitters declare (the
// weighted mean over the kernels that declare each, by the kernels' weights; NaN = missing), and
// how the heaviest GEMM's blocks fit the caches and its register tile the register file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agents/planner.h"
#include "modes/search/lower_bound.h"
#include "space/schedule.h"

namespace mk::modes::search {

class FeatureMap {
 public:
  explicit FeatureMap(const agents::Plan& plan);
  std::vector<float> Of(const space::Candidate& c) const;
  static const std::vector<std::string>& Names();
  size_t columns() const { return Names().size(); }

 private:
  std::vector<double> weights_;            // per kernel, sums to 1
  std::vector<std::string> families_;      // per kernel
  LowerBound bound_;
  double flops_ = 0, bytes_ = 0, root_bound_ = 0;
  double share_contraction_ = 0, share_reduction_ = 0, share_loop_ = 0;
  int heaviest_gemm_ = -1;
  int cores_ = 1;
  double l2_ = 0, l3_ = 0, vector_registers_ = 16, vector_bytes_ = 32;
};

}  // namespace mk::modes::search
