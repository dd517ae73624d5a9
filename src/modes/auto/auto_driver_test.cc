#include "modes/auto/auto_driver.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "agents/pipeline.h"
#include "agents/planner.h"
#include "agents/run_fixture_test_util.h"
#include "store/sqlite_store.h"
#include "store/store_test_util.h"
#include "task/task.h"

namespace mk::modes {

using agents::Pipeline;
using agents::PipelineContext;
using agents::PlanRequest;
using agents::RunPlanner;

namespace {

using nlohmann::json;
using store::testing::TempDir;

TEST(TargetMetric, ParsesTheThreeKindsAndRejectsTheRest) {
  auto r = ParseTargetMetric("roofline>=0.8");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->kind, TargetMetric::Kind::kRoofline);
  EXPECT_DOUBLE_EQ(r->threshold, 0.8);
  auto s = ParseTargetMetric("speedup>=1.5");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->kind, TargetMetric::Kind::kSpeedup);
  auto t = ParseTargetMetric("time<=0.002");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->kind, TargetMetric::Kind::kTime);
  EXPECT_EQ(ParseTargetMetric("")->kind, TargetMetric::Kind::kNone);
  for (const char* bad : {"roofline>=1.5", "roofline<=0.5", "speedup>=", "speedup>=-1",
                          "speed>=2", "time>=1", "speedup>=2x", "speedup=2", "roofline>=nan"}) {
    EXPECT_FALSE(ParseTargetMetric(bad).ok()) << bad;
  }
}

class AutoDriverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    task_dir_ = (tmp_.path() / "task").string();
    std::filesystem::create_directories(task_dir_);
    std::ofstream(task_dir_ + "/task.yaml") << agents::testing::kFixtureYaml;
    std::ofstream(task_dir_ + "/module.hlo") << agents::testing::kFixtureModule;
    auto db = store::SqliteStore::Open((tmp_.path() / "db.sqlite").string());
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(*db);
    artifacts_ = std::make_unique<store::ArtifactStore>(tmp_.path());
  }

  AutoRequest Request(int max_iterations) {
    AutoRequest req;
    req.task_dir = task_dir_;
    req.options.max_iterations = max_iterations;
    req.options.compare_rounds = 2;
    return req;
  }

  TempDir tmp_;
  std::string task_dir_;
  std::unique_ptr<store::Store> db_;
  std::unique_ptr<store::ArtifactStore> artifacts_;
  CpuEngine engine_;
};

TEST_F(AutoDriverTest, ARunRecordsEveryCandidateAndReturnsTheDocumentedResult) {
  auto result = RunAuto(Request(2), *db_, *artifacts_, engine_);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  const json& r = *result;
  EXPECT_EQ(r["schema"], "maxkernel.optimize.result/1");
  EXPECT_EQ(r["status"], "succeeded");
  int64_t run_id = r["run_id"].get<int64_t>();
  EXPECT_EQ(r["iterations"], 2);
  ASSERT_EQ(r["candidates"].size(), 2u);
  ASSERT_TRUE(r["best"].is_object());
  ASSERT_TRUE(r["first"].is_object());
  EXPECT_TRUE(r["baseline"].is_null());
  EXPECT_GT(r["best"]["median_s"].get<double>(), 0);
  EXPECT_GT(r["best"]["speedup_vs_first"].get<double>(), 0);
  EXPECT_TRUE(r["best"]["speedup_vs_baseline"].is_null());
  for (const char* role : {"source", "library", "implementation"}) {
    std::string sha = r["best"]["artifacts"].value(role, "");
    EXPECT_TRUE(artifacts_->Contains(sha)) << role;
  }
  EXPECT_TRUE(artifacts_->Contains(r["result_artifact"].get<std::string>()));
  EXPECT_FALSE(r["plan"]["kernels"].empty());
  EXPECT_FALSE(r["plan"]["rationale_markdown"].get<std::string>().empty());

  // The store holds the same picture: a finished run, its best, one measurement per correct
  // candidate, and the module the run optimized.
  auto run = db_->GetRun(run_id);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->status, store::RunStatus::kSucceeded);
  EXPECT_EQ(run->best_candidate_id, r["best"]["candidate_id"].get<int64_t>());
  auto measurements = db_->ListMeasurements(run_id);
  ASSERT_TRUE(measurements.ok());
  EXPECT_EQ(measurements->size(), 2u);
  json config = json::parse(run->config_json);
  auto module = artifacts_->Get(config["module_artifact"].get<std::string>());
  ASSERT_TRUE(module.ok());
  EXPECT_NE(module->find("fixture_axpy"), std::string::npos);
}

