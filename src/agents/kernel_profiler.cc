#include "agents/kernel_profiler.h"

#include <algorithm>
#include <numeric>

#include "agents/implementer.h"
#include "agents/tester.h"
#include "hlo/parser.h"
#include "hlo/verifier.h"
#include "task/inputs.h"

namespace mk::agents {

namespace {

Result<double> TimeKernel(const Plan& plan, size_t k, const space::Candidate& candidate,
                          CpuEngine& engine, const TimingProtocol& protocol) {
  const analysis::Kernel& kernel = plan.fusion.kernels[k];
  MK_ASSIGN_OR_RETURN(std::unique_ptr<hlo::Module> module, hlo::ParseModule(kernel.ToHloText()));
  MK_RETURN_IF_ERROR(hlo::VerifyModule(*module));
  PlanRequest req;
  req.module = module.get();
  req.target = plan.target;
  MK_ASSIGN_OR_RETURN(Plan alone, RunPlanner(req, engine.emitter()));
  // The kernel's own schedule applies when the cut-out plans as one kernel of the same family
  // (the usual case); otherwise each part keeps its analytical point.
  space::Candidate c = alone.initial;
  if (alone.kernels.size() == 1 && alone.kernels[0].family == plan.kernels[k].family &&
      k < candidate.kernels.size()) {
    space::Candidate mine;
    mine.kernels = {candidate.kernels[k]};
    if (auto complete = CompleteCandidate(alone, mine); complete.ok()) c = *complete;
  }
  MK_ASSIGN_OR_RETURN(Implemented impl, RunImplementer(alone, c, engine.emitter()));
  MK_ASSIGN_OR_RETURN(runtime::CompiledLibrary lib, engine.Build(impl.implementation));
  MK_ASSIGN_OR_RETURN(task::Task t, TaskForModule(*module, kernel.name + ".hlo"));
  ProfileRequest pr;
  pr.implementation = impl.implementation;
  pr.library = lib;
  MK_ASSIGN_OR_RETURN(pr.inputs, task::GenerateInputs(t, 0));
  pr.target = plan.target;
  pr.flops = kernel.flops;
  pr.bytes = kernel.bytes;
  pr.compute_dtype = plan.kernels[k].compute_dtype;
  pr.protocol = protocol;
  MK_ASSIGN_OR_RETURN(Profile p, RunProfiler(pr, engine.sandbox()));
  if (!p.ok()) return Internal(p.status + ": " + p.message);
  return p.timing.median_s;
}

}  // namespace

Result<std::vector<KernelTiming>> ProfileKernels(const Plan& plan, const space::Candidate& candidate,
                                                 CpuEngine& engine, const TimingProtocol& protocol,
                                                 int max_kernels) {
  std::vector<size_t> order(plan.kernels.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return plan.kernels[a].lower_bound_s > plan.kernels[b].lower_bound_s;
  });
  if (max_kernels >= 0 && order.size() > static_cast<size_t>(max_kernels)) {
    order.resize(static_cast<size_t>(max_kernels));
  }
  std::vector<KernelTiming> out;
  for (size_t k : order) {
    KernelTiming t;
    t.kernel_id = plan.kernels[k].id;
    Result<double> s = TimeKernel(plan, k, candidate, engine, protocol);
    if (s.ok()) t.median_s = *s;
    else t.error = s.status().message();
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace mk::agents
