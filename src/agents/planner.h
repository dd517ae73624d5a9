// The planner agent (DESIGN.md §4): a module and a target -> a Plan: the fusion plan, each
// kernel's roofline (FLOPs, bytes, arithmetic intensity, and the lower bound
//   max(flops / peak(dtype), bytes / bandwidth)
// on the target), each kernel's declared design space with the analytical initial point the
// emitter derives from the machine model, the initial candidate, and a short markdown rationale
// for people (shown in reports and the UI). Deterministic: the same module and target always
// give the same plan.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/fusion_plan.h"
#include "codegen/emitter.h"
#include "hlo/module.h"
#include "space/schedule.h"
#include "support/status.h"
#include "target/target.h"

namespace mk::agents {

struct PlanRequest {
  const hlo::Module* module = nullptr;  // verified; not modified (the planner plans a copy)
  target::Target target;
  analysis::FusionOptions fusion;
  // How the emitter declares each kernel's space: {.analytical = false} for
  // `search --no-analytical-init` (grids that do not depend on the target's model, initial
  // values at their medians; codegen::SpaceRequest).
  codegen::SpaceRequest space;
};

struct KernelRoofline {
  int id = 0;
  std::string name;
  std::string key;  // the kernel's stable id (analysis::Kernel::key)
  std::string family;
  std::string compute_dtype = "f32";  // whose peak bounds the kernel's compute
  int64_t flops = 0, bytes = 0;
  double intensity = 0;  // flops per byte (0 when bytes is 0)
  double compute_s = 0, memory_s = 0;
  double lower_bound_s = 0;  // max(compute_s, memory_s)
  std::string bound;         // "compute" or "memory": the larger of the two
};

struct Plan {
  std::unique_ptr<hlo::Module> module;  // the prepared copy `fusion` points into
  analysis::FusionPlan fusion;
  std::vector<KernelRoofline> kernels;   // one per fusion kernel, same order
  std::vector<space::KernelSpace> spaces;  // one per fusion kernel, same order
  space::Candidate initial;
  // The fusion choices this plan was made with that differ from the planner's rules
  // (PlanRequest::fusion.overrides): a candidate of this plan carries the same.
  std::map<std::string, bool> fusion_choices;
  double lower_bound_s = 0;  // sum over kernels (they run one after another)
  std::string rationale_markdown;
  target::Target target;
};

Result<Plan> RunPlanner(const PlanRequest& request, const codegen::Emitter& emitter);

// Roofline of one kernel on `target` (pure arithmetic; the planner and reports share it).
KernelRoofline KernelRooflineOf(const analysis::Kernel& kernel, const target::Target& target);

// {"lower_bound_s", "rationale_markdown", "kernels": [{id, name, family, compute_dtype, flops,
//  bytes, intensity, compute_s, memory_s, lower_bound_s, bound, hero (instruction name or
//  null), fusion: [{instruction, fused, reason}] (the planner's notes: why each instruction
//  joined, then what it kept out), space: [{name, values, initial, doc}]}], "initial": candidate}
nlohmann::json ToJson(const Plan& plan);

}  // namespace mk::agents
