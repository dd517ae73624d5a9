#include "agents/implementer.h"

#include <algorithm>

namespace mk::agents {

Result<space::Candidate> CompleteCandidate(const Plan& plan, const space::Candidate& candidate) {
  if (candidate.kernels.size() != plan.spaces.size()) {
    return InvalidArgument("the candidate has schedules for " +
                           std::to_string(candidate.kernels.size()) + " kernel(s), the plan has " +
                           std::to_string(plan.spaces.size()));
  }
  space::Candidate complete;
  for (size_t k = 0; k < plan.spaces.size(); ++k) {
    const space::KernelSpace& space = plan.spaces[k];
    const space::Schedule& given = candidate.kernels[k];
    space::Schedule s;
    for (const auto& [name, value] : given.values) {
      auto p = std::find_if(space.params.begin(), space.params.end(),
                            [&](const space::ParamDomain& d) { return d.name == name; });
      if (p == space.params.end()) {
        return InvalidArgument("kernel " + std::to_string(k) + " (" + plan.kernels[k].name +
                               ") has no parameter '" + name + "'");
      }
      if (std::find(p->values.begin(), p->values.end(), value) == p->values.end()) {
        return InvalidArgument("kernel " + std::to_string(k) + " (" + plan.kernels[k].name +
                               "): " + name + "=" + std::to_string(value) +
                               " is outside its domain");
      }
      s.values[name] = value;
    }
    for (const auto& p : space.params) s.values.emplace(p.name, p.initial);
    complete.kernels.push_back(std::move(s));
  }
  return complete;
}

Result<Implemented> RunImplementer(const Plan& plan, const space::Candidate& candidate,
                                   const codegen::Emitter& emitter) {
  Implemented out;
  MK_ASSIGN_OR_RETURN(out.candidate, CompleteCandidate(plan, candidate));
  MK_ASSIGN_OR_RETURN(out.implementation, emitter.Emit(plan.fusion, out.candidate, plan.target));
  return out;
}

}  // namespace mk::agents
