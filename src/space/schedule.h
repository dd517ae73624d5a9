// Schedules: the tunable choices of one kernel (named integer parameters), their domains, and a
// candidate = one schedule per kernel of a fusion plan. Every target's emitters read their
// parameters from here, so planners and search drive all targets through one type.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mk::space {

struct Schedule {
  std::map<std::string, int64_t> values;
  int64_t Get(const std::string& name, int64_t fallback) const {
    auto it = values.find(name);
    return it == values.end() ? fallback : it->second;
  }
  bool operator==(const Schedule&) const = default;
};

struct ParamDomain {
  std::string name;             // "threads", "vector_width", "tile_m", "unroll" ...
  std::vector<int64_t> values;  // legal values, ascending
  int64_t initial = 0;          // the analytical model's choice
  std::string doc;              // one line: what it controls
};

// A constraint's verdict on a schedule that may be partial (its undecided parameters absent).
enum class Verdict { kOk, kViolated, kUnknown };

// A joint constraint over several parameters of one kernel (tile sizes that must fit a cache or
// the register file together): a point that violates it is never proposed. `check` sees a
// schedule holding the parameters decided so far; it answers kUnknown until what it reads is
// decided, and must decide (kOk or kViolated) once every parameter of the space is set.
// Declared only where the emitter relies on it: `reason` says what breaks.
struct Constraint {
  std::string name;    // "register_tile"
  std::string reason;  // one line: why the emitter needs it
  std::function<Verdict(const Schedule&)> check;
};

// The declared design space of one kernel for one target.
struct KernelSpace {
  std::vector<ParamDomain> params;
  std::vector<Constraint> constraints;
  Schedule Initial() const {
    Schedule s;
    for (const auto& p : params) s.values[p.name] = p.initial;
    return s;
  }
  // The first constraint `s` (possibly partial) is decided to violate; nullptr when none is.
  const Constraint* Violated(const Schedule& s) const;
};

// A domain's median value (the lower of the two middle ones of an even count; the initial of an
// empty domain).
int64_t MedianValue(const ParamDomain& d);

// The legal point nearest `preferred`: each parameter in declaration order takes the first
// value, by distance in the domain from preferred's (ties: the smaller), that leaves no
// constraint violated, backtracking where a later parameter has none. `preferred` itself when it
// is legal; nullopt when no legal point is found within a bounded walk.
std::optional<Schedule> NearestLegal(const KernelSpace& s, const Schedule& preferred);

// Moves every initial to its domain's median, then the whole schedule to the nearest legal
// point (NearestLegal; the medians as they are when none is found). Spaces declared without the
// analytical rules start here.
void CenterOnMedians(KernelSpace& s);

// One point of the whole space: a schedule per kernel of the plan (by kernel index).
struct Candidate {
  std::vector<Schedule> kernels;
  // The fusion choices that differ from the planner's (analysis::FusionChoice keys -> fuse or
  // not); empty: the planner's own kernels. The kernels above are those of the plan these
  // choices give.
  std::map<std::string, bool> fusion;
  // Each kernel's stable id (analysis::Kernel::key), as the implementer completed it; a
  // proposal may leave it empty, and one that names ids must name the plan's, in its order.
  std::vector<std::string> kernel_ids;
  const Schedule& For(size_t kernel) const {
    static const Schedule kEmpty;
    return kernel < kernels.size() ? kernels[kernel] : kEmpty;
  }
};

nlohmann::json ToJson(const Schedule& s);
nlohmann::json ToJson(const Candidate& c);
Candidate CandidateFromJson(const nlohmann::json& j);

}  // namespace mk::space
