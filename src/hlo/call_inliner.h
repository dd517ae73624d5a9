// Inlines `call` instructions: JAX wraps many functions (cumsum, custom_jvp bodies, ...) in
// `call`, which would otherwise hide their ops from fusion planning and force a function call
// per use. Callees are inlined recursively; cloned instructions get names that are unique in the
// caller ("<call name>.<callee instruction name>", with a numeric suffix if that is taken).
#pragma once

#include <memory>

#include "hlo/module.h"
#include "support/status.h"

namespace mk::hlo {

// A copy of `module` with every `call` (in every computation) replaced by the instructions of
// the computation it calls. Other called computations (while bodies, reducers ...) are kept
// and have their own calls inlined. Errors on a call whose operands do not match the callee's
// parameters, or on recursive calls.
Result<std::unique_ptr<Module>> InlineCalls(const Module& module);

}  // namespace mk::hlo
