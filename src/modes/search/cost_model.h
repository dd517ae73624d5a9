// The learned cost model (issue 35, item 4): gradient-boosted trees (XGBoost, through its C API)
// with a pairwise ranking objective. It never predicts seconds, only which of two candidates of
// one task is faster, which is all a search needs to order its frontier, and what transfers
// between tasks whose absolute times differ by orders of magnitude.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "support/status.h"

namespace mk::modes::search {

// Training rows, grouped: the rows of one group (one task on one machine) are ranked against
// each other only. `relevance`: higher is faster.
struct RankingData {
  size_t columns = 0;
  std::vector<float> rows;           // row-major, rows.size() = n * columns; NaN = missing
  std::vector<float> relevance;      // one per row
  std::vector<unsigned> group_sizes; // consecutive rows per group; sums to n
  size_t size() const { return columns ? rows.size() / columns : 0; }
  void Add(const std::vector<float>& features, float rel);  // to the last group
  void NewGroup() { group_sizes.push_back(0); }
};

// Relevance labels for a group's measured times: 0 (slowest) .. 31 (fastest), by the time's
// ratio to the group's best on a log scale, so that a 2% difference still ranks.
std::vector<float> RelevanceOfTimes(const std::vector<double>& times_s);

class CostModel {
 public:
  struct Options {
    int rounds = 40;
    int max_depth = 4;
    double eta = 0.3;
    int threads = 1;  // the search's machine is the one being measured: keep it quiet
    uint64_t seed = 0;
  };
  ~CostModel();
  CostModel(CostModel&&) noexcept;
  CostModel& operator=(CostModel&&) noexcept;

  static Result<CostModel> Train(const RankingData& data, const Options& options);
  static Result<CostModel> Train(const RankingData& data) { return Train(data, Options{}); }
  // Scores (higher = predicted faster) for `rows` (row-major, `columns` wide).
  Result<std::vector<float>> Predict(const std::vector<float>& rows, size_t columns) const;
  // The model as bytes (its column count, a newline, XGBoost's JSON model), to store as an
  // artifact, and back. Deserialize also takes XGBoost's own model file (JSON or UBJSON, no
  // column count: XGBoost's feature count is taken).
  Result<std::string> Serialize() const;
  static Result<CostModel> Deserialize(const std::string& bytes);
  // XGBoost's JSON model alone (what `xgboost.Booster.load_model` reads).
  Result<std::string> SerializeXgboost() const;
  size_t columns() const { return columns_; }

 private:
  CostModel() = default;
  void* booster_ = nullptr;  // BoosterHandle
  size_t columns_ = 0;
};

}  // namespace mk::modes::search
