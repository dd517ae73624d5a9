#include "agents/implementer.h"

#include <algorithm>

namespace mk::agents {

Result<space::Candidate> CompleteCandidate(const Plan& plan, const space::Candidate& candidate) {
  if (candidate.fusion != plan.fusion_choices) {
    auto text = [](const std::map<std::string, bool>& m) {
      std::string s;
      for (const auto& [key, fuse] : m) s += (s.empty() ? "" : ", ") + key + (fuse ? "=fuse" : "=apart");
      return s.empty() ? std::string("the planner's own") : s;
    };
    return InvalidArgument("the candidate's fusion choices (" + text(candidate.fusion) +
                           ") are not this plan's (" + text(plan.fusion_choices) + ")");
  }
  if (candidate.kernels.size() != plan.spaces.size()) {
    return InvalidArgument("the candidate has schedules for " +
                           std::to_string(candidate.kernels.size()) + " kernel(s), the plan has " +
                           std::to_string(plan.spaces.size()));
  }
  space::Candidate complete;
  complete.fusion = plan.fusion_choices;
  for (size_t k = 0; k < plan.spaces.size(); ++k) {
    const std::string& id = plan.kernels[k].key;
    if (!candidate.kernel_ids.empty() && candidate.kernel_ids.size() != plan.spaces.size()) {
      return InvalidArgument("the candidate names " + std::to_string(candidate.kernel_ids.size()) +
                             " kernel id(s) for " + std::to_string(plan.spaces.size()) + " kernel(s)");
    }
    if (!candidate.kernel_ids.empty() && candidate.kernel_ids[k] != id) {
      return InvalidArgument("the candidate's kernel " + std::to_string(k) + " is '" +
                             candidate.kernel_ids[k] + "', the plan's is '" + id + "'");
    }
    complete.kernel_ids.push_back(id);
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
