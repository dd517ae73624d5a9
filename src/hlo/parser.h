// Parser for HLO text exactly as XLA and JAX print it (see docs/HLO_TEXT.md for what is accepted).
// Errors carry file:line:col.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "hlo/module.h"
#include "support/status.h"

namespace mk::hlo {

// `filename` is used only in error positions.
Result<std::unique_ptr<Module>> ParseModule(std::string_view text,
                                            const std::string& filename = "<input>");
// Reads and parses an HLO module file. Only regular files are read (a FIFO or device is refused
// by name), and a file larger than kMaxModuleFileBytes is refused before it is read: parsing
// keeps a record per instruction and operand, so memory grows with the text many times over.
Result<std::unique_ptr<Module>> ParseModuleFile(const std::string& path);
// 16 MiB: a thousand times the largest module of the suite; XLA's dumps of real models before
// optimization are far smaller unless they print large constants.
inline constexpr uint64_t kMaxModuleFileBytes = uint64_t{16} << 20;

}  // namespace mk::hlo
