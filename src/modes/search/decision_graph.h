// The graph the search walks (issue 35, item 2): a node is a partial assignment of decisions,
// taken in a fixed order; an edge sets the next decision; a node with every decision set is a
// candidate the pipeline can evaluate. Decisions today are the kernels' declared parameters
// (space::KernelSpace), kernels in falling order of weight (their share of the module's lower
// bound), so the decisions that move the bound most are taken first and a bad prefix is pruned
// early. A parameter with one legal value is not a decision. The fusion decisions are not in
// the graph yet: the plan's kernels are fixed.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "space/schedule.h"

namespace mk::modes::search {

struct Decision {
  int kernel = 0;  // index into the plan's kernels / spaces
  int param = 0;   // index into that kernel's params
};

// The value index chosen for each decision taken so far, in decision order.
using Node = std::vector<int>;

class DecisionGraph {
 public:
  // `weights`: one per kernel (any non-negative scale; may be empty: equal). `start`: the point
  // whose values order each decision's children first (the planner's initial candidate, or the
  // domains' medians).
  DecisionGraph(std::vector<space::KernelSpace> spaces, std::vector<double> weights,
                const space::Candidate& start);

  size_t depth() const { return decisions_.size(); }
  const Decision& decision(size_t i) const { return decisions_[i]; }
  const std::vector<space::KernelSpace>& spaces() const { return spaces_; }
  const space::ParamDomain& domain(const Decision& d) const;
  // The value indices of decision `i` in the order children are generated: the start's value
  // first, then the others by distance from it.
  const std::vector<int>& ChildOrder(size_t i) const { return child_order_[i]; }
  // The start's value index for decision `i`.
  int StartIndex(size_t i) const { return child_order_[i].front(); }

  bool Complete(const Node& n) const { return n.size() == decisions_.size(); }
  // Per kernel, the values fixed at `n` (single-valued parameters included: always fixed).
  std::vector<std::map<std::string, int64_t>> Fixed(const Node& n) const;
  // The constraint (space::KernelSpace::constraints) that the kernel of n's last decision
  // violates with the values n fixes; nullptr when none does (or n is the root). The decisions
  // before it were checked when they were taken, so this is the check of one edge.
  const space::Constraint* Violated(const Node& n) const;
  // The constraint a candidate's schedules violate (any kernel); nullptr when none does.
  const space::Constraint* Violated(const space::Candidate& c) const;
  // A complete node as a candidate. Undecided parameters (n incomplete) take the start's value.
  space::Candidate ToCandidate(const Node& n) const;
  // The complete node of a candidate; nullopt when one of its values is not in the domain.
  std::optional<Node> NodeOf(const space::Candidate& c) const;
  // Complete points below `n` (saturating at 2^62).
  uint64_t Completions(const Node& n) const;
  uint64_t SpaceSize() const { return Completions({}); }

  // {"decisions": [{kernel, param, values, start}], "constraints": [{kernel, name, reason}],
  //  "space_size"}.
  nlohmann::json ToJson() const;
  // The explored part of the graph in Graphviz form: `nodes` with a label each.
  std::string ToDot(const std::vector<std::pair<Node, std::string>>& nodes) const;

 private:
  std::vector<space::KernelSpace> spaces_;
  std::vector<Decision> decisions_;
  std::vector<std::vector<int>> child_order_;
  std::vector<int> single_;  // per kernel and param: the index when single-valued, else -1
};

// A key identifying a candidate (its values per kernel, in parameter order).
std::string CandidateKey(const space::Candidate& c);

}  // namespace mk::modes::search