// --batch 3: the proposals are compiled together (in parallel, into the compile cache), then
// each is tested and timed alone; the run records the same things a batch of 1 does.
TEST_F(AutoDriverTest, ABatchIsCompiledTogetherThenEvaluatedOneAtATime) {
  AutoRequest req = Request(3);
  req.options.batch = 3;
  auto result = RunAuto(req, *db_, *artifacts_, engine_);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  const json& r = *result;
  EXPECT_EQ(r["status"], "succeeded");
  const int64_t run_id = r["run_id"].get<int64_t>();
  auto events = db_->ListEvents(run_id, 1000);
  ASSERT_TRUE(events.ok());
  int batches = 0;
  for (const auto& e : *events) {
    if (e.kind != "batch.compiled") continue;
    ++batches;
    const json p = json::parse(e.payload_json);
    EXPECT_GE(p["candidates"].get<int>(), 2) << e.payload_json;
    EXPECT_LE(p["candidates"].get<int>(), 3) << e.payload_json;
    EXPECT_GE(p["built"].get<int>(), 1) << e.payload_json;
  }
  EXPECT_GE(batches, 1);
  // Every candidate of the batch was evaluated under its own seq, in order, and the budget
  // (duplicates of an earlier library cost nothing) was spent and not exceeded.
  int spent = 0;
  for (size_t i = 0; i < r["candidates"].size(); ++i) {
    EXPECT_EQ(r["candidates"][i]["seq"], i) << r["candidates"].dump();
    if (r["candidates"][i]["status"] != "duplicate") ++spent;
  }
  EXPECT_EQ(spent, 3) << r["candidates"].dump();
  EXPECT_EQ(r["iterations"], 3);
  auto run = db_->GetRun(run_id);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(json::parse(run->config_json)["batch"], 3);
}

// A candidate that builds the bytes an earlier candidate built is recorded as its duplicate:
// not tested, not timed, with the original's time; --no-dedupe (dedupe = false) times it again.
TEST_F(AutoDriverTest, ACandidateBuildingAnEarlierLibraryIsItsDuplicate) {
  auto loaded = task::LoadTaskWithModule(task_dir_);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  PlanRequest preq;
  preq.module = loaded->module.get();
  preq.target = engine_.target();
  auto plan = RunPlanner(preq, engine_.emitter());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  store::TaskRecord tr;
  tr.directory = task_dir_;
  tr.module_sha256 = std::string(64, 'a');
  tr.yaml = "id: fixture";
  auto task_id = db_->UpsertTask(tr);
  ASSERT_TRUE(task_id.ok()) << task_id.status().ToString();
  store::NewRun nr;
  nr.task_id = *task_id;
  nr.target = "cpu";
  auto run = db_->CreateRun(nr);
  ASSERT_TRUE(run.ok());
  PipelineContext ctx{db_.get(), artifacts_.get(), &engine_, nullptr};
  PipelineOptions po;
  po.protocol.min_seconds = 0.01;
  Pipeline pipeline(ctx, loaded->task, *loaded->module, *plan, po);
  auto first = pipeline.Evaluate(*run, 0, plan->initial);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(first->correct()) << first->message;
  auto again = pipeline.Evaluate(*run, 1, plan->initial);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->status, "duplicate");
  EXPECT_EQ(again->duplicate_of, std::optional<int64_t>(0));
  ASSERT_TRUE(again->duplicate_median_s.has_value());
  EXPECT_DOUBLE_EQ(*again->duplicate_median_s, first->profile->timing.median_s);
  EXPECT_FALSE(again->profile.has_value());
  auto candidate = db_->GetCandidate(again->candidate_id);
  ASSERT_TRUE(candidate.ok());
  EXPECT_EQ(candidate->status, store::CandidateStatus::kDuplicate);
  EXPECT_EQ(db_->ListMeasurements(*run)->size(), 1u);
  // The A/A form: the same library is timed again.
  po.dedupe = false;
  Pipeline timing_again(ctx, loaded->task, *loaded->module, *plan, po);
  ASSERT_TRUE(timing_again.Evaluate(*run, 2, plan->initial).ok());
  auto third = timing_again.Evaluate(*run, 3, plan->initial);
  ASSERT_TRUE(third.ok());
  EXPECT_TRUE(third->correct()) << third->status;
  EXPECT_EQ(db_->ListMeasurements(*run)->size(), 3u);
}

