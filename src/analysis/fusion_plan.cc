#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "analysis/cost.h"
#include "analysis/fusion_plan.h"
#include "hlo/printer.h"

namespace mk::analysis {

using hlo::Instruction;
using hlo::Opcode;

namespace {

bool NeedsKernel(const Instruction* i, const hlo::Computation& entry) {
  if (i->opcode == Opcode::kParameter || i->opcode == Opcode::kConstant) return false;
  return !(i == entry.root() && i->opcode == Opcode::kTuple);
}

KernelFamily FamilyOf(const Kernel& k, const Instruction** hero) {
  *hero = nullptr;
  for (const Instruction* i : k.instructions) {
    if (i->opcode == Opcode::kDot || i->opcode == Opcode::kConvolution) {
      *hero = i;
      return KernelFamily::kContraction;
    }
  }
  for (const Instruction* i : k.instructions) {
    switch (i->opcode) {
      case Opcode::kReduce:
        if (i->operands.size() == 2 && i->shape.is_array()) {
          *hero = i;
          return KernelFamily::kReduction;
        }
        *hero = i;
        return KernelFamily::kStandalone;
      case Opcode::kGather: case Opcode::kScatter: case Opcode::kSort: case Opcode::kWhile:
      case Opcode::kConditional: case Opcode::kCall: case Opcode::kCustomCall:
      case Opcode::kReduceWindow: case Opcode::kSelectAndScatter: case Opcode::kRng:
      case Opcode::kRngBitGenerator: case Opcode::kDynamicUpdateSlice: case Opcode::kTuple:
        *hero = i;
        return KernelFamily::kStandalone;
      default:
        break;
    }
  }
  return KernelFamily::kLoop;
}

// Called computations reachable from `inst`, callees first, each once.
void CollectCalled(const hlo::Computation* c, std::vector<const hlo::Computation*>& out) {
  if (std::find(out.begin(), out.end(), c) != out.end()) return;
  for (const auto& inst : c->instructions()) {
    for (const hlo::Computation* callee : inst->called) CollectCalled(callee, out);
  }
  out.push_back(c);
}

// The notes about kernel `kid` that its members still bear out: a join whose instruction is
// in the kernel (the latest join of each instruction only), a refusal whose instruction is not.
std::vector<FusionNote> NotesOfKernel(const std::vector<FusionNote>& notes,
                                      const std::map<std::string, int>& kernel_of, int kid) {
  auto kernel = [&](const std::string& name) {
    auto it = kernel_of.find(name);
    return it == kernel_of.end() ? -1 : it->second;
  };
  std::map<std::string, size_t> last_join;
  for (size_t n = 0; n < notes.size(); ++n) {
    if (notes[n].fused) last_join[notes[n].instruction] = n;
  }
  std::vector<FusionNote> joins, refusals;
  std::set<std::pair<std::string, std::string>> refused;
  for (size_t n = 0; n < notes.size(); ++n) {
    const FusionNote& note = notes[n];
    if (kernel(note.kernel_member) != kid) continue;
    const bool inside = kernel(note.instruction) == kid;
    if (note.fused && inside && last_join[note.instruction] == n) joins.push_back(note);
    if (!note.fused && !inside && refused.emplace(note.instruction, note.reason).second) {
      refusals.push_back(note);
    }
  }
  joins.insert(joins.end(), refusals.begin(), refusals.end());
  return joins;
}

}  // namespace

std::string Kernel::ToHloText() const {
  std::ostringstream out;
  std::string module_name = name;
  std::replace(module_name.begin(), module_name.end(), '.', '_');
  out << "HloModule " << module_name << "\n\n";
  std::vector<const hlo::Computation*> called;
  for (const Instruction* i : instructions) {
    for (const hlo::Computation* c : i->called) CollectCalled(c, called);
  }
  for (const hlo::Computation* c : called) out << hlo::PrintComputation(*c) << "\n";
  out << "ENTRY %" << module_name << " {\n";
  for (size_t p = 0; p < inputs.size(); ++p) {
    out << "  %" << inputs[p]->name << " = " << inputs[p]->shape.ToString(false)
        << " parameter(" << p << ")\n";
  }
  for (const Instruction* i : instructions) {
    std::string line = hlo::PrintInstruction(*i);
    if (line.rfind("ROOT ", 0) == 0) line = line.substr(5);
    out << "  " << line << "\n";
  }
  out << "  ROOT %kernel_outputs = (";
  for (size_t o = 0; o < outputs.size(); ++o) {
    out << (o ? ", " : "") << outputs[o]->shape.ToString(false);
  }
  out << ") tuple(";
  for (size_t o = 0; o < outputs.size(); ++o) out << (o ? ", " : "") << "%" << outputs[o]->name;
  out << ")\n}\n";
  return out.str();
}

std::string PartitionKey(const FusionPlan& plan) {
  std::string key;
  for (const Kernel& k : plan.kernels) {
    for (const Instruction* i : k.instructions) key += i->name + ",";
    key += "\n";
  }
  return key;
}

std::string FusionPlan::Summary() const {
  std::ostringstream out;
  for (const Kernel& k : kernels) {
    out << k.name << ": " << KernelFamilyName(k.family) << ", " << k.instructions.size()
        << " ops, " << k.inputs.size() << " inputs, " << k.outputs.size() << " outputs, "
        << k.flops << " flops, " << k.bytes << " bytes";
    if (k.hero) out << ", hero " << hlo::OpcodeName(k.hero->opcode) << " %" << k.hero->name;
    out << "\n";
  }
  return out.str();
}

Result<FusionPlan> PlanFromDecisions(const hlo::Module& module, const FusionDecisions& decisions) {
  if (!module.entry()) return InvalidArgument("module has no ENTRY computation");
  const hlo::Computation& entry = *module.entry();
  std::unordered_map<const Instruction*, int> kernel_of;
  std::set<std::string> known;
  for (const auto& inst : entry.instructions()) {
    known.insert(inst->name);
    if (!NeedsKernel(inst.get(), entry)) continue;
    auto it = decisions.kernel_of.find(inst->name);
    if (it == decisions.kernel_of.end()) {
      return InvalidArgument("fusion decisions leave %" + inst->name + " out of every kernel");
    }
    kernel_of[inst.get()] = it->second;
  }
  for (const auto& [name, k] : decisions.kernel_of) {
    if (!known.count(name)) return InvalidArgument("fusion decisions name unknown %" + name);
  }

  // Kernel graph edges and a topological order of kernels (Kahn); a cycle is an error.
  std::map<int, std::set<int>> succ;
  std::map<int, int> indegree;
  for (const auto& [inst, k] : kernel_of) indegree.emplace(k, 0);
  for (const auto& [inst, k] : kernel_of) {
    for (const Instruction* op : inst->operands) {
      auto it = kernel_of.find(op);
      if (it != kernel_of.end() && it->second != k && succ[it->second].insert(k).second) {
        ++indegree[k];
      }
    }
  }
  std::vector<int> ready, topo;
  for (const auto& [k, d] : indegree) {
    if (d == 0) ready.push_back(k);
  }
  while (!ready.empty()) {
    std::sort(ready.begin(), ready.end(), std::greater<int>());
    int k = ready.back();
    ready.pop_back();
    topo.push_back(k);
    for (int s : succ[k]) {
      if (--indegree[s] == 0) ready.push_back(s);
    }
  }
  if (topo.size() != indegree.size()) {
    return InvalidArgument("fusion decisions create a cycle between kernels");
  }

  FusionPlan plan;
  plan.module = &module;
  plan.decisions = decisions;
  std::unordered_map<const Instruction*, std::vector<const Instruction*>> users;
  for (const auto& inst : entry.instructions()) {
    for (const Instruction* op : inst->operands) users[op].push_back(inst.get());
  }
  for (int kid : topo) {
    Kernel k;
    k.id = static_cast<int>(plan.kernels.size());
    for (const auto& inst : entry.instructions()) {
      auto it = kernel_of.find(inst.get());
      if (it != kernel_of.end() && it->second == kid) k.instructions.push_back(inst.get());
    }
    std::set<const Instruction*> members(k.instructions.begin(), k.instructions.end());
    for (const Instruction* i : k.instructions) {
      for (const Instruction* op : i->operands) {
        if (!members.count(op) && std::find(k.inputs.begin(), k.inputs.end(), op) == k.inputs.end()) {
          k.inputs.push_back(op);
        }
      }
      bool used_outside = i == entry.root();
      for (const Instruction* u : users[i]) used_outside |= !members.count(u);
      if (used_outside) k.outputs.push_back(i);
      k.flops += InstructionFlops(*i);
    }
    for (const Instruction* in : k.inputs) k.bytes += ShapeBytes(in->shape);
    for (const Instruction* out : k.outputs) k.bytes += ShapeBytes(out->shape);
    k.family = FamilyOf(k, &k.hero);
    k.name = "kernel." + std::to_string(k.id) + "." + KernelFamilyName(k.family);
    k.key = k.hero ? k.hero->name : k.instructions.back()->name;
    k.notes = NotesOfKernel(decisions.notes, decisions.kernel_of, kid);
    plan.kernels.push_back(std::move(k));
  }
  return plan;
}

}  // namespace mk::analysis
