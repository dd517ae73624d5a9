// How `maxkernel search` (and `optimize --mode search`) explores: the algorithm and its knobs.
// Stored with the run, so a resumed search rebuilds the same proposer.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "support/status.h"

namespace mk::modes::search {

enum class Algorithm { kAstar, kBeam, kRandom, kExhaustive, kEvolutionary };

struct SearchOptions {
  Algorithm algorithm = Algorithm::kAstar;
  // Weighted A*: a node's priority is bound × epsilon (≥ 1); 1 is plain A*. A candidate whose
  // bound exceeds the best measured time / epsilon is pruned (what weighted A* gives up for speed).
  double epsilon = 1.0;
  int beam_width = 8;  // beam search: nodes kept per depth
  // Start from the planner's analytical values (false: from each domain's median value; the
  // fitted rules then only shape the domains, not the order).
  bool analytical_init = true;
  // Order the frontier with a cost model retrained on the run's measurements (astar, beam), or
  // rank each generation's children with it (evolutionary).
  bool use_model = true;
  // The frontier's size cap: past it the worst-bound nodes are dropped (counted, not pruned).
  int64_t max_frontier = 200000;
  // The fusion choices of the plan (analysis::FusionChoicesOf) that are decisions of the graph,
  // those whose flip alone moves the plan's roofline bound most first; the others keep the
  // planner's choice. 0: the planner's kernels are fixed (a stored run from before fusion
  // decisions existed resumes so). Each one at most doubles the plans searched.
  int fusion_decisions = 4;
  static constexpr int kMaxFusionDecisions = 8;
};

Result<Algorithm> ParseAlgorithm(const std::string& name);
const char* AlgorithmName(Algorithm a);
nlohmann::json ToJson(const SearchOptions& o);
Result<SearchOptions> SearchOptionsFromJson(const nlohmann::json& j);

}  // namespace mk::modes::search
