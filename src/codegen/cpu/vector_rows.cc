#include "codegen/cpu/vector_rows.h"

#include <algorithm>
#include <map>

#include "analysis/row_program.h"
#include "codegen/cpu/emit_context.h"

namespace mk::codegen::cpu {

using hlo::Instruction;
using hlo::Opcode;

namespace {

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
  return PlanRowFusion(kernel.instructions, kernel.outputs, {});
}

RowFusion PlanRowFusion(const std::vector<const Instruction*>& instructions,
                        const std::vector<const Instruction*>& outputs,
                        const std::set<const Instruction*>& seeds) {
  std::set<const Instruction*> row_dependent;
  const std::vector<int64_t> rows =
      analysis::RowProgramRows(instructions, outputs, seeds, &row_dependent);
  if (rows.empty()) return {};
  const int64_t r = static_cast<int64_t>(rows.size());
  RowFusion fusion;
  fusion.rows = rows;
  std::map<const Instruction*, int> readers;
  for (const Instruction* inst : instructions) {
    for (const Instruction* op : inst->operands) ++readers[op];
  }
  for (const Instruction* inst : instructions) {
    if (!row_dependent.count(inst) || !IsElemental(*inst) || !inst->shape.is_array() ||
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
