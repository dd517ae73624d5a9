// `maxkernel runs list|show` and `maxkernel artifacts get`: reading what the store remembers
// (docs/CLI.md). Read-only: a missing database is an error, never created.
#include <cstdio>
#include <ctime>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "agents/profiler.h"
#include "export/run_export_store.h"
#include "modes/search/bound_check.h"
#include "target/target.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "task/task.h"

namespace mk::cli {
namespace {

using nlohmann::json;

// ---- formatting ---------------------------------------------------------------------------

std::string LocalTime(double t) {
  std::time_t secs = static_cast<std::time_t>(t);
  std::tm tm{};
  localtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string Duration(double s) {
  char buf[32];
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%.1fs", s);
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%dm%02ds", int(s / 60), int(s) % 60);
  else
    std::snprintf(buf, sizeof buf, "%dh%02dm", int(s / 3600), int(s / 60) % 60);
  return buf;
}

std::string Time(std::optional<double> s) {
  if (!s) return "-";
  char buf[32];
  if (*s >= 1)
    std::snprintf(buf, sizeof buf, "%.3f s", *s);
  else if (*s >= 1e-3)
    std::snprintf(buf, sizeof buf, "%.3f ms", *s * 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.3f us", *s * 1e6);
  return buf;
}

// At most `width` characters: a long text keeps its start and ends in "...".
std::string Clip(const std::string& s, size_t width) {
  if (s.size() <= width) return s;
  return s.substr(0, width - 3) + "...";
}

std::string Pad(const std::string& s, size_t width, bool right = false) {
  if (s.size() >= width) return s;
  std::string fill(width - s.size(), ' ');
  return right ? fill + s : s + fill;
}

json ParsedOrText(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  return j.is_discarded() ? json(text) : j;
}

std::string Dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

// ---- what a run looks like ----------------------------------------------------------------

// The task's id and name from the task.yaml stored with it ("12p", "llama3_70b_rmsnorm").
struct TaskNames {
  std::string id, name;
};

TaskNames NamesOf(store::Store& db, int64_t task_id) {
  TaskNames n;
  Result<store::TaskRecord> task = db.GetTask(task_id);
  if (!task.ok() || task->yaml.empty()) return n;
  Result<task::Task> parsed = task::ParseTaskYaml(task->yaml);
  if (parsed.ok()) n = {parsed->id, parsed->name};
  return n;
}

// The short task column: the task's id, else the last folder of its directory.
std::string TaskColumn(const TaskNames& n, const std::string& directory) {
  if (!n.id.empty()) return n.id;
  size_t slash = directory.find_last_of('/');
  return slash == std::string::npos ? directory : directory.substr(slash + 1);
}

json RunJson(const store::RunRecord& r, const TaskNames& n) {
  json j = {{"id", r.id},
            {"task_id", r.task_id},
            {"task", n.id},
            {"task_name", n.name},
            {"task_directory", r.task_directory},
            {"target", r.target},
            {"mode", std::string(store::RunModeName(r.mode))},
            {"status", std::string(store::RunStatusName(r.status))},
            {"candidates", r.candidate_count},
            {"measurements", r.measurement_count},
            {"best_candidate_id", nullptr},
            {"best_median_s", nullptr},
            {"started_at", r.started_at},
            {"finished_at", nullptr},
            {"duration_s", nullptr}};
  if (r.best_candidate_id) j["best_candidate_id"] = *r.best_candidate_id;
  if (r.best_median_s) j["best_median_s"] = *r.best_median_s;
  if (r.finished_at) {
    j["finished_at"] = *r.finished_at;
    j["duration_s"] = *r.finished_at - r.started_at;
  }
  return j;
}

Result<store::RunRecord> GetRun(exports::OpenedStore& s, int64_t id) {
  Result<store::RunRecord> run = s.db->GetRun(id);
  if (!run.ok() && run.status().code() == ErrorCode::kNotFound) {
    return NotFound("run " + std::to_string(id) + " not found in " + s.dir.db_path.string());
  }
  return run;
}

// ---- runs list ------------------------------------------------------------------------------

struct ListOptions {
  int64_t limit = 20;
  bool json = false;
  std::string db;
};

Result<int> RunList(const ListOptions& o) {
  MK_ASSIGN_OR_RETURN(exports::OpenedStore s, exports::OpenExistingStore(o.db));
  MK_ASSIGN_OR_RETURN(std::vector<store::RunRecord> runs, s.db->ListRuns(o.limit));
  std::map<int64_t, TaskNames> names;
  for (const auto& r : runs) {
    if (!names.count(r.task_id)) names[r.task_id] = NamesOf(*s.db, r.task_id);
  }
  if (o.json) {
    json list = json::array();
    for (const auto& r : runs) list.push_back(RunJson(r, names[r.task_id]));
    std::cout << Dump({{"database", s.dir.db_path.string()}, {"runs", list}}) << "\n";
    return kExitOk;
  }
  if (runs.empty()) {
    std::cout << "no runs in " << s.dir.db_path.string() << "\n";
    return kExitOk;
  }
  std::ostringstream t;
  t << Pad("id", 5, true) << "  " << Pad("task", 14) << "  " << Pad("target", 6) << "  "
    << Pad("mode", 6) << "  " << Pad("status", 9) << "  " << Pad("cands", 5, true) << "  "
    << Pad("meas", 5, true) << "  " << Pad("best time", 11, true) << "  " << Pad("started", 19)
    << "  duration\n";
  for (const auto& r : runs) {
    std::string duration = r.finished_at ? Duration(*r.finished_at - r.started_at)
                           : r.status == store::RunStatus::kRunning ? "running"
                                                                    : "-";
    t << Pad(std::to_string(r.id), 5, true) << "  "
      << Pad(Clip(TaskColumn(names[r.task_id], r.task_directory), 14), 14) << "  "
      << Pad(Clip(r.target, 6), 6) << "  " << Pad(std::string(store::RunModeName(r.mode)), 6)
      << "  " << Pad(std::string(store::RunStatusName(r.status)), 9) << "  "
      << Pad(std::to_string(r.candidate_count), 5, true) << "  "
      << Pad(std::to_string(r.measurement_count), 5, true) << "  "
      << Pad(Time(r.best_median_s), 11, true) << "  " << LocalTime(r.started_at) << "  " << duration
      << "\n";
  }
  std::cout << t.str();
  return kExitOk;
}

// ---- runs show ------------------------------------------------------------------------------

struct ShowOptions {
  std::string run;
  int64_t events = 10;
  bool json = false;
  std::string db;
};

Result<int> RunShow(const ShowOptions& o) {
  MK_ASSIGN_OR_RETURN(int64_t id, exports::ParseRunId(o.run));
  MK_ASSIGN_OR_RETURN(exports::OpenedStore s, exports::OpenExistingStore(o.db));
  MK_ASSIGN_OR_RETURN(store::RunRecord run, GetRun(s, id));
  TaskNames names = NamesOf(*s.db, run.task_id);
  MK_ASSIGN_OR_RETURN(std::vector<store::CandidateRecord> candidates, s.db->ListCandidates(id));
  MK_ASSIGN_OR_RETURN(std::vector<store::MeasurementRecord> measurements,
                      s.db->ListMeasurements(id));
  MK_ASSIGN_OR_RETURN(std::vector<store::DiagnosisRecord> diagnoses, s.db->ListDiagnoses(id));
  MK_ASSIGN_OR_RETURN(std::vector<store::EventRecord> events, s.db->ListEvents(id, 0));
  const size_t event_count = events.size();
  // What the run stored at the end (docs/EXPORT.md): the result JSON (in the pipeline's
  // "run.finished" event) and the HTML report (in "run.report", which `optimize --report` adds
  // once the pipeline has finished). Events are in order; a resumed run finishes again, and a
  // report belongs to the finish before it.
  json finished;
  for (const auto& e : events) {
    if (e.kind != "run.finished" && e.kind != "run.report") continue;
    json payload = json::parse(e.payload_json, nullptr, false);
    if (!payload.is_object()) continue;
    if (e.kind == "run.finished") finished = payload;
    else if (finished.is_object()) finished.update(payload);
  }
  if (o.events >= 0 && events.size() > static_cast<size_t>(o.events)) {
    events.erase(events.begin(), events.end() - o.events);  // keep the newest
  }

  std::map<int64_t, double> fastest;  // candidate -> best median
  std::map<int64_t, int64_t> measured;
  for (const auto& m : measurements) {
    auto it = fastest.find(m.key.candidate_id);
    if (it == fastest.end() || m.median_s < it->second) fastest[m.key.candidate_id] = m.median_s;
    measured[m.key.candidate_id]++;
  }
  std::map<int64_t, std::vector<store::BuildRecord>> builds;
  std::map<int64_t, int64_t> seq_of;
  for (const auto& c : candidates) {
    MK_ASSIGN_OR_RETURN(builds[c.id], s.db->ListBuilds(c.id));
    seq_of[c.id] = c.seq;
  }

  if (o.json) {
    json j = RunJson(run, names);
    j["config"] = ParsedOrText(run.config_json);
    for (const char* key : {"result_artifact", "report_artifact"}) {
      bool present = finished.is_object() && finished.contains(key) && finished[key].is_string();
      j[key] = present ? finished[key] : json(nullptr);
    }
    json cs = json::array();
    for (const auto& c : candidates) {
      json bs = json::array();
      for (const auto& b : builds[c.id]) {
        bs.push_back({{"id", b.id},
                      {"status", std::string(store::BuildStatusName(b.status))},
                      {"compile_seconds", b.compile_seconds},
                      {"artifacts", b.artifacts},
                      {"diagnosis", b.diagnosis},
                      {"created_at", b.created_at}});
      }
      json best = fastest.count(c.id) ? json(fastest[c.id]) : json(nullptr);
      cs.push_back({{"id", c.id},
                    {"seq", c.seq},
                    {"status", std::string(store::CandidateStatusName(c.status))},
                    {"schedule", ParsedOrText(c.schedule_json)},
                    {"implementation_sha256", c.implementation_sha256},
                    {"builds", bs},
                    {"measurements", measured[c.id]},
                    {"best_median_s", best},
                    {"created_at", c.created_at}});
    }
    json ds = json::array();
    for (const auto& d : diagnoses) {
      ds.push_back({{"id", d.id},
                    {"candidate_id", d.candidate_id},
                    {"build_id", d.build_id ? json(*d.build_id) : json(nullptr)},
                    {"class", d.diagnosis_class},
                    {"message", d.message},
                    {"artifact_sha256", d.artifact_sha256},
                    {"created_at", d.created_at}});
    }
    json es = json::array();
    for (const auto& e : events) {
      es.push_back({{"id", e.id},
                    {"ts", e.ts},
                    {"kind", e.kind},
                    {"payload", ParsedOrText(e.payload_json)}});
    }
    std::cout << Dump({{"run", j},
                       {"candidates", cs},
                       {"diagnoses", ds},
                       {"events", es},
                       {"event_count", event_count}})
              << "\n";
    return kExitOk;
  }

  std::ostringstream t;
  t << "run " << run.id << "  " << store::RunStatusName(run.status) << "  ("
    << store::RunModeName(run.mode) << ", target " << run.target << ")\n";
  std::string label = names.id;
  if (!names.name.empty() && names.name != names.id)
    label += (label.empty() ? "" : " ") + names.name;
  t << "task       " << (label.empty() ? "-" : label) << "  (" << run.task_directory << ")\n"
    << "started    " << LocalTime(run.started_at);
  if (run.finished_at) {
    t << ", finished " << LocalTime(*run.finished_at) << " ("
      << Duration(*run.finished_at - run.started_at) << ")";
  }
  t << "\nbest       ";
  if (run.best_candidate_id) {
    t << "candidate " << *run.best_candidate_id << " (seq " << seq_of[*run.best_candidate_id]
      << "), median " << Time(run.best_median_s) << "\n";
  } else {
    t << "none (no correct candidate)\n";
  }
  for (const char* key : {"result_artifact", "report_artifact"}) {
    if (finished.is_object() && finished.contains(key) && finished[key].is_string()) {
      std::string label = std::string(key).substr(0, std::string(key).find('_'));
      t << Pad(label, 11) << finished[key].get<std::string>() << "\n";
    }
  }
  t << "config     " << Clip(run.config_json, 200) << "\n\n"
    << "candidates (" << candidates.size() << ")\n";
  if (!candidates.empty()) {
    t << "  " << Pad("seq", 4, true) << "  " << Pad("id", 5, true) << "  " << Pad("status", 12)
      << "  " << Pad("build", 13) << "  " << Pad("best median", 11, true) << "  schedule\n";
  }
  for (const auto& c : candidates) {
    std::string build = "-";
    if (!builds[c.id].empty()) {
      const auto& b = builds[c.id].back();
      char secs[32];
      std::snprintf(secs, sizeof secs, " %.1fs", b.compile_seconds);
      build = std::string(store::BuildStatusName(b.status)) + secs;
    }
    std::optional<double> best;
    if (fastest.count(c.id)) best = fastest[c.id];
    t << "  " << Pad(std::to_string(c.seq), 4, true) << "  " << Pad(std::to_string(c.id), 5, true)
      << "  " << Pad(std::string(store::CandidateStatusName(c.status)), 12) << "  "
      << Pad(build, 13) << "  " << Pad(Time(best), 11, true) << "  " << Clip(c.schedule_json, 60)
      << (run.best_candidate_id == c.id ? "  <- best" : "") << "\n";
  }
  t << "\ndiagnoses (" << diagnoses.size() << ")\n";
  for (const auto& d : diagnoses) {
    t << "  candidate " << d.candidate_id << " (seq " << seq_of[d.candidate_id] << ")  "
      << d.diagnosis_class << "  " << Clip(d.message, 160) << "\n";
  }
  t << "\nevents ("
    << (events.size() < event_count
            ? "last " + std::to_string(events.size()) + " of " + std::to_string(event_count)
            : std::to_string(event_count))
    << ")\n";
  for (const auto& e : events) {
    t << "  " << LocalTime(e.ts) << "  " << Pad(e.kind, 18) << "  " << Clip(e.payload_json, 100)
      << "\n";
  }
  std::cout << t.str();
  return kExitOk;
}

// ---- artifacts get --------------------------------------------------------------------------

struct GetOptions {
  std::string sha;
  std::string out;
  std::string db;
};

Result<int> RunArtifactsGet(const GetOptions& o) {
  // The artifact store belongs to the data directory; the database is not needed, but --db
  // is accepted so that every store command takes the same flags.
  MK_ASSIGN_OR_RETURN(store::DataDir dir, store::ResolveDataDir(o.db));
  store::ArtifactStore artifacts(dir.root);
  Result<std::string> resolved = exports::ResolveArtifactSha(artifacts, o.sha);
  if (!resolved.ok() && resolved.status().code() == ErrorCode::kNotFound) {
    return NotFound(resolved.status().message() + " in " + artifacts.artifacts_root().string());
  }
  MK_ASSIGN_OR_RETURN(std::string sha, std::move(resolved));
  MK_ASSIGN_OR_RETURN(std::string bytes, artifacts.Get(sha));  // re-hashed: corruption is caught
  if (!o.out.empty()) {
    MK_RETURN_IF_ERROR(WriteFilesAtomically({{o.out, bytes}}));
    std::cerr << "wrote " << o.out << " (" << bytes.size() << " bytes, sha256 " << sha << ")\n";
    return kExitOk;
  }
  std::cout.flush();
  if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size() ||
      std::fflush(stdout) != 0) {
    return IoError("cannot write the artifact to stdout");
  }
  return kExitOk;
}

// ---- runs check-bound ----------------------------------------------------------------------

struct CheckBoundOptions {
  std::optional<int64_t> run;
  bool json = false;
  std::string db;
};

Result<int> RunCheckBound(const CheckBoundOptions& o) {
  MK_ASSIGN_OR_RETURN(exports::OpenedStore s, exports::OpenExistingStore(o.db));
  // The rates the next search bounds with: the stored machine probe's, else the nominal peaks.
  target::Target host = target::HostCpu();
  MK_ASSIGN_OR_RETURN(std::optional<agents::ProbedMachine> machine,
                      agents::LoadStoredMachine(*s.db, /*quick_ok=*/false, nullptr));
  if (machine) host = machine->target;
  MK_ASSIGN_OR_RETURN(modes::search::BoundCheckReport r,
                      modes::search::CheckBoundOverStore(*s.db, *s.artifacts, host, o.run));
  if (o.json) {
    json j = modes::search::ToJson(r);
    j["database"] = s.dir.db_path.string();
    j["rates"] = {{"f32_flops", host.peak_flops_f32}, {"bf16_flops", host.peak_flops_bf16},
                  {"bandwidth", host.bandwidth_bytes_per_s}, {"measured", host.rates_measured}};
    std::cout << Dump(j) << "\n";
    return r.ok() ? kExitOk : kExitFailed;
  }
  std::cout << "the search's lower bound against the store's measurements on " << host.model
            << " (" << host.isa_level << "), " << s.dir.db_path.string() << "\n"
            << "  runs checked " << r.runs_checked << ", measurements checked "
            << r.measurements_checked << ", taken on another CPU or ISA (not checked) "
            << r.measurements_other_machine << "\n";
  if (r.median_bound_over_measured) {
    std::cout << "  median bound / measured " << *r.median_bound_over_measured << "\n";
  }
  for (const std::string& skip : r.runs_skipped) std::cout << "  skipped " << skip << "\n";
  for (const auto& v : r.violations) {
    std::cout << "  VIOLATION run " << v.run_id << " candidate " << v.candidate_id << ": bound "
              << Time(v.bound_s) << " > measured " << Time(v.measured_s) << "  "
              << Clip(v.schedule_json, 200) << "\n";
  }
  std::cout << (r.ok() ? "admissible: no measurement is faster than its bound\n"
                       : "NOT admissible: " + std::to_string(r.violations.size()) +
                             " measurements are faster than their bound\n");
  return r.ok() ? kExitOk : kExitFailed;
}

}  // namespace

void RegisterRunsCommands(CLI::App& app, CommandResult& result) {
  const std::string db_help = "Database file (default: DATA_DIR/maxkernel.db)";

  CLI::App* runs = app.add_subcommand("runs", "The runs the store remembers");
  runs->require_subcommand(1);

  auto l = std::make_shared<ListOptions>();
  CLI::App* list = runs->add_subcommand("list", "Runs, newest first");
  list->add_option("--limit", l->limit, "How many runs (default 20; 0: all)");
  list->add_flag("--json", l->json, "Print the runs as JSON");
  list->add_option("--db", l->db, db_help);
  list->callback([l, &result] { RunCommand(result, [&] { return RunList(*l); }); });

  auto s = std::make_shared<ShowOptions>();
  CLI::App* show = runs->add_subcommand(
      "show", "One run: its candidates, builds, measurements, diagnoses and last events");
  show->add_option("run", s->run, "Run id (from `runs list`)")->required();
  show->add_option("--events", s->events, "How many of the newest events (default 10; -1: all)");
  show->add_flag("--json", s->json, "Print the run as JSON");
  show->add_option("--db", s->db, db_help);
  show->callback([s, &result] { RunCommand(result, [&] { return RunShow(*s); }); });

  auto cb = std::make_shared<CheckBoundOptions>();
  CLI::App* check_bound = runs->add_subcommand(
      "check-bound",
      "Check the search's lower bound against every stored measurement taken on this CPU model "
      "and ISA (each run's module planned again); exit 1 if any measurement beat its bound");
  check_bound->add_option("--run", cb->run, "Only this run");
  check_bound->add_flag("--json", cb->json, "Print the report as JSON");
  check_bound->add_option("--db", cb->db, db_help);
  check_bound->callback([cb, &result] { RunCommand(result, [&] { return RunCheckBound(*cb); }); });

  CLI::App* artifacts = app.add_subcommand("artifacts", "The content-addressed artifact store");
  artifacts->require_subcommand(1);
  auto g = std::make_shared<GetOptions>();
  CLI::App* get = artifacts->add_subcommand(
      "get", "Print an artifact (verified against its sha256), or write it with -o");
  get->add_option("sha", g->sha, "sha256, or a unique prefix of at least 8 hex digits")->required();
  get->add_option("-o,--out", g->out, "Write to this file (atomically) instead of stdout");
  get->add_option("--db", g->db, db_help);
  get->callback([g, &result] { RunCommand(result, [&] { return RunArtifactsGet(*g); }); });
}

}  // namespace mk::cli
