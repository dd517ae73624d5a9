// `runs list|show`, `artifacts get` and `export` through the real binary, on a store built
// in-process by the shared fixture (agents/run_fixture_test_util.h): one run that succeeded and
// one that failed.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "agents/run_fixture_test_util.h"
#include "cli/cli_test_util.h"
#include "store/sqlite_store.h"
#include "support/sha256.h"

namespace mk::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::Ran;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class RunsCliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/mk-runs-cli-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    home_ = dir_ + "/home";
    fs::create_directories(home_);
    auto db = store::SqliteStore::Open(home_ + "/maxkernel.db");
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    store::ArtifactStore artifacts(home_);
    agents::EngineOptions options;
    options.cache_dir = dir_ + "/cache";
    agents::CpuEngine engine(options);
    auto good = agents::testing::AddFinishedRun(**db, artifacts, engine);
    ASSERT_TRUE(good.ok()) << good.status().ToString();
    good_ = *good;
    auto bad = agents::testing::AddFinishedRun(**db, artifacts, engine,
                                               {.task_dir = "", .with_best = false});
    ASSERT_TRUE(bad.ok()) << bad.status().ToString();
    bad_ = *bad;
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // maxkernel ARGS with the fixture's data directory.
  static Ran Mk(const std::vector<std::string>& args, const std::string& home = home_) {
    std::vector<std::string> argv = {"env", "MAXKERNEL_HOME=" + home, MK_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    return testing::RunCommand(argv);
  }

  static std::string dir_, home_;
  static agents::testing::FixtureRun good_, bad_;
};

std::string RunsCliTest::dir_, RunsCliTest::home_;
agents::testing::FixtureRun RunsCliTest::good_, RunsCliTest::bad_;

