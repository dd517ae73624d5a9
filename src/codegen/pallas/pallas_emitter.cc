#include "codegen/pallas/pallas_emitter.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "codegen/pallas/block_plan.h"
#include "codegen/pallas/flash_attention_call.h"
#include "codegen/pallas/grouped_gemm_call.h"
#include "codegen/pallas/jnp_ops.h"
#include "codegen/pallas/pallas_call.h"
#include "codegen/pallas/pallas_space.h"
#include "support/sha256.h"
#include "support/text_escape.h"

namespace mk::codegen::pallas {

using hlo::Instruction;
using hlo::Opcode;

namespace {

Result<std::string> ParamTable(const std::vector<BufferSlot>& slots, BufferSlot::Role role) {
  std::vector<std::string> rows;
  for (const auto& s : slots) {
    if (s.role != role) continue;
    rows.push_back("(" + PyStringLiteral(std::string(hlo::DTypeName(s.shape.dtype()))) + ", " +
                   PyTuple(s.shape.dims()) + ")");
  }
  return "[" + Join(rows) + "]";
}


}  // namespace

space::KernelSpace PallasEmitter::SpaceFor(const analysis::Kernel& kernel,
                                           const target::Target& target) const {
  space::KernelSpace s = Decide(kernel, target).space;
  AddAttentionSpace(kernel, target, s);
  AddGroupedGemmSpace(kernel, target, s);
  return s;
}

Result<Implementation> PallasEmitter::Emit(const analysis::FusionPlan& plan,
                                           const space::Candidate& candidate,
                                           const target::Target& target) const {
  if (!plan.module || !plan.module->entry()) return InvalidArgument("plan has no module");
  if (target.kind != target::TargetKind::kTpu) {
    return InvalidArgument("the Pallas emitter generates for TPU targets, not " + target.name);
  }
  const hlo::Module& module = *plan.module;
  const hlo::Computation& entry = *module.entry();
  Implementation impl;
  impl.target = target.name;
  impl.entry_symbol = "workload";
  MK_ASSIGN_OR_RETURN(impl.buffers, EntryBuffers(module));
  const Names names(entry);

  std::set<const Instruction*> in_kernel;
  for (const auto& k : plan.kernels) in_kernel.insert(k.instructions.begin(), k.instructions.end());

  std::ostringstream kernels;
  nlohmann::json map_kernels = nlohmann::json::array();
  int pallas_count = 0, fused_count = 0;
  // Attention chains (q.k dot, softmax, p.v dot) become one flash-attention call at their last
  // kernel; the others they replace emit nothing (flash_attention.h).
  AttentionScan attention = FindAttention(plan);
  // Fallbacks (kGlueFallbackKey): an attention chain whose call the compiler refused is emitted
  // kernel by kernel (1 at its anchor); any other kernel, or an anchor refused again alone (2),
  // becomes glue.
  auto fallback = [&](const analysis::Kernel& k) {
    return candidate.For(static_cast<size_t>(k.id)).Get(kGlueFallbackKey, 0);
  };
  std::set<size_t> split_anchors;
  std::erase_if(attention.found, [&](const PlannedAttention& pa) {
    if (fallback(plan.kernels[pa.anchor]) == 0) return false;
    split_anchors.insert(pa.anchor);
    return true;
  });
  auto fell_back = [&](const analysis::Kernel& k) {
    const size_t index = static_cast<size_t>(&k - plan.kernels.data());
    return fallback(k) >= (split_anchors.count(index) ? 2 : 1);
  };
  std::map<size_t, const PlannedAttention*> replaced;
  std::set<size_t> attention_kernels;
  for (const auto& pa : attention.found) {
    for (size_t k : pa.kernels) replaced[k] = &pa;
    attention_kernels.insert(pa.kernels.begin(), pa.kernels.end());
  }
  // Grouped GEMMs (per-visit gathers, batched dot, mask, scatter-add) become one call at the
  // scatter's kernel (grouped_gemm.h). One whose call the compiler refused is emitted kernel by
  // kernel (its anchor, the scatter, is glue then).
  GroupedGemmScan grouped = FindGroupedGemm(plan, attention_kernels);
  std::erase_if(grouped.found, [&](const PlannedGroupedGemm& pg) {
    if (std::string why = GroupedGemmDoesNotFit(pg.match, target); !why.empty()) {
      grouped.refused.push_back("%" + pg.match.scatter->name + ": " + why);
      return true;
    }
    if (fallback(plan.kernels[pg.anchor]) == 0) return false;
    split_anchors.insert(pg.anchor);
    return true;
  });
  std::map<size_t, const PlannedGroupedGemm*> replaced_gmm;
  for (const auto& pg : grouped.found) {
    for (size_t k : pg.kernels) replaced_gmm[k] = &pg;
  }
  for (const analysis::Kernel& k : plan.kernels) {
    const size_t index = static_cast<size_t>(&k - plan.kernels.data());
    if (auto it = replaced_gmm.find(index); it != replaced_gmm.end()) {
      const PlannedGroupedGemm& pg = *it->second;
      if (index != pg.anchor) {
        map_kernels.push_back(GroupedGemmFusedEntry(k, plan.kernels[pg.anchor], pg));
        ++fused_count;
        continue;
      }
      MK_ASSIGN_OR_RETURN(KernelText t, EmitGroupedGemmKernel(plan, pg, candidate.For(static_cast<size_t>(k.id)),
                                                              target, names));
      ++pallas_count;
      kernels << t.text << "\n\n";
      map_kernels.push_back(t.map);
      continue;
    }
    if (auto it = replaced.find(index); it != replaced.end()) {
      const PlannedAttention& pa = *it->second;
      if (index != pa.anchor) {
        map_kernels.push_back(FusedKernelEntry(k, plan.kernels[pa.anchor]));
        ++fused_count;
        continue;
      }
      MK_ASSIGN_OR_RETURN(KernelText t, EmitAttentionKernel(plan, pa, candidate.For(static_cast<size_t>(k.id)),
                                                            target, names));
      ++pallas_count;
      kernels << t.text << "\n\n";
      map_kernels.push_back(t.map);
      continue;
    }
    KernelDecision d = Decide(k, target);
    KernelText t;
    if (d.plan.pallas && fell_back(k)) {
      auto why = refused_.find(k.id);
      MK_ASSIGN_OR_RETURN(t, EmitGlueKernel(k, "fallback: the TPU compiler refused its pallas_call" +
                                                   (why == refused_.end() ? std::string()
                                                                          : " (" + why->second + ")"),
                                            names));
      t.map["fallback"] = true;
    } else if (d.plan.pallas) {
      MK_ASSIGN_OR_RETURN(t, EmitPallasKernel(k, d.plan, candidate.For(static_cast<size_t>(k.id)),
                                              target, names));
      ++pallas_count;
    } else {
      MK_ASSIGN_OR_RETURN(t, EmitGlueKernel(k, d.plan.glue_reason, names));
    }
    kernels << t.text << "\n\n";
    map_kernels.push_back(t.map);
  }

  std::ostringstream wl;
  std::vector<std::string> params;
  for (const Instruction* p : entry.parameters()) params.push_back(names.Of(p));
  Line(wl, 0, "def workload(" + Join(params) + "):");
  Line(wl, 4, "\"\"\"The module's entry computation: its parameters in order, its outputs.\"\"\"");
  for (const Instruction* p : entry.parameters()) {
    MK_ASSIGN_OR_RETURN(std::string t, JnpDType(p->shape.dtype()));
    Line(wl, 4, names.Of(p) + " = jnp.asarray(" + names.Of(p) + ", " + t + ")");
  }
  // Constants no kernel holds (a kernel input or an output by itself).
  for (const auto& i : entry.instructions()) {
    if (i->opcode != Opcode::kConstant || in_kernel.count(i.get())) continue;
    MK_ASSIGN_OR_RETURN(std::string e, i->shape.rank() == 0 ? ScalarConstantExpr(*i) : ArrayConstantExpr(*i));
    Line(wl, 4, names.Of(i.get()) + " = " + e);
  }
  for (const analysis::Kernel& k : plan.kernels) {
    std::vector<std::string> ins, outs;
    std::vector<const Instruction*> kin = k.inputs, kout = k.outputs;
    if (auto it = replaced.find(static_cast<size_t>(&k - plan.kernels.data())); it != replaced.end()) {
      if (static_cast<size_t>(&k - plan.kernels.data()) != it->second->anchor) continue;
      kin = it->second->inputs;
      kout = it->second->outputs;
    }
    if (auto it = replaced_gmm.find(static_cast<size_t>(&k - plan.kernels.data())); it != replaced_gmm.end()) {
      if (static_cast<size_t>(&k - plan.kernels.data()) != it->second->anchor) continue;
      kin = it->second->inputs;
      kout = it->second->outputs;
    }
    for (const Instruction* i : kin) ins.push_back(names.Of(i));
    for (const Instruction* o : kout) outs.push_back(names.Of(o));
    Line(wl, 4, TupleOf(outs) + " = kernel_" + std::to_string(k.id) + "(" + Join(ins) + ")");
  }
  const Instruction* root = entry.root();
  if (root->opcode == Opcode::kTuple && !in_kernel.count(root)) {
    std::vector<std::string> outs;
    for (const Instruction* o : root->operands) outs.push_back(names.Of(o));
    Line(wl, 4, "return " + TupleOf(outs));
  } else {
    Line(wl, 4, "return " + names.Of(root));
  }

  MK_ASSIGN_OR_RETURN(std::string param_table, ParamTable(impl.buffers, BufferSlot::Role::kParameter));
  MK_ASSIGN_OR_RETURN(std::string output_table, ParamTable(impl.buffers, BufferSlot::Role::kOutput));
  std::ostringstream src;
  src << "# Generated by maxkernel for target " << OneLineText(target.name) << " ("
      << OneLineText(target.model) << "): Pallas TPU kernels and jnp glue.\n"
      << "# Module " << OneLineText(module.name) << ": " << plan.kernels.size() << " kernels, "
      << pallas_count << " in pallas_call. kernel_map.json says where each runs and why.\n"
      << "import jax\nimport jax.numpy as jnp\nimport numpy as np\n"
      << "from jax.experimental import pallas as pl\n"
      << "from jax.experimental.pallas import tpu as pltpu\n\n"
      << "MODULE = " << PyStringLiteral(module.name) << "\n"
      << "TARGET = " << PyStringLiteral(target.name) << "\n"
      << "# Entry parameters and outputs: (element type, dims).\n"
      << "PARAMETERS = " << param_table << "\n"
      << "OUTPUTS = " << output_table << "\n"
      << "TUPLE_ROOT = " << (root->opcode == Opcode::kTuple ? "True" : "False") << "\n"
      << "# None compiles the kernels for a TPU; a runner sets a pltpu.InterpretParams to run them\n"
      << "# in TPU interpret mode on the CPU.\n"
      << "INTERPRET = None\n\n\n"
      << "def _interpret():\n    return False if INTERPRET is None else INTERPRET\n\n\n"
      << kernels.str() << wl.str();
  impl.sources.push_back({"kernel.py", src.str()});
  nlohmann::json map = {{"module", module.name},
                        {"target", target.name},
                        {"pallas_kernels", pallas_count},
                        {"fused_kernels", fused_count},
                        {"glue_kernels", static_cast<int>(plan.kernels.size()) - pallas_count - fused_count},
                        {"kernels", map_kernels}};
  if (!attention.refused.empty()) map["attention_refused"] = attention.refused;
  if (!grouped.refused.empty()) map["grouped_gemm_refused"] = grouped.refused;
  impl.sources.push_back(
      {"kernel_map.json", map.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"});
  std::string key;
  for (const auto& s : impl.sources) key += s.name + "\n" + s.text;
  impl.hash = Sha256Hex(key);
  return impl;
}

}  // namespace mk::codegen::pallas
