// Computations (a DAG of instructions with one root) and modules (named computations + ENTRY).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "hlo/instruction.h"

namespace mk::hlo {

class Computation {
 public:
  std::string name;
  SourceLoc loc;

  // Instructions in definition order (operands always come before their users).
  const std::vector<std::unique_ptr<Instruction>>& instructions() const { return instructions_; }
  Instruction* AddInstruction(std::unique_ptr<Instruction> inst);
  Instruction* root() const { return root_; }
  void set_root(Instruction* root) { root_ = root; }

  // Parameters ordered by parameter_number (not by position in the text).
  const std::vector<Instruction*>& parameters() const { return parameters_; }
  Instruction* parameter(size_t i) const { return parameters_[i]; }
  // Called after all instructions are added: sorts parameters_ by number.
  void SortParameters();

  Instruction* FindInstruction(const std::string& name) const;

 private:
  std::vector<std::unique_ptr<Instruction>> instructions_;
  std::vector<Instruction*> parameters_;
  Instruction* root_ = nullptr;
};

class Module {
 public:
  std::string name;
  // Header attributes other than the name, verbatim (entry_computation_layout=...,
  // is_scheduled=true, ...), in order.
  std::vector<std::pair<std::string, std::string>> header_attributes;

  const std::vector<std::unique_ptr<Computation>>& computations() const { return computations_; }
  Computation* AddComputation(std::unique_ptr<Computation> c);
  Computation* entry() const { return entry_; }
  void set_entry(Computation* c) { entry_ = c; }
  Computation* FindComputation(const std::string& name) const;

 private:
  std::vector<std::unique_ptr<Computation>> computations_;  // callees before callers
  Computation* entry_ = nullptr;
};

}  // namespace mk::hlo
