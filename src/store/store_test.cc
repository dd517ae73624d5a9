#include "store/store.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <limits>
#include <set>

#include "store/sqlite_store.h"
#include "store/store_test_util.h"

namespace mk::store {
namespace {

using testing::TempDir;

const std::string kModuleSha(64, 'c');
const std::string kShaA(64, 'a');
const std::string kShaB(64, 'b');
constexpr const char* kEnv = R"({"cpu":"test cpu","threads":1})";

NewMeasurement Measurement(int64_t run, int64_t candidate, int64_t seq, double median) {
  NewMeasurement m;
  m.run_id = run;
  m.key = {candidate, seq};
  m.median_s = median;
  m.p10_s = median * 0.9;
  m.p90_s = median * 1.2;
  m.iterations = 10;
  m.environment_json = kEnv;
  return m;
}

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (tmp_.path() / "maxkernel.db").string();
    SqliteStoreOptions options;
    options.clock = [this] { return clock_ += 1.0; };  // 1, 2, 3, ... seconds
    auto opened = SqliteStore::Open(path_, options);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    store_ = std::move(opened).value();
  }

  int64_t NewTask(const std::string& yaml = "id: t\n") {
    auto id = store_->UpsertTask({0, "/tasks/t", kModuleSha, yaml, 0});
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return id.ok() ? *id : 0;
  }
  int64_t NewRunFor(int64_t task) {
    auto id = store_->CreateRun({task, RunMode::kAuto, "cpu", R"({"max_iterations":4})"});
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return id.ok() ? *id : 0;
  }
  int64_t NewCandidateFor(int64_t run, int64_t seq, const std::string& schedule = R"({"tile":8})") {
    auto id = store_->AddCandidate({run, seq, schedule, ""});
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return id.ok() ? *id : 0;
  }

  TempDir tmp_;
  std::string path_;
  double clock_ = 0;
  std::unique_ptr<SqliteStore> store_;
};

