// `maxkernel bench`: our kernels against oneDNN / OpenBLAS (--suite gemm) and XLA:CPU and the
// interpreter (--suite jaxbench), timed interleaved in one run and reported as ratios
// baseline/ours. The work is in agents/bench*.h; docs/BENCHMARKS.md explains what is measured
// and how to read it. Progress goes to stderr, the table (or --json) to stdout.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include "benchmarks/bench.h"
#include "benchmarks/bench_aa.h"
#include "benchmarks/bench_expert.h"
#include "benchmarks/bench_gemm.h"
#include "benchmarks/bench_jaxbench.h"
#include "benchmarks/bench_tpu.h"
#include "benchmarks/bench_search.h"
#include "agents/engine.h"
#include "agents/profiler.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "store/data_dir.h"
#include "target/target.h"
#include "store/sqlite_store.h"
#include "task/bridge.h"
#include "task/suite_index.h"
#include "task/task.h"

namespace mk::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct BenchOptions {
  std::string suite;
  // --aa: one library against itself
  std::optional<std::string> aa;
  int trials = 20;
  // gemm
  std::optional<std::string> sizes, shapes, suite_shapes, dtypes, bf16_result, baselines, libs,
      schedule;
  // jaxbench
  std::optional<std::string> scale, only, compare, tasks, suite_dir, db;
  std::optional<int64_t> from_run;
  std::optional<double> interp_cap;
  std::optional<int> interp_runs;
  // search
  bool build_table = false;
  std::optional<std::string> tables;
  std::optional<int> seeds;
  std::optional<std::string> note;
  std::optional<std::string> save_model;
  // expert
  std::optional<int> budget, batch;
  std::optional<std::string> algorithm, model;
  std::optional<double> time_budget;
  // both
  int threads = 2;
  std::optional<int> rounds;
  double min_time = 0.3;
  int warmup = 1;
  int min_iterations = 3;
  double timeout = 600;
  bool json = false;
  std::string write_json, write_markdown;
  // tpu
  std::optional<std::string> generations;
  bool no_check = false;
};

bool Executable(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && access(p.c_str(), X_OK) == 0;
}

// --baselines, else $MAXKERNEL_BASELINES, else beside this maxkernel, else on PATH; "" if none.
std::string FindBaselines(const std::optional<std::string>& flag) {
  if (flag) return *flag;
  if (const char* env = std::getenv("MAXKERNEL_BASELINES"); env && *env) return env;
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && Executable(self.parent_path() / "maxkernel-baselines")) {
    return (self.parent_path() / "maxkernel-baselines").string();
  }
  if (const char* path = std::getenv("PATH")) {
    std::stringstream s(path);
    std::string dir;
    while (std::getline(s, dir, ':')) {
      if (!dir.empty() && Executable(fs::path(dir) / "maxkernel-baselines")) {
        return (fs::path(dir) / "maxkernel-baselines").string();
      }
    }
  }
  return "";
}

