// What the matchers that replace several plan kernels with one pallas_call (flash attention,
// the grouped GEMM) share: the call's boundary.
#pragma once

#include <cstddef>
#include <unordered_map>
#include <vector>

#include "analysis/fusion_plan.h"
#include "hlo/module.h"

namespace mk::codegen::pallas {

struct CallBoundary {
  std::vector<const hlo::Instruction*> inputs;   // values the kernels read from outside them
  std::vector<const hlo::Instruction*> outputs;  // their values used outside them (or the root)
  // An output read by a kernel that runs before `anchor` (once per such use): the call, which
  // runs at the anchor, would come too late for it.
  std::vector<const hlo::Instruction*> used_before_anchor;
};

// The boundary of `kernels` (plan indices, in order) replaced by one call at kernel `anchor`.
CallBoundary BoundaryOf(const analysis::FusionPlan& plan, const std::vector<size_t>& kernels, size_t anchor,
                        const std::unordered_map<const hlo::Instruction*, std::vector<const hlo::Instruction*>>& users,
                        const std::unordered_map<const hlo::Instruction*, size_t>& kernel_of);

}  // namespace mk::codegen::pallas
