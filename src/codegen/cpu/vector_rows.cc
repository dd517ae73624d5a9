#include "codegen/cpu/vector_rows.h"

#include <algorithm>
#include <map>

#include "analysis/row_program.h"
#include "codegen/cpu/emit_context.h"
#include "codegen/cpu/hoist_plan.h"

namespace mk::codegen::cpu {

using hlo::Instruction;
using hlo::Opcode;

namespace {

// A row buffer holds one row of a value per thread; past this many bytes a value is recomputed
// by each pass instead (46k's chain before its logsumexp: 4 MiB rows, in L3).
constexpr int64_t kMaxRowCacheBytes = 8 << 20;

// One row of `s` in its compute type (f32 for the narrow floats, as EmitRowCached stores it).
int64_t RowBufferBytes(const hlo::Shape& s, int64_t r) {
  int64_t n = 1;
  for (int64_t d = r; d < s.rank(); ++d) n *= s.dim(d);
  const int64_t elt = s.num_elements() > 0 ? s.byte_size() / s.num_elements() : 4;
  return n * std::max<int64_t>(4, elt);
}

// Input bytes a row loop re-reads from cache rather than memory (a quarter of a 32 MiB L3).
constexpr int64_t kGatherCachedBytes = 8 << 20;

// A transpose that moves its operand's minor dim: its lambda gathers, one element per cache
// line where the moved dim is long (4p's attention scores, read with the key dim 32 KiB apart:
// each pass that read them paid a cache and TLB miss per element).
bool Gathers(const Instruction& inst) {
  if (inst.opcode != Opcode::kTranspose || inst.dimensions.empty()) return false;
  const hlo::Shape& in = inst.operands[0]->shape;
  const int64_t minor = in.rank() - 1;
  return inst.dimensions.back() != minor && in.dim(minor) > 1;
}

// Whether `inst`, as its lambda computes it (through the elementwise operands in `program`
// that are not row-cached), evaluates a costly op or gathers.
bool ComputesCostly(const Instruction* inst, const std::set<const Instruction*>& program,
                    const std::vector<const Instruction*>& cached,
                    std::map<const Instruction*, bool>& memo) {
  auto it = memo.find(inst);
  if (it != memo.end()) return it->second;
  bool costly = false;
  if (program.count(inst) && IsElemental(*inst) &&
      std::find(cached.begin(), cached.end(), inst) == cached.end()) {
    costly = IsCostlyOp(inst->opcode) || Gathers(*inst);
    for (const Instruction* op : inst->operands) {
      costly = costly || ComputesCostly(op, program, cached, memo);
    }
  }
  memo[inst] = costly;
  return costly;
}

// The passes that read `inst`'s elements at its own index: reduces it feeds (as an input,
// through same-shaped elementwise ops), outputs and row-cached values on the way. False where
// any reader on the way indexes it otherwise (a broadcast, a transpose, a reduce's init ...),
// which a row buffer read at the current row could not serve.
bool PassesReading(const Instruction* inst, const Instruction* value,
                   const std::set<const Instruction*>& program,
                   const std::set<const Instruction*>& outputs,
                   const std::vector<const Instruction*>& cached,
                   const std::map<const Instruction*, std::vector<const Instruction*>>& users,
                   std::set<const Instruction*>& passes) {
  if (outputs.count(value)) passes.insert(value);
  auto it = users.find(value);
  if (it == users.end()) return true;
  for (const Instruction* u : it->second) {
    if (u->opcode == Opcode::kReduce) {
      const size_t inputs = u->operands.size() / 2;
      for (size_t i = inputs; i < u->operands.size(); ++i) {
        if (u->operands[i] == value) return false;
      }
      passes.insert(u);
      continue;
    }
    if (!hlo::IsElementwise(u->opcode) || !u->shape.is_array() ||
        u->shape.dims() != inst->shape.dims()) {
      return false;
    }
    if (std::find(cached.begin(), cached.end(), u) != cached.end()) {
      passes.insert(u);
      continue;
    }
    if (!PassesReading(inst, u, program, outputs, cached, users, passes)) return false;
  }
  return true;
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
  for (size_t d = 0; d < rows.size(); ++d) fusion.order.push_back(d);
  for (const Instruction* inst : instructions) {
    if (!Gathers(*inst) || !analysis::HasRowDims(inst->shape, rows)) continue;
    const int64_t minor = inst->operands[0]->shape.rank() - 1;
    for (size_t j = 0; j + 1 < rows.size(); ++j) {  // a row dim other than the innermost
      if (inst->dimensions[j] != minor) continue;
      // The input one value of the row dims before j spans: while row dim j stays, the inner
      // row dims read all of it. Kept in cache (7p: 4 MiB per sequence), the natural order
      // re-reads it from there and was 5% faster than interleaving; past that (4p: 32 MiB)
      // every value of row dim j reads it from memory again.
      int64_t outer = 1;
      for (size_t d = 0; d < j; ++d) outer *= rows[d];
      if (inst->operands[0]->shape.byte_size() / std::max<int64_t>(1, outer) <=
          kGatherCachedBytes) {
        continue;
      }
      fusion.order.erase(fusion.order.begin() + static_cast<std::ptrdiff_t>(j));
      fusion.order.push_back(j);
    }
    break;
  }
  std::map<const Instruction*, int> readers;
  for (const Instruction* inst : instructions) {
    for (const Instruction* op : inst->operands) ++readers[op];
  }
  for (const Instruction* inst : instructions) {
    if (!row_dependent.count(inst) || !IsElemental(*inst) || !inst->shape.is_array() ||
        inst->shape.rank() <= r) {
      continue;
    }
    const bool shared = IsTranscendentalOp(inst->opcode) && readers[inst] >= 2;
    if (shared || (OnePerRow(inst->shape, r) && IsCostlyOp(inst->opcode))) {
      fusion.row_cached.push_back(inst);
    }
  }
  // A costly value that several passes read at its own index, row-dependent or not (46k: the
  // tanh chain that both passes of a logsumexp over channels read), computed once per row
  // instead of once per pass. The latest such values first: a chain's last value cached, its
  // earlier ones feed only that one.
  const std::set<const Instruction*> program(instructions.begin(), instructions.end());
  const std::set<const Instruction*> outs(outputs.begin(), outputs.end());
  std::map<const Instruction*, std::vector<const Instruction*>> users;
  for (const Instruction* inst : instructions) {
    for (const Instruction* op : inst->operands) users[op].push_back(inst);
  }
  std::map<const Instruction*, bool> costly;
  for (auto it = instructions.rbegin(); it != instructions.rend(); ++it) {
    const Instruction* inst = *it;
    if (!hlo::IsElementwise(inst->opcode) || !inst->shape.is_array() ||
        inst->shape.rank() <= r || !analysis::HasRowDims(inst->shape, rows) ||
        std::find(fusion.row_cached.begin(), fusion.row_cached.end(), inst) !=
            fusion.row_cached.end() ||
        RowBufferBytes(inst->shape, r) > kMaxRowCacheBytes) {
      continue;
    }
    std::set<const Instruction*> passes;
    if (!PassesReading(inst, inst, program, outs, fusion.row_cached, users, passes) ||
        passes.size() < 2) {
      continue;
    }
    costly.clear();  // the cached set changed since the last evaluation
    if (ComputesCostly(inst, program, fusion.row_cached, costly)) {
      fusion.row_cached.push_back(inst);
    }
  }
  return fusion;
}

}  // namespace mk::codegen::cpu
