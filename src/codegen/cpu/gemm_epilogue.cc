#include "codegen/cpu/gemm_epilogue.h"

#include <algorithm>
#include <map>
#include <vector>

#include "codegen/cpu/element_chain.h"

namespace mk::codegen::cpu {

using hlo::Instruction;

std::optional<GemmEpilogue> PlanGemmEpilogue(const analysis::Kernel& kernel) {
  return PlanGemmEpilogue(kernel, nullptr);
}

std::optional<GemmEpilogue> PlanGemmEpilogue(const analysis::Kernel& kernel,
                                             const Instruction* stored) {
  const Instruction* dot = kernel.hero;
  if (!dot || !dot->shape.is_array() ||
      (dot->opcode != hlo::Opcode::kDot && dot->opcode != hlo::Opcode::kConvolution)) {
    return std::nullopt;
  }
  auto is_output = [&kernel, stored](const Instruction* i) {
    return i == stored ||
           std::find(kernel.outputs.begin(), kernel.outputs.end(), i) != kernel.outputs.end();
  };
  if (is_output(dot)) return std::nullopt;
  std::map<const Instruction*, std::vector<const Instruction*>> users;
  for (const Instruction* inst : kernel.instructions) {
    for (const Instruction* op : inst->operands) users[op].push_back(inst);
  }
  // Everything that reads the dot, transitively up to the first kernel output.
  GemmEpilogue e;
  e.dot = dot;
  std::vector<const Instruction*> work{dot};
  while (!work.empty()) {
    const Instruction* v = work.back();
    work.pop_back();
    if (v != dot && is_output(v)) {
      if (e.root && e.root != v) return std::nullopt;  // two outputs
      e.root = v;
      continue;  // ops after the root read its stored value
    }
    for (const Instruction* u : users[v]) {
      if (!ReadsOperandsAtSameIndex(*u) || !u->shape.is_array() ||
          u->shape.dims() != dot->shape.dims()) {
        return std::nullopt;
      }
      if (e.ops.insert(u).second) work.push_back(u);
    }
  }
  if (!e.root) return std::nullopt;
  // Every op must lead to the root: a dead end would be a value the epilogue never computes.
  for (const Instruction* op : e.ops) {
    if (op != e.root && users[op].empty()) return std::nullopt;
  }
  e.in_place = e.root->shape.dtype() == dot->shape.dtype();
  return e;
}

bool ReadsUnroundedResult(const GemmEpilogue& e) {
  return !e.in_place && e.dot->shape.dtype() == hlo::DType::kF32;
}

}  // namespace mk::codegen::cpu
