#include "codegen/cpu/gemm_segment.h"

#include <algorithm>

#include "codegen/cpu/gemm_epilogue.h"

namespace mk::codegen::cpu {

std::optional<analysis::SegmentEpilogue> KernelSegmentEpilogue(const analysis::Kernel& kernel) {
  if (kernel.family != analysis::KernelFamily::kContraction || !kernel.hero) return std::nullopt;
  auto is_output = [&kernel](const hlo::Instruction* i) {
    return std::find(kernel.outputs.begin(), kernel.outputs.end(), i) != kernel.outputs.end();
  };
  auto plan = analysis::PlanSegmentEpilogue(kernel.hero, kernel.instructions, is_output);
  if (!plan) return std::nullopt;
  if (plan->value != plan->dot) {
    const std::optional<GemmEpilogue> e = PlanGemmEpilogue(kernel, plan->value);
    if (!e || e->root != plan->value) return std::nullopt;
  }
  return plan;
}

}  // namespace mk::codegen::cpu
