// The names an imported task gives its parameters: the user's own (JAX argument names, or the
// HLO parameter names of a dump without JAX's `.1` uniquifier), made valid C and Python
// identifiers, because they become struct fields in the exported header and argument names in
// the JAX FFI wrapper (docs/EXPORT.md). One name per parameter is used everywhere: task.yaml,
// the entry parameters of module.hlo (which the exporters read) and the exports.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "hlo/module.h"
#include "support/status.h"

namespace mk::task {

// `x.1` -> `x`, `args[0]` -> `args_0_`, `2d` -> `_2d`, `lambda` -> `lambda_`, `` -> `arg`.
std::string ParameterIdentifier(const std::string& name);

// ParameterIdentifier of each name, made unique among themselves and distinct from `taken`
// (the module's other instruction names) by a `_2`, `_3` ... suffix.
std::vector<std::string> ParameterIdentifiers(const std::vector<std::string>& names,
                                              const std::set<std::string>& taken);

// Renames the entry computation's parameters (in parameter-number order) to the identifiers
// of `names`, and returns those identifiers. Other instructions keep their names.
Result<std::vector<std::string>> RenameEntryParameters(hlo::Module& module,
                                                       const std::vector<std::string>& names);

}  // namespace mk::task
