// What a driver asks for the next candidate: the one interface the auto loop (modes/auto) runs
// every proposer through, whether it is the neighbourhood walk or a search over the decision
// graph (modes/search). The loop records every evaluated candidate back into it, including the
// ones replayed from the store when a run resumes, so a proposer rebuilt after SIGKILL sees the
// same history and proposes nothing it already tried.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "space/schedule.h"

namespace mk::modes {

class Proposer {
 public:
  virtual ~Proposer() = default;
  // An evaluated candidate: its time when it was correct and measured, nullopt when it failed.
  virtual void Record(const space::Candidate& candidate, std::optional<double> time_s) = 0;
  // The next untried candidate, or nullopt when it has none left.
  virtual std::optional<space::Candidate> Next() = 0;
  virtual bool Tried(const space::Candidate& candidate) const = 0;
  // What it did, for the result JSON ("search": counts of pruned points, the frontier, ...).
  virtual nlohmann::json Stats() const { return nlohmann::json::object(); }
  // The part of the search graph it explored, in Graphviz form ("" when it has no graph).
  virtual std::string GraphDot() const { return ""; }
};

}  // namespace mk::modes
