#include "analysis/reducer.h"

namespace mk::analysis {

std::optional<hlo::Opcode> BinaryReducerOp(const hlo::Computation& comp) {
  const auto& params = comp.parameters();
  const hlo::Instruction* root = comp.root();
  if (params.size() != 2 || comp.instructions().size() != 3 || !root ||
      root->operands.size() != 2 || !root->shape.is_array() || root->shape.rank() != 0) {
    return std::nullopt;
  }
  for (const hlo::Instruction* p : params) {
    if (!p->shape.is_array() || p->shape.rank() != 0 || p->shape.dtype() != root->shape.dtype()) {
      return std::nullopt;
    }
  }
  const bool uses_both = (root->operands[0] == params[0] && root->operands[1] == params[1]) ||
                         (root->operands[0] == params[1] && root->operands[1] == params[0]);
  if (!uses_both) return std::nullopt;
  return root->opcode;
}

}  // namespace mk::analysis
