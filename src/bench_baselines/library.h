// The libraries maxkernel-baselines can time. Each prepares a GEMM once (primitive creation,
// thread count) and hands back the call that is timed, with what it knows about itself.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench_baselines/gemm_problem.h"

namespace mk::baselines {

struct PreparedGemm {
  std::string error;  // non-empty: the library could not set the GEMM up
  // With `error`: the library has no kernel for this case on this CPU (oneDNN's bf16 matmul on
  // a CPU without AVX-512), which the tool reports as skipped (exit 3), not as bad input.
  bool unsupported = false;
  std::function<void()> call;
  std::string api;  // "dnnl_sgemm", "dnnl matmul primitive", "cblas_sgemm", ...
  std::string version;
  std::string isa;  // what the library dispatched to, as far as it tells
  nlohmann::json details = nlohmann::json::object();
};

// What a library supports, for `maxkernel-baselines info` (bench skips the rest up front).
struct LibraryInfo {
  std::string name;
  std::string version;
  std::vector<std::string> dtypes;     // operand dtypes with an f32 result
  std::vector<std::string> bf16_outs;  // operand dtypes that also allow a bf16 result
  nlohmann::json details = nlohmann::json::object();
};

// `data` must outlive the returned call. `threads` is the library's thread count.
PreparedGemm PrepareOneDnn(const GemmProblem& problem, GemmData& data, int threads);
LibraryInfo OneDnnInfo();
PreparedGemm PrepareOpenBlas(const GemmProblem& problem, GemmData& data, int threads);
LibraryInfo OpenBlasInfo();

nlohmann::json ToJson(const LibraryInfo& info);

}  // namespace mk::baselines
