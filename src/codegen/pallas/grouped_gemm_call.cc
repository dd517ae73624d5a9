#include "codegen/pallas/grouped_gemm_call.h"

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

int64_t Bytes(const Instruction* i) { return hlo::DTypeByteSize(i->shape.dtype()); }

// What the call writes: the absorbed convert's type, else the scatter's (f32).
const Instruction* OutValue(const GroupedGemmMatch& m) { return m.out_convert ? m.out_convert : m.scatter; }

// VMEM at blocks (bn, bk): the row tile, weight, mask and output blocks twice (double
// buffering), the f32 tile accumulator and the f32 product block the body holds.
int64_t GroupedVmem(const GroupedGemmMatch& m, int64_t bn, int64_t bk) {
  const int64_t rhs = m.rhs_transposed ? TiledBytes({bn, bk}, Bytes(m.rhs)) : TiledBytes({bk, bn}, Bytes(m.rhs));
  int64_t t = 2 * (TiledBytes({m.tm, bk}, Bytes(m.lhs)) + rhs + TiledBytes({m.tm, bn}, Bytes(OutValue(m))));
  if (m.mask.value) t += 2 * TiledBytes({m.tm, 1}, 4);
  t += 2 * TiledBytes({m.tm, bn}, 4);  // accumulator and product
  return t;
}

struct GroupedSpace {
  std::vector<int64_t> bn, bk;
  std::string reason;  // non-empty: nothing fits
};

// Scalar prefetch: five int32 arrays of V + T entries in SMEM. jax's tpu_info gives 1 MiB of SMEM
// per core on every TPU target here (v4 to 7x); half of it is left to Mosaic's own scalars.
constexpr int64_t kSmemBudget = int64_t{512} << 10;

int64_t PrefetchBytes(const GroupedGemmMatch& m) { return 5 * 4 * (m.v + m.t); }

GroupedSpace Domains(const GroupedGemmMatch& m, const target::Target& target) {
  GroupedSpace s;
  if (PrefetchBytes(m) > kSmemBudget) {
    s.reason = "its visit schedule needs " + std::to_string(PrefetchBytes(m)) + " bytes of SMEM, over " +
               std::to_string(kSmemBudget);
    return s;
  }
  // bn is the last dim of the weight and output blocks, bk the last of the row-tile block and
  // the second-to-last (or last) of the weight block; both are matmul dims of the MXU.
  const int64_t side = std::max<int64_t>(128, target.mxu_dim);
  for (int64_t b = 1; b <= m.n; ++b) {
    if (m.n % b == 0 && (b % side == 0 || b == m.n)) s.bn.push_back(b);
  }
  for (int64_t b = 1; b <= m.k; ++b) {
    if (m.k % b == 0 && (b % side == 0 || b == m.k)) s.bk.push_back(b);
  }
  s.reason = FitBlocksToVmem({&s.bk, &s.bn}, VmemBudget(target),
                             [&](const std::vector<int64_t>& b) { return GroupedVmem(m, b[1], b[0]); });
  return s;
}

bool InDomain(const std::vector<int64_t>& d, int64_t v) { return std::find(d.begin(), d.end(), v) != d.end(); }

// A per-visit value (labels over {visit 0, row 1}) as a jnp expression of shape [V] (max_label 0)
// or [V, tm] (max_label 1).
std::string Canonical(const VisitValue& vv, const GroupedGemmMatch& m, int max_label, const Names& names) {
  std::vector<std::pair<int, int64_t>> order;
  for (size_t d = 0; d < vv.labels.size(); ++d) {
    order.push_back({vv.labels[d] < 0 ? 100 + static_cast<int>(d) : vv.labels[d], static_cast<int64_t>(d)});
  }
  std::sort(order.begin(), order.end());
  std::vector<int64_t> perm;
  bool identity = true;
  for (const auto& [r, d] : order) {
    identity = identity && d == static_cast<int64_t>(perm.size());
    perm.push_back(d);
  }
  const auto has = [&](int l) { return std::find(vv.labels.begin(), vv.labels.end(), l) != vv.labels.end(); };
  std::string e = names.Of(vv.value);
  if (!identity) e = "jnp.transpose(" + e + ", " + PyTuple(perm) + ")";
  std::vector<int64_t> dims = {has(0) ? m.v : 1}, full = {m.v};
  if (max_label >= 1) {
    dims.push_back(has(1) ? m.tm : 1);
    full.push_back(m.tm);
  }
  e = "jnp.broadcast_to(jnp.reshape(" + e + ", " + PyTuple(dims) + "), " + PyTuple(full) + ")";
  return vv.negated ? "jnp.logical_not(" + e + ")" : e;
}

