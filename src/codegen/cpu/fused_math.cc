#include "codegen/cpu/fused_math.h"

namespace mk::codegen::cpu {

using hlo::DType;
using hlo::Instruction;
using hlo::Opcode;

namespace {

bool IsF32(const Instruction& v) { return v.shape.is_array() && v.shape.dtype() == DType::kF32; }

// The one operand of `v` when it is a unary `op` on f32, else nullptr.
const Instruction* UnaryOperand(const Instruction& v, Opcode op) {
  if (v.opcode != op || v.operands.size() != 1 || !IsF32(v)) return nullptr;
  return v.operands[0];
}

// x for abs(x) or abs(x - 0).
const Instruction* AbsInput(const Instruction& v) {
  const Instruction* a = UnaryOperand(v, Opcode::kAbs);
  if (!a) return nullptr;
  if (a->opcode == Opcode::kSubtract && a->operands.size() == 2 && IsZeroSplat(*a->operands[1])) {
    return a->operands[0];
  }
  return a;
}

// x when `m` is max(x, 0) or max(0, x).
bool IsReluOf(const Instruction& m, const Instruction* x) {
  if (m.opcode != Opcode::kMaximum || m.operands.size() != 2 || !IsF32(m)) return false;
  return (m.operands[0] == x && IsZeroSplat(*m.operands[1])) ||
         (m.operands[1] == x && IsZeroSplat(*m.operands[0]));
}

}  // namespace

bool IsZeroSplat(const Instruction& v) {
  const Instruction* c = &v;
  while ((c->opcode == Opcode::kBroadcast || c->opcode == Opcode::kReshape ||
          c->opcode == Opcode::kCopy) &&
         c->operands.size() == 1) {
    c = c->operands[0];
  }
  if (c->opcode != Opcode::kConstant || !c->literal || c->literal->num_elements() == 0) {
    return false;
  }
  for (int64_t i = 0; i < c->literal->num_elements(); ++i) {
    if (c->literal->GetDouble(i) != 0.0) return false;  // NaN too
  }
  return true;
}

const Instruction* SoftplusInput(const Instruction& v) {
  if (v.opcode != Opcode::kAdd || v.operands.size() != 2 || !IsF32(v)) return nullptr;
  for (int first = 0; first < 2; ++first) {
    const Instruction& relu = *v.operands[first];
    const Instruction* e = UnaryOperand(*v.operands[1 - first], Opcode::kLog1p);
    const Instruction* n = e ? UnaryOperand(*e, Opcode::kExp) : nullptr;
    const Instruction* a = n ? UnaryOperand(*n, Opcode::kNegate) : nullptr;
    const Instruction* x = a ? AbsInput(*a) : nullptr;
    if (x && IsF32(*x) && IsReluOf(relu, x)) return x;
  }
  return nullptr;
}

}  // namespace mk::codegen::cpu
