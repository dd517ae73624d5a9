#include "codegen/pallas/merged_call.h"
#include "codegen/pallas/flash_attention.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <tuple>
#include <unordered_map>

#include "codegen/pallas/jnp_ops.h"
#include "support/text_escape.h"

namespace mk::codegen::pallas {

using hlo::DType;
using hlo::Instruction;
using hlo::Opcode;

namespace {

Status Refuse(const std::string& why) { return InvalidArgument(why); }

std::string Name(const Instruction* i) { return "%" + i->name; }

bool IsScalarConstant(const Instruction* x) {
  return x->opcode == Opcode::kConstant && x->shape.is_array() && x->shape.rank() == 0 &&
         x->literal.has_value();
}

// broadcast(c) of a rank-0 constant: a value the body writes as a literal.
bool IsScalarConstBroadcast(const Instruction* x) {
  return x->opcode == Opcode::kBroadcast && x->operand_count() == 1 && IsScalarConstant(x->operand(0));
}

bool IsLayout(Opcode op) {
  return op == Opcode::kTranspose || op == Opcode::kReshape || op == Opcode::kCopy ||
         op == Opcode::kBitcast;
}

// Elementwise ops the score chain may apply (the body computes them on the block).
bool IsScoreUnary(Opcode op) {
  return op == Opcode::kConvert || op == Opcode::kNegate || op == Opcode::kTanh ||
         op == Opcode::kAbs || op == Opcode::kLogistic;
}
bool IsScoreBinary(Opcode op) {
  return op == Opcode::kAdd || op == Opcode::kSubtract || op == Opcode::kMultiply ||
         op == Opcode::kDivide || op == Opcode::kMaximum || op == Opcode::kMinimum;
}

// For a reshape that only inserts or removes dims of size 1: per dim of `to`, the dim of `from`
// it is (-1 for an inserted size-1 dim); nullopt when it moves data across dims.
std::optional<std::vector<int>> SizeOneReshape(const std::vector<int64_t>& from,
                                               const std::vector<int64_t>& to) {
  std::vector<int> map(to.size(), -1);
  size_t f = 0, t = 0;
  while (t < to.size() || f < from.size()) {
    if (t < to.size() && f < from.size() && to[t] == from[f]) {
      map[t++] = static_cast<int>(f++);
    } else if (t < to.size() && to[t] == 1) {
      ++t;  // inserted
    } else if (f < from.size() && from[f] == 1) {
      ++f;  // removed
    } else {
      return std::nullopt;
    }
  }
  return map;
}

// The labels (qk-dot dim ids, -1 for none) of a layout op's result from its operand's.
std::optional<std::vector<int>> ForwardLabels(const Instruction* op, const std::vector<int>& in) {
  if (op->opcode == Opcode::kTranspose) {
    std::vector<int> out(op->dimensions.size());
    for (size_t i = 0; i < out.size(); ++i) out[i] = in[static_cast<size_t>(op->dimensions[i])];
    return out;
  }
  if (op->opcode == Opcode::kReshape || op->opcode == Opcode::kBitcast) {
    auto map = SizeOneReshape(op->operand(0)->shape.dims(), op->shape.dims());
    if (!map) return std::nullopt;
    std::vector<int> out(map->size(), -1);
    for (size_t i = 0; i < out.size(); ++i) {
      if ((*map)[i] >= 0) out[i] = in[static_cast<size_t>((*map)[i])];
    }
    return out;
  }
  return in;  // elementwise
}

// The labels of operand `x` of `op` (a broadcast, layout or elementwise op) from op's labels.
std::optional<std::vector<int>> BackwardLabels(const Instruction* op, const std::vector<int>& out) {
  const Instruction* x = op->operand(0);
  std::vector<int> in(static_cast<size_t>(x->shape.rank()), -1);
  switch (op->opcode) {
    case Opcode::kBroadcast:
      for (size_t i = 0; i < op->dimensions.size(); ++i) in[i] = out[static_cast<size_t>(op->dimensions[i])];
      return in;
    case Opcode::kTranspose:
      for (size_t i = 0; i < op->dimensions.size(); ++i) in[static_cast<size_t>(op->dimensions[i])] = out[i];
      return in;
    case Opcode::kReshape:
    case Opcode::kBitcast: {
      auto map = SizeOneReshape(x->shape.dims(), op->shape.dims());
      if (!map) return std::nullopt;
      for (size_t i = 0; i < map->size(); ++i) {
        if ((*map)[i] >= 0) in[static_cast<size_t>((*map)[i])] = out[i];
      }
      return in;
    }
    default:
      return out;
  }
}

// Follows broadcasts and size-1 reshapes down from `x` to the reduce `r`; checks that x is r's
// result broadcast back along the reduced dim `kd` of a rank-`rank` value and nowhere else.
Status CheckBroadcastBack(const Instruction* x, const Instruction* r, int64_t kd,
                          std::set<const Instruction*>& core) {
  // Per dim of the current value: the dim of the reduce's result it holds, -1 for broadcast.
  std::vector<int> from(static_cast<size_t>(x->shape.rank()));
  for (size_t i = 0; i < from.size(); ++i) from[i] = static_cast<int>(i);
  const Instruction* top = x;
  std::vector<const Instruction*> path;
  while (x != r) {
    path.push_back(x);
    if (path.size() > 16) return Refuse("the softmax broadcasts its row statistic through too many ops");
    // `from` maps top's dims to x's dims; move it to x's operand.
    std::vector<int> next(from.size(), -1);
    if (x->opcode == Opcode::kBroadcast) {
      for (size_t t = 0; t < from.size(); ++t) {
        if (from[t] < 0) continue;
        auto it = std::find(x->dimensions.begin(), x->dimensions.end(), from[t]);
        next[t] = it == x->dimensions.end() ? -1 : static_cast<int>(it - x->dimensions.begin());
      }
    } else if (x->opcode == Opcode::kReshape || x->opcode == Opcode::kBitcast) {
      auto map = SizeOneReshape(x->operand(0)->shape.dims(), x->shape.dims());
      if (!map) return Refuse(Name(x) + " reshapes the softmax's row statistic across dims");
      for (size_t t = 0; t < from.size(); ++t) next[t] = from[t] < 0 ? -1 : (*map)[static_cast<size_t>(from[t])];
    } else {
      return Refuse("the softmax's row statistic passes through " + Name(x) + " (" +
                    std::string(hlo::OpcodeName(x->opcode)) + ")");
    }
    from = next;
    x = x->operand(0);
  }
  for (size_t d = 0; d < from.size(); ++d) {
    const int64_t dd = static_cast<int64_t>(d);
    const int want = dd == kd ? -1 : static_cast<int>(dd < kd ? dd : dd - 1);
    if (from[d] != want && top->shape.dim(dd) != 1) {
      return Refuse(Name(top) + " does not broadcast the row statistic back along the key dim only");
    }
  }
  core.insert(path.begin(), path.end());
  return Status();
}

// The reduce at the bottom of a broadcast/reshape chain.
const Instruction* ReduceUnder(const Instruction* x) {
  for (int n = 0; n < 16 && x; ++n) {
    if (x->opcode == Opcode::kReduce) return x;
    if (x->opcode != Opcode::kBroadcast && x->opcode != Opcode::kReshape && x->opcode != Opcode::kBitcast) return nullptr;
    x = x->operand(0);
  }
  return nullptr;
}

Status CheckRowReduce(const Instruction* r, const Instruction* of, int64_t kd, const char* kind,
                      double init) {
  if (!r || r->opcode != Opcode::kReduce || r->operand_count() != 2 || r->operand(0) != of) {
    return Refuse(std::string("the softmax's ") + kind + " is not a reduce of its input");
  }
  if (r->dimensions != std::vector<int64_t>{kd}) {
    return Refuse(std::string("the softmax's ") + kind + " " + Name(r) + " reduces other dims than the key dim");
  }
  auto reducer = ReducerKind(*r);
  if (!reducer.ok() || *reducer != (std::string(kind) == "max" ? "max" : "add")) {
    return Refuse(std::string("the softmax's ") + kind + " " + Name(r) + " does not apply " + kind);
  }
  if (!IsScalarConstant(r->operand(1)) || r->operand(1)->literal->GetDouble(0) != init) {
    return Refuse(std::string("the softmax's ") + kind + " " + Name(r) + " starts from another value than " +
                  (std::isinf(init) ? "-inf" : "0"));
  }
  return Status();
}

// Whether `x` reaches a dot through ops the score chain may hold.
bool ReachesDot(const Instruction* x, int depth = 0) {
  if (depth > 64) return false;
  if (x->opcode == Opcode::kDot) return true;
  if (IsLayout(x->opcode) || IsScoreUnary(x->opcode)) return ReachesDot(x->operand(0), depth + 1);
  if (IsScoreBinary(x->opcode)) return ReachesDot(x->operand(0), depth + 1) || ReachesDot(x->operand(1), depth + 1);
  if (x->opcode == Opcode::kSelect) return ReachesDot(x->operand(1), depth + 1) || ReachesDot(x->operand(2), depth + 1);
  return false;
}

// An affine form sum(coef[id] * position(id)) + c over integer positions.
struct Affine {
  std::map<int, int64_t> coef;
  int64_t c = 0;
};

struct MaskVal {
  std::string expr;
  std::optional<Affine> aff;
  // Set on a compare (and kept through ops that do not change values): its direction and
  // lhs - rhs.
  std::optional<std::pair<hlo::ComparisonDirection, Affine>> cmp;
};

// Translates a mask (a pred made of iotas and constants over the score's dims) into an
// expression over the block's positions. Shared by the matcher (a dry run) and the emitter.
struct MaskTranslator {
  int key_id = -1;
  std::set<int> query_free;   // qk-dot dim ids of q's free dims
  int used_query = -1;        // the q-free id the mask reads positions along
  int64_t bq = 8, bkv = 128;
  int num_batch = 0;          // qk-dot dim ids below this are batch dims
  std::set<const Instruction*> nodes;
  // Per-batch integers the mask reads (a sequence's length): scalar-prefetched into SMEM, read
  // at the step's flat batch index `bn`. The matcher appends; the emitter finds.
  std::vector<const Instruction*>* prefetch = nullptr;
  std::vector<std::vector<int>>* prefetch_labels = nullptr;
  bool may_add_prefetch = true;

