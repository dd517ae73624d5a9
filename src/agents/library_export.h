// What a user gets next to a compiled kernel library: a C header declaring the entry point and
// documenting every buffer (role, shape, dtype, size), and a small C program that calls it.
// Used by `maxkernel compile` (and later by `export --format lib`).
#pragma once

#include <string>

#include "codegen/emitter.h"
#include "hlo/module.h"

namespace mk::agents {

// "llama3_70b_rmsnorm" from any name: letters, digits and '_' only, not starting with a digit
// (a C identifier and a safe file name). Empty input gives "module".
std::string LibraryName(const std::string& name);

// The C header `<name>.h` for `impl` (built from `module`).
std::string CHeaderFor(const std::string& name, const hlo::Module& module,
                       const codegen::Implementation& impl);

// `example.c`: allocates every buffer, fills the inputs with small deterministic values, calls
// mk_kernel once and prints the first elements of each output. Build line in its first comment.
std::string CExampleFor(const std::string& name, const codegen::Implementation& impl);

}  // namespace mk::agents
