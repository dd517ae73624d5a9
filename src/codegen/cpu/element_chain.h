// Statement-form evaluation of an elementwise value. Value lambdas (emit_context.h) recompute
// an operand at every use: in x · tanh(softplus(x)), applied twice (27k's mish, mish), the first
// mish ran three times per element, and GCC did not merge the copies of the inlined exp/log1p
// polynomials. Where a loop stores one element of an elementwise value, the ops that value is
// computed from at the same index (its "chain") are instead computed once each, in order, into
// locals of the loop body.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "codegen/cpu/emit_context.h"

namespace mk::codegen::cpu {

// Whether `inst` reads each array operand of its own shape at its own index (elementwise
// unary/binary ops, compare, select, clamp, convert, copy, map).
bool ReadsOperandsAtSameIndex(const hlo::Instruction& inst);

// Statements (for one loop body, indices i0..i{rank-1} bound) that compute `root`'s element:
// each op of root's chain (ops defined as elemental lambdas in `f`, of root's dims, reached
// from root through same-index operands) into a local, in emission order. `given` binds values
// at that index to expressions (a GEMM epilogue's accumulator); they end the chain. Sets
// *value to the expression of root's element (root's local, or its lambda call when root has
// no chain).
// With `steps`, each statement is also appended to steps->statements on its own, and the
// local it defines to steps->locals (for an emitter that interleaves copies of the chain).
struct ElementSteps {
  std::vector<std::string> statements, locals;
};
Result<std::string> ElementStatements(FunctionEmitter& f, const hlo::Instruction* root,
                                      const std::map<const hlo::Instruction*, std::string>& given,
                                      std::string* value, ElementSteps* steps = nullptr);

// `text` with every identifier in `names` followed by `suffix` (e7 -> e7_1 where names holds
// e7). Only whole identifiers: e70, v7e7 and the letters of numbers (1e7f) are other tokens,
// and a name after "::" or "." is a member, left alone.
std::string SuffixIdentifiers(const std::string& text, const std::set<std::string>& names,
                              const std::string& suffix);

}  // namespace mk::codegen::cpu
