// Interleaved timing: competitors ("sides") timed in rounds, each side once per round in a fixed
// order, so that a shared, noisy machine disturbs all of them alike (DESIGN.md §5). The
// profiler's A/B comparisons, the comparison with XLA:CPU and every benchmark use it. A side is
// our kernel in the sandbox, XLA:CPU through the Python bridge, or a library in its own process
// (the benchmarks' baselines).
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "codegen/emitter.h"
#include "hlo/literal.h"
#include "runtime/compiler.h"
#include "runtime/sandbox.h"
#include "runtime/shared_region.h"
#include "support/status.h"

namespace mk::agents {

// Per round and side: `warmup` untimed calls, then timed calls until both `min_iterations` and
// `min_seconds` are reached (at most `max_iterations`).
struct BenchProtocol {
  int rounds = 5;
  int warmup = 1;
  int min_iterations = 3;
  double min_seconds = 0.3;
  int max_iterations = 100000;
  double timeout_s = 600;  // one round of one side
};
Status ValidateProtocol(const BenchProtocol& protocol);

// The times one round of one side produced. Sides that see every call (ours, the libraries)
// give one time per call; XLA through the bridge gives only its round's median.
struct RoundTimes {
  std::vector<double> times_s;
  bool medians_only = false;  // times_s holds one median per round, not per-call times
};

// One competitor of an interleaved measurement.
class BenchSide {
 public:
  virtual ~BenchSide() = default;
  virtual std::string name() const = 0;
  // Runs round `round` (0-based). An error ends this side's measurement (the others go on).
  virtual Result<RoundTimes> Round(int round) = 0;
  // What the side reported about itself (library version, ISA, ...), for the JSON.
  virtual nlohmann::json Info() const { return nlohmann::json::object(); }
};

struct SideResult {
  std::string name;
  std::vector<double> samples;        // every time measured (or the round medians, see below)
  std::vector<double> round_medians;  // one per completed round
  bool medians_only = false;
  double median_s = 0;  // median of `samples`
  std::string error;    // non-empty: the side failed (median_s is then 0)
  nlohmann::json info;
  bool ok() const { return error.empty() && median_s > 0; }
};

// Runs `rounds` rounds; in each round every side once, in the given order. `progress` (may be
// empty) hears one line per round.
std::vector<SideResult> RunInterleaved(const std::vector<BenchSide*>& sides, int rounds,
                                       const std::function<void(const std::string&)>& progress);

// Our implementation, timed in the sandbox on fixed inputs (written once into shared buffers;
// outputs poisoned before every call, as the profiler does).
class SandboxSide final : public BenchSide {
 public:
  static Result<std::unique_ptr<SandboxSide>> Create(runtime::SandboxRunner& sandbox,
                                                     const codegen::Implementation& impl,
                                                     const runtime::CompiledLibrary& library,
                                                     const std::vector<hlo::Literal>& inputs,
                                                     const BenchProtocol& protocol);
  std::string name() const override { return "ours"; }
  Result<RoundTimes> Round(int round) override;
  nlohmann::json Info() const override { return info_; }

 private:
  SandboxSide(runtime::SandboxRunner& sandbox, runtime::SharedRegion region,
              std::vector<size_t> outputs, std::string so_path, BenchProtocol protocol)
      : sandbox_(sandbox),
        region_(std::move(region)),
        outputs_(std::move(outputs)),
        so_path_(std::move(so_path)),
        protocol_(protocol) {}
  runtime::SandboxRunner& sandbox_;
  runtime::SharedRegion region_;
  std::vector<size_t> outputs_;
  std::string so_path_;
  BenchProtocol protocol_;
  std::vector<std::pair<std::string, std::string>> environment_;
  nlohmann::json info_ = nlohmann::json::object();
};

// XLA:CPU through the bridge, one `time` process per round (JAX start and jit compile happen
// before the bridge's clock starts). The bridge reports only the round's median.
class XlaBridgeSide final : public BenchSide {
 public:
  // `threads`: the CPUs XLA:CPU may run on (the bridge narrows its affinity before JAX starts).
  XlaBridgeSide(std::string task_dir, BenchProtocol protocol, int threads)
      : task_dir_(std::move(task_dir)), protocol_(protocol), threads_(threads) {}
  std::string name() const override { return "xla"; }
  Result<RoundTimes> Round(int round) override;
  nlohmann::json Info() const override { return info_; }

 private:
  std::string task_dir_;
  BenchProtocol protocol_;
  int threads_;
  nlohmann::json info_ = nlohmann::json::object();
};

// "1.234 ms", "2.50 s", "12.3 us".
std::string FormatSeconds(double seconds);

double MedianOf(std::vector<double> values);

}  // namespace mk::agents
