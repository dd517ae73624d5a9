// `import`, `suite list|export` and `baseline`: the commands that bring computations in as tasks
// (from JAX through the Python bridge, or from an HLO dump without Python) and that measure
// XLA:CPU as the baseline. Task format: docs/TASKS.md.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "analysis/fusion_plan.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/import_destination.h"
#include "hlo/dump_files.h"
#include "hlo/parser.h"
#include "hlo/printer.h"
#include "hlo/verifier.h"
#include "store/data_dir.h"
#include "store/sqlite_store.h"
#include "support/regular_file.h"
#include "support/sha256.h"
#include "target/target.h"
#include "task/bridge.h"
#include "task/param_names.h"
#include "task/suite_index.h"
#include "task/task.h"

namespace mk::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Status WriteTextFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return IoError("cannot write " + path);
  return Status::Ok();
}

Result<std::string> ReadText(const std::string& path) {
  Result<std::string> text = ReadRegularFile(path);
  if (!text.ok() && text.status().code() == ErrorCode::kNotFound) {
    return NotFound(path + ": no such file");
  }
  return text;
}

// ---- import -------------------------------------------------------------------------------

struct ImportOptions {
  std::string source;
  std::string function;
  std::string scale = "ci";
  std::string out;
  bool force = false;
};

// Default generators for a parameter of an imported HLO dump (docs/TASKS.md).
Result<task::InitSpec> DefaultInit(const hlo::Shape& shape, const std::string& name) {
  task::InitSpec init;
  if (!shape.is_array() || !hlo::IsEvaluable(shape.dtype())) {
    return Unimplemented("entry parameter '" + name + "' has type " + shape.ToString(false) +
                         ", which maxkernel cannot generate inputs for");
  }
  if (hlo::IsFloat(shape.dtype())) {
    init.kind = task::InitSpec::Kind::kNormal;
  } else {
    init.kind = task::InitSpec::Kind::kRandint;
    init.int_low = 0;
    init.int_high = shape.dtype() == hlo::DType::kPred ? 2 : 4;
  }
  return init;
}

// The FLOPs of the module as the fusion planner counts them (the sum over its kernels, which
// cover every instruction of the entry): what an imported task records when its source gives
// none, so that reports and rooflines have a numerator. 0 when the planner refuses the module.
int64_t PlannedFlops(const hlo::Module& module) {
  Result<analysis::FusionPlan> plan = analysis::PlanFusion(module);
  if (!plan.ok()) return 0;
  int64_t flops = 0;
  for (const analysis::Kernel& k : plan->kernels) flops += k.flops;
  return flops;
}

// Gives the task's parameters and the module's entry parameters one name each, the user's
// (task/param_names.h), and fills in the FLOPs from the plan when the source gave none.
// Returns the module text to store: `text` as given when the entry's parameters already had
// those names, else the module printed with them (canonical form, metadata dropped).
Result<std::string> NameAndCount(task::Task& t, hlo::Module& module, const std::string& text) {
  std::vector<std::string> names, before;
  for (const task::TaskParameter& p : t.parameters) names.push_back(p.name);
  for (const hlo::Instruction* p : module.entry()->parameters()) before.push_back(p->name);
  MK_ASSIGN_OR_RETURN(std::vector<std::string> ids, task::RenameEntryParameters(module, names));
  for (size_t i = 0; i < ids.size(); ++i) t.parameters[i].name = ids[i];
  if (t.flops <= 0) t.flops = PlannedFlops(module);
  return ids == before ? text : hlo::PrintModule(module);
}

// A dump file's task id: module_0012.jit_mlp.before_optimizations.txt -> mlp.
std::string TaskIdOf(const std::string& path, const std::string& module_name) {
  std::string stem = fs::path(path).stem().string();
  if (stem.starts_with("module_") && module_name.starts_with("jit_")) return module_name.substr(4);
  return stem;
}

