#include "agents/timing_verdict.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace mk::agents {

namespace {

// splitmix64: a small, well-mixed generator; the bootstrap needs reproducible draws, not
// cryptographic ones.
uint64_t NextRandom(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double Mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

double PercentileOfSorted(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const double rank = p / 100.0 * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (rank - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

std::string Fixed(double v, int digits = 3) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace

const char* VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kFaster: return "faster";
    case Verdict::kSlower: return "slower";
    case Verdict::kInconclusive: return "inconclusive";
  }
  return "inconclusive";
}

bool SplitsIntoTwoClusters(const std::vector<double>& values) {
  std::vector<double> v;
  for (double x : values) {
    if (x > 0 && std::isfinite(x)) v.push_back(x);
  }
  if (v.size() < 2) return false;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  const size_t min_side = std::max<size_t>(1, static_cast<size_t>(std::ceil(kClusterMinShare * n)));
  for (size_t i = 0; i + 1 < n; ++i) {
    const size_t below = i + 1, above = n - below;
    if (below < min_side || above < min_side) continue;
    if (v[i + 1] > kClusterGapFactor * v[i]) return true;
  }
  return false;
}

std::vector<size_t> LoneOutliers(const std::vector<double>& values) {
  std::vector<size_t> out;
  if (values.size() < 3) return out;
  std::vector<double> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  const double median = PercentileOfSorted(sorted, 50);
  if (!(median > 0)) return out;
  for (size_t i = 0; i < values.size(); ++i) {
    const double x = values[i];
    if (!(x > 0) || !std::isfinite(x)) {
      out.push_back(i);
      continue;
    }
    auto far = [&](double a, double b) { return std::max(a, b) > kClusterGapFactor * std::min(a, b); };
    if (!far(x, median)) continue;
    bool alone = true;
    for (size_t j = 0; j < values.size() && alone; ++j) {
      if (j != i && values[j] > 0 && !far(x, values[j])) alone = false;
    }
    if (alone) out.push_back(i);
  }
  return out;
}

RatioVerdict JudgeRoundRatios(const std::vector<double>& round_ratios, uint64_t seed) {
  RatioVerdict v;
  v.rounds = static_cast<int>(round_ratios.size());
  std::vector<double> logs;
  for (double r : round_ratios) {
    if (r > 0 && std::isfinite(r)) logs.push_back(std::log(r));
  }
  if (logs.empty()) {
    v.reason = "no usable round";
    return v;
  }
  v.estimate = std::exp(Mean(logs));
  // The bootstrap: the geometric mean of n ratios drawn with replacement, many times over.
  std::vector<double> means;
  means.reserve(kBootstrapResamples);
  uint64_t state = seed;
  std::vector<double> draw(logs.size());
  for (int b = 0; b < kBootstrapResamples; ++b) {
    for (double& d : draw) d = logs[NextRandom(state) % logs.size()];
    means.push_back(Mean(draw));
  }
  std::sort(means.begin(), means.end());
  v.low = std::exp(PercentileOfSorted(means, 2.5));
  v.high = std::exp(PercentileOfSorted(means, 97.5));
  v.bimodal = SplitsIntoTwoClusters(round_ratios);
  const std::string interval =
      "x" + Fixed(v.estimate) + " [" + Fixed(v.low) + ", " + Fixed(v.high) + "] over " +
      std::to_string(logs.size()) + " rounds";
  // Two clusters make the interval meaningless unless every single round agrees.
  const double lowest = std::exp(*std::min_element(logs.begin(), logs.end()));
  const double highest = std::exp(*std::max_element(logs.begin(), logs.end()));
  const bool unanimous = lowest > 1 + kVerdictMargin || highest < 1 - kVerdictMargin;
  if (static_cast<int>(logs.size()) < kMinVerdictRounds) {
    v.reason = interval + ": fewer than " + std::to_string(kMinVerdictRounds) + " rounds";
  } else if (v.bimodal && !unanimous) {
    v.reason = interval + ": the rounds split into two clusters (bimodal timings)";
  } else if (v.low > 1 + kVerdictMargin) {
    v.verdict = Verdict::kFaster;
    v.reason = interval + ": the whole interval is above +" + Fixed(kVerdictMargin * 100, 0) + "%";
  } else if (v.high < 1 - kVerdictMargin) {
    v.verdict = Verdict::kSlower;
    v.reason = interval + ": the whole interval is below -" + Fixed(kVerdictMargin * 100, 0) + "%";
  } else {
    v.reason = interval + ": the interval reaches within " + Fixed(kVerdictMargin * 100, 0) +
               "% of 1";
  }
  return v;
}

void RequireLoadedMargin(RatioVerdict& v, const std::string& load) {
  if (v.verdict == Verdict::kInconclusive) return;
  if (v.low > 1 + kLoadedVerdictMargin || v.high < 1 - kLoadedVerdictMargin) return;
  v.verdict = Verdict::kInconclusive;
  v.reason += "; the machine is " + load + ", where a verdict needs the interval beyond " +
              Fixed(kLoadedVerdictMargin * 100, 0) + "%";
}

nlohmann::json ToJson(const RatioVerdict& v) {
  return {{"verdict", VerdictName(v.verdict)}, {"ratio", v.estimate}, {"ci95", {v.low, v.high}},
          {"rounds", v.rounds},               {"bimodal", v.bimodal}, {"reason", v.reason}};
}

}  // namespace mk::agents
