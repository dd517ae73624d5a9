// `maxkernel bench --suite tpu` (issue 31's sweep; docs/TPU.md): every suite workload for TPU
// targets, without a TPU. Per workload: the Pallas module of the planner's initial candidate,
// checked in TPU interpret mode against the interpreter (ci scale only: interpret mode costs
// about 10 ms a grid step), compiled by libtpu compile-only for each generation, its modelled
// time (target/tpu_perf_model.h) and XLA:TPU's own estimate of the reference (libtpu's cost
// analysis). Their quotient is a "modelled ratio", never a speedup: no TPU measured either.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "benchmarks/bench_gemm.h"
#include "support/status.h"

namespace mk::bench {

struct TpuBenchOptions {
  std::string scale = "ci";
  std::vector<std::string> only;  // empty: the whole suite
  std::vector<std::string> generations = {"v5e", "v6e"};
  bool check = true;  // interpret-mode check (ci scale only; at other scales it is skipped)
  int seeds = 1;
  std::string tasks_dir;  // as bench --suite jaxbench
  bool xla_estimate = true;
};

struct TpuGenerationResult {
  bool compiled = false;
  std::string compile_error;  // the compiler's refusal, one line
  // Kernels whose pallas_call the compiler refused, run in XLA glue instead: "kernel_N: why".
  std::vector<std::string> fallbacks;
  std::optional<double> modelled_s;
  std::string model_error;
  std::optional<double> xla_estimate_s;
  std::string xla_error;
};

struct TpuBenchRow {
  std::string id, name, dir;
  int pallas_kernels = 0, glue_kernels = 0;  // of the first generation; fused ones count as Pallas
  std::vector<std::string> glue_reasons;
  std::string check;  // "passed", "failed: ...", "skipped: ..."
  std::map<std::string, TpuGenerationResult> generations;
  std::string error;  // the workload could not be lowered at all
};

Result<std::vector<TpuBenchRow>> RunTpuBench(const TpuBenchOptions& options,
                                             const BenchProgress& progress);
nlohmann::json ToJson(const TpuBenchRow& row);
std::string FormatTpuTable(const std::vector<TpuBenchRow>& rows,
                           const std::vector<std::string>& generations);

}  // namespace mk::bench
