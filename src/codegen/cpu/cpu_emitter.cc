#include "codegen/cpu/cpu_emitter.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "codegen/cpu/cpu_types.h"
#include "codegen/cpu/emit_context.h"
#include "codegen/cpu/gemm_row_reduce.h"
#include "codegen/cpu/kernel_spaces.h"
#include "support/sha256.h"

namespace mk::codegen::cpu {

using hlo::Instruction;
using hlo::Opcode;

namespace {

// Array leaves of a value's shape (one for an array, each element for a flat tuple).
Result<std::vector<hlo::Shape>> Leaves(const Instruction* inst) {
  if (inst->shape.is_array()) return std::vector<hlo::Shape>{inst->shape};
  if (!inst->shape.is_tuple()) return CannotLower(*inst, "token values");
  for (const auto& s : inst->shape.tuple_shapes()) {
    if (!s.is_array()) return CannotLower(*inst, "nested tuple values");
  }
  return inst->shape.tuple_shapes();
}

// Declares typed pointers for a value's slots; returns their names.
Result<std::vector<std::string>> SlotPointers(FunctionEmitter& f, const Instruction* inst,
                                              const ValueSlots& slots, bool writable) {
  MK_ASSIGN_OR_RETURN(auto leaves, Leaves(inst));
  std::vector<std::string> names;
  for (size_t i = 0; i < leaves.size() && i < slots.slots.size(); ++i) {
    MK_ASSIGN_OR_RETURN(std::string st, StorageType(leaves[i].dtype()));
    std::string name = "p" + f.module().Id(inst) + (leaves.size() > 1 ? "_" + std::to_string(i) : "");
    f.out() << "  " << (writable ? "" : "const ") << st << "* const " << name << " = static_cast<"
            << (writable ? "" : "const ") << st << "*>(slot[" << slots.slots[i] << "]);\n";
    names.push_back(name);
  }
  return names;
}

Result<std::string> EmitKernel(ModuleContext& mc, const analysis::Kernel& kernel,
                               const space::Schedule& schedule) {
  FunctionEmitter f(mc, schedule);
  f.BeginKernel(kernel);
  for (const Instruction* in : kernel.inputs) {
    if (in->opcode == Opcode::kConstant) {
      MK_RETURN_IF_ERROR(f.EmitInstruction(in));
      continue;
    }
    auto it = mc.slots().find(in);
    if (it == mc.slots().end()) return Internal("kernel input %" + in->name + " has no slot");
    MK_ASSIGN_OR_RETURN(auto ptrs, SlotPointers(f, in, it->second, false));
    MK_ASSIGN_OR_RETURN(auto leaves, Leaves(in));
    std::vector<std::string> fns;
    for (size_t i = 0; i < ptrs.size(); ++i) {
      std::string fn = "v" + mc.Id(in) + (leaves.size() > 1 ? "_" + std::to_string(i) : "");
      MK_RETURN_IF_ERROR(f.DefineLoadLambda(fn, leaves[i], ptrs[i]));
      fns.push_back(fn);
    }
    f.SetTupleFns(in, fns);
  }
  for (const Instruction* out : kernel.outputs) {
    auto it = mc.slots().find(out);
    if (it == mc.slots().end()) return Internal("kernel output %" + out->name + " has no slot");
    MK_ASSIGN_OR_RETURN(auto ptrs, SlotPointers(f, out, it->second, true));
    f.SetOutputPtrs(out, ptrs);
  }
  std::vector<const Instruction*> order = kernel.instructions;
  if (const RowReduceEmission* rr = f.row_reduce()) {
    order = RowReduceEmissionOrder(kernel, rr->plan);
  }
  for (const Instruction* inst : order) MK_RETURN_IF_ERROR(f.EmitInstruction(inst));
  MK_RETURN_IF_ERROR(f.EndKernel());
  if (f.HasDeferredGemm()) return Internal(kernel.name + ": the GEMM waited for an epilogue root it never met");
  std::ostringstream fn;
  // GCC's tuning for AVX-512 CPUs keeps loops at 256 bits; the schedule may ask for 512 for this
  // kernel's function (its lambdas and OpenMP bodies included; the prelude keeps the default).
  const bool wide = schedule.Get("vector_bits", 0) == 512;
  if (wide) fn << "#pragma GCC push_options\n#pragma GCC target(\"prefer-vector-width=512\")\n";
  fn << "// " << kernel.name << ": " << kernel.instructions.size() << " ops, " << kernel.flops
     << " flops, " << kernel.bytes << " bytes\n"
     << "static void kernel_" << kernel.id << "(void** slot) {\n"
     << f.Finish() << "}\n";
  if (wide) fn << "#pragma GCC pop_options\n";
  fn << "\n";
  return fn.str();
}

}  // namespace

const std::vector<std::string>& KernelFlags() {
  // -fno-math-errno: sqrt and friends set no errno, so they inline and vectorize (same results).
  // -fno-trapping-math: floating-point operations may be computed where the source computes
  // them only under a condition (same results; the kernels never read the exception flags).
  // Without it, an op used by only one arm of a ?: (mkrt::fmin_nan's, say) is sunk into a
  // branch GCC may not undo: 35k's fused clamp + GELU(tanh) epilogue loop stayed scalar.
  static const std::vector<std::string> flags = {"-fopenmp", "-fno-math-errno",
                                                 "-fno-trapping-math"};
  return flags;
}

space::KernelSpace CpuEmitter::SpaceFor(const analysis::Kernel& kernel,
                                        const target::Target& target) const {
  return SpaceFor(kernel, target, SpaceRequest{});
}

space::KernelSpace CpuEmitter::SpaceFor(const analysis::Kernel& kernel,
                                        const target::Target& target,
                                        const SpaceRequest& request) const {
  space::KernelSpace s;
  switch (kernel.family) {
    case analysis::KernelFamily::kLoop:
      s = LoopKernelSpace(kernel, target);
      break;
    case analysis::KernelFamily::kReduction:
      s = ReductionKernelSpace(kernel, target);
      break;
    case analysis::KernelFamily::kContraction:
      s = ContractionKernelSpace(kernel, target, request.analytical);
      break;
    case analysis::KernelFamily::kStandalone:
      s = StandaloneKernelSpace(kernel, target);
      break;
  }
  // The loop, reduction and standalone domains are fixed lists already (their initial values
  // are the model's part); the contraction space drops the model's values from its domains.
  if (!request.analytical) space::CenterOnMedians(s);
  return s;
}

Result<Implementation> CpuEmitter::Emit(const analysis::FusionPlan& plan,
                                        const space::Candidate& candidate,
                                        const target::Target& target) const {
  if (!plan.module || !plan.module->entry()) return InvalidArgument("plan has no module");
  const hlo::Module& module = *plan.module;
  const hlo::Computation& entry = *module.entry();
  ModuleContext mc(target);
  Implementation impl;
  impl.target = "cpu";
  MK_ASSIGN_OR_RETURN(impl.buffers, EntryBuffers(module));

  // Slots: parameters, outputs, then temporaries for values that cross kernels.
  for (const auto& slot : impl.buffers) mc.NewSlot(slot.bytes);
  for (const Instruction* p : entry.parameters()) {
    if (!p->shape.is_array()) return CannotLower(*p, "tuple-shaped entry parameters");
    mc.slots()[p].slots = {static_cast<int>(p->parameter_number)};
  }
  const Instruction* root = entry.root();
  std::vector<const Instruction*> root_leaves;
  if (root->opcode == Opcode::kTuple) root_leaves.assign(root->operands.begin(), root->operands.end());
  else root_leaves.push_back(root);
  size_t num_params = entry.parameters().size();
  // Outputs a kernel cannot write in place (parameters, constants, repeats): copied at the end.
  std::vector<std::pair<const Instruction*, int>> copies;
  for (size_t o = 0; o < root_leaves.size(); ++o) {
    const Instruction* leaf = root_leaves[o];
    int out_slot = static_cast<int>(num_params + o);
    if (!leaf->shape.is_array()) return CannotLower(*leaf, "nested tuple outputs");
    if (leaf->opcode == Opcode::kParameter || leaf->opcode == Opcode::kConstant ||
        mc.slots().count(leaf)) {
      copies.push_back({leaf, out_slot});
    } else {
      mc.slots()[leaf].slots = {out_slot};
    }
  }
  for (const analysis::Kernel& k : plan.kernels) {
    for (const Instruction* out : k.outputs) {
      if (mc.slots().count(out)) continue;
      MK_ASSIGN_OR_RETURN(auto leaves, Leaves(out));
      for (const auto& s : leaves) mc.slots()[out].slots.push_back(mc.NewSlot(s.byte_size()));
    }
  }

  std::ostringstream kernels;
  for (const analysis::Kernel& k : plan.kernels) {
    MK_ASSIGN_OR_RETURN(std::string text,
                        EmitKernel(mc, k, candidate.For(static_cast<size_t>(k.id))));
    kernels << text;
  }

  std::vector<std::string> copy_sources;
  for (const auto& [leaf, out_slot] : copies) {
    if (leaf->opcode == Opcode::kConstant) {
      MK_ASSIGN_OR_RETURN(std::string arr, mc.ConstantArray(leaf));
      copy_sources.push_back(arr);
    } else {
      copy_sources.push_back("slot[" + std::to_string(mc.slots()[leaf].slots.at(0)) + "]");
    }
  }

  std::ostringstream src;
  src << "// Generated by maxkernel for target cpu (" << target.model << ").\n"
      << "// Module " << module.name << ": " << plan.kernels.size() << " kernels.\n"
      << kCpuRuntimeHeader << "\n#include <tuple>\n\nnamespace {\n\n"
      << mc.prelude().str() << "\n"
      << kernels.str() << "}  // namespace\n\n"
      << "extern \"C\" int mk_abi_version() { return 1; }\n\n"
      << "extern \"C\" void mk_kernel(void** buffers) {\n"
      << "  void* slot[" << std::max<size_t>(1, mc.slot_bytes().size()) << "];\n";
  for (size_t i = 0; i < impl.buffers.size(); ++i) src << "  slot[" << i << "] = buffers[" << i << "];\n";
  for (size_t i = impl.buffers.size(); i < mc.slot_bytes().size(); ++i) {
    src << "  mkrt::Scratch s" << i << "(" << std::max<int64_t>(1, mc.slot_bytes()[i])
        << "); slot[" << i << "] = s" << i << ".p;\n";
  }
  for (const analysis::Kernel& k : plan.kernels) src << "  kernel_" << k.id << "(slot);\n";
  for (size_t c = 0; c < copies.size(); ++c) {
    src << "  std::memcpy(slot[" << copies[c].second << "], " << copy_sources[c] << ", "
        << copies[c].first->shape.byte_size() << ");\n";
  }
  src << "}\n";
  std::string text = src.str();
  impl.sources.push_back({"module.cc", text});
  impl.flags = KernelFlags();
  std::string key;
  for (const auto& s : impl.sources) key += s.name + "\n" + s.text;
  for (const auto& fl : impl.flags) key += fl + "\n";
  impl.hash = Sha256Hex(key);
  return impl;
}

}  // namespace mk::codegen::cpu
