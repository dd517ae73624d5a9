// The cost model learns a ranking it was shown, ranks unseen rows of the same kind, survives a
// round trip through its stored bytes, and refuses rows of another layout.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "modes/search/cost_model.h"
#include "support/rank_stats.h"

namespace mk::modes::search {
namespace {

// A made-up machine: time grows with |x0 - 3| and with x1, and x2 is noise the model must ignore.
double TimeOf(const std::vector<float>& x) { return 1.0 + std::abs(x[0] - 3) + 0.5 * x[1]; }

std::vector<float> Row(std::mt19937& rng) {
  std::uniform_real_distribution<float> u(0, 6);
  return {u(rng), u(rng), u(rng)};
}

TEST(CostModelTest, RanksUnseenCandidatesOfTheSameKind) {
  std::mt19937 rng(3);
  RankingData train;
  for (int g = 0; g < 4; ++g) {
    train.NewGroup();
    std::vector<std::vector<float>> rows;
    std::vector<double> times;
    for (int i = 0; i < 30; ++i) {
      rows.push_back(Row(rng));
      times.push_back(TimeOf(rows.back()));
    }
    std::vector<float> rel = RelevanceOfTimes(times);
    for (size_t i = 0; i < rows.size(); ++i) train.Add(rows[i], rel[i]);
  }
  Result<CostModel> model = CostModel::Train(train);
  ASSERT_TRUE(model.ok()) << model.status().ToString();

  std::vector<float> test;
  std::vector<double> times;
  for (int i = 0; i < 50; ++i) {
    std::vector<float> r = Row(rng);
    test.insert(test.end(), r.begin(), r.end());
    times.push_back(TimeOf(r));
  }
  Result<std::vector<float>> scores = model->Predict(test, 3);
  ASSERT_TRUE(scores.ok()) << scores.status().ToString();
  ASSERT_EQ(scores->size(), 50u);
  std::vector<double> neg_scores;
  for (float s : *scores) neg_scores.push_back(-s);  // higher score = faster = smaller time
  EXPECT_GT(SpearmanRho(neg_scores, times), 0.8);

  Result<std::string> bytes = model->Serialize();
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  Result<CostModel> back = CostModel::Deserialize(*bytes);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  Result<std::vector<float>> again = back->Predict(test, 3);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *scores);
  EXPECT_FALSE(back->Predict(std::vector<float>(8, 1.0f), 4).ok());
  EXPECT_FALSE(CostModel::Deserialize("not a model").ok());
  EXPECT_FALSE(CostModel::Deserialize("3\n{ broken").ok());
}

TEST(CostModelTest, RelevanceStepsEveryTwoPercent) {
  EXPECT_EQ(RelevanceOfTimes({1.0, 1.0, 1.05, 10.0, 0.0}),
            (std::vector<float>{31, 31, 29, 0, 0}));
}

TEST(CostModelTest, RefusesDataThatDoesNotAddUp) {
  RankingData d;
  d.Add({1, 2}, 1);
  EXPECT_FALSE(CostModel::Train(d).ok());  // one row
  d.Add({2, 3}, 0);
  d.group_sizes = {3};
  EXPECT_FALSE(CostModel::Train(d).ok());
}

}  // namespace
}  // namespace mk::modes::search
