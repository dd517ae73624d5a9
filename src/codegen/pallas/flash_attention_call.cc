#include "codegen/pallas/flash_attention_call.h"

#include <algorithm>
#include <sstream>

#include "codegen/pallas/jnp_ops.h"
#include "codegen/pallas/block_plan.h"
#include "codegen/pallas/pallas_space.h"
#include "target/tpu_perf_model.h"

namespace mk::codegen::pallas {

using hlo::Instruction;
using hlo::Opcode;

namespace {

int64_t RoundUp(int64_t v, int64_t m) { return (v + m - 1) / m * m; }


int64_t Bytes(const Instruction* i) { return hlo::DTypeByteSize(i->shape.dtype()); }

// The array sides of the score chain (biases), each passed as an [NB, G, Sq, Sk] input.
std::vector<const Instruction*> ArraySides(const AttentionMatch& m) {
  std::vector<const Instruction*> out;
  for (const ScoreStep& st : m.score) {
    for (size_t o = 0; o < st.sides.size(); ++o) {
      if (st.sides[o] == ScoreStep::Side::kArray &&
          std::find(out.begin(), out.end(), st.array[o]) == out.end()) out.push_back(st.array[o]);
    }
  }
  return out;
}

// Per dim of an array side, its qk-dot dim (-1: size 1).
std::vector<int> SideLabels(const AttentionMatch& m, const Instruction* side) {
  for (const ScoreStep& st : m.score) {
    for (size_t o = 0; o < st.sides.size(); ++o) {
      if (st.array[o] == side) return st.array_labels[o];
    }
  }
  return {};
}

// Pages a paged k/v block of `bkv` keys reads per step.
int64_t PagesPerStep(const PagedKv& p, int64_t bkv) { return bkv / p.page; }

// VMEM of one k/v block of `bkv` keys and `cols` values: one block, or its pages (each padded to
// whole tiles) plus the block the body concatenates them into.
int64_t KvBlockVmem(const std::optional<PagedKv>& p, int64_t bkv, int64_t cols, int64_t elem, int64_t* copy) {
  if (!p) return TiledBytes({bkv, cols}, elem);
  *copy += TiledBytes({bkv, cols}, elem);
  return PagesPerStep(*p, bkv) * TiledBytes({p->page, cols}, elem);
}

// VMEM at blocks (bq, bkv): every block twice (double buffering), the scratch, and the f32
// score and probability blocks the body holds.
int64_t AttentionVmem(const AttentionMatch& m, int64_t bq, int64_t bkv) {
  int64_t copies = 0;
  int64_t t = 2 * (TiledBytes({bq, m.d}, Bytes(m.q)) + KvBlockVmem(m.k_paged, bkv, m.d, Bytes(m.k), &copies) +
                   KvBlockVmem(m.v_paged, bkv, m.dv, Bytes(m.v), &copies) + TiledBytes({bq, m.dv}, Bytes(m.pv)));
  t += copies;
  for (const Instruction* s : ArraySides(m)) t += 2 * TiledBytes({bq, bkv}, Bytes(s));
  t += 2 * TiledBytes({bq, 1}, 4) + TiledBytes({bq, m.dv}, 4);  // m, l, acc
  t += 2 * TiledBytes({bq, bkv}, 4);                       // s and p
  return t;
}

struct AttentionSpace {
  std::vector<int64_t> bq, bkv;
  std::string reason;  // non-empty: nothing fits
};

AttentionSpace Domains(const AttentionMatch& m, const target::Target& target) {
  AttentionSpace s;
  for (int64_t b = 1; b <= m.sq; ++b) {
    if (m.sq % b == 0 && (b % 8 == 0 || b == m.sq)) s.bq.push_back(b);
  }
  // bkv is the q.k matmul's N and the p.v matmul's K (MXU side), the second-to-last dim of the
  // k/v blocks and the last of a bias block (128).
  const int64_t side = std::max<int64_t>(128, target.mxu_dim);
  for (int64_t b = 1; b <= m.sk; ++b) {
    if (m.sk % b == 0 && (b % side == 0 || b == m.sk)) s.bkv.push_back(b);
  }
  // Paged k/v: whole pages per step (one BlockSpec input per page), at most kMaxPages of them
  // unless no block is that small.
  constexpr int64_t kMaxPages = 64;
  for (const auto* p : {&m.k_paged, &m.v_paged}) {
    if (!p->has_value()) continue;
    std::erase_if(s.bkv, [&](int64_t b) { return b % (*p)->page != 0; });
    if (!s.bkv.empty() && s.bkv.front() / (*p)->page <= kMaxPages) {
      std::erase_if(s.bkv, [&](int64_t b) { return b / (*p)->page > kMaxPages; });
    }
  }
  if (s.bkv.empty()) {
    s.reason = "no key block is a whole number of pages";
    return s;
  }
  s.reason = FitBlocksToVmem({&s.bq, &s.bkv}, VmemBudget(target),
                             [&](const std::vector<int64_t>& b) { return AttentionVmem(m, b[0], b[1]); });
  return s;
}

const Instruction* AttentionDot(const analysis::Kernel& kernel, AttentionMatch* out) {
  for (const Instruction* i : kernel.instructions) {
    if (i->opcode != Opcode::kDot) continue;
    auto m = MatchAttentionAt(i);
    if (m.ok()) {
      *out = std::move(*m);
      return i;
    }
  }
  return nullptr;
}

// The last kv block a q block sees under `k - q <= off`.
std::string LastKv(const AttentionMatch& m, int64_t bq, int64_t bkv) {
  return "(i * " + std::to_string(bq) + " + " + std::to_string(bq - 1 + m.causal->offset) + ") // " +
         std::to_string(bkv);
}

}  // namespace

void AddAttentionSpace(const analysis::Kernel& kernel, const target::Target& target,
                       space::KernelSpace& space) {
  AttentionMatch m;
  if (!AttentionDot(kernel, &m)) return;
  AttentionSpace s = Domains(m, target);
  if (!s.reason.empty()) return;
  space.params.push_back({"bq", s.bq, InitialBlock(s.bq), "query rows per flash-attention block, a multiple of 8 or all of Sq"});
  space.params.push_back({"bkv", s.bkv, InitialBlock(s.bkv),
                          "keys per flash-attention step, a multiple of 128 and of the MXU side, or all of Sk"});
}

nlohmann::json FusedKernelEntry(const analysis::Kernel& k, const analysis::Kernel& anchor) {
  std::vector<std::string> ops;
  for (const Instruction* i : k.instructions) ops.push_back(i->name);
  return {{"name", k.name},
          {"family", analysis::KernelFamilyName(k.family)},
          {"runs", "fused"},
          {"fused_into", anchor.name},
          {"flops", k.flops},
          {"bytes", k.bytes},
          {"ops_in_pallas", ops},
          {"ops_in_glue", nlohmann::json::array()}};
}

Result<KernelText> EmitAttentionKernel(const analysis::FusionPlan& plan, const PlannedAttention& pa,
                                       const space::Schedule& schedule,
                                       const target::Target& target, const Names& names) {
  const AttentionMatch& m = pa.match;
  const analysis::Kernel& anchor = plan.kernels[pa.anchor];
  AttentionSpace dom = Domains(m, target);
  if (!dom.reason.empty()) return InvalidArgument("flash attention in " + anchor.name + ": " + dom.reason);
  const int64_t bq = schedule.Get("bq", InitialBlock(dom.bq));
  const int64_t bkv = schedule.Get("bkv", InitialBlock(dom.bkv));
  if (std::find(dom.bq.begin(), dom.bq.end(), bq) == dom.bq.end() ||
      std::find(dom.bkv.begin(), dom.bkv.end(), bkv) == dom.bkv.end()) {
    return InvalidArgument("flash attention in " + anchor.name + ": blocks bq=" + std::to_string(bq) +
                           ", bkv=" + std::to_string(bkv) +
                           " are outside the declared space (not (8,128)/MXU-legal, or over VMEM)");
  }
  const std::string kid = std::to_string(anchor.id);
  const int64_t nq = m.sq / bq, nkv = m.sk / bkv;
  const std::vector<const Instruction*> sides = ArraySides(m);
  MK_ASSIGN_OR_RETURN(std::string qk_t, JnpDType(m.qk->shape.dtype()));
  MK_ASSIGN_OR_RETURN(std::string p_t, JnpDType(m.p_dtype));
  MK_ASSIGN_OR_RETURN(std::string o_t, JnpDType(m.pv->shape.dtype()));

  // Scalar prefetch (SMEM): the mask's per-batch values, then per paged k/v its page table and
  // page validity, each flattened to one dim.
  struct Prefetched {
    const Instruction* value;
    const PagedKv* paged;  // null: a per-batch mask value
  };
  std::vector<Prefetched> pf;
  for (const Instruction* x : m.prefetch) pf.push_back({x, nullptr});
  auto pf_index = [&](const Instruction* x, const PagedKv* p) {
    for (size_t n = 0; n < pf.size(); ++n) if (pf[n].value == x) return n;
    pf.push_back({x, p});
    return pf.size() - 1;
  };
  struct KvRead {
    const char* name;
    const std::optional<PagedKv>* paged;
    int64_t cols;
    size_t table = 0, valid = 0;  // prefetch indices
  };
  KvRead kv_reads[2] = {{"k", &m.k_paged, m.d}, {"v", &m.v_paged, m.dv}};
  for (KvRead& r : kv_reads) {
    if (!r.paged->has_value()) continue;
    const PagedKv& p = **r.paged;
    r.table = pf_index(p.index, &p);
    if (p.valid) r.valid = pf_index(p.valid, &p);
  }
  auto pf_ref = [](size_t n) { return "pf" + std::to_string(n) + "_ref"; };

  // The body.
  std::ostringstream body;
  std::vector<std::string> refs;
  for (size_t n = 0; n < pf.size(); ++n) refs.push_back(pf_ref(n));
  refs.push_back("q_ref");
  for (const KvRead& r : kv_reads) {
    if (!r.paged->has_value()) {
      refs.push_back(std::string(r.name) + "_ref");
      continue;
    }
    for (int64_t t = 0; t < PagesPerStep(**r.paged, bkv); ++t) refs.push_back(r.name + std::to_string(t) + "_ref");
  }
  std::map<const Instruction*, std::string> side_refs;
  for (size_t i = 0; i < sides.size(); ++i) {
    refs.push_back("side" + std::to_string(i) + "_ref");
    side_refs[sides[i]] = "side" + std::to_string(i) + "_ref[...]";
  }
  refs.insert(refs.end(), {"o_ref", "m_ref", "l_ref", "acc_ref"});
  Line(body, 0, "def _kernel_" + kid + "_body(" + Join(refs) + "):");
  Line(body, 4, "i = pl.program_id(1)");
  Line(body, 4, "j = pl.program_id(2)");
  if (!pf.empty()) {
    Line(body, 4, "bn = pl.program_id(0) // " + std::to_string(m.g) + "  # the flat batch index, for the prefetched scalars");
  }
  Line(body, 0, "");
  Line(body, 4, "@pl.when(j == 0)");
  Line(body, 4, "def _init():");
  Line(body, 8, "m_ref[...] = jnp.full(m_ref.shape, -jnp.inf, jnp.float32)");
  Line(body, 8, "l_ref[...] = jnp.zeros(l_ref.shape, jnp.float32)");
  Line(body, 8, "acc_ref[...] = jnp.zeros(acc_ref.shape, jnp.float32)");
  Line(body, 0, "");
  int step_indent = 4;
  if (m.causal) {
    Line(body, 4, "# Causal (k - q <= " + std::to_string(m.causal->offset) +
                      "): a block whose first key is past every row's last visible key holds only");
    Line(body, 4, "# masked scores, whose exp is exactly 0: skipped.");
    Line(body, 4, "@pl.when(j <= " + LastKv(m, bq, bkv) + ")");
    Line(body, 4, "def _step():");
    step_indent = 8;
  }
  const int in = step_indent;
  const bool f32_qk = m.q->shape.dtype() == hlo::DType::kF32 || m.k->shape.dtype() == hlo::DType::kF32;
  const bool f32_pv = m.p_dtype == hlo::DType::kF32 || m.v->shape.dtype() == hlo::DType::kF32;
  // The k and v blocks: one block each, or (paged) the step's pages read from the pool, a page
  // the page table marks invalid (jnp.take's fill mode) replaced by the fill value.
  for (const KvRead& r : kv_reads) {
    const std::string x = r.name;
    if (!r.paged->has_value()) {
      Line(body, in, x + "_blk = " + x + "_ref[...]");
      continue;
    }
    const PagedKv& p = **r.paged;
    const int64_t ppb = PagesPerStep(p, bkv);
    std::string fill;
    if (p.valid) {
      MK_ASSIGN_OR_RETURN(fill, ScalarConstantExpr(*p.fill));
      Line(body, in, x + "_page = " + PagedSeqExpr(p, m.batch_sizes, "bn") + " * " + std::to_string(p.slots) +
                         " + j * " + std::to_string(ppb) + "  # this step's first page slot");
    }
    std::vector<std::string> pieces;
    for (int64_t t = 0; t < ppb; ++t) {
      std::string piece = x + std::to_string(t) + "_ref[...]";
      if (p.valid) {
        piece = "jnp.where(jnp.full(" + PyTuple({p.page, r.cols}) + ", " + pf_ref(r.valid) + "[" + x + "_page + " +
                std::to_string(t) + "], jnp.int32) != 0, " + piece + ", " + fill + ")";
      }
      pieces.push_back(piece);
    }
    Line(body, in, x + "_blk = " + (ppb == 1 ? pieces[0] : "jnp.concatenate([" + Join(pieces) + "], axis=0)"));
  }
  Line(body, in, "s = jax.lax.dot_general(q_ref[...], k_blk, (((1,), (1,)), ((), ())), "
                 "preferred_element_type=jnp.float32" +
                     std::string(f32_qk ? ", precision=jax.lax.Precision.HIGHEST" : "") + ")");
  if (m.qk->shape.dtype() != hlo::DType::kF32) Line(body, in, "s = jax.lax.convert_element_type(s, " + qk_t + ")");
  bool has_mask = false;
  for (const ScoreStep& st : m.score) {
    for (auto sd : st.sides) has_mask = has_mask || sd == ScoreStep::Side::kMask;
  }
  if (has_mask) {
    const std::string shape = "(" + std::to_string(bq) + ", " + std::to_string(bkv) + ")";
    Line(body, in, "qpos = i * " + std::to_string(bq) + " + jax.lax.broadcasted_iota(jnp.int32, " + shape + ", 0)");
    Line(body, in, "kpos = j * " + std::to_string(bkv) + " + jax.lax.broadcasted_iota(jnp.int32, " + shape + ", 1)");
  }
  MK_ASSIGN_OR_RETURN(std::vector<std::string> score_lines, ScoreLines(m, bq, bkv, side_refs));
  for (const auto& l : score_lines) Line(body, in, l);
  Line(body, in, "m_prev = m_ref[...]");
  Line(body, in, "m_new = jnp.maximum(m_prev, jnp.max(s, axis=1, keepdims=True))");
  Line(body, in, "# A row with no finite score yet keeps exp() at 0 instead of NaN.");
  Line(body, in, "m_use = jnp.where(m_new == -jnp.inf, jnp.float32(0), m_new)");
  Line(body, in, "alpha = jnp.exp(m_prev - m_use)");
  Line(body, in, "p = jnp.exp(s - m_use)");
  Line(body, in, "l_ref[...] = alpha * l_ref[...] + jnp.sum(p, axis=1, keepdims=True)");
  Line(body, in, "acc_ref[...] = alpha * acc_ref[...] + jax.lax.dot_general(jax.lax.convert_element_type(p, " + p_t +
                     "), v_blk, (((1,), (0,)), ((), ())), preferred_element_type=jnp.float32" +
                     std::string(f32_pv ? ", precision=jax.lax.Precision.HIGHEST" : "") + ")");
  Line(body, in, "m_ref[...] = m_new");
  Line(body, 0, "");
  Line(body, 4, "@pl.when(j == pl.num_programs(2) - 1)");
  Line(body, 4, "def _finish():");
  Line(body, 8, "o_ref[...] = jax.lax.convert_element_type(acc_ref[...] / l_ref[...], " + o_t + ")");

  // The kernel function: glue before, the call, glue after.
  std::ostringstream fn;
  std::vector<std::string> params;
  for (const Instruction* i : pa.inputs) params.push_back(names.Of(i));
  Line(fn, 0, "def kernel_" + kid + "(" + Join(params) + "):");
  std::vector<std::string> fused_names;
  for (size_t k : pa.kernels) fused_names.push_back(plan.kernels[k].name);
  Line(fn, 4, "# Flash attention (" + OneLineText(Join(fused_names)) + " in one pallas_call): online softmax,");
  if (m.k_paged || m.v_paged) {
    Line(fn, 4, "# K/V pages read from the pool through the scalar-prefetched page table (never gathered).");
  }
  Line(fn, 4, std::string("# ") + (m.causal ? "causal blocks skipped, " : "") +
                  (m.g * m.kv_group > 1 ? "each kv head shared by " + std::to_string(m.g * m.kv_group) + " query heads." : "one kv head per query head."));
  std::set<const Instruction*> glue(pa.glue.begin(), pa.glue.end());
  std::vector<std::string> glue_names;
  auto emit_glue = [&](const Instruction* inst) -> Status {
    std::vector<std::string> args;
    for (const Instruction* o : inst->operands) args.push_back(names.Of(o));
    OpSite site;
    if (inst->shape.is_array()) site.block_dims = inst->shape.dims();
    MK_ASSIGN_OR_RETURN(std::string e, TranslateOp(*inst, args, site));
    Line(fn, 4, names.Of(inst) + " = " + e);
    glue_names.push_back(inst->name);
    return Status::Ok();
  };
  const std::string G = std::to_string(m.g);
  auto canon = [&](const Instruction* v, const std::vector<int64_t>& perm, const std::vector<int64_t>& dims) {
    std::string e = names.Of(v);
    bool identity = true;
    for (size_t a = 0; a < perm.size(); ++a) identity = identity && perm[a] == static_cast<int64_t>(a);
    if (!identity) e = "jnp.transpose(" + e + ", " + PyTuple(perm) + ")";
    return "jnp.reshape(" + e + ", " + PyTuple(dims) + ")";
  };
  target::TpuKernelShape shape;
  shape.name = anchor.name;
  int64_t vmem = AttentionVmem(m, bq, bkv);
  // Values a prefetched scalar needs that another kernel computes internally: recomputed here.
  for (const Instruction* inst : pa.recomputed) MK_RETURN_IF_ERROR(emit_glue(inst));
  for (size_t k : pa.kernels) {
    for (const Instruction* inst : plan.kernels[k].instructions) {
      if (glue.count(inst)) {
        MK_RETURN_IF_ERROR(emit_glue(inst));
        continue;
      }
      if (inst != m.pv) continue;
      // The call.
      std::vector<std::string> args;
      for (size_t n = 0; n < pf.size(); ++n) {
        if (const PagedKv* p = pf[n].paged) {
          // A page table, [seqs.., slots] flattened; or a page's validity, broadcast to it.
          const int64_t flat = p->seqs * p->slots;
          if (pf[n].value == p->index) {
            std::vector<int64_t> idims;
            for (int64_t d : p->index_dims) idims.push_back(p->index->shape.dim(d));
            std::string e = "jnp.reshape(" + names.Of(p->index) + ", " + PyTuple(idims) + ")";
            args.push_back("jnp.reshape(jnp.transpose(" + e + ", " + PyTuple(p->index_perm) + "), (" +
                           std::to_string(flat) + ",)).astype(jnp.int32)");
            continue;
          }
          std::vector<std::pair<int, int64_t>> order;
          for (size_t d = 0; d < p->valid_labels.size(); ++d) {
            const int l = p->valid_labels[d];
            order.push_back({l < 0 ? PagedKv::kSlot + 1 : l, static_cast<int64_t>(d)});
          }
          std::sort(order.begin(), order.end());
          std::vector<int64_t> perm, ones, full;
          for (const auto& [r, d] : order) perm.push_back(d);
          auto has = [&](int l) {
            return std::find(p->valid_labels.begin(), p->valid_labels.end(), l) != p->valid_labels.end();
          };
          for (size_t b = 0; b < m.batch_sizes.size(); ++b) {
            if (!p->batch_is_seq[b]) continue;
            ones.push_back(has(static_cast<int>(b)) ? m.batch_sizes[b] : 1);
            full.push_back(m.batch_sizes[b]);
          }
          ones.push_back(has(PagedKv::kSlot) ? p->slots : 1);
          full.push_back(p->slots);
          args.push_back("jnp.reshape(jnp.broadcast_to(" + canon(pf[n].value, perm, ones) + ", " + PyTuple(full) +
                         "), (" + std::to_string(flat) + ",)).astype(jnp.int32)");
          continue;
        }
        // [batch..] flattened to [NB] (broadcast over the batch dims it lacks), int32 in SMEM.
        const std::vector<int>& labels = m.prefetch_labels[n];
        std::vector<std::pair<int, int64_t>> order;
        for (size_t d = 0; d < labels.size(); ++d) order.push_back({labels[d] < 0 ? 1000 : labels[d], static_cast<int64_t>(d)});
        std::sort(order.begin(), order.end());
        std::vector<int64_t> perm, ones;
        for (const auto& [r, d] : order) perm.push_back(d);
        for (size_t b = 0; b < m.batch_sizes.size(); ++b) {
          const bool has = std::find(labels.begin(), labels.end(), static_cast<int>(b)) != labels.end();
          ones.push_back(has ? m.batch_sizes[b] : 1);
        }
        args.push_back("jnp.reshape(jnp.broadcast_to(" + canon(m.prefetch[n], perm, ones) + ", " +
                       PyTuple(m.batch_sizes) + "), (" + std::to_string(m.nb) + ",)).astype(jnp.int32)");
      }
      args.push_back(canon(m.q, m.q_perm, {m.nb, m.g, m.sq, m.d}));
      for (const KvRead& r : kv_reads) {
        const bool is_k = r.name == std::string("k");
        if (r.paged->has_value()) {
          // The pool as [heads, P, page, d]: each step reads its pages from it in place.
          const PagedKv& p = **r.paged;
          const std::string pool = std::string(r.name) + "_pool";
          Line(fn, 4, pool + " = " + canon(p.pool, p.pool_perm, {p.heads, p.pool_pages, p.page, p.d}));
          for (int64_t t = 0; t < PagesPerStep(p, bkv); ++t) args.push_back(pool);
          continue;
        }
        args.push_back(is_k ? canon(m.k, m.k_perm, {m.nb / m.kv_group, m.sk, m.d})
                            : canon(m.v, m.v_perm, {m.nb / m.kv_group, m.sk, m.dv}));
      }
      for (const Instruction* sd : sides) {
        // [batch.., group.., Sq, Sk] by the side's labels; its size-1 dims anywhere.
        const std::vector<int> labels = SideLabels(m, sd);
        std::vector<std::pair<int, int64_t>> order;
        for (size_t d = 0; d < labels.size(); ++d) {
          int rank = 1000 + static_cast<int>(d);
          const int id = labels[d];
          for (size_t b = 0; b < m.batch_ids.size(); ++b) if (m.batch_ids[b] == id) rank = static_cast<int>(b);
          for (size_t g = 0; g < m.group_ids.size(); ++g) if (m.group_ids[g] == id) rank = 100 + static_cast<int>(g);
          if (id == m.sq_id) rank = 200;
          if (id == m.sk_id) rank = 201;
          order.push_back({rank, static_cast<int64_t>(d)});
        }
        std::sort(order.begin(), order.end());
        std::vector<int64_t> perm;
        for (const auto& [r, d] : order) perm.push_back(d);
        args.push_back(canon(sd, perm, {m.nb, m.g, m.sq, m.sk}));
      }
      const std::string kv = m.causal ? "jnp.minimum(j, " + LastKv(m, bq, bkv) + ")" : "j";
      const std::string B = std::to_string(bq), K = std::to_string(bkv);
      const std::string GK = std::to_string(m.g * m.kv_group);  // query heads per kv head
      // Index maps also receive the prefetched scalars.
      const std::string L = pf.empty() ? "b, i, j" : "b, i, j, *pf";
      std::vector<std::string> in_specs = {
          "pl.BlockSpec((None, None, " + B + ", " + std::to_string(m.d) + "), lambda " + L + ": (b // " + G + ", b % " + G + ", i, 0))"};
      for (const KvRead& r : kv_reads) {
        if (!r.paged->has_value()) {
          in_specs.push_back("pl.BlockSpec((None, " + K + ", " + std::to_string(r.cols) + "), lambda " + L + ": (b // " + GK + ", " + kv + ", 0))");
          continue;
        }
        // Page t of the step: pool page page_table[seq, kv * pages + t] (clamped into the pool, as
        // the HLO gather clamps its start index), of the head the batch index holds.
        const PagedKv& p = **r.paged;
        const int64_t ppb = PagesPerStep(p, bkv);
        const std::string n = "(b // " + G + ")";
        for (int64_t t = 0; t < ppb; ++t) {
          const std::string slot = PagedSeqExpr(p, m.batch_sizes, n) + " * " + std::to_string(p.slots) + " + " + kv +
                                   " * " + std::to_string(ppb) + " + " + std::to_string(t);
          in_specs.push_back("pl.BlockSpec((None, None, " + std::to_string(p.page) + ", " + std::to_string(r.cols) +
                             "), lambda " + L + ": (" + PagedHeadExpr(p, m.batch_sizes, n) + ", jnp.minimum(jnp.maximum(pf[" +
                             std::to_string(r.table) + "][" + slot + "], 0), " + std::to_string(p.pool_pages - 1) + "), 0, 0))");
        }
      }
      for (size_t s = 0; s < sides.size(); ++s) {
        in_specs.push_back("pl.BlockSpec((None, None, " + B + ", " + K + "), lambda " + L + ": (b // " + G + ", b % " + G + ", i, " + kv + "))");
      }
      const int64_t limit = ScopedVmemLimit(target, vmem);
      Line(fn, 4, "# Grid (batch x heads, q blocks, kv blocks); kv head of query head b: b // " + GK + ".");
      const std::string grid = "grid=(" + std::to_string(m.nb * m.g) + ", " + std::to_string(nq) + ", " + std::to_string(nkv) + "),";
      const std::string ins = "in_specs=[" + Join(in_specs) + "],";
      const std::string outs = "out_specs=pl.BlockSpec((None, None, " + B + ", " + std::to_string(m.dv) + "), lambda " + L + ": (b // " + G + ", b % " + G + ", i, 0)),";
      const std::string scratch = "scratch_shapes=[pltpu.VMEM((" + B + ", 1), jnp.float32), pltpu.VMEM((" + B +
                                  ", 1), jnp.float32), pltpu.VMEM((" + B + ", " + std::to_string(m.dv) + "), jnp.float32)],";
      Line(fn, 4, "o = pl.pallas_call(");
      Line(fn, 8, "_kernel_" + kid + "_body,");
      if (pf.empty()) {
        for (const std::string& l : {grid, ins, outs, scratch}) Line(fn, 8, l);
      } else {
        Line(fn, 8, "grid_spec=pltpu.PrefetchScalarGridSpec(");
        Line(fn, 12, "num_scalar_prefetch=" + std::to_string(pf.size()) + ",");
        for (const std::string& l : {grid, ins, outs, scratch}) Line(fn, 12, l);
        Line(fn, 8, "),");
      }
      Line(fn, 8, "out_shape=jax.ShapeDtypeStruct(" + PyTuple({m.nb, m.g, m.sq, m.dv}) + ", " + o_t + "),");
      Line(fn, 8, "compiler_params=pltpu.CompilerParams(dimension_semantics=(\"parallel\", \"parallel\", \"arbitrary\"), vmem_limit_bytes=" +
                      std::to_string(limit) + "),");
      Line(fn, 8, "interpret=_interpret(),");
      Line(fn, 4, ")(" + Join(args) + ")");
      std::vector<int64_t> expanded = m.batch_sizes;
      expanded.insert(expanded.end(), m.group_sizes.begin(), m.group_sizes.end());
      expanded.push_back(m.sq);
      expanded.push_back(m.dv);
      Line(fn, 4, names.Of(m.pv) + " = jnp.reshape(jnp.transpose(jnp.reshape(o, " + PyTuple(expanded) + "), " +
                      PyTuple(m.out_perm) + "), " + PyTuple(m.pv->shape.dims()) + ")");
    }
  }
  std::vector<std::string> outs;
  for (const Instruction* o : pa.outputs) outs.push_back(names.Of(o));
  Line(fn, 4, "return " + TupleOf(outs));

  // The performance model's view: per visible step two matmuls, the softmax update on the VPU
  // and EUP, two row reductions on the XLU; skipped steps cost only their overhead.
  const int64_t heads = m.nb * m.g;
  int64_t visible = 0;
  for (int64_t i = 0; i < nq; ++i) {
    for (int64_t j = 0; j < nkv; ++j) {
      if (!m.causal || j * bkv <= i * bq + bq - 1 + m.causal->offset) ++visible;
    }
  }
  shape.grid_steps = heads * nq * nkv;
  shape.skipped_steps = heads * (nq * nkv - visible);
  shape.mxu_m = bq;
  shape.mxu_n = bkv;
  shape.mxu_k = m.d;
  shape.mxu2_m = bq;
  shape.mxu2_n = m.dv;
  shape.mxu2_k = bkv;
  shape.mxu_bf16 = !f32_qk && !f32_pv;
  const int64_t elems = bq * bkv;
  shape.vpu_flops_per_step = elems * (static_cast<int64_t>(m.score.size()) + 6) + bq * m.dv * 3;
  shape.transcendentals_per_step = elems + bq;
  shape.xlu_vregs_per_step = 2 * RoundUp(bq, 8) / 8;
  // Bytes: every visible step reads its K/V (and bias) blocks; a q block is read and an output
  // block written once per row of blocks.
  int64_t in_total = heads * nq * bq * m.d * Bytes(m.q);
  int64_t step_in = bkv * m.d * Bytes(m.k) + bkv * m.dv * Bytes(m.v);
  for (const Instruction* sd : sides) step_in += bq * bkv * Bytes(sd);
  in_total += heads * visible * step_in;
  const int64_t out_total = heads * m.sq * m.dv * Bytes(m.pv);
  const int64_t active = std::max<int64_t>(1, heads * visible);
  shape.in_bytes_per_step = in_total / active;
  shape.out_bytes_per_step = out_total / active;
  shape.vmem_bytes = vmem;

  int64_t flops = 0, bytes = 0;
  for (size_t k : pa.kernels) {
    flops += plan.kernels[k].flops;
  }
  bytes = in_total + out_total;
  std::vector<std::string> in_pallas;
  for (const Instruction* c : m.core) in_pallas.push_back(c->name);
  std::sort(in_pallas.begin(), in_pallas.end());
  KernelText t;
  t.text = body.str() + "\n\n" + fn.str();
  t.map = {{"name", anchor.name},
           {"family", "attention"},
           {"runs", "pallas"},
           {"flops", flops},
           {"flops_computed", 2 * heads * visible * bq * bkv * (m.d + m.dv)},
           {"bytes", bytes},
           {"grid", {heads, nq, nkv}},
           {"blocks", {{"bq", bq}, {"bkv", bkv}}},
           {"dimension_semantics", {"parallel", "parallel", "arbitrary"}},
           {"causal", m.causal ? nlohmann::json(m.causal->offset) : nlohmann::json(nullptr)},
           {"gqa_group", m.g * m.kv_group},
           {"skipped_blocks", shape.skipped_steps},
           {"fused_kernels", fused_names},
           {"ops_in_pallas", in_pallas},
           {"ops_in_glue", glue_names},
           {"tpu_kernel_shape", target::ToJson(shape)}};
  // Which of k and v the call reads through a page table, and why a gathered one is not.
  nlohmann::json paged = nullptr;
  for (const KvRead& r : kv_reads) {
    if (!r.paged->has_value()) continue;
    const PagedKv& p = **r.paged;
    if (paged.is_null()) paged = nlohmann::json::object();
    paged[r.name] = {{"pool", p.pool->name},
                     {"page_table", p.index->name},
                     {"page_valid", p.valid ? nlohmann::json(p.valid->name) : nlohmann::json(nullptr)},
                     {"page", p.page},
                     {"pages_per_sequence", p.slots},
                     {"pages_per_step", PagesPerStep(p, bkv)}};
  }
  t.map["paged_kv"] = paged;
  if (!m.paged_refused.empty()) t.map["paged_kv_refused"] = m.paged_refused;
  if (!glue_names.empty()) t.map["glue_reason"] = "operand producers before the call and the p.v dot's epilogue after it";
  return t;
}

}  // namespace mk::codegen::pallas
