#include "export/run_export_store.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <vector>

#include "store/migrations.h"
#include "store/sqlite_store.h"

namespace mk::exports {

namespace fs = std::filesystem;

Result<OpenedStore> OpenExistingStore(const std::string& db_override, const store::EnvLookup& env) {
  OpenedStore opened;
  MK_ASSIGN_OR_RETURN(opened.dir, store::ResolveDataDir(db_override, env));
  std::error_code ec;
  if (!fs::exists(opened.dir.db_path, ec)) {
    std::string hint = opened.dir.db_overridden
                           ? "check the --db path"
                           : "nothing has been stored in this data directory yet; set "
                             "MAXKERNEL_HOME or pass --db to use another";
    return NotFound("no maxkernel database at " + opened.dir.db_path.string() + " (" + hint + ")");
  }
  // Read-only: these commands never write, so a database the user may only read (chmod 0444,
  // read-only media) still lists. A database older than this maxkernel must be upgraded first,
  // which needs a writing connection (and fails, saying so, when the file is read-only).
  store::SqliteStoreOptions options;
  options.create = false;
  options.read_only = true;
  MK_ASSIGN_OR_RETURN(auto db, store::SqliteStore::Open(opened.dir.db_path.string(), options));
  MK_ASSIGN_OR_RETURN(int version, db->SchemaVersion());
  if (version < store::LatestSchemaVersion()) {
    db.reset();
    options.read_only = false;
    MK_ASSIGN_OR_RETURN(db, store::SqliteStore::Open(opened.dir.db_path.string(), options));
  }
  opened.db = std::move(db);
  opened.artifacts = std::make_unique<store::ArtifactStore>(opened.dir.root);
  return opened;
}

Result<std::string> ResolveArtifactSha(const store::ArtifactStore& artifacts,
                                       std::string_view prefix) {
  const std::string given(prefix);
  std::string p;
  for (char c : given) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) {
      return InvalidArgument("'" + given +
                             "' is not an artifact name (sha256 hex digits expected)");
    }
    p += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (p.size() < kMinArtifactPrefix || p.size() > 64) {
    return InvalidArgument("artifact name '" + given + "' must have " +
                           std::to_string(kMinArtifactPrefix) + " to 64 hex digits");
  }
  if (p.size() == 64) {
    if (!artifacts.Contains(p)) return NotFound("artifact " + p + " not found");
    return p;
  }
  // Artifacts live in a folder named by their first two digits (artifact_store.h): only that
  // folder can hold a match. Metadata and temp files have other names and are skipped.
  fs::path folder = artifacts.PathFor(p + std::string(64 - p.size(), '0')).parent_path();
  std::vector<std::string> matches;
  std::error_code ec;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (store::ArtifactStore::IsValidSha256(name) && name.compare(0, p.size(), p) == 0) {
      matches.push_back(name);
    }
  }
  if (matches.empty()) return NotFound("no artifact starts with " + p);
  if (matches.size() > 1) {
    std::sort(matches.begin(), matches.end());
    std::string listed;
    for (size_t i = 0; i < matches.size() && i < 3; ++i) listed += (i ? ", " : "") + matches[i];
    if (matches.size() > 3) listed += ", ...";
    return InvalidArgument("artifact prefix " + p +
                           " is ambiguous: " + std::to_string(matches.size()) +
                           " artifacts match (" + listed + "); give more digits");
  }
  return matches.front();
}

Result<int64_t> ParseRunId(std::string_view text) {
  int64_t id = 0;
  bool ok = !text.empty() && text.size() <= 18;
  for (char c : text) {
    if (c < '0' || c > '9') ok = false;
    if (ok) id = id * 10 + (c - '0');
  }
  if (!ok || id <= 0) {
    // Built by appending: GCC 12 warns (-Wrestrict, a false positive) on "'" + std::string(...).
    std::string message = "'";
    message.append(text);
    message += "' is not a run id (a positive integer, as `maxkernel runs list` shows)";
    return InvalidArgument(message);
  }
  return id;
}

}  // namespace mk::exports
