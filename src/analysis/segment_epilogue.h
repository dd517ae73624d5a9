// A GEMM's group norm computed in the GEMM's tiles. 29k's GroupNorm reshapes the GEMM's
// [M, N] result x to [M, G, S] and makes three passes over each group's S columns: its mean,
// its variance about that mean, and the normalized output. As separate kernels, each pass reads
// x from memory. When a group's columns lie in one register tile (S divides NR), the tile
// holds the whole group once its last K slice is done: the passes run there, on the tile in L1,
// one group at a time. The mean is final before the variance pass reads it, so the result is
// the reference's two-pass formula, not an online approximation of it.
//
// The fusion planner merges the group norm's kernel into the GEMM's where this analysis
// accepts the merged kernel, and the CPU emitter lowers it from the same analysis.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <vector>

#include "hlo/module.h"

namespace mk::analysis {

struct SegmentEpilogue {
  const hlo::Instruction* dot = nullptr;
  // The value the group passes read: the end of the same-index elementwise chain on the dot's
  // tile (the GEMM epilogue's root: 29k's swish + bias), or the dot itself.
  const hlo::Instruction* value = nullptr;
  int64_t row_dims = 0;        // value's leading dims over the GEMM's rows (batch × M)
  std::vector<int64_t> rows;   // the group passes' row dims: one row per (GEMM row, group)
  int64_t groups = 1;          // G: rows per GEMM row
  int64_t segment = 0;         // S: the GEMM columns of one row of the passes (N = G × S)
  std::set<const hlo::Instruction*> tile_ops;    // the chain from the dot to value
  std::vector<const hlo::Instruction*> program;  // the group passes' ops, in members order
  std::vector<const hlo::Instruction*> outputs;  // the program's kernel outputs
  std::set<const hlo::Instruction*> seeds;       // the program's readers of value
};

// The group-norm epilogue of dot `dot` among `members` (a kernel's instructions, or the
// planner's candidate merge, in topological order), or nullopt: the dot's readers are a
// same-index elementwise chain of its dims ending in one value; every other op that depends on
// the dot forms a row program (row_program.h) with at least one reduce, whose rows are the
// GEMM's rows times G, and it reads that value only through a reshape, bitcast, copy or
// elementwise op whose leading dims are those rows, so each of its rows reads S consecutive
// columns of one GEMM row.
std::optional<SegmentEpilogue> PlanSegmentEpilogue(
    const hlo::Instruction* dot, const std::vector<const hlo::Instruction*>& members,
    const std::function<bool(const hlo::Instruction*)>& is_output);

}  // namespace mk::analysis
