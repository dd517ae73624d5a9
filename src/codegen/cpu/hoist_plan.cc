#include "codegen/cpu/hoist_plan.h"

#include <algorithm>
#include <map>
#include <set>

#include "codegen/cpu/emit_context.h"

namespace mk::codegen::cpu {

using hlo::Instruction;
using hlo::Opcode;

bool IsTranscendentalOp(Opcode op) {
  switch (op) {
    case Opcode::kExp: case Opcode::kExpm1: case Opcode::kLog: case Opcode::kLog1p:
    case Opcode::kTanh: case Opcode::kLogistic: case Opcode::kErf: case Opcode::kPower:
    case Opcode::kSin: case Opcode::kCos: case Opcode::kTan: case Opcode::kAtan2:
    case Opcode::kCbrt:
      return true;
    default:
      return false;
  }
}

bool IsCostlyOp(Opcode op) {
  switch (op) {
    case Opcode::kDivide: case Opcode::kSqrt: case Opcode::kRsqrt:
      return true;
    default:
      return IsTranscendentalOp(op);
  }
}

std::vector<const Instruction*> PlanHoisted(const analysis::Kernel& kernel) {
  const std::set<const Instruction*> in_kernel(kernel.instructions.begin(),
                                               kernel.instructions.end());
  // Small values computed from the kernel's inputs alone, and whether each holds a costly op.
  std::set<const Instruction*> small;
  std::map<const Instruction*, bool> costly;
  for (const Instruction* inst : kernel.instructions) {
    if (!IsElemental(*inst) || !inst->shape.is_array() ||
        inst->shape.num_elements() > kMaxHoistedElements) {
      continue;
    }
    bool ok = true, cost = IsCostlyOp(inst->opcode);
    for (const Instruction* op : inst->operands) {
      if (!in_kernel.count(op)) continue;  // an input: fixed for the call
      if (op->opcode == Opcode::kConstant) continue;
      if (!small.count(op)) {
        ok = false;
        break;
      }
      cost = cost || costly[op];
    }
    if (!ok) continue;
    small.insert(inst);
    costly[inst] = cost;
  }
  // Those read by a value outside the set kMinSpread times larger (a broadcast over the large
  // array), whose loops would evaluate them that many times per element.
  std::set<const Instruction*> spread;
  for (const Instruction* user : kernel.instructions) {
    if (small.count(user) || !user->shape.is_array()) continue;
    for (const Instruction* op : user->operands) {
      const int64_t n = std::max<int64_t>(1, op->shape.num_elements());
      if (small.count(op) && costly[op] && user->shape.num_elements() >= kMinSpread * n) {
        spread.insert(op);
      }
    }
  }
  std::vector<const Instruction*> hoisted;
  for (const Instruction* inst : kernel.instructions) {
    if (spread.count(inst)) hoisted.push_back(inst);
  }
  return hoisted;
}

}  // namespace mk::codegen::cpu
