#include "export/library_export.h"

#include <cctype>
#include <set>
#include <sstream>

#include "runtime/kernel_abi.h"
#include "support/subprocess.h"
#include "support/text_escape.h"

namespace mk::exports {

namespace {

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::string LibraryName(const std::string& name) { return CIdentifier(name, "module"); }

std::string KernelSymbol(const std::string& name) { return name + "_kernel"; }

std::string AbiVersionSymbol(const std::string& name) { return name + "_abi_version"; }

std::string ExportedLibrarySource(const std::string& name, const codegen::Implementation& impl) {
  const std::string kernel = KernelSymbol(name), abi = AbiVersionSymbol(name);
  const std::string source = impl.sources.empty() ? "" : impl.sources.front().text;
  std::ostringstream s;
  s << "// maxkernel export '" << name << "': implementation " << OneLineText(impl.hash)
    << ", whose source follows the\n"
    << "// #line directive unchanged. Only its entry points are renamed ("
    << OneLineText(impl.entry_symbol) << " -> " << kernel << ", " << runtime::kAbiVersionSymbol
    << " -> " << abi << ")\n"
    << "// so that several exported libraries link into one program; everything else is hidden\n"
    << "// (-fvisibility=hidden).\n"
    << "#define " << impl.entry_symbol << " " << kernel << "\n"
    << "#define " << runtime::kAbiVersionSymbol << " " << abi << "\n"
    << "extern \"C\" __attribute__((visibility(\"default\"))) void " << kernel
    << "(void** buffers);\n"
    << "extern \"C\" __attribute__((visibility(\"default\"))) int " << abi << "();\n"
    << "#line 1 \"module.cc\"\n"
    << source;
  return s.str();
}

std::vector<std::string> ExportedLibraryFlags(const codegen::Implementation& impl) {
  std::vector<std::string> flags = impl.flags;
  flags.push_back("-fvisibility=hidden");
  return flags;
}

Result<runtime::CompiledLibrary> BuildExportedLibrary(runtime::CompilerDriver& compiler,
                                                      const std::string& name,
                                                      const codegen::Implementation& impl) {
  if (impl.target != "cpu" || impl.sources.size() != 1) {
    return InvalidArgument("only single-source cpu implementations can be exported");
  }
  if (LibraryName(impl.entry_symbol) != impl.entry_symbol) {
    return InvalidArgument("the implementation's entry symbol '" + OneLineText(impl.entry_symbol) +
                           "' is not a C identifier");
  }
  if (LibraryName(name) != name) {
    return InvalidArgument("export name '" + OneLineText(name) + "' is not a C identifier");
  }
  MK_ASSIGN_OR_RETURN(runtime::CompiledLibrary lib,
                      compiler.Compile(ExportedLibrarySource(name, impl), ExportedLibraryFlags(impl)));
  // The renaming works on the source's tokens: if the emitter ever names its entry points
  // differently, the library would silently lack them. nm reads the dynamic symbol table
  // without running any of the library's code.
  Result<ProcessResult> nm = RunProcess({"nm", "-D", "--defined-only", lib.so_path}, 60);
  if (!nm.ok() || nm->timed_out || nm->signaled || nm->exit_code != 0) return lib;  // no binutils
  std::set<std::string> symbols;
  std::istringstream lines(nm->out);
  for (std::string line; std::getline(lines, line);) {
    size_t space = line.find_last_of(' ');
    if (space != std::string::npos) symbols.insert(line.substr(space + 1));
  }
  for (const std::string& want : {KernelSymbol(name), AbiVersionSymbol(name)}) {
    if (!symbols.count(want)) {
      return Internal("the exported library " + lib.so_path + " does not define " + want);
    }
  }
  for (const std::string& internal : {impl.entry_symbol, std::string(runtime::kAbiVersionSymbol)}) {
    if (internal != KernelSymbol(name) && internal != AbiVersionSymbol(name) &&
        symbols.count(internal)) {
      return Internal("the exported library " + lib.so_path + " still exports " + internal);
    }
  }
  return lib;
}

std::string CHeaderFor(const std::string& name, const hlo::Module& module,
                       const codegen::Implementation& impl) {
  const std::string up = Upper(name);
  const hlo::Computation* entry = module.entry();
  auto param_name = [&](int index) -> std::string {
    if (entry && index >= 0 && static_cast<size_t>(index) < entry->parameters().size()) {
      return entry->parameter(static_cast<size_t>(index))->name;
    }
    return "";
  };
  int inputs = 0, outputs = 0;
  for (const auto& b : impl.buffers) (b.role == codegen::BufferSlot::Role::kOutput ? outputs : inputs)++;

  std::ostringstream h;
  const std::string kernel = KernelSymbol(name), abi = AbiVersionSymbol(name);
  // `name` is a C identifier (LibraryName); every other string from the module goes through
  // support/text_escape for the context it lands in (a comment, a string literal).
  h << "/* Generated by maxkernel: the kernel library libmaxkernel_" << name << ".so (target "
    << OneLineText(impl.target) << ", module " << OneLineText(module.name) << ").\n"
    << " * Implementation sha256 " << OneLineText(impl.hash) << ".\n"
    << " *\n"
    << " * Call " << kernel << "(buffers) where buffers[i] points to a dense row-major array:\n";
  for (size_t i = 0; i < impl.buffers.size(); ++i) {
    const auto& b = impl.buffers[i];
    bool out = b.role == codegen::BufferSlot::Role::kOutput;
    h << " *   buffers[" << i << "]  " << (out ? "output " : "input  ") << b.index << "  "
      << b.shape.ToString(false) << "  " << b.bytes << " bytes";
    if (!out) h << "  (parameter '" << OneLineText(param_name(b.index)) << "')";
    h << "\n";
  }
  h << " * bf16 and f16 elements are their 16-bit patterns (uint16_t), pred is one byte (0 or 1).\n"
    << " * Inputs are only read; every output element is written. The kernel runs on several\n"
    << " * threads (OpenMP) and allocates its own scratch memory.\n"
    << " */\n"
    << "#ifndef MAXKERNEL_" << up << "_H_\n#define MAXKERNEL_" << up << "_H_\n\n"
    << "#include <stdint.h>\n#include <stddef.h>\n\n"
    << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
    << "/* What " << abi << "() of a library built for this header returns. */\n"
    << "#define MK_" << up << "_ABI_VERSION " << runtime::kKernelAbiVersion << "\n"
    << "#define MK_" << up << "_NUM_BUFFERS " << impl.buffers.size() << "\n"
    << "#define MK_" << up << "_NUM_INPUTS " << inputs << "\n"
    << "#define MK_" << up << "_NUM_OUTPUTS " << outputs << "\n\n"
    << "int " << abi << "(void);\n"
    << "void " << kernel << "(void** buffers);\n\n"
    << "typedef struct mk_" << name << "_buffer {\n"
    << "  const char* role;    /* \"input\" or \"output\" */\n"
    << "  int index;           /* parameter or output number */\n"
    << "  const char* name;    /* the HLO parameter's name (\"\" for outputs) */\n"
    << "  const char* dtype;   /* HLO element type: f32, bf16, s32, pred ... */\n"
    << "  int rank;\n"
    << "  const int64_t* dims; /* rank entries (NULL for a scalar) */\n"
    << "  int64_t bytes;\n"
    << "} mk_" << name << "_buffer;\n\n";
  for (size_t i = 0; i < impl.buffers.size(); ++i) {
    const auto& dims = impl.buffers[i].shape.dims();
    if (dims.empty()) continue;
    h << "static const int64_t mk_" << name << "_dims_" << i << "[] = {";
    for (size_t d = 0; d < dims.size(); ++d) h << (d ? ", " : "") << dims[d];
    h << "};\n";
  }
  h << "static const mk_" << name << "_buffer mk_" << name << "_buffers[MK_" << up
    << "_NUM_BUFFERS] = {\n";
  for (size_t i = 0; i < impl.buffers.size(); ++i) {
    const auto& b = impl.buffers[i];
    bool out = b.role == codegen::BufferSlot::Role::kOutput;
    h << "  {" << (out ? "\"output\"" : "\"input\"") << ", " << b.index << ", "
      << CStringLiteral(out ? "" : param_name(b.index)) << ", \"" << hlo::DTypeName(b.shape.dtype())
      << "\", " << b.shape.rank() << ", "
      << (b.shape.dims().empty() ? std::string("NULL") : "mk_" + name + "_dims_" + std::to_string(i))
      << ", " << b.bytes << "},\n";
  }
  h << "};\n\n#ifdef __cplusplus\n}  /* extern \"C\" */\n#endif\n\n#endif  /* MAXKERNEL_" << up
    << "_H_ */\n";
  return h.str();
}

std::string CExampleFor(const std::string& name, const codegen::Implementation& impl) {
  (void)impl;
  const std::string up = Upper(name);
  const std::string kernel = KernelSymbol(name), abi = AbiVersionSymbol(name);
  const std::string table = "mk_" + name + "_buffers";
  std::ostringstream c;
  c << "/* Calls libmaxkernel_" << name << ".so once and prints the first outputs. Build and run:\n"
    << " *   cc -O2 example.c -o example -L. -lmaxkernel_" << name
    << " -Wl,-rpath,'$ORIGIN' && ./example\n"
    << " */\n"
    << "#include <math.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n\n"
    << "#include \"" << name << ".h\"\n\n"
    << "/* float -> bf16 bits, round to nearest even (inputs here are small, finite). */\n"
    << "static uint16_t to_bf16(float f) {\n"
    << "  uint32_t u;\n  memcpy(&u, &f, 4);\n"
    << "  u += 0x7FFFu + ((u >> 16) & 1u);\n  return (uint16_t)(u >> 16);\n}\n\n"
    << "static float from_bf16(uint16_t h) {\n"
    << "  uint32_t u = (uint32_t)h << 16;\n  float f;\n  memcpy(&f, &u, 4);\n  return f;\n}\n\n"
    << "/* float -> f16 bits for the exactly representable values used below. */\n"
    << "static uint16_t to_f16(float f) {\n"
    << "  uint32_t u;\n  memcpy(&u, &f, 4);\n"
    << "  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);\n"
    << "  int exp = (int)((u >> 23) & 0xFF) - 127 + 15;\n"
    << "  if ((u & 0x7FFFFFFFu) == 0 || exp <= 0) return sign;\n"
    << "  return (uint16_t)(sign | (exp << 10) | ((u >> 13) & 0x3FFu));\n}\n\n"
    << "static float from_f16(uint16_t h) {\n"
    << "  int exp = (h >> 10) & 0x1F, man = h & 0x3FF;\n"
    << "  float v = exp == 0 ? man / 16777216.0f\n"
    << "          : exp == 31 ? (man ? NAN : INFINITY)\n"
    << "          : (1.0f + man / 1024.0f) * (float)(exp >= 15 ? (1u << (exp - 15)) : 1)\n"
    << "                / (float)(exp < 15 ? (1u << (15 - exp)) : 1);\n"
    << "  return (h & 0x8000) ? -v : v;\n}\n\n"
    << "static size_t elements(const mk_" << name << "_buffer* b) {\n"
    << "  size_t n = 1;\n  for (int d = 0; d < b->rank; ++d) n *= (size_t)b->dims[d];\n"
    << "  return n;\n}\n\n"
    << "/* Small deterministic inputs: floats cycle through -0.75 .. 0.75, integers 0 .. 3. */\n"
    << "static void fill(const mk_" << name << "_buffer* b, void* p) {\n"
    << "  size_t n = elements(b);\n  const char* t = b->dtype;\n"
    << "  for (size_t i = 0; i < n; ++i) {\n"
    << "    float f = (float)((int)(i % 7) - 3) * 0.25f;\n"
    << "    long long k = (long long)(i % 4);\n"
    << "    if (!strcmp(t, \"f32\")) ((float*)p)[i] = f;\n"
    << "    else if (!strcmp(t, \"f64\")) ((double*)p)[i] = f;\n"
    << "    else if (!strcmp(t, \"bf16\")) ((uint16_t*)p)[i] = to_bf16(f);\n"
    << "    else if (!strcmp(t, \"f16\")) ((uint16_t*)p)[i] = to_f16(f);\n"
    << "    else if (!strcmp(t, \"pred\")) ((uint8_t*)p)[i] = (uint8_t)(i % 2);\n"
    << "    else if (!strcmp(t, \"s8\") || !strcmp(t, \"u8\")) ((uint8_t*)p)[i] = (uint8_t)k;\n"
    << "    else if (!strcmp(t, \"s16\") || !strcmp(t, \"u16\")) ((uint16_t*)p)[i] = (uint16_t)k;\n"
    << "    else if (!strcmp(t, \"s32\") || !strcmp(t, \"u32\")) ((uint32_t*)p)[i] = (uint32_t)k;\n"
    << "    else if (!strcmp(t, \"s64\") || !strcmp(t, \"u64\")) ((uint64_t*)p)[i] = (uint64_t)k;\n"
    << "  }\n}\n\n"
    << "static double element(const mk_" << name << "_buffer* b, const void* p, size_t i) {\n"
    << "  const char* t = b->dtype;\n"
    << "  if (!strcmp(t, \"f32\")) return ((const float*)p)[i];\n"
    << "  if (!strcmp(t, \"f64\")) return ((const double*)p)[i];\n"
    << "  if (!strcmp(t, \"bf16\")) return from_bf16(((const uint16_t*)p)[i]);\n"
    << "  if (!strcmp(t, \"f16\")) return from_f16(((const uint16_t*)p)[i]);\n"
    << "  if (!strcmp(t, \"pred\") || !strcmp(t, \"u8\")) return ((const uint8_t*)p)[i];\n"
    << "  if (!strcmp(t, \"s8\")) return ((const int8_t*)p)[i];\n"
    << "  if (!strcmp(t, \"s16\")) return ((const int16_t*)p)[i];\n"
    << "  if (!strcmp(t, \"u16\")) return ((const uint16_t*)p)[i];\n"
    << "  if (!strcmp(t, \"s32\")) return ((const int32_t*)p)[i];\n"
    << "  if (!strcmp(t, \"u32\")) return ((const uint32_t*)p)[i];\n"
    << "  if (!strcmp(t, \"s64\")) return (double)((const int64_t*)p)[i];\n"
    << "  if (!strcmp(t, \"u64\")) return (double)((const uint64_t*)p)[i];\n"
    << "  return 0;\n}\n\n"
    << "int main(void) {\n"
    << "  if (" << abi << "() != MK_" << up << "_ABI_VERSION) {\n"
    << "    fprintf(stderr, \"library ABI version %d, header %d\\n\", " << abi << "(), MK_" << up
    << "_ABI_VERSION);\n    return 1;\n  }\n"
    << "  void* buffers[MK_" << up << "_NUM_BUFFERS + 1];\n"
    << "  for (int i = 0; i < MK_" << up << "_NUM_BUFFERS; ++i) {\n"
    << "    const mk_" << name << "_buffer* b = &" << table << "[i];\n"
    << "    buffers[i] = calloc(1, b->bytes > 0 ? (size_t)b->bytes : 1);\n"
    << "    if (!buffers[i]) { fprintf(stderr, \"out of memory\\n\"); return 1; }\n"
    << "    if (!strcmp(b->role, \"input\")) fill(b, buffers[i]);\n"
    << "  }\n"
    << "  " << kernel << "(buffers);\n"
    << "  for (int i = 0; i < MK_" << up << "_NUM_BUFFERS; ++i) {\n"
    << "    const mk_" << name << "_buffer* b = &" << table << "[i];\n"
    << "    if (strcmp(b->role, \"output\") != 0) continue;\n"
    << "    size_t n = elements(b);\n"
    << "    printf(\"output %d (%s, %zu elements):\", b->index, b->dtype, n);\n"
    << "    for (size_t e = 0; e < n && e < 8; ++e) printf(\" %g\", element(b, buffers[i], e));\n"
    << "    printf(\"%s\\n\", n > 8 ? \" ...\" : \"\");\n"
    << "  }\n"
    << "  for (int i = 0; i < MK_" << up << "_NUM_BUFFERS; ++i) free(buffers[i]);\n"
    << "  return 0;\n}\n";
  return c.str();
}

}  // namespace mk::exports
