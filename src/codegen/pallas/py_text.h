// Small helpers for writing the Python the Pallas emitter generates: joined lists, tuples,
// indented lines, and the Python name of every value of the module.
#pragma once

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "hlo/module.h"
#include "support/text_escape.h"

namespace mk::codegen::pallas {

inline std::string Join(const std::vector<std::string>& parts, const std::string& sep = ", ") {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

inline std::string TupleOf(const std::vector<std::string>& items) {
  if (items.size() == 1) return "(" + items[0] + ",)";
  return "(" + Join(items) + ")";
}


// Writes `line` at `indent` spaces.
inline void Line(std::ostringstream& out, int indent, const std::string& line) {
  out << std::string(static_cast<size_t>(indent), ' ') << line << "\n";
}


// Python names for the module's values: unique (numbered by position in the entry), readable
// (the HLO name made an identifier), never a Python keyword (the prefix).
class Names {
 public:
  explicit Names(const hlo::Computation& entry) {
    int n = 0;
    for (const auto& i : entry.instructions()) {
      names_[i.get()] = "v" + std::to_string(n++) + "_" + CIdentifier(i->name, "value", 40);
    }
  }
  const std::string& Of(const hlo::Instruction* i) const { return names_.at(i); }

 private:
  std::map<const hlo::Instruction*, std::string> names_;
};


}  // namespace mk::codegen::pallas