std::string NumText(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

Status RejectFor(const std::string& suite, bool given, const std::string& flag,
                 const std::string& other) {
  if (!given) return Status::Ok();
  return InvalidArgument(flag + " applies to --suite " + other + ", not --suite " + suite);
}

std::string Markdown(const json& header, const std::string& table) {
  std::ostringstream md;
  md << "# maxkernel bench --suite " << header.value("suite", "") << " — "
     << header.value("date", "").substr(0, 10) << "\n\n";
  md << "- date: " << header.value("date", "") << "\n";
  md << "- CPU: " << header.value("cpu", "") << " (" << header.value("cores", 0) << " cores)\n";
  md << "- commit: " << header.value("commit", "")
     << (header.value("worktree_dirty", false) ? " (with uncommitted changes)" : "") << "\n";
  md << "- compiler: " << header.value("compiler", "") << "\n";
  md << "- threads: " << header.value("threads", 0) << "\n";
  md << "- load average (1/5/15 min) at start: " << header.value("loadavg", "")
     << ", at the end: " << header.value("loadavg_finished", "") << " (shared machine)\n";
  md << "- command: `" << header.value("command", "") << "`\n\n";
  md << "```\n" << table << "```\n";
  return md.str();
}

// What every suite ends with: --write-json and --write-markdown written (atomically, both or
// neither), then the document (--json) or the table on stdout.
Status WriteAndPrint(const BenchOptions& o, const json& doc, const std::string& markdown,
                     const std::string& table) {
  std::vector<OutputFile> files;
  if (!o.write_json.empty()) files.push_back({o.write_json, doc.dump(2) + "\n"});
  if (!o.write_markdown.empty()) files.push_back({o.write_markdown, markdown});
  if (!files.empty()) MK_RETURN_IF_ERROR(WriteFilesAtomically(files));
  if (o.json) {
    std::cout << doc.dump(2) << "\n";
  } else {
    std::cout << table;
  }
  return Status::Ok();
}

// --suite-shapes IDS: the plain GEMMs of those suite workloads at bench scale, each with the
// dtypes its HLO has, `from` naming the workloads. A workload without one is an error.
// `gemm` stands for the suite's GEMM-family workloads (operator gemm, mlp or loss).
Result<std::vector<bench::GemmCase>> SuiteGemmCases(const std::string& ids,
                                                     const std::optional<std::string>& tasks,
                                                     const std::optional<std::string>& suite_dir) {
  bench::JaxbenchOptions jo;
  jo.scale = "bench";
  jo.tasks_dir = tasks.value_or("");
  jo.suite_dir = suite_dir.value_or("");
  if (ids == "gemm") {
    MK_ASSIGN_OR_RETURN(json index, task::LoadSuiteIndex(jo.suite_dir.empty()
                                                             ? task::DefaultSuiteDir()
                                                             : jo.suite_dir));
    jo.only = task::SuiteIdsWithOperator(index, {"gemm", "mlp", "loss"});
    if (jo.only.empty()) return NotFound("--suite-shapes gemm: the suite has no GEMM workloads");
  } else {
    MK_ASSIGN_OR_RETURN(jo.only, bench::ParseOnlyList(ids));
  }
  auto say = [](const std::string& line) { std::cerr << line << std::endl; };
  MK_ASSIGN_OR_RETURN(std::vector<std::string> dirs, bench::JaxbenchTaskDirs(jo, say));
  std::vector<bench::GemmCase> cases;
  for (size_t i = 0; i < dirs.size(); ++i) {
    MK_ASSIGN_OR_RETURN(task::LoadedTask loaded, task::LoadTaskWithModule(dirs[i]));
    std::vector<bench::GemmCase> found = bench::GemmCasesOfModule(*loaded.module);
    if (found.empty()) {
      return InvalidArgument("--suite-shapes: " + jo.only[i] +
                             " has no f32 or bf16 dot without batch dimensions");
    }
    for (bench::GemmCase& c : found) {
      c.from = {jo.only[i]};
      cases.push_back(c);
    }
  }
  return cases;
}

// The peaks behind the rows' floors: the newest full machine probe in the store (--db, or the
// data dir's), its rates times `share` (the bench's threads over the probed cores); nullopt
// when there is none. The bench never probes: measuring the machine mid-run would disturb the
// timings, and `doctor --probe` stores a probe once for every later command.
Result<std::optional<bench::BenchPeaks>> StoredPeaks(const BenchOptions& o, double share) {
  MK_ASSIGN_OR_RETURN(store::DataDir dir, store::ResolveDataDir(o.db.value_or("")));
  if (!fs::exists(dir.db_path)) return std::optional<bench::BenchPeaks>();
  MK_ASSIGN_OR_RETURN(auto db, store::SqliteStore::Open(dir.db_path.string()));
  MK_ASSIGN_OR_RETURN(std::optional<agents::ProbedMachine> machine,
                      agents::LoadStoredMachine(*db, /*quick_ok=*/false));
  if (!machine) return std::optional<bench::BenchPeaks>();
  bench::BenchPeaks peaks;
  peaks.probe_id = machine->record.id;
  peaks.threads_share = share;
  peaks.f32_flops = machine->record.peak_flops_f32 * share;
  peaks.bf16_flops =
      machine->record.peak_flops_bf16.value_or(machine->record.peak_flops_f32) * share;
  return std::optional<bench::BenchPeaks>(peaks);
}

// `bench --aa TASK`: the timing protocol against itself (agents/bench_aa.h).
Result<int> RunAa(const BenchOptions& o) {
  if (!o.suite.empty()) return InvalidArgument("--aa and --suite contradict each other");
  bench::AaOptions ao;
  ao.task_dir = *o.aa;
  ao.trials = o.trials;
  ao.rounds = o.rounds.value_or(8);
  ao.protocol.min_seconds = o.min_time;
  MK_RETURN_IF_ERROR(task::LoadTaskWithModule(ao.task_dir).status());
  agents::CpuEngine engine;
  MK_ASSIGN_OR_RETURN(bench::AaResult r,
                      bench::RunAaBench(ao, engine, [&o](const std::string& line) {
                        if (!o.json) std::cerr << line << std::endl;
                      }));
  if (o.json) {
    std::cout << bench::ToJson(r).dump(2) << "\n";
  } else {
    std::cout << bench::FormatAaTable(r);
  }
  return kExitOk;
}

// --suite tpu: the Pallas modules of the suite, checked, compiled, modelled (bench_tpu.h).
Result<int> RunTpuSuite(const BenchOptions& o) {
  bench::TpuBenchOptions to;
  to.scale = o.scale.value_or("ci");
  if (o.only) {
    MK_ASSIGN_OR_RETURN(to.only, bench::ParseOnlyList(*o.only));
  }
  if (o.generations) {
    to.generations.clear();
    std::stringstream list(*o.generations);
    for (std::string g; std::getline(list, g, ',');) {
      if (!g.empty()) to.generations.push_back(g);
    }
  }
  to.check = !o.no_check;
  if (o.tasks) to.tasks_dir = *o.tasks;
  std::string command = "maxkernel bench --suite tpu --scale " + to.scale;
  if (o.only) command += " --only " + *o.only;
  json header = bench::BenchHeader("tpu", command, "libtpu (compile-only) + the TPU model", 0);
  MK_ASSIGN_OR_RETURN(std::vector<bench::TpuBenchRow> rows,
                      bench::RunTpuBench(to, [&o](const std::string& line) {
                        if (!o.json) std::cerr << line << std::endl;
                      }));
  header["finished"] = bench::UtcNow();
  header["note"] = "modelled and estimated: no TPU measured any figure";
  json rows_json = json::array();
  for (const auto& r : rows) rows_json.push_back(bench::ToJson(r));
  json doc = {{"header", header}, {"rows", rows_json}};
  const std::string table = bench::FormatTpuTable(rows, to.generations);
  MK_RETURN_IF_ERROR(WriteAndPrint(o, doc, Markdown(header, table), table));
  for (const auto& r : rows) {
    if (!r.error.empty() || r.check.rfind("failed", 0) == 0) return kExitFailed;
  }
  return kExitOk;
}

// `bench --suite search` (benchmarks/bench_search.h): --build-table --only NAME measures one
// table; otherwise every table in --tables is replayed on this CPU.
Result<int> RunSearchSuite(const BenchOptions& o) {
  if (o.scale || o.compare || o.from_run || o.sizes || o.shapes || o.suite_shapes || o.schedule) {
    return InvalidArgument(
        "--suite search takes --build-table, --only, --tables, --seeds, --min-time, --note, "
        "--save-model, --json, --write-json, --write-markdown");
  }
  if (o.save_model && o.build_table) return InvalidArgument("--save-model applies to the replay");
  const target::Target host = target::HostCpu();
  auto progress = [](const std::string& line) {
    std::cerr << line << std::endl;  // progress: stderr, even with --json
  };
  if (o.build_table) {
    if (!o.only) return InvalidArgument("--build-table needs --only NAME (one benchmark kernel)");
    bench::BuildTableOptions bo;
    bo.name = *o.only;
    bo.out_dir = o.tables.value_or(bench::SearchTableFolder(host.model, host.isa_level));
    bo.tasks_dir = o.tasks.value_or("");
    bo.min_time_s = o.min_time;
    bo.note = o.note.value_or("");
    agents::CpuEngine engine;
    MK_ASSIGN_OR_RETURN(std::string path, bench::BuildSearchTable(bo, engine, progress));
    std::cout << path << "\n";
    return kExitOk;
  }
  if (o.note) return InvalidArgument("--note applies to --build-table");
  // Every table under the folder (each CPU model's sit in a folder of their own); those
  // measured on another CPU model or ISA are named and left out: a replay is this CPU's.
  const std::string dir = o.tables.value_or("bench/search");
  std::vector<bench::SearchTable> tables;
  std::vector<std::string> skipped;
  std::set<std::string> other_cpus;
  std::error_code ec;
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->path().extension() == ".json") files.push_back(it->path());
  }
  if (ec) return NotFound("--tables: cannot list " + dir + ": " + ec.message());
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    if (o.only && f.stem().string() != *o.only) continue;
    MK_ASSIGN_OR_RETURN(bench::SearchTable t, bench::LoadSearchTable(f.string()));
    if (t.cpu_model != host.model || t.isa_level != host.isa_level) {
      other_cpus.insert(t.cpu_model + " (" + t.isa_level + ")");
      skipped.push_back(f.string() + ": measured on " + t.cpu_model + " (" + t.isa_level + ")");
      continue;
    }
    if (!t.complete && !o.only) {
      // A table still being built: said, not replayed (--only NAME replays it or says why not).
      skipped.push_back(f.string() + ": incomplete (" + std::to_string(t.points.size()) + " of " +
                        std::to_string(t.SpaceSize()) + " points)");
      std::cerr << "skipping " << skipped.back() << std::endl;
      continue;
    }
    tables.push_back(std::move(t));
  }
  if (tables.empty()) {
    std::string others;
    for (const std::string& c : other_cpus) others += (others.empty() ? "" : "; ") + c;
    std::string names;
    for (const auto& d : bench::SearchKernels()) names += (names.empty() ? "" : ", ") + d.name;
    return NotFound("no complete search table in " + dir + (o.only ? " named " + *o.only : "") +
                    " was measured on this CPU (" + host.model + ", " + host.isa_level + ")" +
                    (others.empty() ? "" : "; the tables there are from: " + others) +
                    ". Build this CPU's with `maxkernel bench --suite search --build-table --only "
                    "NAME` (" + names + ")");
  }
  if (o.save_model) {
    // The suite's model, for `search --model FILE` / `bench --suite expert --model FILE`.
    MK_ASSIGN_OR_RETURN(std::string model, bench::TrainSuiteModel(tables));
    MK_RETURN_IF_ERROR(WriteFilesAtomically({{*o.save_model, model}}));
    std::cerr << "wrote the cost model of " << tables.size() << " tables to " << *o.save_model
              << std::endl;
  }
  bench::ReplayOptions ro;
  ro.seeds = o.seeds.value_or(5);
  ro.host_cpu = host.model;
  MK_ASSIGN_OR_RETURN(json replay, bench::ReplaySearchTables(tables, ro));
  replay["date"] = bench::UtcNow();
  replay["skipped"] = skipped;
  const std::string table = bench::FormatSearchReplay(replay);
  const std::string markdown = "# maxkernel bench --suite search (replay) — " +
                               replay["date"].get<std::string>().substr(0, 10) + "\n\n- CPU: " +
                               ro.host_cpu + "\n\n```\n" + table + "```\n";
  MK_RETURN_IF_ERROR(WriteAndPrint(o, replay, markdown, table));
  return kExitOk;
}