TEST_F(StoreTest, TaskUpsertIsIdempotent) {
  int64_t first = NewTask();
  EXPECT_EQ(NewTask(), first);
  EXPECT_NE(NewTask("id: t\nseed: 2\n"), first);
  auto task = store_->GetTask(first);
  ASSERT_TRUE(task.ok());
  EXPECT_EQ(task->directory, "/tasks/t");
  EXPECT_EQ(task->module_sha256, kModuleSha);
  EXPECT_EQ(task->yaml, "id: t\n");
  EXPECT_EQ(store_->GetTask(99).status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(store_->UpsertTask({0, "/t", "not-a-sha", "", 0}).status().code(),
            ErrorCode::kInvalidArgument);
}

TEST_F(StoreTest, RunLifecycleRecordsBestCandidate) {
  int64_t run = NewRunFor(NewTask());
  int64_t c0 = NewCandidateFor(run, 0, R"({"tile":8})");
  int64_t c1 = NewCandidateFor(run, 1, R"({"tile":16})");

  auto build =
      store_->AddBuild({c0, BuildStatus::kOk, 0.25, {{"source", kShaA}, {"library", kShaB}}, ""});
  ASSERT_TRUE(build.ok()) << build.status().ToString();
  ASSERT_TRUE(store_->AddBuild({c1, BuildStatus::kFailed, 0.5, {}, "error: x undeclared"}).ok());
  ASSERT_TRUE(store_->SetCandidateStatus(c0, CandidateStatus::kCorrect).ok());
  ASSERT_TRUE(store_->SetCandidateStatus(c1, CandidateStatus::kBuildFailed).ok());
  ASSERT_TRUE(store_->SetCandidateImplementation(c0, kShaA).ok());

  ASSERT_TRUE(store_->AddMeasurement(Measurement(run, c0, 0, 0.004)).ok());
  ASSERT_TRUE(store_->AddMeasurement(Measurement(run, c0, 1, 0.003)).ok());

  // Only a candidate that passed the tester can be best.
  Status not_correct = store_->SetRunBest(run, c1);
  EXPECT_EQ(not_correct.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(not_correct.message().find("build_failed"), std::string::npos);
  ASSERT_TRUE(store_->SetRunBest(run, c0).ok());
  ASSERT_TRUE(store_->FinishRun(run, RunStatus::kSucceeded).ok());

  auto record = store_->GetRun(run);
  ASSERT_TRUE(record.ok()) << record.status().ToString();
  EXPECT_EQ(record->status, RunStatus::kSucceeded);
  EXPECT_EQ(record->mode, RunMode::kAuto);
  EXPECT_EQ(record->target, "cpu");
  EXPECT_EQ(record->config_json, R"({"max_iterations":4})");
  EXPECT_EQ(record->task_directory, "/tasks/t");
  ASSERT_TRUE(record->best_candidate_id.has_value());
  EXPECT_EQ(*record->best_candidate_id, c0);
  ASSERT_TRUE(record->best_median_s.has_value());
  EXPECT_DOUBLE_EQ(*record->best_median_s, 0.003);
  EXPECT_EQ(record->candidate_count, 2);
  EXPECT_EQ(record->measurement_count, 2);
  ASSERT_TRUE(record->finished_at.has_value());
  EXPECT_GT(*record->finished_at, record->started_at);

  auto candidates = store_->ListCandidates(run);
  ASSERT_TRUE(candidates.ok());
  ASSERT_EQ(candidates->size(), 2u);
  EXPECT_EQ((*candidates)[0].id, c0);
  EXPECT_EQ((*candidates)[0].status, CandidateStatus::kCorrect);
  EXPECT_EQ((*candidates)[0].implementation_sha256, kShaA);
  EXPECT_EQ((*candidates)[1].schedule_json, R"({"tile":16})");
  EXPECT_EQ((*candidates)[1].status, CandidateStatus::kBuildFailed);

  auto builds = store_->ListBuilds(c0);
  ASSERT_TRUE(builds.ok());
  ASSERT_EQ(builds->size(), 1u);
  EXPECT_EQ((*builds)[0].artifacts.at("source"), kShaA);
  EXPECT_EQ((*builds)[0].artifacts.at("library"), kShaB);
  EXPECT_DOUBLE_EQ((*builds)[0].compile_seconds, 0.25);
  auto failed_builds = store_->ListBuilds(c1);
  ASSERT_TRUE(failed_builds.ok());
  ASSERT_EQ(failed_builds->size(), 1u);
  EXPECT_EQ((*failed_builds)[0].status, BuildStatus::kFailed);
  EXPECT_EQ((*failed_builds)[0].diagnosis, "error: x undeclared");

  EXPECT_EQ(store_->FinishRun(run, RunStatus::kRunning).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(store_->FinishRun(12345, RunStatus::kFailed).code(), ErrorCode::kNotFound);
  EXPECT_EQ(store_->GetRun(12345).status().code(), ErrorCode::kNotFound);
}

TEST_F(StoreTest, ListsRunsNewestFirstAndIncompleteOnes) {
  int64_t task = NewTask();
  int64_t a = NewRunFor(task), b = NewRunFor(task), c = NewRunFor(task);
  ASSERT_TRUE(store_->FinishRun(a, RunStatus::kFailed).ok());

  auto all = store_->ListRuns(0);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].id, c);
  EXPECT_EQ((*all)[1].id, b);
  EXPECT_EQ((*all)[2].id, a);
  EXPECT_EQ((*all)[2].status, RunStatus::kFailed);
  EXPECT_FALSE((*all)[2].best_candidate_id.has_value());
  auto two = store_->ListRuns(2);
  ASSERT_TRUE(two.ok());
  ASSERT_EQ(two->size(), 2u);
  EXPECT_EQ((*two)[1].id, b);

  auto incomplete = store_->IncompleteRuns();
  ASSERT_TRUE(incomplete.ok());
  ASSERT_EQ(incomplete->size(), 2u);
  EXPECT_EQ((*incomplete)[0].id, b);  // oldest first
  EXPECT_EQ((*incomplete)[1].id, c);

  ASSERT_TRUE(store_->ResumeRun(a).ok());
  incomplete = store_->IncompleteRuns();
  ASSERT_TRUE(incomplete.ok());
  ASSERT_EQ(incomplete->size(), 3u);
  EXPECT_EQ((*incomplete)[0].id, a);
  EXPECT_FALSE((*incomplete)[0].finished_at.has_value());
}

TEST_F(StoreTest, CandidatesAreIdempotentOnTheirSequenceNumber) {
  int64_t run = NewRunFor(NewTask());
  int64_t id = NewCandidateFor(run, 0, R"({"tile":8,"unroll":2})");
  // The same schedule serialized in another key order is the same candidate.
  EXPECT_EQ(NewCandidateFor(run, 0, R"({ "unroll": 2, "tile": 8 })"), id);
  auto conflict = store_->AddCandidate({run, 0, R"({"tile":4})", ""});
  EXPECT_EQ(conflict.status().code(), ErrorCode::kInvalidArgument);
  // A re-submission may supply the implementation hash that was missing.
  auto with_impl = store_->AddCandidate({run, 0, R"({"tile":8,"unroll":2})", kShaB});
  ASSERT_TRUE(with_impl.ok());
  EXPECT_EQ(*with_impl, id);
  auto stored = store_->GetCandidate(id);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->implementation_sha256, kShaB);

  EXPECT_EQ(store_->AddCandidate({run, 1, "{not json", ""}).status().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(store_->AddCandidate({run, -1, "{}", ""}).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(store_->AddCandidate({run + 100, 0, "{}", ""}).status().code(), ErrorCode::kNotFound);
  auto listed = store_->ListCandidates(run);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->size(), 1u);
}

TEST_F(StoreTest, MeasurementsAreIdempotentAndValidated) {
  int64_t task = NewTask();
  int64_t run = NewRunFor(task);
  int64_t other_run = NewRunFor(task);
  int64_t c0 = NewCandidateFor(run, 0);
  int64_t c1 = NewCandidateFor(run, 1);
  int64_t foreign = NewCandidateFor(other_run, 0);

  auto first = store_->AddMeasurement(Measurement(run, c1, 3, 0.002));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_TRUE(first->inserted);
  auto again = store_->AddMeasurement(Measurement(run, c1, 3, 0.009));  // a re-measured resume
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->inserted);
  EXPECT_EQ(again->id, first->id);
  ASSERT_TRUE(store_->AddMeasurement(Measurement(run, c0, 0, 0.001)).ok());

  auto listed = store_->ListMeasurements(run);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_DOUBLE_EQ((*listed)[0].median_s, 0.002);  // the first values won
  EXPECT_DOUBLE_EQ((*listed)[0].p10_s, 0.002 * 0.9);
  EXPECT_DOUBLE_EQ((*listed)[0].p90_s, 0.002 * 1.2);
  EXPECT_EQ((*listed)[0].iterations, 10);
  EXPECT_EQ((*listed)[0].environment_json, kEnv);
  auto keys = store_->FinishedMeasurementKeys(run);
  ASSERT_TRUE(keys.ok());
  EXPECT_EQ(*keys, (std::vector<MeasurementKey>{{c0, 0}, {c1, 3}}));

  // A candidate of another run cannot be measured under this run.
  EXPECT_EQ(store_->AddMeasurement(Measurement(run, foreign, 0, 1)).status().code(),
            ErrorCode::kNotFound);
  NewMeasurement bad = Measurement(run, c0, 5, 0.001);
  bad.p10_s = 0.002;  // above the median
  EXPECT_EQ(store_->AddMeasurement(bad).status().code(), ErrorCode::kInvalidArgument);
  bad = Measurement(run, c0, 5, std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(store_->AddMeasurement(bad).status().code(), ErrorCode::kInvalidArgument);
  bad = Measurement(run, c0, 5, 0.001);
  bad.iterations = 0;
  EXPECT_EQ(store_->AddMeasurement(bad).status().code(), ErrorCode::kInvalidArgument);
  bad = Measurement(run, c0, 5, 0.001);
  bad.environment_json = "[1,2]";
  EXPECT_EQ(store_->AddMeasurement(bad).status().code(), ErrorCode::kInvalidArgument);
  keys = store_->FinishedMeasurementKeys(run);
  ASSERT_TRUE(keys.ok());
  EXPECT_EQ(keys->size(), 2u);
}

TEST_F(StoreTest, DiagnosesAndEvents) {
  int64_t run = NewRunFor(NewTask());
  int64_t c0 = NewCandidateFor(run, 0);
  int64_t c1 = NewCandidateFor(run, 1);
  auto build = store_->AddBuild({c0, BuildStatus::kFailed, 0.1, {}, "error"});
  ASSERT_TRUE(build.ok());

  auto diagnosis = store_->AddDiagnosis({c0, *build, "syntax", "expected ';'", kShaA});
  ASSERT_TRUE(diagnosis.ok()) << diagnosis.status().ToString();
  // The build must belong to the diagnosed candidate.
  EXPECT_EQ(store_->AddDiagnosis({c1, *build, "syntax", "x", ""}).status().code(),
            ErrorCode::kNotFound);
  ASSERT_TRUE(store_->AddDiagnosis({c1, std::nullopt, "crash", "SIGSEGV", ""}).ok());
  auto diagnoses = store_->ListDiagnoses(run);
  ASSERT_TRUE(diagnoses.ok());
  ASSERT_EQ(diagnoses->size(), 2u);
  EXPECT_EQ((*diagnoses)[0].diagnosis_class, "syntax");
  EXPECT_EQ((*diagnoses)[0].build_id, *build);
  EXPECT_EQ((*diagnoses)[0].artifact_sha256, kShaA);
  EXPECT_EQ((*diagnoses)[1].diagnosis_class, "crash");
  EXPECT_FALSE((*diagnoses)[1].build_id.has_value());

  clock_ = 99;
  auto event = store_->AddEvent(run, "run.started", R"({"iteration":0})");
  ASSERT_TRUE(event.ok());
  ASSERT_TRUE(store_->AddEvent(std::nullopt, "store.opened", "").ok());
  EXPECT_EQ(store_->AddEvent(run, "x", "not json").status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(store_->AddEvent(run, "", "{}").status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(store_->AddEvent(run + 7, "x", "{}").status().code(), ErrorCode::kNotFound);

  auto of_run = store_->ListEvents(run, 0);
  ASSERT_TRUE(of_run.ok());
  ASSERT_EQ(of_run->size(), 1u);
  EXPECT_EQ((*of_run)[0].ToJsonLine(),
            "{\"id\":" + std::to_string(*event) + ",\"ts\":100.0,\"run\":" + std::to_string(run) +
                ",\"kind\":\"run.started\",\"payload\":{\"iteration\":0}}");
  auto all = store_->ListEvents(std::nullopt, 0);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_FALSE((*all)[1].run_id.has_value());
  EXPECT_EQ((*all)[1].payload_json, "{}");
  EXPECT_EQ(store_->ListEvents(std::nullopt, 1)->size(), 1u);
}

TEST_F(StoreTest, EnumNamesRoundTrip) {
  EXPECT_EQ(CandidateStatusName(CandidateStatus::kBuildFailed), "build_failed");
  EXPECT_EQ(RunStatusName(RunStatus::kCancelled), "cancelled");
  EXPECT_EQ(*ParseRunMode("search"), RunMode::kSearch);
  EXPECT_EQ(*ParseBuildStatus("timeout"), BuildStatus::kTimeout);
  EXPECT_FALSE(ParseCandidateStatus("great").ok());
}

TEST(OpenStoreTest, ChoosesTheBackendFromTheLocation) {
  TempDir tmp;
  auto sqlite = OpenStore("sqlite:" + (tmp.path() / "x.db").string());
  ASSERT_TRUE(sqlite.ok()) << sqlite.status().ToString();
  EXPECT_EQ(*(*sqlite)->SchemaVersion(), 6);
  EXPECT_EQ(OpenStore("postgres://db/maxkernel").status().code(), ErrorCode::kUnimplemented);
  auto missing_dir = OpenStore((tmp.path() / "no" / "such" / "x.db").string());
  ASSERT_FALSE(missing_dir.ok());
  EXPECT_EQ(missing_dir.status().code(), ErrorCode::kIo);
}

// ---- several processes, and processes that die --------------------------------------------

struct SharedRun {
  int64_t run = 0;
  std::vector<int64_t> candidates;
};

SharedRun PrepareRun(const std::string& path, int candidates) {
  SharedRun shared;
  auto store = SqliteStore::Open(path);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  if (!store.ok()) return shared;
  auto task = (*store)->UpsertTask({0, "/tasks/t", kModuleSha, "id: t\n", 0});
  EXPECT_TRUE(task.ok());
  auto run = (*store)->CreateRun({*task, RunMode::kAuto, "cpu", "{}"});
  EXPECT_TRUE(run.ok());
  shared.run = *run;
  for (int i = 0; i < candidates; ++i) {
    auto c = (*store)->AddCandidate({*run, i, "{}", ""});
    EXPECT_TRUE(c.ok());
    shared.candidates.push_back(*c);
  }
  return shared;  // the store closes here: no connection crosses fork()
}

TEST(StoreProcessesTest, TwoWritersAtOnceLeaveAConsistentDatabase) {
  TempDir tmp;
  const std::string path = (tmp.path() / "shared.db").string();
  SharedRun shared = PrepareRun(path, 2);
  ASSERT_EQ(shared.candidates.size(), 2u);
  constexpr int kPerWriter = 200;
  std::vector<pid_t> writers;
  for (int w = 0; w < 2; ++w) {
    writers.push_back(testing::ForkChild([&, w]() {
      auto store = SqliteStore::Open(path);
      if (!store.ok()) return 10;
      for (int seq = 0; seq < kPerWriter; ++seq) {
        auto added = (*store)->AddMeasurement(
            Measurement(shared.run, shared.candidates[w], seq, 0.001 * (seq + 1)));
        if (!added.ok()) {
          std::fprintf(stderr, "writer %d: %s\n", w, added.status().ToString().c_str());
          return 11;
        }
        // Interleave with the other writer's reads, too.
        if (seq % 50 == 0 && !(*store)->FinishedMeasurementKeys(shared.run).ok()) return 12;
      }
      return 0;
    }));
    ASSERT_GT(writers.back(), 0);
  }
  for (pid_t pid : writers) EXPECT_EQ(testing::WaitChild(pid), 0);

  auto store = SqliteStore::Open(path);
  ASSERT_TRUE(store.ok());
  EXPECT_TRUE((*store)->CheckIntegrity().ok());
  auto keys = (*store)->FinishedMeasurementKeys(shared.run);
  ASSERT_TRUE(keys.ok());
  std::vector<MeasurementKey> expected;
  for (int w = 0; w < 2; ++w) {
    for (int seq = 0; seq < kPerWriter; ++seq) expected.push_back({shared.candidates[w], seq});
  }
  EXPECT_EQ(*keys, expected);
  auto measurements = (*store)->ListMeasurements(shared.run);
  ASSERT_TRUE(measurements.ok());
  ASSERT_EQ(measurements->size(), 400u);
  for (const MeasurementRecord& m : *measurements) {
    EXPECT_DOUBLE_EQ(m.median_s, 0.001 * (m.key.seq + 1));
  }
}

// A child writes measurements until it is SIGKILLed; after every call that returned OK it
// reports the sequence number on a pipe. Three rounds: each resumes from what the store says is
// finished, re-submitting a few already-stored keys as a resumed run would.
TEST(StoreProcessesTest, SigkillMidBatchLosesAndDuplicatesNothing) {
  TempDir tmp;
  const std::string path = (tmp.path() / "killed.db").string();
  SharedRun shared = PrepareRun(path, 1);
  ASSERT_EQ(shared.candidates.size(), 1u);
  const int64_t candidate = shared.candidates[0];
  std::set<int64_t> acknowledged;

  for (int round = 0; round < 3; ++round) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    pid_t child = testing::ForkChild([&]() {
      ::close(fds[0]);
      auto store = SqliteStore::Open(path);
      if (!store.ok()) return 10;
      auto done = (*store)->FinishedMeasurementKeys(shared.run);
      if (!done.ok()) return 11;
      int64_t start = done->empty() ? 0 : done->back().seq + 1;
      // Resume: the last few finished ones are submitted again and must be no-ops.
      for (int64_t seq = std::max<int64_t>(0, start - 3); seq < start + 100000; ++seq) {
        auto added = (*store)->AddMeasurement(Measurement(shared.run, candidate, seq, 0.5));
        if (!added.ok()) return 12;
        if (seq < start && added->inserted) return 13;
        if (::write(fds[1], &seq, sizeof seq) != sizeof seq) return 14;
      }
      return 0;
    });
    ASSERT_GT(child, 0);
    ::close(fds[1]);
    // Let it get well into the batch (a different depth each round), then kill it.
    const size_t kill_after = 40 + 25 * static_cast<size_t>(round);
    size_t acks_this_round = 0;
    int64_t seq = 0;
    while (acks_this_round < kill_after && ::read(fds[0], &seq, sizeof seq) == sizeof seq) {
      acknowledged.insert(seq);
      ++acks_this_round;
    }
    ASSERT_EQ(::kill(child, SIGKILL), 0);
    EXPECT_EQ(testing::WaitChild(child), 128 + SIGKILL);
    while (::read(fds[0], &seq, sizeof seq) == sizeof seq) acknowledged.insert(seq);
    ::close(fds[0]);

    auto store = SqliteStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    ASSERT_TRUE((*store)->CheckIntegrity().ok());
    auto measurements = (*store)->ListMeasurements(shared.run);
    ASSERT_TRUE(measurements.ok());
    std::set<int64_t> stored;
    for (const MeasurementRecord& m : *measurements) {
      EXPECT_TRUE(stored.insert(m.key.seq).second) << "duplicate seq " << m.key.seq;
    }
    for (int64_t acked : acknowledged) {
      EXPECT_TRUE(stored.count(acked)) << "round " << round << ": lost seq " << acked;
    }
    // Stored = acknowledged, plus at most the one commit whose acknowledgement the kill cut off.
    ASSERT_FALSE(stored.empty());
    EXPECT_EQ(*stored.rbegin() + 1, static_cast<int64_t>(stored.size()));  // no gaps
    EXPECT_LE(stored.size(), acknowledged.size() + 1);
    auto incomplete = (*store)->IncompleteRuns();
    ASSERT_TRUE(incomplete.ok());
    ASSERT_EQ(incomplete->size(), 1u);
    EXPECT_EQ((*incomplete)[0].id, shared.run);
  }
}

}  // namespace
}  // namespace mk::store
