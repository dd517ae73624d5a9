// The search algorithms over the decision graph, behind the one Proposer interface the auto
// loop drives (issue 35, item 5). Every algorithm spends the same budget, measurements: the loop
// counts them, and a duplicate (same candidate, or the same library bytes) costs nothing.
//
// - astar: best-first by f(n) = the lower bound of n (lower_bound.h), weighted by epsilon; a
//   node whose bound exceeds the best measured time (divided by epsilon) is pruned with every
//   point below it, before any hardware is touched. Among nodes of equal f the one closest to
//   the start point (fewest non-start choices), then the deepest, goes first: until a learned
//   model orders the frontier, that makes the walk a widening ring around the start.
// - beam: level by level, keeping the beam_width nodes of lowest (f, distance); its last level
//   is measured in order, then the beam doubles and the walk repeats over what is untried.
// - random: uniform complete points (the baseline the others must beat); no pruning.
// - exhaustive: every point in decision order (lexicographic over the value indices).
// - evolutionary (Ansor-like): the start point, then generations bred from the fastest points
//   measured so far (evolutionary.h: mutation and crossover; random points until two are
//   measured). Each generation's children that are illegal, already tried or ruled out by the
//   bound are dropped (the bound ones counted as pruned, under the decision whose prefix
//   exceeded it); the rest are ranked by the cost model (higher score first) or, without one, by
//   their bound, and the best few are proposed, with one random point for exploration. When
//   breeding finds nothing new, it sweeps what is left (random points, then decision order).
// No algorithm proposes a point that violates a kernel's joint constraint: astar and beam prune a
// node as soon as the values it fixes violate one, random and exhaustive skip such a point; each
// counts as pruned under "constraint <name>".
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <queue>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "modes/proposer.h"
#include "modes/search/cost_model.h"
#include "modes/search/decision_graph.h"
#include "modes/search/evolutionary.h"
#include "modes/search/features.h"
#include "modes/search/lower_bound.h"
#include "modes/search/search_options.h"

namespace mk::modes::search {

class GraphSearch final : public Proposer {
 public:
  GraphSearch(DecisionGraph graph, LowerBound bound, SearchOptions options, uint64_t seed);
  // A graph with fusion decisions: one bound per plan variant (DecisionGraph::variant).
  GraphSearch(DecisionGraph graph, std::vector<LowerBound> bounds, SearchOptions options,
              uint64_t seed);

  // Orders the frontier with a cost model from here on: `prior` (trained elsewhere, e.g. on the
  // suite) until this run has measured kMinRowsToTrain candidates, then one retrained on them.
  void UseModel(FeatureMap features, std::optional<CostModel> prior = std::nullopt);
  // The same with any feature function of `columns` floats per candidate: the search benchmark
  // replays a measured table whose rows were computed when it was measured (bench_search.h).
  using Featurizer = std::function<std::vector<float>(const space::Candidate&)>;
  void UseModel(Featurizer features, size_t columns, std::optional<CostModel> prior = std::nullopt);
  static constexpr size_t kMinRowsToTrain = 4;

  void Record(const space::Candidate& candidate, std::optional<double> time_s) override;
  std::optional<space::Candidate> Next() override;
  bool Tried(const space::Candidate& candidate) const override;
  // {"algorithm", "space_size", "decisions", "proposed", "expanded", "frontier",
  //  "fusion_decisions": [{key, planner_fuses, description}],
  //  "variants": [{fusion, kernels (ids), space_size}] (the plans the fusion decisions give),
  //  "pruned_points" (saturating at 2^62), "space_size_approx", "pruned_share" (from
  //  unsaturated counts), "pruned_by": [{"decision", "points"}], "dropped_points",
  //  "best_s", "generations" (evolutionary; 0 otherwise), "predicted": 0, "model": null,
  //  "admissibility": {"checked", "violations": [{"bound_s", "measured_s", "candidate"}], "ok",
  //                    "median_bound_over_measured", "bound_scale" (1, or what the bound was
  //                    scaled by after a violation, so that pruning stays sound)}}
  nlohmann::json Stats() const override;

  // The model this run trained on its own measurements (to persist; model_store.h); null
  // while it has none (fewer than kMinRowsToTrain measured, or it still runs on the prior).
  const CostModel* TrainedModel() const {
    return model_ && !model_is_prior_ && retrained_ > 0 ? &*model_ : nullptr;
  }
  size_t TrainedRows() const { return trained_rows_; }
  // The model it ranks with now: the trained one, else the prior; null without one.
  const CostModel* CurrentModel() const { return model_ ? &*model_ : nullptr; }

