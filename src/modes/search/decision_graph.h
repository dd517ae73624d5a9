// The graph the search walks (issue 35, item 2): a node is a partial assignment of decisions,
// taken in a fixed order; an edge sets the next decision; a node with every decision set is a
// candidate the pipeline can evaluate.
//
// The fusion decisions come first (analysis::FusionChoice: the planner's value is 0, the flip
// 1). Once they are all set they name a plan variant (its kernels), and the decisions below are
// that variant's kernels' declared parameters (space::KernelSpace), kernels in falling order of
// weight (their share of the plan's lower bound), so the decisions that move the bound most are
// taken first and a bad prefix is pruned early. A parameter with one legal value is not a
// decision. Several fusion assignments may give the same kernels (a flip that another flip made
// moot): each variant is reached by one assignment only, its canonical one (fewest flips), so
// no point of the space is counted or proposed twice. A graph built from one plan has no
// fusion decisions and one variant.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "space/schedule.h"

namespace mk::modes::search {

struct Decision {
  int kernel = 0;  // index into the variant's kernels / spaces
  int param = 0;   // index into that kernel's params
};

// The value index chosen for each decision taken so far, in decision order.
using Node = std::vector<int>;

struct FusionDecision {
  std::string key;             // analysis::FusionChoice::key
  bool planner_fuses = true;   // value 0; value 1 is the other
  std::string description;
};

// One plan the fusion decisions can give: its kernels' spaces and the start point in it.
struct PlanVariant {
  std::map<std::string, bool> fusion;    // the choices that differ from the planner's
  std::vector<std::string> kernel_ids;   // stable ids (analysis::Kernel::key), per kernel
  std::vector<space::KernelSpace> spaces;
  std::vector<double> weights;           // per kernel; may be empty (equal)
  space::Candidate start;                // orders each decision's children
};

class DecisionGraph {
 public:
  // One plan, no fusion decisions. `weights`: one per kernel (any non-negative scale; may be
  // empty: equal). `start`: the point whose values order each decision's children first (the
  // planner's initial candidate, or the domains' medians).
  DecisionGraph(std::vector<space::KernelSpace> spaces, std::vector<double> weights,
                const space::Candidate& start);
  // Fusion decisions over `variants`: `variant_of[mask]` is the variant that the assignment
  // `mask` (bit i set: decision i flipped) gives; variant 0 is the planner's (mask 0).
  DecisionGraph(std::vector<FusionDecision> fusion, std::vector<PlanVariant> variants,
                std::vector<int> variant_of);

  size_t fusion_depth() const { return fusion_.size(); }
  const std::vector<FusionDecision>& fusion() const { return fusion_; }
  size_t variant_count() const { return variants_.size(); }
  const PlanVariant& variant(size_t v) const { return variants_[v].plan; }
  // The variant `n`'s fusion values select; -1 while some are unset.
  int VariantOf(const Node& n) const;
  // The variant of a candidate's fusion choices; -1 when they are not ones this graph makes.
  int VariantOf(const space::Candidate& c) const;
  // The variants a completion of `n` may reach (n's own when its fusion values are set).
  std::vector<int> VariantsUnder(const Node& n) const;

  bool Complete(const Node& n) const;
  // The decision after `n` (n incomplete): the value indices its children take, the start's
  // value first, then the others by distance from it. A fusion value whose subtree holds no
  // variant's canonical assignment is left out.
  std::vector<int> ChildrenOf(const Node& n) const;
  // The number of values of the decision after `n`.
  size_t ValueCount(const Node& n) const;
  // The start's value index for the decision after `n`.
  int StartChild(const Node& n) const;
  // The start point's complete node (the planner's fusion, the start's values).
  Node StartNode() const;
  // What n's last edge set, for people: "fusion epilogue:dot.3=apart", "kernel dot.3 tile=64".
  std::string EdgeLabel(const Node& n) const;
  // The kernel (index in n's variant) whose parameter the decision after `n` sets; -1 for a
  // fusion decision.
  int KernelAfter(const Node& n) const;
  // `n` (complete) moved to the fusion values `fusion` (complete): each decision of the new
  // variant keeps n's value for the same kernel id and parameter where the new domain has it,
  // else takes the start's. The canonical assignment of the variant those values give.
  Node WithFusion(const Node& n, const std::vector<int>& fusion) const;
  // A uniform value at each level (so uniform over the params of a variant, not over variants).
  Node Random(std::mt19937_64& rng) const;
  // The complete node after `n` in decision order (depth first, value indices ascending);
  // the first one for nullopt; nullopt after the last.
  std::optional<Node> NextInOrder(const std::optional<Node>& n) const;

