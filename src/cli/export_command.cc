// `maxkernel export RUN --format lib|jax-ffi|pallas -o DIR`: a run's best kernel out of the store
// (agents/run_export.h does the work; docs/EXPORT.md describes the files).
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "export/run_export.h"
#include "export/run_export_store.h"
#include "cli/cli_util.h"
#include "cli/commands.h"

namespace mk::cli {
namespace {

namespace fs = std::filesystem;

struct ExportOptions {
  std::string run;
  std::string format = "lib";
  std::string out;
  std::string name;
  std::string db;
  bool json = false;
};

Result<int> RunExport(const ExportOptions& o) {
  MK_ASSIGN_OR_RETURN(int64_t run_id, exports::ParseRunId(o.run));
  exports::ExportOptions options;
  MK_ASSIGN_OR_RETURN(options.format, exports::ParseExportFormat(o.format));
  options.name = o.name;
  MK_ASSIGN_OR_RETURN(exports::OpenedStore s, exports::OpenExistingStore(o.db));
  // Looked up first so that an unknown id names the database it was looked for in.
  Result<store::RunRecord> run = s.db->GetRun(run_id);
  if (!run.ok() && run.status().code() == ErrorCode::kNotFound) {
    return NotFound("run " + std::to_string(run_id) + " not found in " + s.dir.db_path.string());
  }
  MK_RETURN_IF_ERROR(run.status());
  MK_ASSIGN_OR_RETURN(exports::RunExport e, exports::ExportRun(*s.db, *s.artifacts, run_id, options));
  if (!e.refused.empty()) {
    // The run exists but produced nothing to ship: like any run without an acceptable result.
    return ReportFailure(e.refused);
  }

  std::error_code ec;
  const bool existed = fs::exists(o.out, ec);
  fs::create_directories(o.out, ec);
  if (ec || !fs::is_directory(o.out, ec)) {
    return Status(ErrorCode::kIo, "cannot create output directory", SourceLoc{o.out, 0, 0});
  }
  std::vector<OutputFile> files;
  for (const exports::ExportedFile& f : e.files) {
    files.push_back({(fs::path(o.out) / f.name).string(), f.contents});
  }
  Status written = WriteFilesAtomically(files);
  if (!written.ok()) {
    if (!existed) fs::remove(o.out, ec);  // the folder this run created, empty again
    return written;
  }

  if (o.json) {
    nlohmann::json j = {{"run", e.run_id},
                        {"candidate", e.candidate_id},
                        {"format", std::string(exports::ExportFormatName(options.format))},
                        {"name", e.name},
                        {"target", e.target},
                        {"dir", o.out},
                        {"implementation_hash", e.implementation_hash},
                        {"library_sha256", e.library_sha256},
                        {"measured_library_sha256", e.measured_library_sha256},
                        {"module_sha256", e.module_sha256}};
    for (const exports::ExportedFile& f : e.files) {
      j["files"][f.role] = (fs::path(o.out) / f.name).string();
    }
    std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    for (const OutputFile& f : files) std::cout << "wrote " << f.path << "\n";
    std::cout << "exported run " << e.run_id << " (candidate " << e.candidate_id << ", "
              << exports::ExportFormatName(options.format) << ") as " << e.name << "\n";
  }
  return kExitOk;
}

}  // namespace

void RegisterExportCommand(CLI::App& app, CommandResult& result) {
  auto o = std::make_shared<ExportOptions>();
  CLI::App* exp = app.add_subcommand(
      "export", "Export a run's best kernel: a C library (lib) or a JAX FFI module (jax-ffi)");
  exp->add_option("run", o->run, "Run id (from `runs list`)")->required();
  exp->add_option("--format", o->format, "lib (default), jax-ffi, or pallas (a TPU run: its Pallas module)");
  exp->add_option("-o,--out", o->out, "Output directory (created)")->required();
  exp->add_option("--name", o->name, "Library name (default: the task's name)");
  exp->add_option("--db", o->db, "Database file (default: DATA_DIR/maxkernel.db)");
  exp->add_flag("--json", o->json, "Print the written paths and hashes as JSON");
  exp->callback([o, &result] { RunCommand(result, [&] { return RunExport(*o); }); });
}

}  // namespace mk::cli
