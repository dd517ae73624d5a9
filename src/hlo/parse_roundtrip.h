// Structural comparison of two modules, for the parser/printer round-trip checks (unit tests
// and the fuzzer): names, opcodes, shapes with layouts, operands, called computations, every
// typed attribute, extra attributes and literal bits.
#pragma once

#include <string>

#include "hlo/module.h"

namespace mk::hlo {

// Empty if `a` and `b` are the same module; otherwise a description of the first difference
// ("computation 'main', instruction 'add.3': opcode add vs multiply").
std::string DescribeModuleDifference(const Module& a, const Module& b);

}  // namespace mk::hlo
