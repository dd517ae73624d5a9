// The jax-ffi half of `export`: a C++ shim that exposes the exported library's NAME_kernel as an
// XLA FFI handler, compiled at export time against jaxlib's headers, and a Python module that registers the handler and
// wraps it in a JAX function with the module's signature (docs/EXPORT.md).
#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "export/library_export.h"
#include "export/run_export.h"
#include "runtime/kernel_abi.h"
#include "support/subprocess.h"
#include "support/text_escape.h"
#include "task/bridge.h"

namespace mk::exports {

namespace {

namespace fs = std::filesystem;

// What a buffer's element type is called in XLA's FFI (xla::ffi::DataType) and in JAX. Only
// the types the CPU code generator computes on; anything else cannot reach an export.
struct TypeNames {
  const char* ffi;
  const char* jnp;
};

Result<TypeNames> NamesFor(hlo::DType t) {
  using hlo::DType;
  switch (t) {
    case DType::kPred: return TypeNames{"PRED", "jnp.bool_"};
    case DType::kS8: return TypeNames{"S8", "jnp.int8"};
    case DType::kS16: return TypeNames{"S16", "jnp.int16"};
    case DType::kS32: return TypeNames{"S32", "jnp.int32"};
    case DType::kS64: return TypeNames{"S64", "jnp.int64"};
    case DType::kU8: return TypeNames{"U8", "jnp.uint8"};
    case DType::kU16: return TypeNames{"U16", "jnp.uint16"};
    case DType::kU32: return TypeNames{"U32", "jnp.uint32"};
    case DType::kU64: return TypeNames{"U64", "jnp.uint64"};
    case DType::kF16: return TypeNames{"F16", "jnp.float16"};
    case DType::kBF16: return TypeNames{"BF16", "jnp.bfloat16"};
    case DType::kF32: return TypeNames{"F32", "jnp.float32"};
    case DType::kF64: return TypeNames{"F64", "jnp.float64"};
    default:
      return Unimplemented("element type " + std::string(hlo::DTypeName(t)) +
                           " cannot be exported to JAX yet");
  }
}

bool IsOutput(const codegen::BufferSlot& b) {
  return b.role == codegen::BufferSlot::Role::kOutput;
}

std::string DimsList(const std::vector<int64_t>& dims, bool python_tuple) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  if (python_tuple && dims.size() == 1) s += ",";
  return s;
}

std::string ParamName(const StoredKernel& k, int index) {
  const hlo::Computation* entry = k.module->entry();
  if (entry && index >= 0 && static_cast<size_t>(index) < entry->parameters().size()) {
    return entry->parameter(static_cast<size_t>(index))->name;
  }
  return "arg" + std::to_string(index);
}

bool RootIsTuple(const StoredKernel& k) {
  const hlo::Computation* entry = k.module->entry();
  return entry && entry->root() && entry->root()->shape.is_tuple();
}

}  // namespace

std::string JaxFunctionName(const std::string& name) {
  static const char* const kKeywords[] = {
      "False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
      "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
      "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
      "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield"};
  for (const char* kw : kKeywords) {
    if (name == kw) return name + "_";
  }
  return name;
}

