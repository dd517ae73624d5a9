#include "analysis/row_program.h"

#include <algorithm>
#include <map>

namespace mk::analysis {

using hlo::Instruction;
using hlo::Opcode;

namespace {

// How a value depends on the program's reduce results (and seeds): not at all (computable
// anywhere), only at its own row, or in a way a row program cannot follow.
enum class RowDep { kFree, kRow, kBad };

const hlo::Shape* FirstLeaf(const hlo::Shape& s) {
  if (s.is_array()) return &s;
  if (s.is_tuple() && !s.tuple_shapes().empty() && s.tuple_shapes()[0].is_array()) {
    return &s.tuple_shapes()[0];
  }
  return nullptr;
}

// Whether elemental op `inst` (some operand row-dependent) maps its leading row indices to the
// same operand indices.
bool KeepsRows(const Instruction& inst, const std::vector<int64_t>& rows) {
  const size_t r = rows.size();
  for (const Instruction* op : inst.operands) {
    if (op->shape.is_array() && op->shape.rank() > 0 && !HasRowDims(op->shape, rows)) return false;
  }
  switch (inst.opcode) {
    case Opcode::kBroadcast:
      if (inst.dimensions.size() < r) return false;
      for (size_t k = 0; k < r; ++k) {
        if (inst.dimensions[k] != static_cast<int64_t>(k)) return false;
      }
      return true;
    case Opcode::kTranspose:
      for (size_t k = 0; k < r; ++k) {
        if (k >= inst.dimensions.size() || inst.dimensions[k] != static_cast<int64_t>(k)) {
          return false;
        }
      }
      return true;
    case Opcode::kSlice:
      for (size_t k = 0; k < r; ++k) {
        if (k >= inst.slice.size() || inst.slice[k].start != 0 || inst.slice[k].stride != 1 ||
            inst.slice[k].limit != rows[k]) {
          return false;
        }
      }
      return true;
    case Opcode::kReshape:  // equal leading dims and element counts: the same leading indices
    case Opcode::kBitcast:
    case Opcode::kBitcastConvert:  // adds or drops a minor dim only
    case Opcode::kGetTupleElement:
    case Opcode::kCopy:
    case Opcode::kOptimizationBarrier:
    case Opcode::kConvert:
    case Opcode::kCompare:
    case Opcode::kSelect:
    case Opcode::kClamp:
    case Opcode::kMap:
    case Opcode::kReducePrecision:
      return true;
    default:
      return hlo::IsElementwise(inst.opcode);
  }
}

}  // namespace

bool IsElementalOp(const Instruction& inst) {
  if (!inst.shape.is_array() && inst.opcode != Opcode::kGetTupleElement) return false;
  switch (inst.opcode) {
    case Opcode::kBroadcast: case Opcode::kReshape: case Opcode::kBitcast:
    case Opcode::kTranspose: case Opcode::kSlice: case Opcode::kConcatenate: case Opcode::kPad:
    case Opcode::kIota: case Opcode::kReverse: case Opcode::kCopy: case Opcode::kDynamicSlice:
    case Opcode::kGetTupleElement: case Opcode::kOptimizationBarrier: case Opcode::kMap:
    case Opcode::kBitcastConvert:
      return true;
    default:
      return hlo::IsElementwise(inst.opcode);
  }
}

bool HasRowDims(const hlo::Shape& s, const std::vector<int64_t>& rows) {
  if (s.is_tuple()) {
    for (const auto& leaf : s.tuple_shapes()) {
      if (!HasRowDims(leaf, rows)) return false;
    }
    return !s.tuple_shapes().empty();
  }
  if (!s.is_array() || s.rank() < static_cast<int64_t>(rows.size())) return false;
  for (size_t d = 0; d < rows.size(); ++d) {
    if (s.dim(static_cast<int64_t>(d)) != rows[d]) return false;
  }
  return true;
}

std::vector<int64_t> RowProgramRows(const std::vector<const Instruction*>& instructions,
                                    const std::vector<const Instruction*>& outputs,
                                    const std::set<const Instruction*>& seeds,
                                    std::set<const Instruction*>* row_dependent) {
  // The row dims: those before the first reduced dim of every reduce.
  int64_t r = -1;
  std::vector<int64_t> rows;
  for (const Instruction* inst : instructions) {
    if (inst->opcode != Opcode::kReduce || inst->operands.empty()) continue;
    const hlo::Shape* in = FirstLeaf(inst->operands[0]->shape);
    if (!in || inst->dimensions.empty()) return {};
    const int64_t first = *std::min_element(inst->dimensions.begin(), inst->dimensions.end());
    if (r < 0 || first < r) {
      r = first;
      rows.assign(in->dims().begin(), in->dims().begin() + first);
    }
  }
  if (r <= 0) return {};
  std::map<const Instruction*, RowDep> dep;
  auto dep_of = [&](const Instruction* op) {
    auto it = dep.find(op);
    return it == dep.end() ? RowDep::kFree : it->second;  // program inputs
  };
  for (const Instruction* inst : instructions) {
    bool row = false;
    for (const Instruction* op : inst->operands) {
      const RowDep d = dep_of(op);
      if (d == RowDep::kBad) return {};
      row = row || d == RowDep::kRow;
    }
    RowDep d = RowDep::kBad;
    if (seeds.count(inst)) {
      if (HasRowDims(inst->shape, rows)) d = RowDep::kRow;
    } else if (inst->opcode == Opcode::kReduce) {
      // Computed per row: reduces only dims after the rows, of row-shaped inputs.
      const size_t n = inst->operands.size() / 2;
      bool ok = HasRowDims(inst->shape, rows);
      for (int64_t dim : inst->dimensions) ok = ok && dim >= r;
      for (size_t k = 0; k < n; ++k) {
        ok = ok && HasRowDims(inst->operands[k]->shape, rows) &&
             dep_of(inst->operands[n + k]) == RowDep::kFree;
      }
      if (ok) d = RowDep::kRow;
    } else if (IsElementalOp(*inst)) {
      if (!row) d = RowDep::kFree;
      else if (HasRowDims(inst->shape, rows) && KeepsRows(*inst, rows)) d = RowDep::kRow;
    }
    if (d == RowDep::kBad) return {};
    dep[inst] = d;
  }
  // Every output is stored inside the row loop, so it must be row-shaped.
  for (const Instruction* out : outputs) {
    if (!HasRowDims(out->shape, rows)) return {};
  }
  if (row_dependent) {
    for (const auto& [inst, d] : dep) {
      if (d == RowDep::kRow) row_dependent->insert(inst);
    }
  }
  return rows;
}

}  // namespace mk::analysis
