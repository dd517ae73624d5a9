// Shape inference for every op and a module verifier: a declared shape that disagrees with the
// inferred one is an error at the instruction's position.
#pragma once

#include "hlo/module.h"
#include "support/status.h"

namespace mk::hlo {

// The shape `inst` must have given its operands and attributes (layouts ignored).
Result<Shape> InferShape(const Instruction& inst);

// Checks operand counts, attribute consistency, called-computation signatures and shapes of
// every instruction of every computation, and that the module has an ENTRY.
Status VerifyModule(const Module& module);

}  // namespace mk::hlo
