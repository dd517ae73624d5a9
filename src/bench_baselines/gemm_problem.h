// One GEMM measured by maxkernel-baselines: C[M,N] = A[M,K] x B[K,N], row-major, with random
// inputs, a timing loop shared by every library, and a sanity check of the result (so a library
// call that silently does nothing, or the wrong thing, is caught instead of timed).
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace mk::baselines {

struct GemmProblem {
  int64_t m = 0, n = 0, k = 0;
  std::string dtype = "f32";      // the operands: "f32" or "bf16"
  std::string out_dtype = "f32";  // the result: "f32", or "bf16" (rounded to nearest even)
  uint64_t seed = 1;
};

// Operands as floats (exactly representable in `dtype`) and, for bf16, their 16-bit copies.
// The output buffers are the library's to fill.
struct GemmData {
  std::vector<float> a, b;
  std::vector<uint16_t> a_bf16, b_bf16;
  std::vector<float> c;          // out_dtype f32
  std::vector<uint16_t> c_bf16;  // out_dtype bf16
};

GemmData MakeGemmData(const GemmProblem& problem);

// Fills the output with NaN, so entries a call does not write are noticed.
void PoisonOutput(GemmData& data);
float OutputAt(const GemmProblem& problem, const GemmData& data, int64_t i, int64_t j);

struct TimingOptions {
  int warmup = 3;
  int min_iterations = 10;      // timed calls: at least this many ...
  double min_time_s = 0.3;      // ... and until this much time was spent in them ...
  int max_iterations = 100000;  // ... never more than this many
};

// Runs `call` warm-up times, then times calls one by one until both floors are reached.
std::vector<double> TimeCalls(const std::function<void()>& call, const TimingOptions& options);

// Compares sampled entries of the output (corners, a diagonal, random ones) with a double
// reference and scans the whole output for NaN. The bound per entry is the classic forward
// error of a K-term dot product, 2·K·u·Σ|a||b| (u = 2^-24; doubled for blocked orders), plus
// half an ulp of bf16 when the output is bf16 — a correct GEMM never exceeds it, and one that
// skips work or misindexes does by orders of magnitude.
struct CheckResult {
  bool passed = false;
  int64_t samples = 0;
  int64_t nan_entries = 0;
  double max_error = 0;  // largest |got - want| among samples
  double max_error_over_bound = 0;
  std::string message;  // why it failed
};
CheckResult CheckOutput(const GemmProblem& problem, const GemmData& data);

nlohmann::json ToJson(const CheckResult& check);

}  // namespace mk::baselines
