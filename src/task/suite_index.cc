#include "task/suite_index.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/regular_file.h"

namespace mk::task {

using nlohmann::json;

Result<json> LoadSuiteIndex(const std::string& suite_dir) {
  const std::string path = suite_dir + "/suite.json";
  Result<std::string> text = ReadRegularFile(path);
  if (!text.ok() && text.status().code() == ErrorCode::kNotFound) {
    return NotFound(path + ": no such file");
  }
  MK_RETURN_IF_ERROR(text.status());
  json index = json::parse(*text, nullptr, /*allow_exceptions=*/false);
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