// `bench --suite expert` (benchmarks/bench_expert.h): per workload, a search with the
// planner's rules off, then its best against the planner's candidate, interleaved.
Result<int> RunExpertSuite(const BenchOptions& o) {
  if (o.compare || o.from_run || o.sizes || o.shapes || o.suite_shapes || o.schedule ||
      o.build_table || o.tables || o.seeds || o.note || o.save_model || o.interp_cap ||
      o.interp_runs) {
    return InvalidArgument(
        "--suite expert takes --only, --scale, --tasks, --budget, --algorithm, --batch, --model, "
        "--time-budget, --rounds, --min-time, --warmup, --min-iterations, --db, --json, "
        "--write-json, --write-markdown");
  }
  bench::ExpertOptions eo;
  if (o.only) {
    MK_ASSIGN_OR_RETURN(eo.only, bench::ParseOnlyList(*o.only));
  }
  eo.scale = o.scale.value_or("bench");
  eo.tasks_dir = o.tasks.value_or("");
  eo.budget = o.budget.value_or(64);
  eo.batch = o.batch.value_or(1);
  eo.algorithm = o.algorithm.value_or("astar");
  eo.model_file = o.model.value_or("");
  eo.time_budget_s = o.time_budget.value_or(0);
  eo.rounds = o.rounds.value_or(8);
  eo.protocol.min_seconds = o.min_time;
  eo.protocol.warmup = o.warmup;
  eo.protocol.min_iterations = o.min_iterations;
  MK_RETURN_IF_ERROR(bench::ValidateExpertOptions(eo));

  // The searches are stored like any `maxkernel search` run (--db, or the data dir's store), and
  // start from that store's newest cost model, as a user's search would.
  MK_ASSIGN_OR_RETURN(store::DataDir dir, store::ResolveDataDir(o.db.value_or("")));
  MK_RETURN_IF_ERROR(store::EnsureDataDir(dir));
  MK_ASSIGN_OR_RETURN(auto db, store::SqliteStore::Open(dir.db_path.string()));
  store::ArtifactStore artifacts(dir.root);
  agents::CpuEngine engine;
  MK_ASSIGN_OR_RETURN(auto stored, agents::LoadStoredMachine(*db, /*quick_ok=*/false));
  if (!stored) std::cerr << "probing this CPU's peaks (stored for later runs) ..." << std::endl;
  MK_ASSIGN_OR_RETURN(target::Target probed, agents::LoadOrProbe(*db, !stored));
  engine.set_target(probed);

  std::string only;
  for (const auto& id : eo.only) only += (only.empty() ? "" : ",") + id;
  const std::string command = "maxkernel bench --suite expert --scale " + eo.scale + " --only " +
                              only + " --algorithm " + eo.algorithm + " --budget " +
                              std::to_string(eo.budget) + " --rounds " + std::to_string(eo.rounds) +
                              " --min-time " + NumText(o.min_time);
  Result<std::string> compiler = engine.compiler().CompilerIdentity();
  json header = bench::BenchHeader("expert", command, compiler.ok() ? *compiler : "",
                                   engine.target().cores);
  header["maxkernel_version"] = MK_VERSION;
  header["store"] = dir.db_path.string();
  MK_ASSIGN_OR_RETURN(std::vector<bench::ExpertRow> rows,
                      bench::RunExpertBench(eo, engine, *db, artifacts, [](const std::string& l) {
                        std::cerr << l << std::endl;  // progress: stderr, even with --json
                      }));
  header["finished"] = bench::UtcNow();
  header["loadavg_finished"] = bench::LoadAverage();
  json rows_json = json::array();
  for (const auto& r : rows) rows_json.push_back(bench::ToJson(r));
  const json summary = bench::ExpertSummary(rows);
  json doc = {{"header", header}, {"rows", rows_json}, {"summary", summary}};
  const std::string table = bench::FormatExpertTable(rows, summary);
  MK_RETURN_IF_ERROR(WriteAndPrint(o, doc, Markdown(header, table), table));
  return summary.value("failed", json::array()).empty() ? kExitOk : kExitFailed;
}

