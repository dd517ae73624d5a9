// Row programs: a softmax or norm computation makes several passes over its input (a max, a
// sum, the normalized output). When every pass works row by row (each reduce reduces only
// dimensions after the leading "row" dims, and every value that reads a reduce's result reads
// it at its own row), the passes can run one row at a time, each row re-read from cache by the
// later passes. The CPU emitter runs a reduction kernel's passes this way inside one loop over
// the rows (codegen/cpu/vector_rows.h), and a GEMM's group norm inside the tiles that compute
// its rows (segment_epilogue.h).
#pragma once

#include <set>
#include <vector>

#include "hlo/module.h"

namespace mk::analysis {

// Ops computed per element by index arithmetic over their operands' elements (no loop nest of
// their own): elementwise ops, broadcast, reshape, transpose, slice, concatenate, pad, iota ...
bool IsElementalOp(const hlo::Instruction& inst);

// Whether array shape `s` (every leaf of a tuple) starts with dims `rows`.
bool HasRowDims(const hlo::Shape& s, const std::vector<int64_t>& rows);

// The row dims of `instructions` (in topological order; values they read that are not among
// them are inputs, read anywhere) run as a row program, or empty when they cannot be: no
// reduce, a reduce over a leading dim, a value that reads a reduce's result (or a `seeds`
// value) at another row (transpose, slice, pad ... across the rows), an output (`outputs`)
// that is not row-shaped, or a whole-array op other than reduce. `seeds` are values of the
// program read at their own row only, like the reduces' results (a GEMM result's rows read by
// its group norm). When `row_dependent` is set, it receives the values that depend on a reduce
// or a seed.
std::vector<int64_t> RowProgramRows(const std::vector<const hlo::Instruction*>& instructions,
                                    const std::vector<const hlo::Instruction*>& outputs,
                                    const std::set<const hlo::Instruction*>& seeds = {},
                                    std::set<const hlo::Instruction*>* row_dependent = nullptr);

}  // namespace mk::analysis