const Instruction* AnchorScatter(const analysis::Kernel& kernel, GroupedGemmMatch* out) {
  for (const Instruction* i : kernel.instructions) {
    if (i->opcode != Opcode::kScatter) continue;
    auto m = MatchGroupedGemmAt(i);
    if (m.ok()) {
      *out = std::move(*m);
      return i;
    }
  }
  return nullptr;
}

// Flag bits of an entry (scalar-prefetched): it computes a visit; its gathers are in range (else
// the module's take fills them with NaN); it is the first / last entry of its output tile.
constexpr int kActive = 1, kInRange = 2, kFirst = 4, kLast = 8;

}  // namespace

std::string GroupedGemmDoesNotFit(const GroupedGemmMatch& m, const target::Target& target) {
  return Domains(m, target).reason;
}

void AddGroupedGemmSpace(const analysis::Kernel& kernel, const target::Target& target,
                         space::KernelSpace& space) {
  GroupedGemmMatch m;
  if (!AnchorScatter(kernel, &m)) return;
  GroupedSpace s = Domains(m, target);
  if (!s.reason.empty()) return;
  space.params.push_back({"gmm_bn", s.bn, InitialBlock(s.bn),
                          "grouped GEMM output columns per block (N), a multiple of 128 and of the MXU side, or all of N"});
  space.params.push_back({"gmm_bk", s.bk, InitialBlock(s.bk),
                          "grouped GEMM depth per step (K), a multiple of 128 and of the MXU side, or all of K"});
}

nlohmann::json GroupedGemmFusedEntry(const analysis::Kernel& k, const analysis::Kernel& anchor,
                                     const PlannedGroupedGemm& pg) {
  std::vector<std::string> in_call, in_glue;
  for (const Instruction* i : k.instructions) (pg.match.core.count(i) ? in_call : in_glue).push_back(i->name);
  return {{"name", k.name},
          {"family", analysis::KernelFamilyName(k.family)},
          {"runs", "fused"},
          {"fused_into", anchor.name},
          {"flops", k.flops},
          {"bytes", k.bytes},
          {"ops_in_pallas", in_call},
          {"ops_in_glue", in_glue}};
}