Result<int> RunBench(const BenchOptions& o) {
  if (o.aa) return RunAa(o);
  if (o.suite.empty()) return InvalidArgument("give --suite gemm|jaxbench|search|expert|tpu, or --aa TASK_DIR");
  if (o.suite == "search") return RunSearchSuite(o);
  if (o.suite == "expert") return RunExpertSuite(o);
  if (o.budget || o.batch || o.algorithm || o.model || o.time_budget) {
    return InvalidArgument("--budget, --batch, --algorithm, --model and --time-budget apply to "
                           "--suite expert");
  }
  if (o.build_table || o.tables || o.seeds || o.note || o.save_model) {
    return InvalidArgument("--build-table, --tables, --seeds, --note and --save-model apply to "
                           "--suite search");
  }
  if (o.suite == "tpu") return RunTpuSuite(o);
  if (o.suite != "gemm" && o.suite != "jaxbench") {
    return InvalidArgument("--suite: '" + o.suite + "' is not a suite (choose gemm, jaxbench, search, expert or tpu)");
  }
  if (o.threads < 1) return InvalidArgument("--threads must be at least 1");
  if (const long cpus = sysconf(_SC_NPROCESSORS_ONLN); cpus > 0 && o.threads > cpus) {
    return InvalidArgument("--threads " + std::to_string(o.threads) + ": this machine has " +
                           std::to_string(cpus) + " CPUs (oversubscribed timings compare nothing)");
  }
  agents::BenchProtocol protocol;
  protocol.rounds = o.rounds.value_or(5);
  protocol.min_seconds = o.min_time;
  protocol.warmup = o.warmup;
  protocol.min_iterations = o.min_iterations;
  protocol.timeout_s = o.timeout;
  MK_RETURN_IF_ERROR(agents::ValidateProtocol(protocol));
  const bool gemm = o.suite == "gemm";
  const std::string other = gemm ? "jaxbench" : "gemm";
  const std::string& suite = o.suite;
  if (gemm) {
    MK_RETURN_IF_ERROR(RejectFor(suite, o.scale.has_value(), "--scale", other));
    MK_RETURN_IF_ERROR(RejectFor(suite, o.only.has_value(), "--only", other));
    MK_RETURN_IF_ERROR(RejectFor(suite, o.compare.has_value(), "--compare", other));
    if (!o.suite_shapes) {
      MK_RETURN_IF_ERROR(RejectFor(suite, o.tasks.has_value(), "--tasks", other));
      MK_RETURN_IF_ERROR(RejectFor(suite, o.suite_dir.has_value(), "--suite-dir", other));
    }
    MK_RETURN_IF_ERROR(RejectFor(suite, o.from_run.has_value(), "--from-run", other));
    MK_RETURN_IF_ERROR(RejectFor(suite, o.interp_cap.has_value(), "--interp-cap", other));
    MK_RETURN_IF_ERROR(RejectFor(suite, o.interp_runs.has_value(), "--interp-runs", other));
  } else {
    MK_RETURN_IF_ERROR(RejectFor(suite, o.sizes.has_value(), "--sizes", other));
    MK_RETURN_IF_ERROR(RejectFor(suite, o.shapes.has_value(), "--shapes", other));
    MK_RETURN_IF_ERROR(RejectFor(suite, o.suite_shapes.has_value(), "--suite-shapes", other));
    MK_RETURN_IF_ERROR(RejectFor(suite, o.dtypes.has_value(), "--dtype", other));
    MK_RETURN_IF_ERROR(RejectFor(suite, o.bf16_result.has_value(), "--bf16-result", other));
    MK_RETURN_IF_ERROR(RejectFor(suite, o.baselines.has_value(), "--baselines", other));
    MK_RETURN_IF_ERROR(RejectFor(suite, o.libs.has_value(), "--libs", other));
  }
  std::optional<json> schedule;
  if (o.schedule) {
    json s = json::parse(*o.schedule, nullptr, false);
    if (s.is_discarded() || !(s.is_object() || s.is_array())) {
      return InvalidArgument("--schedule: not a JSON candidate (as `optimize --json` shows it)");
    }
    schedule = s;
  }

  // Everything below starts the slow machinery; every argument was checked above or is checked
  // by the suite before it measures anything.
  std::string command = "maxkernel bench --suite " + suite;
  std::vector<bench::BenchRow> rows;
  std::function<void(const std::string&)> progress = [](const std::string& line) {
    std::cerr << line << std::endl;
  };
  bench::GemmBenchOptions go;
  bench::JaxbenchOptions jo;
  std::optional<json> libraries;
  if (gemm) {
    if (o.sizes) {
      MK_ASSIGN_OR_RETURN(go.sizes, bench::ParseGemmSizes(*o.sizes));
    } else if (o.shapes || o.suite_shapes) {
      go.sizes.clear();  // only the shapes asked for
    }
    if (o.shapes) {
      MK_ASSIGN_OR_RETURN(go.shapes, bench::ParseGemmShapes(*o.shapes));
    }
    if (o.suite_shapes) {
      MK_ASSIGN_OR_RETURN(go.suite_cases, SuiteGemmCases(*o.suite_shapes, o.tasks, o.suite_dir));
    }
    if (o.dtypes) {
      MK_ASSIGN_OR_RETURN(go.dtypes, bench::ParseGemmDtypes(*o.dtypes));
    }
    if (o.bf16_result) {
      if (*o.bf16_result != "f32" && *o.bf16_result != "bf16") {
        return InvalidArgument("--bf16-result: '" + *o.bf16_result + "' is not f32 or bf16");
      }
      go.bf16_result = *o.bf16_result;
    }
    if (o.libs) {
      go.libs.clear();
      std::stringstream s(*o.libs);
      std::string lib;
      while (std::getline(s, lib, ',')) {
        if (lib != "onednn" && lib != "openblas") {
          return InvalidArgument("--libs: '" + lib + "' is not one of onednn, openblas");
        }
        go.libs.push_back(lib);
      }
    }
    go.threads = o.threads;
    go.protocol = protocol;
    go.schedule = schedule;
    go.baselines_binary = FindBaselines(o.baselines);
    if (o.baselines && !Executable(*o.baselines)) {
      return InvalidArgument("--baselines: " + *o.baselines + " is not an executable file");
    }
    if (go.baselines_binary.empty()) {
      std::cerr << "warning: maxkernel-baselines not found (build it with libdnnl-dev and "
                   "libopenblas-dev installed, or pass --baselines): no library baselines\n";
    } else if (auto info = bench::BaselinesInfo(go.baselines_binary); info.ok()) {
      libraries = *info;
    }
    std::string sizes, dtypes, libs;
    for (int64_t s : go.sizes) sizes += (sizes.empty() ? "" : ",") + std::to_string(s);
    for (const auto& d : go.dtypes) dtypes += (dtypes.empty() ? "" : ",") + d;
    for (const auto& l : go.libs) libs += (libs.empty() ? "" : ",") + l;
    if (!sizes.empty()) command += " --sizes " + sizes;
    if (o.shapes) command += " --shapes " + *o.shapes;
    if (o.suite_shapes) command += " --suite-shapes " + *o.suite_shapes;
    if (o.tasks) command += " --tasks " + *o.tasks;
    command += " --dtype " + dtypes + " --bf16-result " + go.bf16_result + " --libs " + libs;
  } else {
    jo.scale = o.scale.value_or("bench");
    if (o.only) {
      MK_ASSIGN_OR_RETURN(jo.only, bench::ParseOnlyList(*o.only));
    }
    if (o.compare) {
      MK_RETURN_IF_ERROR(bench::ParseCompareList(*o.compare, jo.xla, jo.interp));
    }
    jo.tasks_dir = o.tasks.value_or("");
    jo.suite_dir = o.suite_dir.value_or("");
    jo.threads = o.threads;
    jo.protocol = protocol;
    jo.interp_cap_s = o.interp_cap.value_or(60);
    jo.interp_runs = o.interp_runs.value_or(1);
    if (schedule && o.from_run) return InvalidArgument("give --schedule or --from-run, not both");
    if (schedule) {
      jo.schedule = schedule;
      jo.schedule_source = "pinned (--schedule)";
    }
    if (o.from_run) {
      MK_ASSIGN_OR_RETURN(store::DataDir dir, store::ResolveDataDir(o.db.value_or("")));
      if (!fs::exists(dir.db_path)) return NotFound("no database at " + dir.db_path.string());
      MK_ASSIGN_OR_RETURN(auto db, store::SqliteStore::Open(dir.db_path.string()));
      std::string run_task;
      MK_ASSIGN_OR_RETURN(json best, bench::BestScheduleOfRun(*db, *o.from_run, &run_task));
      jo.schedule = best;
      jo.schedule_source = "best candidate of run " + std::to_string(*o.from_run) +
                           (run_task.empty() ? "" : " (" + run_task + ")");
    }
    std::string only, compare;
    for (const auto& id : jo.only) only += (only.empty() ? "" : ",") + id;
    if (jo.xla) compare = "xla";
    if (jo.interp) compare += compare.empty() ? "interp" : ",interp";
    command += " --scale " + jo.scale + " --only " + only + " --compare " + compare;
    if (jo.interp) {
      command += " --interp-cap " + NumText(jo.interp_cap_s) + " --interp-runs " +
                 std::to_string(jo.interp_runs);
    }
    if (o.tasks) command += " --tasks " + *o.tasks;
    if (o.from_run) command += " --from-run " + std::to_string(*o.from_run);
  }
  if (schedule) command += " --schedule '" + schedule->dump() + "'";
  command += " --threads " + std::to_string(o.threads) + " --rounds " + std::to_string(protocol.rounds) +
             " --min-time " + NumText(o.min_time) + " --warmup " + std::to_string(o.warmup) +
             " --min-iterations " + std::to_string(o.min_iterations);

  // Our kernels use OpenMP; the sandbox's workers inherit this process's environment. The
  // generated code names its thread count (the schedule's `threads`, at most the target's cores),
  // so the planner plans for --threads cores: the same number the libraries and XLA:CPU get.
  setenv("OMP_NUM_THREADS", std::to_string(o.threads).c_str(), 1);
  agents::CpuEngine engine;
  target::Target planned_for = engine.target();
  const double share = static_cast<double>(o.threads) / std::max(1, planned_for.cores);
  planned_for.peak_flops_f32 *= share;  // the roofline bound in the details, per thread used
  planned_for.peak_flops_bf16 *= share;
  planned_for.cores = o.threads;
  engine.set_target(planned_for);
  Result<std::string> compiler = engine.compiler().CompilerIdentity();
  json header = bench::BenchHeader(suite, command, compiler.ok() ? *compiler : "", o.threads);
  header["maxkernel_version"] = MK_VERSION;
  header["compile_flags"] = engine.compiler().options().flags;
  header["protocol"] = {{"rounds", protocol.rounds},
                        {"warmup_per_round", protocol.warmup},
                        {"min_iterations_per_round", protocol.min_iterations},
                        {"min_seconds_per_round", protocol.min_seconds},
                        {"order", "interleaved: ours, then each baseline, every round"}};
  if (libraries) header["libraries"] = (*libraries)["libs"];
  if (!gemm) {
    header["interpreter"] =
        jo.interp ? json{{"cap_s", jo.interp_cap_s}, {"runs", jo.interp_runs}} : json(nullptr);
  }
  // Read before measuring: a store that cannot be read fails now, not after the run.
  MK_ASSIGN_OR_RETURN(std::optional<bench::BenchPeaks> stored, StoredPeaks(o, share));
  if (gemm) {
    MK_ASSIGN_OR_RETURN(rows, bench::RunGemmBench(go, engine, progress));
  } else {
    MK_ASSIGN_OR_RETURN(rows, bench::RunJaxbenchBench(jo, engine, progress));
  }
  if (stored) {
    const bench::BenchPeaks& peaks = *stored;
    bench::SetFloors(peaks, rows);
    header["peaks"] = {{"probe_id", peaks.probe_id},
                       {"f32_gflops", peaks.f32_flops / 1e9},
                       {"bf16_gflops", peaks.bf16_flops / 1e9},
                       {"threads_share", peaks.threads_share}};
  } else {
    header["peaks_note"] =
        "no floors: no full machine probe is stored (`maxkernel doctor --probe` stores one)";
  }
  header["finished"] = bench::UtcNow();
  header["loadavg_finished"] = bench::LoadAverage();

  json rows_json = json::array();
  for (const auto& r : rows) rows_json.push_back(bench::ToJson(r));
  json doc = {{"header", header}, {"rows", rows_json}};
  const std::string table = bench::FormatBenchTable(header, rows);

  MK_RETURN_IF_ERROR(WriteAndPrint(o, doc, Markdown(header, table), table));
  bool complete = true;
  for (const auto& r : rows) {
    if (r.failed || !r.ours || !r.ours->ok()) complete = false;
    for (const auto& b : r.baselines) complete = complete && b.ok();
  }
  return complete ? kExitOk : kExitFailed;
}

}  // namespace

