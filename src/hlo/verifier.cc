// The module verifier: structure (entry, roots, parameters, operands defined before use, called
// computations that exist and do not recurse) and, per instruction, declared shape == inferred.
#include "hlo/verifier.h"

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "hlo/shape_inference_internal.h"

namespace mk::hlo {
namespace {

using shape_inference::Err;
using shape_inference::ShapeText;

// Negative dimensions can only come from hand-built IR, but every later layer multiplies them.
bool DimsAreValid(const Shape& shape) {
  if (shape.is_tuple()) {
    for (const Shape& s : shape.tuple_shapes()) {
      if (!DimsAreValid(s)) return false;
    }
    return true;
  }
  for (int64_t d : shape.dims()) {
    if (d < 0) return false;
  }
  return true;
}

Status VerifyParameters(const Computation& c) {
  std::map<int64_t, const Instruction*> by_number;
  size_t count = 0;
  for (const auto& inst : c.instructions()) {
    if (inst->opcode != Opcode::kParameter) continue;
    ++count;
    auto [it, inserted] = by_number.emplace(inst->parameter_number, inst.get());
    if (!inserted) {
      return Err(*inst, "parameter number " + std::to_string(inst->parameter_number) +
                            " is also used by %" + it->second->name);
    }
  }
  for (const auto& [number, inst] : by_number) {
    if (number < 0 || number >= static_cast<int64_t>(count)) {
      return Err(*inst, "parameter number " + std::to_string(number) + " is out of range: %" +
                            c.name + " has " + std::to_string(count) + " parameters");
    }
  }
  return Status::Ok();
}

Status VerifyInstruction(const Instruction& inst, const std::set<const Instruction*>& defined,
                         const std::set<const Computation*>& computations) {
  for (size_t i = 0; i < inst.operands.size(); ++i) {
    const Instruction* op = inst.operands[i];
    if (op == nullptr) return Err(inst, "operand " + std::to_string(i) + " is missing");
    if (!defined.count(op)) {
      return Err(inst, "operand %" + op->name + " is not defined before its use in this computation");
    }
  }
  for (size_t i = 0; i < inst.called.size(); ++i) {
    if (inst.called[i] == nullptr) {
      return Err(inst, "called computation " + std::to_string(i) + " is missing");
    }
    if (!computations.count(inst.called[i])) {
      return Err(inst, "calls %" + inst.called[i]->name + ", which is not in this module");
    }
  }
  if (!DimsAreValid(inst.shape)) {
    return Err(inst, "declared shape " + ShapeText(inst.shape) + " has a negative dimension");
  }
  MK_ASSIGN_OR_RETURN(Shape inferred, InferShape(inst));
  if (!inferred.SameAs(inst.shape)) {
    return Err(inst, "declared shape " + ShapeText(inst.shape) + " does not match inferred " +
                         ShapeText(inferred));
  }
  return Status::Ok();
}

Status VerifyComputation(const Computation& c, const std::set<const Computation*>& computations) {
  if (c.root() == nullptr) {
    return InvalidArgument("computation %" + c.name + " has no root instruction", c.loc);
  }
  MK_RETURN_IF_ERROR(VerifyParameters(c));
  std::set<const Instruction*> defined;
  for (const auto& inst : c.instructions()) {
    MK_RETURN_IF_ERROR(VerifyInstruction(*inst, defined, computations));
    defined.insert(inst.get());
  }
  if (!defined.count(c.root())) {
    return InvalidArgument("computation %" + c.name + ": root %" + c.root()->name +
                               " is not one of its instructions",
                           c.loc);
  }
  return Status::Ok();
}

// Depth-first search over the call graph, with an explicit stack (a module nested deeper than
// the thread's stack must be an error, not a crash here). A computation met again while still on
// the stack closes a cycle (HLO has no recursion: while/conditional/call bodies are separate
// computations). Each computation's height (1 + its deepest callee's) is remembered, so a chain
// of calls longer than kMaxCallDepth is refused whichever computation the search starts from:
// the interpreter and the code generators walk called computations recursively.
Status CheckCallGraph(const Computation& root, const std::set<const Computation*>& computations,
                      std::map<const Computation*, int64_t>& height) {
  constexpr int64_t kVisiting = 0;  // on the stack; finished computations have height >= 1
  struct Frame {
    const Computation* c;
    int64_t height = 1;
    size_t inst = 0;    // next instruction to look at
    size_t called = 0;  // next callee of that instruction
  };
  auto too_deep = [](const Instruction& inst, const Computation& callee) {
    return Err(inst, "calls %" + callee.name + ", which nests computations more than " +
                         std::to_string(kMaxCallDepth) + " deep (the limit)");
  };
  std::vector<Frame> stack = {{&root}};
  height[&root] = kVisiting;
  while (!stack.empty()) {
    Frame& f = stack.back();
    const auto& insts = f.c->instructions();
    if (f.inst >= insts.size()) {
      Frame done = f;
      stack.pop_back();
      height[done.c] = done.height;
      if (!stack.empty()) {
        Frame& parent = stack.back();
        parent.height = std::max(parent.height, done.height + 1);
        const Instruction& call = *parent.c->instructions()[parent.inst];
        if (parent.height > kMaxCallDepth) return too_deep(call, *done.c);
      }
      continue;
    }
    const Instruction& inst = *insts[f.inst];
    if (f.called >= inst.called.size()) {
      ++f.inst;
      f.called = 0;
      continue;
    }
    const Computation* callee = inst.called[f.called++];
    if (callee == nullptr || !computations.count(callee)) continue;  // reported later
    auto known = height.find(callee);
    if (known != height.end() && known->second == kVisiting) {
      return Err(inst, "calls %" + callee->name + " recursively (HLO has no recursion)");
    }
    if (known != height.end()) {
      f.height = std::max(f.height, known->second + 1);
      if (f.height > kMaxCallDepth) return too_deep(inst, *callee);
      continue;
    }
    height[callee] = kVisiting;
    stack.push_back({callee});
  }
  return Status::Ok();
}

}  // namespace

Status VerifyModule(const Module& module) {
  if (module.entry() == nullptr) {
    return InvalidArgument("module " + module.name + " has no ENTRY computation");
  }
  std::set<const Computation*> computations;
  for (const auto& c : module.computations()) {
    if (c) computations.insert(c.get());
  }
  if (!computations.count(module.entry())) {
    return InvalidArgument("module " + module.name + ": the ENTRY computation is not in the module");
  }
  // Recursion first: checking a call's signature is fine either way, but a cycle is the more
  // fundamental error to report.
  std::map<const Computation*, int64_t> height;
  for (const auto& c : module.computations()) {
    if (c && !height.count(c.get())) MK_RETURN_IF_ERROR(CheckCallGraph(*c, computations, height));
  }
  for (const auto& c : module.computations()) {
    if (c) MK_RETURN_IF_ERROR(VerifyComputation(*c, computations));
  }
  return Status::Ok();
}

}  // namespace mk::hlo
