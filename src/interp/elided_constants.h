// Constants printed as `{...}` in a dump have no values. The interpreter fills them with
// deterministic pseudo-random values; code generators must see the same values, so the rule
// lives here, usable both by the evaluator and by whoever prepares a module for codegen.
#pragma once

#include "hlo/literal.h"
#include "hlo/module.h"

namespace mk::interp {

// The values the interpreter uses for elided constant `inst`: uniform in [-1, 1) for floats,
// 0/1 for pred, small non-negative integers (safe as indices) otherwise, seeded by the
// instruction's name.
hlo::Literal ElidedConstantValue(const hlo::Instruction& inst);

// Gives every elided array constant of every computation of `module` those values. Returns how
// many constants were filled.
int FillElidedConstants(hlo::Module& module);

}  // namespace mk::interp
