#include "modes/search/plan_search.h"

#include "codegen/cpu/gemm_params.h"
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

std::vector<KernelCost> CostsOfPlan(const agents::Plan& plan) {
  std::vector<KernelCost> kernels;
  for (size_t i = 0; i < plan.kernels.size(); ++i) {
    const auto& k = plan.kernels[i];
    KernelCost cost{k.flops, k.bytes, k.compute_dtype == "bf16"};
    const hlo::Instruction* hero =
        i < plan.fusion.kernels.size() ? plan.fusion.kernels[i].hero : nullptr;
    // The register-tile rule is written for the 8-lane micro-kernel (lower_bound.h).
    const bool eight_lanes =
        plan.target.kind == target::TargetKind::kCpu && plan.target.vector_bytes == 32;
    if (hero != nullptr && hero->opcode == hlo::Opcode::kDot && eight_lanes) {
      if (auto g = codegen::cpu::AnalyzeDot(*hero, plan.target); g.ok() && g->blockable) {
        cost.gemm_depth = g->k;
      }
    }
    kernels.push_back(cost);
  }
  return kernels;
}

LowerBound BoundOfPlan(const agents::Plan& plan) {
  std::vector<KernelCost> kernels = CostsOfPlan(plan);
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
