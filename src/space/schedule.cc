#include "space/schedule.h"

namespace mk::space {

nlohmann::json ToJson(const Schedule& s) { return nlohmann::json(s.values); }

nlohmann::json ToJson(const Candidate& c) {
  nlohmann::json kernels = nlohmann::json::array();
  for (const auto& s : c.kernels) kernels.push_back(ToJson(s));
  return {{"kernels", kernels}};
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
  return c;
}

}  // namespace mk::space
