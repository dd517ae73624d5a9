#include "store/migrations.h"

#include <cstdio>

namespace mk::store {

namespace {

// Why the shape of the schema (docs/STORE.md has the full description):
// - AUTOINCREMENT ids never reuse a number, so "newest first" is ORDER BY id DESC and an id
//   printed in a log always names the same row.
// - measurements carry a caller-chosen key (run_id, candidate_id, seq) that is UNIQUE: a resumed
//   run re-submits what it is not sure was stored and the database drops the duplicates.
// - (candidate_id, run_id) foreign keys make it impossible to file a measurement, or a run's best
//   candidate, under a candidate of another run.
// - enumerations (statuses, modes, diagnosis classes) are validated in C++, not by CHECK, so
//   adding a value later needs no table rebuild (SQLite cannot ALTER a CHECK).
constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE tasks (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  directory TEXT NOT NULL,
  module_sha256 TEXT NOT NULL,
  yaml TEXT NOT NULL,
  yaml_sha256 TEXT NOT NULL,
  created_at REAL NOT NULL,
  UNIQUE (directory, module_sha256, yaml_sha256)
);
CREATE TABLE runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  task_id INTEGER NOT NULL REFERENCES tasks(id),
  mode TEXT NOT NULL,
  target TEXT NOT NULL,
  config_json TEXT NOT NULL,
  status TEXT NOT NULL,
  best_candidate_id INTEGER,
  started_at REAL NOT NULL,
  finished_at REAL,
  FOREIGN KEY (best_candidate_id, id) REFERENCES candidates(id, run_id)
);
CREATE TABLE candidates (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id INTEGER NOT NULL REFERENCES runs(id),
  seq INTEGER NOT NULL CHECK (seq >= 0),
  schedule_json TEXT NOT NULL,
  implementation_sha256 TEXT NOT NULL,
  status TEXT NOT NULL,
  created_at REAL NOT NULL,
  UNIQUE (run_id, seq),
  UNIQUE (id, run_id)
);
CREATE TABLE builds (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  candidate_id INTEGER NOT NULL REFERENCES candidates(id),
  status TEXT NOT NULL,
  compile_seconds REAL NOT NULL CHECK (compile_seconds >= 0),
  artifacts_json TEXT NOT NULL,
  diagnosis TEXT NOT NULL,
  created_at REAL NOT NULL
);
CREATE TABLE measurements (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id INTEGER NOT NULL,
  candidate_id INTEGER NOT NULL,
  seq INTEGER NOT NULL CHECK (seq >= 0),
  median_s REAL NOT NULL CHECK (median_s >= 0),
  p10_s REAL NOT NULL CHECK (p10_s >= 0 AND p10_s <= median_s),
  p90_s REAL NOT NULL CHECK (p90_s >= median_s),
  iterations INTEGER NOT NULL CHECK (iterations >= 1),
  environment_json TEXT NOT NULL,
  created_at REAL NOT NULL,
  UNIQUE (run_id, candidate_id, seq),
  FOREIGN KEY (candidate_id, run_id) REFERENCES candidates(id, run_id)
);
CREATE TABLE diagnoses (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  candidate_id INTEGER NOT NULL REFERENCES candidates(id),
  build_id INTEGER REFERENCES builds(id),
  class TEXT NOT NULL,
  message TEXT NOT NULL,
  artifact_sha256 TEXT NOT NULL,
  created_at REAL NOT NULL
);
CREATE TABLE events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id INTEGER REFERENCES runs(id),
  ts REAL NOT NULL,
  kind TEXT NOT NULL,
  payload_json TEXT NOT NULL
);
)sql";

// The listings' access paths (runs by status for resume; children by parent).
constexpr const char* kIndexesV2 = R"sql(
CREATE INDEX runs_by_status ON runs(status, id);
CREATE INDEX builds_by_candidate ON builds(candidate_id, id);
CREATE INDEX diagnoses_by_candidate ON diagnoses(candidate_id, id);
CREATE INDEX events_by_run ON events(run_id, id);
)sql";

