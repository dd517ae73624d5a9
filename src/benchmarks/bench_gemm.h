// `maxkernel bench --suite gemm`: square (or any) GEMMs C[M,N] = A[M,K] x B[K,N] as HLO modules,
// planned and implemented the way `optimize` starts (the planner's initial candidate, i.e. its
// analytical schedule, unless one is pinned), checked once, then timed interleaved with oneDNN
// and OpenBLAS, each run by maxkernel-baselines in its own process per round (with
// OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE removed from its environment).
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "benchmarks/bench.h"
#include "agents/engine.h"
#include "hlo/module.h"
#include "space/schedule.h"
#include "support/status.h"

namespace mk::bench {

using agents::BenchProtocol;
using agents::BenchSide;
using agents::CpuEngine;
using agents::RoundTimes;


struct GemmCase {
  int64_t m = 0, n = 0, k = 0;
  std::string dtype = "f32";      // operands: f32 or bf16
  std::string out_dtype = "f32";  // result: f32, or bf16 (the suite's convert after the dot)
  std::vector<std::string> from;  // the suite workloads whose GEMM this is (--suite-shapes)
};

// "gemm_f32_1024" (square) or "gemm_bf16_128x256x512"; the dtype column is "f32" or
// "bf16->f32" / "bf16->bf16".
std::string GemmCaseName(const GemmCase& c);
std::string GemmDtypeLabel(const GemmCase& c);
// The HLO module: a dot with f32 accumulation; for a bf16 result, a convert after it (exactly
// what JAX exports for a bf16 matmul).
std::string GemmModuleText(const GemmCase& c);
int64_t GemmFlops(const GemmCase& c);

// "256,512,1024" -> sizes; every size must be an integer in [1, 16384].
Result<std::vector<int64_t>> ParseGemmSizes(const std::string& text);
// "f32,bf16" -> dtypes (each f32 or bf16, no repeats).
Result<std::vector<std::string>> ParseGemmDtypes(const std::string& text);
// "512x2048x2048,256x8192x1024" -> MxNxK shapes (dtype unset), each extent in [1, 16384].
Result<std::vector<GemmCase>> ParseGemmShapes(const std::string& text);

// The plain GEMMs of a module's entry computation, as the cases `--suite gemm` times: dots with
// no batch dimensions whose operands are both f32 or both bf16, as M x N x K (free and
// contracting dimensions multiplied out; which operand dims are contracted is the packing's
// business, so each case is the row-major [M,K] x [K,N] one). The result is bf16 when the dot's
// only user converts it to bf16 (how JAX writes a bf16 matmul), else f32. In module order,
// repeats merged; `from` is left empty.
std::vector<GemmCase> GemmCasesOfModule(const hlo::Module& module);

struct GemmBenchOptions {
  std::vector<int64_t> sizes = {256, 512, 1024, 2048, 4096};  // square cases, each dtype
  std::vector<std::string> dtypes = {"f32", "bf16"};
  std::vector<GemmCase> shapes;       // MxNxK cases (--shapes), each dtype
  std::vector<GemmCase> suite_cases;  // the suite's GEMMs with their own dtypes (--suite-shapes)
  std::string bf16_result = "f32";  // result dtype of the bf16 cases: f32 or bf16
  int threads = 2;
  BenchProtocol protocol;
  // maxkernel-baselines; empty: no library baselines (the rows say so).
  std::string baselines_binary;
  std::vector<std::string> libs = {"onednn", "openblas"};
  // A pinned candidate (JSON as `optimize` stores it); absent: the planner's initial one.
  std::optional<nlohmann::json> schedule;
  // Up to this M·N·K the tester checks ours against the interpreter (one seed); above it the
  // interpreter is too slow and sampled entries are checked against a double reference.
  int64_t interpreter_check_limit = int64_t{512} * 512 * 512;
};

// The squares, then the shapes, then the suite's cases; a case met twice is timed once (its
// `from` lists merged).
std::vector<GemmCase> GemmCases(const GemmBenchOptions& options);

// `maxkernel-baselines info`: library versions and which dtypes each supports.
Result<nlohmann::json> BaselinesInfo(const std::string& binary);

// One library through maxkernel-baselines, one process per round.
class LibraryProcessSide final : public BenchSide {
 public:
  LibraryProcessSide(std::string binary, std::string lib, GemmCase c, int threads,
                     BenchProtocol protocol)
      : binary_(std::move(binary)),
        lib_(std::move(lib)),
        case_(std::move(c)),
        threads_(threads),
        protocol_(protocol) {}
  std::string name() const override { return lib_; }
  Result<RoundTimes> Round(int round) override;
  nlohmann::json Info() const override { return info_; }
  // The command line of one round (for tests and the report).
  std::vector<std::string> Argv() const;

 private:
  std::string binary_, lib_;
  GemmCase case_;
  int threads_;
  BenchProtocol protocol_;
  nlohmann::json info_ = nlohmann::json::object();
};

// Checks that `output` (the result of `c` on `inputs`) has no NaN and that sampled entries
// (corners, a diagonal, pseudo-random ones) are within the forward-error bound of a K-term dot
// product, 2·K·u·Σ|a·b| (u = 2^-24), of a double reference — plus half a bf16 ulp for a bf16
// result. Returns the one-line description of the check, or an error saying what is wrong.
Result<std::string> CheckGemmSampled(const GemmCase& c, const std::vector<hlo::Literal>& inputs,
                                     const hlo::Literal& output);

using BenchProgress = std::function<void(const std::string&)>;

// Every case of `options`: rows in order. Errors are for bad options or broken machinery; a case
// whose kernel fails to build or to check is a failed row.
Result<std::vector<BenchRow>> RunGemmBench(const GemmBenchOptions& options, CpuEngine& engine,
                                           const BenchProgress& progress);

}  // namespace mk::bench
