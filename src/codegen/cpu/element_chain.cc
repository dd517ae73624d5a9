#include "codegen/cpu/element_chain.h"

#include <algorithm>
#include <cctype>
#include <cstring>
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
                                      std::string* value, ElementSteps* steps) {
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
    const std::string statement =
        "const " + *ct + " " + name + " = [&]() -> " + *ct + " { " + *body + " }(); ";
    s << statement;
    if (steps) {
      steps->statements.push_back(statement);
      steps->locals.push_back(name);
    }
    f.AddLocal(op, name);
  }
  f.SetLocals({});
  MK_RETURN_IF_ERROR(status);
  *value = LocalName(f, root);
  return s.str();
}

std::string SuffixIdentifiers(const std::string& text, const std::set<std::string>& names,
                              const std::string& suffix) {
  auto starts = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; };
  auto continues = [&](char c) { return starts(c) || std::isdigit(static_cast<unsigned char>(c)); };
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (size_t i = 0; i < text.size();) {
    // A number (1e7f, 0x1.8p-3f) is copied whole: its letters are not identifiers.
    if (std::isdigit(static_cast<unsigned char>(text[i])) ||
        (text[i] == '.' && i + 1 < text.size() &&
         std::isdigit(static_cast<unsigned char>(text[i + 1])))) {
      size_t j = i + 1;
      while (j < text.size() &&
             (continues(text[j]) || text[j] == '.' ||
              ((text[j] == '+' || text[j] == '-') &&
               std::strchr("eEpP", text[j - 1]) != nullptr))) {
        ++j;
      }
      out.append(text, i, j - i);
      i = j;
      continue;
    }
    if (!starts(text[i])) {
      out += text[i++];
      continue;
    }
    size_t j = i;
    while (j < text.size() && continues(text[j])) ++j;
    const std::string token = text.substr(i, j - i);
    out += token;
    const bool member = (i >= 2 && text.compare(i - 2, 2, "::") == 0) || (i >= 1 && text[i - 1] == '.');
    if (!member && names.count(token)) out += suffix;
    i = j;
  }
  return out;
}

}  // namespace mk::codegen::cpu