Result<KernelText> EmitGroupedGemmKernel(const analysis::FusionPlan& plan, const PlannedGroupedGemm& pg,
                                         const space::Schedule& schedule, const target::Target& target,
                                         const Names& names) {
  const GroupedGemmMatch& m = pg.match;
  const analysis::Kernel& anchor = plan.kernels[pg.anchor];
  GroupedSpace dom = Domains(m, target);
  if (!dom.reason.empty()) return InvalidArgument("grouped GEMM in " + anchor.name + ": " + dom.reason);
  const int64_t bn = schedule.Get("gmm_bn", InitialBlock(dom.bn));
  const int64_t bk = schedule.Get("gmm_bk", InitialBlock(dom.bk));
  if (!InDomain(dom.bn, bn) || !InDomain(dom.bk, bk)) {
    return InvalidArgument("grouped GEMM in " + anchor.name + ": blocks gmm_bn=" + std::to_string(bn) +
                           ", gmm_bk=" + std::to_string(bk) +
                           " are outside the declared space (not (8,128)/MXU-legal, or over VMEM)");
  }
  const std::string kid = std::to_string(anchor.id);
  const int64_t entries = m.v + m.t, nn = m.n / bn, nk = m.k / bk;
  const std::string V = std::to_string(m.v), T = std::to_string(m.t), TM = std::to_string(m.tm);
  const std::string E = std::to_string(entries);
  MK_ASSIGN_OR_RETURN(std::string init, ScalarConstantExpr(*m.init->operand(0)));
  const bool f32_dot = m.lhs->shape.dtype() == hlo::DType::kF32 || m.rhs->shape.dtype() == hlo::DType::kF32;
  const bool has_ok = m.lhs_ok.value || m.rhs_ok.value;
  const bool has_mask = m.mask.value != nullptr;
  MK_ASSIGN_OR_RETURN(std::string out_t, JnpDType(OutValue(m)->shape.dtype()));

  // The body.
  std::ostringstream body;
  std::vector<std::string> refs = {"tile_ref", "row_tile_ref", "group_ref", "visit_ref", "flags_ref", "lhs_ref", "rhs_ref"};
  if (has_mask) refs.push_back("mask_ref");
  refs.insert(refs.end(), {"o_ref", "acc_ref"});
  Line(body, 0, "def _kernel_" + kid + "_body(" + Join(refs) + "):");
  Line(body, 4, "e = pl.program_id(1)  # the entry: a visit of the module's schedule, or a tile's empty entry");
  Line(body, 4, "kk = pl.program_id(2)");
  Line(body, 4, "flags = flags_ref[e]");
  Line(body, 0, "");
  Line(body, 4, "@pl.when(jnp.logical_and(kk == 0, (flags & " + std::to_string(kFirst) + ") != 0))");
  Line(body, 4, "def _init():");
  Line(body, 8, "acc_ref[...] = jnp.full(acc_ref.shape, " + init + ", jnp.float32)");
  Line(body, 0, "");
  const std::string keep_line = "keep = jnp.broadcast_to(mask_ref[...], acc_ref.shape) != 0  # rows of the visit's group";
  const int in_range = kActive | kInRange;
  Line(body, 4, "@pl.when((flags & " + std::to_string(in_range) + ") == " + std::to_string(in_range) + ")");
  Line(body, 4, "def _visit():");
  const std::string dims = m.rhs_transposed ? "(((1,), (1,)), ((), ()))" : "(((1,), (0,)), ((), ()))";
  Line(body, 8, "d = jax.lax.dot_general(lhs_ref[...], rhs_ref[...], " + dims +
                    ", preferred_element_type=jnp.float32" +
                    std::string(f32_dot ? ", precision=jax.lax.Precision.HIGHEST" : "") + ")");
  if (has_mask) {
    Line(body, 8, keep_line);
    Line(body, 8, "d = jnp.where(keep, d, jnp.float32(0))");
  }
  Line(body, 8, "acc_ref[...] += d");
  if (has_ok) {
    Line(body, 0, "");
    Line(body, 4, "# A gather index out of range: the module's take fills the tile or weight with NaN, so every");
    Line(body, 4, "# product of the visit is NaN.");
    Line(body, 4, "@pl.when((flags & " + std::to_string(in_range) + ") == " + std::to_string(kActive) + ")");
    Line(body, 4, "def _nan_visit():");
    if (has_mask) {
      Line(body, 8, keep_line);
      Line(body, 8, "acc_ref[...] += jnp.where(keep, jnp.float32(jnp.nan), jnp.float32(0))");
    } else {
      Line(body, 8, "acc_ref[...] += jnp.float32(jnp.nan)");
    }
  }
  Line(body, 0, "");
  Line(body, 4, "@pl.when(jnp.logical_and(kk == pl.num_programs(2) - 1, (flags & " + std::to_string(kLast) + ") != 0))");
  Line(body, 4, "def _store():");
  Line(body, 8, std::string("o_ref[...] = ") +
                    (m.out_convert ? "jax.lax.convert_element_type(acc_ref[...], " + out_t + ")" : "acc_ref[...]"));

  // The kernel function: glue before, the schedule's metadata, the call, glue after.
  std::ostringstream fn;
  std::vector<std::string> params;
  for (const Instruction* i : pg.inputs) params.push_back(names.Of(i));
  Line(fn, 0, "def kernel_" + kid + "(" + Join(params) + "):");
  std::vector<std::string> fused_names;
  for (size_t k : pg.kernels) fused_names.push_back(plan.kernels[k].name);
  Line(fn, 4, "# Grouped GEMM (" + OneLineText(Join(fused_names)) + " in one pallas_call): " + V +
                  " visits of a " + TM + "-row tile by one of " + std::to_string(m.g) + " weights,");
  Line(fn, 4, "# added into " + T + " output tiles; no per-visit copy of a weight is made.");
  std::set<const Instruction*> glue(pg.glue.begin(), pg.glue.end());
  std::vector<std::string> glue_names;
  target::TpuKernelShape shape;
  shape.name = anchor.name;
  const int64_t vmem = GroupedVmem(m, bn, bk);
  for (size_t k : pg.kernels) {
    for (const Instruction* inst : plan.kernels[k].instructions) {
      if (glue.count(inst)) {
        std::vector<std::string> args;
        for (const Instruction* o : inst->operands) args.push_back(names.Of(o));
        OpSite site;
        if (inst->shape.is_array()) site.block_dims = inst->shape.dims();
        MK_ASSIGN_OR_RETURN(std::string e, TranslateOp(*inst, args, site));
        Line(fn, 4, names.Of(inst) + " = " + e);
        // The anchor's own; a fused kernel's entry lists its glue ops itself.
        if (k == pg.anchor) glue_names.push_back(inst->name);
        continue;
      }
      if (inst != m.scatter) continue;
      // The schedule's per-visit values, as the module computes them (HLO gather clamps a start
      // index into range; HLO scatter drops a window whose start is out of range).
      Line(fn, 4, "# Per visit: the row tile and group gathered, the output tile added to.");
      Line(fn, 4, "row_tile = jnp.clip(jnp.reshape(" + names.Of(m.lhs_index) + ", (" + V + ",)), 0, " +
                      std::to_string(m.t - 1) + ").astype(jnp.int32)");
      Line(fn, 4, "group = jnp.clip(jnp.reshape(" + names.Of(m.rhs_index) + ", (" + V + ",)), 0, " +
                      std::to_string(m.g - 1) + ").astype(jnp.int32)");
      Line(fn, 4, "out_tile = jnp.reshape(" + names.Of(m.out_index) + ", (" + V + ",)).astype(jnp.int32)");
      Line(fn, 4, "active = jnp.logical_and(out_tile >= 0, out_tile < " + T + ")");
      std::string in_range_expr = "jnp.ones((" + V + ",), jnp.bool_)";
      if (m.lhs_ok.value && m.rhs_ok.value) {
        in_range_expr = "jnp.logical_and(" + Canonical(m.lhs_ok, m, 0, names) + ", " + Canonical(m.rhs_ok, m, 0, names) + ")";
      } else if (m.lhs_ok.value) {
        in_range_expr = Canonical(m.lhs_ok, m, 0, names);
      } else if (m.rhs_ok.value) {
        in_range_expr = Canonical(m.rhs_ok, m, 0, names);
      }
      Line(fn, 4, "in_range = " + in_range_expr);
      Line(fn, 4, "# One empty entry per output tile (a tile no visit writes still gets the initial value); the");
      Line(fn, 4, "# entries sorted by output tile, so a tile's visits are consecutive and its block stays in VMEM.");
      Line(fn, 4, "tile = jnp.concatenate([jnp.clip(out_tile, 0, " + std::to_string(m.t - 1) + "), jnp.arange(" + T + ", dtype=jnp.int32)])");
      Line(fn, 4, "order = jnp.argsort(tile, stable=True)");
      Line(fn, 4, "tile = tile[order]");
      Line(fn, 4, "zeros = jnp.zeros((" + T + ",), jnp.int32)");
      Line(fn, 4, "act = jnp.concatenate([active.astype(jnp.int32), zeros])[order]");
      Line(fn, 4, "ok = jnp.concatenate([in_range.astype(jnp.int32), zeros])[order]");
      Line(fn, 4, "# An entry that computes nothing holds the blocks of the last one that did: no copy for it.");
      Line(fn, 4, "held = jax.lax.cummax(jnp.where(act != 0, jnp.arange(" + E + ", dtype=jnp.int32), 0), axis=0)");
      Line(fn, 4, "row_tile = jnp.concatenate([row_tile, zeros])[order][held]");
      Line(fn, 4, "group = jnp.concatenate([group, zeros])[order][held]");
      Line(fn, 4, "visit = jnp.concatenate([jnp.arange(" + V + ", dtype=jnp.int32), zeros])[order][held]");
      Line(fn, 4, "change = (tile[1:] != tile[:-1]).astype(jnp.int32)");
      Line(fn, 4, "one = jnp.ones((1,), jnp.int32)");
      Line(fn, 4, "first = jnp.concatenate([one, change])");
      Line(fn, 4, "last = jnp.concatenate([change, one])");
      Line(fn, 4, "flags = act * " + std::to_string(kActive) + " + ok * " + std::to_string(kInRange) + " + first * " +
                      std::to_string(kFirst) + " + last * " + std::to_string(kLast));
      // The row tiles: lhs's rows in place ([T*tm, K] viewed as [T, tm, K]) when the module's
      // reshape is absorbed.
      const std::string lhs_arg = m.lhs_rows ? "jnp.reshape(" + names.Of(m.lhs_rows) + ", " + PyTuple({m.t, m.tm, m.k}) + ")"
                                             : names.Of(m.lhs);
      std::vector<std::string> args = {"tile", "row_tile", "group", "visit", "flags", lhs_arg, names.Of(m.rhs)};
      if (has_mask) {
        Line(fn, 4, "mask = jnp.reshape(" + Canonical(m.mask, m, 1, names) + ".astype(jnp.int32), (" + V + ", " + TM + ", 1))");
        args.push_back("mask");
      }
      const std::string L = "lambda n, e, kk, tile, row_tile, group, visit, flags";
      const std::string BN = std::to_string(bn), BK = std::to_string(bk);
      std::vector<std::string> in_specs = {
          "pl.BlockSpec((None, " + TM + ", " + BK + "), " + L + ": (row_tile[e], 0, kk))",
          m.rhs_transposed ? "pl.BlockSpec((None, " + BN + ", " + BK + "), " + L + ": (group[e], n, kk))"
                           : "pl.BlockSpec((None, " + BK + ", " + BN + "), " + L + ": (group[e], kk, n))"};
      if (has_mask) in_specs.push_back("pl.BlockSpec((None, " + TM + ", 1), " + L + ": (visit[e], 0, 0))");
      const int64_t limit = ScopedVmemLimit(target, vmem);
      Line(fn, 4, "o = pl.pallas_call(");
      Line(fn, 8, "_kernel_" + kid + "_body,");
      Line(fn, 8, "grid_spec=pltpu.PrefetchScalarGridSpec(");
      Line(fn, 12, "num_scalar_prefetch=5,");
      Line(fn, 12, "grid=(" + std::to_string(nn) + ", " + E + ", " + std::to_string(nk) + "),");
      Line(fn, 12, "in_specs=[" + Join(in_specs) + "],");
      Line(fn, 12, "out_specs=pl.BlockSpec((None, " + TM + ", " + BN + "), " + L + ": (tile[e], 0, n)),");
      Line(fn, 12, "scratch_shapes=[pltpu.VMEM((" + TM + ", " + BN + "), jnp.float32)],");
      Line(fn, 8, "),");
      Line(fn, 8, "out_shape=jax.ShapeDtypeStruct(" + PyTuple({m.t, m.tm, m.n}) + ", " + out_t + "),");
      Line(fn, 8, "compiler_params=pltpu.CompilerParams(dimension_semantics=(\"parallel\", \"arbitrary\", \"arbitrary\"), "
                  "vmem_limit_bytes=" + std::to_string(limit) + "),");
      Line(fn, 8, "interpret=_interpret(),");
      Line(fn, 4, ")(" + Join(args) + ")");
      if (m.out_convert) {
        Line(fn, 4, names.Of(m.out_convert) + " = jnp.reshape(o, " + PyTuple(m.out_convert->shape.dims()) + ")");
      } else {
        Line(fn, 4, names.Of(m.scatter) + " = o");
      }
    }
  }
  std::vector<std::string> outs;
  for (const Instruction* o : pg.outputs) outs.push_back(names.Of(o));
  Line(fn, 4, "return " + TupleOf(outs));

  // The performance model's view: per N block, every visit entry does one [tm, bk] x [bk, bn]
  // matmul per K step; the empty entries (one per tile) are skipped. Each computing step reads its
  // row-tile and weight blocks; each tile's output block is written once per N block.
  const int64_t steps = nn * entries * nk;
  shape.grid_steps = steps;
  shape.skipped_steps = nn * m.t * nk;
  shape.mxu_m = m.tm;
  shape.mxu_n = bn;
  shape.mxu_k = bk;
  shape.mxu_bf16 = !f32_dot;
  shape.vpu_flops_per_step = (has_mask ? 2 : 1) * m.tm * bn;
  const int64_t active = std::max<int64_t>(1, nn * m.v * nk);
  const int64_t w_block = bk * bn * Bytes(m.rhs);
  const int64_t in_total = active * (m.tm * bk * Bytes(m.lhs) + w_block + (has_mask ? m.tm * 4 : 0));
  const int64_t out_total = m.t * m.tm * m.n * Bytes(OutValue(m));
  shape.in_bytes_per_step = in_total / active;
  shape.out_bytes_per_step = out_total / active;
  shape.vmem_bytes = vmem;

  int64_t flops = 0;
  for (size_t k : pg.kernels) flops += plan.kernels[k].flops;
  std::vector<std::string> in_pallas;
  for (const Instruction* c : m.core) {
    if (std::find(anchor.instructions.begin(), anchor.instructions.end(), c) != anchor.instructions.end()) {
      in_pallas.push_back(c->name);
    }
  }
  std::sort(in_pallas.begin(), in_pallas.end());
  std::vector<std::string> all_core;
  for (const Instruction* c : m.core) all_core.push_back(c->name);
  std::sort(all_core.begin(), all_core.end());
  KernelText t;
  t.text = body.str() + "\n\n" + fn.str();
  t.map = {{"name", anchor.name},
           {"family", "grouped_gemm"},
           {"runs", "pallas"},
           {"flops", flops},
           {"flops_computed", 2 * m.v * m.tm * m.k * m.n},
           {"bytes", in_total + out_total},
           {"grid", {nn, entries, nk}},
           {"blocks", {{"tm", m.tm}, {"gmm_bn", bn}, {"gmm_bk", bk}}},
           {"dimension_semantics", {"parallel", "arbitrary", "arbitrary"}},
           {"visits", m.v},
           {"tiles", m.t},
           {"groups", m.g},
           {"skipped_blocks", shape.skipped_steps},
           {"fused_kernels", fused_names},
           {"ops_fused", all_core},
           {"ops_in_pallas", in_pallas},
           {"ops_in_glue", glue_names},
           {"tpu_kernel_shape", target::ToJson(shape)}};
  if (!glue_names.empty()) t.map["glue_reason"] = "the visit schedule's values before the call and the scatter's users after it";
  return t;
}

}  // namespace mk::codegen::pallas
