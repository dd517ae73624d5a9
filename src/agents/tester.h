// The tester agent: is an implementation of a task correct? For each seed it generates fresh
// inputs with the task's generators (task/inputs.h), runs the implementation in the sandbox with
// every output buffer poisoned with NaN bytes first (so a kernel that skips writing fails), runs
// the interpreter (the oracle) on the same inputs, and compares every element:
//   |got - want| <= atol + rtol * |want|      (NaN must meet NaN, an infinity the same infinity)
// The request and the report are plain data with JSON forms (DESIGN.md §4), so a check can run
// in another process and its result can be stored.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agents/engine.h"
#include "agents/target_runner.h"
#include "codegen/emitter.h"
#include "hlo/literal.h"
#include "support/status.h"
#include "task/task.h"

namespace mk::agents {

struct TestRequest {
  // What to check: a task directory (task.yaml + module.hlo), or an HLO module file with the
  // default generators (floats normal(0,1), integers randint [0,4), pred [0,2)).
  std::string task_dir;
  std::string module_path;
  // The implementation under test; when absent the CPU engine generates one from the module.
  std::optional<codegen::Implementation> implementation;
  // Seeds of the inputs; when empty, `num_seeds` seeds starting at the task's seed.
  std::vector<uint64_t> seeds;
  int num_seeds = 3;
  // Override every output's tolerance (defaults: the task's; 1e-5 / 1e-5 for a bare module).
  std::optional<double> atol, rtol;
  double timeout_s = 60;  // per run of the kernel, load included
  // In-process only (not part of the JSON form): the oracle's outputs per seed, filled on first
  // use and reused by later requests on the same module, so an optimization run interprets each
  // seed once instead of once per candidate. Must only be shared between requests that name
  // the same task or module.
  std::shared_ptr<std::map<uint64_t, std::vector<hlo::Literal>>> reference_cache;
  // In-process only: limits on the oracle (the reference interpreter), which runs in this
  // process. Each interpretation stops after `oracle_timeout_s` (0: no per-seed limit), at
  // `deadline`, or once `*cancel` is true; RunTester then fails with ErrorCode::kCancelled.
  double oracle_timeout_s = 0;
  std::optional<std::chrono::steady_clock::time_point> deadline;
  const std::atomic<bool>* cancel = nullptr;
  // In-process only: directory of the on-disk cache of the oracle's outputs
  // (tester_reference_cache.h); empty: none.
  std::string reference_cache_dir;
};

// The comparison of one output for one seed.
struct OutputCheck {
  int index = 0;
  hlo::Shape shape;
  double atol = 0, rtol = 0;
  // "pass", "mismatch", or "unwritten" (every byte still holds the NaN poison).
  std::string status = "pass";
  bool passed() const { return status == "pass"; }
  // Over elements where both values are finite; relative error only where want != 0.
  double max_abs_err = 0, max_rel_err = 0;
  int64_t mismatches = 0;
  // Multi-index (row-major dims) of the first element out of tolerance, with both values.
  std::optional<std::vector<int64_t>> first_mismatch;
  double first_got = 0, first_want = 0;
  int64_t nan_got = 0, nan_want = 0;
  std::string message;  // one line for people: "output 0 was not written (NaN poison left)"
};

struct SeedResult {
  uint64_t seed = 0;
  // "passed", "mismatch", "crashed", "timed-out", "out-of-memory", "load-failed",
  // "internal-error", "race" / "out-of-bounds" (TPU interpret mode), or "skipped" (a previous
  // seed timed out: waiting again tells nothing).
  std::string status = "passed";
  std::string message;
  double run_seconds = 0;
  std::vector<OutputCheck> outputs;  // empty unless the kernel ran to completion
  bool passed() const { return status == "passed"; }
};

struct TestReport {
  // "passed", "failed" (a seed did not pass), "build-failed" (the compiler rejected the
  // source), "lower-failed" (the module could not be lowered, e.g. an op without an emitter).
  std::string status = "passed";
  std::string message;      // for build/lower failures: the first error, the kept source
  std::string task_id;      // empty for a bare module
  std::string module_name;
  std::string target = "cpu";
  std::string implementation_hash;
  std::string source_path;  // the kept source of the build (compile cache)
  std::vector<SeedResult> seeds;
  bool passed() const { return status == "passed"; }
};

// Checks one implementation. An error is returned only for bad input (an unreadable task or
// module, inputs that cannot be generated) or when the oracle itself fails; every failure of
// the implementation is a report.
Result<TestReport> RunTester(const TestRequest& request, CpuEngine& engine);
// The same for any target (a TPU target's Pallas module in interpret mode: tpu_runner.h).
Result<TestReport> RunTester(const TestRequest& request, TargetRunner& runner);

// Compares `got` with `want` (same array shape) within atol/rtol. `poison_byte` identifies an
// output the kernel never wrote.
OutputCheck CompareOutput(const hlo::Literal& got, const hlo::Literal& want, double atol,
                          double rtol, uint8_t poison_byte = 0xFF);

// The task a bare module implies: default generators, seed 0, tolerance 1e-5 / 1e-5.
Result<task::Task> TaskForModule(const hlo::Module& module, const std::string& path);

// "[2, 0, 5]" for a multi-index.
std::string FormatIndex(const std::vector<int64_t>& index);

// A human-readable report: one line per seed and output.
std::string FormatReport(const TestReport& report);

nlohmann::json ToJson(const TestRequest& request);
Result<TestRequest> TestRequestFromJson(const nlohmann::json& j);
nlohmann::json ToJson(const TestReport& report);
Result<TestReport> TestReportFromJson(const nlohmann::json& j);

}  // namespace mk::agents
