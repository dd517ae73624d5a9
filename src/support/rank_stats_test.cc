// Rank statistics: ranks with ties, and Spearman's rho on cases worked out by hand.
#include "support/rank_stats.h"

#include <gtest/gtest.h>

#include <cmath>

namespace mk {
namespace {

TEST(RankStatsTest, TiesTakeTheirMeanRank) {
  EXPECT_EQ(Ranks({30, 10, 20, 10}), (std::vector<double>{4, 1.5, 3, 1.5}));
}

TEST(RankStatsTest, SpearmanRho) {
  EXPECT_DOUBLE_EQ(SpearmanRho({1, 2, 3, 4}, {10, 20, 30, 1000}), 1);
  EXPECT_DOUBLE_EQ(SpearmanRho({1, 2, 3, 4}, {4, 3, 2, 1}), -1);
  // Ties take their mean rank: ranks (1, 2.5, 2.5, 4) against (1, 2, 3, 4) = 4.5 / sqrt(22.5).
  EXPECT_NEAR(SpearmanRho({1, 2, 2, 3}, {1, 2, 3, 4}), 4.5 / std::sqrt(22.5), 1e-12);
  EXPECT_EQ(SpearmanRho({1, 1, 1}, {1, 2, 3}), 0);
  EXPECT_EQ(SpearmanRho({1, 2}, {1, 2, 3}), 0);
}

}  // namespace
}  // namespace mk
