// Row reductions of a GEMM's result computed on its finished tiles (analysis/
// row_reduce_epilogue.h says which). Each thread keeps a partial value per row and reduce,
// starting at the combiner's identity; every tile row folds its columns into them while the
// tile is in L1 (16 lanes, then pairwise). A softmax sum is kept relative to the thread's
// running maximum of its row: the tile row first raises the maximum to M', then adds its
// exp(a - M') to the sum rescaled by exp(M - M'). After the GEMM one pass over the rows
// combines the threads' partials (the sums rescaled to the final maximum) and the init values
// into the reduces' results, which the kernel's later ops read as usual.
#pragma once

#include <optional>

#include "analysis/row_reduce_epilogue.h"
#include "codegen/cpu/emit_context.h"

namespace mk::codegen::cpu {

// The row-reduction epilogue of a contraction kernel's dot hero, if it has one.
std::optional<analysis::RowReduceEpilogue> KernelRowReduceEpilogue(const analysis::Kernel& kernel);

// Whether `inst` is one of the plan's reduces.
bool IsRowReduce(const analysis::RowReduceEpilogue& plan, const hlo::Instruction* inst);

// The order to emit `kernel`'s instructions in: its own, except that the ops reading the
// reduces' results (log, add ... on the rows) come after the last reduce, where the GEMM has
// run and the results are final. (A row op between two reduces, 's log before the minimum,
// read the results before the GEMM computed them.)
std::vector<const hlo::Instruction*> RowReduceEmissionOrder(
    const analysis::Kernel& kernel, const analysis::RowReduceEpilogue& plan);

// Emits fused reduce `reduce` of f.row_reduce() (active): declares its result and lambda, and
// at the plan's last reduce emits the partials, the deferred GEMM with the tile code, and the
// final combination into every reduce's result.
Status EmitFusedRowReduce(FunctionEmitter& f, const hlo::Instruction& reduce);

}  // namespace mk::codegen::cpu
