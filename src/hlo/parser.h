// Parser for HLO text exactly as XLA and JAX print it (see docs/HLO_TEXT.md for what is accepted).
// Errors carry file:line:col.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "hlo/module.h"
#include "support/status.h"

namespace mk::hlo {

// `filename` is used only in error positions.
Result<std::unique_ptr<Module>> ParseModule(std::string_view text,
                                            const std::string& filename = "<input>");
Result<std::unique_ptr<Module>> ParseModuleFile(const std::string& path);

}  // namespace mk::hlo
