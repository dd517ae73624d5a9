#include "analysis/row_reduce_epilogue.h"

#include <algorithm>
#include <map>

#include "analysis/reducer.h"

namespace mk::analysis {

using hlo::Instruction;
using hlo::Opcode;

namespace {

// The reduce's combiner when it is one add, maximum or minimum of its two f32 scalar
// parameters (the forms whose partial results combine in any order).
std::optional<Opcode> F32Combiner(const Instruction* r) {
  if (r->operands.size() != 2 || r->called.size() != 1 || !r->shape.is_array() ||
      r->shape.dtype() != hlo::DType::kF32) {
    return std::nullopt;
  }
  const std::optional<Opcode> op = BinaryReducerOp(*r->called[0]);
  if (op == Opcode::kAdd || op == Opcode::kMaximum || op == Opcode::kMinimum) return op;
  return std::nullopt;
}

bool IsIota(const std::vector<int64_t>& v) {
  for (size_t d = 0; d < v.size(); ++d) {
    if (v[d] != static_cast<int64_t>(d)) return false;
  }
  return true;
}

// Whether `b` (of the GEMM's dims) is reduce `m` broadcast along the rows: b[rows..., cols...]
// = m[rows...]. The broadcast maps m's row-major value onto the leading dims; between it and m
// only ops that keep the row-major order and the element count (reshape, bitcast, copy, a
// broadcast that adds no dims) are allowed, so b's row index is m's index.
bool IsRowBroadcastOf(const Instruction* b, const Instruction* m, const std::vector<int64_t>& dims,
                      int64_t row_dims) {
  if (b->opcode != Opcode::kBroadcast || b->operands.size() != 1) return false;
  const Instruction* x = b->operands[0];
  const std::vector<int64_t> rows(dims.begin(), dims.begin() + row_dims);
  if (!x->shape.is_array() || x->shape.dims() != rows || !IsIota(b->dimensions) ||
      b->dimensions.size() != rows.size()) {
    return false;
  }
  const int64_t count = m->shape.num_elements();
  while (x != m) {
    if (x->operands.size() != 1 || !x->shape.is_array() || x->shape.num_elements() != count) {
      return false;
    }
    const Instruction* in = x->operands[0];
    switch (x->opcode) {
      case Opcode::kReshape: case Opcode::kBitcast: case Opcode::kCopy:
        break;
      case Opcode::kBroadcast:
        if (!in->shape.is_array() || in->shape.dims() != x->shape.dims() ||
            !IsIota(x->dimensions) || x->dimensions.size() != x->shape.dims().size()) {
          return false;
        }
        break;
      default:
        return false;
    }
    x = in;
  }
  return true;
}

}  // namespace

std::optional<RowReduceEpilogue> PlanRowReduceEpilogue(
    const Instruction* dot, const std::vector<const Instruction*>& members,
    const std::function<bool(const Instruction*)>& is_output) {
  if (!dot || dot->opcode != Opcode::kDot || !dot->dot_dims || dot->operands.size() != 2 ||
      !dot->shape.is_array() || dot->shape.dtype() != hlo::DType::kF32 || is_output(dot)) {
    return std::nullopt;
  }
  const std::vector<int64_t>& dims = dot->shape.dims();
  const int64_t rank = static_cast<int64_t>(dims.size());
  const hlo::Shape& rhs = dot->operands[1]->shape;
  const int64_t n_dims = rhs.rank() - static_cast<int64_t>(dot->dot_dims->rhs_batch.size() +
                                                           dot->dot_dims->rhs_contracting.size());
  RowReduceEpilogue e;
  e.dot = dot;
  e.row_dims = rank - n_dims;
  if (n_dims < 1 || e.row_dims < 1) return std::nullopt;
  std::vector<int64_t> n_axes;
  for (int64_t d = e.row_dims; d < rank; ++d) n_axes.push_back(d);

  const std::set<const Instruction*> in_set(members.begin(), members.end());
  std::set<const Instruction*> depends{dot};
  std::map<const Instruction*, const RowReduce*> fused;
  // The fused reduces each value depends on (through any path).
  std::map<const Instruction*, std::set<const Instruction*>> reads;
  e.reduces.reserve(members.size());  // RowReduce pointers in `fused` stay valid
  for (const Instruction* i : members) {
    if (i == dot) continue;
    bool on_dot = false, reads_element = false;
    std::set<const Instruction*> r;
    for (const Instruction* op : i->operands) {
      if (!in_set.count(op) || !depends.count(op)) continue;
      on_dot = true;
      if (op == dot || e.ops.count(op)) reads_element = true;
      if (fused.count(op)) r.insert(op);
      const auto it = reads.find(op);
      if (it != reads.end()) r.insert(it->second.begin(), it->second.end());
    }
    if (!on_dot) continue;
    depends.insert(i);
    reads[i] = r;
    // Reading only the reduces' results (rows): runs after the GEMM, like any later kernel op.
    if (!reads_element) continue;
    if (i->opcode != Opcode::kReduce) {
      // Elementwise per element of the GEMM's tile.
      if (!hlo::IsElementwise(i->opcode) || !i->shape.is_array() || i->shape.dims() != dims ||
          is_output(i)) {
        return std::nullopt;
      }
      e.ops.insert(i);
      continue;
    }
    const std::optional<Opcode> combiner = F32Combiner(i);
    const Instruction* input = i->operands[0];
    std::vector<int64_t> axes = i->dimensions;
    std::sort(axes.begin(), axes.end());
    if (!combiner || depends.count(i->operands[1]) || input->shape.dims() != dims ||
        axes != n_axes || (input != dot && !e.ops.count(input))) {
      return std::nullopt;
    }
    RowReduce rr{i, *combiner};
    if (!r.empty()) {
      // The softmax form: sum(exp(a - B)), B the row broadcast of a plain maximum reduce.
      const Instruction* m = *r.begin();
      const RowReduce* mr = fused.at(m);
      if (r.size() != 1 || *combiner != Opcode::kAdd || mr->combiner != Opcode::kMaximum ||
          mr->rescale_by || input->opcode != Opcode::kExp ||
          input->operands[0]->opcode != Opcode::kSubtract) {
        return std::nullopt;
      }
      const Instruction* a = input->operands[0]->operands[0];
      const Instruction* b = input->operands[0]->operands[1];
      const auto ra = reads.find(a);
      if (!IsRowBroadcastOf(b, m, dims, e.row_dims) || fused.count(a) ||
          (ra != reads.end() && !ra->second.empty())) {
        return std::nullopt;
      }
      rr.rescale_by = m;
      rr.row_max = b;
    }
    e.reduces.push_back(rr);
    fused[i] = &e.reduces.back();
  }
  if (e.reduces.empty()) return std::nullopt;
  return e;
}

}  // namespace mk::analysis
