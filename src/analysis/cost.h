// FLOP and byte counts of HLO instructions: the numerators of every roofline in maxkernel.
// Multiply-adds count 2 FLOPs, with every batch dimension; an elementwise op counts 1 FLOP per
// output element (transcendentals too); data movement counts 0 FLOPs.
#pragma once

#include <cstdint>

#include "hlo/instruction.h"

namespace mk::analysis {

int64_t InstructionFlops(const hlo::Instruction& inst);
// Bytes of an array or tuple shape (tuples: the sum of their elements).
int64_t ShapeBytes(const hlo::Shape& shape);

}  // namespace mk::analysis
