// Verdicts on paired timings: is B faster than A, slower, or can this run not tell?
//
// An interleaved comparison (profiler.h: CompareInterleaved) runs A then B in each round, so a
// round's ratio median(A) / median(B) sees one machine state on both sides. The verdict comes
// from a 95% percentile-bootstrap interval of the geometric mean of those ratios:
//   faster        the whole interval lies above 1 + kVerdictMargin (B is faster),
//   slower        the whole interval lies below 1 - kVerdictMargin,
//   inconclusive  otherwise, with fewer than kMinVerdictRounds rounds, or when the rounds split
//                 into two clusters (a bimodal machine or kernel: one cluster is not "the"
//                 speed, and averaging them would call a coin toss a win) unless every single
//                 round lies beyond the margin on the same side.
// The bootstrap's random draws are seeded, so one set of ratios always gets one verdict.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mk::agents {

inline constexpr double kVerdictMargin = 0.02;
// On a loaded machine a verdict needs its interval beyond this wider margin: under load the
// noise has a direction (which side lost a slice at a barrier). See the A/A check of
// docs/PROFILING.md.
inline constexpr double kLoadedVerdictMargin = 0.10;
inline constexpr int kMinVerdictRounds = 5;
inline constexpr int kBootstrapResamples = 4000;
// Two clusters: sorted values with a gap of more than this factor between neighbours, and at
// least kClusterMinShare of the values on each side of it.
inline constexpr double kClusterGapFactor = 1.25;
inline constexpr double kClusterMinShare = 0.2;

enum class Verdict { kFaster, kSlower, kInconclusive };
const char* VerdictName(Verdict verdict);  // "faster", "slower", "inconclusive"

struct RatioVerdict {
  int rounds = 0;
  double estimate = 0;       // geometric mean of the round ratios (A / B: > 1 means B faster)
  double low = 0, high = 0;  // its 95% bootstrap interval
  bool bimodal = false;      // the rounds split into two clusters
  Verdict verdict = Verdict::kInconclusive;
  std::string reason;        // one line: why this verdict
};

// The verdict on `round_ratios` (each A / B of one round; non-positive or non-finite ratios
// are ignored and counted against the round total).
RatioVerdict JudgeRoundRatios(const std::vector<double>& round_ratios, uint64_t seed = 1);

// A verdict of timings taken on a loaded machine (`load` says how: DescribeLoad): "faster" or
// "slower" stands only when the whole interval lies beyond kLoadedVerdictMargin; otherwise
// the verdict becomes inconclusive and the reason says why.
void RequireLoadedMargin(RatioVerdict& verdict, const std::string& load);

// Whether sorted-or-not positive `values` form two clusters (kClusterGapFactor, kClusterMinShare):
// a bimodal timer's rounds, or one round's calls that alternate between two speeds.
bool SplitsIntoTwoClusters(const std::vector<double>& values);

// Indices of the values that lie alone far from the rest: more than kClusterGapFactor from
// every other value and from the median (a round hit by a burst of load). Re-measured by the
// comparison before it judges.
std::vector<size_t> LoneOutliers(const std::vector<double>& values);

nlohmann::json ToJson(const RatioVerdict& verdict);

}  // namespace mk::agents