  // The bound of a complete candidate (every value fixed).
  double BoundOf(const space::Candidate& c) const;
  const DecisionGraph& graph() const { return graph_; }
  // The nodes expanded so far with their bounds, for `--graph FILE` (DOT); at most `limit`.
  std::string ExploredDot(size_t limit = 2000) const;
  std::string GraphDot() const override { return ExploredDot(); }

 private:
  struct Entry {
    double f = 0;
    float score = 0;   // the cost model's (higher: predicted faster); 0 without one
    int distance = 0;  // choices that differ from the start
    Node node;
    uint64_t seq = 0;
  };
  struct Worse {
    bool operator()(const Entry& a, const Entry& b) const;
  };
  double BoundOfNode(const Node& n) const;
  double PruneLimit() const;
  void Prune(const Node& n, double f);
  // Prunes `n` (and every point below it) for violating `c`: reason "constraint <name>".
  void PruneIllegal(const Node& n, const space::Constraint& c);
  // Why `n` was pruned: the decision it took last ("kernel 0 threads=1").
  std::string PruneReason(const Node& n) const;
  std::optional<space::Candidate> NextAstar();
  std::optional<space::Candidate> NextBeam();
  std::optional<space::Candidate> NextRandom();
  std::optional<space::Candidate> NextExhaustive();
  std::optional<space::Candidate> NextEvolutionary();
  // One generation of the evolutionary search: its proposals go to evo_queue_.
  void Breed();
  // A bred node worth ranking: legal, untried, within the bound (counting what it drops).
  std::optional<Entry> Admit(Node n);
  // Counts one complete point the bound rules out (once), under the decision whose prefix
  // first exceeded the limit.
  void PrunePoint(const Node& n);
  // The fastest measured points, fastest first (at most Evolution::kPopulation).
  std::vector<Individual> Parents() const;
  Entry MakeEntry(Node n, int distance);
  // Scores `entries` with the model (no-op without one).
  void Score(std::vector<Entry>& entries);
  void Retrain();
  bool Propose(const Node& n, space::Candidate& out);

  DecisionGraph graph_;
  std::vector<LowerBound> bounds_;  // per variant
  // Per variant, the bound of its root (nothing but its fusion fixed), computed once.
  mutable std::vector<double> root_bounds_;
  SearchOptions options_;
  std::mt19937_64 rng_;
  std::priority_queue<Entry, std::vector<Entry>, Worse> frontier_;
  uint64_t seq_ = 0;
  bool started_ = false;
  bool start_offered_ = false;  // astar and beam with a prior: the start was proposed first
  std::set<std::string> tried_;
  std::optional<double> best_s_;
  // 1, or the least measured/bound ratio once a measurement came in under its bound (PruneLimit).
  double bound_scale_ = 1.0;
  uint64_t proposed_ = 0, expanded_ = 0;
  uint64_t pruned_points_ = 0, dropped_points_ = 0;
  double pruned_weight_ = 0;  // pruned_points_ unsaturated (DecisionGraph::CompletionsApprox)
  std::map<std::string, uint64_t> pruned_by_;
  std::set<Node> illegal_;  // the nodes PruneIllegal counted
  std::vector<std::pair<Node, std::string>> explored_;
  // beam
  std::vector<Node> beam_queue_;
  int beam_width_ = 0;
  // exhaustive
  std::optional<Node> cursor_;
  bool exhausted_ = false;
  // evolutionary
  std::map<Node, double> measured_;  // every measured point's best time
  std::deque<Node> evo_queue_;
  std::set<Node> bound_pruned_;  // the points PrunePoint counted
  uint64_t generations_ = 0;
  // the cost model
  Featurizer features_;  // empty: no model
  size_t feature_columns_ = 0;
  std::optional<CostModel> model_;
  bool model_is_prior_ = false;
  RankingData run_rows_;
  std::vector<double> run_times_;
  size_t trained_rows_ = 0;
  uint64_t predicted_ = 0, retrained_ = 0;
  std::string model_error_;
  // admissibility: (bound, measured) of every measured candidate
  std::vector<std::pair<double, double>> checks_;
  std::set<std::string> checked_;
  std::vector<nlohmann::json> violations_;
};

}  // namespace mk::modes::search
