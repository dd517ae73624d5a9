// Versioned schema migrations for the SQLite store.
//
// The schema is an ordered list of migrations numbered 1, 2, 3, ... A database records what it
// has applied in `schema_version` (one row per migration). Opening a database applies the
// missing ones, each in its own write transaction together with its schema_version row, so a
// migration is either fully applied or not at all. A database whose version is newer than the
// binary knows is refused: an old binary must never write into a schema it does not understand.
// Policy (docs/STORE.md): a released migration is never edited; changes are new migrations.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "store/sqlite_db.h"
#include "support/status.h"

namespace mk::store {

struct Migration {
  int version;       // 1-based, consecutive
  const char* name;  // short description, stored in schema_version
  const char* sql;   // one or more statements
};

// "MKST": marks a file as a maxkernel store (PRAGMA application_id), so that opening some other
// application's SQLite file is refused instead of being migrated.
inline constexpr int32_t kStoreApplicationId = 0x4d4b5354;

// The migrations this binary knows, in order.
std::span<const Migration> BuiltinMigrations();
int LatestSchemaVersion();

// The version recorded in the database: 0 for a fresh (empty) database. An error for a file that
// holds tables but is not a maxkernel store.
Result<int> ReadSchemaVersion(SqliteDb& db);

struct MigrationOutcome {
  int from_version = 0;
  int to_version = 0;
};

// Brings `db` to the last version of `migrations` (the builtin list in production; tests pass
// their own). Safe against another process migrating the same file at the same time: the
// version is re-read under the write lock before each step.
Result<MigrationOutcome> Migrate(SqliteDb& db, std::span<const Migration> migrations);

}  // namespace mk::store
