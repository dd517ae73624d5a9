// The persisted cost model (model_store.h): a run's model is stored and recorded per target and
// CPU model; the newest matching one is a new search's prior; a model file (ours or XGBoost's
// own) loads with the same predictions; a model of another width is refused or passed over.
#include "modes/search/model_store.h"

#include <gtest/gtest.h>

#include <fstream>

#include "store/sqlite_store.h"
#include "store/store_test_util.h"

namespace mk::modes::search {
namespace {

using nlohmann::json;

// A model of `columns` features that ranks by the first one, up or down.
CostModel Model(size_t columns, bool ascending) {
  RankingData d;
  for (int i = 0; i < 12; ++i) {
    std::vector<float> row(columns, 1.0f);
    row[0] = static_cast<float>(i);
    d.Add(row, static_cast<float>(ascending ? i : 11 - i));
  }
  Result<CostModel> m = CostModel::Train(d);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return std::move(*m);
}

std::vector<float> Rows(size_t columns) {
  std::vector<float> rows;
  for (int i = 0; i < 6; ++i) {
    std::vector<float> r(columns, 1.0f);
    r[0] = static_cast<float>(2 * i);
    rows.insert(rows.end(), r.begin(), r.end());
  }
  return rows;
}

class ModelStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto db = store::SqliteStore::Open((tmp_.path() / "db.sqlite").string());
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(*db);
    artifacts_ = std::make_unique<store::ArtifactStore>(tmp_.path());
    store::TaskRecord t;
    t.directory = "/tasks/t";
    t.module_sha256 = std::string(64, 'a');
    t.yaml = "id: t\n";
    auto task = db_->UpsertTask(t);
    ASSERT_TRUE(task.ok()) << task.status().ToString();
    task_id_ = *task;
  }
  int64_t NewRun() {
    store::NewRun r;
    r.task_id = task_id_;
    r.mode = store::RunMode::kSearch;
    r.target = "cpu";
    auto id = db_->CreateRun(r);
    EXPECT_TRUE(id.ok());
    return id.ok() ? *id : 0;
  }

  store::testing::TempDir tmp_;
  std::unique_ptr<store::Store> db_;
  std::unique_ptr<store::ArtifactStore> artifacts_;
  int64_t task_id_ = 0;
};

TEST_F(ModelStoreTest, WithNothingStoredTheStartIsCold) {
  auto p = ChoosePrior(*db_, *artifacts_, "", "cpu", "CPU X", 3);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->source, "none");
  EXPECT_FALSE(p->model.has_value());
  EXPECT_EQ(p->ToJson()["source"], "none");
  EXPECT_TRUE(p->ToJson()["sha256"].is_null());
}

TEST_F(ModelStoreTest, TheNewestModelOfTheSameTargetAndCpuIsThePrior) {
  const int64_t r1 = NewRun(), r2 = NewRun(), r3 = NewRun(), r4 = NewRun();
  auto a = SaveRunModel(*db_, *artifacts_, r1, "cpu", "CPU X", Model(3, true), 12);
  auto b = SaveRunModel(*db_, *artifacts_, r2, "cpu", "CPU X", Model(3, false), 12);
  auto other_cpu = SaveRunModel(*db_, *artifacts_, r3, "cpu", "CPU Y", Model(3, true), 12);
  auto other_width = SaveRunModel(*db_, *artifacts_, r4, "cpu", "CPU X", Model(5, true), 12);
  ASSERT_TRUE(a.ok() && b.ok() && other_cpu.ok() && other_width.ok());
  EXPECT_NE(*a, *b);
  EXPECT_TRUE(artifacts_->Contains(*b));

  // Run 4's model is newer but 5 features wide: the 3-wide search takes run 2's.
  auto p = ChoosePrior(*db_, *artifacts_, "", "cpu", "CPU X", 3);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->source, "store");
  EXPECT_EQ(p->sha256, *b);
  EXPECT_EQ(p->run_id, r2);
  ASSERT_TRUE(p->model.has_value());
  // It is run 2's model: the same predictions.
  auto want = Model(3, false).Predict(Rows(3), 3);
  auto got = p->model->Predict(Rows(3), 3);
  ASSERT_TRUE(want.ok() && got.ok());
  EXPECT_EQ(*got, *want);

  auto y = ChoosePrior(*db_, *artifacts_, "", "cpu", "CPU Y", 3);
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(y->sha256, *other_cpu);
  auto none = ChoosePrior(*db_, *artifacts_, "", "tpu-v5e", "CPU X", 3);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->source, "none");

  // A resumed run finds its prior again by its sha.
  auto again = PriorOfArtifact(*artifacts_, p->ToJson(), 3);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->source, "store");
  ASSERT_TRUE(again->model.has_value());
  EXPECT_EQ(*again->model->Predict(Rows(3), 3), *want);
  EXPECT_EQ(PriorOfArtifact(*artifacts_, json{{"source", "none"}}, 3)->source, "none");
}

TEST_F(ModelStoreTest, AModelFileLoadsWithTheSamePredictionsWhicheverFormItIsIn) {
  const CostModel m = Model(3, true);
  const auto want = m.Predict(Rows(3), 3);
  ASSERT_TRUE(want.ok());
  const std::string xgb = (tmp_.path() / "model.json").string();
  const std::string ours = (tmp_.path() / "model.mk").string();
  std::ofstream(xgb) << *m.SerializeXgboost();
  std::ofstream(ours) << *m.Serialize();
  for (const std::string& path : {xgb, ours}) {
    auto loaded = LoadModelFile(path, 3);
    ASSERT_TRUE(loaded.ok()) << path << ": " << loaded.status().ToString();
    EXPECT_EQ(loaded->columns(), 3u);
    EXPECT_EQ(*loaded->Predict(Rows(3), 3), *want) << path;
  }
  // --model FILE is the prior, stored as an artifact so the run can resume with it.
  auto p = ChoosePrior(*db_, *artifacts_, xgb, "cpu", "CPU X", 3);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->source, "file");
  EXPECT_EQ(p->path, xgb);
  EXPECT_TRUE(artifacts_->Contains(p->sha256));

  auto wide = LoadModelFile(xgb, 4);
  ASSERT_FALSE(wide.ok());
  EXPECT_NE(wide.status().message().find(xgb), std::string::npos) << wide.status().message();
  EXPECT_NE(wide.status().message().find("3 features"), std::string::npos) << wide.status().message();
  const std::string junk = (tmp_.path() / "junk.txt").string();
  std::ofstream(junk) << "not a model";
  auto bad = LoadModelFile(junk, 3);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find(junk), std::string::npos);
  EXPECT_FALSE(LoadModelFile((tmp_.path() / "absent.json").string(), 3).ok());
}

}  // namespace
}  // namespace mk::modes::search
