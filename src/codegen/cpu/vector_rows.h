// Internal to the CPU emitter: row fusion of reduction kernels. A softmax or norm kernel makes
// several passes over its input (a max, a sum, the normalized output); emitted one after the
// other, each pass streams the whole input from memory. When its ops form a row program
// (analysis/row_program.h), the passes run inside one loop over the rows: a row is read from
// memory once and re-read from cache by the later passes, and the rows are shared among threads.
#pragma once

#include <set>
#include <vector>

#include "hlo/module.h"

#include "analysis/fusion_plan.h"

namespace mk::codegen::cpu {

// The leading row dimensions the passes of `kernel` can share (e.g. {4, 1024} for a
// reduce over dim 2 of [4,1024,4096]), or empty when the kernel cannot be fused by rows: not a
// reduction kernel, a reduce over a leading dim, a value that reads a reduce result at another
// row (transpose, slice, pad ... across the rows), an output that is not row-shaped, or a
// whole-array op other than reduce.
std::vector<int64_t> RowFusionDims(const analysis::Kernel& kernel);

// The row fusion of a kernel: its row dims (empty: none), and the row-dependent values worth
// computing once per row: a transcendental (exp, log, tanh ...) read by two or more later
// values, as softmax's exp(x - max) is by the sum and by the output; and a costly op (a
// division, a square root, a transcendental) with one value per row, as a norm's
// rsqrt(var + eps), which the loops over the row's elements would otherwise recompute per
// element (the compiler cannot hoist it: it reads the reduce's scratch, which the loop's stores
// might alias). Such a value is stored for the current row in a per-thread row buffer, and its
// readers load it (the same bits).
//
// `order` is the row loop's nesting, outermost first (indices into `rows`). Any order is
// correct, as the rows are independent. Where the program reads an input through a transpose
// that moves the input's minor dim to a row dim, that row dim runs innermost: consecutive rows
// then read the same cache lines (4p's scores [k][q][h], softmax rows (h, q): with h outermost
// each pass over the 32 MiB of scores used 4 of every 64 bytes it brought in).
struct RowFusion {
  std::vector<int64_t> rows;
  std::vector<const hlo::Instruction*> row_cached;
  std::vector<size_t> order;
};
RowFusion PlanRowFusion(const analysis::Kernel& kernel);
// The same for the row program `instructions` with its `outputs` and `seeds`
// (analysis::RowProgramRows), whatever kernel they are part of (a GEMM's group norm).
RowFusion PlanRowFusion(const std::vector<const hlo::Instruction*>& instructions,
                        const std::vector<const hlo::Instruction*>& outputs,
                        const std::set<const hlo::Instruction*>& seeds);

}  // namespace mk::codegen::cpu
