#pragma once
// Compositions of elementwise ops that mk_cpu_rt.h computes as one cheaper function. The
// emitter asks here before writing an op's expression; the composition's inner ops keep their
// own expressions (a later reader may need them), and the compiler drops the ones nothing reads.
#include "hlo/instruction.h"

namespace mk::codegen::cpu {

// x when `v` is softplus(x) = log(1 + e^x) in the overflow-free form jax.nn.softplus (logaddexp
// with 0) lowers to: add(max(x, 0), log1p(exp(neg(abs(x))))), either operand order of the add
// and of the max, abs(x - 0) accepted for abs(x), the 0 any constant zero seen through
// broadcasts and reshapes. All f32; nullptr for anything else.
const hlo::Instruction* SoftplusInput(const hlo::Instruction& v);

// A constant whose every element is +0 or -0, seen through broadcasts, reshapes and copies (a
// constant printed as `{...}` has no values and is not one).
bool IsZeroSplat(const hlo::Instruction& v);

}  // namespace mk::codegen::cpu
