// End-to-end tests of `maxkernel optimize` through the real binary: the result JSON, the HTML
// report and the metrics file; bad input; and a run killed with SIGKILL mid-way, then resumed.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "agents/profiler.h"
#include "cli/cli_test_util.h"
#include "store/lease.h"
#include "store/sqlite_store.h"
#include "support/metrics_test_util.h"

namespace mk::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::RunMaxkernel;

// Two kernels (a contraction with its epilogue, then a row reduction chain), so the space has
// several points and a run takes a few candidates.
constexpr const char* kModule = R"(HloModule two_kernels

max_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}

ENTRY main {
  x = f32[32,16] parameter(0)
  w = f32[16,24] parameter(1)
  d = f32[32,24] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ninf = f32[] constant(-inf)
  mx = f32[32] reduce(d, ninf), dimensions={1}, to_apply=max_f32
  mb = f32[32,24] broadcast(mx), dimensions={0}
  ROOT s = f32[32,24] subtract(d, mb)
}
)";

constexpr const char* kYaml = R"(format: 1
id: "two"
name: "two_kernels"
parameters:
  - {name: "x", shape: [32, 16], dtype: f32, init: {kind: normal}}
  - {name: "w", shape: [16, 24], dtype: f32, init: {kind: normal}}
outputs:
  - {shape: [32, 24], dtype: f32}
tolerance: {atol: 0.001, rtol: 0.001}
)";

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class OptimizeCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "mk_optimize_XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    task_ = dir_ / "task";
    fs::create_directories(task_);
    std::ofstream(task_ / "task.yaml") << kYaml;
    std::ofstream(task_ / "module.hlo") << kModule;
    // Artifacts and the default database stay inside the test's directory.
    ::setenv("MAXKERNEL_HOME", (dir_ / "home").c_str(), 1);
    db_ = (dir_ / "runs.db").string();
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::path dir_, task_;
  std::string db_;
};

