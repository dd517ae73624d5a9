// The cost model persisted (issue 35, item 4): the model a search run trained is kept as a
// content-addressed artifact, and an event "search.model" on the run records its sha256 with
// the target and the CPU model it was trained on. A later search on the same target and CPU
// model starts from the newest such model ("transfer"), unless `--model FILE` names a prior or
// the model is off; the result's `search.prior` says which prior it used.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "modes/search/cost_model.h"
#include "store/artifact_store.h"
#include "store/store.h"
#include "support/status.h"

namespace mk::modes::search {

inline constexpr const char* kModelEvent = "search.model";
inline constexpr const char* kModelMediaType = "application/x-maxkernel-cost-model";

// Where a search's starting model came from.
struct Prior {
  std::string source = "none";  // "none" (a cold start), "file" (--model), "store" (transfer)
  std::string sha256;           // the model's artifact ("" for none)
  std::string path;             // --model FILE
  std::optional<int64_t> run_id;  // the run that trained it (source "store")
  std::string note;             // why a stored model was passed over, if one was
  std::optional<CostModel> model;
  // {"source", "sha256", "path", "run_id", "note"}; null for what is absent.
  nlohmann::json ToJson() const;
};

// A model file: maxkernel's form (`--save-model`) or XGBoost's own (JSON or UBJSON). It must
// have `columns` features (the feature map's width). Errors name the file.
Result<CostModel> LoadModelFile(const std::string& path, size_t columns);

// The prior of a new search: the file when `model_file` is given (stored as an artifact, so a
// resumed run finds it again), else the newest model stored for (target, cpu_model) with
// `columns` features, else none.
Result<Prior> ChoosePrior(store::Store& db, store::ArtifactStore& artifacts,
                          const std::string& model_file, const std::string& target,
                          const std::string& cpu_model, size_t columns);
// The prior a resumed run used: its artifact by sha256 ("" : none).
Result<Prior> PriorOfArtifact(store::ArtifactStore& artifacts, const nlohmann::json& stored,
                              size_t columns);

// Stores a model trained by run `run_id` and records it (the event kModelEvent); returns its
// sha256.
Result<std::string> SaveRunModel(store::Store& db, store::ArtifactStore& artifacts, int64_t run_id,
                                 const std::string& target, const std::string& cpu_model,
                                 const CostModel& model, size_t rows);

}  // namespace mk::modes::search