// Measured peak rates per machine (target/machine_probe.h). Appended rather than upserted so a
// re-probe never destroys the earlier measurement; the index serves "newest for this CPU".
constexpr const char* kMachineProbesV3 = R"sql(
CREATE TABLE machine_probes (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  cpu_model TEXT NOT NULL,
  cores INTEGER NOT NULL CHECK (cores >= 1),
  peak_flops_f32 REAL NOT NULL CHECK (peak_flops_f32 > 0),
  peak_flops_bf16 REAL CHECK (peak_flops_bf16 IS NULL OR peak_flops_bf16 > 0),
  bandwidth_bytes_per_s REAL NOT NULL CHECK (bandwidth_bytes_per_s > 0),
  details_json TEXT NOT NULL,
  measured_at REAL NOT NULL
);
CREATE INDEX machine_probes_by_cpu ON machine_probes(cpu_model, cores, id);
)sql";

// Leases: who works on what, for how long. A general table keyed by a resource name ("run:5"
// now; remote workers' "job:17" later) so that every kind of ownership is one mechanism. A row is
// the current lease; a holder that stops heartbeating loses it at expires_at, after which
// another may take it over (an UPDATE guarded by the expiry, so two contenders cannot both win).
constexpr const char* kLeasesV4 = R"sql(
CREATE TABLE leases (
  resource TEXT PRIMARY KEY,
  holder TEXT NOT NULL,
  acquired_at REAL NOT NULL,
  heartbeat_at REAL NOT NULL,
  expires_at REAL NOT NULL CHECK (expires_at >= heartbeat_at)
);
)sql";

// Reference timings (XLA:CPU) per module, CPU and engine (store.h: BaselineRecord).
constexpr const char* kBaselinesV5 = R"sql(
CREATE TABLE baselines (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  module_sha256 TEXT NOT NULL,
  cpu_model TEXT NOT NULL,
  engine TEXT NOT NULL,
  engine_version TEXT NOT NULL,
  median_s REAL NOT NULL CHECK (median_s > 0),
  p10_s REAL NOT NULL,
  p90_s REAL NOT NULL,
  runs INTEGER NOT NULL,
  details_json TEXT NOT NULL,
  measured_at REAL NOT NULL
);
CREATE INDEX baselines_by_key ON baselines(module_sha256, cpu_model, engine, id);
)sql";

// The server's users, API tokens and browser sessions, and the audit log (store/access.h).
// Secrets are never stored, only their hashes. audit_log is append-only by contract: nothing in
// maxkernel updates or deletes a row, and its hash chain (audit_chain.h) shows when something
// else did.
constexpr const char* kAccessV6 = R"sql(
CREATE TABLE users (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL UNIQUE,
  role TEXT NOT NULL,
  disabled INTEGER NOT NULL DEFAULT 0,
  created_at REAL NOT NULL
);
CREATE TABLE api_tokens (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  user_id INTEGER NOT NULL REFERENCES users(id),
  lookup_id TEXT NOT NULL UNIQUE,
  secret_hash TEXT NOT NULL,
  label TEXT NOT NULL,
  created_at REAL NOT NULL,
  expires_at REAL,
  revoked_at REAL
);
CREATE TABLE web_sessions (
  id_sha256 TEXT PRIMARY KEY,
  user_id INTEGER NOT NULL REFERENCES users(id),
  csrf_sha256 TEXT NOT NULL,
  created_at REAL NOT NULL,
  expires_at REAL NOT NULL
);
CREATE TABLE audit_log (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  ts REAL NOT NULL,
  actor TEXT NOT NULL,
  action TEXT NOT NULL,
  subject TEXT NOT NULL,
  payload_json TEXT NOT NULL,
  prev_sha256 TEXT NOT NULL,
  sha256 TEXT NOT NULL UNIQUE
);
)sql";

constexpr Migration kMigrations[] = {
    {1, "tasks, runs, candidates, builds, measurements, diagnoses, events", kSchemaV1},
    {2, "indexes for listings and resume", kIndexesV2},
    {3, "machine probes (measured peak rates per cpu model)", kMachineProbesV3},
    {4, "leases (run ownership; later remote jobs)", kLeasesV4},
    {5, "baselines (reference timings per module, cpu and engine)", kBaselinesV5},
    {6, "users, api tokens, web sessions, audit log", kAccessV6},
};

Result<int64_t> SingleInt(SqliteDb& db, const std::string& sql) {
  MK_ASSIGN_OR_RETURN(auto cursor, db.Query(sql));
  MK_ASSIGN_OR_RETURN(bool row, cursor->Step());
  if (!row) return Internal("no row from `" + sql + "`");
  return cursor->Int(0);
}

