#include "hlo/call_inliner.h"

#include <map>
#include <set>
#include <string>

namespace mk::hlo {

namespace {

class CallInliner {
 public:
  explicit CallInliner(Module& out) : out_(out) {}

  // The inlined copy of `c` in the output module (made on first use, callees first).
  Result<Computation*> Clone(const Computation* c) {
    auto it = done_.find(c);
    if (it != done_.end()) return it->second;
    if (!active_.insert(c).second) {
      return InvalidArgument("computation " + c->name + " calls itself", c->loc);
    }
    // Callees first, so the output module keeps callees before callers.
    for (const auto& inst : c->instructions()) {
      for (const Computation* callee : inst->called) {
        if (callee == nullptr) return InvalidArgument("%" + inst->name + " calls nothing", inst->loc);
        MK_RETURN_IF_ERROR(Clone(callee).status());
      }
    }
    auto nc = std::make_unique<Computation>();
    nc->name = c->name;
    nc->loc = c->loc;
    std::set<std::string> names;
    for (const auto& inst : c->instructions()) names.insert(inst->name);
    std::map<const Instruction*, Instruction*> map;
    for (const auto& inst : c->instructions()) {
      if (inst->opcode == Opcode::kCall) {
        MK_ASSIGN_OR_RETURN(Instruction * result, InlineCall(*inst, map, names, *nc));
        map[inst.get()] = result;
      } else {
        MK_ASSIGN_OR_RETURN(Instruction * copy, CloneInstruction(*inst, map, inst->name, *nc));
        map[inst.get()] = copy;
      }
    }
    if (c->root() == nullptr) return InvalidArgument("computation " + c->name + " has no root");
    nc->set_root(map.at(c->root()));
    nc->SortParameters();
    active_.erase(c);
    Computation* raw = out_.AddComputation(std::move(nc));
    done_[c] = raw;
    owned_.insert(raw);
    return raw;
  }

 private:
  // A copy of `inst` named `name` whose operands and called computations point into the output.
  Result<Instruction*> CloneInstruction(const Instruction& inst,
                                        const std::map<const Instruction*, Instruction*>& map,
                                        const std::string& name, Computation& into) {
    auto copy = std::make_unique<Instruction>(inst);
    copy->name = name;
    for (Instruction*& op : copy->operands) {
      auto it = map.find(op);
      if (it == map.end()) {
        return InvalidArgument("%" + inst.name + " uses %" + op->name + " before it is defined",
                               inst.loc);
      }
      op = it->second;
    }
    for (Computation*& callee : copy->called) {
      // Instructions of an already-inlined callee point into the output module already.
      if (owned_.count(callee)) continue;
      auto it = done_.find(callee);
      if (it == done_.end()) return Internal("%" + inst.name + " calls an unknown computation");
      callee = it->second;
    }
    return into.AddInstruction(std::move(copy));
  }

  // Clones the (already inlined) callee of `call` into `into`; returns the value of the call.
  Result<Instruction*> InlineCall(const Instruction& call,
                                  const std::map<const Instruction*, Instruction*>& caller_map,
                                  std::set<std::string>& names, Computation& into) {
    if (call.called.size() != 1) return InvalidArgument("call %" + call.name + " needs to_apply", call.loc);
    auto found = done_.find(call.called[0]);
    if (found == done_.end()) return Internal("call %" + call.name + " to an unknown computation");
    const Computation* callee = found->second;
    if (callee->parameters().size() != call.operands.size()) {
      return InvalidArgument("call %" + call.name + " passes " +
                                 std::to_string(call.operands.size()) + " operands to " +
                                 callee->name + ", which takes " +
                                 std::to_string(callee->parameters().size()),
                             call.loc);
    }
    std::map<const Instruction*, Instruction*> map;
    for (const Instruction* p : callee->parameters()) {
      size_t n = static_cast<size_t>(p->parameter_number);
      if (n >= call.operands.size()) return InvalidArgument("bad parameter number in " + callee->name);
      map[p] = caller_map.at(call.operands[n]);
    }
    for (const auto& inst : callee->instructions()) {
      if (inst->opcode == Opcode::kParameter) continue;
      std::string name = call.name + "." + inst->name;
      for (int k = 1; names.count(name); ++k) name = call.name + "." + inst->name + "." + std::to_string(k);
      names.insert(name);
      MK_ASSIGN_OR_RETURN(Instruction * copy, CloneInstruction(*inst, map, name, into));
      map[inst.get()] = copy;
    }
    return map.at(callee->root());
  }

  Module& out_;
  std::map<const Computation*, Computation*> done_;  // input computation -> its inlined copy
  std::set<const Computation*> owned_;               // computations of the output module
  std::set<const Computation*> active_;
};

}  // namespace

Result<std::unique_ptr<Module>> InlineCalls(const Module& module) {
  auto out = std::make_unique<Module>();
  out->name = module.name;
  out->header_attributes = module.header_attributes;
  CallInliner inliner(*out);
  for (const auto& c : module.computations()) MK_RETURN_IF_ERROR(inliner.Clone(c.get()).status());
  if (module.entry() != nullptr) {
    MK_ASSIGN_OR_RETURN(Computation * entry, inliner.Clone(module.entry()));
    out->set_entry(entry);
  }
  return out;
}

}  // namespace mk::hlo