void RegisterBenchCommand(CLI::App& app, CommandResult& result) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "bench",
      "Measure our kernels against oneDNN/OpenBLAS (--suite gemm) or XLA:CPU and the interpreter "
      "(--suite jaxbench): checked first, timed interleaved, reported as ratios baseline/ours");
  cmd->add_option("--suite", o->suite,
                  "gemm, jaxbench, search (the search algorithms replayed over measured tables, "
                  "bench/search), expert (a search with the planner's rules off against the "
                  "planner's candidate, interleaved, per suite workload), or tpu (every workload's Pallas module: checked in TPU interpret "
                  "mode at ci scale, compiled by libtpu, modelled, against XLA:TPU's estimate)");
  cmd->add_option("--generations", o->generations, "tpu: TPU generations (default v5e,v6e)");
  cmd->add_flag("--no-check", o->no_check, "tpu: compile and model only, no interpret-mode check");
  cmd->add_option("--aa", o->aa,
                  "A/A check of the timing protocol: time the planner's kernel for TASK_DIR "
                  "against itself in --trials interleaved comparisons (instead of a --suite)");
  cmd->add_option("--trials", o->trials, "--aa: comparisons to run (default 20)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--sizes", o->sizes, "gemm: square sizes (default 256,512,1024,2048,4096)");
  cmd->add_option("--dtype", o->dtypes, "gemm: operand types (default f32,bf16)");
  cmd->add_option("--shapes", o->shapes,
                  "gemm: MxNxK shapes, each with every --dtype (e.g. 512x2048x2048); with "
                  "--shapes or --suite-shapes and no --sizes, no square cases");
  cmd->add_option("--suite-shapes", o->suite_shapes,
                  "gemm: the GEMMs (dots without batch dims) of these suite workloads at bench "
                  "scale, with their own dtypes (e.g. 8p,9p,13p,19k,30k,32k, or gemm: every "
                  "GEMM-family workload); tasks as for jaxbench (--tasks, --suite-dir, or the "
                  "cache)");
  cmd->add_option("--bf16-result", o->bf16_result,
                  "gemm: result type of the bf16 cases, f32 or bf16 (default f32)");
  cmd->add_option("--libs", o->libs, "gemm: libraries to compare with (default onednn,openblas)");
  cmd->add_option("--baselines", o->baselines,
                  "gemm: the maxkernel-baselines program (default: $MAXKERNEL_BASELINES, beside "
                  "maxkernel, or on PATH)");
  cmd->add_option("--schedule", o->schedule,
                  "pin a candidate (JSON) instead of the planner's initial one");
  cmd->add_option("--scale", o->scale, "jaxbench, expert: ci, bench or full (default bench)");
  cmd->add_option("--only", o->only,
                  "jaxbench: workload ids (default 12p,8p,1p); expert: workload ids (default twelve GEMM and "
                  "conv workloads and 12p); search: one table's name");
  cmd->add_flag("--build-table", o->build_table,
                "search: measure every point of the --only table's sub-space (resumable) and "
                "write DIR/NAME.json");
  cmd->add_option("--tables", o->tables, "search: the tables' folder (default bench/search)");
  cmd->add_option("--seeds", o->seeds, "search: seeds per algorithm in the replay (default 5)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--note", o->note,
                  "search --build-table: a note recorded in the table (e.g. the machine's load)");
  cmd->add_option("--save-model", o->save_model,
                  "search (replay): also write the cost model of every replayed table's points "
                  "(XGBoost JSON), the suite's model a search starts from with --model FILE");
  cmd->add_option("--budget", o->budget,
                  "expert: measurements per search (default 64)");
  cmd->add_option("--algorithm", o->algorithm,
                  "expert: astar, beam, evolutionary, random or exhaustive (default astar)");
  cmd->add_option("--batch", o->batch, "expert: candidates the search compiles at once (default 1)");
  cmd->add_option("--model", o->model,
                  "expert: the cost model every search starts from (default: the store's newest)");
  cmd->add_option("--time-budget", o->time_budget,
                  "expert: seconds per search (default: none, the budget ends it)");
  cmd->add_option("--compare", o->compare, "jaxbench: xla, interp or both (default xla)");
  cmd->add_option(
      "--tasks", o->tasks,
      "jaxbench, expert: task folder DIR/<id>/<scale> (default: a cache, exported when missing)");
  cmd->add_option("--suite-dir", o->suite_dir, "jaxbench: the suite to export from");
  cmd->add_option("--from-run", o->from_run,
                  "jaxbench: bench the best candidate of optimize run RUN (one workload)");
  cmd->add_option("--db", o->db,
                  "database of --from-run (jaxbench), of the machine probe behind the floors, and of "
                  "the expert suite's search runs (default DATA_DIR/maxkernel.db)");
  cmd->add_option("--interp-cap", o->interp_cap,
                  "jaxbench: seconds the interpreter may take in all (default 60)");
  cmd->add_option("--interp-runs", o->interp_runs, "jaxbench: interpreter runs, 1-3 (default 1)");
  cmd->add_option("--threads", o->threads, "threads for ours and the libraries (default 2)");
  cmd->add_option("--rounds", o->rounds, "interleaved rounds (default 5; --aa, expert: 8)");
  cmd->add_option("--min-time", o->min_time,
                  "seconds of timed calls per side and round, at least (default 0.3)");
  cmd->add_option("--warmup", o->warmup, "untimed calls per side and round (default 1)");
  cmd->add_option("--min-iterations", o->min_iterations,
                  "timed calls per side and round, at least (default 3)");
  cmd->add_option("--timeout", o->timeout, "seconds one round of one side may take (default 600)");
  cmd->add_flag("--json", o->json, "print {header, rows} as JSON instead of the table");
  cmd->add_option("--write-json", o->write_json, "also write the JSON to FILE");
  cmd->add_option("--write-markdown", o->write_markdown,
                  "also write a markdown report (header + table) to FILE");
  cmd->footer(
      "Exit codes: 0 every case checked and timed, 1 a case or a baseline failed, 2 bad "
      "input. docs/BENCHMARKS.md explains the measurement.");
  cmd->callback([o, &result] { RunCommand(result, [&] { return RunBench(*o); }); });
}

}  // namespace mk::cli