TEST_F(OptimizeCliTest, ProducesAResultJsonAReportAndAMetricsFile) {
  fs::path report = dir_ / "report.html", metrics = dir_ / "run.prom";
  auto r = RunMaxkernel({"optimize", "--xla-rounds", "0", task_.string(), "--max-iterations", "3", "--db", db_,
                         "--json", "--report", report.string(), "--metrics-file",
                         metrics.string(), "--min-time", "0.02", "--no-probe"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["schema"], "maxkernel.optimize.result/1");
  EXPECT_EQ(j["status"], "succeeded");
  EXPECT_EQ(j["task"]["id"], "two");
  EXPECT_EQ(j["iterations"], 3);
  ASSERT_TRUE(j["best"].is_object());
  EXPECT_FALSE(j["report_artifact"].get<std::string>().empty());

  std::string html = ReadFile(report);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("two_kernels"), std::string::npos);
  std::string prom = ReadFile(metrics);
  for (const char* name : {"maxkernel_auto_optimization_duration_seconds",
                           "maxkernel_agent_execution_duration_seconds_bucket",
                           "maxkernel_candidates_total{task=\"two\",status=\"correct\"}",
                           "maxkernel_best_speedup{task=\"two\""}) {
    EXPECT_NE(prom.find(name), std::string::npos) << name << "\n" << prom;
  }
  EXPECT_FALSE(fs::exists(metrics.string() + ".tmp." + std::to_string(::getpid())));

  // `runs show` finds the stored report (optimize stores it after the pipeline has finished).
  auto shown = RunMaxkernel({"runs", "show", std::to_string(j["run_id"].get<int64_t>()), "--db",
                             db_, "--json"});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  json s = json::parse(shown.out, nullptr, false);
  ASSERT_TRUE(s.is_object()) << shown.out;
  EXPECT_EQ(s["run"]["report_artifact"], j["report_artifact"]) << s["run"].dump();
  EXPECT_EQ(s["run"]["result_artifact"], j["result_artifact"]) << s["run"].dump();

  // Progress (stderr, one line per candidate when not a terminal): each candidate's own
  // duration ("took"), and the run's elapsed time separately. Durations add up to at most the
  // elapsed time; times since the start would add up to more.
  std::regex progress_line(R"(cand ([0-9]+): .*took ([0-9.]+) s.*\(elapsed ([0-9.]+) s\))");
  double took_sum = 0, last_elapsed = 0;
  int lines = 0;
  std::istringstream err(r.err);
  for (std::string line; std::getline(err, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, progress_line)) continue;
    ++lines;
    took_sum += std::stod(m[2]);
    last_elapsed = std::stod(m[3]);
    EXPECT_LE(std::stod(m[2]), last_elapsed + 0.05) << line;
  }
  EXPECT_GE(lines, 3) << r.err;  // and one per duplicate, if the search proposed any
  EXPECT_LE(took_sum, last_elapsed + 0.1) << r.err;

  // The table form names the best candidate and its artifacts, and what each candidate took.
  auto t = RunMaxkernel({"optimize", "--xla-rounds", "0", task_.string(), "--max-iterations", "1", "--db", db_, "-q",
                         "--min-time", "0.02", "--no-probe"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("best"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("artifact   library"), std::string::npos) << t.out;
  EXPECT_TRUE(std::regex_search(t.out, std::regex(R"(seq +status +median +roofline +took)")))
      << t.out;
  EXPECT_TRUE(std::regex_search(t.out, std::regex(R"(\n +0 +[a-z_]+ .* [0-9]+\.[0-9]{2} s )")))
      << t.out;
}

// Two tasks' textfiles in one textfile-collector folder (docs/REPORTS_AND_METRICS.md's cron
// example): every series names its task, so no series is in both files; the merged scrape
// passes `promtool check metrics`.
TEST_F(OptimizeCliTest, TwoTasksMetricsFilesShareACollectorFolder) {
  fs::path other = dir_ / "other";
  fs::create_directories(other);
  std::string yaml = kYaml;
  yaml.replace(yaml.find("id: \"two\""), 9, "id: \"dos\"");
  std::ofstream(other / "task.yaml") << yaml;
  std::ofstream(other / "module.hlo") << kModule;
  fs::path folder = dir_ / "textfile";
  fs::create_directories(folder);
  std::vector<std::pair<std::string, std::string>> files;
  for (const fs::path& task : {task_, other}) {
    fs::path prom = folder / (task.filename().string() + ".prom");
    auto r = RunMaxkernel({"optimize", task.string(), "--max-iterations", "1", "--db", db_, "-q",
                           "--metrics-file", prom.string(), "--min-time", "0.02", "--no-probe"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    files.emplace_back(prom.filename().string(), ReadFile(prom));
  }
  for (const char* line :
       {"# TYPE maxkernel_auto_optimization_duration_seconds histogram",
        "maxkernel_auto_optimization_duration_seconds_count{task=\"two\",target=\"cpu\","
        "status=\"success\"} 1",
        "maxkernel_candidates_total{task=\"two\",status=\"correct\"} 1",
        "maxkernel_runs_total{task=\"two\",status=\"success\"} 1"}) {
    EXPECT_NE(files[0].second.find(line), std::string::npos) << line << "\n" << files[0].second;
  }
  EXPECT_TRUE(std::regex_search(
      files[1].second,
      std::regex(R"(maxkernel_agent_execution_duration_seconds_count\{task="dos",agent="[a-z]+",)"
                 R"(status="success"\} [1-9])")))
      << files[1].second;

  mk::metrics_testing::MergedTextfiles merged = mk::metrics_testing::MergeTextfiles(files);
  EXPECT_TRUE(merged.errors.empty()) << ::testing::PrintToString(merged.errors);
  fs::path merged_path = dir_ / "merged.prom";
  std::ofstream(merged_path) << merged.text;
  auto checked = mk::metrics_testing::RunPromtool(merged_path.string());
  if (!checked) GTEST_SKIP() << "promtool is not installed (Debian package prometheus)";
  EXPECT_EQ(checked->exit_code, 0) << checked->output << "\n" << merged.text;
}

TEST_F(OptimizeCliTest, BadInputExitsTwoAndNamesTheProblem) {
  auto missing = RunMaxkernel({"optimize", (dir_ / "nope").string(), "--db", db_, "-q"});
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  EXPECT_NE(missing.err.find("nope"), std::string::npos) << missing.err;

  auto metric = RunMaxkernel({"optimize", "--xla-rounds", "0", task_.string(), "--db", db_, "--target-metric", "fast"});
  EXPECT_EQ(metric.exit_code, 2);
  EXPECT_NE(metric.err.find("--target-metric"), std::string::npos) << metric.err;

  auto no_baseline = RunMaxkernel(
      {"optimize", "--xla-rounds", "0", task_.string(), "--db", db_, "--target-metric", "speedup>=2", "-q", "--no-probe"});
  EXPECT_EQ(no_baseline.exit_code, 2);
  EXPECT_NE(no_baseline.err.find("maxkernel baseline"), std::string::npos) << no_baseline.err;

  auto both = RunMaxkernel({"optimize", "--xla-rounds", "0", task_.string(), "--resume", "1", "--db", db_});
  EXPECT_EQ(both.exit_code, 2);
  auto unknown = RunMaxkernel({"optimize", "--xla-rounds", "0", "--resume", "77", "--db", db_, "-q"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("77"), std::string::npos) << unknown.err;

  auto target = RunMaxkernel({"optimize", "--xla-rounds", "0", task_.string(), "--target", "tpu-v9", "--db", db_});
  EXPECT_EQ(target.exit_code, 2);
  EXPECT_NE(target.err.find("tpu-v5e"), std::string::npos) << target.err;  // lists the valid ones
}

// Issue 30 hole 7: resuming a run that already finished is refused before the machine probe
// (seconds of measuring) starts. The database has no stored probe, so a probe would announce
// itself on stderr and store its result.
TEST_F(OptimizeCliTest, ResumingAFinishedRunIsRefusedBeforeTheProbe) {
  int64_t run_id = 0;
  {
    auto db = store::SqliteStore::Open(db_);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    store::TaskRecord task;
    task.directory = task_.string();
    task.module_sha256 = std::string(64, 'a');
    task.yaml = kYaml;
    auto task_id = (*db)->UpsertTask(task);
    ASSERT_TRUE(task_id.ok()) << task_id.status().ToString();
    store::NewRun run;
    run.task_id = *task_id;
    run.target = "cpu";
    auto id = (*db)->CreateRun(run);
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    run_id = *id;
    ASSERT_TRUE((*db)->FinishRun(run_id, store::RunStatus::kFailed).ok());
  }
  const auto start = std::chrono::steady_clock::now();
  auto r = RunMaxkernel({"optimize", "--xla-rounds", "0", "--resume", std::to_string(run_id), "--db", db_});
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("already finished (failed)"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("probing"), std::string::npos) << r.err;
  EXPECT_LT(took, 5.0);
  auto db = store::SqliteStore::Open(db_);
  ASSERT_TRUE(db.ok());
  auto stored = agents::LoadStoredMachine(**db, /*quick_ok=*/true);
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_FALSE(stored->has_value()) << "a machine probe ran and was stored";
}

// Starts maxkernel with `args` in the background; returns its pid.
pid_t Spawn(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {MK_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  pid_t pid = ::fork();
  if (pid == 0) {
    int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::dup2(null, 2);
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    ::execv(cargv[0], cargv.data());
    ::_exit(127);
  }
  return pid;
}

TEST_F(OptimizeCliTest, SearchWalksTheDecisionGraphAndSaysWhatItPrunedAndChecked) {
  fs::path graph = dir_ / "graph.dot";
  auto r = RunMaxkernel({"search", task_.string(), "--algorithm", "astar", "--budget", "3",
                         "--db", db_, "--json", "--graph", graph.string(), "--xla-rounds", "0",
                         "--min-time", "0.02", "--no-probe", "--profile-kernels", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["mode"], "search");
  EXPECT_EQ(j["iterations"], 3);
  ASSERT_TRUE(j["best"].is_object());
  const json& s = j["search"];
  EXPECT_EQ(s["algorithm"], "astar");
  EXPECT_GT(s["space_size"].get<double>(), 3);
  EXPECT_GE(s["proposed"].get<int>(), 3);
  EXPECT_TRUE(s.contains("pruned_points") && s.contains("frontier") && s.contains("predicted"));
  // Every correct measurement was checked against its bound.
  EXPECT_GE(s["admissibility"]["checked"].get<int>(), 1);
  EXPECT_TRUE(s["admissibility"]["ok"].get<bool>()) << s["admissibility"].dump();
  EXPECT_NE(ReadFile(graph).find("digraph search"), std::string::npos);
  EXPECT_NE(r.err.find("pruned"), std::string::npos) << r.err;  // the progress line
  auto runs = RunMaxkernel({"runs", "list", "--json", "--db", db_});
  ASSERT_EQ(runs.exit_code, 0) << runs.err;
  EXPECT_NE(runs.out.find("\"search\""), std::string::npos) << runs.out;

  auto bad = RunMaxkernel({"search", task_.string(), "--algorithm", "annealing", "--db", db_,
                           "--no-probe"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("annealing"), std::string::npos) << bad.err;
  auto eps = RunMaxkernel({"optimize", "--mode", "search", "--epsilon", "0.5", task_.string(),
                           "--db", db_, "--no-probe"});
  EXPECT_EQ(eps.exit_code, 2);
  EXPECT_NE(eps.err.find("epsilon"), std::string::npos) << eps.err;
}

// Items 4-6 through the binary: --algorithm evolutionary, --save-model then --model, the prior
// in the result, the progress on stderr (never in the JSON on stdout), the report's search parts.
TEST_F(OptimizeCliTest, SearchEvolutionarySavesItsModelAndTheNextSearchLoadsIt) {
  const fs::path model = dir_ / "model.json";
  const fs::path report = dir_ / "search.html";
  auto r = RunMaxkernel({"search", task_.string(), "--algorithm", "evolutionary", "--budget", "4",
                         "--db", db_, "--json", "--xla-rounds", "0", "--min-time", "0.02",
                         "--no-probe", "--profile-kernels", "0", "--save-model", model.string(),
                         "--report", report.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;  // stdout is the JSON alone
  EXPECT_EQ(j["search"]["algorithm"], "evolutionary");
  EXPECT_EQ(j["search"]["prior"]["source"], "none");
  EXPECT_GE(j["search"]["generations"].get<int>(), 1);
  EXPECT_FALSE(j["search"]["model_export"].contains("error")) << j["search"].dump();
  EXPECT_TRUE(fs::exists(model));
  for (const char* part : {"measured ", "pruned ", "frontier ", "best "}) {
    EXPECT_NE(r.err.find(part), std::string::npos) << "progress lacks " << part << ": " << r.err;
  }
  const std::string html = ReadFile(report);
  EXPECT_NE(html.find("id=\"best-so-far\""), std::string::npos);
  EXPECT_NE(html.find("the cost model&#39;s prior"), std::string::npos);

  // The prior predicts before the first candidate is run. Its XGBoost starts libgomp's thread
  // pool in this process; a sandbox forked after that hung every two-thread kernel until the
  // tester's timeout (what an earlier version of this test took for load). The sandbox is now
  // started first (runtime/sandbox.h, Start): every candidate, two-thread ones included, runs.
  auto again = RunMaxkernel({"search", task_.string(), "--algorithm", "evolutionary", "--budget",
                             "4", "--db", db_, "--json",
                             "--xla-rounds", "0", "--min-time", "0.02", "--no-probe",
                             "--profile-kernels", "0", "--model", model.string()});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  json k = json::parse(again.out, nullptr, false);
  ASSERT_TRUE(k.is_object()) << again.out;
  EXPECT_EQ(k["search"]["prior"]["source"], "file");
  EXPECT_EQ(k["search"]["prior"]["path"], model.string());
  for (const json& c : k["candidates"]) {
    EXPECT_NE(c.value("status", ""), "test_failed") << c.dump();
  }

  const fs::path junk = dir_ / "junk.json";
  std::ofstream(junk) << "{ not a model";
  auto bad = RunMaxkernel({"search", task_.string(), "--db", db_, "--no-probe", "--model", junk.string()});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find(junk.string()), std::string::npos) << bad.err;
  auto not_search = RunMaxkernel({"optimize", task_.string(), "--db", db_, "--no-probe", "--model",
                                  model.string()});
  EXPECT_EQ(not_search.exit_code, 2) << not_search.err;
}

TEST_F(OptimizeCliTest, SearchWithoutAnalyticalInitProposesPointsOfTheFixedGrids) {
  auto r = RunMaxkernel({"search", task_.string(), "--no-analytical-init", "--budget", "3",
                         "--db", db_, "--json", "--xla-rounds", "0", "--min-time", "0.02",
                         "--no-probe", "--profile-kernels", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["iterations"], 3);
  EXPECT_FALSE(j["search"]["options"]["analytical_init"].get<bool>());
  ASSERT_TRUE(j["candidates"].is_array());
  ASSERT_GE(j["candidates"].size(), 3u);
  // The 32x24x16 dot's cache blocks are the fixed grids cut at its dims: KC 16 (K 16), NC 64
  // (the first value covering N 24), whatever the model would block it with.
  int gemms = 0;
  for (const json& c : j["candidates"]) {
    for (const json& k : c["schedule"]["kernels"]) {
      if (!k.contains("kc")) continue;
      ++gemms;
      EXPECT_EQ(k["kc"], 16) << c.dump();
      EXPECT_EQ(k["nc"], 64) << c.dump();
      EXPECT_LE(k["mc"].get<int>(), 32) << c.dump();
    }
  }
  EXPECT_GE(gemms, 3);
}

TEST_F(OptimizeCliTest, ARunKilledWithSigkillResumesWithoutLosingOrRepeatingMeasurements) {
  // A slow profile (0.4 s of timed calls per candidate) leaves time to kill the run between
  // its first stored measurement and its last candidate.
  pid_t pid = Spawn({"optimize", "--xla-rounds", "0", task_.string(), "--max-iterations", "4", "--db", db_, "-q",
                     "--min-time", "0.4", "--no-probe"});
  ASSERT_GT(pid, 0);
  std::vector<store::MeasurementRecord> before;
  int64_t run_id = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline) {
    if (fs::exists(db_)) {
      auto db = store::SqliteStore::Open(db_);
      if (db.ok()) {
        auto runs = (*db)->ListRuns(0);
        if (runs.ok() && !runs->empty()) {
          run_id = runs->front().id;
          auto m = (*db)->ListMeasurements(run_id);
          if (m.ok() && !m->empty()) {
            before = *m;
            break;
          }
        }
      }
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, WNOHANG), 0) << "optimize ended before it could be killed";
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_FALSE(before.empty()) << "no measurement was stored within 120 s";
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));

  {
    auto db = store::SqliteStore::Open(db_);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->CheckIntegrity().ok());
    auto run = (*db)->GetRun(run_id);
    ASSERT_TRUE(run.ok());
    EXPECT_EQ(run->status, store::RunStatus::kRunning);  // killed: nobody finished it
    // What was stored before the kill is still there.
    auto m = (*db)->ListMeasurements(run_id);
    ASSERT_TRUE(m.ok());
    ASSERT_GE(m->size(), before.size());
  }

  auto resumed = RunMaxkernel({"optimize", "--xla-rounds", "0", "--resume", std::to_string(run_id), "--db", db_,
                               "--json", "-q", "--min-time", "0.02", "--no-probe"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  json j = json::parse(resumed.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["run_id"], run_id);
  EXPECT_EQ(j["status"], "succeeded");

  auto db = store::SqliteStore::Open(db_);
  ASSERT_TRUE(db.ok());
  auto after = (*db)->ListMeasurements(run_id);
  ASSERT_TRUE(after.ok());
  std::map<int64_t, store::MeasurementRecord> by_id;
  std::set<int64_t> candidates;
  for (const auto& m : *after) {
    by_id[m.id] = m;
    EXPECT_TRUE(candidates.insert(m.key.candidate_id).second)
        << "candidate " << m.key.candidate_id << " measured twice";
  }
  for (const auto& m : before) {
    ASSERT_TRUE(by_id.count(m.id)) << "measurement " << m.id << " was lost";
    EXPECT_EQ(by_id[m.id].median_s, m.median_s);
    EXPECT_EQ(by_id[m.id].key, m.key);
  }
  // Every correct candidate has exactly one measurement; a duplicate of an earlier library has
  // none. The 4 iterations of the budget are the candidates that are not duplicates: the space
  // of this small module proposes many schedules that compile to the same library.
  auto cands = (*db)->ListCandidates(run_id);
  ASSERT_TRUE(cands.ok());
  int correct = 0;
  size_t budgeted = 0;
  std::set<int64_t> seqs;
  for (const auto& c : *cands) {
    EXPECT_TRUE(seqs.insert(c.seq).second);
    if (c.status != store::CandidateStatus::kDuplicate) ++budgeted;
    if (c.status == store::CandidateStatus::kCorrect) {
      ++correct;
      EXPECT_TRUE(candidates.count(c.id)) << "correct candidate " << c.seq << " has no measurement";
    } else if (c.status == store::CandidateStatus::kDuplicate) {
      EXPECT_FALSE(candidates.count(c.id)) << "duplicate candidate " << c.seq << " was measured";
    }
  }
  EXPECT_EQ(static_cast<size_t>(correct), after->size());
  EXPECT_EQ(budgeted, 4u);
  EXPECT_EQ(j["iterations"], 4);
  EXPECT_EQ(j["duplicates"], static_cast<int64_t>(cands->size() - budgeted));
}

// Two processes on one run: the second `--resume` is refused while the first holds the run's
// lease, naming it; SIGTERM stops the first like SIGINT (cancelled, resumable, lease released).
TEST_F(OptimizeCliTest, ALiveRunCannotBeResumedTwiceAndSigtermCancelsIt) {
  pid_t pid = Spawn({"optimize", "--xla-rounds", "0", task_.string(), "--max-iterations", "50", "--db", db_, "-q",
                     "--min-time", "0.4", "--no-probe"});
  ASSERT_GT(pid, 0);
  int64_t run_id = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (run_id == 0 && std::chrono::steady_clock::now() < deadline) {
    if (fs::exists(db_)) {
      auto db = store::SqliteStore::Open(db_);
      if (db.ok()) {
        auto runs = (*db)->ListRuns(0);
        if (runs.ok() && !runs->empty()) {
          auto lease = (*db)->GetLease(store::RunLeaseResource(runs->front().id));
          if (lease.ok() && lease->has_value()) run_id = runs->front().id;
        }
      }
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, WNOHANG), 0) << "optimize ended too early";
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_GT(run_id, 0) << "the run never took its lease";

  auto second = RunMaxkernel({"optimize", "--xla-rounds", "0", "--resume", std::to_string(run_id), "--db", db_, "-q",
                              "--no-probe"});
  EXPECT_EQ(second.exit_code, 2) << second.err;
  EXPECT_NE(second.err.find("is being worked on by another process"), std::string::npos)
      << second.err;
  EXPECT_NE(second.err.find(":" + std::to_string(pid) + ":"), std::string::npos) << second.err;

  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "SIGTERM killed optimize instead of stopping it";
  EXPECT_EQ(WEXITSTATUS(status), 130);
  auto db = store::SqliteStore::Open(db_);
  ASSERT_TRUE(db.ok());
  auto run = (*db)->GetRun(run_id);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->status, store::RunStatus::kCancelled);
  auto lease = (*db)->GetLease(store::RunLeaseResource(run_id));
  ASSERT_TRUE(lease.ok());
  EXPECT_FALSE(lease->has_value()) << "the lease was not released";
}

// An unusable compile cache is the machine's problem: one environment error (exit 3), the run
// left cancelled and resumable, and no candidate blamed with build_failed.
TEST_F(OptimizeCliTest, AnUnusableCompileCacheIsOneEnvironmentError) {
  std::ofstream(dir_ / "file") << "not a directory";
  const char* saved = ::getenv("MAXKERNEL_CACHE");
  std::string saved_value = saved ? saved : "";
  ::setenv("MAXKERNEL_CACHE", (dir_ / "file" / "cache").c_str(), 1);
  auto r = RunMaxkernel({"optimize", "--xla-rounds", "0", task_.string(), "--max-iterations", "3", "--db", db_, "-q",
                         "--no-probe"});
  if (saved) ::setenv("MAXKERNEL_CACHE", saved_value.c_str(), 1);
  else ::unsetenv("MAXKERNEL_CACHE");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("compile cache"), std::string::npos) << r.err;
  auto db = store::SqliteStore::Open(db_);
  ASSERT_TRUE(db.ok());
  auto runs = (*db)->ListRuns(0);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ(runs->front().status, store::RunStatus::kCancelled);
  auto cands = (*db)->ListCandidates(runs->front().id);
  ASSERT_TRUE(cands.ok());
  for (const auto& c : *cands) EXPECT_NE(c.status, store::CandidateStatus::kBuildFailed);
}

TEST_F(OptimizeCliTest, TwoRunsAtOnceShareOneDatabase) {
  std::vector<std::string> args = {"optimize", "--xla-rounds", "0", task_.string(), "--max-iterations", "3", "--db",
                                   db_, "-q", "--min-time", "0.05", "--no-probe"};
  pid_t a = Spawn(args);
  pid_t b = Spawn(args);
  ASSERT_GT(a, 0);
  ASSERT_GT(b, 0);
  for (pid_t pid : {a, b}) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  auto db = store::SqliteStore::Open(db_);
  ASSERT_TRUE(db.ok());
  EXPECT_TRUE((*db)->CheckIntegrity().ok());
  auto runs = (*db)->ListRuns(0);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 2u);
  for (const auto& run : *runs) {
    EXPECT_EQ(run.status, store::RunStatus::kSucceeded);
    // Three measured candidates each; a proposal that builds an earlier library is recorded as
    // its duplicate without spending the budget.
    EXPECT_EQ(run.measurement_count, 3);
    auto cands = (*db)->ListCandidates(run.id);
    ASSERT_TRUE(cands.ok());
    int measured = 0;
    for (const auto& c : *cands) measured += c.status != store::CandidateStatus::kDuplicate;
    EXPECT_EQ(measured, 3);
  }
}

}  // namespace
}  // namespace mk::cli

namespace mk::cli {
namespace {

bool BridgeAvailable() {
  return std::system("python3 -c 'import jax, maxkernel_jax' >/dev/null 2>&1") == 0;
}

// The best against XLA:CPU, interleaved in the run (agents/xla_comparison.h): ratio, interval
// and verdict in the JSON; XLA's time stored as the module's baseline, which a later run finds.
TEST_F(OptimizeCliTest, ComparesTheBestWithXlaInTheSameRun) {
  if (!BridgeAvailable()) GTEST_SKIP() << "the Python bridge (jax, maxkernel_jax) is not installed";
  const std::string task = std::string(MK_SOURCE_DIR) + "/bench/jaxbench/12p/ci";
  auto r = RunMaxkernel({"optimize", task, "--max-iterations", "1", "--db", db_, "--json",
                         "--min-time", "0.02", "--no-probe", "--xla-rounds", "5"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  const json& x = j["best"]["comparison_with_xla"];
  ASSERT_TRUE(x.is_object()) << j["best"].dump();
  ASSERT_TRUE(x.contains("speedup")) << x.dump();
  EXPECT_EQ(x["rounds"], 5);
  EXPECT_EQ(x["round_ratios"].size(), 5u);
  EXPECT_GT(x["xla_median_s"].get<double>(), 0);
  const std::string verdict = x["verdict"]["verdict"];
  EXPECT_TRUE(verdict == "faster" || verdict == "slower" || verdict == "inconclusive") << verdict;
  EXPECT_LE(x["verdict"]["ci95"][0].get<double>(), x["verdict"]["ci95"][1].get<double>());
  // The next run of the module finds XLA's time in the store, not in task.yaml.
  auto again = RunMaxkernel({"optimize", task, "--max-iterations", "1", "--db", db_, "--json",
                             "--min-time", "0.02", "--no-probe", "--xla-rounds", "0"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  json k = json::parse(again.out, nullptr, false);
  ASSERT_TRUE(k["baseline"].is_object()) << again.out;
  EXPECT_EQ(k["baseline"]["source"], "store");
  EXPECT_DOUBLE_EQ(k["baseline"]["median_s"].get<double>(), x["xla_median_s"].get<double>());
  EXPECT_TRUE(k["best"]["comparison_with_xla"].is_null());
}

// The main job on five suite workloads of different families (ci scale): each produces a
// correct kernel, a result JSON, a report and a metrics file.
class OptimizeSuiteTest : public OptimizeCliTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(OptimizeSuiteTest, ProducesACorrectKernelWithEvidence) {
  std::string task = std::string(MK_SOURCE_DIR) + "/bench/jaxbench/" + GetParam() + "/ci";
  fs::path report = dir_ / "report.html", metrics = dir_ / "run.prom";
  auto r = RunMaxkernel({"optimize", "--xla-rounds", "0", task, "--max-iterations", "3", "--db", db_, "--json",
                         "--report", report.string(), "--metrics-file", metrics.string(),
                         "--min-time", "0.02", "--no-probe"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["status"], "succeeded");
  EXPECT_EQ(j["task"]["id"], GetParam());
  ASSERT_TRUE(j["best"].is_object());
  EXPECT_GT(j["best"]["median_s"].get<double>(), 0);
  EXPECT_GE(j["candidates"].size(), 1u);
  EXPECT_TRUE(fs::file_size(report) > 0);
  EXPECT_NE(ReadFile(metrics).find("maxkernel_best_speedup"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Workloads, OptimizeSuiteTest,
                         ::testing::Values("12p", "1p", "10p", "18k", "19k"));

}  // namespace
}  // namespace mk::cli
