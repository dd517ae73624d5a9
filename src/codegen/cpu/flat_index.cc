#include "codegen/cpu/flat_index.h"

#include <map>
#include <tuple>
#include <vector>

#include "hlo/opcode.h"

namespace mk::codegen::cpu {

using hlo::Instruction;
using hlo::Opcode;

namespace {

using Memo = std::map<std::tuple<const Instruction*, int64_t, int64_t>, bool>;

// Every dim of `dims` strictly between a and b has size 1.
bool UnitBetween(const std::vector<int64_t>& dims, int64_t a, int64_t b) {
  for (int64_t d = a + 1; d < b; ++d) {
    if (dims[static_cast<size_t>(d)] != 1) return false;
  }
  return true;
}

// The positions of the dims of size other than 1.
std::vector<int64_t> NonUnitDims(const std::vector<int64_t>& dims) {
  std::vector<int64_t> out;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] != 1) out.push_back(static_cast<int64_t>(d));
  }
  return out;
}

bool Flat(const Instruction& inst, int64_t e0, int64_t e1,
          const std::function<bool(const Instruction&)>& dense, Memo& memo);

// The operand's element at the index the lambda passes it is flat over its dims f0 < f1.
bool OperandFlat(const Instruction& op, int64_t f0, int64_t f1,
                 const std::function<bool(const Instruction&)>& dense, Memo& memo) {
  if (!op.shape.is_array()) return false;
  const std::vector<int64_t>& dims = op.shape.dims();
  if (f0 < 0 || f1 <= f0 || f1 >= static_cast<int64_t>(dims.size())) return false;
  if (!UnitBetween(dims, f0, f1)) return false;
  return Flat(op, f0, f1, dense, memo);
}

bool FlatUncached(const Instruction& inst, int64_t e0, int64_t e1,
                  const std::function<bool(const Instruction&)>& dense, Memo& memo) {
  if (!inst.shape.is_array()) return false;
  if (dense(inst)) return true;
  const std::vector<int64_t>& dims = inst.shape.dims();
  if (hlo::IsElementwise(inst.opcode)) {
    for (const Instruction* op : inst.operands) {
      if (op->shape.is_array() && op->shape.rank() == 0) continue;  // the same everywhere
      if (!op->shape.is_array() || op->shape.dims() != dims) return false;
      if (!OperandFlat(*op, e0, e1, dense, memo)) return false;
    }
    return true;
  }
  if (inst.operands.size() != 1) return false;
  const Instruction& op = *inst.operands[0];
  if (!op.shape.is_array()) return false;
  const std::vector<int64_t>& from = op.shape.dims();
  switch (inst.opcode) {
    case Opcode::kBroadcast: {
      int64_t j0 = -1, j1 = -1;
      for (size_t j = 0; j < inst.dimensions.size(); ++j) {
        if (inst.dimensions[j] == e0) j0 = static_cast<int64_t>(j);
        if (inst.dimensions[j] == e1) j1 = static_cast<int64_t>(j);
      }
      if (j0 < 0 && j1 < 0) return true;  // the same along both dims
      if (j0 < 0 || j1 < 0) return false;
      return OperandFlat(op, j0, j1, dense, memo);
    }
    case Opcode::kTranspose: {
      if (inst.dimensions.size() != dims.size()) return false;
      return OperandFlat(op, inst.dimensions[static_cast<size_t>(e0)],
                         inst.dimensions[static_cast<size_t>(e1)], dense, memo);
    }
    case Opcode::kSlice: {
      if (inst.slice.size() != dims.size() || from.size() != dims.size()) return false;
      const auto& s0 = inst.slice[static_cast<size_t>(e0)];
      const auto& s1 = inst.slice[static_cast<size_t>(e1)];
      // Columns whole and rows unit-strided: row r, column c reads (start + r) * C + c.
      const bool whole_columns = s1.start == 0 && s1.stride == 1 &&
                                 from[static_cast<size_t>(e1)] == dims[static_cast<size_t>(e1)];
      if (!whole_columns || s0.stride != 1) return false;
      return OperandFlat(op, e0, e1, dense, memo);
    }
    case Opcode::kReshape:
    case Opcode::kBitcast: {
      if (from == dims) return OperandFlat(op, e0, e1, dense, memo);
      // Only unit dims inserted or removed: the lambda passes each non-unit index through.
      const std::vector<int64_t> nf = NonUnitDims(from), nt = NonUnitDims(dims);
      if (nf.size() != nt.size()) return false;
      for (size_t i = 0; i < nf.size(); ++i) {
        if (from[static_cast<size_t>(nf[i])] != dims[static_cast<size_t>(nt[i])]) return false;
      }
      int64_t f0 = -1, f1 = -1;
      for (size_t i = 0; i < nt.size(); ++i) {
        if (nt[i] == e0) f0 = nf[i];
        if (nt[i] == e1) f1 = nf[i];
      }
      if (f0 < 0 || f1 < 0) return false;
      return OperandFlat(op, f0, f1, dense, memo);
    }
    default:
      return false;
  }
}

bool Flat(const Instruction& inst, int64_t e0, int64_t e1,
          const std::function<bool(const Instruction&)>& dense, Memo& memo) {
  const auto key = std::make_tuple(&inst, e0, e1);
  if (auto it = memo.find(key); it != memo.end()) return it->second;
  const bool flat = FlatUncached(inst, e0, e1, dense, memo);
  memo[key] = flat;
  return flat;
}

}  // namespace

bool FlatOverDims(const Instruction& inst, int64_t e0, int64_t e1,
                  const std::function<bool(const Instruction&)>& dense) {
  Memo memo;
  return OperandFlat(inst, e0, e1, dense, memo);
}

}  // namespace mk::codegen::cpu
