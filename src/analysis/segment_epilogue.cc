#include "analysis/segment_epilogue.h"

#include <algorithm>

#include "analysis/row_program.h"

namespace mk::analysis {

using hlo::Instruction;
using hlo::Opcode;

namespace {

// Reads its array operands at its own index, as a tile epilogue op must.
bool SameIndexOp(const Instruction& i) {
  switch (i.opcode) {
    case Opcode::kConvert: case Opcode::kCopy: case Opcode::kCompare: case Opcode::kSelect:
    case Opcode::kClamp:
      return true;
    default:
      return hlo::IsElementwise(i.opcode);
  }
}

// Whether program op `u` reads `value` at the same linear index (so row r of the program reads
// value's elements r·S .. r·S + S - 1).
bool ReadsLinearly(const Instruction& u, const Instruction* value) {
  switch (u.opcode) {
    case Opcode::kReshape: case Opcode::kBitcast: case Opcode::kCopy:
      return true;
    default:
      if (!SameIndexOp(u)) return false;
      for (const Instruction* op : u.operands) {
        if (op->shape.is_array() && op->shape.rank() > 0 &&
            op->shape.dims() != value->shape.dims()) {
          return false;
        }
      }
      return true;
  }
}

}  // namespace

std::optional<SegmentEpilogue> PlanSegmentEpilogue(
    const Instruction* dot, const std::vector<const Instruction*>& members,
    const std::function<bool(const Instruction*)>& is_output) {
  if (!dot || dot->opcode != Opcode::kDot || !dot->dot_dims || dot->operands.size() != 2 ||
      !dot->shape.is_array() || is_output(dot)) {
    return std::nullopt;
  }
  const std::vector<int64_t>& dims = dot->shape.dims();
  const int64_t rank = static_cast<int64_t>(dims.size());
  const int64_t n_dims = dot->operands[1]->shape.rank() -
                         static_cast<int64_t>(dot->dot_dims->rhs_batch.size() +
                                              dot->dot_dims->rhs_contracting.size());
  SegmentEpilogue e;
  e.dot = dot;
  e.row_dims = rank - n_dims;
  if (n_dims < 1 || e.row_dims < 1) return std::nullopt;

  // The tile chain: same-index elementwise ops of the dot's dims whose operands that depend on
  // the dot are the dot or chain ops. Every other op that depends on the dot is the program's.
  const std::set<const Instruction*> in_set(members.begin(), members.end());
  std::set<const Instruction*> depends{dot};
  for (const Instruction* i : members) {
    if (i == dot) continue;
    bool on_dot = false, chain = SameIndexOp(*i) && i->shape.is_array() && i->shape.dims() == dims;
    for (const Instruction* op : i->operands) {
      if (!in_set.count(op) || !depends.count(op)) continue;
      on_dot = true;
      chain = chain && (op == dot || e.tile_ops.count(op));
    }
    if (!on_dot) continue;
    depends.insert(i);
    if (chain) e.tile_ops.insert(i);
    else e.program.push_back(i);
  }
  if (e.program.empty()) return std::nullopt;
  // The one value of the chain the program reads (or the kernel outputs): the chain's end.
  for (const Instruction* i : e.program) {
    for (const Instruction* op : i->operands) {
      if (op != dot && !e.tile_ops.count(op)) continue;
      if (e.value && e.value != op) return std::nullopt;
      e.value = op;
      if (!ReadsLinearly(*i, op)) return std::nullopt;
      e.seeds.insert(i);
    }
  }
  if (!e.value) return std::nullopt;
  for (const Instruction* op : e.tile_ops) {
    if (op == e.value) continue;
    if (is_output(op)) return std::nullopt;
  }
  for (const Instruction* i : members) {
    for (const Instruction* op : i->operands) {
      // The chain goes on past value (it would be read twice) or the dot is read directly
      // beside the chain.
      if (op == e.value && e.tile_ops.count(i)) return std::nullopt;
    }
  }
  for (const Instruction* i : e.program) {
    if (is_output(i)) e.outputs.push_back(i);
  }
  size_t reduces = 0;
  for (const Instruction* i : e.program) reduces += i->opcode == Opcode::kReduce;
  if (reduces == 0) return std::nullopt;
  e.rows = RowProgramRows(e.program, e.outputs, e.seeds);
  if (e.rows.empty()) return std::nullopt;
  // Row r of the program is S consecutive elements of value: (GEMM row r / G, group r % G).
  int64_t gemm_rows = 1, n = 1, program_rows = 1;
  for (int64_t d = 0; d < rank; ++d) (d < e.row_dims ? gemm_rows : n) *= dims[static_cast<size_t>(d)];
  for (int64_t r : e.rows) program_rows *= r;
  if (gemm_rows <= 0 || program_rows % gemm_rows != 0) return std::nullopt;
  e.groups = program_rows / gemm_rows;
  if (e.groups <= 0 || n % e.groups != 0) return std::nullopt;
  e.segment = n / e.groups;
  return e;
}

}  // namespace mk::analysis
