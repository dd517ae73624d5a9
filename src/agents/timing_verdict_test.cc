// The verdict rules: a clear win or loss beyond the margin, an interval that reaches the margin,
// too few rounds, bimodal rounds (a synthetic two-speed timer is never a win), and the outliers
// a comparison re-measures.
#include "agents/timing_verdict.h"

#include <gtest/gtest.h>

#include <random>

namespace mk::agents {
namespace {

// `n` ratios around `center`, each off by up to `jitter` (relative), reproducibly.
std::vector<double> Around(double center, double jitter, int n, uint32_t seed = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-jitter, jitter);
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(center * (1 + u(rng)));
  return v;
}

TEST(TimingVerdictTest, AClearWinIsFasterAndAClearLossSlower) {
  RatioVerdict win = JudgeRoundRatios(Around(1.30, 0.03, 8));
  EXPECT_EQ(win.verdict, Verdict::kFaster) << win.reason;
  EXPECT_GT(win.low, 1.02);
  EXPECT_LE(win.low, win.estimate);
  EXPECT_GE(win.high, win.estimate);
  RatioVerdict loss = JudgeRoundRatios(Around(0.80, 0.03, 8));
  EXPECT_EQ(loss.verdict, Verdict::kSlower) << loss.reason;
  EXPECT_LT(loss.high, 0.98);
}

TEST(TimingVerdictTest, AnIntervalReachingTheMarginIsInconclusive) {
  // 1% faster, tightly measured: inside the 2% margin.
  RatioVerdict small = JudgeRoundRatios(Around(1.01, 0.005, 10));
  EXPECT_EQ(small.verdict, Verdict::kInconclusive) << small.reason;
  // 10% faster on average but noisy enough that the interval reaches 1.
  RatioVerdict noisy = JudgeRoundRatios({1.6, 0.7, 1.5, 0.75, 1.4, 0.8, 1.0});
  EXPECT_EQ(noisy.verdict, Verdict::kInconclusive) << noisy.reason;
  EXPECT_LT(noisy.low, 1.02);
}

// The profiler's comparisons and optimize's comparison with XLA share this rule: under load a
// 5% win is not a verdict, a 30% win still is.
TEST(TimingVerdictTest, ALoadedMachineNeedsTheWiderMargin) {
  RatioVerdict small = JudgeRoundRatios(Around(1.05, 0.005, 8));
  ASSERT_EQ(small.verdict, Verdict::kFaster) << small.reason;
  RequireLoadedMargin(small, "loaded: 2.0 of 2 cores busy");
  EXPECT_EQ(small.verdict, Verdict::kInconclusive);
  EXPECT_NE(small.reason.find("loaded: 2.0 of 2 cores busy, where a verdict needs the interval "
                              "beyond 10%"),
            std::string::npos) << small.reason;
  RatioVerdict large = JudgeRoundRatios(Around(0.70, 0.02, 8));
  RequireLoadedMargin(large, "loaded");
  EXPECT_EQ(large.verdict, Verdict::kSlower) << large.reason;
  RatioVerdict none = JudgeRoundRatios(Around(1.0, 0.005, 8));
  const std::string reason = none.reason;
  RequireLoadedMargin(none, "loaded");
  EXPECT_EQ(none.verdict, Verdict::kInconclusive);
  EXPECT_EQ(none.reason, reason);  // already inconclusive: nothing to add
}

TEST(TimingVerdictTest, FewerThanFiveRoundsNeverConclude) {
  RatioVerdict v = JudgeRoundRatios({2.0, 2.0, 2.0, 2.0});
  EXPECT_EQ(v.verdict, Verdict::kInconclusive);
  EXPECT_NE(v.reason.find("fewer than 5"), std::string::npos) << v.reason;
  EXPECT_EQ(JudgeRoundRatios({}).verdict, Verdict::kInconclusive);
  EXPECT_EQ(JudgeRoundRatios({0, -1, NAN}).verdict, Verdict::kInconclusive);
}

// The case: one .so timed at 333 us in some rounds and 38 ms in others. A/A rounds of
// such a library give ratios that are ~1, ~114 or ~1/114; a B that is bimodal against a steady
// A gives two clusters of ratios. Neither may be called a win.
TEST(TimingVerdictTest, ASyntheticBimodalTimerIsInconclusive) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<double> ratios;
    for (int r = 0; r < 8; ++r) {
      const double a = rng() % 2 ? 333e-6 : 38e-3;
      const double b = rng() % 2 ? 333e-6 : 38e-3;
      ratios.push_back(a / b);
    }
    RatioVerdict v = JudgeRoundRatios(ratios, trial + 1);
    EXPECT_EQ(v.verdict, Verdict::kInconclusive) << "trial " << trial << ": " << v.reason;
  }
  // A steady A against a B that is fast in half the rounds: two clusters, not a 1.5x win.
  RatioVerdict two = JudgeRoundRatios({1.0, 2.0, 1.0, 2.0, 1.01, 1.99, 1.0, 2.02});
  EXPECT_TRUE(two.bimodal);
  EXPECT_EQ(two.verdict, Verdict::kInconclusive) << two.reason;
  // Two clusters that both lie beyond the margin: every round says faster, and so does the
  // verdict (XLA at two speeds against a kernel 5x faster than either).
  RatioVerdict both = JudgeRoundRatios({4.0, 4.1, 6.2, 6.3, 4.05, 6.1});
  EXPECT_TRUE(both.bimodal);
  EXPECT_EQ(both.verdict, Verdict::kFaster) << both.reason;
}

TEST(TimingVerdictTest, TheVerdictIsReproducible) {
  const auto ratios = Around(1.05, 0.04, 9);
  RatioVerdict a = JudgeRoundRatios(ratios, 3), b = JudgeRoundRatios(ratios, 3);
  EXPECT_EQ(a.low, b.low);
  EXPECT_EQ(a.high, b.high);
  EXPECT_EQ(a.verdict, b.verdict);
}

TEST(TimingVerdictTest, ClustersAndLoneOutliers) {
  EXPECT_FALSE(SplitsIntoTwoClusters({1.0, 1.01, 0.99, 1.02, 1.0}));
  EXPECT_TRUE(SplitsIntoTwoClusters({1.0, 1.01, 3.0, 3.1, 1.0}));
  // One far value is an outlier, not a second cluster (under 20% of the values).
  EXPECT_FALSE(SplitsIntoTwoClusters({1.0, 1.01, 0.99, 1.0, 1.02, 1.0, 0.98, 5.0}));
  EXPECT_EQ(LoneOutliers({1.0, 1.01, 0.99, 1.0, 5.0, 1.02}), (std::vector<size_t>{4}));
  EXPECT_EQ(LoneOutliers({1.0, 1.01, 0.99}), (std::vector<size_t>{}));
  // Two far values together are not alone.
  EXPECT_EQ(LoneOutliers({1.0, 1.0, 1.0, 1.0, 5.0, 5.1}), (std::vector<size_t>{}));
}

TEST(TimingVerdictTest, JsonCarriesTheInterval) {
  nlohmann::json j = ToJson(JudgeRoundRatios(Around(1.3, 0.02, 6)));
  EXPECT_EQ(j["verdict"], "faster");
  ASSERT_TRUE(j["ci95"].is_array());
  EXPECT_EQ(j["ci95"].size(), 2u);
  EXPECT_EQ(j["rounds"], 6);
}

}  // namespace
}  // namespace mk::agents
