#include "interp/elided_constants.h"

namespace mk::interp {

namespace {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

hlo::Literal ElidedConstantValue(const hlo::Instruction& inst) {
  hlo::Literal lit(inst.shape);
  if (!inst.shape.is_array()) return lit;
  uint64_t seed = 1469598103934665603ull;
  for (char c : inst.name) seed = (seed ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  for (int64_t i = 0; i < lit.num_elements(); ++i) {
    uint64_t bits = SplitMix64(seed + static_cast<uint64_t>(i));
    if (hlo::IsFloat(lit.dtype())) {
      lit.SetDouble(i, static_cast<double>(bits >> 11) * 0x1.0p-52 - 1.0);
    } else if (lit.dtype() == hlo::DType::kPred) {
      lit.SetInt64(i, static_cast<int64_t>(bits & 1));
    } else {
      lit.SetInt64(i, static_cast<int64_t>(bits % 4));
    }
  }
  return lit;
}

int FillElidedConstants(hlo::Module& module) {
  int filled = 0;
  for (const auto& comp : module.computations()) {
    for (const auto& inst : comp->instructions()) {
      if (inst->opcode != hlo::Opcode::kConstant || inst->literal.has_value() ||
          !inst->shape.is_array() || !hlo::IsEvaluable(inst->shape.dtype())) {
        continue;
      }
      inst->literal = ElidedConstantValue(*inst);
      ++filled;
    }
  }
  return filled;
}

}  // namespace mk::interp