Result<int> ImportHlo(const ImportOptions& o) {
  MK_RETURN_IF_ERROR(CheckImportDestination(o.out, o.force));
  std::error_code ec;
  std::string source = o.source;
  if (fs::is_directory(source, ec)) {
    MK_ASSIGN_OR_RETURN(source, hlo::PickDumpedModule(source, o.function));
  } else if (!o.function.empty()) {
    return InvalidArgument("--function applies to Python files and XLA dump folders only");
  }
  MK_RETURN_IF_ERROR(hlo::CheckIsHloText(source));
  MK_ASSIGN_OR_RETURN(std::string text, ReadText(source));
  MK_ASSIGN_OR_RETURN(auto module, hlo::ParseModule(text, source));
  MK_RETURN_IF_ERROR(hlo::VerifyModule(*module));
  const hlo::Computation* entry = module->entry();
  if (!entry || !entry->root()) return InvalidArgument(source + ": the module has no ENTRY");

  task::Task t;
  t.id = TaskIdOf(source, module->name);
  t.name = module->name;
  t.description = "Imported from " + fs::path(source).filename().string() +
                  " (HLO dump; default input generators, edit as needed).";
  t.scale = "custom";
  int64_t bytes = 0;
  for (size_t i = 0; i < entry->parameters().size(); ++i) {
    const hlo::Instruction* p = entry->parameter(i);
    MK_ASSIGN_OR_RETURN(task::InitSpec init, DefaultInit(p->shape, p->name));
    hlo::Shape shape(p->shape.dtype(), p->shape.dims());  // layout dropped: row-major inputs
    t.parameters.push_back({p->name, shape, init});
    bytes += shape.byte_size();
    if (t.dtype.empty() && hlo::IsFloat(shape.dtype())) t.dtype = hlo::DTypeName(shape.dtype());
  }
  std::vector<hlo::Shape> results;
  const hlo::Shape& root = entry->root()->shape;
  if (root.is_tuple()) {
    results = root.tuple_shapes();
  } else {
    results.push_back(root);
  }
  for (const hlo::Shape& r : results) {
    if (!r.is_array()) {
      return Unimplemented(source + ": nested tuple or token results are not supported");
    }
    t.outputs.push_back({hlo::Shape(r.dtype(), r.dims()), t.atol, t.rtol});
    bytes += r.byte_size();
    if (t.dtype.empty()) t.dtype = hlo::DTypeName(r.dtype());
  }
  t.bytes = bytes;
  MK_ASSIGN_OR_RETURN(std::string module_text, NameAndCount(t, *module, text));
  MK_RETURN_IF_ERROR(task::ValidateTask(t));
  MK_RETURN_IF_ERROR(task::WriteTaskDirectory(
      o.out, {{"task.yaml", task::TaskToYaml(t)}, {"module.hlo", module_text}}, o.force));
  std::cerr << "imported " << source << " -> " << o.out << " (" << t.parameters.size()
            << " parameters, " << t.outputs.size() << " outputs)\n";
  return kExitOk;
}

Result<int> ImportPython(const ImportOptions& o) {
  MK_RETURN_IF_ERROR(CheckImportDestination(o.out, o.force));
  std::error_code ec;
  if (!fs::is_regular_file(o.source, ec)) return NotFound(o.source + ": no such file");
  // The bridge writes into a staging sibling of the destination (same depth, so relative
  // source paths stay right); we check the module with our own parser before committing.
  MK_ASSIGN_OR_RETURN(std::string staged, task::MakeStagingDirectory(o.out));
  auto discard = [&](Status s) {
    std::error_code ignored;
    fs::remove_all(staged, ignored);
    return s;
  };
  std::vector<std::string> args = {"export", "--workload", o.source, "--scale", o.scale,
                                   "--force", "-o", staged};
  if (!o.function.empty()) {
    args.push_back("--function");
    args.push_back(o.function);
  }
  auto run = task::RunBridge(args);
  if (!run.ok()) return discard(run.status());
  if (run->exit_code != 0) return discard(task::BridgeFailure(*run, "import"));
  auto loaded = task::LoadTaskWithModule(staged);
  if (!loaded.ok()) {
    return discard(loaded.status().WithContext("the module JAX produced is not supported"));
  }
  Status verified = hlo::VerifyModule(*loaded->module);
  if (!verified.ok()) return discard(verified.WithContext("the module JAX produced does not verify"));
  // JAX names the HLO parameters `x.1`: the task's names go into the module, and FLOPs the
  // source did not give come from the plan.
  task::Task& t = loaded->task;
  Result<std::string> staged_text = ReadText(staged + "/module.hlo");
  if (!staged_text.ok()) return discard(staged_text.status());
  Result<std::string> module_text = NameAndCount(t, *loaded->module, *staged_text);
  if (!module_text.ok()) return discard(module_text.status());
  Status rewritten = WriteTextFile(staged + "/module.hlo", *module_text);
  if (rewritten.ok()) rewritten = WriteTextFile(staged + "/task.yaml", task::TaskToYaml(t));
  if (!rewritten.ok()) return discard(rewritten);
  MK_RETURN_IF_ERROR(task::CommitTaskDirectory(staged, o.out, o.force));
  std::cerr << "imported " << o.source << " -> " << o.out << " (task " << loaded->task.id << ", "
            << loaded->task.scale << ")\n";
  return kExitOk;
}