  // Per kernel of n's variant, the values fixed at `n` (single-valued parameters included:
  // always fixed). n's fusion values must be set.
  std::vector<std::map<std::string, int64_t>> Fixed(const Node& n) const;
  // The constraint (space::KernelSpace::constraints) that the kernel of n's last decision
  // violates with the values n fixes; nullptr when none does (or n's last decision is a fusion
  // one). The decisions before it were checked when they were taken: the check of one edge.
  const space::Constraint* Violated(const Node& n) const;
  // The constraint a candidate's schedules violate (any kernel); nullptr when none does.
  const space::Constraint* Violated(const space::Candidate& c) const;
  // A node as a candidate: undecided fusion values take the planner's, undecided parameters the
  // start's value.
  space::Candidate ToCandidate(const Node& n) const;
  // The complete node of a candidate; nullopt when its fusion choices are not this graph's or
  // one of its values is not in the domain.
  std::optional<Node> NodeOf(const space::Candidate& c) const;
  // Complete points below `n` (saturating at 2^62).
  uint64_t Completions(const Node& n) const;
  uint64_t SpaceSize() const { return Completions({}); }
  // The same counts as doubles (exact to 2^53, then approximate, never saturating): a fusion
  // variant with many kernels passes 2^62 points, and shares of the space need the real size.
  double CompletionsApprox(const Node& n) const;
  double SpaceSizeApprox() const { return CompletionsApprox({}); }

  // {"fusion": [{key, planner_fuses, description}], "variants": [{fusion, kernels, space_size}],
  //  "decisions": [{kernel, kernel_id, param, values, start}] (the planner's variant's),
  //  "constraints": [{kernel, name, reason}], "space_size"}.
  nlohmann::json ToJson() const;
  // The explored part of the graph in Graphviz form: `nodes` with a label each.
  std::string ToDot(const std::vector<std::pair<Node, std::string>>& nodes) const;

  // The planner's variant's view, for a graph without fusion decisions (tests, the replayed
  // tables): its decisions in order.
  size_t depth() const { return variants_[0].decisions.size(); }
  const Decision& decision(size_t i) const { return variants_[0].decisions[i]; }
  const std::vector<space::KernelSpace>& spaces() const { return variants_[0].plan.spaces; }
  const space::ParamDomain& domain(const Decision& d) const;
  const std::vector<int>& ChildOrder(size_t i) const { return variants_[0].child_order[i]; }
  int StartIndex(size_t i) const { return variants_[0].child_order[i].front(); }

 private:
  struct Variant {
    PlanVariant plan;
    std::vector<Decision> decisions;
    std::vector<std::vector<int>> child_order;
    uint32_t mask = 0;  // its canonical fusion assignment
    uint64_t size = 1;  // its points
    double size_approx = 1;
  };
  static Variant MakeVariant(PlanVariant plan);
  const space::ParamDomain& Domain(const Variant& v, const Decision& d) const;
  uint32_t MaskOf(const Node& n) const;  // n's fusion values (n has them all)
  bool Canonical(uint32_t mask) const;

  std::vector<FusionDecision> fusion_;
  std::vector<Variant> variants_;
  std::vector<int> variant_of_;  // per mask
};

// A key identifying a candidate (its fusion choices and its values per kernel, in parameter
// order).
std::string CandidateKey(const space::Candidate& c);

}  // namespace mk::modes::search
