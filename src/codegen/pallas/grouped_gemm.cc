#include "codegen/pallas/merged_call.h"
#include "codegen/pallas/grouped_gemm.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <unordered_map>

#include "analysis/reducer.h"
#include "codegen/pallas/jnp_ops.h"

namespace mk::codegen::pallas {

using hlo::DType;
using hlo::Instruction;
using hlo::Opcode;

namespace {

Status Refuse(const std::string& why) { return InvalidArgument(why); }

std::string Name(const Instruction* i) { return "%" + i->name; }

std::string Dims(const Instruction* i) {
  std::string s = "[";
  for (size_t d = 0; d < i->shape.dims().size(); ++d) s += (d ? "," : "") + std::to_string(i->shape.dims()[d]);
  return s + "]";
}

// The value of a broadcast rank-0 constant (or of the constant itself), when that is what `x` is.
std::optional<double> ScalarConstValue(const Instruction* x) {
  if (x->opcode == Opcode::kBroadcast && x->operand_count() == 1) x = x->operand(0);
  if (x->opcode != Opcode::kConstant || !x->shape.is_array() || x->shape.rank() != 0 || !x->literal) {
    return std::nullopt;
  }
  return x->literal->GetDouble(0);
}

// For a reshape that only inserts or removes size-1 dims: per dim of `to`, the dim of `from` it
// is (-1: inserted); nullopt when data moves across dims.
std::optional<std::vector<int>> SizeOneMap(const std::vector<int64_t>& from, const std::vector<int64_t>& to) {
  std::vector<int> map(to.size(), -1);
  size_t f = 0, t = 0;
  while (t < to.size() || f < from.size()) {
    if (t < to.size() && f < from.size() && to[t] == from[f]) {
      map[t++] = static_cast<int>(f++);
    } else if (t < to.size() && to[t] == 1) {
      ++t;
    } else if (f < from.size() && from[f] == 1) {
      ++f;
    } else {
      return std::nullopt;
    }
  }
  return map;
}

// Follows broadcasts and size-1 reshapes down from `x`, whose dims carry `labels`, to the first
// value whose dims of size > 1 all carry a label in [0, max_label]; the ops passed through join
// `core`. `what` names the value in a refusal.
Result<VisitValue> TraceDown(const Instruction* x, std::vector<int> labels, int max_label,
                             const std::string& what, std::set<const Instruction*>& core) {
  for (int depth = 0; depth < 16; ++depth) {
    bool fits = true;
    for (size_t d = 0; d < labels.size(); ++d) {
      if (x->shape.dims()[d] == 1) labels[d] = -1;
      fits = fits && labels[d] <= max_label;
    }
    if (fits) return VisitValue{x, labels, false};
    core.insert(x);
    const Instruction* in = x->operand_count() == 1 ? x->operand(0) : nullptr;
    std::vector<int> next(in ? static_cast<size_t>(in->shape.rank()) : 0, -1);
    if (x->opcode == Opcode::kBroadcast && in) {
      for (size_t i = 0; i < x->dimensions.size(); ++i) next[i] = labels[static_cast<size_t>(x->dimensions[i])];
    } else if ((x->opcode == Opcode::kReshape || x->opcode == Opcode::kBitcast) && in) {
      auto map = SizeOneMap(in->shape.dims(), x->shape.dims());
      if (!map) return Refuse(what + " " + Name(x) + " reshapes across dims (not a per-visit value broadcast)");
      for (size_t t = 0; t < map->size(); ++t) {
        if ((*map)[t] >= 0) next[static_cast<size_t>((*map)[t])] = labels[t];
      }
    } else {
      return Refuse(what + " " + Name(x) + " (" + std::string(hlo::OpcodeName(x->opcode)) +
                    ") varies along a dim other than the visit" + (max_label >= 1 ? " and the row" : ""));
    }
    x = in;
    labels = std::move(next);
  }
  return Refuse(what + " is broadcast through too many ops");
}

// The start indices of a gather/scatter over dim 0 with index_vector_dim 1: [V, 1] or [V].
bool IsVisitIndex(const Instruction* idx, int64_t v, int64_t ivd) {
  if (ivd != 1 || idx->shape.dtype() != DType::kS32) return false;
  const auto& d = idx->shape.dims();
  return (d.size() == 2 && d[0] == v && d[1] == 1) || (d.size() == 1 && d[0] == v);
}

// `x` = gather(operand, idx) of whole slices of operand along dim 0, one per visit (rank 3):
// offset_dims {1,2}, collapsed {0}, start_index_map {0}, slice {1, d1, d2}.
Status CheckVisitGather(const Instruction* x, int64_t v, const std::string& what) {
  if (x->opcode != Opcode::kGather || x->operand_count() != 2 || !x->gather_dims) {
    return Refuse(what + " " + Name(x) + " is " + std::string(hlo::OpcodeName(x->opcode)) + ", not a gather");
  }
  const Instruction* op = x->operand(0);
  const auto& gd = *x->gather_dims;
  if (op->shape.rank() != 3 || x->shape.rank() != 3) return Refuse(what + " gather " + Name(x) + " is not rank 3");
  const auto& od = op->shape.dims();
  if (gd.offset_dims != std::vector<int64_t>{1, 2} || gd.collapsed_slice_dims != std::vector<int64_t>{0} ||
      gd.start_index_map != std::vector<int64_t>{0} || !gd.operand_batching_dims.empty() ||
      !gd.start_indices_batching_dims.empty() || x->gather_slice_sizes != std::vector<int64_t>{1, od[1], od[2]}) {
    return Refuse(what + " gather " + Name(x) + " does not take whole slices along dim 0 of its operand");
  }
  if (!IsVisitIndex(x->operand(1), v, gd.index_vector_dim)) {
    return Refuse(what + " gather " + Name(x) + "'s indices " + Dims(x->operand(1)) +
                  " are not one s32 start per visit (" + std::to_string(v) + ")");
  }
  if (x->shape.dims() != std::vector<int64_t>{v, od[1], od[2]}) {
    return Refuse(what + " gather " + Name(x) + " has shape " + Dims(x));
  }
  return Status::Ok();
}

// An operand of the dot: gather(...) or jnp.take's select(in_range, gather(...), NaN). Returns
// the gather; `ok` gets the in-range predicate (per visit) when there is one.
Result<const Instruction*> VisitOperand(const Instruction* x, int64_t v, const std::vector<int>& labels,
                                        const std::string& what, VisitValue& ok,
                                        std::set<const Instruction*>& core) {
  core.insert(x);
  if (x->opcode == Opcode::kSelect) {
    const Instruction* gather = x->operand(1);
    auto fill = ScalarConstValue(x->operand(2));
    if (!fill || !std::isnan(*fill)) {
      return Refuse(what + " " + Name(x) + " selects a gather against something other than a NaN fill");
    }
    core.insert(x->operand(2));
    MK_ASSIGN_OR_RETURN(ok, TraceDown(x->operand(0), labels, 0, what + "'s in-range predicate", core));
    x = gather;
    core.insert(x);
  }
  MK_RETURN_IF_ERROR(CheckVisitGather(x, v, what));
  return x;
}

}  // namespace

Result<GroupedGemmMatch> MatchGroupedGemmAt(const Instruction* scatter, bool* looks_like) {
  if (looks_like) *looks_like = false;
  if (scatter->opcode != Opcode::kScatter || scatter->operand_count() != 3 || !scatter->scatter_dims ||
      !scatter->shape.is_array()) {
    return Refuse(Name(scatter) + " is not a single-operand scatter");
  }
  GroupedGemmMatch m;
  m.scatter = scatter;
  const Instruction* update = scatter->operand(2);
  const Instruction* dot = update;
  if (update->opcode == Opcode::kSelect) {
    dot = update->operand(1)->opcode == Opcode::kDot ? update->operand(1) : update->operand(2);
  }
  if (dot->opcode != Opcode::kDot || !dot->dot_dims || dot->shape.rank() != 3) {
    return Refuse(Name(scatter) + "'s updates are not a batched dot's products");
  }
  if (looks_like) *looks_like = true;
  m.dot = dot;
  m.core = {scatter, dot};

  // The dot: [V, tm, K] x [V, K, N] (or [V, N, K]) -> [V, tm, N], batched over the visits.
  const auto& dd = *dot->dot_dims;
  if (dd.lhs_batch != std::vector<int64_t>{0} || dd.rhs_batch != std::vector<int64_t>{0} ||
      dd.lhs_contracting != std::vector<int64_t>{2} ||
      (dd.rhs_contracting != std::vector<int64_t>{1} && dd.rhs_contracting != std::vector<int64_t>{2})) {
    return Refuse("dot " + Name(dot) + " is not [V, rows, K] x [V, K, N] batched over the visits");
  }
  m.rhs_transposed = dd.rhs_contracting[0] == 2;
  if (dot->shape.dtype() != DType::kF32) {
    return Refuse("dot " + Name(dot) + " gives " + std::string(hlo::DTypeName(dot->shape.dtype())) +
                  ", not f32 (the call accumulates the products in f32)");
  }
  const Instruction* a = dot->operand(0);
  const Instruction* b = dot->operand(1);
  if (a->shape.rank() != 3 || b->shape.rank() != 3) {
    return Refuse("dot " + Name(dot) + "'s operands are not rank 3 ([V, rows, K] and one weight per visit)");
  }
  for (const Instruction* x : {a, b}) {
    if (!hlo::IsFloat(x->shape.dtype()) || x->shape.dtype() == DType::kF64) {
      return Refuse("dot " + Name(dot) + " reads " + std::string(hlo::DTypeName(x->shape.dtype())) +
                    " (a bf16/f16/f32 operand is needed)");
    }
  }
  m.v = dot->shape.dims()[0];
  m.tm = dot->shape.dims()[1];
  m.n = dot->shape.dims()[2];
  m.k = a->shape.dims()[2];

  // The scatter: every visit's [tm, N] block added into tile si of [T, tm, N].
  const auto& sd = *scatter->scatter_dims;
  const Instruction* init = scatter->operand(0);
  if (sd.update_window_dims != std::vector<int64_t>{1, 2} || sd.inserted_window_dims != std::vector<int64_t>{0} ||
      sd.scatter_dims_to_operand_dims != std::vector<int64_t>{0} || !sd.input_batching_dims.empty() ||
      !sd.scatter_indices_batching_dims.empty() || init->shape.rank() != 3 ||
      init->shape.dims()[1] != m.tm || init->shape.dims()[2] != m.n) {
    return Refuse("scatter " + Name(scatter) + " does not add each visit's whole [" + std::to_string(m.tm) + ", " +
                  std::to_string(m.n) + "] block into one tile along dim 0");
  }
  if (!IsVisitIndex(scatter->operand(1), m.v, sd.index_vector_dim)) {
    return Refuse("scatter " + Name(scatter) + "'s indices " + Dims(scatter->operand(1)) +
                  " are not one s32 tile per visit");
  }
  const hlo::Computation* reducer = scatter->to_apply();
  if (!reducer || analysis::BinaryReducerOp(*reducer) != Opcode::kAdd) {
    return Refuse("scatter " + Name(scatter) + " does not add (its computation is not add)");
  }
  if (scatter->shape.dtype() != DType::kF32) {
    return Refuse("scatter " + Name(scatter) + " accumulates in " +
                  std::string(hlo::DTypeName(scatter->shape.dtype())) + ", not f32");
  }
  if (!ScalarConstValue(init) || init->opcode != Opcode::kBroadcast) {
    return Refuse("scatter " + Name(scatter) + " starts from " + Name(init) + ", not a broadcast constant");
  }
  m.init = init;
  m.core.insert(init);
  m.t = init->shape.dims()[0];
  m.out_index = scatter->operand(1);

  // The mask: select(pred, D, 0) or select(pred, 0, D), pred broadcast from [V, tm].
  if (update != dot) {
    m.core.insert(update);
    const bool on_true = update->operand(1) == dot;
    const Instruction* other = update->operand(on_true ? 2 : 1);
    auto zero = ScalarConstValue(other);
    if (!zero || *zero != 0.0) {
      return Refuse("the masked products " + Name(update) + " are replaced by " + Name(other) + ", not 0");
    }
    m.core.insert(other);
    MK_ASSIGN_OR_RETURN(m.mask, TraceDown(update->operand(0), {0, 1, 2}, 1, "the row mask", m.core));
    m.mask.negated = !on_true;
  }

  // The operands: one row tile and one group's weight per visit.
  MK_ASSIGN_OR_RETURN(const Instruction* ga, VisitOperand(a, m.v, {0, 1, 2}, "the row tiles", m.lhs_ok, m.core));
  MK_ASSIGN_OR_RETURN(const Instruction* gb, VisitOperand(b, m.v, {0, 2, 3}, "the weights", m.rhs_ok, m.core));
  m.lhs = ga->operand(0);
  m.rhs = gb->operand(0);
  m.lhs_index = ga->operand(1);
  m.rhs_index = gb->operand(1);
  if (m.lhs->shape.dims() != std::vector<int64_t>{m.t, m.tm, m.k}) {
    return Refuse("the row tiles " + Name(m.lhs) + " are " + Dims(m.lhs) + ", not the output's " +
                  std::to_string(m.t) + " tiles of " + std::to_string(m.tm) + " rows by K=" + std::to_string(m.k));
  }
  m.g = m.rhs->shape.dims()[0];
  const std::vector<int64_t> want_b = m.rhs_transposed ? std::vector<int64_t>{m.g, m.n, m.k}
                                                       : std::vector<int64_t>{m.g, m.k, m.n};
  if (m.rhs->shape.dims() != want_b) {
    return Refuse("the weights " + Name(m.rhs) + " are " + Dims(m.rhs) + ", not one [K, N] matrix per group");
  }
  return m;
}

GroupedGemmScan FindGroupedGemm(const analysis::FusionPlan& plan, const std::set<size_t>& taken_before) {
  GroupedGemmScan scan;
  if (!plan.module || !plan.module->entry()) return scan;
  const hlo::Computation& entry = *plan.module->entry();
  std::unordered_map<const Instruction*, std::vector<const Instruction*>> users;
  for (const auto& i : entry.instructions()) {
    for (const Instruction* o : i->operands) users[o].push_back(i.get());
  }
  std::unordered_map<const Instruction*, size_t> kernel_of;
  for (size_t k = 0; k < plan.kernels.size(); ++k) {
    for (const Instruction* i : plan.kernels[k].instructions) kernel_of[i] = k;
  }
  const Instruction* root = entry.root();
  std::set<size_t> taken = taken_before;
  for (size_t kk = 0; kk < plan.kernels.size(); ++kk) {
    for (const Instruction* sc : plan.kernels[kk].instructions) {
      if (sc->opcode != Opcode::kScatter) continue;
      bool looks = false;
      auto m = MatchGroupedGemmAt(sc, &looks);
      if (!m.ok()) {
        if (looks) scan.refused.push_back(Name(sc) + ": " + m.status().message());
        continue;
      }
      auto refuse = [&](const std::string& why) { scan.refused.push_back(Name(sc) + ": " + why); };
      const auto only_user = [&](const Instruction* x) -> const Instruction* {
        return x != root && users[x].size() == 1 ? users[x][0] : nullptr;
      };
      // lhs split into row tiles by a reshape only the gather reads: read the rows in place.
      if (m->lhs->opcode == Opcode::kReshape && only_user(m->lhs) &&
          m->core.count(only_user(m->lhs)) &&
          m->lhs->operand(0)->shape.dims() == std::vector<int64_t>{m->t * m->tm, m->k}) {
        m->lhs_rows = m->lhs->operand(0);
        m->core.insert(m->lhs);
      }
      // O reshaped and converted (to the module's output type): written by the call directly.
      // The call runs at the scatter's kernel, so a later kernel holding them must hold nothing
      // else (it emits nothing).
      const auto only_epilogue = [&](const Instruction* x, const Instruction* r, const Instruction* c) {
        auto it = kernel_of.find(x);
        if (it == kernel_of.end()) return false;
        if (it->second == kernel_of[sc]) return true;
        for (const Instruction* i : plan.kernels[it->second].instructions) {
          if (i != r && i != c) return false;
        }
        return true;
      };
      if (const Instruction* r = only_user(sc); r && r->opcode == Opcode::kReshape) {
        const Instruction* c = only_user(r);
        if (c && c->opcode == Opcode::kConvert && hlo::IsFloat(c->shape.dtype()) &&
            c->shape.dtype() != DType::kF64 && only_epilogue(r, r, c) && only_epilogue(c, r, c)) {
          m->out_reshape = r;
          m->out_convert = c;
          m->core.insert(r);
          m->core.insert(c);
        }
      }
      const Instruction* out = m->out_convert ? m->out_convert : sc;
      bool ok = true;
      for (const Instruction* c : m->core) {
        if (c == out) continue;
        if (c->opcode == Opcode::kConstant) continue;  // scalar constants: written into the body
        ok = c != root;
        for (const Instruction* u : users[c]) ok = ok && m->core.count(u);
        if (!ok) {
          refuse(Name(c) + " is used outside the grouped GEMM (the fused call never materializes it)");
          break;
        }
      }
      if (!ok) continue;
      std::set<size_t> ks;
      for (const Instruction* c : m->core) {
        auto it = kernel_of.find(c);
        if (it != kernel_of.end()) ks.insert(it->second);
      }
      for (size_t k : ks) ok = ok && !taken.count(k);
      if (!ok) {
        refuse("a kernel it needs is part of another fused call");
        continue;
      }
      PlannedGroupedGemm pg;
      pg.kernels.assign(ks.begin(), ks.end());
      // The call runs at the scatter's kernel (where its space is declared); only the absorbed
      // epilogue's kernels may come after it.
      pg.anchor = kernel_of[sc];
      for (size_t k : pg.kernels) {
        if (k <= pg.anchor) continue;
        for (const Instruction* i : plan.kernels[k].instructions) {
          if (i != m->out_reshape && i != m->out_convert) ok = false;
        }
      }
      if (!ok) {
        refuse("a kernel it replaces runs after the scatter's kernel");
        continue;
      }
      CallBoundary boundary = BoundaryOf(plan, pg.kernels, pg.anchor, users, kernel_of);
      pg.inputs = std::move(boundary.inputs);
      pg.outputs = std::move(boundary.outputs);
      for (const Instruction* o : boundary.used_before_anchor) {
        refuse(Name(o) + " is used by a kernel that runs before the grouped GEMM's last kernel");
      }
      if (!boundary.used_before_anchor.empty()) continue;
      for (size_t k : pg.kernels) {
        for (const Instruction* i : plan.kernels[k].instructions) {
          if (m->core.count(i)) continue;
          if (!IsTranslatable(i->opcode)) {
            ok = false;
            refuse(Name(i) + " (" + std::string(hlo::OpcodeName(i->opcode)) + ") would run in glue and has no jnp form");
            break;
          }
          pg.glue.push_back(i);
        }
        if (!ok) break;
      }
      if (!ok) continue;
      // Everything the call reads must be at hand before it: an input of the replaced kernels,
      // or glue in them.
      std::vector<const Instruction*> reads = {m->lhs_rows ? m->lhs_rows : m->lhs, m->rhs, m->lhs_index,
                                               m->rhs_index, m->out_index};
      for (const VisitValue* vv : {&m->lhs_ok, &m->rhs_ok, &m->mask}) {
        if (vv->value) reads.push_back(vv->value);
      }
      for (const Instruction* r : reads) {
        const bool at_hand = std::find(pg.inputs.begin(), pg.inputs.end(), r) != pg.inputs.end() ||
                             std::find(pg.glue.begin(), pg.glue.end(), r) != pg.glue.end() ||
                             (r->opcode == Opcode::kConstant && !kernel_of.count(r)) ||
                             r->opcode == Opcode::kParameter;
        if (!at_hand) {
          ok = false;
          refuse(Name(r) + ", which the call reads, is computed inside another kernel");
          break;
        }
      }
      if (!ok) continue;
      pg.match = std::move(*m);
      taken.insert(pg.kernels.begin(), pg.kernels.end());
      scan.found.push_back(std::move(pg));
    }
  }
  return scan;
}

}  // namespace mk::codegen::pallas
