// Issue 35, item 3's proof over the store: the search's lower bound (lower_bound.h) is at most
// the measured time of every measurement the store holds that was taken on this CPU model and
// ISA. `maxkernel bound-check` runs it; a violation means the bound would have pruned a point
// that was in fact faster, so it exits 1.
//
// Each CPU run's module is planned again (its stored artifact, this host's target with the
// store's machine probe rates, as the next search would bound it), each measured candidate's
// schedule becomes the fixed values of its kernels, and its bound is compared with the median.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/artifact_store.h"
#include "store/store.h"
#include "support/status.h"
#include "target/target.h"

namespace mk::modes::search {

struct BoundViolation {
  int64_t run_id = 0, candidate_id = 0;
  double bound_s = 0, measured_s = 0;
  std::string schedule_json;
};

struct BoundCheckReport {
  std::string cpu_model, isa_level;
  int64_t runs_checked = 0;
  int64_t measurements_checked = 0;
  int64_t measurements_other_machine = 0;  // taken on another CPU model or ISA: not evidence here
  std::vector<std::string> runs_skipped;   // "run 7: target tpu-v5e", with the reason
  std::vector<BoundViolation> violations;
  std::optional<double> median_bound_over_measured;
  bool ok() const { return violations.empty(); }
};

// Every run, or only `run`. Errors are the store's; a run that cannot be planned again (its
// module missing, a target other than this host's CPU) is skipped with the reason.
Result<BoundCheckReport> CheckBoundOverStore(store::Store& db, const store::ArtifactStore& artifacts,
                                             const target::Target& host,
                                             std::optional<int64_t> run = std::nullopt);

// {"cpu_model", "isa_level", "runs_checked", "measurements_checked", "measurements_other_machine",
//  "runs_skipped": [...], "violations": [{"run", "candidate", "bound_s", "measured_s",
//  "schedule"}], "median_bound_over_measured", "ok"}
nlohmann::json ToJson(const BoundCheckReport& report);

}  // namespace mk::modes::search