TEST_F(RunsCliTest, ListShowsBothRunsNewestFirst) {
  Ran r = Mk({"runs", "list"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("best time"), std::string::npos) << r.out;
  size_t bad_at = r.out.find("failed");
  size_t good_at = r.out.find("succeeded");
  ASSERT_NE(bad_at, std::string::npos) << r.out;
  ASSERT_NE(good_at, std::string::npos) << r.out;
  EXPECT_LT(bad_at, good_at) << "newest (the failed run) first:\n" << r.out;
  EXPECT_NE(r.out.find("fx1"), std::string::npos) << "task id from task.yaml:\n" << r.out;
  EXPECT_NE(r.out.find("2.500 us"), std::string::npos) << r.out;

  r = Mk({"runs", "list", "--json", "--limit", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out);
  ASSERT_EQ(j["runs"].size(), 1u);
  EXPECT_EQ(j["runs"][0]["id"], bad_.run_id);

  r = Mk({"runs", "list", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = json::parse(r.out);
  ASSERT_EQ(j["runs"].size(), 2u);
  const json& g = j["runs"][1];
  EXPECT_EQ(g["id"], good_.run_id);
  EXPECT_EQ(g["status"], "succeeded");
  EXPECT_EQ(g["task"], "fx1");
  EXPECT_EQ(g["task_name"], "axpy_fixture");
  EXPECT_EQ(g["candidates"], 2);
  EXPECT_EQ(g["measurements"], 1);
  EXPECT_EQ(g["best_candidate_id"], good_.last_candidate_id);
  EXPECT_DOUBLE_EQ(g["best_median_s"].get<double>(), 2.5e-6);
  EXPECT_TRUE(j["runs"][0]["best_median_s"].is_null());
}

TEST_F(RunsCliTest, ShowListsCandidatesDiagnosesAndEvents) {
  Ran r = Mk({"runs", "show", std::to_string(good_.run_id)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* want :
       {"succeeded", "fx1 axpy_fixture", "candidates (2)", "build_failed", "failed 0.5s", "correct",
        "<- best", "diagnoses (1)", "syntax", "expected ';'", "events (3)", "run.finished"}) {
    EXPECT_NE(r.out.find(want), std::string::npos) << want << " missing in:\n" << r.out;
  }

  r = Mk({"runs", "show", std::to_string(good_.run_id), "--json", "--events", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["run"]["config"]["module_artifact"], good_.module_sha256);
  ASSERT_EQ(j["candidates"].size(), 2u);
  const json& best = j["candidates"][1];
  EXPECT_EQ(best["status"], "correct");
  EXPECT_EQ(best["builds"][0]["artifacts"]["library"], good_.library_sha256);
  EXPECT_DOUBLE_EQ(best["best_median_s"].get<double>(), 2.5e-6);
  EXPECT_TRUE(best["schedule"].is_object());
  EXPECT_EQ(j["diagnoses"][0]["class"], "syntax");
  ASSERT_EQ(j["events"].size(), 1u);
  EXPECT_EQ(j["events"][0]["kind"], "run.finished");  // the newest
  EXPECT_EQ(j["event_count"], 3);

  r = Mk({"runs", "show", std::to_string(bad_.run_id)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("none (no correct candidate)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("mismatch"), std::string::npos) << r.out;
}

TEST_F(RunsCliTest, UnknownRunAndBadIdsAreBadInput) {
  Ran r = Mk({"runs", "show", "999"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("run 999 not found in " + home_ + "/maxkernel.db"), std::string::npos)
      << r.err;
  r = Mk({"runs", "show", "abc"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("'abc' is not a run id"), std::string::npos) << r.err;
  r = Mk({"export", "999", "-o", dir_ + "/never"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("run 999 not found"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ + "/never"));
}

TEST_F(RunsCliTest, CheckBoundReportsTheStoreAsJsonAndRefusesAnUnknownRun) {
  Ran r = Mk({"runs", "check-bound", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const json j = json::parse(r.out);
  EXPECT_TRUE(j["ok"].get<bool>());
  // The fixture's runs are CPU runs; each measurement is either checked or from another machine.
  EXPECT_GE(j["measurements_checked"].get<int64_t>() + j["measurements_other_machine"].get<int64_t>(), 1)
      << r.out;
  EXPECT_EQ(j["database"], home_ + "/maxkernel.db");
  r = Mk({"runs", "check-bound", "--run", "999"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("999"), std::string::npos) << r.err;
}

TEST_F(RunsCliTest, MissingDatabaseSaysWhereItLookedAndCreatesNothing) {
  std::string empty = dir_ + "/empty-home";
  fs::create_directories(empty);
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"runs", "list"}, {"runs", "show", "1"}, {"export", "1", "-o", empty + "/out"}}) {
    Ran r = Mk(args, empty);
    EXPECT_EQ(r.exit_code, 2) << args[0];
    EXPECT_NE(r.err.find("no maxkernel database at " + empty + "/maxkernel.db"), std::string::npos)
        << r.err;
  }
  Ran r = Mk({"runs", "list", "--db", dir_ + "/nope.db"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(dir_ + "/nope.db"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ + "/nope.db"));
  EXPECT_TRUE(fs::is_empty(empty));
}

// Issue 30 hole 7: read-only commands open the database read-only, so a database the user may
// only read (chmod 0444) still lists, and is not changed. As root, permissions do not stop a
// write: the command then runs as `nobody` (setpriv).
TEST_F(RunsCliTest, ReadOnlyDatabaseStillListsAndShows) {
  const bool root = ::geteuid() == 0;
  if (root && !fs::exists("/usr/bin/setpriv") && !fs::exists("/bin/setpriv")) {
    GTEST_SKIP() << "running as root without setpriv: a read-only file cannot be made";
  }
  char tmpl[] = "/tmp/mk-runs-ro-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string ro = tmpl;
  // The folder stays writable (SQLite keeps its WAL index beside the database); the file is not.
  fs::permissions(ro, fs::perms::all);
  const std::string db = ro + "/maxkernel.db";
  fs::copy_file(home_ + "/maxkernel.db", db);
  fs::permissions(db, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  const std::string before = ReadFile(db);
  auto as_reader = [&](std::vector<std::string> args) {
    std::vector<std::string> argv;
    if (root) argv = {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"};
    argv.insert(argv.end(), {"env", "MAXKERNEL_HOME=" + ro, MK_BINARY});
    argv.insert(argv.end(), args.begin(), args.end());
    return testing::RunCommand(argv);
  };
  Ran list = as_reader({"runs", "list", "--db", db});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find("succeeded"), std::string::npos) << list.out;
  Ran show = as_reader({"runs", "show", std::to_string(good_.run_id), "--db", db});
  EXPECT_EQ(show.exit_code, 0) << show.err;
  EXPECT_EQ(ReadFile(db), before);
  // A folder the reader cannot write either (read-only media): SQLite cannot make its WAL index
  // there, and the file is read as it is.
  const std::string locked = ro + "/locked";
  fs::create_directories(locked);
  fs::copy_file(home_ + "/maxkernel.db", locked + "/maxkernel.db");
  fs::permissions(locked + "/maxkernel.db", fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                              fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  Ran locked_list = as_reader({"runs", "list", "--db", locked + "/maxkernel.db"});
  EXPECT_EQ(locked_list.exit_code, 0) << locked_list.err;
  EXPECT_NE(locked_list.out.find("succeeded"), std::string::npos) << locked_list.out;
  fs::permissions(locked, fs::perms::owner_all);
  std::error_code ec;
  fs::remove_all(ro, ec);
}

TEST_F(RunsCliTest, ArtifactsGetIsBinarySafeAcceptsPrefixesAndWritesFiles) {
  const std::string library = ReadFile(store::ArtifactStore(home_).PathFor(good_.library_sha256));
  Ran r = Mk({"artifacts", "get", good_.library_sha256});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.size(), library.size());
  EXPECT_TRUE(r.out == library) << "stdout must carry the .so bytes unchanged";

  r = Mk({"artifacts", "get", good_.module_sha256.substr(0, 10)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, agents::testing::kFixtureModule);

  std::string out = dir_ + "/module.hlo";
  r = Mk({"artifacts", "get", good_.module_sha256.substr(0, 8), "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.empty());
  EXPECT_EQ(ReadFile(out), agents::testing::kFixtureModule);

  r = Mk({"artifacts", "get", good_.module_sha256.substr(0, 7)});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("8 to 64 hex digits"), std::string::npos) << r.err;
  std::string unknown = good_.module_sha256[0] == 'f' ? "eeeeeeee" : "ffffffff";
  r = Mk({"artifacts", "get", unknown});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no artifact starts with " + unknown + " in " + home_ + "/artifacts"),
            std::string::npos)
      << r.err;
}

TEST_F(RunsCliTest, ArtifactsGetRefusesACorruptedArtifact) {
  std::string home = dir_ + "/corrupt-home";
  store::ArtifactStore artifacts(home);
  auto sha = artifacts.Put("the original bytes\n");
  ASSERT_TRUE(sha.ok());
  fs::path path = artifacts.PathFor(*sha);
  ::chmod(path.c_str(), 0644);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << "the changed bytes\n";
  std::string out = dir_ + "/corrupt.txt";
  Ran r = Mk({"artifacts", "get", *sha, "-o", out}, home);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("is corrupted"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(RunsCliTest, ExportLibWritesTheFilesAndRefusesARunWithoutBest) {
  std::string out = dir_ + "/export-lib";
  Ran r = Mk({"export", std::to_string(good_.run_id), "--format", "lib", "-o", out, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["name"], "axpy_fixture");
  // The shipped library is the measured source with its entry points renamed (axpy_fixture_kernel).
  EXPECT_EQ(j["measured_library_sha256"], good_.library_sha256);
  EXPECT_EQ(j["library_sha256"], Sha256Hex(ReadFile(out + "/libmaxkernel_axpy_fixture.so")));
  EXPECT_NE(j["library_sha256"], good_.library_sha256);
  EXPECT_EQ(j["files"]["library"], out + "/libmaxkernel_axpy_fixture.so");
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(out)) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"README.txt", "axpy_fixture.h", "example.c",
                                             "libmaxkernel_axpy_fixture.so"}));

  std::string refused = dir_ + "/export-refused";
  r = Mk({"export", std::to_string(bad_.run_id), "-o", refused});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("has no correct candidate to export (status failed"), std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(refused));

  r = Mk({"export", std::to_string(good_.run_id), "--format", "wasm", "-o", refused});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown export format 'wasm'"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(refused));
}

}  // namespace
}  // namespace mk::cli
