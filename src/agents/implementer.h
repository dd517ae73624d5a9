// The implementer agent (DESIGN.md §4): a plan and a candidate -> an Implementation (sources,
// flags, buffer ABI, hash) for the plan's target. It checks the candidate against the plan's
// declared spaces first, so a proposal from any driver (auto, hitl, search, a person editing
// JSON) is either a legal point of the space or a clear error naming the kernel and parameter:
// emitters never see values they did not declare.
#pragma once

#include <nlohmann/json.hpp>

#include "agents/planner.h"
#include "codegen/emitter.h"
#include "space/schedule.h"

namespace mk::agents {

struct Implemented {
  space::Candidate candidate;  // the candidate as emitted: missing parameters filled in
  codegen::Implementation implementation;
};

// `candidate` with every kernel's missing parameters set to their initial values; an error
// for a kernel count that differs from the plan's, an undeclared parameter, or a value outside
// its domain.
Result<space::Candidate> CompleteCandidate(const Plan& plan, const space::Candidate& candidate);

Result<Implemented> RunImplementer(const Plan& plan, const space::Candidate& candidate,
                                   const codegen::Emitter& emitter);

}  // namespace mk::agents
