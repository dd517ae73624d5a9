#include "modes/search/bound_check.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "agents/planner.h"
#include "codegen/emitter.h"
#include "hlo/parser.h"
#include "space/schedule.h"
#include "store/sqlite_store.h"
#include "store/store_test_util.h"

namespace mk::modes::search {
namespace {

using nlohmann::json;
using store::testing::TempDir;

constexpr const char* kGemm = R"(HloModule gemm

ENTRY main {
  x = f32[64,256]{1,0} parameter(0)
  w = f32[256,512]{1,0} parameter(1)
  ROOT d = f32[64,512]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)";

class BoundCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = store::SqliteStore::Open((tmp_.path() / "db.sqlite").string());
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(*db);
    artifacts_ = std::make_unique<store::ArtifactStore>(tmp_.path());
    host_ = target::HostCpu();
  }

  int64_t AddRun(const std::string& module, const std::string& target) {
    auto sha = artifacts_->Put(module, "text/x-hlo");
    EXPECT_TRUE(sha.ok());
    store::TaskRecord t;
    t.directory = "/tasks/gemm-" + target;
    t.module_sha256 = *sha;
    auto task = db_->UpsertTask(t);
    EXPECT_TRUE(task.ok());
    store::NewRun r;
    r.task_id = *task;
    r.mode = store::RunMode::kSearch;
    r.target = target;
    auto run = db_->CreateRun(r);
    EXPECT_TRUE(run.ok());
    return *run;
  }

  // A candidate of `run` measured at `median_s` on `cpu_model` (this host's ISA).
  int64_t AddMeasured(int64_t run, int64_t seq, const space::Candidate& c, double median_s,
                      const std::string& cpu_model) {
    store::NewCandidate nc;
    nc.run_id = run;
    nc.seq = seq;
    nc.schedule_json = space::ToJson(c).dump();
    auto id = db_->AddCandidate(nc);
    EXPECT_TRUE(id.ok());
    store::NewMeasurement m;
    m.run_id = run;
    m.key = {*id, 0};
    m.median_s = m.p10_s = m.p90_s = median_s;
    m.environment_json = json{{"cpu_model", cpu_model}, {"isa_level", host_.isa_level}}.dump();
    EXPECT_TRUE(db_->AddMeasurement(m).ok());
    return *id;
  }

  space::Candidate Initial() {
    auto module = hlo::ParseModule(kGemm);
    EXPECT_TRUE(module.ok());
    auto emitter = codegen::EmitterFor(host_);
    EXPECT_TRUE(emitter.ok());
    agents::PlanRequest req;
    req.module = module->get();
    req.target = host_;
    auto plan = agents::RunPlanner(req, **emitter);
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    return plan->initial;
  }

  TempDir tmp_;
  std::unique_ptr<store::Store> db_;
  std::unique_ptr<store::ArtifactStore> artifacts_;
  target::Target host_;
};

TEST_F(BoundCheckTest, AMeasurementFasterThanItsBoundIsAViolationAndOtherMachinesAreNotEvidence) {
  const space::Candidate c = Initial();
  ASSERT_EQ(c.kernels.size(), 1u);
  const int64_t run = AddRun(kGemm, "cpu");
  // 16.8 MFLOP: an hour is slower than any bound, a picosecond faster than every one.
  AddMeasured(run, 0, c, 3600, host_.model);
  const int64_t fast = AddMeasured(run, 1, c, 1e-12, host_.model);
  AddMeasured(run, 2, c, 1e-12, host_.model + " (another one)");
  AddRun(kGemm, "tpu-v5e");

  auto r = CheckBoundOverStore(*db_, *artifacts_, host_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->runs_checked, 1);
  EXPECT_EQ(r->measurements_checked, 2);
  EXPECT_EQ(r->measurements_other_machine, 1);
  ASSERT_EQ(r->violations.size(), 1u);
  EXPECT_EQ(r->violations[0].candidate_id, fast);
  EXPECT_GT(r->violations[0].bound_s, 1e-12);
  EXPECT_FALSE(r->ok());
  ASSERT_EQ(r->runs_skipped.size(), 1u);
  EXPECT_NE(r->runs_skipped[0].find("tpu-v5e"), std::string::npos);
  const json j = ToJson(*r);
  EXPECT_EQ(j["violations"][0]["run"], run);
  EXPECT_FALSE(j["ok"].get<bool>());

  // Only the admissible run: ok.
  const int64_t slow_run = AddRun(kGemm, "cpu");
  AddMeasured(slow_run, 0, c, 3600, host_.model);
  auto only = CheckBoundOverStore(*db_, *artifacts_, host_, slow_run);
  ASSERT_TRUE(only.ok());
  EXPECT_TRUE(only->ok());
  EXPECT_EQ(only->measurements_checked, 1);
}

TEST_F(BoundCheckTest, ARunWhoseModuleIsGoneOrBrokenIsSkippedWithTheReason) {
  const space::Candidate c = Initial();
  const int64_t broken = AddRun("HloModule broken\nENTRY e {", "cpu");
  AddMeasured(broken, 0, c, 1e-12, host_.model);
  auto r = CheckBoundOverStore(*db_, *artifacts_, host_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->runs_checked, 0);
  EXPECT_TRUE(r->ok());
  ASSERT_EQ(r->runs_skipped.size(), 1u);
  EXPECT_NE(r->runs_skipped[0].find("does not parse"), std::string::npos) << r->runs_skipped[0];
}

}  // namespace
}  // namespace mk::modes::search
