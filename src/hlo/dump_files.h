// The files of an XLA dump folder (`XLA_FLAGS=--xla_dump_to=DIR`): which of them are HLO text
// (`*.before_optimizations.txt`, `*.cpu_after_optimizations.txt`) and which are not (object
// files, LLVM IR, buffer assignment, debug options ...), and which module of a folder is the
// user's own jitted function rather than one of the helpers JAX jits to make its inputs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "support/status.h"

namespace mk::hlo {

// What the file at `path` is when it is a dump file other than HLO text ("an XLA
// buffer-assignment dump", "an object file", ...), from its name, or failing that from its
// first bytes; nullopt for anything that may be HLO text.
std::optional<std::string> NonHloDumpKind(const std::string& path);

// InvalidArgument "PATH is <kind>, not HLO text" for such a file; OK otherwise.
Status CheckIsHloText(const std::string& path);

// One module of a dump folder: DIR/module_NNNN.jit_NAME.before_optimizations.txt.
struct DumpedModule {
  std::string path;
  std::string module;  // "jit_mlp"
};

// The before-optimizations modules of a dump folder, in file name order (which is XLA's
// compilation order).
Result<std::vector<DumpedModule>> ListDumpedModules(const std::string& dir);

// The module of `dir` to import: with `function`, the one named jit_<function>; without, the
// one module that is not a helper JAX jits on its own (jit_broadcast_in_dim for jnp.ones,
// jit__normal for jax.random.normal, ...). InvalidArgument naming the candidates when there is
// none or more than one.
Result<std::string> PickDumpedModule(const std::string& dir, const std::string& function);

}  // namespace mk::hlo
