// Shared by the analysis tests: parsing a module from text, and naming its entry's
// instructions and outputs the way the planner's epilogue analyses take them.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "hlo/module.h"
#include "hlo/parser.h"

namespace mk::analysis::testing {

// The module `text` parses to; null (and a test failure) when it does not.
inline std::unique_ptr<hlo::Module> Parse(const std::string& text) {
  auto m = hlo::ParseModule(text, "test.hlo");
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : nullptr;
}

// The entry's instructions in order.
inline std::vector<const hlo::Instruction*> Entry(const hlo::Module& m) {
  std::vector<const hlo::Instruction*> out;
  for (const auto& i : m.entry()->instructions()) out.push_back(i.get());
  return out;
}

// The entry's instruction named `name`, or null.
inline const hlo::Instruction* Named(const hlo::Module& m, const std::string& name) {
  for (const auto& i : m.entry()->instructions()) {
    if (i->name == name) return i.get();
  }
  return nullptr;
}

// Whether `i` is one of the entry's outputs: its root, or an operand of a tuple root.
inline bool IsEntryOutput(const hlo::Module& m, const hlo::Instruction* i) {
  const hlo::Instruction* root = m.entry()->root();
  if (i == root) return true;
  return root->opcode == hlo::Opcode::kTuple &&
         std::find(root->operands.begin(), root->operands.end(), i) != root->operands.end();
}

}  // namespace mk::analysis::testing
