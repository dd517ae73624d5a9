// Canonical HLO text. parse(print(m)) is the same module as m.
#pragma once

#include <string>

#include "hlo/module.h"

namespace mk::hlo {

std::string PrintModule(const Module& module);
std::string PrintComputation(const Computation& computation, bool is_entry = false);
std::string PrintInstruction(const Instruction& inst);

}  // namespace mk::hlo
