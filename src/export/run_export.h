// Exporting a finished run's best kernel out of the store (`maxkernel export`, docs/EXPORT.md):
// as a C library (`lib`: the .so, a C header, an example program, a README) or as a JAX module
// that calls the kernel through XLA's FFI (`jax-ffi`: the .so, a compiled FFI shim, a Python
// module, a README).
//
// What the store must hold (what `maxkernel optimize` leaves behind):
//   runs.config_json                 {"module_artifact": "<sha256 of the HLO module text>", ...}
//                                    (absent: the task's module_sha256 is used)
//   runs.best_candidate_id           a correct candidate, whose newest build with status ok has
//   builds.artifacts                 "library" (.so bytes), "implementation"
//                                    (codegen::ImplementationToJson), "source" (module.cc)
// Every artifact is read through the ArtifactStore, which re-hashes it, so a damaged file is an
// error and never ends up in an export.
//
// Nothing here writes to the output directory: the result is the list of files, which the
// caller writes as one unit (cli::WriteFilesAtomically), so an export is all files or none.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/emitter.h"
#include "hlo/module.h"
#include "store/artifact_store.h"
#include "store/store.h"
#include "support/status.h"

namespace mk::exports {

enum class ExportFormat { kLib, kJaxFfi, kPallas };
// "lib", "jax-ffi", "pallas" (a TPU run's module: kernel.py whose workload(*inputs) runs under jax)
std::string_view ExportFormatName(ExportFormat format);
Result<ExportFormat> ParseExportFormat(std::string_view name);

struct ExportOptions {
  ExportFormat format = ExportFormat::kLib;
  // The library's name (made a C identifier by LibraryName); empty: the task's name, else its
  // id, else the module's name.
  std::string name;
  // jax-ffi only. The shim's C++ compiler: empty means $CXX, else g++.
  std::string cxx;
  // jax-ffi only. jaxlib's FFI headers (the folder holding xla/ffi/api/ffi.h); empty: asked
  // from Python (`jax.ffi.include_dir()`, the interpreter of task::BridgePython()).
  std::string jax_include_dir;
  double compile_timeout_s = 300;
  // The compile cache the exported library is built through; empty: the default
  // (runtime::CompileOptions::cache_dir).
  std::string cache_dir;
};

// One file of an export, named relative to the output directory.
struct ExportedFile {
  std::string role;  // library, header, example, readme, python, shim_source, shim_library
  std::string name;
  std::string contents;
};

struct RunExport {
  // Non-empty when the run has nothing to export (no correct candidate): why, in one line.
  // Then `files` is empty. Not an error: the run exists and is readable, it just produced no
  // kernel (the CLI exits 1 for it, like any run without an acceptable result).
  std::string refused;
  int64_t run_id = 0;
  int64_t candidate_id = 0;
  std::string name;
  std::string target;
  std::string implementation_hash;
  std::string library_sha256;           // the shipped library (entry points renamed)
  std::string measured_library_sha256;  // the stored library the run built, tested and timed
  std::string module_sha256;
  std::vector<ExportedFile> files;
};

// Reads run `run_id`'s best kernel from the store, verifies it and produces the files of
// `options.format`. NotFound for an unknown run; an artifact that is missing or corrupted, or
// an implementation that does not match the module, is an error naming it.
Result<RunExport> ExportRun(store::Store& db, const store::ArtifactStore& artifacts, int64_t run_id,
                            const ExportOptions& options = {});

// ---- the pieces, for tests and for the jax-ffi half (run_export_jax.cc) ----------------------

// A run's best kernel as stored, every artifact read back and verified.
struct StoredKernel {
  store::RunRecord run;
  store::TaskRecord task;
  store::CandidateRecord candidate;
  store::BuildRecord build;
  std::unique_ptr<hlo::Module> module;
  std::string module_sha256;
  codegen::Implementation impl;
  std::string implementation_sha256;
  std::string library;  // the .so bytes as stored (built, tested and timed by the run)
  std::string library_sha256;
  // What is shipped: the same source built with its entry points renamed to KernelSymbol(name)
  // and AbiVersionSymbol(name) (library_export.h); empty until BuildShippedLibrary.
  std::string shipped_library;
  std::string shipped_library_sha256;
  std::string source_sha256;  // empty when the build did not keep its source
  std::string name;           // a C identifier (LibraryName)
  std::string task_label;     // "12p llama3_70b_rmsnorm": the task's id and name, as known
};

// Loads the best kernel of `run`, which must have a best candidate. A TPU run's kernel has no
// library (`with_library` false): its implementation is the Pallas module.
Result<StoredKernel> LoadBestKernel(store::Store& db, const store::ArtifactStore& artifacts,
                                    const store::RunRecord& run, const std::string& name,
                                    bool with_library = true);

// Builds `kernel.shipped_library` from the stored implementation (the compiler cache makes a
// repeated export free). `options.cxx` picks the compiler as for the shim.
Status BuildShippedLibrary(StoredKernel& kernel, const ExportOptions& options);

// "libmaxkernel_NAME.so": the file name both formats (and `maxkernel compile`) give the library,
// so that example.c's `-lmaxkernel_NAME` finds it.
std::string LibraryFileName(const std::string& name);

// The jax-ffi files beside the library: the Python module, the FFI shim's source and the shim
// compiled against jaxlib's headers and the library. A shim that does not compile is an
// Internal error carrying the compiler's first error line.
Result<std::vector<ExportedFile>> JaxFfiFiles(const StoredKernel& kernel,
                                              const ExportOptions& options);

// The Python function's name: `name`, with a '_' appended when it is a Python keyword.
std::string JaxFunctionName(const std::string& name);

// README.txt for `files` (the other files of the export, listed in it).
std::string ExportReadme(const StoredKernel& kernel, ExportFormat format,
                         const std::vector<ExportedFile>& files);

// The texts alone (no compiler involved).
std::string FfiShimSource(const StoredKernel& kernel);
std::string JaxModuleSource(const StoredKernel& kernel);
// The FFI handler's exported symbol and the name the target is registered under in XLA (unique
// per implementation, so two exported versions of one kernel can live in one process).
std::string FfiHandlerSymbol(const StoredKernel& kernel);
std::string FfiTargetName(const StoredKernel& kernel);

}  // namespace mk::exports
