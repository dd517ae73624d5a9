#include "benchmarks/bench_expert.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "store/artifact_store.h"
#include "store/sqlite_store.h"
#include "store/store_test_util.h"

namespace mk::bench {
namespace {

using nlohmann::json;

TEST(ExpertOptions, RejectsWhatCannotGiveAVerdict) {
  ExpertOptions o;
  EXPECT_TRUE(ValidateExpertOptions(o).ok());
  o.budget = 0;
  EXPECT_NE(ValidateExpertOptions(o).message().find("--budget"), std::string::npos);
  o = {};
  o.rounds = 2;
  EXPECT_NE(ValidateExpertOptions(o).message().find("--rounds"), std::string::npos);
  o = {};
  o.algorithm = "hill-climb";
  EXPECT_FALSE(ValidateExpertOptions(o).ok());
  o = {};
  o.only.clear();
  EXPECT_NE(ValidateExpertOptions(o).message().find("--only"), std::string::npos);
  o = {};
  o.protocol.min_seconds = 0;
  EXPECT_NE(ValidateExpertOptions(o).message().find("--min-time"), std::string::npos);
}

TEST(ExpertOptions, TheDefaultListIsTwelveGemmOrConvWorkloadsAndTheNorm) {
  const std::vector<std::string>& ids = DefaultExpertWorkloads();
  EXPECT_EQ(ids.size(), 13u);
  int kernelbench = 0;
  for (const std::string& id : ids) kernelbench += id.back() == 'k';
  EXPECT_EQ(kernelbench, 12);
  EXPECT_EQ(ids.back(), "12p");
}

ExpertRow Row(const std::string& id, std::optional<double> ratio) {
  ExpertRow r;
  r.id = id;
  r.ratio = ratio;
  if (!ratio) r.error = "build failed";
  return r;
}

TEST(ExpertSummary, MeanMinAndTheTwoGoals) {
  json s = ExpertSummary({Row("a", 1.0), Row("b", 0.96), Row("c", 1.02)});
  EXPECT_NEAR(s["mean_ratio"].get<double>(), (1.0 + 0.96 + 1.02) / 3, 1e-12);
  EXPECT_DOUBLE_EQ(s["min_ratio"].get<double>(), 0.96);
  EXPECT_TRUE(s["goal_mean_098"].get<bool>());
  EXPECT_TRUE(s["goal_none_below_090"].get<bool>());

  s = ExpertSummary({Row("a", 1.2), Row("b", 0.85)});
  EXPECT_TRUE(s["goal_mean_098"].get<bool>());  // mean 1.025
  EXPECT_FALSE(s["goal_none_below_090"].get<bool>());
  EXPECT_EQ(s["below_090"], json::array({"b"}));

  // A workload that could not be compared fails both goals: its share is unknown.
  s = ExpertSummary({Row("a", 1.1), Row("b", std::nullopt)});
  EXPECT_EQ(s["compared"], 1);
  EXPECT_EQ(s["failed"], json::array({"b"}));
  EXPECT_FALSE(s["goal_mean_098"].get<bool>());
  EXPECT_FALSE(s["goal_none_below_090"].get<bool>());

  s = ExpertSummary({Row("a", std::nullopt)});
  EXPECT_TRUE(s["mean_ratio"].is_null());
  EXPECT_FALSE(s["goal_mean_098"].get<bool>());
}

// The whole path on a committed ci-scale task: a stored search run with the planner's rules off,
// both kernels built and checked, and either a timed comparison or the same library.
TEST(ExpertBench, SearchesWithoutTheRulesThenComparesWithThePlannersCandidate) {
  store::testing::TempDir tmp;
  auto db = store::SqliteStore::Open((tmp.path() / "db.sqlite").string());
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  store::ArtifactStore artifacts(tmp.path());
  agents::CpuEngine engine;
  ExpertOptions o;
  o.only = {"12p"};
  o.scale = "ci";
  o.tasks_dir = std::string(MK_SOURCE_DIR) + "/bench/jaxbench";
  o.budget = 3;
  o.rounds = 5;
  o.protocol.min_seconds = 0.02;
  o.protocol.min_iterations = 3;
  std::vector<std::string> lines;
  auto rows = RunExpertBench(o, engine, **db, artifacts,
                             [&](const std::string& l) { lines.push_back(l); });
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 1u);
  const ExpertRow& r = (*rows)[0];
  ASSERT_TRUE(r.error.empty()) << r.error;
  ASSERT_TRUE(r.ratio.has_value());
  EXPECT_GT(*r.ratio, 0);
  EXPECT_GE(r.measured, 1);
  EXPECT_LE(r.measured, 3);
  EXPECT_FALSE(r.expert_library.empty());
  EXPECT_FALSE(r.search_library.empty());
  // Timed unless the search landed on the expert's very library.
  EXPECT_EQ(r.comparison.has_value(), r.expert_library != r.search_library);
  if (r.comparison) {
    EXPECT_EQ(r.comparison->rounds, 5);
    EXPECT_DOUBLE_EQ(*r.ratio, r.comparison->speedup_b_over_a);
  }

  // The search is an ordinary stored search run, with the rules off.
  auto run = (*db)->GetRun(r.run_id);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->mode, store::RunMode::kSearch);
  const json config = json::parse(run->config_json);
  EXPECT_EQ(config.at("search").at("analytical_init"), false) << config.dump();

  const json j = ToJson(r);
  EXPECT_EQ(j["id"], "12p");
  EXPECT_TRUE(j["error"].is_null());
  const std::string table = FormatExpertTable(*rows, ExpertSummary(*rows));
  EXPECT_NE(table.find("12p"), std::string::npos);
  EXPECT_NE(table.find("compared 1 of 1"), std::string::npos);
  EXPECT_FALSE(lines.empty());
}

}  // namespace
}  // namespace mk::bench
