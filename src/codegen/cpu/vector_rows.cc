#include "codegen/cpu/vector_rows.h"

#include <algorithm>
#include <map>

#include "codegen/cpu/emit_context.h"

namespace mk::codegen::cpu {

using hlo::Instruction;
using hlo::Opcode;

namespace {

// How a value depends on the kernel's reduce results: not at all (computable anywhere), only at
// its own row, or in a way row fusion cannot follow.
enum class RowDep { kFree, kRow, kBad };

const hlo::Shape* FirstLeaf(const hlo::Shape& s) {
  if (s.is_array()) return &s;
  if (s.is_tuple() && !s.tuple_shapes().empty() && s.tuple_shapes()[0].is_array()) {
    return &s.tuple_shapes()[0];
  }
  return nullptr;
}

bool HasRows(const hlo::Shape& s, const std::vector<int64_t>& rows) {
  if (s.is_tuple()) {
    for (const auto& leaf : s.tuple_shapes()) {
      if (!HasRows(leaf, rows)) return false;
    }
    return !s.tuple_shapes().empty();
  }
  if (!s.is_array() || s.rank() < static_cast<int64_t>(rows.size())) return false;
  for (size_t d = 0; d < rows.size(); ++d) {
    if (s.dim(static_cast<int64_t>(d)) != rows[d]) return false;
  }
  return true;
}

// Whether elemental op `inst` (some operand row-dependent) maps its leading row indices to the
// same operand indices.
bool KeepsRows(const Instruction& inst, const std::vector<int64_t>& rows) {
  const size_t r = rows.size();
  for (const Instruction* op : inst.operands) {
    if (op->shape.is_array() && op->shape.rank() > 0 && !HasRows(op->shape, rows)) return false;
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

// Calls that cost tens of cycles (libm calls the C++ compiler cannot vectorize; mk_cpu_rt.h's
// vectorized exp/log/tanh/erf/... are still a few dozen operations per element): worth one
// evaluation per element instead of one per reading pass.
bool IsTranscendental(Opcode op) {
  switch (op) {
    case Opcode::kExp: case Opcode::kExpm1: case Opcode::kLog: case Opcode::kLog1p:
    case Opcode::kTanh: case Opcode::kLogistic: case Opcode::kErf: case Opcode::kPower:
    case Opcode::kSin: case Opcode::kCos: case Opcode::kTan: case Opcode::kAtan2:
    case Opcode::kCbrt:
      return true;
    default:
      return false;
  }
}

// Ops whose per-element cost is worth a row buffer when their value is one per row.
bool IsCostly(Opcode op) {
  switch (op) {
    case Opcode::kDivide: case Opcode::kSqrt: case Opcode::kRsqrt: case Opcode::kCbrt:
      return true;
    default:
      return IsTranscendental(op);
  }
}

// A shape whose dims after the first `r` (the rows) are all 1: one value per row.
bool OnePerRow(const hlo::Shape& s, int64_t r) {
  for (int64_t d = r; d < s.rank(); ++d) {
    if (s.dim(d) != 1) return false;
  }
  return true;
}

}  // namespace

std::vector<int64_t> RowFusionDims(const analysis::Kernel& kernel) {
  return PlanRowFusion(kernel).rows;
}

RowFusion PlanRowFusion(const analysis::Kernel& kernel) {
  if (kernel.family != analysis::KernelFamily::kReduction) return {};
  // The row dims: those before the first reduced dim of every reduce.
  int64_t r = -1;
  std::vector<int64_t> rows;
  for (const Instruction* inst : kernel.instructions) {
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
    return it == dep.end() ? RowDep::kFree : it->second;  // kernel inputs read from memory
  };
  for (const Instruction* inst : kernel.instructions) {
    bool row = false;
    for (const Instruction* op : inst->operands) {
      const RowDep d = dep_of(op);
      if (d == RowDep::kBad) return {};
      row = row || d == RowDep::kRow;
    }
    RowDep d = RowDep::kBad;
    if (inst->opcode == Opcode::kReduce) {
      // Computed per row: reduces only dims after the rows, of row-shaped inputs.
      const size_t n = inst->operands.size() / 2;
      bool ok = HasRows(inst->shape, rows);
      for (int64_t dim : inst->dimensions) ok = ok && dim >= r;
      for (size_t k = 0; k < n; ++k) {
        ok = ok && HasRows(inst->operands[k]->shape, rows) &&
             dep_of(inst->operands[n + k]) == RowDep::kFree;
      }
      if (ok) d = RowDep::kRow;
    } else if (IsElemental(*inst)) {
      if (!row) d = RowDep::kFree;
      else if (HasRows(inst->shape, rows) && KeepsRows(*inst, rows)) d = RowDep::kRow;
    }
    if (d == RowDep::kBad) return {};
    dep[inst] = d;
  }
  // Every output is stored inside the row loop, so it must be row-shaped.
  for (const Instruction* out : kernel.outputs) {
    if (!HasRows(out->shape, rows)) return {};
  }
  RowFusion fusion;
  fusion.rows = rows;
  std::map<const Instruction*, int> readers;
  for (const Instruction* inst : kernel.instructions) {
    for (const Instruction* op : inst->operands) ++readers[op];
  }
  for (const Instruction* inst : kernel.instructions) {
    if (dep[inst] != RowDep::kRow || !IsElemental(*inst) || !inst->shape.is_array() ||
        inst->shape.rank() <= r) {
      continue;
    }
    const bool shared = IsTranscendental(inst->opcode) && readers[inst] >= 2;
    if (shared || (OnePerRow(inst->shape, r) && IsCostly(inst->opcode))) {
      fusion.row_cached.push_back(inst);
    }
  }
  return fusion;
}

}  // namespace mk::codegen::cpu
