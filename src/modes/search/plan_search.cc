#include "modes/search/plan_search.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>

#include "agents/engine.h"
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

namespace {

PlanVariant VariantOf(const agents::Plan& plan, bool analytical_init) {
  PlanVariant v;
  v.fusion = plan.fusion_choices;
  for (const auto& k : plan.kernels) {
    v.kernel_ids.push_back(k.key);
    v.weights.push_back(k.lower_bound_s);
  }
  v.spaces = plan.spaces;
  v.start = StartPoint(plan, analytical_init);
  v.start.fusion = plan.fusion_choices;
  v.start.kernel_ids = v.kernel_ids;
  return v;
}

}  // namespace

Result<FusionSpace> FusionSpaceOf(const agents::PlanRequest& request, const agents::Plan& plan,
                                  const codegen::Emitter& emitter) {
  FusionSpace space;
  MK_ASSIGN_OR_RETURN(space.choices,
                      analysis::FusionChoicesOf(*plan.module,
                                                agents::FusionOptionsFor(request.fusion, plan.target)));
  space.replan = [&request, &emitter](const std::map<std::string, bool>& fusion) {
    agents::PlanRequest r = request;
    r.fusion.overrides = fusion;
    return agents::RunPlanner(r, emitter);
  };
  return space;
}

Result<FusionGraph> BuildFusionGraph(const agents::Plan& plan, const FusionSpace& fusion,
                                     const SearchOptions& options) {
  // Rank the choices by how far their flip alone moves the plan's bound.
  struct Ranked {
    analysis::FusionChoice choice;
    double moves = 0;
    size_t order = 0;
  };
  std::vector<Ranked> ranked;
  for (size_t i = 0; i < fusion.choices.size(); ++i) {
    const analysis::FusionChoice& c = fusion.choices[i];
    Result<agents::Plan> flipped = fusion.replan({{c.key, !c.planner_fuses}});
    if (!flipped.ok()) continue;
    ranked.push_back({c, std::fabs(flipped->lower_bound_s - plan.lower_bound_s), i});
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const Ranked& a, const Ranked& b) { return a.moves > b.moves; });
  const size_t keep = std::min(ranked.size(), static_cast<size_t>(std::clamp(
                                                  options.fusion_decisions, 0, SearchOptions::kMaxFusionDecisions)));
  ranked.resize(keep);
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const Ranked& a, const Ranked& b) { return a.order < b.order; });
  std::vector<FusionDecision> decisions;
  for (const Ranked& r : ranked) {
    decisions.push_back({r.choice.key, r.choice.planner_fuses, r.choice.description});
  }
  // Every assignment, fewest flips first: the first to give a set of kernels is its canonical
  // one and names the variant.
  const uint32_t count = 1u << decisions.size();
  std::vector<uint32_t> masks(count);
  std::iota(masks.begin(), masks.end(), 0u);
  std::stable_sort(masks.begin(), masks.end(),
                   [](uint32_t a, uint32_t b) { return std::popcount(a) < std::popcount(b); });
  FusionGraph out{DecisionGraph({}, {}, space::Candidate{}), {}, {}};
  std::vector<PlanVariant> variants;
  std::vector<int> variant_of(count, 0);
  std::map<std::string, int> by_partition;
  for (uint32_t mask : masks) {
    std::map<std::string, bool> overrides;
    for (size_t i = 0; i < decisions.size(); ++i) {
      if ((mask >> i) & 1u) overrides[decisions[i].key] = !decisions[i].planner_fuses;
    }
    Result<agents::Plan> p = mask == 0 ? Result<agents::Plan>(InvalidArgument("")) : fusion.replan(overrides);
    const agents::Plan* variant_plan = mask == 0 ? &plan : (p.ok() ? &*p : nullptr);
    // A set of choices the planner cannot make (its plan fails) is left out of the space: it
    // joins the planner's variant, where it is never canonical.
    if (variant_plan == nullptr) continue;
    const std::string partition = analysis::PartitionKey(variant_plan->fusion);
    auto [it, added] = by_partition.emplace(partition, static_cast<int>(variants.size()));
    variant_of[mask] = it->second;
    if (!added) continue;
    variants.push_back(VariantOf(*variant_plan, options.analytical_init));
    out.bounds.push_back(BoundOfPlan(*variant_plan));
    out.features.push_back(FeatureMap(*variant_plan));
  }
  out.graph = DecisionGraph(std::move(decisions), std::move(variants), std::move(variant_of));
  return out;
}

Result<std::unique_ptr<GraphSearch>> SearchPlan(const agents::Plan& plan, const SearchOptions& options,
                                                uint64_t seed, std::optional<CostModel> prior,
                                                const FusionSpace* fusion) {
  const bool ordered = options.algorithm == Algorithm::kAstar || options.algorithm == Algorithm::kBeam ||
                       options.algorithm == Algorithm::kEvolutionary;
  const bool with_model = options.use_model && ordered;
  if (fusion == nullptr || options.fusion_decisions == 0 || fusion->choices.empty()) {
    std::vector<double> weights;
    for (const auto& k : plan.kernels) weights.push_back(k.lower_bound_s);
    space::Candidate start = StartPoint(plan, options.analytical_init);
    start.fusion = plan.fusion_choices;
    start.kernel_ids.clear();
    for (const auto& k : plan.kernels) start.kernel_ids.push_back(k.key);
    DecisionGraph graph(plan.spaces, weights, start);
    auto search = std::make_unique<GraphSearch>(std::move(graph), BoundOfPlan(plan), options, seed);
    if (with_model) search->UseModel(FeatureMap(plan), std::move(prior));
    return search;
  }
  MK_ASSIGN_OR_RETURN(FusionGraph fg, BuildFusionGraph(plan, *fusion, options));
  std::vector<FeatureMap> features = std::move(fg.features);
  const size_t columns = FeatureMap::Names().size();
  auto search = std::make_unique<GraphSearch>(std::move(fg.graph), std::move(fg.bounds), options, seed);
  if (with_model) {
    const DecisionGraph* graph = &search->graph();
    search->UseModel(
        [graph, features = std::move(features), columns](const space::Candidate& c) {
          const int v = graph->VariantOf(c);
          if (v < 0) return std::vector<float>(columns, NAN);
          return features[static_cast<size_t>(v)].Of(c);
        },
        columns, std::move(prior));
  }
  return search;
}

}  // namespace mk::modes::search
