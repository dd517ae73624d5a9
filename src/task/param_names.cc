#include "task/param_names.h"

#include <string_view>

namespace mk::task {
namespace {

bool IsIdentChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// Keywords of C, C++ and Python, which cannot name a struct field or a Python argument.
bool IsKeyword(std::string_view s) {
  static constexpr std::string_view kKeywords[] = {
      "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
      "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global",
      "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return",
      "try", "while", "with", "yield", "auto", "bool", "case", "char", "const", "default", "do",
      "double", "enum", "extern", "float", "goto", "inline", "int", "long", "register",
      "restrict", "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union",
      "unsigned", "void", "volatile", "delete", "new", "namespace", "template", "this", "public",
      "private", "operator", "true", "false"};
  for (std::string_view k : kKeywords) {
    if (s == k) return true;
  }
  return false;
}

}  // namespace

std::string ParameterIdentifier(const std::string& name) {
  std::string_view n = name;
  // JAX's HLO names a parameter after its argument plus a uniquifying `.N`.
  size_t dot = n.rfind('.');
  if (dot != std::string_view::npos && dot > 0 && dot + 1 < n.size() &&
      n.find_first_not_of("0123456789", dot + 1) == std::string_view::npos) {
    n = n.substr(0, dot);
  }
  std::string id;
  for (char c : n) id += IsIdentChar(c) ? c : '_';
  if (id.empty()) return "arg";
  if (id[0] >= '0' && id[0] <= '9') id = "_" + id;
  // Names with two leading underscores are reserved in C and C++.
  if (id.size() >= 2 && id[0] == '_' && (id[1] == '_' || (id[1] >= 'A' && id[1] <= 'Z'))) {
    id = "p" + id;
  }
  if (IsKeyword(id)) id += "_";
  return id;
}

std::vector<std::string> ParameterIdentifiers(const std::vector<std::string>& names,
                                              const std::set<std::string>& taken) {
  std::set<std::string> used = taken;
  std::vector<std::string> ids;
  for (const std::string& name : names) {
    const std::string base = ParameterIdentifier(name);
    std::string id = base;
    for (int k = 2; used.count(id); ++k) id = base + "_" + std::to_string(k);
    used.insert(id);
    ids.push_back(id);
  }
  return ids;
}

Result<std::vector<std::string>> RenameEntryParameters(hlo::Module& module,
                                                       const std::vector<std::string>& names) {
  hlo::Computation* entry = module.entry();
  if (!entry) return InvalidArgument("module " + module.name + " has no ENTRY computation");
  if (entry->parameters().size() != names.size()) {
    return InvalidArgument("module " + module.name + " takes " +
                           std::to_string(entry->parameters().size()) + " parameters, not " +
                           std::to_string(names.size()));
  }
  // XLA wants instruction names unique in the whole module, not just in one computation.
  std::set<std::string> taken;
  for (const auto& comp : module.computations()) {
    for (const auto& inst : comp->instructions()) {
      if (comp.get() != entry || inst->opcode != hlo::Opcode::kParameter) taken.insert(inst->name);
    }
  }
  std::vector<std::string> ids = ParameterIdentifiers(names, taken);
  for (size_t i = 0; i < ids.size(); ++i) entry->parameter(i)->name = ids[i];
  return ids;
}

}  // namespace mk::task
