// Shape inference for every op and a module verifier: a declared shape that disagrees with the
// inferred one is an error at the instruction's position.
#pragma once

#include <cstdint>

#include "hlo/module.h"
#include "support/status.h"

namespace mk::hlo {

// The shape `inst` must have given its operands and attributes (layouts ignored).
Result<Shape> InferShape(const Instruction& inst);

// How deeply computations may call each other (call, map, while, reduce's to_apply ...): the
// entry is depth 1. The interpreter and the code generators recurse once per level, so a deeper
// module is refused here with a position instead of overflowing the stack later. Real modules
// nest a handful of levels.
inline constexpr int64_t kMaxCallDepth = 200;

// Checks operand counts, attribute consistency, called-computation signatures and shapes of
// every instruction of every computation, and that the module has an ENTRY.
Status VerifyModule(const Module& module);

}  // namespace mk::hlo
