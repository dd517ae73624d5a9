#include "hlo/dump_files.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <set>
#include <string_view>

#include "support/regular_file.h"

namespace mk::hlo {
namespace {

namespace fs = std::filesystem;

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

constexpr std::string_view kBeforeOptimizations = ".before_optimizations.txt";

// Modules JAX compiles by itself while a script runs (to make inputs with jnp.ones,
// jax.random.normal, x % n ...): jit-wrapped lax primitives and jnp functions that are called
// eagerly. Names that begin with `_` (jax's private helpers: _normal, _threefry_split,
// _where, ...) are helpers too.
const std::set<std::string, std::less<>>& HelperModules() {
  static const std::set<std::string, std::less<>> kHelpers = {
      "abs", "add", "arange", "argmax", "argmin", "array", "asarray", "astype", "broadcast_in_dim",
      "broadcast_to", "clip", "concatenate", "convert_element_type", "copy", "cumsum", "divide",
      "dot_general", "dynamic_slice", "dynamic_update_slice", "equal", "exp", "expand_dims",
      "eye", "fill", "floor_divide", "full", "full_like", "gather", "greater", "integer_pow",
      "iota", "less", "linspace", "log", "matmul", "max", "maximum", "mean", "min", "minimum",
      "mod", "multiply", "negative", "not_equal", "ones", "ones_like", "pad", "power",
      "ravel", "remainder", "repeat", "reshape", "select_n", "sign", "slice", "sort", "split",
      "sqrt", "squeeze", "stack", "stage", "subtract", "sum", "take", "take_along_axis",
      "tanh", "tile", "transpose", "tril", "triu", "true_divide", "where", "zeros",
      "zeros_like"};
  return kHelpers;
}

bool IsHelperModule(std::string_view module) {
  if (!module.starts_with("jit_")) return true;  // not a jitted function (pmap_, xla_computation)
  std::string_view fn = module.substr(4);
  return fn.empty() || fn.front() == '_' || HelperModules().count(fn) > 0;
}

std::string Names(const std::vector<DumpedModule>& modules) {
  std::string s;
  for (const DumpedModule& m : modules) {
    s += (s.empty() ? "" : ", ") + fs::path(m.path).filename().string();
  }
  return s;
}

}  // namespace

std::optional<std::string> NonHloDumpKind(const std::string& path) {
  const std::string name = fs::path(path).filename().string();
  struct Suffix {
    std::string_view suffix, kind;
  };
  static constexpr std::array<Suffix, 12> kSuffixes = {{
      {"-buffer-assignment.txt", "an XLA buffer-assignment dump"},
      {"-buffer-assignment-values.txt", "an XLA buffer-assignment dump"},
      {"-live-range.txt", "an XLA live-range dump"},
      {"-memory-usage-report.txt", "an XLA memory-usage report"},
      {".debug_options", "XLA's debug options"},
      {".o", "an object file"},
      {".ll", "LLVM IR"},
      {".mlir", "MLIR text (StableHLO), not HLO text"},
      {".textproto", "a protobuf text dump"},
      {".pb", "a binary protobuf"},
      {".dot", "a Graphviz graph"},
      {".html", "an HTML rendering"},
  }};
  for (const Suffix& s : kSuffixes) {
    if (EndsWith(name, s.suffix)) return std::string(s.kind);
  }
  // A renamed file: recognized by how it begins.
  // Only a regular file is sniffed: opening a FIFO would block, and its reader refuses it anyway.
  Result<int> fd = OpenRegularFile(path);
  if (!fd.ok()) return std::nullopt;
  char head[32] = {};
  ssize_t got = ::read(*fd, head, sizeof(head));
  ::close(*fd);
  std::string_view start(head, got > 0 ? static_cast<size_t>(got) : 0);
  if (start.starts_with("\x7f" "ELF")) return "an object file";
  if (start.starts_with("BufferAssignment:")) return "an XLA buffer-assignment dump";
  if (start.starts_with("HloLiveRange")) return "an XLA live-range dump";
  if (start.starts_with("; ModuleID")) return "LLVM IR";
  if (start.starts_with("module @")) return "MLIR text (StableHLO)";
  return std::nullopt;
}

Status CheckIsHloText(const std::string& path) {
  std::optional<std::string> kind = NonHloDumpKind(path);
  if (!kind) return Status::Ok();
  // "MLIR text (StableHLO), not HLO text" already says what it is not.
  std::string what = *kind;
  if (what.find("not HLO text") == std::string::npos) what += ", not HLO text";
  return InvalidArgument(path + " is " + what);
}

Result<std::vector<DumpedModule>> ListDumpedModules(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return NotFound(dir + ": no such folder");
  std::vector<DumpedModule> modules;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file(ec) || !EndsWith(name, kBeforeOptimizations)) continue;
    // module_0012.jit_mlp.before_optimizations.txt -> jit_mlp
    std::string stem = name.substr(0, name.size() - kBeforeOptimizations.size());
    if (stem.starts_with("module_")) {
      size_t dot = stem.find('.');
      stem = dot == std::string::npos ? stem : stem.substr(dot + 1);
    }
    modules.push_back({e.path().string(), stem});
  }
  if (ec) return IoError("cannot list " + dir + ": " + ec.message());
  std::sort(modules.begin(), modules.end(),
            [](const DumpedModule& a, const DumpedModule& b) { return a.path < b.path; });
  return modules;
}

Result<std::string> PickDumpedModule(const std::string& dir, const std::string& function) {
  MK_ASSIGN_OR_RETURN(std::vector<DumpedModule> all, ListDumpedModules(dir));
  if (all.empty()) {
    return InvalidArgument(dir + " holds no *" + std::string(kBeforeOptimizations) +
                           " file: not an XLA dump folder (XLA_FLAGS=--xla_dump_to=DIR)");
  }
  std::vector<DumpedModule> picked;
  for (const DumpedModule& m : all) {
    if (function.empty() ? !IsHelperModule(m.module) : m.module == "jit_" + function) {
      picked.push_back(m);
    }
  }
  if (picked.size() == 1) return picked.front().path;
  if (picked.empty()) {
    std::string modules;
    for (const DumpedModule& m : all) modules += (modules.empty() ? "" : ", ") + m.module;
    if (!function.empty()) {
      return InvalidArgument(dir + " has no module jit_" + function + " (it has " + modules + ")");
    }
    return InvalidArgument(dir + " holds only modules JAX jits by itself (" + modules +
                           "); name the function with --function NAME or import one file");
  }
  return InvalidArgument(dir + " holds " + std::to_string(picked.size()) +
                         " candidate modules (" + Names(picked) + "); " +
                         (function.empty() ? "name the function with --function NAME, or "
                                           : "the function was compiled more than once: ") +
                         "import one file");
}

}  // namespace mk::hlo
