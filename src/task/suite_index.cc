#include "task/suite_index.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace mk::task {

using nlohmann::json;

Result<json> LoadSuiteIndex(const std::string& suite_dir) {
  const std::string path = suite_dir + "/suite.json";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return NotFound(path + ": no such file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError("cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  json index = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (index.is_discarded() || !index.is_object() || !index.contains("workloads") ||
      !index["workloads"].is_array()) {
    return InvalidArgument(path + ": not a suite index (regenerate it with "
                           "`python3 -m maxkernel_jax suite-index`)");
  }
  for (const json& w : index["workloads"]) {
    if (!w.is_object() || !w.contains("id") || !w["id"].is_string() || !w.contains("scales") ||
        !w["scales"].is_object()) {
      return InvalidArgument(path + ": malformed workload entry");
    }
  }
  return index;
}

std::vector<std::string> SuiteIdsWithOperator(const json& index,
                                              const std::set<std::string>& operators) {
  std::vector<std::string> ids;
  for (const json& w : index["workloads"]) {
    if (w.contains("operator") && w["operator"].is_string() &&
        operators.count(w["operator"].get<std::string>())) {
      ids.push_back(w["id"].get<std::string>());
    }
  }
  return ids;
}

}  // namespace mk::task
