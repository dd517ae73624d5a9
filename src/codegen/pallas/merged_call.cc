#include "codegen/pallas/merged_call.h"

#include <algorithm>
#include <set>

namespace mk::codegen::pallas {

CallBoundary BoundaryOf(const analysis::FusionPlan& plan, const std::vector<size_t>& kernels, size_t anchor,
                        const std::unordered_map<const hlo::Instruction*, std::vector<const hlo::Instruction*>>& users,
                        const std::unordered_map<const hlo::Instruction*, size_t>& kernel_of) {
  CallBoundary b;
  const hlo::Instruction* root = plan.module && plan.module->entry() ? plan.module->entry()->root() : nullptr;
  std::set<const hlo::Instruction*> inside;
  for (size_t k : kernels) inside.insert(plan.kernels[k].instructions.begin(), plan.kernels[k].instructions.end());
  std::set<const hlo::Instruction*> seen_in;
  for (size_t k : kernels) {
    for (const hlo::Instruction* in : plan.kernels[k].inputs) {
      if (!inside.count(in) && seen_in.insert(in).second) b.inputs.push_back(in);
    }
  }
  for (size_t k : kernels) {
    for (const hlo::Instruction* o : plan.kernels[k].outputs) {
      bool outside = o == root;
      auto us = users.find(o);
      for (const hlo::Instruction* u : us == users.end() ? std::vector<const hlo::Instruction*>{} : us->second) {
        if (inside.count(u)) continue;
        outside = true;
        auto it = kernel_of.find(u);
        if (it != kernel_of.end() && it->second < anchor) b.used_before_anchor.push_back(o);
      }
      if (outside && std::find(b.outputs.begin(), b.outputs.end(), o) == b.outputs.end()) b.outputs.push_back(o);
    }
  }
  return b;
}

}  // namespace mk::codegen::pallas
