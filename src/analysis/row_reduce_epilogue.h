// Row-wise reductions of a GEMM's result computed by the GEMM's own tiles: each finished tile
// folds its rows into per-row running values, so the result is never stored and read back
// (13p: the 8 MiB of f32 logits of a cross-entropy, reduced to a logsumexp and a picked logit
// per row). The fusion planner merges such a reduction kernel into its contraction kernel only
// where this analysis accepts the merged kernel, and the CPU emitter lowers it from the same
// analysis (codegen/cpu/gemm_row_reduce.h), so the two cannot disagree.
//
// What is exact tile by tile (online across the N tiles of a row):
//  - a reduce by add, maximum or minimum of an elementwise function of the GEMM's element (and
//    of values that do not depend on the GEMM: row-broadcast inputs, iota, constants);
//  - the softmax denominator sum(exp(a - max)): a sum of exp(a - B), where B is the row's value
//    of a maximum reduce of the same set broadcast along the row, and a is a value of the first
//    kind. Per tile the running max M' is updated first and the sum rescaled by exp(M - M').
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <vector>

#include "hlo/module.h"

namespace mk::analysis {

struct RowReduce {
  const hlo::Instruction* reduce = nullptr;
  hlo::Opcode combiner = hlo::Opcode::kAdd;  // kAdd, kMaximum or kMinimum (f32)
  // The softmax form: the summand is exp(a - row_max), row_max (a value of the GEMM's dims)
  // being maximum reduce `rescale_by` broadcast along the row.
  const hlo::Instruction* rescale_by = nullptr;
  const hlo::Instruction* row_max = nullptr;
};

struct RowReduceEpilogue {
  const hlo::Instruction* dot = nullptr;
  // The GEMM result's leading dims that index rows (batch and lhs free dims); the reduces
  // reduce exactly the trailing ones (rhs free dims).
  int64_t row_dims = 0;
  std::vector<RowReduce> reduces;            // in `members` order
  std::set<const hlo::Instruction*> ops;     // the elementwise ops between the dot and them
};

// The row-reduction epilogue of dot `dot` among `members` (a kernel's instructions, or the
// planner's candidate merge, in topological order), or nullopt where some op that depends on
// the dot is not computable tile by tile: an op of the dot's dims other than an elementwise one
// feeding the reduces, a reduce of other dims or combiner, a value of the dot's dims that is
// an output (`is_output`) or reads a reduce's result other than as the softmax form. Ops that
// read only the reduces' results (log, add ... on the rows) are not part of the epilogue; they
// run after the GEMM.
std::optional<RowReduceEpilogue> PlanRowReduceEpilogue(
    const hlo::Instruction* dot, const std::vector<const hlo::Instruction*>& members,
    const std::function<bool(const hlo::Instruction*)>& is_output);

}  // namespace mk::analysis
