// The search of one plan: its decision graph (the fusion choices that options.fusion_decisions
// lets it flip, then the declared spaces of the plan they give, kernels weighted by their
// roofline bounds), its lower bound (each plan's FLOPs and bytes at the target's peaks) and the
// algorithm the options name.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "agents/planner.h"
#include "analysis/fusion_plan.h"
#include "codegen/emitter.h"
#include "modes/search/features.h"
#include "modes/search/graph_search.h"
#include "modes/search/search_options.h"

namespace mk::modes::search {

// The start point: the planner's analytical candidate, or (options.analytical_init false) each
// domain's median value (space::MedianValue). The medians may together break a joint constraint
// (the planner's initial is then the nearest legal point, space::CenterOnMedians): the start only
// orders each decision's children, and the search never proposes an illegal point.
space::Candidate StartPoint(const agents::Plan& plan, bool analytical_init);

// Each kernel's FLOPs and bytes, and for a dot the CPU emitter may run as a blocked GEMM on 8-lane
// register tiles, its depth (KernelCost::gemm_depth).
std::vector<KernelCost> CostsOfPlan(const agents::Plan& plan);
LowerBound BoundOfPlan(const agents::Plan& plan);

// The fusion choices a search may flip, and how it gets the plan of a set of them.
struct FusionSpace {
  std::vector<analysis::FusionChoice> choices;
  std::function<Result<agents::Plan>(const std::map<std::string, bool>& fusion)> replan;
};
// The choices of `plan`'s module as the planner of `request` sees them (the target's fusion
// options), with the planner itself as `replan`. `request` and `emitter` must outlive it.
Result<FusionSpace> FusionSpaceOf(const agents::PlanRequest& request, const agents::Plan& plan,
                                  const codegen::Emitter& emitter);

// The graph's fusion decisions: of `fusion.choices`, the `options.fusion_decisions` whose flip
// alone moves the plan's roofline bound most (a choice whose plan fails is left out), and the
// plan variants their assignments give (equal kernels are one variant). Plans every assignment:
// 2^decisions planner runs at most. Returns the graph and each variant's bound and features.
struct FusionGraph {
  DecisionGraph graph;
  std::vector<LowerBound> bounds;   // per variant
  std::vector<FeatureMap> features; // per variant
};
Result<FusionGraph> BuildFusionGraph(const agents::Plan& plan, const FusionSpace& fusion,
                                     const SearchOptions& options);

// `prior`: the model the ranking starts from (model_store.h), until the run trains its own.
// `fusion`: where the fusion choices come from (null, or options.fusion_decisions 0: the plan's
// kernels are fixed).
Result<std::unique_ptr<GraphSearch>> SearchPlan(const agents::Plan& plan, const SearchOptions& options,
                                                uint64_t seed, std::optional<CostModel> prior = std::nullopt,
                                                const FusionSpace* fusion = nullptr);

}  // namespace mk::modes::search
