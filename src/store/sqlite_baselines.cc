// SqliteStore's baselines table (migration 4; store.h: BaselineRecord).
#include <cmath>

#include <nlohmann/json.hpp>

#include "store/sqlite_store.h"

namespace mk::store {

Result<int64_t> SqliteStore::AddBaseline(const BaselineRecord& b) {
  if (b.module_sha256.size() != 64) return InvalidArgument("baseline has no module sha256");
  if (b.cpu_model.empty() || b.engine.empty()) {
    return InvalidArgument("baseline needs a cpu model and an engine");
  }
  auto finite_nonneg = [](double x) { return x >= 0 && std::isfinite(x); };
  if (!(b.median_s > 0) || !std::isfinite(b.median_s) || !finite_nonneg(b.p10_s) ||
      !finite_nonneg(b.p90_s) || b.runs < 0) {
    return InvalidArgument("baseline times must be finite, its median positive");
  }
  const std::string details = b.details_json.empty() ? "{}" : b.details_json;
  if (!nlohmann::json::parse(details, nullptr, false).is_object()) {
    return InvalidArgument("baseline details must be a JSON object");
  }
  std::lock_guard lock(mu_);
  int64_t id = 0;
  MK_RETURN_IF_ERROR(db_->WriteTransaction([&]() -> Status {
    MK_ASSIGN_OR_RETURN(auto insert,
                        db_->Query("INSERT INTO baselines (module_sha256, cpu_model, engine, "
                                   "engine_version, median_s, p10_s, p90_s, runs, details_json, "
                                   "measured_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
    insert->Bind(1, std::string_view(b.module_sha256))
        .Bind(2, std::string_view(b.cpu_model))
        .Bind(3, std::string_view(b.engine))
        .Bind(4, std::string_view(b.engine_version))
        .Bind(5, b.median_s)
        .Bind(6, b.p10_s)
        .Bind(7, b.p90_s)
        .Bind(8, b.runs)
        .Bind(9, std::string_view(details))
        .Bind(10, Now());
    MK_RETURN_IF_ERROR(insert->Run());
    id = db_->LastInsertId();
    return Status::Ok();
  }));
  return id;
}

Result<std::optional<BaselineRecord>> SqliteStore::LatestBaseline(std::string_view module_sha256,
                                                                  std::string_view cpu_model,
                                                                  std::string_view engine) {
  std::lock_guard lock(mu_);
  MK_ASSIGN_OR_RETURN(auto cursor,
                      db_->Query("SELECT id, module_sha256, cpu_model, engine, engine_version, "
                                 "median_s, p10_s, p90_s, runs, details_json, measured_at FROM "
                                 "baselines WHERE module_sha256 = ? AND cpu_model = ? AND "
                                 "engine = ? ORDER BY id DESC LIMIT 1"));
  cursor->Bind(1, module_sha256).Bind(2, cpu_model).Bind(3, engine);
  MK_ASSIGN_OR_RETURN(bool row, cursor->Step());
  if (!row) return std::optional<BaselineRecord>();
  BaselineRecord b;
  b.id = cursor->Int(0);
  b.module_sha256 = cursor->Text(1);
  b.cpu_model = cursor->Text(2);
  b.engine = cursor->Text(3);
  b.engine_version = cursor->Text(4);
  b.median_s = cursor->Real(5);
  b.p10_s = cursor->Real(6);
  b.p90_s = cursor->Real(7);
  b.runs = cursor->Int(8);
  b.details_json = cursor->Text(9);
  b.measured_at = cursor->Real(10);
  return std::optional<BaselineRecord>(std::move(b));
}

}  // namespace mk::store
