#include "export/run_export.h"

#include <cstdio>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "export/library_export.h"
#include "hlo/parser.h"
#include "support/sha256.h"
#include "support/text_escape.h"
#include "hlo/verifier.h"
#include "task/task.h"

namespace mk::exports {

namespace {

// The run's HLO module: config_json's "module_artifact" (the pipeline's contract), else the
// task's module hash (the same bytes when the pipeline stored the module text as an artifact).
Result<std::string> ModuleSha(const store::RunRecord& run, const store::TaskRecord& task) {
  nlohmann::json config = nlohmann::json::parse(run.config_json, nullptr, false);
  if (config.is_object() && config.contains("module_artifact")) {
    const nlohmann::json& sha = config["module_artifact"];
    if (!sha.is_string() || !store::ArtifactStore::IsValidSha256(sha.get<std::string>())) {
      return InvalidArgument("run " + std::to_string(run.id) +
                             ": config_json's module_artifact is not a sha256");
    }
    return sha.get<std::string>();
  }
  if (store::ArtifactStore::IsValidSha256(task.module_sha256)) return task.module_sha256;
  return InvalidArgument("run " + std::to_string(run.id) +
                         " does not name its HLO module (no module_artifact in its config)");
}

// Reads an artifact with context: which run and role it was for.
Result<std::string> GetArtifact(const store::ArtifactStore& artifacts, const std::string& sha,
                                const std::string& what) {
  Result<std::string> bytes = artifacts.Get(sha);
  if (!bytes.ok()) return bytes.status().WithContext("reading the " + what);
  return bytes;
}

// The impl must describe the module's entry point: a mismatch means the store pairs a kernel
// with the wrong module, and the header/shim would describe buffers the kernel does not have.
Status CheckBuffersMatch(const hlo::Module& module, const codegen::Implementation& impl) {
  MK_ASSIGN_OR_RETURN(std::vector<codegen::BufferSlot> want, codegen::EntryBuffers(module));
  bool same = want.size() == impl.buffers.size();
  for (size_t i = 0; same && i < want.size(); ++i) {
    const auto& a = want[i];
    const auto& b = impl.buffers[i];
    same = a.role == b.role && a.index == b.index && a.shape.dtype() == b.shape.dtype() &&
           a.shape.dims() == b.shape.dims() && a.bytes == b.bytes;
  }
  if (!same) {
    return Internal("the stored implementation's buffers do not match module " + module.name +
                    "'s entry parameters and outputs");
  }
  return Status::Ok();
}

// The newest successful build of the candidate that kept an implementation (and a library,
// unless `with_library` is false: a TPU kernel has none).
Result<store::BuildRecord> UsableBuild(store::Store& db, const store::CandidateRecord& c,
                                       bool with_library) {
  MK_ASSIGN_OR_RETURN(std::vector<store::BuildRecord> builds, db.ListBuilds(c.id));
  for (auto it = builds.rbegin(); it != builds.rend(); ++it) {
    if (it->status == store::BuildStatus::kOk && (!with_library || it->artifacts.count("library")) &&
        it->artifacts.count("implementation")) {
      return *it;
    }
  }
  return NotFound("candidate " + std::to_string(c.id) + " (seq " + std::to_string(c.seq) +
                  ") of run " + std::to_string(c.run_id) + " has no successful build with a stored " +
                  (with_library ? "library and " : "") + "implementation");
}

std::string Utc(double t) {
  std::time_t secs = static_cast<std::time_t>(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

std::string Seconds(double s) {
  char buf[32];
  if (s >= 1)
    std::snprintf(buf, sizeof buf, "%.3f s", s);
  else if (s >= 1e-3)
    std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.3f us", s * 1e6);
  return buf;
}

}  // namespace

std::string ExportReadme(const StoredKernel& k, ExportFormat format,
                         const std::vector<ExportedFile>& files) {
  std::ostringstream r;
  // Strings from the task and the module are escaped to one printable line each (a task id
  // with a newline must not be able to add lines of its own).
  const std::string& n = k.name;
  r << "maxkernel export of run " << k.run.id << " (format " << ExportFormatName(format) << ")\n\n"
    << "task           " << OneLineText(k.task_label) << "\n"
    << "task directory " << OneLineText(k.task.directory, 4096) << "\n"
    << "module         " << OneLineText(k.module->name) << "\n"
    << "target         " << OneLineText(k.run.target) << "\n"
    << "run            " << k.run.id << ", " << store::RunStatusName(k.run.status) << ", started "
    << Utc(k.run.started_at) << "\n"
    << "candidate      " << k.candidate.id << " (seq " << k.candidate.seq << ", "
    << store::CandidateStatusName(k.candidate.status) << ")";
  if (k.run.best_median_s) r << ", median " << Seconds(*k.run.best_median_s);
  r << "\n\nfiles\n";
  for (const ExportedFile& f : files) r << "  " << f.name << "  (" << f.role << ")\n";
  r << "  README.txt  (this file)\n\nbuffers of " << KernelSymbol(n)
    << "(void** buffers), in order\n";
  for (size_t i = 0; i < k.impl.buffers.size(); ++i) {
    const auto& b = k.impl.buffers[i];
    bool out = b.role == codegen::BufferSlot::Role::kOutput;
    r << "  [" << i << "] " << (out ? "output " : "input  ") << b.index << "  "
      << b.shape.ToString(false) << "  " << b.bytes << " bytes";
    const hlo::Computation* entry = k.module->entry();
    if (!out && entry && static_cast<size_t>(b.index) < entry->parameters().size()) {
      r << "  (parameter '" << OneLineText(entry->parameter(static_cast<size_t>(b.index))->name)
        << "')";
    }
    r << "\n";
  }
  r << "\n";
  if (format == ExportFormat::kLib) {
    r << "build and run the example (in this directory):\n"
      << "  cc -O2 example.c -o example -L. -lmaxkernel_" << n
      << " -Wl,-rpath,'$ORIGIN' && ./example\n";
  } else {
    r << "use from JAX (CPU), with this directory on sys.path:\n"
      << "  from " << n << "_jax import " << JaxFunctionName(n) << "\n"
      << "  y = jax.jit(" << JaxFunctionName(n)
      << ")(*args)   # arguments as in the buffer list above\n"
      << "the FFI shim was compiled with:\n"
      << "  c++ -std=c++17 -O2 -shared -fPIC -I\"$(python3 -c 'import jax.ffi; "
         "print(jax.ffi.include_dir())')\" "
      << n << "_ffi.cc -o " << n << "_ffi.so -L. -lmaxkernel_" << n << " -Wl,-rpath,'$ORIGIN'\n";
  }
  r << "\nsha256\n"
    << "  library         " << k.shipped_library_sha256
    << " (the measured library's source, entry points renamed)\n"
    << "  measured        " << k.library_sha256 << " (the library the run built and timed)\n"
    << "  implementation  " << k.implementation_sha256 << " (hash " << OneLineText(k.impl.hash)
    << ")\n"
    << "  module          " << k.module_sha256 << "\n";
  if (!k.source_sha256.empty()) r << "  source          " << k.source_sha256 << "\n";
  r << "(maxkernel artifacts get SHA prints any of them)\n";
  return r.str();
}

std::string_view ExportFormatName(ExportFormat format) {
  switch (format) {
    case ExportFormat::kLib: return "lib";
    case ExportFormat::kJaxFfi: return "jax-ffi";
    case ExportFormat::kPallas: return "pallas";
  }
  return "lib";
}

Result<ExportFormat> ParseExportFormat(std::string_view name) {
  if (name == "lib") return ExportFormat::kLib;
  if (name == "jax-ffi") return ExportFormat::kJaxFfi;
  if (name == "pallas") return ExportFormat::kPallas;
  return InvalidArgument("unknown export format '" + std::string(name) +
                         "' (available: lib, jax-ffi)");
}

Status BuildShippedLibrary(StoredKernel& k, const ExportOptions& options) {
  runtime::CompileOptions compile;
  compile.compiler = options.cxx;
  compile.timeout_s = options.compile_timeout_s;
  compile.cache_dir = options.cache_dir;
  runtime::CompilerDriver compiler(compile);
  Result<runtime::CompiledLibrary> lib = BuildExportedLibrary(compiler, k.name, k.impl);
  if (!lib.ok()) return lib.status().WithContext("building the exported library");
  std::ifstream in(lib->so_path, std::ios::binary);
  if (!in) return IoError("cannot read the exported library " + lib->so_path);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  k.shipped_library = bytes.str();
  k.shipped_library_sha256 = Sha256Hex(k.shipped_library);
  return Status::Ok();
}

std::string LibraryFileName(const std::string& name) {
  return "libmaxkernel_" + name + ".so";
}

Result<StoredKernel> LoadBestKernel(store::Store& db, const store::ArtifactStore& artifacts,
                                    const store::RunRecord& run, const std::string& name,
                                    bool with_library) {
  if (!run.best_candidate_id) {
    return InvalidArgument("run " + std::to_string(run.id) + " has no best candidate");
  }
  StoredKernel k;
  k.run = run;
  MK_ASSIGN_OR_RETURN(k.task, db.GetTask(run.task_id));
  MK_ASSIGN_OR_RETURN(k.candidate, db.GetCandidate(*run.best_candidate_id));
  if (k.candidate.status != store::CandidateStatus::kCorrect) {
    // The store enforces this on SetRunBest; checked again because an export is shipped.
    return Internal("best candidate " + std::to_string(k.candidate.id) + " of run " +
                    std::to_string(run.id) + " is not marked correct");
  }
  MK_ASSIGN_OR_RETURN(k.build, UsableBuild(db, k.candidate, with_library));

  MK_ASSIGN_OR_RETURN(k.module_sha256, ModuleSha(run, k.task));
  MK_ASSIGN_OR_RETURN(
      std::string module_text,
      GetArtifact(artifacts, k.module_sha256, "HLO module of run " + std::to_string(run.id)));
  MK_ASSIGN_OR_RETURN(k.module, hlo::ParseModule(module_text, "module " + k.module_sha256));
  MK_RETURN_IF_ERROR(hlo::VerifyModule(*k.module));

  k.implementation_sha256 = k.build.artifacts.at("implementation");
  MK_ASSIGN_OR_RETURN(std::string impl_text,
                      GetArtifact(artifacts, k.implementation_sha256, "implementation"));
  nlohmann::json impl_json = nlohmann::json::parse(impl_text, nullptr, false);
  if (impl_json.is_discarded()) {
    return InvalidArgument("implementation artifact " + k.implementation_sha256 + " is not JSON");
  }
  MK_ASSIGN_OR_RETURN(k.impl, codegen::ImplementationFromJson(impl_json));
  MK_RETURN_IF_ERROR(CheckBuffersMatch(*k.module, k.impl));

  if (with_library) {
    k.library_sha256 = k.build.artifacts.at("library");
    MK_ASSIGN_OR_RETURN(k.library, GetArtifact(artifacts, k.library_sha256, "kernel library"));
  }
  auto source = k.build.artifacts.find("source");
  if (source != k.build.artifacts.end()) k.source_sha256 = source->second;

  // Names: the task's (task.yaml as stored with the run), else the module's.
  std::string task_id, task_name;
  if (!k.task.yaml.empty()) {
    Result<task::Task> parsed = task::ParseTaskYaml(k.task.yaml);
    if (parsed.ok()) {
      task_id = parsed->id;
      task_name = parsed->name;
    }
  }
  k.task_label = task_id;
  if (!task_name.empty() && task_name != task_id) {
    k.task_label += (k.task_label.empty() ? "" : " ") + task_name;
  }
  if (k.task_label.empty()) k.task_label = k.module->name;
  std::string base = !name.empty()        ? name
                     : !task_name.empty() ? task_name
                     : !task_id.empty()   ? task_id
                                          : k.module->name;
  k.name = LibraryName(base);
  return k;
}

namespace {

// A TPU run's Pallas module as it was checked: <name>.py (kernel.py, unchanged), the kernel map,
// a README saying how to run it.
Result<RunExport> ExportPallas(store::Store& db, const store::ArtifactStore& artifacts,
                               const store::RunRecord& run, const ExportOptions& options,
                               RunExport out) {
  MK_ASSIGN_OR_RETURN(StoredKernel k, LoadBestKernel(db, artifacts, run, options.name,
                                                     /*with_library=*/false));
  std::string module_py, kernel_map;
  for (const auto& s : k.impl.sources) {
    if (s.name == "kernel.py") module_py = s.text;
    if (s.name == "kernel_map.json") kernel_map = s.text;
  }
  if (module_py.empty()) {
    return InvalidArgument("the stored implementation of run " + std::to_string(run.id) +
                           " has no kernel.py (not the Pallas emitter's)");
  }
  std::vector<ExportedFile> files = {{"python", k.name + ".py", module_py}};
  if (!kernel_map.empty()) files.push_back({"kernel_map", k.name + "_kernel_map.json", kernel_map});
  std::ostringstream r;
  r << "maxkernel export of run " << run.id << " (format pallas)\n\n"
    << "task           " << OneLineText(k.task_label) << "\n"
    << "module         " << OneLineText(k.module->name) << "\n"
    << "target         " << OneLineText(run.target) << "\n"
    << "candidate      " << k.candidate.id << " (seq " << k.candidate.seq << ")\n";
  if (run.best_median_s) {
    r << "modelled time  " << Seconds(*run.best_median_s)
      << " (the TPU performance model; no TPU measured it)\n";
  }
  r << "\nfiles\n";
  for (const ExportedFile& f : files) r << "  " << f.name << "  (" << f.role << ")\n";
  r << "  README.txt  (this file)\n\n"
    << "run it, with this directory on sys.path:\n"
    << "  import " << k.name << " as m\n"
    << "  outputs = m.workload(*inputs)   # the module's parameters in order (m.PARAMETERS)\n"
    << "on a TPU as it is; on a CPU in Pallas' TPU interpret mode:\n"
    << "  from jax.experimental.pallas import tpu as pltpu\n"
    << "  m.INTERPRET = pltpu.InterpretParams()\n"
    << "\nsha256\n"
    << "  implementation  " << k.implementation_sha256 << "\n"
    << "  module          " << k.module_sha256 << "\n";
  files.push_back({"readme", "README.txt", r.str()});
  out.candidate_id = k.candidate.id;
  out.name = k.name;
  out.implementation_hash = k.impl.hash;
  out.module_sha256 = k.module_sha256;
  out.files = std::move(files);
  return out;
}

}  // namespace

Result<RunExport> ExportRun(store::Store& db, const store::ArtifactStore& artifacts, int64_t run_id,
                            const ExportOptions& options) {
  MK_ASSIGN_OR_RETURN(store::RunRecord run, db.GetRun(run_id));
  RunExport out;
  out.run_id = run.id;
  out.target = run.target;
  if (!run.best_candidate_id) {
    out.refused = "run " + std::to_string(run.id) + " has no correct candidate to export (status " +
                  std::string(store::RunStatusName(run.status)) + ", " +
                  std::to_string(run.candidate_count) + " candidates tried)";
    return out;
  }
  const bool tpu = run.target.rfind("tpu-", 0) == 0;
  if (options.format == ExportFormat::kPallas || tpu) {
    if (!tpu || options.format != ExportFormat::kPallas) {
      return InvalidArgument("run " + std::to_string(run.id) + " targets '" + run.target + "': " +
                             (tpu ? "a TPU run exports as --format pallas"
                                  : "--format pallas exports TPU runs (optimize --target tpu-*)"));
    }
    return ExportPallas(db, artifacts, run, options, std::move(out));
  }
  if (run.target != "cpu") {
    return Unimplemented("run " + std::to_string(run.id) + " targets '" + run.target +
                         "': only cpu and tpu kernels can be exported yet");
  }
  MK_ASSIGN_OR_RETURN(StoredKernel k, LoadBestKernel(db, artifacts, run, options.name));
  MK_RETURN_IF_ERROR(BuildShippedLibrary(k, options));

  std::vector<ExportedFile> files = {{"library", LibraryFileName(k.name), k.shipped_library}};
  if (options.format == ExportFormat::kLib) {
    files.push_back({"header", k.name + ".h", CHeaderFor(k.name, *k.module, k.impl)});
    files.push_back({"example", "example.c", CExampleFor(k.name, k.impl)});
  } else {
    MK_ASSIGN_OR_RETURN(std::vector<ExportedFile> jax, JaxFfiFiles(k, options));
    files.insert(files.end(), jax.begin(), jax.end());
  }
  files.push_back({"readme", "README.txt", ExportReadme(k, options.format, files)});

  out.candidate_id = k.candidate.id;
  out.name = k.name;
  out.implementation_hash = k.impl.hash;
  out.library_sha256 = k.shipped_library_sha256;
  out.measured_library_sha256 = k.library_sha256;
  out.module_sha256 = k.module_sha256;
  out.files = std::move(files);
  return out;
}

}  // namespace mk::exports
