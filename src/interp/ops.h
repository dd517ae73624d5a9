// Internal to the interpreter: one function per op group, each in its own file. The evaluator
// (evaluator.cc) resolves operands and dispatches here. `ops` holds the operand values in order.
#pragma once

#include <vector>

#include "hlo/instruction.h"
#include "hlo/literal.h"
#include "hlo/module.h"
#include "interp/interpreter.h"
#include "support/status.h"

namespace mk::interp {

using Operands = std::vector<const hlo::Literal*>;

// Gives op implementations access to called computations (reduce's to_apply, sort's comparator,
// while's body...) and to the options.
class EvalContext {
 public:
  explicit EvalContext(const InterpreterOptions& options) : options_(options) {}
  const InterpreterOptions& options() const { return options_; }
  Result<hlo::Literal> Call(const hlo::Computation& c, const std::vector<hlo::Literal>& args) {
    return EvaluateComputation(c, args, options_);
  }

 private:
  const InterpreterOptions& options_;
};

// A location-carrying error for an instruction: "file:line:col: error: <op> %name: msg".
Status OpError(const hlo::Instruction& inst, const std::string& msg);

// elementwise.cc: unary, binary, compare, select, clamp, convert, bitcast-convert,
// reduce-precision, map.
Result<hlo::Literal> EvalElementwise(const hlo::Instruction& inst, const Operands& ops,
                                     EvalContext& ctx);
// data_movement.cc: constant, iota, reshape, bitcast, broadcast, transpose, copy, slice,
// dynamic-slice, dynamic-update-slice, concatenate, pad, reverse.
Result<hlo::Literal> EvalDataMovement(const hlo::Instruction& inst, const Operands& ops,
                                      EvalContext& ctx);
// contraction.cc: dot, convolution.
Result<hlo::Literal> EvalContraction(const hlo::Instruction& inst, const Operands& ops,
                                     EvalContext& ctx);
// reduction.cc: reduce, reduce-window, select-and-scatter.
Result<hlo::Literal> EvalReduction(const hlo::Instruction& inst, const Operands& ops,
                                   EvalContext& ctx);
// indexing.cc: gather, scatter. sort.cc: sort. rng.cc: rng-bit-generator, rng.
Result<hlo::Literal> EvalIndexing(const hlo::Instruction& inst, const Operands& ops,
                                  EvalContext& ctx);
Result<hlo::Literal> EvalSort(const hlo::Instruction& inst, const Operands& ops, EvalContext& ctx);
Result<hlo::Literal> EvalRng(const hlo::Instruction& inst, const Operands& ops, EvalContext& ctx);
// topk.cc: topk (k largest or smallest along the last dimension, with s32 positions).
Result<hlo::Literal> EvalTopK(const hlo::Instruction& inst, const Operands& ops);

}  // namespace mk::interp
