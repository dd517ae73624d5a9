// maxkernel-baselines: times one GEMM with a hand-tuned library (oneDNN or OpenBLAS) and prints
// JSON. `maxkernel bench` runs it once per round and library, in its own process, so the
// libraries never share a process (or a thread pool) with each other or with maxkernel.
//
//   maxkernel-baselines gemm --lib onednn|openblas --m M --n N --k K --dtype f32|bf16
//       [--out-dtype f32|bf16] [--threads T] [--warmup W] [--min-iterations I] [--min-time S]
//   maxkernel-baselines info
//
// Exit codes: 0 timed and checked; 1 the library failed or gave a wrong result; 2 bad input;
// 3 the library has no kernel for this case on this CPU (printed as {"lib", "skipped"}).
//
// OpenBLAS reads OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE when it is loaded; with them set as some
// machines set them it runs an older kernel set (Haswell/AVX2 on an AVX-512 CPU). Unless
// --keep-openblas-env is given, the process therefore re-executes itself without them, so the
// library picks its kernels for the CPU it runs on. The JSON says what it saw.
//
// Exit codes: 0 timed and checked, 1 the library failed or its result is wrong, 2 bad input or
// a combination the library does not support.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench_baselines/gemm_problem.h"
#include "bench_baselines/library.h"

