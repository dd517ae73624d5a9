#include "modes/search/plan_search.h"

#include "modes/search/features.h"

namespace mk::modes::search {

space::Candidate StartPoint(const agents::Plan& plan, bool analytical_init) {
  if (analytical_init) return plan.initial;
  // Each domain's median as it is, even where the medians together break a joint constraint:
  // the start only centres each decision's child order (one decision at a time), and the search
  // prunes what is illegal.
  space::Candidate c;
  for (const auto& s : plan.spaces) {
    space::Schedule sched;
    for (const auto& p : s.params) sched.values[p.name] = space::MedianValue(p);
    c.kernels.push_back(std::move(sched));
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
                                        uint64_t seed, std::optional<CostModel> prior) {
  std::vector<double> weights;
  for (const auto& k : plan.kernels) weights.push_back(k.lower_bound_s);
  DecisionGraph graph(plan.spaces, weights, StartPoint(plan, options.analytical_init));
  auto search = std::make_unique<GraphSearch>(std::move(graph), BoundOfPlan(plan), options, seed);
  const bool ordered = options.algorithm == Algorithm::kAstar || options.algorithm == Algorithm::kBeam ||
                       options.algorithm == Algorithm::kEvolutionary;
  if (options.use_model && ordered) search->UseModel(FeatureMap(plan), std::move(prior));
  return search;
}

}  // namespace mk::modes::search
