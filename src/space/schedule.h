// Schedules: the tunable choices of one kernel (named integer parameters), their domains, and a
// candidate = one schedule per kernel of a fusion plan. Every target's emitters read their
// parameters from here, so planners and search drive all targets through one type.
#pragma once

#include <cstdint>
#include <map>
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

// The declared design space of one kernel for one target.
struct KernelSpace {
  std::vector<ParamDomain> params;
  Schedule Initial() const {
    Schedule s;
    for (const auto& p : params) s.values[p.name] = p.initial;
    return s;
  }
};

// One point of the whole space: a schedule per kernel of the plan (by kernel index).
struct Candidate {
  std::vector<Schedule> kernels;
  const Schedule& For(size_t kernel) const {
    static const Schedule kEmpty;
    return kernel < kernels.size() ? kernels[kernel] : kEmpty;
  }
};

nlohmann::json ToJson(const Schedule& s);
nlohmann::json ToJson(const Candidate& c);
Candidate CandidateFromJson(const nlohmann::json& j);

}  // namespace mk::space