namespace mk::baselines {
namespace {

using nlohmann::json;

constexpr const char* kOpenBlasEnv[] = {"OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"};

// Re-executes this program without the OpenBLAS overrides; returns only if that is not needed
// or not possible (then the JSON shows the variables that stayed).
void DropOpenBlasOverrides(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--keep-openblas-env") return;
  }
  bool set = false;
  for (const char* name : kOpenBlasEnv) {
    if (std::getenv(name) != nullptr) {
      unsetenv(name);
      set = true;
    }
  }
  if (!set) return;
  execv("/proc/self/exe", argv);
  std::perror("maxkernel-baselines: re-executing without OPENBLAS_* overrides failed");
}

json EnvironmentSeen() {
  json env = json::object();
  for (const char* name : kOpenBlasEnv) {
    const char* v = std::getenv(name);
    env[name] = v ? json(v) : json(nullptr);
  }
  const char* omp = std::getenv("OMP_NUM_THREADS");
  env["OMP_NUM_THREADS"] = omp ? json(omp) : json(nullptr);
  return env;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The case is valid but the library has no kernel for it on this CPU.
constexpr int kExitUnsupported = 3;

struct GemmArgs {
  std::string lib;
  GemmProblem problem;
  int threads = 1;
  TimingOptions timing;
  bool keep_env = false;
};

int RunGemm(const GemmArgs& args) {
  const GemmProblem& p = args.problem;
  if (p.m < 1 || p.n < 1 || p.k < 1) {
    std::cerr << "maxkernel-baselines: --m, --n and --k must be at least 1\n";
    return 2;
  }
  GemmData data = MakeGemmData(p);
  PreparedGemm g = args.lib == "onednn" ? PrepareOneDnn(p, data, args.threads)
                                        : PrepareOpenBlas(p, data, args.threads);
  if (!g.error.empty()) {
    std::cerr << "maxkernel-baselines: " << g.error << "\n";
    if (!g.unsupported) return 2;
    // Not bad input: this library cannot run this case here. Said on stdout too, for bench.
    std::cout << json{{"lib", args.lib}, {"skipped", g.error}}.dump() << "\n";
    return kExitUnsupported;
  }
  std::vector<double> times;
  CheckResult check;
  try {
    times = TimeCalls(g.call, args.timing);
    // The checked call comes after the timed ones, on a NaN-poisoned output.
    PoisonOutput(data);
    g.call();
    check = CheckOutput(p, data);
  } catch (const std::exception& e) {
    std::cerr << "maxkernel-baselines: " << args.lib << ": " << e.what() << "\n";
    return 1;
  }
  const double median = Median(times);
  const double flops =
      2.0 * static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k);
  json out = {{"lib", args.lib},
              {"api", g.api},
              {"version", g.version},
              {"isa", g.isa},
              {"details", g.details},
              {"m", p.m},
              {"n", p.n},
              {"k", p.k},
              {"dtype", p.dtype},
              {"out_dtype", p.out_dtype},
              {"threads", args.threads},
              {"warmup", args.timing.warmup},
              {"times_s", times},
              {"median_s", median},
              {"gflops", median > 0 ? flops / median / 1e9 : 0.0},
              {"check", ToJson(check)},
              {"env", EnvironmentSeen()}};
  std::cout << out.dump() << "\n";
  if (!check.passed) {
    std::cerr << "maxkernel-baselines: " << args.lib << " " << g.api
              << " gave a wrong result: " << check.message << "\n";
    return 1;
  }
  return 0;
}

int Main(int argc, char** argv) {
  DropOpenBlasOverrides(argc, argv);
  CLI::App app{"maxkernel-baselines: GEMM timings of oneDNN and OpenBLAS for `maxkernel bench`"};
  app.require_subcommand(1);

  GemmArgs g;
  CLI::App* gemm =
      app.add_subcommand("gemm", "Time C[M,N] = A[M,K] x B[K,N] (row-major), print JSON");
  gemm->add_option("--lib", g.lib, "onednn or openblas")
      ->required()
      ->check(CLI::IsMember({"onednn", "openblas"}));
  gemm->add_option("--m", g.problem.m, "rows of A and C")->required();
  gemm->add_option("--n", g.problem.n, "columns of B and C")->required();
  gemm->add_option("--k", g.problem.k, "the contracted dimension")->required();
  gemm->add_option("--dtype", g.problem.dtype, "operand type: f32 or bf16")
      ->check(CLI::IsMember({"f32", "bf16"}))
      ->capture_default_str();
  gemm->add_option("--out-dtype", g.problem.out_dtype, "result type: f32 or bf16")
      ->check(CLI::IsMember({"f32", "bf16"}))
      ->capture_default_str();
  gemm->add_option("--threads", g.threads, "library threads")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  gemm->add_option("--warmup", g.timing.warmup, "untimed calls first")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  gemm->add_option("--min-iterations", g.timing.min_iterations, "timed calls, at least")
      ->check(CLI::Range(1, 100000000))
      ->capture_default_str();
  gemm->add_option("--max-iterations", g.timing.max_iterations, "timed calls, at most")
      ->check(CLI::Range(1, 100000000))
      ->capture_default_str();
  gemm->add_option("--min-time", g.timing.min_time_s, "seconds of timed calls, at least")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  gemm->add_option("--seed", g.problem.seed, "seed of the random inputs")->capture_default_str();
  gemm->add_flag("--keep-openblas-env", g.keep_env,
                 "keep OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE (default: removed)");

  CLI::App* info = app.add_subcommand("info", "Library versions and supported dtypes as JSON");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  if (info->parsed()) {
    json libs = json::object();
    libs["onednn"] = ToJson(OneDnnInfo());
    libs["openblas"] = ToJson(OpenBlasInfo());
    std::cout << json{{"libs", libs}, {"env", EnvironmentSeen()}}.dump() << "\n";
    return 0;
  }
  if (g.timing.max_iterations < g.timing.min_iterations) {
    std::cerr << "maxkernel-baselines: --max-iterations must be >= --min-iterations\n";
    return 2;
  }
  return RunGemm(g);
}

}  // namespace

json ToJson(const LibraryInfo& info) {
  return {{"version", info.version},
          {"dtypes", info.dtypes},
          {"bf16_out", info.bf16_outs},
          {"details", info.details}};
}

}  // namespace mk::baselines

int main(int argc, char** argv) {
  return mk::baselines::Main(argc, argv);
}