TEST_F(AutoDriverTest, AStoppedRunResumesWithoutRepeatingOrLosingMeasurements) {
  std::atomic<bool> stop{false};
  AutoRequest req = Request(2);
  req.stop = &stop;
  AutoCallbacks cb;
  cb.on_progress = [&](const AutoProgress& p) {
    if (p.outcome) stop.store(true);  // after the first candidate
  };
  auto first = RunAuto(req, *db_, *artifacts_, engine_, cb);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ((*first)["status"], "cancelled");
  EXPECT_EQ((*first)["stop_reason"], "interrupted");
  int64_t run_id = (*first)["run_id"].get<int64_t>();
  auto before = db_->ListMeasurements(run_id);
  ASSERT_TRUE(before.ok());
  ASSERT_EQ(before->size(), 1u);

  AutoRequest resume;
  resume.resume_run = run_id;
  auto second = RunAuto(resume, *db_, *artifacts_, engine_);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ((*second)["status"], "succeeded");
  EXPECT_EQ((*second)["run_id"], run_id);
  auto after = db_->ListMeasurements(run_id);
  ASSERT_TRUE(after.ok());
  ASSERT_EQ(after->size(), 2u);
  // The first measurement is untouched, and no key appears twice.
  EXPECT_EQ((*after)[0].id, (*before)[0].id);
  EXPECT_EQ((*after)[0].median_s, (*before)[0].median_s);
  std::set<int64_t> candidates;
  for (const auto& m : *after) EXPECT_TRUE(candidates.insert(m.key.candidate_id).second);
  auto cands = db_->ListCandidates(run_id);
  ASSERT_TRUE(cands.ok());
  std::set<std::string> schedules;
  for (const auto& c : *cands) EXPECT_TRUE(schedules.insert(c.schedule_json).second);

  // A finished run does not resume.
  auto again = RunAuto(resume, *db_, *artifacts_, engine_);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("already finished"), std::string::npos);
}

TEST_F(AutoDriverTest, BadRequestsAreErrorsBeforeAnyRunIsCreated) {
  AutoRequest no_baseline = Request(2);
  no_baseline.options.target_metric = *ParseTargetMetric("speedup>=2");
  auto r = RunAuto(no_baseline, *db_, *artifacts_, engine_);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("baseline"), std::string::npos);

  AutoRequest missing = Request(2);
  missing.task_dir = (tmp_.path() / "nope").string();
  EXPECT_FALSE(RunAuto(missing, *db_, *artifacts_, engine_).ok());

  AutoRequest unknown;
  unknown.resume_run = 12345;
  EXPECT_FALSE(RunAuto(unknown, *db_, *artifacts_, engine_).ok());
  auto runs = db_->ListRuns(0);
  ASSERT_TRUE(runs.ok());
  EXPECT_TRUE(runs->empty());
}

