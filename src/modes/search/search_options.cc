#include "modes/search/search_options.h"

#include <cmath>

namespace mk::modes::search {

Result<Algorithm> ParseAlgorithm(const std::string& name) {
  for (Algorithm a : {Algorithm::kAstar, Algorithm::kBeam, Algorithm::kEvolutionary, Algorithm::kRandom,
                      Algorithm::kExhaustive}) {
    if (name == AlgorithmName(a)) return a;
  }
  return InvalidArgument("unknown search algorithm '" + name +
                         "' (astar, beam, evolutionary, random, exhaustive)");
}

const char* AlgorithmName(Algorithm a) {
  switch (a) {
    case Algorithm::kAstar: return "astar";
    case Algorithm::kBeam: return "beam";
    case Algorithm::kRandom: return "random";
    case Algorithm::kExhaustive: return "exhaustive";
    case Algorithm::kEvolutionary: return "evolutionary";
  }
  return "?";
}

nlohmann::json ToJson(const SearchOptions& o) {
  return {{"algorithm", AlgorithmName(o.algorithm)},
          {"epsilon", o.epsilon},
          {"beam_width", o.beam_width},
          {"analytical_init", o.analytical_init},
          {"use_model", o.use_model},
          {"max_frontier", o.max_frontier},
          {"fusion_decisions", o.fusion_decisions}};
}

Result<SearchOptions> SearchOptionsFromJson(const nlohmann::json& j) {
  SearchOptions o;
  if (!j.is_object()) return InvalidArgument("search options must be a JSON object");
  try {
    MK_ASSIGN_OR_RETURN(o.algorithm, ParseAlgorithm(j.value("algorithm", std::string("astar"))));
    o.epsilon = j.value("epsilon", o.epsilon);
    o.beam_width = j.value("beam_width", o.beam_width);
    o.analytical_init = j.value("analytical_init", o.analytical_init);
    o.use_model = j.value("use_model", o.use_model);
    o.max_frontier = j.value("max_frontier", o.max_frontier);
    o.fusion_decisions = j.value("fusion_decisions", 0);
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument(std::string("damaged search options: ") + e.what());
  }
  if (!(o.epsilon >= 1) || !std::isfinite(o.epsilon)) {
    return InvalidArgument("--epsilon must be a finite number >= 1");
  }
  if (o.fusion_decisions < 0 || o.fusion_decisions > SearchOptions::kMaxFusionDecisions) {
    return InvalidArgument("--fusion-decisions must be between 0 and " +
                           std::to_string(SearchOptions::kMaxFusionDecisions));
  }
  if (o.beam_width < 1) return InvalidArgument("--beam-width must be at least 1");
  if (o.max_frontier < 16) return InvalidArgument("the frontier cap must be at least 16");
  return o;
}

}  // namespace mk::modes::search