  // `x` (labelled only by batch dims) as a prefetched scalar per batch index, or why not.
  Result<MaskVal> PrefetchLeaf(const Instruction* x, const std::vector<int>& labels) {
    for (int id : labels) {
      if (id >= num_batch) {
        return Refuse("the mask holds " + Name(x) + " (" + std::string(hlo::OpcodeName(x->opcode)) +
                      "), not a function of positions or of the batch index the emitter translates");
      }
    }
    if (x->shape.dtype() != DType::kS32 || !prefetch) {
      return Refuse("the mask reads " + Name(x) + ", a per-batch value that is not s32");
    }
    auto it = std::find(prefetch->begin(), prefetch->end(), x);
    size_t n = static_cast<size_t>(it - prefetch->begin());
    if (it == prefetch->end()) {
      if (!may_add_prefetch) return Internal("the mask's prefetched " + Name(x) + " is unknown");
      prefetch->push_back(x);
      prefetch_labels->push_back(labels);
    }
    MaskVal out;
    out.expr = "jnp.full((" + std::to_string(bq) + ", " + std::to_string(bkv) + "), pf" + std::to_string(n) +
               "_ref[bn], jnp.int32)";
    return out;
  }

  Result<MaskVal> Translate(const Instruction* x, const std::vector<int>& labels, int depth = 0) {
    if (depth > 32) return Refuse("the mask is too deep");
    nodes.insert(x);
    OpSite site;
    site.block_dims = {bq, bkv};
    site.in_kernel = true;
    const Opcode op = x->opcode;
    MaskVal out;
    if (IsScalarConstant(x)) {
      MK_ASSIGN_OR_RETURN(out.expr, ScalarConstantExpr(*x));
      if (hlo::IsInteger(x->shape.dtype())) out.aff = Affine{{}, x->literal->GetInt64(0)};
      return out;
    }
    if (op == Opcode::kBroadcast && x->operand(0)->shape.rank() == 0) {
      MK_ASSIGN_OR_RETURN(MaskVal c, Translate(x->operand(0), {}, depth + 1));
      MK_ASSIGN_OR_RETURN(out.expr, TranslateOp(*x, {c.expr}, site));
      out.aff = c.aff;
      return out;
    }
    if (op == Opcode::kBroadcast || IsLayout(op)) {
      auto in = BackwardLabels(x, labels);
      if (!in) return Refuse("the mask reshapes " + Name(x) + " across dims");
      return Translate(x->operand(0), *in, depth + 1);
    }
    if (op == Opcode::kIota) {
      const int id = labels.at(static_cast<size_t>(x->iota_dimension));
      MK_ASSIGN_OR_RETURN(std::string t, JnpDType(x->shape.dtype()));
      std::string pos;
      if (id < 0) {
        out.expr = "jnp.zeros((" + std::to_string(bq) + ", " + std::to_string(bkv) + "), " + t + ")";
        out.aff = Affine{};
        return out;
      }
      if (id == key_id) {
        pos = "kpos";
      } else if (query_free.count(id)) {
        if (used_query >= 0 && used_query != id) return Refuse("the mask reads positions along two query dims");
        used_query = id;
        pos = "qpos";
      } else {
        return Refuse("the mask " + Name(x) + " depends on a batch or head index");
      }
      out.expr = x->shape.dtype() == DType::kS32 ? pos : pos + ".astype(" + t + ")";
      out.aff = Affine{{{id, 1}}, 0};
      return out;
    }
    const bool known = op == Opcode::kAdd || op == Opcode::kSubtract || op == Opcode::kMultiply ||
                       op == Opcode::kCompare || op == Opcode::kAnd || op == Opcode::kOr ||
                       op == Opcode::kNot || op == Opcode::kSelect || op == Opcode::kConvert ||
                       op == Opcode::kMaximum || op == Opcode::kMinimum;
    if (!known) {
      nodes.erase(x);  // computed where it is (glue, or an input), not recomputed in the body
      return PrefetchLeaf(x, labels);
    }
    std::vector<MaskVal> args;
    std::vector<std::string> exprs;
    for (const Instruction* o : x->operands) {
      MK_ASSIGN_OR_RETURN(MaskVal a, Translate(o, labels, depth + 1));
      exprs.push_back(a.expr);
      args.push_back(std::move(a));
    }
    MK_ASSIGN_OR_RETURN(out.expr, TranslateOp(*x, exprs, site));
    const bool integral = hlo::IsInteger(x->shape.dtype());
    if (integral && (op == Opcode::kAdd || op == Opcode::kSubtract) && args[0].aff && args[1].aff) {
      Affine a = *args[0].aff;
      const int64_t sign = op == Opcode::kAdd ? 1 : -1;
      for (const auto& [id, c] : args[1].aff->coef) a.coef[id] += sign * c;
      a.c += sign * args[1].aff->c;
      out.aff = a;
    } else if (integral && op == Opcode::kMultiply && args[0].aff && args[1].aff &&
               (args[0].aff->coef.empty() || args[1].aff->coef.empty())) {
      const Affine& k = args[0].aff->coef.empty() ? *args[0].aff : *args[1].aff;
      Affine a = args[0].aff->coef.empty() ? *args[1].aff : *args[0].aff;
      for (auto& [id, c] : a.coef) c *= k.c;
      a.c *= k.c;
      out.aff = a;
    } else if (op == Opcode::kCompare && x->direction && args[0].aff && args[1].aff &&
               hlo::IsInteger(x->operand(0)->shape.dtype())) {
      Affine d = *args[0].aff;
      for (const auto& [id, c] : args[1].aff->coef) d.coef[id] -= c;
      d.c -= args[1].aff->c;
      out.cmp = std::make_pair(*x->direction, d);
    }
    return out;
  }
};

// The offset of `k - q <= offset` when `cmp` (lhs - rhs DIR 0) is that form.
std::optional<int64_t> CausalOffset(const std::pair<hlo::ComparisonDirection, Affine>& cmp, int q_id,
                                    int k_id) {
  const Affine& d = cmp.second;
  for (const auto& [id, c] : d.coef) {
    if (c != 0 && id != q_id && id != k_id) return std::nullopt;
  }
  auto coef = [&](int id) {
    auto it = d.coef.find(id);
    return it == d.coef.end() ? int64_t{0} : it->second;
  };
  const int64_t a = coef(q_id), b = coef(k_id);
  using D = hlo::ComparisonDirection;
  if (a == -1 && b == 1) {  // k - q + c DIR 0
    if (cmp.first == D::kLe) return -d.c;
    if (cmp.first == D::kLt) return -d.c - 1;
  }
  if (a == 1 && b == -1) {  // q - k + c DIR 0
    if (cmp.first == D::kGe) return d.c;
    if (cmp.first == D::kGt) return d.c - 1;
  }
  return std::nullopt;
}

// GQA written as a repeat of k or v over the query heads (jnp.repeat: broadcast a group dim in
// after the kv-head dim, reshape the two into one head dim): the group size and the value
// repeated, when `op` is that and `head` is the merged dim.
struct KvRepeat {
  const Instruction* source = nullptr;
  int64_t group = 1;
  const Instruction* broadcast = nullptr;
};
std::optional<KvRepeat> RepeatedOverHeads(const Instruction* op, int64_t head) {
  if (op->opcode != Opcode::kReshape || op->operand(0)->opcode != Opcode::kBroadcast) return std::nullopt;
  const Instruction* bc = op->operand(0);
  const auto& to = op->shape.dims();
  const auto& from = bc->shape.dims();
  const size_t a = static_cast<size_t>(head);
  if (from.size() != to.size() + 1 || a + 1 >= from.size()) return std::nullopt;
  for (size_t d = 0; d < a; ++d) if (from[d] != to[d]) return std::nullopt;
  for (size_t d = a + 1; d < to.size(); ++d) if (from[d + 1] != to[d]) return std::nullopt;
  if (from[a] * from[a + 1] != to[a]) return std::nullopt;
  // Every dim of the broadcast but a + 1 (the group) comes from its operand, in order.
  std::vector<int64_t> want;
  for (int64_t d = 0; d < static_cast<int64_t>(from.size()); ++d) if (d != static_cast<int64_t>(a + 1)) want.push_back(d);
  if (bc->dimensions != want) return std::nullopt;
  return KvRepeat{bc->operand(0), from[a + 1], bc};
}

Result<AttentionMatch> Match(const Instruction* pv, bool* softmax_seen, int paged) {
  *softmax_seen = false;
  AttentionMatch m;
  if (!pv || pv->opcode != Opcode::kDot || !pv->dot_dims) return Refuse("not a dot");
  m.pv = pv;
  // P: the operand that is a softmax's divide (through converts).
  int pi = -1;
  const Instruction* div = nullptr;
  std::vector<const Instruction*> p_path;
  for (int i = 0; i < 2 && pi < 0; ++i) {
    const Instruction* x = pv->operand(static_cast<size_t>(i));
    std::vector<const Instruction*> path;
    while (x->opcode == Opcode::kConvert || x->opcode == Opcode::kCopy) {
      path.push_back(x);
      x = x->operand(0);
    }
    if (x->opcode == Opcode::kDivide) {
      pi = i;
      div = x;
      p_path = path;
    }
  }
  if (pi < 0) return Refuse("neither operand of the dot is a softmax's division");
  const Instruction* e = div->operand(0);
  if (e->opcode != Opcode::kExp) return Refuse(Name(div) + " does not divide an exponential");
  const Instruction* r_sum = ReduceUnder(div->operand(1));
  const Instruction* x = e->operand(0);
  if (x->opcode != Opcode::kSubtract) return Refuse(Name(e) + " is not the exponential of a difference");
  const Instruction* s = x->operand(0);
  const Instruction* r_max = ReduceUnder(x->operand(1));
  if (!r_max || r_max->dimensions.size() != 1) return Refuse("the softmax does not subtract a one-dim row max");
  *softmax_seen = true;
  const int64_t kd = r_max->dimensions[0];
  MK_RETURN_IF_ERROR(CheckRowReduce(r_max, s, kd, "max", -INFINITY));
  MK_RETURN_IF_ERROR(CheckRowReduce(r_sum, e, kd, "sum", 0.0));
  MK_RETURN_IF_ERROR(CheckBroadcastBack(x->operand(1), r_max, kd, m.core));
  MK_RETURN_IF_ERROR(CheckBroadcastBack(div->operand(1), r_sum, kd, m.core));
  if (s->shape.dtype() != DType::kF32) {
    return Refuse("the softmax runs in " + std::string(hlo::DTypeName(s->shape.dtype())) +
                  "; the online softmax would round differently (f32 only)");
  }
  m.score_dtype = s->shape.dtype();
  m.p_dtype = pv->operand(static_cast<size_t>(pi))->shape.dtype();
  for (const Instruction* c : {r_max, r_sum, x, e, div, pv}) m.core.insert(c);
  m.core.insert(p_path.begin(), p_path.end());
  std::set<const Instruction*> body_values = {r_max->operand(1), r_sum->operand(1)};

  // The score chain, from S down to the qk dot.
  std::vector<const Instruction*> chain;
  std::vector<int> chain_operand;
  const Instruction* cur = s;
  while (cur->opcode != Opcode::kDot) {
    if (chain.size() > 64) return Refuse("the score chain is too long");
    chain.push_back(cur);
    m.core.insert(cur);
    const Opcode op = cur->opcode;
    if (IsLayout(op) || IsScoreUnary(op)) {
      chain_operand.push_back(0);
      cur = cur->operand(0);
      continue;
    }
    std::vector<int> reach;
    if (IsScoreBinary(op)) {
      for (int i = 0; i < 2; ++i) if (ReachesDot(cur->operand(static_cast<size_t>(i)))) reach.push_back(i);
    } else if (op == Opcode::kSelect) {
      for (int i = 1; i < 3; ++i) if (ReachesDot(cur->operand(static_cast<size_t>(i)))) reach.push_back(i);
    } else {
      return Refuse("the scores pass through " + Name(cur) + " (" + std::string(hlo::OpcodeName(op)) + ")");
    }
    if (reach.size() != 1) return Refuse(Name(cur) + " combines two dot products");
    chain_operand.push_back(reach[0]);
    cur = cur->operand(static_cast<size_t>(reach[0]));
  }
  const Instruction* qk = cur;
  m.qk = qk;
  m.core.insert(qk);
  std::reverse(chain.begin(), chain.end());
  std::reverse(chain_operand.begin(), chain_operand.end());

  // The qk dot's dims: batch, lhs free, rhs free.
  const hlo::DotDimensions& dd = *qk->dot_dims;
  if (dd.lhs_contracting.size() != 1 || dd.rhs_contracting.size() != 1) {
    return Refuse(Name(qk) + " contracts more than one dim");
  }
  auto free_dims = [](const Instruction* op, const std::vector<int64_t>& batch, const std::vector<int64_t>& contr) {
    std::vector<int64_t> f;
    for (int64_t d = 0; d < op->shape.rank(); ++d) {
      if (std::find(batch.begin(), batch.end(), d) == batch.end() &&
          std::find(contr.begin(), contr.end(), d) == contr.end()) f.push_back(d);
    }
    return f;
  };
  const auto lfree = free_dims(qk->operand(0), dd.lhs_batch, dd.lhs_contracting);
  const auto rfree = free_dims(qk->operand(1), dd.rhs_batch, dd.rhs_contracting);
  const int nbatch = static_cast<int>(dd.lhs_batch.size());
  const int nl = static_cast<int>(lfree.size());

  // Labels forward along the chain.
  std::vector<std::vector<int>> labels_at;  // per chain node: its dims' qk ids
  std::vector<int> lab(static_cast<size_t>(qk->shape.rank()));
  for (size_t i = 0; i < lab.size(); ++i) lab[i] = static_cast<int>(i);
  for (const Instruction* c : chain) {
    auto next = ForwardLabels(c, lab);
    if (!next) return Refuse(Name(c) + " reshapes the scores across dims");
    lab = *next;
    labels_at.push_back(lab);
  }
  const std::vector<int> s_labels = lab;
  const int kid = s_labels[static_cast<size_t>(kd)];
  if (kid < nbatch) return Refuse("the softmax reduces over a batch dim of the q.k product");
  const bool k_is_lhs = kid < nbatch + nl;
  const Instruction* qop = qk->operand(k_is_lhs ? 1 : 0);
  const Instruction* kop = qk->operand(k_is_lhs ? 0 : 1);
  const auto& qfree = k_is_lhs ? rfree : lfree;
  const auto& kfree = k_is_lhs ? lfree : rfree;
  if (kfree.size() != 1) return Refuse("k has more than one free dim in " + Name(qk));
  const int q_first_id = k_is_lhs ? nbatch + nl : nbatch;
  std::set<int> qfree_ids;
  for (int i = 0; i < static_cast<int>(qfree.size()); ++i) qfree_ids.insert(q_first_id + i);
  // Every qk dim must survive to S (a size-1 dim may vanish).
  for (int id = 0; id < qk->shape.rank(); ++id) {
    if (std::find(s_labels.begin(), s_labels.end(), id) == s_labels.end() && qk->shape.dim(id) != 1) {
      return Refuse("a dim of " + Name(qk) + " does not reach the softmax");
    }
  }

  // Score steps, sides and masks.
  MaskTranslator mt;
  mt.key_id = kid;
  mt.query_free = qfree_ids;
  mt.num_batch = nbatch;
  mt.prefetch = &m.prefetch;
  mt.prefetch_labels = &m.prefetch_labels;
  int mask_steps = 0, last_value_step = -1, mask_step = -1;
  double fill = 0;
  std::optional<std::pair<hlo::ComparisonDirection, Affine>> mask_cmp;
  for (size_t n = 0; n < chain.size(); ++n) {
    const Instruction* c = chain[n];
    if (IsLayout(c->opcode)) continue;
    ScoreStep st;
    st.op = c;
    st.chain_operand = chain_operand[n];
    st.sides.assign(c->operand_count(), ScoreStep::Side::kNone);
    st.array.assign(c->operand_count(), nullptr);
    st.array_labels.assign(c->operand_count(), {});
    // The labels of this node's operands: the chain operand's are the previous node's; a
    // side has this node's shape and labels.
    const std::vector<int>& here = labels_at[n];
    for (size_t o = 0; o < c->operand_count(); ++o) {
      if (static_cast<int>(o) == st.chain_operand) continue;
      const Instruction* side = c->operand(o);
      if (c->opcode == Opcode::kSelect && o == 0) {
        MK_ASSIGN_OR_RETURN(MaskVal mv, mt.Translate(side, here));
        st.sides[o] = ScoreStep::Side::kMask;
        st.array[o] = side;
        st.array_labels[o] = here;
        ++mask_steps;
        mask_step = static_cast<int>(m.score.size());
        mask_cmp = mv.cmp;
        continue;
      }
      if (IsScalarConstBroadcast(side)) {
        st.sides[o] = ScoreStep::Side::kScalar;
        st.array[o] = side;
        body_values.insert(side);
        body_values.insert(side->operand(0));
        if (c->opcode == Opcode::kSelect) fill = side->operand(0)->literal->GetDouble(0);
        continue;
      }
      if (c->opcode == Opcode::kSelect) return Refuse(Name(c) + " selects a value other than a constant for masked scores");
      st.sides[o] = ScoreStep::Side::kArray;
      st.array[o] = side;
      st.array_labels[o] = here;
    }
    m.score.push_back(st);
    last_value_step = static_cast<int>(m.score.size()) - 1;
  }
  body_values.insert(mt.nodes.begin(), mt.nodes.end());

  // Sq: the query dim the mask reads, else q's largest free dim (the last of equals).
  int sq_id = mt.used_query;
  if (sq_id < 0) {
    int64_t best = -1;
    for (int id : qfree_ids) {
      if (qk->shape.dim(id) >= best) {
        best = qk->shape.dim(id);
        sq_id = id;
      }
    }
  }
  if (sq_id < 0) return Refuse("q has no free dim in " + Name(qk));
  m.sq_id = sq_id;
  m.sk_id = kid;
  for (int i = 0; i < nbatch; ++i) {
    m.batch_ids.push_back(i);
    m.batch_sizes.push_back(qk->shape.dim(i));
  }
  for (int id : qfree_ids) {
    if (id == sq_id) continue;
    m.group_ids.push_back(id);
    m.group_sizes.push_back(qk->shape.dim(id));
  }
  for (int64_t b : m.batch_sizes) m.nb *= b;
  for (int64_t g : m.group_sizes) m.g *= g;
  m.sq = qk->shape.dim(sq_id);
  m.sk = qk->shape.dim(kid);
  const auto& qb = k_is_lhs ? dd.rhs_batch : dd.lhs_batch;
  const auto& kb = k_is_lhs ? dd.lhs_batch : dd.rhs_batch;
  const int64_t qc = (k_is_lhs ? dd.rhs_contracting : dd.lhs_contracting)[0];
  const int64_t kc = (k_is_lhs ? dd.lhs_contracting : dd.rhs_contracting)[0];
  m.d = qop->shape.dim(qc);
  m.q = qop;
  m.k = kop;
  m.q_perm.assign(qb.begin(), qb.end());
  for (int id : m.group_ids) m.q_perm.push_back(qfree[static_cast<size_t>(id - q_first_id)]);
  m.q_perm.push_back(qfree[static_cast<size_t>(sq_id - q_first_id)]);
  m.q_perm.push_back(qc);
  m.k_perm.assign(kb.begin(), kb.end());
  m.k_perm.push_back(kfree[0]);
  m.k_perm.push_back(kc);

  // Causal block skipping: one mask, the last step that changes values, keeping the score where
  // the pred holds, `k - q <= off` with off >= 0 (every row sees key 0, so every row has a
  // real maximum), and a fill so negative that exp(fill - max) is exactly 0 in f32.
  if (mask_steps == 1 && mask_step == last_value_step && mask_cmp &&
      m.score[static_cast<size_t>(mask_step)].chain_operand == 1 && (std::isinf(fill) ? fill < 0 : fill <= -1e20)) {
    auto off = CausalOffset(*mask_cmp, sq_id, kid);
    if (off && *off >= 0) m.causal = CausalMask{*off};
  }

  // The pv dot: P's dims and v's.
  const hlo::DotDimensions& pd = *pv->dot_dims;
  const auto& p_batch = pi == 0 ? pd.lhs_batch : pd.rhs_batch;
  const auto& p_contr = pi == 0 ? pd.lhs_contracting : pd.rhs_contracting;
  const auto& v_batch = pi == 0 ? pd.rhs_batch : pd.lhs_batch;
  const auto& v_contr = pi == 0 ? pd.rhs_contracting : pd.lhs_contracting;
  const Instruction* vop = pv->operand(pi == 0 ? 1 : 0);
  m.v = vop;
  if (p_contr != std::vector<int64_t>{kd} || v_contr.size() != 1) {
    return Refuse(Name(pv) + " does not contract P over the softmax's key dim alone");
  }
  std::map<int, int64_t> v_dim_of_batch;  // batch id -> v's dim
  for (size_t j = 0; j < p_batch.size(); ++j) {
    const int id = s_labels[static_cast<size_t>(p_batch[j])];
    if (id < 0 || id >= nbatch) return Refuse(Name(pv) + " batches P over a dim that is not a batch dim of the q.k product");
    v_dim_of_batch[id] = v_batch[j];
  }
  for (int id = 0; id < nbatch; ++id) {
    if (!v_dim_of_batch.count(id)) return Refuse(Name(pv) + " does not keep every batch dim of the q.k product");
  }
  const auto pfree = free_dims(pv->operand(static_cast<size_t>(pi)), p_batch, p_contr);
  const auto vfree = free_dims(vop, v_batch, v_contr);
  for (int id : qfree_ids) {
    bool found = false;
    for (int64_t f : pfree) found = found || s_labels[static_cast<size_t>(f)] == id;
    if (!found) return Refuse(Name(pv) + " does not keep every query dim of P");
  }
  int64_t v_value_dim = -1;
  for (int64_t f : vfree) {
    if (vop->shape.dim(f) == 1) continue;
    if (v_value_dim >= 0) return Refuse("v has more than one free dim in " + Name(pv));
    v_value_dim = f;
  }
  if (v_value_dim < 0 && !vfree.empty()) v_value_dim = vfree.back();
  if (v_value_dim < 0) return Refuse("v has no value dim in " + Name(pv));
  if (vop->shape.dim(v_contr[0]) != m.sk) return Refuse("v's key dim differs from k's");
  m.dv = vop->shape.dim(v_value_dim);
  for (int id = 0; id < nbatch; ++id) m.v_perm.push_back(v_dim_of_batch[id]);
  m.v_perm.push_back(v_contr[0]);
  m.v_perm.push_back(v_value_dim);
  for (int64_t f : vfree) if (f != v_value_dim) m.v_perm.push_back(f);

  // k and v repeated over the query heads (the head: the last batch dim, so that query head n
  // reads kv head n / group): read the unrepeated values, never the copies.
  if (nbatch > 0) {
    auto kr = RepeatedOverHeads(m.k, kb.back());
    auto vr = RepeatedOverHeads(m.v, v_dim_of_batch[nbatch - 1]);
    if (kr && vr && kr->group == vr->group && kr->group > 1) {
      m.kv_group = kr->group;
      m.k = kr->source;
      m.v = vr->source;
      for (const Instruction* c : {qk->operand(k_is_lhs ? 0 : 1), kr->broadcast,
                                   pv->operand(pi == 0 ? 1 : 0), vr->broadcast}) m.core.insert(c);
    }
  }

  // k and v gathered from a page pool through a page table: read in place (paged_kv.h).
  if (m.kv_group == 1) {
    for (auto [op, perm, slot, bit] : {std::tuple{m.k, &m.k_perm, &m.k_paged, kPageK}, std::tuple{m.v, &m.v_perm, &m.v_paged, kPageV}}) {
      if (!(paged & bit)) continue;
      auto r = MatchPagedKv(op, *perm, m.batch_sizes);
      if (!r.ok()) {
        m.paged_refused.push_back(r.status().message());
      } else if (r->has_value()) {
        *slot = std::move(**r);
        m.core.insert((*slot)->core.begin(), (*slot)->core.end());
      }
    }
  }

  // The pv result's dims, as axes of O expanded to [batch.., group.., Sq, Dv].
  const int ng = static_cast<int>(m.group_ids.size());
  auto axis_of_label = [&](int id) -> int {
    if (id < 0) return -1;
    if (id < nbatch) return id;
    if (id == sq_id) return nbatch + ng;
    for (int t = 0; t < ng; ++t) if (m.group_ids[static_cast<size_t>(t)] == id) return nbatch + t;
    return -1;
  };
  std::vector<int> out_axes;
  for (size_t j = 0; j < p_batch.size(); ++j) out_axes.push_back(axis_of_label(s_labels[static_cast<size_t>(p_batch[j])]));
  const auto& lhs_free_pv = pi == 0 ? pfree : vfree;
  const auto& rhs_free_pv = pi == 0 ? vfree : pfree;
  auto push_free = [&](const std::vector<int64_t>& fr, bool is_p) {
    for (int64_t f : fr) {
      if (is_p) out_axes.push_back(axis_of_label(s_labels[static_cast<size_t>(f)]));
      else out_axes.push_back(f == v_value_dim ? nbatch + ng + 1 : -1);
    }
  };
  push_free(lhs_free_pv, pi == 0);
  push_free(rhs_free_pv, pi != 0);
  for (int a : out_axes) {
    if (a >= 0) m.out_perm.push_back(a);
  }
  std::vector<int64_t> sorted = m.out_perm;
  std::sort(sorted.begin(), sorted.end());
  bool perm = true;
  for (size_t a = 0; a < sorted.size(); ++a) perm = perm && sorted[a] == static_cast<int64_t>(a);
  if (!perm || static_cast<int>(m.out_perm.size()) != nbatch + ng + 2) {
    return Refuse(Name(pv) + "'s result does not hold every batch, query and value dim once");
  }
  m.mask_only = std::move(body_values);
  for (const Instruction* c : m.core) m.mask_only.erase(c);
  return m;
}

}  // namespace

Result<AttentionMatch> MatchAttentionAt(const Instruction* pv, int paged) {
  bool seen = false;
  return Match(pv, &seen, paged);
}

Result<std::vector<std::string>> ScoreLines(const AttentionMatch& m, int64_t bq, int64_t bkv,
                                            const std::map<const Instruction*, std::string>& side_refs) {
  std::vector<std::string> lines;
  MaskTranslator mt;
  mt.key_id = m.sk_id;
  mt.query_free = {m.sq_id};
  mt.num_batch = static_cast<int>(m.batch_ids.size());
  std::vector<const Instruction*> prefetch = m.prefetch;
  std::vector<std::vector<int>> prefetch_labels = m.prefetch_labels;
  mt.prefetch = &prefetch;
  mt.prefetch_labels = &prefetch_labels;
  mt.may_add_prefetch = false;
  mt.bq = bq;
  mt.bkv = bkv;
  OpSite site;
  site.block_dims = {bq, bkv};
  site.in_kernel = true;
  for (const ScoreStep& st : m.score) {
    std::vector<std::string> args;
    for (size_t o = 0; o < st.op->operand_count(); ++o) {
      if (static_cast<int>(o) == st.chain_operand) {
        args.push_back("s");
        continue;
      }
      switch (st.sides[o]) {
        case ScoreStep::Side::kScalar: {
          const Instruction* b = st.array[o];
          MK_ASSIGN_OR_RETURN(std::string c, ScalarConstantExpr(*b->operand(0)));
          MK_ASSIGN_OR_RETURN(std::string e, TranslateOp(*b, {c}, site));
          args.push_back(e);
          break;
        }
        case ScoreStep::Side::kArray: {
          auto it = side_refs.find(st.array[o]);
          if (it == side_refs.end()) return Internal("no block for the score's side %" + st.array[o]->name);
          args.push_back(it->second);
          break;
        }
        case ScoreStep::Side::kMask: {
          MK_ASSIGN_OR_RETURN(MaskVal mv, mt.Translate(st.array[o], st.array_labels[o]));
          args.push_back(mv.expr);
          break;
        }
        case ScoreStep::Side::kNone:
          return Internal("a score step without its operand");
      }
    }
    MK_ASSIGN_OR_RETURN(std::string e, TranslateOp(*st.op, args, site));
    lines.push_back("s = " + e + "  # " + OneLineText(st.op->name));
  }
  return lines;
}

AttentionScan FindAttention(const analysis::FusionPlan& plan) {
  AttentionScan scan;
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
  std::set<const Instruction*> kernel_outputs;
  for (const auto& k : plan.kernels) kernel_outputs.insert(k.outputs.begin(), k.outputs.end());
  std::set<size_t> taken;
  const Instruction* root = entry.root();

  // Places a match in the plan, or says why not (in `why`).
  auto place = [&](const Instruction* dot, AttentionMatch&& mm, std::vector<std::string>& why) -> std::optional<PlannedAttention> {
    const AttentionMatch* m = &mm;
    auto refuse = [&](const std::string& r) { why.push_back(Name(dot) + ": " + r); };
    for (const Instruction* c : m->core) {
      if (c == dot) continue;
      bool ok = c != root;
      for (const Instruction* u : users[c]) ok = ok && m->core.count(u);
      if (!ok) {
        refuse(Name(c) + " is used outside the attention (the flash kernel never materializes it)");
        return std::nullopt;
      }
    }
    PlannedAttention pa;
    std::set<size_t> ks;
    for (const Instruction* c : m->core) {
      auto it = kernel_of.find(c);
      if (it != kernel_of.end()) ks.insert(it->second);
    }
    // Kernels that only compute what the body recomputes (a mask's iotas and compares).
    const auto recomputed = [&](const Instruction* i) {
      if (!m->mask_only.count(i)) return false;
      for (const Instruction* u : users[i]) {
        if (!m->core.count(u) && !m->mask_only.count(u)) return false;
      }
      return i != root;
    };
    for (size_t k = 0; k < plan.kernels.size(); ++k) {
      if (ks.count(k)) continue;
      bool all = !plan.kernels[k].instructions.empty();
      for (const Instruction* i : plan.kernels[k].instructions) all = all && recomputed(i);
      if (all) ks.insert(k);
    }
    for (size_t k : ks) {
      if (taken.count(k)) {
        refuse("a kernel it needs is part of another attention");
        return std::nullopt;
      }
    }
    pa.kernels.assign(ks.begin(), ks.end());
    pa.anchor = pa.kernels.back();
    if (kernel_of[dot] != pa.anchor) {
      refuse("the p.v dot's kernel is not the last of the kernels it replaces");
      return std::nullopt;
    }
    CallBoundary boundary = BoundaryOf(plan, pa.kernels, pa.anchor, users, kernel_of);
    pa.inputs = std::move(boundary.inputs);
    pa.outputs = std::move(boundary.outputs);
    for (const Instruction* o : boundary.used_before_anchor) {
      refuse(Name(o) + " is used by a kernel that runs before the attention's last kernel");
    }
    if (!boundary.used_before_anchor.empty()) return std::nullopt;
    for (size_t k : pa.kernels) {
      for (const Instruction* i : plan.kernels[k].instructions) {
        if (m->core.count(i) || recomputed(i)) continue;
        if (!IsTranslatable(i->opcode)) {
          refuse(Name(i) + " (" + std::string(hlo::OpcodeName(i->opcode)) + ") would run in glue and has no jnp form");
          return std::nullopt;
        }
        pa.glue.push_back(i);
      }
    }
    // A prefetched value (a per-batch mask value, a page table) must be at hand: an input of the
    // call, glue before it, or recomputed in glue from values that are materialized before the
    // call (entry parameters, outputs of earlier kernels). Recomputing is sound: the values are
    // pure functions of those, and only small, cheap ops are recomputed.
    std::set<const Instruction*> at_hand(pa.inputs.begin(), pa.inputs.end());
    at_hand.insert(pa.glue.begin(), pa.glue.end());
    std::set<const Instruction*> recomputing;
    const std::set<size_t> replaced(pa.kernels.begin(), pa.kernels.end());
    auto materialized = [&](const Instruction* x) {
      if (x->opcode == Opcode::kParameter) return true;
      auto it = kernel_of.find(x);
      if (it == kernel_of.end()) return x->opcode == Opcode::kConstant;  // the workload names it
      return it->second < pa.anchor && !replaced.count(it->second) && kernel_outputs.count(x) > 0;
    };
    std::function<bool(const Instruction*, bool)> need = [&](const Instruction* x, bool leaf) -> bool {
      if ((leaf && at_hand.count(x)) || recomputing.count(x) ||
          std::find(pa.inputs.begin(), pa.inputs.end(), x) != pa.inputs.end()) return true;
      if (materialized(x)) {
        pa.inputs.push_back(x);
        return true;
      }
      const Opcode op = x->opcode;
      if (!x->shape.is_array() || x->shape.num_elements() > (int64_t{1} << 16) || pa.recomputed.size() >= 64 ||
          !IsTranslatable(op) || op == Opcode::kDot || op == Opcode::kConvolution || op == Opcode::kGather ||
          op == Opcode::kScatter || op == Opcode::kReduceWindow || op == Opcode::kTuple ||
          op == Opcode::kGetTupleElement) {
        return false;
      }
      for (const Instruction* o : x->operands) {
        if (!need(o, false)) return false;
      }
      recomputing.insert(x);
      pa.recomputed.push_back(x);
      return true;
    };
    std::vector<const Instruction*> leaves = m->prefetch;
    for (const auto* pg : {&m->k_paged, &m->v_paged}) {
      if (!pg->has_value()) continue;
      leaves.push_back((*pg)->index);
      if ((*pg)->valid) leaves.push_back((*pg)->valid);
    }
    for (const Instruction* leaf : leaves) {
      if (!need(leaf, true)) {
        refuse("the prefetched value " + Name(leaf) +
               " is computed inside another kernel and cannot be recomputed in glue (too large, or from an op only a kernel computes)");
        return std::nullopt;
      }
    }
    pa.match = std::move(mm);
    return pa;
  };

  for (size_t kk = 0; kk < plan.kernels.size(); ++kk) {
    for (const Instruction* dot : plan.kernels[kk].instructions) {
      if (dot->opcode != Opcode::kDot) continue;
      bool seen = false;
      auto m = Match(dot, &seen, kPageK | kPageV);
      if (!m.ok()) {
        if (seen) scan.refused.push_back(Name(dot) + ": " + m.status().message());
        continue;
      }
      const int paged = (m->k_paged ? kPageK : 0) | (m->v_paged ? kPageV : 0);
      std::vector<std::string> why;
      std::optional<PlannedAttention> pa = place(dot, std::move(*m), why);
      // Not placeable with k/v read through their page tables (a gathered cache used elsewhere):
      // try paging fewer of them (the others gathered in glue), and say why.
      for (int fewer : {kPageK, kPageV, 0}) {
        if (pa || !paged || (fewer & ~paged) || fewer == paged) continue;
        auto again = Match(dot, &seen, fewer);
        std::vector<std::string> why_again;
        if (again.ok()) pa = place(dot, std::move(*again), why_again);
        if (pa) {
          for (const auto& w : why) pa->match.paged_refused.push_back("not read through its page table: " + w);
        } else if (fewer == 0) {
          why.insert(why.end(), why_again.begin(), why_again.end());
        }
      }
      if (!pa) {
        scan.refused.insert(scan.refused.end(), why.begin(), why.end());
        continue;
      }
      taken.insert(pa->kernels.begin(), pa->kernels.end());
      scan.found.push_back(std::move(*pa));
    }
  }
  return scan;
}

}  // namespace mk::codegen::pallas
