// The genetic operators of the `evolutionary` search (issue 35, item 5; Ansor-like): children
// of a population of complete, measured points of the decision graph. This file only breeds;
// GraphSearch (graph_search.h) decides which children are worth measuring: it drops the illegal,
// the already tried and those the bound rules out, ranks the rest by the cost model (by the
// bound without one) and proposes the best few of each generation.
#pragma once

#include <cstddef>
#include <random>
#include <vector>

#include "modes/search/decision_graph.h"

namespace mk::modes::search {

// A measured point: its complete node and its time.
struct Individual {
  Node node;
  double time_s = 0;
};

class Evolution {
 public:
  // Parents: the kPopulation fastest points measured so far.
  static constexpr size_t kPopulation = 16;
  // Children bred per generation, before the filters and the ranking ...
  static constexpr size_t kChildren = 128;
  // ... and how many of them each generation proposes. Small: the loop measures one candidate at
  // a time, so a short generation lets the next one breed from what was just measured.
  static constexpr size_t kProposals = 4;
  // Fewer measured points than this: a generation is random points (no parents to breed from).
  static constexpr size_t kMinParents = 2;

  explicit Evolution(const DecisionGraph& graph) : graph_(graph) {}

  // `count` children of `population` (sorted fastest first, at least kMinParents): each a
  // crossover of two parents (half of them) or a copy of one, then mutated (every copy; a
  // crossover with probability 1/2). Parents are picked by a tournament of two, so the faster
  // breed more. Children may repeat, be illegal or be a parent: the caller filters.
  std::vector<Node> Children(const std::vector<Individual>& population, size_t count,
                             std::mt19937_64& rng) const;
  // `parent` with one decision set to another value of its domain: a neighbouring value (the
  // domains are ordered) or, as often, any other. A graph without a decision of two values
  // returns the parent.
  Node Mutate(const Node& parent, std::mt19937_64& rng) const;
  // A mix of two parents: per kernel (all of a kernel's decisions from one parent) or per
  // decision, each with probability 1/2.
  Node Crossover(const Node& a, const Node& b, std::mt19937_64& rng) const;
  // A uniform complete node.
  Node Random(std::mt19937_64& rng) const;

 private:
  const Individual& Tournament(const std::vector<Individual>& population, std::mt19937_64& rng) const;
  const DecisionGraph& graph_;
};

}  // namespace mk::modes::search
