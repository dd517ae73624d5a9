// while, conditional and call. Each called computation becomes a separate C++ function over
// state buffers, `void f(void* const* in, void* const* out)`, with one pointer per array leaf of
// its parameters (in) and of its root (out), emitted by a FunctionEmitter like a kernel: cheap
// ops are lambdas, whole-array ops are materialized. A lambda with several users is stored once
// (the called computation has no fusion plan to decide that, and re-evaluating shared lambdas
// grows exponentially with the depth of the sharing).
#include <sstream>
#include <unordered_map>

#include "codegen/cpu/cpu_types.h"
#include "codegen/cpu/materialize_ops.h"
#include "hlo/module.h"

namespace mk::codegen::cpu {

using hlo::Instruction;
using hlo::Opcode;

namespace {

// Emits `comp` as function `name` into the module prelude.
Status EmitComputationFunction(FunctionEmitter& caller, const Instruction& inst,
                               const hlo::Computation* comp, const std::string& name) {
  if (comp == nullptr || comp->root() == nullptr) return CannotLower(inst, "missing computation");
  ModuleContext& mc = caller.module();
  FunctionEmitter f(mc, caller.schedule());
  int in_slot = 0;
  for (const Instruction* p : comp->parameters()) {
    MK_ASSIGN_OR_RETURN(auto leaves, ArrayLeaves(*p));
    std::vector<std::string> ptrs;
    for (const hlo::Shape& s : leaves) {
      MK_ASSIGN_OR_RETURN(std::string st, StorageType(s.dtype()));
      std::string ptr = f.NewName("in");
      f.out() << "  const " << st << "* const " << ptr << " = static_cast<const " << st
              << "*>(in[" << in_slot++ << "]);\n";
      ptrs.push_back(ptr);
    }
    MK_RETURN_IF_ERROR(DefineStoredValue(f, *p, ptrs));
  }
  const Instruction* root = comp->root();
  MK_ASSIGN_OR_RETURN(auto root_leaves, ArrayLeaves(*root));
  std::vector<std::string> outs;
  for (size_t k = 0; k < root_leaves.size(); ++k) {
    MK_ASSIGN_OR_RETURN(std::string st, StorageType(root_leaves[k].dtype()));
    std::string ptr = f.NewName("out");
    f.out() << "  " << st << "* const " << ptr << " = static_cast<" << st << "*>(out[" << k
            << "]);\n";
    outs.push_back(ptr);
  }
  if (root->opcode != Opcode::kParameter) f.SetOutputPtrs(root, outs);
  std::unordered_map<const Instruction*, int> users;
  for (const auto& i : comp->instructions()) {
    for (const Instruction* op : i->operands) ++users[op];
  }
  for (const auto& i : comp->instructions()) {
    const Instruction* inst_i = i.get();
    if (inst_i->opcode == Opcode::kParameter) continue;
    MK_RETURN_IF_ERROR(f.EmitInstruction(inst_i));
    if (inst_i != root && users[inst_i] > 1 && inst_i->shape.is_array() &&
        inst_i->opcode != Opcode::kConstant && IsElemental(*inst_i)) {
      MK_ASSIGN_OR_RETURN(std::string ptr, MaterializeToScratch(f, *inst_i));
      MK_RETURN_IF_ERROR(DefineStoredValue(f, *inst_i, {ptr}));
    }
  }
  if (root->opcode == Opcode::kParameter) {
    for (size_t k = 0; k < root_leaves.size(); ++k) {
      MK_RETURN_IF_ERROR(f.EmitMaterializeLoop(
          root_leaves[k], f.Fn(root, root->shape.is_tuple() ? static_cast<int>(k) : -1), outs[k]));
    }
  }
  mc.prelude() << "// computation " << comp->name << " (called by %" << inst.name << ")\n"
               << "static void " << name << "(void* const* in, void* const* out) {\n"
               << "  (void)in; (void)out;\n"
               << f.out().str() << "}\n\n";
  return Status::Ok();
}

// Stores the leaves of value `op` into fresh scratch; returns the typed pointers.
Result<std::vector<std::string>> StoreLeaves(FunctionEmitter& f, const Instruction& op) {
  MK_ASSIGN_OR_RETURN(auto leaves, ArrayLeaves(op));
  std::vector<std::string> ptrs;
  for (size_t k = 0; k < leaves.size(); ++k) {
    MK_ASSIGN_OR_RETURN(std::string p,
                        MaterializeToScratch(f, op, op.shape.is_tuple() ? static_cast<int>(k) : -1));
    ptrs.push_back(p);
  }
  return ptrs;
}

std::string PointerArray(const std::string& name, const std::vector<std::string>& ptrs) {
  std::string s = "void* " + name + "[" + std::to_string(std::max<size_t>(1, ptrs.size())) + "] = {";
  for (size_t i = 0; i < ptrs.size(); ++i) s += (i ? ", " : "") + ptrs[i];
  if (ptrs.empty()) s += "nullptr";
  return s + "};";
}

// Output storage for every leaf of `inst`.
Result<std::vector<std::string>> OutputStorage(FunctionEmitter& f, const Instruction& inst) {
  MK_ASSIGN_OR_RETURN(auto leaves, ArrayLeaves(inst));
  std::vector<std::string> ptrs;
  for (size_t k = 0; k < leaves.size(); ++k) {
    MK_ASSIGN_OR_RETURN(std::string p, f.StorageFor(&inst, static_cast<int>(k), leaves[k]));
    ptrs.push_back(p);
  }
  return ptrs;
}

// Calls `comp` (emitted as `fn`) on the operands `args` (each stored to scratch first), writing
// into `outs`.
Status EmitCallOf(FunctionEmitter& f, const std::vector<const Instruction*>& args,
                  const std::string& fn, const std::vector<std::string>& outs) {
  std::vector<std::string> in;
  for (const Instruction* a : args) {
    MK_ASSIGN_OR_RETURN(auto ptrs, StoreLeaves(f, *a));
    in.insert(in.end(), ptrs.begin(), ptrs.end());
  }
  f.out() << "    " << PointerArray("call_in", in) << "\n    " << PointerArray("call_out", outs)
          << "\n    " << fn << "(call_in, call_out);\n";
  return Status::Ok();
}

}  // namespace

Status EmitWhile(FunctionEmitter& f, const Instruction& inst) {
  if (inst.operands.size() != 1 || inst.called.size() != 2) {
    return CannotLower(inst, "while needs one operand, a condition and a body");
  }
  MK_ASSIGN_OR_RETURN(auto leaves, ArrayLeaves(inst));
  const std::string id = f.module().Id(&inst);
  const std::string cond = "while" + id + "_cond", body = "while" + id + "_body";
  MK_RETURN_IF_ERROR(EmitComputationFunction(f, inst, inst.called[0], cond));
  MK_RETURN_IF_ERROR(EmitComputationFunction(f, inst, inst.called[1], body));
  MK_ASSIGN_OR_RETURN(auto outs, OutputStorage(f, inst));
  auto& o = f.out();
  o << "  {\n";
  // Double-buffered state: the body reads `cur` and writes `nxt`, then the two swap.
  MK_ASSIGN_OR_RETURN(auto cur, StoreLeaves(f, *inst.operands[0]));
  std::vector<std::string> nxt;
  for (const hlo::Shape& s : leaves) {
    MK_ASSIGN_OR_RETURN(std::string p, f.DeclareScratch(s, "n"));
    nxt.push_back(p);
  }
  o << "  " << PointerArray("cur", cur) << "\n  " << PointerArray("nxt", nxt) << "\n"
    << "  for (;;) {\n    uint8_t go = 0;\n    void* go_out[1] = {&go};\n    " << cond
    << "(cur, go_out);\n    if (!go) break;\n    " << body << "(cur, nxt);\n"
    << "    for (int k = 0; k < " << leaves.size() << "; ++k) std::swap(cur[k], nxt[k]);\n  }\n";
  for (size_t k = 0; k < leaves.size(); ++k) {
    o << "  std::memcpy(" << outs[k] << ", cur[" << k << "], " << leaves[k].byte_size() << ");\n";
  }
  o << "  }\n";
  return DefineStoredValue(f, inst, outs);
}

Status EmitConditional(FunctionEmitter& f, const Instruction& inst) {
  const size_t n = inst.called.size();
  if (n == 0 || inst.operands.size() != n + 1) {
    return CannotLower(inst, "conditional needs one operand per branch");
  }
  const Instruction* selector = inst.operands[0];
  const bool pred = selector->shape.dtype() == hlo::DType::kPred;
  if (!selector->shape.is_array() || selector->shape.rank() != 0 || (pred && n != 2)) {
    return CannotLower(inst, "branch selector must be a scalar (pred with two branches)");
  }
  const std::string id = f.module().Id(&inst);
  std::vector<std::string> fns;
  for (size_t b = 0; b < n; ++b) {
    fns.push_back("cond" + id + "_branch" + std::to_string(b));
    MK_RETURN_IF_ERROR(EmitComputationFunction(f, inst, inst.called[b], fns.back()));
  }
  MK_ASSIGN_OR_RETURN(auto outs, OutputStorage(f, inst));
  auto& o = f.out();
  std::string sel = CallExpr(f.Fn(selector), {});
  o << "  {\n  int64_t branch = ";
  if (pred) {
    o << "(" << sel << ") ? 0 : 1;\n";
  } else {
    // Out-of-range indices run the last branch (XLA's rule).
    o << "mkrt::index_of(" << sel << ");\n  if (branch < 0 || branch >= " << n << ") branch = "
      << n - 1 << ";\n";
  }
  o << "  switch (branch) {\n";
  for (size_t b = 0; b < n; ++b) {
    o << "  case " << b << ": {\n";
    MK_RETURN_IF_ERROR(EmitCallOf(f, {inst.operands[b + 1]}, fns[b], outs));
    o << "    break;\n  }\n";
  }
  o << "  default: break;\n  }\n  }\n";
  return DefineStoredValue(f, inst, outs);
}

// `call` is normally inlined before planning (hlo/call_inliner.h); this keeps any that remain
// correct.
Status EmitCall(FunctionEmitter& f, const Instruction& inst) {
  if (inst.called.size() != 1) return CannotLower(inst, "call needs one computation");
  const std::string fn = "call" + f.module().Id(&inst);
  MK_RETURN_IF_ERROR(EmitComputationFunction(f, inst, inst.called[0], fn));
  MK_ASSIGN_OR_RETURN(auto outs, OutputStorage(f, inst));
  f.out() << "  {\n";
  std::vector<const Instruction*> args(inst.operands.begin(), inst.operands.end());
  MK_RETURN_IF_ERROR(EmitCallOf(f, args, fn, outs));
  f.out() << "  }\n";
  return DefineStoredValue(f, inst, outs);
}

}  // namespace mk::codegen::cpu
