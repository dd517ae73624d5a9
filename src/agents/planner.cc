#include "agents/planner.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "agents/engine.h"
#include "agents/profiler.h"

namespace mk::agents {

namespace {

std::string FormatTime(double s) {
  char buf[32];
  if (s >= 1) std::snprintf(buf, sizeof buf, "%.3g s", s);
  else if (s >= 1e-3) std::snprintf(buf, sizeof buf, "%.3g ms", s * 1e3);
  else std::snprintf(buf, sizeof buf, "%.3g us", s * 1e6);
  return buf;
}

std::string FormatCount(double v) {
  char buf[32];
  if (v >= 1e9) std::snprintf(buf, sizeof buf, "%.3gG", v / 1e9);
  else if (v >= 1e6) std::snprintf(buf, sizeof buf, "%.3gM", v / 1e6);
  else if (v >= 1e3) std::snprintf(buf, sizeof buf, "%.3gk", v / 1e3);
  else std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::string Rationale(const Plan& plan) {
  std::ostringstream md;
  const target::Target& t = plan.target;
  md << "## Plan\n\n"
     << plan.fusion.kernels.size() << " kernel(s) for " << t.name << " (" << t.model << ", "
     << t.cores << " cores). Peaks used: f32 " << FormatCount(t.peak_flops_f32) << "FLOP/s";
  if (t.peak_flops_bf16 > 0) md << ", bf16 " << FormatCount(t.peak_flops_bf16) << "FLOP/s";
  md << ", bandwidth " << FormatCount(t.bandwidth_bytes_per_s) << "B/s ("
     << (t.rates_measured ? "measured by the machine probe" : "nominal model") << ").\n\n"
     << "Lower bound for the whole module: **" << FormatTime(plan.lower_bound_s) << "**.\n\n";
  // The kernels that bound the module most: where tuning effort should go.
  std::vector<const KernelRoofline*> order;
  for (const auto& k : plan.kernels) order.push_back(&k);
  std::stable_sort(order.begin(), order.end(), [](const KernelRoofline* a, const KernelRoofline* b) {
    return a->lower_bound_s > b->lower_bound_s;
  });
  md << "## Kernels by lower bound\n\n";
  size_t shown = std::min<size_t>(order.size(), 8);
  for (size_t i = 0; i < shown; ++i) {
    const KernelRoofline& k = *order[i];
    double share = plan.lower_bound_s > 0 ? 100.0 * k.lower_bound_s / plan.lower_bound_s : 0;
    char line[256];
    std::snprintf(line, sizeof line,
                  "- `%s` (%s): %sFLOP, %sB, intensity %.3g FLOP/B -> %s-bound, at least %s "
                  "(%.0f%% of the module)\n",
                  k.name.c_str(), k.family.c_str(), FormatCount(static_cast<double>(k.flops)).c_str(),
                  FormatCount(static_cast<double>(k.bytes)).c_str(), k.intensity, k.bound.c_str(),
                  FormatTime(k.lower_bound_s).c_str(), share);
    md << line;
  }
  if (order.size() > shown) md << "- ... and " << order.size() - shown << " smaller kernel(s)\n";
  md << "\n## Initial schedule\n\n"
     << "Each kernel starts at its emitter's analytical point (threads only for kernels large "
        "enough to amortize waking a thread; blocking from the register count and cache sizes "
        "where the family declares it). Auto mode searches around it over these parameters:\n\n";
  std::map<std::string, std::string> docs;
  for (const auto& space : plan.spaces) {
    for (const auto& p : space.params) docs.emplace(p.name, p.doc);
  }
  for (const auto& [name, doc] : docs) md << "- `" << name << "`: " << doc << "\n";
  return md.str();
}

}  // namespace

KernelRoofline KernelRooflineOf(const analysis::Kernel& kernel, const target::Target& target) {
  KernelRoofline r;
  r.id = kernel.id;
  r.name = kernel.name;
  r.key = kernel.key;
  r.family = analysis::KernelFamilyName(kernel.family);
  r.compute_dtype = ComputeDtypeOf(kernel);
  r.flops = kernel.flops;
  r.bytes = kernel.bytes;
  r.intensity = kernel.bytes > 0 ? static_cast<double>(kernel.flops) / kernel.bytes : 0;
  double peak = r.compute_dtype == "bf16" && target.peak_flops_bf16 > 0 ? target.peak_flops_bf16
                                                                        : target.peak_flops_f32;
  r.compute_s = peak > 0 ? static_cast<double>(kernel.flops) / peak : 0;
  r.memory_s = target.bandwidth_bytes_per_s > 0
                   ? static_cast<double>(kernel.bytes) / target.bandwidth_bytes_per_s
                   : 0;
  r.lower_bound_s = std::max(r.compute_s, r.memory_s);
  r.bound = r.compute_s >= r.memory_s ? "compute" : "memory";
  return r;
}

Result<Plan> RunPlanner(const PlanRequest& request, const codegen::Emitter& emitter) {
  if (request.module == nullptr) return InvalidArgument("the planner needs a module");
  Plan plan;
  plan.target = request.target;
  MK_ASSIGN_OR_RETURN(plan.module, PrepareForLowering(*request.module));
  MK_ASSIGN_OR_RETURN(plan.fusion, analysis::PlanFusion(*plan.module,
                                                        FusionOptionsFor(request.fusion,
                                                                         plan.target)));
  plan.fusion_choices = request.fusion.overrides;
  plan.initial.fusion = plan.fusion_choices;
  for (const analysis::Kernel& k : plan.fusion.kernels) {
    plan.kernels.push_back(KernelRooflineOf(k, plan.target));
    plan.initial.kernel_ids.push_back(k.key);
    plan.lower_bound_s += plan.kernels.back().lower_bound_s;
    plan.spaces.push_back(emitter.SpaceFor(k, plan.target, request.space));
    plan.initial.kernels.push_back(plan.spaces.back().Initial());
  }
  plan.rationale_markdown = Rationale(plan);
  return plan;
}

nlohmann::json ToJson(const Plan& plan) {
  nlohmann::json kernels = nlohmann::json::array();
  for (size_t i = 0; i < plan.kernels.size(); ++i) {
    const KernelRoofline& k = plan.kernels[i];
    nlohmann::json space = nlohmann::json::array();
    if (i < plan.spaces.size()) {
      for (const auto& p : plan.spaces[i].params) {
        space.push_back({{"name", p.name}, {"values", p.values}, {"initial", p.initial},
                         {"doc", p.doc}});
      }
    }
    nlohmann::json hero = nullptr, fusion = nlohmann::json::array();
    if (i < plan.fusion.kernels.size()) {
      const analysis::Kernel& fused = plan.fusion.kernels[i];
      if (fused.hero) hero = fused.hero->name;
      for (const analysis::FusionNote& n : fused.notes) {
        fusion.push_back({{"instruction", n.instruction}, {"fused", n.fused},
                          {"reason", n.reason}});
      }
    }
    kernels.push_back({{"id", k.id}, {"name", k.name}, {"key", k.key}, {"family", k.family},
                       {"compute_dtype", k.compute_dtype}, {"flops", k.flops},
                       {"bytes", k.bytes}, {"intensity", k.intensity},
                       {"compute_s", k.compute_s}, {"memory_s", k.memory_s},
                       {"lower_bound_s", k.lower_bound_s}, {"bound", k.bound},
                       {"hero", hero}, {"fusion", fusion}, {"space", space}});
  }
  return {{"lower_bound_s", plan.lower_bound_s},
          {"rationale_markdown", plan.rationale_markdown},
          {"kernels", kernels},
          {"fusion_choices", plan.fusion_choices},
          {"initial", space::ToJson(plan.initial)}};
}

}  // namespace mk::agents
