#include "modes/search/plan_search.h"

#include "modes/search/features.h"

namespace mk::modes::search {

space::Candidate StartPoint(const agents::Plan& plan, bool analytical_init) {
  if (analytical_init) return plan.initial;
  // Each domain's median, moved to the nearest point its kernel's constraints allow: the
  // planner's initial when it declared the spaces without the analytical rules.
  space::Candidate c;
  for (space::KernelSpace s : plan.spaces) {
    space::CenterOnMedians(s);
    c.kernels.push_back(s.Initial());
  }
  return c;
}

LowerBound BoundOfPlan(const agents::Plan& plan) {
  std::vector<KernelCost> kernels;
  for (const auto& k : plan.kernels) kernels.push_back({k.flops, k.bytes, k.compute_dtype == "bf16"});
  MachineRates rates;
  rates.f32_flops = plan.target.peak_flops_f32;
  rates.bf16_flops = plan.target.peak_flops_bf16;
  rates.bandwidth = plan.target.bandwidth_bytes_per_s;
  rates.cores = plan.target.cores;
  return LowerBound(std::move(kernels), rates);
}

std::unique_ptr<GraphSearch> SearchPlan(const agents::Plan& plan, const SearchOptions& options,
                                        uint64_t seed) {
  std::vector<double> weights;
  for (const auto& k : plan.kernels) weights.push_back(k.lower_bound_s);
  DecisionGraph graph(plan.spaces, weights, StartPoint(plan, options.analytical_init));
  auto search = std::make_unique<GraphSearch>(std::move(graph), BoundOfPlan(plan), options, seed);
  const bool ordered = options.algorithm == Algorithm::kAstar || options.algorithm == Algorithm::kBeam;
  if (options.use_model && ordered) search->UseModel(FeatureMap(plan));
  return search;
}

}  // namespace mk::modes::search
