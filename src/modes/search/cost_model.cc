#include "modes/search/cost_model.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace mk::modes::search {

namespace {

Status XgbError(const char* what) {
  return Internal(std::string("XGBoost ") + what + ": " + XGBGetLastError());
}

// A DMatrix freed on every path.
struct Matrix {
  DMatrixHandle h = nullptr;
  ~Matrix() {
    if (h) XGDMatrixFree(h);
  }
};


}  // namespace

void RankingData::Add(const std::vector<float>& features, float rel) {
  if (columns == 0) columns = features.size();
  if (group_sizes.empty()) group_sizes.push_back(0);
  rows.insert(rows.end(), features.begin(), features.end());
  relevance.push_back(rel);
  ++group_sizes.back();
}

std::vector<float> RelevanceOfTimes(const std::vector<double>& times_s) {
  double best = INFINITY;
  for (double t : times_s) if (t > 0) best = std::min(best, t);
  std::vector<float> rel;
  for (double t : times_s) {
    if (!(t > 0) || !std::isfinite(best)) {
      rel.push_back(0);
      continue;
    }
    // 1.0x -> 31, each 2% slower one step down (log base 1.02), floored at 0.
    const double steps = std::log(t / best) / std::log(1.02);
    rel.push_back(static_cast<float>(std::max(0.0, 31.0 - std::floor(steps))));
  }
  return rel;
}

CostModel::~CostModel() {
  if (booster_) XGBoosterFree(booster_);
}
CostModel::CostModel(CostModel&& o) noexcept : booster_(o.booster_), columns_(o.columns_) {
  o.booster_ = nullptr;
}
CostModel& CostModel::operator=(CostModel&& o) noexcept {
  if (this != &o) {
    if (booster_) XGBoosterFree(booster_);
    booster_ = o.booster_;
    columns_ = o.columns_;
    o.booster_ = nullptr;
  }
  return *this;
}

Result<CostModel> CostModel::Train(const RankingData& data, const Options& o) {
  const size_t n = data.size();
  if (n < 2 || data.columns == 0) return InvalidArgument("a cost model needs at least 2 rows");
  if (data.relevance.size() != n) return InvalidArgument("one relevance label per row");
  if (std::accumulate(data.group_sizes.begin(), data.group_sizes.end(), size_t{0}) != n) {
    return InvalidArgument("the groups do not add up to the rows");
  }
  Matrix m;
  if (XGDMatrixCreateFromMat(data.rows.data(), n, data.columns, NAN, &m.h) != 0) {
    return XgbError("matrix");
  }
  if (XGDMatrixSetFloatInfo(m.h, "label", data.relevance.data(), n) != 0 ||
      XGDMatrixSetUIntInfo(m.h, "group", data.group_sizes.data(), data.group_sizes.size()) != 0) {
    return XgbError("labels");
  }
  CostModel model;
  model.columns_ = data.columns;
  if (XGBoosterCreate(&m.h, 1, &model.booster_) != 0) return XgbError("booster");
  const std::pair<const char*, std::string> params[] = {
      {"objective", "rank:pairwise"},
      {"max_depth", std::to_string(o.max_depth)},
      {"eta", std::to_string(o.eta)},
      {"nthread", std::to_string(o.threads)},
      {"seed", std::to_string(o.seed)},
      {"verbosity", "0"},
  };
  for (const auto& [k, v] : params) {
    if (XGBoosterSetParam(model.booster_, k, v.c_str()) != 0) return XgbError(k);
  }
  for (int i = 0; i < o.rounds; ++i) {
    if (XGBoosterUpdateOneIter(model.booster_, i, m.h) != 0) return XgbError("training");
  }
  return model;
}

Result<std::vector<float>> CostModel::Predict(const std::vector<float>& rows, size_t columns) const {
  if (columns != columns_) {
    return InvalidArgument("the model was trained on " + std::to_string(columns_) +
                           " features, not " + std::to_string(columns));
  }
  if (rows.empty()) return std::vector<float>{};
  Matrix m;
  if (XGDMatrixCreateFromMat(rows.data(), rows.size() / columns, columns, NAN, &m.h) != 0) {
    return XgbError("matrix");
  }
  bst_ulong len = 0;
  const float* out = nullptr;
  if (XGBoosterPredict(booster_, m.h, 0, 0, 0, &len, &out) != 0) return XgbError("prediction");
  return std::vector<float>(out, out + len);
}

Result<std::string> CostModel::Serialize() const {
  bst_ulong len = 0;
  const char* bytes = nullptr;
  if (XGBoosterSaveModelToBuffer(booster_, R"({"format": "json"})", &len, &bytes) != 0) {
    return XgbError("saving");
  }
  // The column count first, so a loaded model refuses rows of another layout.
  return std::to_string(columns_) + "\n" + std::string(bytes, len);
}

Result<CostModel> CostModel::Deserialize(const std::string& bytes) {
  // maxkernel's form starts with the column count; anything else is tried as XGBoost's own model
  // (JSON or UBJSON, as `Booster.save_model` writes it), whose feature count XGBoost knows.
  const bool ours = !bytes.empty() && bytes[0] >= '0' && bytes[0] <= '9';
  size_t skip = 0;
  CostModel model;
  if (ours) {
    const size_t nl = bytes.find('\n');
    if (nl == std::string::npos || nl == 0 || nl > 6) return InvalidArgument("not a maxkernel cost model");
    try {
      model.columns_ = std::stoul(bytes.substr(0, nl));
    } catch (...) {
      return InvalidArgument("not a maxkernel cost model");
    }
    skip = nl + 1;
  } else if (bytes.empty() || bytes[0] != '{') {
    return InvalidArgument("not a maxkernel cost model nor an XGBoost model");
  }
  if (XGBoosterCreate(nullptr, 0, &model.booster_) != 0) return XgbError("booster");
  if (XGBoosterLoadModelFromBuffer(model.booster_, bytes.data() + skip, bytes.size() - skip) != 0) {
    return XgbError("loading");
  }
  if (!ours) {
    bst_ulong features = 0;
    if (XGBoosterGetNumFeature(model.booster_, &features) != 0) return XgbError("reading the feature count");
    if (features == 0) return InvalidArgument("the XGBoost model has no features");
    model.columns_ = static_cast<size_t>(features);
  }
  return model;
}

Result<std::string> CostModel::SerializeXgboost() const {
  bst_ulong len = 0;
  const char* bytes = nullptr;
  if (XGBoosterSaveModelToBuffer(booster_, R"({"format": "json"})", &len, &bytes) != 0) {
    return XgbError("saving");
  }
  return std::string(bytes, len);
}

}  // namespace mk::modes::search
