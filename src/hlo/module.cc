#include "hlo/module.h"

#include <algorithm>

namespace mk::hlo {

std::string_view ComparisonDirectionName(ComparisonDirection d) {
  switch (d) {
    case ComparisonDirection::kEq: return "EQ";
    case ComparisonDirection::kNe: return "NE";
    case ComparisonDirection::kLt: return "LT";
    case ComparisonDirection::kLe: return "LE";
    case ComparisonDirection::kGt: return "GT";
    case ComparisonDirection::kGe: return "GE";
  }
  return "EQ";
}

std::optional<ComparisonDirection> ParseComparisonDirection(std::string_view s) {
  if (s == "EQ") return ComparisonDirection::kEq;
  if (s == "NE") return ComparisonDirection::kNe;
  if (s == "LT") return ComparisonDirection::kLt;
  if (s == "LE") return ComparisonDirection::kLe;
  if (s == "GT") return ComparisonDirection::kGt;
  if (s == "GE") return ComparisonDirection::kGe;
  return std::nullopt;
}

Instruction* Computation::AddInstruction(std::unique_ptr<Instruction> inst) {
  Instruction* raw = inst.get();
  instructions_.push_back(std::move(inst));
  if (raw->opcode == Opcode::kParameter) parameters_.push_back(raw);
  return raw;
}

void Computation::SortParameters() {
  std::stable_sort(parameters_.begin(), parameters_.end(),
                   [](const Instruction* a, const Instruction* b) {
                     return a->parameter_number < b->parameter_number;
                   });
}

Instruction* Computation::FindInstruction(const std::string& n) const {
  for (const auto& inst : instructions_) {
    if (inst->name == n) return inst.get();
  }
  return nullptr;
}

Computation* Module::AddComputation(std::unique_ptr<Computation> c) {
  Computation* raw = c.get();
  computations_.push_back(std::move(c));
  return raw;
}

Computation* Module::FindComputation(const std::string& n) const {
  for (const auto& c : computations_) {
    if (c->name == n) return c.get();
  }
  return nullptr;
}

}  // namespace mk::hlo