// ---- suite list ---------------------------------------------------------------------------

std::string Human(double v, const char* unit) {
  const char* prefixes[] = {"", "K", "M", "G", "T", "P"};
  int i = 0;
  while (std::fabs(v) >= 1000.0 && i < 5) {
    v /= 1000.0;
    ++i;
  }
  char buf[48];
  std::snprintf(buf, sizeof(buf), i == 0 ? "%.0f %s%s" : "%.1f %s%s", v, prefixes[i], unit);
  return buf;
}

std::string Field(const json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

Result<int> SuiteList(const std::string& suite_dir, bool as_json) {
  MK_ASSIGN_OR_RETURN(json index, task::LoadSuiteIndex(suite_dir));
  if (as_json) {
    // An object, as every command prints: {"workloads": [...]}.
    std::cout << json{{"workloads", index["workloads"]}}.dump(1) << "\n";
    return kExitOk;
  }
  const char* scales[] = {"ci", "bench", "full"};
  std::printf("%-5s %-40s %-14s", "id", "name", "operator");
  for (const char* s : scales) std::printf(" %13s %11s", (std::string(s) + " FLOP").c_str(), "bytes");
  std::printf("\n");
  for (const json& w : index["workloads"]) {
    std::printf("%-5s %-40s %-14s", Field(w, "id").c_str(), Field(w, "name").c_str(),
                Field(w, "operator").c_str());
    for (const char* s : scales) {
      const json& sc = w["scales"];
      if (sc.contains(s) && sc[s].is_object() && sc[s].contains("flops") &&
          sc[s]["flops"].is_number() && sc[s].contains("bytes") && sc[s]["bytes"].is_number()) {
        std::printf(" %13s %11s", Human(sc[s]["flops"].get<double>(), "FLOP").c_str(),
                    Human(sc[s]["bytes"].get<double>(), "B").c_str());
      } else {
        std::printf(" %13s %11s", "-", "-");
      }
    }
    std::printf("\n");
  }
  std::printf("%zu workloads\n", index["workloads"].size());
  return kExitOk;
}

// ---- suite export -------------------------------------------------------------------------

Result<int> SuiteExport(const std::string& suite_dir, const std::string& scale,
                        const std::string& only, const std::string& out) {
  std::error_code ec;
  if (!fs::is_directory(suite_dir, ec)) return NotFound("suite folder " + suite_dir + " does not exist");
  std::vector<std::string> args = {"export-suite", "--root", suite_dir, "--scale", scale};
  if (!only.empty()) {
    args.push_back("--only");
    args.push_back(only);
  }
  if (!out.empty()) {
    args.push_back("-o");
    args.push_back(out);
  }
  auto run = task::RunBridge(args);
  if (!run.ok()) return run.status();
  std::cerr << run->err;
  if (run->exit_code != 0) return task::BridgeFailure(*run, "suite export");
  // Every exported module must be one our parser accepts; report the ones it does not.
  const std::string root = out.empty() ? suite_dir : out;
  int unsupported = 0;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    const fs::path dir = entry.path() / scale;
    if (!fs::exists(dir / "task.yaml", ec)) continue;
    auto loaded = task::LoadTaskWithModule(dir.string());
    if (!loaded.ok()) {
      std::cerr << "warning: " << loaded.status().ToString() << "\n";
      ++unsupported;
    }
  }
  return unsupported ? kExitFailed : kExitOk;
}

// ---- baseline -----------------------------------------------------------------------------

struct BaselineOptions {
  std::string task_dir;
  std::string db;
  bool xla = false;
  bool as_json = false;
  bool record = true;
  int min_runs = 10;
  double min_time = 1.0;
};