namespace {

// The compiler's first error line (the rest is usually consequences of it).
std::string FirstErrorLine(const std::string& log) {
  std::istringstream in(log);
  std::string line, last;
  while (std::getline(in, line)) {
    if (line.find("error") != std::string::npos) return line;
    if (!line.empty()) last = line;
  }
  return last.empty() ? "(no output)" : last;
}

std::vector<std::string> CompilerCommand(const std::string& chosen) {
  std::string cxx = chosen;
  if (cxx.empty()) {
    const char* env = std::getenv("CXX");
    cxx = env && *env ? env : "g++";
  }
  // $CXX may carry a launcher or flags ("ccache g++"): split on spaces, like make does.
  std::vector<std::string> argv;
  std::istringstream words(cxx);
  for (std::string w; words >> w;) argv.push_back(w);
  return argv;
}

Result<std::string> JaxIncludeDir(const ExportOptions& options) {
  if (!options.jax_include_dir.empty()) return options.jax_include_dir;
  const std::string python = task::BridgePython();
  Result<ProcessResult> p =
      RunProcess({python, "-c", "import jax.ffi; print(jax.ffi.include_dir())"}, 120);
  if (!p.ok() || p->timed_out || p->signaled || p->exit_code != 0) {
    std::string why = !p.ok()        ? p.status().message()
                      : p->timed_out ? "timed out"
                                     : FirstErrorLine(p->err);
    return Unimplemented("the jax-ffi format needs JAX installed for " + python +
                         " (for jaxlib's FFI headers): " + why);
  }
  std::string dir = p->out;
  while (!dir.empty() && (dir.back() == '\n' || dir.back() == '\r')) dir.pop_back();
  return dir;
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "mk_export_XXXXXX").string();
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

Status WriteFile(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return IoError("cannot write " + path.string());
  return Status::Ok();
}

Result<std::string> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError("cannot read " + path.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Compiles the shim in a private folder beside a copy of the library (the linker resolves
// NAME_kernel against it; at load time the rpath $ORIGIN finds the exported copy).
Result<std::string> CompileShim(const StoredKernel& k, const std::string& shim,
                                const ExportOptions& options) {
  MK_ASSIGN_OR_RETURN(std::string include_dir, JaxIncludeDir(options));
  TempDir tmp;
  if (tmp.path().empty()) return IoError("cannot create a temporary directory for the FFI shim");
  const fs::path source = tmp.path() / (k.name + "_ffi.cc");
  const fs::path output = tmp.path() / (k.name + "_ffi.so");
  MK_RETURN_IF_ERROR(WriteFile(source, shim));
  if (k.shipped_library.empty()) return Internal("the exported library was not built");
  MK_RETURN_IF_ERROR(WriteFile(tmp.path() / LibraryFileName(k.name), k.shipped_library));
  std::vector<std::string> argv = CompilerCommand(options.cxx);
  for (const char* flag : {"-std=c++17", "-O2", "-fPIC", "-shared"}) {
    argv.push_back(flag);
  }
  argv.insert(argv.end(),
              {"-I" + include_dir, source.string(), "-o", output.string(),
               "-L" + tmp.path().string(), "-lmaxkernel_" + k.name, "-Wl,-rpath,$ORIGIN"});
  Result<ProcessResult> p = RunProcess(argv, options.compile_timeout_s);
  if (!p.ok()) {
    return p.status().WithContext("compiling the JAX FFI shim (compiler " + argv[0] + ")");
  }
  if (p->timed_out) {
    return Internal("compiling the JAX FFI shim timed out after " +
                    std::to_string(static_cast<int>(options.compile_timeout_s)) + " s");
  }
  if (p->signaled || p->exit_code != 0) {
    return Internal("the JAX FFI shim does not compile: " + FirstErrorLine(p->err + p->out));
  }
  return ReadFile(output);
}

}  // namespace

std::string FfiHandlerSymbol(const StoredKernel& kernel) {
  return "MkFfi_" + kernel.name;
}

std::string FfiTargetName(const StoredKernel& kernel) {
  return "maxkernel_" + kernel.name + "_" + kernel.impl.hash.substr(0, 12);
}

std::string FfiShimSource(const StoredKernel& k) {
  const std::string sym = FfiHandlerSymbol(k);
  const std::string kernel = KernelSymbol(k.name), abi = AbiVersionSymbol(k.name);
  const auto& buffers = k.impl.buffers;
  std::ostringstream c;
  // k.name is a C identifier (LibraryName); the task's label is text from task.yaml, escaped
  // to one comment-safe line (a newline in a task id must not end the comment).
  c << "// Generated by maxkernel (export of run " << k.run.id << ", " << OneLineText(k.task_label)
    << "): " << kernel << " of\n"
    << "// " << LibraryFileName(k.name) << " as an XLA FFI handler, registered by " << k.name
    << "_jax.py.\n"
    // One line: a `//` comment ending in a backslash would continue onto the next line.
    << "// Build (jaxlib's headers; the library in the same folder), as one command line:\n"
    << "//   c++ -std=c++17 -O2 -fPIC -shared -I$(python3 -c 'import jax.ffi; "
       "print(jax.ffi.include_dir())') "
    << k.name << "_ffi.cc -o " << k.name << "_ffi.so -L. -lmaxkernel_" << k.name
    << " -Wl,-rpath,'$ORIGIN'\n"
    << "#include <cstddef>\n#include <cstdint>\n#include <string>\n\n"
    << "#include \"xla/ffi/api/ffi.h\"\n\n"
    << "namespace ffi = xla::ffi;\n\n"
    << "extern \"C\" void " << kernel << "(void** buffers);\n"
    << "extern \"C\" int " << abi << "(void);\n\n"
    << "namespace {\n\n";
  for (size_t i = 0; i < buffers.size(); ++i) {
    const auto& dims = buffers[i].shape.dims();
    // A scalar still gets a one-element array (C++ has no empty arrays); rank says 0.
    c << "const int64_t kDims" << i << "[] = {" << (dims.empty() ? "0" : DimsList(dims, false))
      << "};\n";
  }
  c << "\n"
    << "// XLA checks the number of buffers; the element types and dimensions are checked here,\n"
    << "// because the kernel reads and writes exactly the bytes of the shapes it was built for.\n"
    << "ffi::Error Check(const ffi::AnyBuffer& b, ffi::DataType type, size_t rank,\n"
    << "                 const int64_t* dims, const char* what) {\n"
    << "  bool ok = b.element_type() == type && b.dimensions().size() == rank;\n"
    << "  for (size_t d = 0; ok && d < rank; ++d) ok = b.dimensions()[d] == dims[d];\n"
    << "  if (ok) return ffi::Error::Success();\n"
    << "  return ffi::Error::InvalidArgument(std::string(" << CStringLiteral(k.name + ": ")
    << ") + what + \" has the wrong element type or shape\");\n"
    << "}\n\n"
    << "ffi::Error Call(";
  for (size_t i = 0; i < buffers.size(); ++i) {
    c << (i ? ", " : "")
      << (IsOutput(buffers[i]) ? "ffi::Result<ffi::AnyBuffer> out" : "ffi::AnyBuffer in")
      << buffers[i].index;
  }
  c << ") {\n";
  for (size_t i = 0; i < buffers.size(); ++i) {
    const auto& b = buffers[i];
    bool out = IsOutput(b);
    std::string var = (out ? "*out" : "in") + std::to_string(b.index);
    std::string what =
        out ? "output " + std::to_string(b.index) : "argument " + std::to_string(b.index);
    Result<TypeNames> names = NamesFor(b.shape.dtype());
    c << "  if (ffi::Error e = Check(" << var
      << ", ffi::DataType::" << (names.ok() ? names->ffi : "INVALID") << ", " << b.shape.rank()
      << ", kDims" << i << ", \"" << what << "\"); e.failure()) return e;\n";
  }
  c << "  void* buffers[" << (buffers.empty() ? 1 : buffers.size()) << "] = {";
  for (size_t i = 0; i < buffers.size(); ++i) {
    const auto& b = buffers[i];
    c << (i ? ", " : "") << (IsOutput(b) ? "out" : "in") << b.index << (IsOutput(b) ? "->" : ".")
      << "untyped_data()";
  }
  if (buffers.empty()) c << "nullptr";
  c << "};\n"
    << "  " << kernel << "(buffers);\n"
    << "  return ffi::Error::Success();\n"
    << "}\n\n"
    << "}  // namespace\n\n"
    << "XLA_FFI_DEFINE_HANDLER_SYMBOL(" << sym << ", Call,\n"
    << "                              ffi::Ffi::Bind()";
  for (const auto& b : buffers) {
    c << "\n                                  ." << (IsOutput(b) ? "Ret" : "Arg")
      << "<ffi::AnyBuffer>()";
  }
  c << ");\n\n"
    << "// The kernel library's ABI version, for the Python module to check before registering.\n"
    << "extern \"C\" int " << sym << "_abi_version(void) { return " << abi << "(); }\n";
  return c.str();
}

std::string JaxModuleSource(const StoredKernel& k) {
  const std::string fn = JaxFunctionName(k.name);
  const std::string sym = FfiHandlerSymbol(k);
  const bool tuple = RootIsTuple(k);
  std::vector<const codegen::BufferSlot*> ins, outs;
  for (const auto& b : k.impl.buffers) (IsOutput(b) ? outs : ins).push_back(&b);
  auto jnp_type = [](const codegen::BufferSlot& b) {
    Result<TypeNames> n = NamesFor(b.shape.dtype());
    return std::string(n.ok() ? n->jnp : "None");
  };
  auto describe = [](const codegen::BufferSlot& b) { return std::string(b.shape.ToString(false)); };

  std::ostringstream p;
  // The docstring holds the task's label (text from task.yaml): one line, escaped so that it
  // can neither close the docstring nor start an escape sequence.
  auto doc = [](const std::string& text) { return PyDocstringText(OneLineText(text)); };
  p << "\"\"\"" << fn << ": maxkernel's kernel for " << doc(k.task_label)
    << " as a JAX function (CPU).\n\n"
    << "Generated by `maxkernel export " << k.run.id << " --format jax-ffi` (run " << k.run.id
    << ", candidate " << k.candidate.id << ").\n"
    << "The kernel is " << LibraryFileName(k.name) << ", called through the XLA FFI handler in "
    << k.name << "_ffi.so\n"
    << "(both beside this file). Importing this module registers the handler with XLA; then\n\n"
    << "    from " << k.name << "_jax import " << fn << "\n"
    << "    y = jax.jit(" << fn << ")(";
  for (size_t i = 0; i < ins.size(); ++i) {
    p << (i ? ", " : "") << LibraryName(ParamName(k, ins[i]->index));  // "x.1" -> "x_1"
  }
  p << ")\n\n"
    << "runs it on the CPU backend. Arguments must have exactly these shapes and element types:\n";
  for (const auto* b : ins) {
    p << "    " << doc(ParamName(k, b->index)) << ": " << describe(*b) << "\n";
  }
  p << "Result" << (tuple ? " (a tuple)" : "") << ":";
  for (const auto* b : outs) p << " " << describe(*b);
  p << "\n64-bit types need jax.config.update(\"jax_enable_x64\", True).\n\"\"\"\n"
    << "import ctypes\nimport os\n\nimport jax\nimport jax.numpy as jnp\n\n"
    << "__all__ = [" << PyStringLiteral(fn) << ", \"INPUTS\", \"OUTPUTS\", \"TARGET_NAME\"]\n\n"
    << "_HERE = os.path.dirname(os.path.abspath(__file__))\n"
    << "TARGET_NAME = " << PyStringLiteral(FfiTargetName(k)) << "\n"
    << "IMPLEMENTATION_HASH = " << PyStringLiteral(k.impl.hash) << "\n"
    << "LIBRARY_SHA256 = "
    << PyStringLiteral(k.shipped_library_sha256.empty() ? k.library_sha256
                                                        : k.shipped_library_sha256)
    << "\n"
    << "RUN_ID = " << k.run.id << "\n"
    << "_ABI_VERSION = " << runtime::kKernelAbiVersion << "\n\n"
    << "# " << KernelSymbol(k.name)
    << "'s buffers: the arguments (name, shape, dtype), then the results (shape, dtype).\n"
    << "INPUTS = (\n";
  for (const auto* b : ins) {
    p << "    (" << PyStringLiteral(ParamName(k, b->index)) << ", (" << DimsList(b->shape.dims(), true)
      << "), " << jnp_type(*b) << "),\n";
  }
  p << ")\nOUTPUTS = (\n";
  for (const auto* b : outs) {
    p << "    ((" << DimsList(b->shape.dims(), true) << "), " << jnp_type(*b) << "),\n";
  }
  p << ")\n_TUPLE_RESULT = " << (tuple ? "True" : "False") << "\n\n\n"
    << "def _load():\n"
    << "    lib = ctypes.CDLL(os.path.join(_HERE, " << PyStringLiteral(k.name + "_ffi.so") << "))\n"
    << "    abi = lib." << sym << "_abi_version()\n"
    << "    if abi != _ABI_VERSION:\n"
    << "        raise ImportError(f\"" << LibraryFileName(k.name)
    << " has kernel ABI version {abi}, \"\n"
    << "                          f\"this module was made for {_ABI_VERSION}\")\n"
    << "    jax.ffi.register_ffi_target(TARGET_NAME, jax.ffi.pycapsule(lib." << sym
    << "), platform=\"cpu\")\n"
    << "    return lib\n\n\n"
    << "_LIB = _load()  # referenced for as long as the module lives, so the library stays loaded\n"
    << "_RESULTS = [jax.ShapeDtypeStruct(shape, dtype) for shape, dtype in OUTPUTS]\n\n\n"
    << "def _describe(shape, dtype):\n"
    << "    return f\"{jnp.dtype(dtype).name}[{', '.join(str(d) for d in shape)}]\"\n\n\n"
    << "def " << fn << "(*args):\n"
    << "    \"\"\"Runs the kernel on `args` (see the module's docstring); works under "
       "jax.jit.\"\"\"\n"
    << "    if len(args) != len(INPUTS):\n"
    << "        names = \", \".join(name for name, _, _ in INPUTS)\n"
    << "        raise TypeError(f\"" << fn
    << " takes {len(INPUTS)} arguments ({names}), got {len(args)}\")\n"
    << "    arrays = []\n"
    << "    for i, (arg, (name, shape, dtype)) in enumerate(zip(args, INPUTS)):\n"
    << "        got_shape = tuple(jnp.shape(arg))\n"
    << "        got_dtype = jnp.dtype(arg.dtype) if hasattr(arg, \"dtype\") else "
       "jnp.result_type(arg)\n"
    << "        if got_dtype != jnp.dtype(dtype):\n"
    << "            raise TypeError(f\"" << fn << ": argument {i} ({name!r}) must be \"\n"
    << "                            f\"{_describe(shape, dtype)}, got {_describe(got_shape, "
       "got_dtype)}\")\n"
    << "        if got_shape != shape:\n"
    << "            raise ValueError(f\"" << fn << ": argument {i} ({name!r}) must be \"\n"
    << "                             f\"{_describe(shape, dtype)}, got {_describe(got_shape, "
       "got_dtype)}\")\n"
    << "        arrays.append(jnp.asarray(arg))\n"
    << "    results = jax.ffi.ffi_call(TARGET_NAME, _RESULTS, "
       "vmap_method=\"sequential\")(*arrays)\n"
    << "    return tuple(results) if _TUPLE_RESULT else results[0]\n";
  return p.str();
}

Result<std::vector<ExportedFile>> JaxFfiFiles(const StoredKernel& kernel,
                                              const ExportOptions& options) {
  for (const auto& b : kernel.impl.buffers) {
    MK_RETURN_IF_ERROR(NamesFor(b.shape.dtype()).status());
  }
  std::string shim = FfiShimSource(kernel);
  MK_ASSIGN_OR_RETURN(std::string shim_library, CompileShim(kernel, shim, options));
  return std::vector<ExportedFile>{
      {"python", kernel.name + "_jax.py", JaxModuleSource(kernel)},
      {"shim_source", kernel.name + "_ffi.cc", std::move(shim)},
      {"shim_library", kernel.name + "_ffi.so", std::move(shim_library)},
  };
}

}  // namespace mk::exports
