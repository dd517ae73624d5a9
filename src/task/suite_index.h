// The suite index (bench/jaxbench/suite.json, written by `python3 -m maxkernel_jax
// suite-index`): one entry per workload with its id, name, operator, description, tolerance,
// workload file and scales. `suite list` prints it; `bench --suite-shapes gemm` picks workloads
// from it by operator.
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "support/status.h"

namespace mk::task {

// SUITE_DIR/suite.json, checked to be an index: {"workloads": [{"id": ..., "scales": {...}}]}.
Result<nlohmann::json> LoadSuiteIndex(const std::string& suite_dir);

// The ids of the index's workloads whose "operator" is one of `operators`, in index order.
std::vector<std::string> SuiteIdsWithOperator(const nlohmann::json& index,
                                              const std::set<std::string>& operators);

}  // namespace mk::task