Status CheckMigrationList(std::span<const Migration> migrations) {
  for (size_t i = 0; i < migrations.size(); ++i) {
    if (migrations[i].version != static_cast<int>(i) + 1) {
      return Internal("migration list is not numbered 1, 2, 3, ...: entry " + std::to_string(i) +
                      " has version " + std::to_string(migrations[i].version));
    }
  }
  return Status::Ok();
}

Status NewerThanBinary(const SqliteDb& db, int found, int known) {
  return InvalidArgument("database " + db.path() + " has schema version " + std::to_string(found) +
                         ", newer than this maxkernel understands (" + std::to_string(known) +
                         "); it was written by a newer maxkernel: use that version or a newer one");
}

}  // namespace

std::span<const Migration> BuiltinMigrations() {
  return kMigrations;
}
int LatestSchemaVersion() {
  return static_cast<int>(std::size(kMigrations));
}

Result<int> ReadSchemaVersion(SqliteDb& db) {
  MK_ASSIGN_OR_RETURN(int64_t app_id, SingleInt(db, "PRAGMA application_id"));
  if (app_id != 0 && app_id != kStoreApplicationId) {
    char hex[32];
    std::snprintf(hex, sizeof hex, "0x%08llx", static_cast<unsigned long long>(app_id));
    return InvalidArgument("database " + db.path() +
                           " belongs to another application (application_id " + hex + ")");
  }
  // One statement, so one snapshot: as two, another process's first migration could commit
  // between them, and the file would look like tables without a schema_version.
  enum : int64_t { kEmpty = 0, kForeignTables = 1, kVersioned = 2 };
  MK_ASSIGN_OR_RETURN(int64_t contents,
                      SingleInt(db,
                                "SELECT CASE WHEN EXISTS (SELECT 1 FROM sqlite_master WHERE "
                                "type = 'table' AND name = 'schema_version') THEN 2 "
                                "WHEN EXISTS (SELECT 1 FROM sqlite_master WHERE name NOT LIKE "
                                "'sqlite_%') THEN 1 ELSE 0 END"));
  if (contents == kForeignTables) {
    return InvalidArgument("database " + db.path() +
                           " has tables but no schema_version: not a maxkernel store");
  }
  if (contents == kEmpty) return 0;
  MK_ASSIGN_OR_RETURN(int64_t version,
                      SingleInt(db, "SELECT COALESCE(MAX(version), 0) FROM schema_version"));
  return static_cast<int>(version);
}

Result<MigrationOutcome> Migrate(SqliteDb& db, std::span<const Migration> migrations) {
  MK_RETURN_IF_ERROR(CheckMigrationList(migrations));
  const int latest = static_cast<int>(migrations.size());
  MigrationOutcome outcome;
  MK_ASSIGN_OR_RETURN(outcome.from_version, ReadSchemaVersion(db));
  if (outcome.from_version > latest) return NewerThanBinary(db, outcome.from_version, latest);
  outcome.to_version = outcome.from_version;
  for (const Migration& migration : migrations) {
    if (migration.version <= outcome.to_version) continue;
    Status status = db.WriteTransaction([&]() -> Status {
      // Another process may have migrated since the read above; under the write lock the
      // version read now is the truth.
      MK_ASSIGN_OR_RETURN(int current, ReadSchemaVersion(db));
      if (current > latest) return NewerThanBinary(db, current, latest);
      if (current >= migration.version) return Status::Ok();
      if (current == 0) {
        MK_RETURN_IF_ERROR(
            db.Exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, "
                    "name TEXT NOT NULL, applied_at TEXT NOT NULL DEFAULT "
                    "(strftime('%Y-%m-%dT%H:%M:%fZ', 'now')));"
                    "PRAGMA application_id = " +
                    std::to_string(kStoreApplicationId)));
      }
      MK_RETURN_IF_ERROR(db.Exec(migration.sql));
      MK_ASSIGN_OR_RETURN(auto insert,
                          db.Query("INSERT INTO schema_version (version, name) VALUES (?, ?)"));
      insert->Bind(1, static_cast<int64_t>(migration.version)).Bind(2, migration.name);
      return insert->Run();
    });
    if (!status.ok()) {
      return status.WithContext("database " + db.path() + ": migration " +
                                std::to_string(migration.version) + " (" + migration.name +
                                ") failed and was rolled back");
    }
    outcome.to_version = migration.version;
  }
  return outcome;
}

}  // namespace mk::store