std::string Seconds(double s) {
  char buf[32];
  if (s >= 1.0) {
    std::snprintf(buf, sizeof(buf), "%.3f s", s);
  } else if (s >= 1e-3) {
    std::snprintf(buf, sizeof(buf), "%.3f ms", s * 1e3);
  } else {
    std::snprintf(buf, sizeof(buf), "%.1f us", s * 1e6);
  }
  return buf;
}

Result<int> Baseline(const BaselineOptions& o) {
  if (!o.xla) {
    return InvalidArgument("choose the baseline engine: --xla (XLA:CPU through JAX) is the only "
                           "one for now");
  }
  // A task with a JAX source is timed as jax.jit runs that function; one imported from HLO
  // has its module.hlo compiled by XLA:CPU through jaxlib (python/maxkernel_jax/xla.py).
  MK_ASSIGN_OR_RETURN(task::LoadedTask loaded, task::LoadTaskWithModule(o.task_dir));
  const task::Task& t = loaded.task;
  // The store's key for the module: the sha256 of its canonical text, as optimize stores it.
  const std::string module_sha = Sha256Hex(hlo::PrintModule(*loaded.module));
  std::unique_ptr<store::SqliteStore> db;
  std::string db_path;
  if (o.record) {
    MK_ASSIGN_OR_RETURN(store::DataDir dir, store::ResolveDataDir(o.db));
    MK_RETURN_IF_ERROR(store::EnsureDataDir(dir));
    MK_ASSIGN_OR_RETURN(db, store::SqliteStore::Open(dir.db_path.string()));
    db_path = dir.db_path.string();
  }
  auto run = task::RunBridge({"time", o.task_dir, "--min-runs", std::to_string(o.min_runs),
                              "--min-time", std::to_string(o.min_time)});
  if (!run.ok()) return run.status();
  if (run->exit_code != 0) return task::BridgeFailure(*run, "baseline " + o.task_dir);
  json r = json::parse(run->out, nullptr, false);
  if (r.is_discarded() || !r.is_object() || !r.contains("median_s") || !r["median_s"].is_number()) {
    return Internal("the Python bridge printed no timing JSON: " + run->out.substr(0, 200));
  }
  auto num = [&](const char* k) { return r.contains(k) && r[k].is_number() ? r[k].get<double>() : 0.0; };
  task::Baseline b;
  b.median_s = num("median_s");
  b.p10_s = num("p10_s");
  b.p90_s = num("p90_s");
  b.runs = static_cast<int64_t>(num("runs"));
  b.cpu = Field(r, "cpu");
  b.jax_version = Field(r, "jax_version");
  b.date = Field(r, "date");
  // Baselines live in the store, keyed by module, CPU and engine, never in a task.yaml (a
  // committed suite task would change under the user's feet).
  if (o.record) {
    store::BaselineRecord rec;
    rec.module_sha256 = module_sha;
    rec.cpu_model = target::HostCpu().model;
    rec.engine = "xla-cpu";
    rec.engine_version = "jax " + b.jax_version;
    rec.median_s = b.median_s;
    rec.p10_s = b.p10_s;
    rec.p90_s = b.p90_s;
    rec.runs = b.runs;
    rec.details_json = r.dump();
    MK_RETURN_IF_ERROR(db->AddBaseline(rec).status());
  }
  if (o.as_json) {
    r["recorded"] = o.record;
    r["module_sha256"] = module_sha;
    if (o.record) r["database"] = db_path;
    std::cout << r.dump() << "\n";
    return kExitOk;
  }
  std::printf("task %s (%s) on XLA:CPU — jax %s, %s, %d threads\n", t.id.c_str(), t.scale.c_str(),
              b.jax_version.c_str(), b.cpu.c_str(), static_cast<int>(num("threads")));
  std::printf("  median   %s\n  p10      %s\n  p90      %s\n  runs     %lld\n",
              Seconds(b.median_s).c_str(), Seconds(b.p10_s).c_str(), Seconds(b.p90_s).c_str(),
              static_cast<long long>(b.runs));
  if (t.flops > 0 && b.median_s > 0) {
    std::printf("  GFLOP/s  %.2f\n", static_cast<double>(t.flops) / b.median_s / 1e9);
  }
  if (t.bytes > 0 && b.median_s > 0) {
    std::printf("  GB/s     %.2f\n", static_cast<double>(t.bytes) / b.median_s / 1e9);
  }
  if (o.record) {
    std::printf("recorded in %s for module %s on this CPU\n", db_path.c_str(),
                module_sha.substr(0, 12).c_str());
  }
  return kExitOk;
}

}  // namespace

