#include "bench_baselines/gemm_problem.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <random>

#include "support/float16.h"

namespace mk::baselines {

namespace {

constexpr double kUnitRoundoff = 1.0 / (1 << 24);  // f32

void Fill(std::vector<float>& values, std::vector<uint16_t>& bf16, size_t count, bool as_bf16,
          std::mt19937_64& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  values.resize(count);
  if (as_bf16) bf16.resize(count);
  for (size_t i = 0; i < count; ++i) {
    float v = dist(rng);
    if (as_bf16) {
      bf16[i] = FloatToBf16(v);
      v = Bf16ToFloat(bf16[i]);
    }
    values[i] = v;
  }
}

}  // namespace

GemmData MakeGemmData(const GemmProblem& p) {
  GemmData d;
  std::mt19937_64 rng(p.seed);
  const bool bf16 = p.dtype == "bf16";
  Fill(d.a, d.a_bf16, static_cast<size_t>(p.m * p.k), bf16, rng);
  Fill(d.b, d.b_bf16, static_cast<size_t>(p.k * p.n), bf16, rng);
  const size_t out = static_cast<size_t>(p.m * p.n);
  if (p.out_dtype == "bf16") {
    d.c_bf16.assign(out, 0);
  } else {
    d.c.assign(out, 0.0f);
  }
  return d;
}

void PoisonOutput(GemmData& d) {
  std::fill(d.c.begin(), d.c.end(), std::numeric_limits<float>::quiet_NaN());
  std::fill(d.c_bf16.begin(), d.c_bf16.end(), uint16_t{0x7fc0});  // bf16 quiet NaN
}

float OutputAt(const GemmProblem& p, const GemmData& d, int64_t i, int64_t j) {
  const size_t at = static_cast<size_t>(i * p.n + j);
  return p.out_dtype == "bf16" ? Bf16ToFloat(d.c_bf16[at]) : d.c[at];
}

std::vector<double> TimeCalls(const std::function<void()>& call, const TimingOptions& o) {
  using Clock = std::chrono::steady_clock;
  for (int i = 0; i < o.warmup; ++i) call();
  std::vector<double> times;
  double spent = 0;
  while (static_cast<int>(times.size()) < o.max_iterations &&
         (static_cast<int>(times.size()) < o.min_iterations || spent < o.min_time_s)) {
    auto start = Clock::now();
    call();
    double t = std::chrono::duration<double>(Clock::now() - start).count();
    times.push_back(t);
    spent += t;
  }
  return times;
}

CheckResult CheckOutput(const GemmProblem& p, const GemmData& d) {
  CheckResult r;
  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t j = 0; j < p.n; ++j) {
      if (std::isnan(OutputAt(p, d, i, j))) ++r.nan_entries;
    }
  }
  std::vector<std::pair<int64_t, int64_t>> at = {
      {0, 0}, {0, p.n - 1}, {p.m - 1, 0}, {p.m - 1, p.n - 1}, {p.m / 2, p.n / 2}};
  for (int64_t t = 0; t < 16; ++t) at.push_back({t * (p.m - 1) / 15, t * (p.n - 1) / 15});
  std::mt19937_64 rng(p.seed + 7);
  for (int t = 0; t < 48; ++t) {
    at.push_back({static_cast<int64_t>(rng() % static_cast<uint64_t>(p.m)),
                  static_cast<int64_t>(rng() % static_cast<uint64_t>(p.n))});
  }
  const double gamma = 2.0 * static_cast<double>(p.k) * kUnitRoundoff;
  for (const auto& [i, j] : at) {
    double want = 0, magnitude = 0;
    for (int64_t l = 0; l < p.k; ++l) {
      double prod = static_cast<double>(d.a[static_cast<size_t>(i * p.k + l)]) *
                    static_cast<double>(d.b[static_cast<size_t>(l * p.n + j)]);
      want += prod;
      magnitude += std::fabs(prod);
    }
    double bound = gamma * magnitude + 1e-30;
    if (p.out_dtype == "bf16") bound += std::ldexp(std::fabs(want), -8) + 1e-30;
    const double got = OutputAt(p, d, i, j);
    const double err = std::fabs(got - want);
    ++r.samples;
    if (!(err <= bound)) {
      if (r.message.empty()) {
        r.message = "C[" + std::to_string(i) + "," + std::to_string(j) +
                    "] = " + std::to_string(got) + ", the reference is " + std::to_string(want) +
                    " (allowed error " + std::to_string(bound) + ")";
      }
    }
    if (std::isfinite(err)) {
      r.max_error = std::max(r.max_error, err);
      r.max_error_over_bound = std::max(r.max_error_over_bound, err / bound);
    }
  }
  if (r.nan_entries > 0 && r.message.empty()) {
    r.message = std::to_string(r.nan_entries) + " output entries are NaN (never written)";
  }
  r.passed = r.message.empty();
  return r;
}

nlohmann::json ToJson(const CheckResult& c) {
  nlohmann::json j = {{"passed", c.passed},
                      {"samples", c.samples},
                      {"nan_entries", c.nan_entries},
                      {"max_error", c.max_error},
                      {"max_error_over_bound", c.max_error_over_bound}};
  if (!c.message.empty()) j["message"] = c.message;
  return j;
}

}  // namespace mk::baselines
