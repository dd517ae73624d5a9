// The shape of a reduce's to_apply computation that the fast reduction paths rely on.
#pragma once

#include <optional>

#include "hlo/module.h"

namespace mk::analysis {

// When `comp` is one binary op of its two scalar parameters of the result's type (in either
// order), that op: `ROOT r = add(a, b)` -> kAdd. Which ops and types a caller can reorder is
// its own rule (codegen/cpu/reduce_emit.h, row_reduce_epilogue.h).
std::optional<hlo::Opcode> BinaryReducerOp(const hlo::Computation& comp);

}  // namespace mk::analysis
