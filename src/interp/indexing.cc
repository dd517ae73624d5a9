#include "interp/ops.h"

namespace mk::interp {

Result<hlo::Literal> EvalIndexing(const hlo::Instruction& inst, const Operands&, EvalContext&) {
  return Status(ErrorCode::kUnimplemented,
                "interpreter: " + std::string(hlo::OpcodeName(inst.opcode)) + " not implemented yet",
                inst.loc);
}

}  // namespace mk::interp