void RegisterSuiteCommands(CLI::App& app, CommandResult& result) {
  auto import_opts = std::make_shared<ImportOptions>();
  CLI::App* import = app.add_subcommand(
      "import", "Make a task directory from a JAX file (via the Python bridge) or an HLO dump");
  import->add_option("source", import_opts->source,
                     "reference.py / workload.py, an HLO text dump (.hlo, .txt), or an XLA dump "
                     "folder (--xla_dump_to)")
      ->required();
  import->add_option("--function", import_opts->function,
                     "the JAX function in a reference file (which must define INPUTS), or the jitted "
                     "function whose jit_NAME module to take from a dump folder");
  import->add_option("--scale", import_opts->scale, "workload scale: ci, bench or full")
      ->capture_default_str();
  import->add_option("-o,--out", import_opts->out, "task directory to create")->required();
  import->add_flag("--force", import_opts->force, "replace an existing task directory");
  import->callback([import_opts, &result] {
    RunCommand(result, [&]() -> Result<int> {
      if (EndsWith(import_opts->source, ".py")) return ImportPython(*import_opts);
      return ImportHlo(*import_opts);
    });
  });

  CLI::App* suite = app.add_subcommand("suite", "The 50-workload suite (bench/jaxbench)");
  suite->require_subcommand(1);
  auto suite_dir = std::make_shared<std::string>();
  auto list_json = std::make_shared<bool>(false);
  CLI::App* list = suite->add_subcommand("list", "Workloads with FLOPs and bytes at each scale");
  list->add_flag("--json", *list_json, "print the index as JSON");
  list->add_option("--suite-dir", *suite_dir, "default: $MAXKERNEL_SUITE_DIR or bench/jaxbench");
  list->callback([suite_dir, list_json, &result] {
    RunCommand(result, [&]() -> Result<int> {
      return SuiteList(suite_dir->empty() ? task::DefaultSuiteDir() : *suite_dir, *list_json);
    });
  });

  auto export_scale = std::make_shared<std::string>("ci");
  auto export_only = std::make_shared<std::string>();
  auto export_out = std::make_shared<std::string>();
  CLI::App* exp = suite->add_subcommand("export", "Export workloads as tasks (OUT/<id>/<scale>)");
  exp->add_option("--scale", *export_scale, "ci, bench or full")->capture_default_str();
  exp->add_option("--only", *export_only, "comma-separated ids, e.g. 1p,12p");
  exp->add_option("-o,--out", *export_out, "default: the suite folder itself");
  exp->add_option("--suite-dir", *suite_dir, "default: $MAXKERNEL_SUITE_DIR or bench/jaxbench");
  exp->callback([=, &result] {
    RunCommand(result, [&]() -> Result<int> {
      return SuiteExport(suite_dir->empty() ? task::DefaultSuiteDir() : *suite_dir, *export_scale,
                         *export_only, *export_out);
    });
  });

  auto base = std::make_shared<BaselineOptions>();
  CLI::App* baseline = app.add_subcommand(
      "baseline", "Time a task's baseline and record it in the store (by module and CPU)");
  baseline->add_option("task", base->task_dir, "task directory")->required();
  baseline->add_flag("--xla", base->xla,
                     "XLA:CPU through JAX (the task's JAX function, or its module.hlo when it "
                     "was imported from HLO)");
  baseline->add_flag("--json", base->as_json, "print JSON instead of a table");
  baseline->add_option("--db", base->db, "Database to record into (default: DATA_DIR/maxkernel.db)");
  // A callback, not CLI11's "!--no-record" negation, which --help shows as `--no-record{false}`.
  baseline->add_flag_callback("--no-record", [base] { base->record = false; },
                              "do not write the result into task.yaml");
  baseline->add_option("--min-runs", base->min_runs, "at least this many timed runs")
      ->capture_default_str();
  baseline->add_option("--min-time", base->min_time, "and at least this many seconds")
      ->capture_default_str();
  baseline->callback([base, &result] {
    RunCommand(result, [&]() -> Result<int> { return Baseline(*base); });
  });
}

}  // namespace mk::cli