TEST_F(AutoDriverTest, TheTargetMetricStopsTheRunEarly) {
  AutoRequest req = Request(5);
  req.options.target_metric = *ParseTargetMetric("time<=1000");  // any correct kernel meets it
  auto r = RunAuto(req, *db_, *artifacts_, engine_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)["stop_reason"], "target_metric_met");
  EXPECT_EQ((*r)["iterations"], 1);
}

// Item 4: a search run keeps the model it trained (an artifact and a "search.model" event); the
// next search on this target and CPU model starts from it; --model FILE (here the first run's
// --save-model export) is a prior of its own; the result says which prior each used.
TEST_F(AutoDriverTest, ASearchKeepsItsModelAndTheNextSearchStartsFromIt) {
  auto search_request = [&](int budget) {
    AutoRequest req = Request(budget);
    req.options.compare_rounds = 0;
    req.options.profile_kernels = 0;
    req.options.pipeline.test_seeds = 1;
    req.options.pipeline.protocol.min_seconds = 0.005;
    req.options.search = search::SearchOptions{};
    return req;
  };
  const std::string exported = (tmp_.path() / "exported.json").string();
  AutoRequest first = search_request(5);
  first.save_model_path = exported;
  auto a = RunAuto(first, *db_, *artifacts_, engine_);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  const json& sa = (*a)["search"];
  EXPECT_EQ(sa["prior"]["source"], "none") << sa.dump();
  ASSERT_GE((*a)["iterations"].get<int>(), 4) << "too few points measured to train";
  ASSERT_TRUE(sa["model"]["saved_sha256"].is_string()) << sa["model"].dump();
  const std::string saved = sa["model"]["saved_sha256"].get<std::string>();
  EXPECT_TRUE(artifacts_->Contains(saved));
  EXPECT_FALSE(sa["model_export"].contains("error")) << sa["model_export"].dump();
  EXPECT_TRUE(std::filesystem::exists(exported));
  bool recorded = false;
  auto events = db_->ListEvents((*a)["run_id"].get<int64_t>(), 0);
  ASSERT_TRUE(events.ok());
  for (const auto& e : *events) {
    recorded = recorded || (e.kind == "search.model" && e.payload_json.find(saved) != std::string::npos);
  }
  EXPECT_TRUE(recorded);

  auto b = RunAuto(search_request(1), *db_, *artifacts_, engine_);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  const json& pb = (*b)["search"]["prior"];
  EXPECT_EQ(pb["source"], "store") << pb.dump();
  EXPECT_EQ(pb["sha256"], saved);
  EXPECT_EQ(pb["run_id"], (*a)["run_id"]);
  EXPECT_TRUE((*b)["search"]["model"]["prior"].get<bool>());
  // The prior orders what comes after the start: the first candidate is still the planner's.
  ASSERT_EQ((*b)["candidates"].size(), 1u);
  EXPECT_EQ((*b)["candidates"][0]["schedule"], (*a)["candidates"][0]["schedule"]);

  AutoRequest with_file = search_request(1);
  with_file.model_file = exported;
  auto c = RunAuto(with_file, *db_, *artifacts_, engine_);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ((*c)["search"]["prior"]["source"], "file");
  EXPECT_EQ((*c)["search"]["prior"]["path"], exported);

  AutoRequest bad = search_request(1);
  bad.model_file = (tmp_.path() / "absent.json").string();
  auto d = RunAuto(bad, *db_, *artifacts_, engine_);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), ErrorCode::kInvalidArgument);
  AutoRequest not_search = Request(1);
  not_search.model_file = exported;
  EXPECT_FALSE(RunAuto(not_search, *db_, *artifacts_, engine_).ok());
}

}  // namespace
}  // namespace mk::modes
