// GraphSearch's `evolutionary` algorithm (graph_search.h): which of the children that
// Evolution (evolutionary.h) breeds are proposed, and in what order.
#include <algorithm>

#include "modes/search/graph_search.h"

namespace mk::modes::search {

std::vector<Individual> GraphSearch::Parents() const {
  std::vector<Individual> all;
  all.reserve(measured_.size());
  for (const auto& [node, t] : measured_) all.push_back({node, t});
  // Ties by node, so the parents do not depend on the order the points were measured in.
  std::sort(all.begin(), all.end(), [](const Individual& a, const Individual& b) {
    return a.time_s != b.time_s ? a.time_s < b.time_s : a.node < b.node;
  });
  if (all.size() > Evolution::kPopulation) all.resize(Evolution::kPopulation);
  return all;
}

void GraphSearch::PrunePoint(const Node& n) {
  if (!bound_pruned_.insert(n).second) return;
  // The reason A* would give: the first decision whose prefix's bound exceeds the limit.
  const double limit = PruneLimit();
  std::string reason = "bound";
  for (size_t len = 1; len <= n.size(); ++len) {
    Node prefix(n.begin(), n.begin() + static_cast<long>(len));
    if (BoundOfNode(prefix) > limit) {
      reason = PruneReason(prefix);
      break;
    }
  }
  pruned_points_ = std::min(pruned_points_ + 1, uint64_t{1} << 62);
  pruned_weight_ += 1;
  ++pruned_by_[reason];
}

std::optional<GraphSearch::Entry> GraphSearch::Admit(Node n) {
  if (illegal_.count(n) || bound_pruned_.count(n)) return std::nullopt;
  const space::Candidate c = graph_.ToCandidate(n);
  if (tried_.count(CandidateKey(c))) return std::nullopt;
  if (const space::Constraint* v = graph_.Violated(c)) {
    PruneIllegal(n, *v);
    return std::nullopt;
  }
  Entry e = MakeEntry(std::move(n), 0);
  if (e.f > PruneLimit()) {
    PrunePoint(e.node);
    return std::nullopt;
  }
  return e;
}

void GraphSearch::Breed() {
  ++generations_;
  const Evolution evolution(graph_);
  const std::vector<Individual> parents = Parents();
  std::vector<Node> bred;
  if (parents.size() >= Evolution::kMinParents) {
    bred = evolution.Children(parents, Evolution::kChildren, rng_);
  } else {
    for (size_t i = 0; i < Evolution::kChildren; ++i) bred.push_back(evolution.Random(rng_));
  }
  std::set<Node> seen;
  std::vector<Entry> children;
  for (Node& n : bred) {
    if (!seen.insert(n).second) continue;
    if (std::optional<Entry> e = Admit(std::move(n))) children.push_back(std::move(*e));
  }
  // The model's ranking where there is one; the bound otherwise (and between equal scores).
  // Children are in the random order they were bred: a stable sort keeps ties random.
  Score(children);
  const bool scored = model_.has_value() && features_;
  std::stable_sort(children.begin(), children.end(), [scored](const Entry& a, const Entry& b) {
    if (scored && a.score != b.score) return a.score > b.score;
    return a.f < b.f;
  });
  const size_t take = std::min(children.size(), Evolution::kProposals - 1);
  for (size_t i = 0; i < take; ++i) evo_queue_.push_back(std::move(children[i].node));
  // One uniform point per generation, so a population stuck around a local best still explores.
  for (int attempt = 0; attempt < 16; ++attempt) {
    Node r = evolution.Random(rng_);
    if (seen.count(r)) continue;
    if (std::optional<Entry> e = Admit(std::move(r))) {
      evo_queue_.push_back(std::move(e->node));
      break;
    }
  }
}

std::optional<space::Candidate> GraphSearch::NextEvolutionary() {
  if (!started_) {
    // The start point first (the planner's candidate, or the domains' medians), as A* does.
    started_ = true;
    evo_queue_.push_back(graph_.StartNode());
  }
  for (int generation = 0; generation < 8; ++generation) {
    while (!evo_queue_.empty()) {
      Node n = std::move(evo_queue_.front());
      evo_queue_.pop_front();
      space::Candidate c;
      if (Propose(n, c)) return c;
    }
    Breed();
  }
  // Eight generations without one new point: the space near the population is spent. Sweep what
  // is left (Propose applies the bound to it).
  return NextRandom();
}

}  // namespace mk::modes::search
