#include "codegen/cpu/element_chain.h"

#include <algorithm>
#include <set>
#include <sstream>
#include <vector>

#include "codegen/cpu/cpu_types.h"

namespace mk::codegen::cpu {

using hlo::Instruction;
using hlo::Opcode;

namespace {

// "e7" for instruction 7 (appended rather than `"e" + id`, which GCC 12 warns about falsely).
std::string LocalName(FunctionEmitter& f, const Instruction* op) {
  std::string name = "e";
  name += f.module().Id(op);
  return name;
}

}  // namespace

bool ReadsOperandsAtSameIndex(const Instruction& inst) {
  if (hlo::IsElementwiseUnary(inst.opcode) || hlo::IsElementwiseBinary(inst.opcode)) return true;
  switch (inst.opcode) {
    case Opcode::kCompare: case Opcode::kSelect: case Opcode::kClamp: case Opcode::kConvert:
    case Opcode::kCopy: case Opcode::kMap:
      return true;
    default:
      return false;
  }
}

Result<std::string> ElementStatements(FunctionEmitter& f, const Instruction* root,
                                      const std::map<const Instruction*, std::string>& given,
                                      std::string* value) {
  // The chain: same-dims elemental ops reached from root through operands read at its index.
  std::vector<const Instruction*> chain, stack{root};
  std::set<const Instruction*> seen;
  while (!stack.empty()) {
    const Instruction* op = stack.back();
    stack.pop_back();
    if (!seen.insert(op).second || given.count(op)) continue;
    if (f.ElementalOrder(op) < 0 || !ReadsOperandsAtSameIndex(*op) || !op->shape.is_array() ||
        op->shape.dims() != root->shape.dims()) {
      continue;
    }
    chain.push_back(op);
    for (const Instruction* o : op->operands) stack.push_back(o);
  }
  if (chain.empty() || chain.front() != root) {
    auto it = given.find(root);
    *value = it != given.end() ? it->second : CallExpr(f.Fn(root), IndexVars(root->shape.rank()));
    return std::string();
  }
  std::sort(chain.begin(), chain.end(), [&f](const Instruction* a, const Instruction* b) {
    return f.ElementalOrder(a) < f.ElementalOrder(b);
  });
  f.SetLocals(given);
  std::ostringstream s;
  Status status = Status::Ok();
  for (const Instruction* op : chain) {
    auto body = ElementalBody(f, *op);
    auto ct = ComputeType(op->shape.dtype());
    if (!body.ok() || !ct.ok()) {
      status = !body.ok() ? body.status() : ct.status();
      break;
    }
    const std::string name = LocalName(f, op);
    s << "const " << *ct << " " << name << " = [&]() -> " << *ct << " { " << *body << " }(); ";
    f.AddLocal(op, name);
  }
  f.SetLocals({});
  MK_RETURN_IF_ERROR(status);
  *value = LocalName(f, root);
  return s.str();
}

}  // namespace mk::codegen::cpu
