#include "space/schedule.h"

#include <algorithm>
#include <cstdlib>

namespace mk::space {

const Constraint* KernelSpace::Violated(const Schedule& s) const {
  for (const auto& c : constraints) {
    if (c.check && c.check(s) == Verdict::kViolated) return &c;
  }
  return nullptr;
}

int64_t MedianValue(const ParamDomain& d) {
  return d.values.empty() ? d.initial : d.values[(d.values.size() - 1) / 2];
}

namespace {

// Bounds NearestLegal's walk: constraints decide on a few parameters, so a legal point is found
// after little backtracking; a space where it is not gets its medians as they are.
constexpr int64_t kMaxNearestLegalSteps = 100000;

bool Place(const KernelSpace& s, const Schedule& preferred, size_t i, Schedule& partial,
           int64_t& steps) {
  if (i == s.params.size()) return true;
  const ParamDomain& d = s.params[i];
  if (d.values.empty()) {
    partial.values[d.name] = preferred.Get(d.name, d.initial);
    return Place(s, preferred, i + 1, partial, steps);
  }
  const int64_t want = preferred.Get(d.name, d.initial);
  auto it = std::lower_bound(d.values.begin(), d.values.end(), want);
  int centre = static_cast<int>(it - d.values.begin());
  if (it == d.values.end() || *it != want) {
    // Not in the domain: start from the nearer neighbour.
    if (it == d.values.end() || (it != d.values.begin() && want - *(it - 1) <= *it - want)) --centre;
  }
  std::vector<int> order(d.values.size());
  for (size_t j = 0; j < order.size(); ++j) order[j] = static_cast<int>(j);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const int da = std::abs(a - centre), db = std::abs(b - centre);
    return da != db ? da < db : a < b;
  });
  for (int j : order) {
    if (++steps > kMaxNearestLegalSteps) return false;
    partial.values[d.name] = d.values[static_cast<size_t>(j)];
    if (s.Violated(partial)) continue;
    if (Place(s, preferred, i + 1, partial, steps)) return true;
    if (steps > kMaxNearestLegalSteps) return false;
  }
  partial.values.erase(d.name);
  return false;
}

}  // namespace

std::optional<Schedule> NearestLegal(const KernelSpace& s, const Schedule& preferred) {
  Schedule partial;
  int64_t steps = 0;
  if (!Place(s, preferred, 0, partial, steps)) return std::nullopt;
  return partial;
}

void CenterOnMedians(KernelSpace& s) {
  Schedule medians;
  for (auto& p : s.params) {
    p.initial = MedianValue(p);
    medians.values[p.name] = p.initial;
  }
  if (s.constraints.empty()) return;
  if (std::optional<Schedule> legal = NearestLegal(s, medians)) {
    for (auto& p : s.params) p.initial = legal->Get(p.name, p.initial);
  }
}

nlohmann::json ToJson(const Schedule& s) { return nlohmann::json(s.values); }

nlohmann::json ToJson(const Candidate& c) {
  nlohmann::json kernels = nlohmann::json::array();
  for (const auto& s : c.kernels) kernels.push_back(ToJson(s));
  nlohmann::json j = {{"kernels", kernels}};
  if (!c.fusion.empty()) j["fusion"] = c.fusion;
  if (!c.kernel_ids.empty()) j["kernel_ids"] = c.kernel_ids;
  return j;
}

Candidate CandidateFromJson(const nlohmann::json& j) {
  Candidate c;
  if (!j.is_object() || !j.contains("kernels") || !j["kernels"].is_array()) return c;
  for (const auto& k : j["kernels"]) {
    Schedule s;
    if (k.is_object()) {
      for (const auto& [name, v] : k.items()) {
        if (v.is_number_integer()) s.values[name] = v.get<int64_t>();
      }
    }
    c.kernels.push_back(std::move(s));
  }
  if (j.contains("fusion") && j["fusion"].is_object()) {
    for (const auto& [key, v] : j["fusion"].items()) {
      if (v.is_boolean()) c.fusion[key] = v.get<bool>();
    }
  }
  if (j.contains("kernel_ids") && j["kernel_ids"].is_array()) {
    for (const auto& id : j["kernel_ids"]) {
      if (id.is_string()) c.kernel_ids.push_back(id.get<std::string>());
    }
  }
  return c;
}

}  // namespace mk::space
