// The search of one plan: its decision graph (the plan's declared spaces, kernels weighted by
// their roofline bounds), its lower bound (the plan's FLOPs and bytes at the target's peaks) and
// the algorithm the options name.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "agents/planner.h"
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

// `prior`: the model the ranking starts from (model_store.h), until the run trains its own.
std::unique_ptr<GraphSearch> SearchPlan(const agents::Plan& plan, const SearchOptions& options,
                                        uint64_t seed, std::optional<CostModel> prior = std::nullopt);

}  // namespace mk::modes::search
