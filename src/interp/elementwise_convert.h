// Internal to the interpreter: the type-changing elementwise ops (elementwise_convert.cc),
// dispatched from EvalElementwise (elementwise.cc).
#pragma once

#include "interp/ops.h"

namespace mk::interp {

// convert: XLA's rules (float->int truncates and saturates, NaN -> 0; RNE when narrowing).
Result<hlo::Literal> EvalConvert(const hlo::Instruction& inst, const Operands& ops);
// bitcast-convert: reinterprets the bytes; the narrower side has a trailing dim of the ratio.
Result<hlo::Literal> EvalBitcastConvert(const hlo::Instruction& inst, const Operands& ops);
// reduce-precision: rounds to exponent_bits/mantissa_bits (RNE) within the operand's type.
Result<hlo::Literal> EvalReducePrecision(const hlo::Instruction& inst, const Operands& ops);

}  // namespace mk::interp
