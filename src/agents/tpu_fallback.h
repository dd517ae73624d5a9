// The glue fallback of the TPU target: when the real TPU compiler refuses (or crashes on) a
// module, the per-kernel diagnosis (TpuRunner's build message and last_compile()["kernels"])
// names the pallas_calls it refused. Those kernels are emitted again as jnp glue, which XLA:TPU
// compiles itself, and the module is built again, until it compiles or nothing more can fall
// back. The result is a module a TPU accepts with the refused kernels in XLA, and the kernel map
// and the report say which fell back and what the compiler said; a fallback is never silent.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agents/target_runner.h"
#include "agents/tpu_runner.h"
#include "analysis/fusion_plan.h"
#include "space/schedule.h"

namespace mk::agents {

struct GlueFallback {
  int64_t kernel_id = 0;
  std::string function;  // "kernel_12"
  std::string reason;    // the compiler's refusal, one line
};
nlohmann::json ToJson(const GlueFallback& f);

// The kernels a per-kernel compile report (TpuRunner::last_compile()["kernels"]) refused or
// crashed in: kernel id -> one line saying why. Entries that are not "kernel_N" are skipped.
std::map<int64_t, std::string> RefusedKernels(const nlohmann::json& kernels);

struct TpuBuilt {
  space::Candidate candidate;  // the schedules emitted, glue_fallback set where a kernel fell back
  codegen::Implementation implementation;
  BuildOutcome build;          // the last build: ok, or the refusal nothing could fall back from
  std::vector<GlueFallback> fallbacks;
  int builds = 0;              // whole-module compiles it took
  bool stopped_by_time = false;  // refused kernels were left in Pallas: the time cap was reached
};
nlohmann::json ToJson(const TpuBuilt& b);

// The wall time the fallback may spend in all its builds together. Each round is a
// whole-module compile and, when it fails, a per-kernel compile (each up to 600 s in the
// runner), so four rounds of a module libtpu is slow on could run over an hour: 25k's bench
// module ran more than 25 minutes before it was stopped (session 26).
inline constexpr double kGlueFallbackMaxSeconds = 1200;

// Emits `candidate` for `plan` and builds it with `runner`, falling back as above for at most
// `max_rounds` rebuilds, and no further round once the time spent plus the last round's would
// pass `max_seconds`: the last build's message then says where it stopped and why. `clock`
// gives seconds (a steady clock when empty; tests pass their own). An error only when
// emission fails or the toolchain is unusable; a module that still does not compile is a
// TpuBuilt whose build is not ok.
Result<TpuBuilt> BuildWithGlueFallback(TpuRunner& runner, const analysis::FusionPlan& plan,
                                       space::Candidate candidate, int max_rounds = 4,
                                       double max_seconds = kGlueFallbackMaxSeconds,
                                       const std::function<double()>& clock = {});

// The planner's initial candidate of `module` (as TpuRunner::Lower), built with the fallback.
Result<TpuBuilt> LowerAndBuildWithGlueFallback(TpuRunner& runner, const hlo::Module& module,
                                               int max_rounds = 4,
                                               double max_seconds = kGlueFallbackMaxSeconds,
                                               const std::function<double()>& clock = {});

}  // namespace mk::agents
