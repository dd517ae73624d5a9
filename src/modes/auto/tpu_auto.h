// `maxkernel optimize --target tpu-*` (issue 31): the auto loop for a TPU target, which has no
// hardware here. The TPU performance model is the profiler: candidates of the Pallas emitter's
// declared space are proposed by the search (modes/search; astar by default) and each is
// emitted and modelled, which takes milliseconds. The best by modelled time is then checked the
// way every kernel is: its Pallas module runs in TPU interpret mode against the interpreter on
// fresh seeds (races and out-of-bounds reads fail it), and the real TPU compiler builds it
// compile-only; a kernel whose pallas_call the compiler refuses falls back to XLA glue first
// (agents/tpu_fallback.h; the fallen-back module is stored as a candidate of its own and listed
// under "tpu"."glue_fallback"), and a candidate that still fails gives way to the next best. XLA:TPU's own
// estimate of the reference (libtpu's cost analysis) is the baseline: their quotient is a
// "modelled ratio", never a speedup. Every candidate is stored like a CPU run's (its
// implementation as an artifact, its modelled time as a measurement whose environment says
// "modelled"), so `export --format pallas` reads it back.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "modes/search/search_options.h"
#include "store/artifact_store.h"
#include "store/store.h"
#include "target/target.h"

namespace mk::modes {

struct TpuAutoRequest {
  std::string task_dir;
  target::Target tpu;                 // kind kTpu
  int budget = 64;                    // candidates modelled
  search::SearchOptions search;       // the proposer (its model is off: the TPU model is cheap)
  uint64_t seed = 0;
  int test_seeds = 2;                 // interpret-mode checks of the chosen candidate
  int max_checked = 3;                // candidates checked before giving up
  double run_timeout_s = 600;
  bool xla_estimate = true;           // ask libtpu for XLA:TPU's estimate of the reference
};

// The result JSON ("maxkernel.optimize.result/1" with target.kind "tpu" and a "tpu" section).
Result<nlohmann::json> RunTpuAuto(const TpuAutoRequest& request, store::Store& db,
                                  store::ArtifactStore& artifacts);

}  // namespace mk::modes
