// What a user gets next to a compiled kernel library: a C header declaring the entry point and
// documenting every buffer (role, shape, dtype, size), and a small C program that calls it.
// Used by `maxkernel compile` (and later by `export --format lib`).
#pragma once

#include <string>
#include <vector>

#include "codegen/emitter.h"
#include "hlo/module.h"
#include "runtime/compiler.h"
#include "support/status.h"

namespace mk::exports {

// "llama3_70b_rmsnorm" from any name: letters, digits and '_' only, not starting with a digit,
// at most 64 characters (a C identifier and a safe file name; support/text_escape.h's
// CIdentifier). Empty input gives "module".
std::string LibraryName(const std::string& name);

// The entry points of an exported library named `name` (a LibraryName): "<name>_kernel" and
// "<name>_abi_version". Prefixed, so that several exported libraries link into one program; the
// libraries maxkernel builds for itself keep runtime/kernel_abi.h's mk_kernel/mk_abi_version.
std::string KernelSymbol(const std::string& name);
std::string AbiVersionSymbol(const std::string& name);

// The translation unit of an exported library: `impl`'s source, unchanged, after a prologue
// that renames its entry points (impl.entry_symbol and mk_abi_version) to KernelSymbol(name)
// and AbiVersionSymbol(name) and declares them with default visibility; built with
// ExportedLibraryFlags (impl.flags + -fvisibility=hidden), so they are its only symbols.
std::string ExportedLibrarySource(const std::string& name, const codegen::Implementation& impl);
std::vector<std::string> ExportedLibraryFlags(const codegen::Implementation& impl);

// Builds that library through `compiler` (its cache) and checks, with `nm -D` where binutils'
// nm is installed, that it exports both prefixed entry points and neither internal name.
Result<runtime::CompiledLibrary> BuildExportedLibrary(runtime::CompilerDriver& compiler,
                                                      const std::string& name,
                                                      const codegen::Implementation& impl);

// The C header `<name>.h` for `impl` (built from `module`): declares KernelSymbol(name) and
// AbiVersionSymbol(name), documents and tabulates every buffer.
std::string CHeaderFor(const std::string& name, const hlo::Module& module,
                       const codegen::Implementation& impl);

// `example.c`: allocates every buffer, fills the inputs with small deterministic values, calls
// KernelSymbol(name) once and prints the first elements of each output. Build line in its first comment.
std::string CExampleFor(const std::string& name, const codegen::Implementation& impl);

}  // namespace mk::exports
