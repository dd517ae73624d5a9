#include "store/store.h"

#include <nlohmann/json.hpp>

#include "store/sqlite_store.h"

namespace mk::store {

namespace {

// One table per enumeration: the position is the enumerator's value.
constexpr std::string_view kRunModeNames[] = {"auto", "hitl", "search"};
constexpr std::string_view kRunStatusNames[] = {"running", "succeeded", "failed", "cancelled"};
constexpr std::string_view kCandidateStatusNames[] = {"proposed",    "built",   "build_failed",
                                                      "test_failed", "correct", "duplicate"};
constexpr std::string_view kBuildStatusNames[] = {"ok", "failed", "timeout"};

template <typename Enum, size_t N>
std::string_view NameOf(const std::string_view (&names)[N], Enum value) {
  auto index = static_cast<size_t>(value);
  return index < N ? names[index] : std::string_view("?");
}

template <typename Enum, size_t N>
Result<Enum> Parse(const std::string_view (&names)[N], std::string_view name, const char* what) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<Enum>(i);
  }
  return InvalidArgument("unknown " + std::string(what) + " '" + std::string(name) + "'");
}

}  // namespace

std::string_view RunModeName(RunMode mode) {
  return NameOf(kRunModeNames, mode);
}
std::string_view RunStatusName(RunStatus status) {
  return NameOf(kRunStatusNames, status);
}
std::string_view CandidateStatusName(CandidateStatus status) {
  return NameOf(kCandidateStatusNames, status);
}
std::string_view BuildStatusName(BuildStatus status) {
  return NameOf(kBuildStatusNames, status);
}

Result<RunMode> ParseRunMode(std::string_view name) {
  return Parse<RunMode>(kRunModeNames, name, "run mode");
}
Result<RunStatus> ParseRunStatus(std::string_view name) {
  return Parse<RunStatus>(kRunStatusNames, name, "run status");
}
Result<CandidateStatus> ParseCandidateStatus(std::string_view name) {
  return Parse<CandidateStatus>(kCandidateStatusNames, name, "candidate status");
}
Result<BuildStatus> ParseBuildStatus(std::string_view name) {
  return Parse<BuildStatus>(kBuildStatusNames, name, "build status");
}

std::string EventRecord::ToJsonLine() const {
  nlohmann::ordered_json line;
  line["id"] = id;
  line["ts"] = ts;
  line["run"] = run_id.has_value() ? nlohmann::ordered_json(*run_id) : nullptr;
  line["kind"] = kind;
  // The store only accepts valid JSON payloads; a row edited by hand is shown as a string.
  auto payload = nlohmann::ordered_json::parse(payload_json, nullptr, /*allow_exceptions=*/false);
  line["payload"] = payload.is_discarded() ? nlohmann::ordered_json(payload_json) : payload;
  return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<std::unique_ptr<Store>> OpenStore(const std::string& location) {
  constexpr std::string_view kSqlitePrefix = "sqlite:";
  if (location.starts_with("postgres://") || location.starts_with("postgresql://")) {
    return Unimplemented("the PostgreSQL store is not implemented yet: " + location);
  }
  std::string path = location;
  if (location.starts_with(kSqlitePrefix)) path = location.substr(kSqlitePrefix.size());
  MK_ASSIGN_OR_RETURN(auto store, SqliteStore::Open(path));
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace mk::store
