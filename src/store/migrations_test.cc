#include "store/migrations.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "store/sqlite_store.h"
#include "store/store_test_util.h"

namespace mk::store {
namespace {

using testing::TempDir;

std::unique_ptr<SqliteDb> OpenDb(const std::filesystem::path& path) {
  auto db = SqliteDb::Open(path.string(), /*create=*/true, /*busy_timeout_ms=*/5000);
  EXPECT_TRUE(db.ok()) << db.status().ToString();
  return db.ok() ? std::move(db).value() : nullptr;
}

int64_t QueryInt(SqliteDb& db, const std::string& sql) {
  auto cursor = db.Query(sql);
  EXPECT_TRUE(cursor.ok()) << cursor.status().ToString();
  if (!cursor.ok()) return -1;
  auto row = (*cursor)->Step();
  EXPECT_TRUE(row.ok() && *row) << sql;
  return (row.ok() && *row) ? (*cursor)->Int(0) : -1;
}

std::set<std::string> Names(SqliteDb& db, const std::string& type) {
  auto cursor =
      db.Query("SELECT name FROM sqlite_master WHERE type = ? AND name NOT LIKE 'sqlite_%'");
  EXPECT_TRUE(cursor.ok());
  std::set<std::string> names;
  if (!cursor.ok()) return names;
  (*cursor)->Bind(1, type);
  while (true) {
    auto row = (*cursor)->Step();
    if (!row.ok() || !*row) break;
    names.insert((*cursor)->Text(0));
  }
  return names;
}

TEST(MigrationsTest, BuiltinListIsNumberedFromOne) {
  auto migrations = BuiltinMigrations();
  ASSERT_EQ(migrations.size(), 6u);
  EXPECT_EQ(LatestSchemaVersion(), 6);
  for (size_t i = 0; i < migrations.size(); ++i) EXPECT_EQ(migrations[i].version, int(i) + 1);
}

TEST(MigrationsTest, EmptyDatabaseReachesLatest) {
  TempDir tmp;
  auto db = OpenDb(tmp.path() / "a.db");
  ASSERT_NE(db, nullptr);
  auto outcome = Migrate(*db, BuiltinMigrations());
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_EQ(outcome->from_version, 0);
  EXPECT_EQ(outcome->to_version, 6);
  EXPECT_EQ(Names(*db, "table"),
            (std::set<std::string>{"api_tokens", "audit_log", "baselines", "builds", "candidates",
                                   "diagnoses", "events", "leases", "machine_probes",
                                   "measurements", "runs", "schema_version", "tasks", "users",
                                   "web_sessions"}));
  EXPECT_EQ(Names(*db, "index"),
            (std::set<std::string>{"baselines_by_key", "builds_by_candidate", "diagnoses_by_candidate", "events_by_run",
                                   "machine_probes_by_cpu", "runs_by_status"}));
  EXPECT_EQ(QueryInt(*db, "SELECT count(*) FROM schema_version"), 6);
  EXPECT_EQ(QueryInt(*db, "PRAGMA application_id"), kStoreApplicationId);

  // A second pass changes nothing.
  auto again = Migrate(*db, BuiltinMigrations());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->from_version, 6);
  EXPECT_EQ(again->to_version, 6);
  EXPECT_EQ(QueryInt(*db, "SELECT count(*) FROM schema_version"), 6);
}

TEST(MigrationsTest, OlderDatabaseIsUpgradedKeepingItsRows) {
  TempDir tmp;
  const auto path = tmp.path() / "old.db";
  {
    auto db = OpenDb(path);
    ASSERT_NE(db, nullptr);
    auto outcome = Migrate(*db, BuiltinMigrations().first(1));
    ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
    EXPECT_EQ(outcome->to_version, 1);
    EXPECT_TRUE(Names(*db, "index").empty());
    ASSERT_TRUE(db->Exec("INSERT INTO tasks (directory, module_sha256, yaml, yaml_sha256, "
                         "created_at) VALUES ('/t', '" +
                         std::string(64, 'a') + "', 'id: t', '" + std::string(64, 'b') + "', 1.5)")
                    .ok());
  }
  auto store = SqliteStore::Open(path.string());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto version = (*store)->SchemaVersion();
  ASSERT_TRUE(version.ok());
  EXPECT_EQ(*version, 6);
  auto task = (*store)->GetTask(1);
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  EXPECT_EQ(task->directory, "/t");
  EXPECT_EQ(task->yaml, "id: t");
  EXPECT_DOUBLE_EQ(task->created_at, 1.5);
}

TEST(MigrationsTest, FailingMigrationIsRolledBackAsAWhole) {
  TempDir tmp;
  auto db = OpenDb(tmp.path() / "f.db");
  ASSERT_NE(db, nullptr);
  const Migration broken[] = {
      {1, "create a", "CREATE TABLE a (x INTEGER);"},
      // Two statements succeed before the third fails: none of them may remain.
      {2, "broken",
       "CREATE TABLE b (y INTEGER); INSERT INTO a VALUES (7); "
       "INSERT INTO no_such_table VALUES (1);"},
  };
  auto outcome = Migrate(*db, broken);
  ASSERT_FALSE(outcome.ok());
  EXPECT_NE(outcome.status().message().find("migration 2 (broken) failed and was rolled back"),
            std::string::npos)
      << outcome.status().message();
  EXPECT_NE(outcome.status().message().find("no_such_table"), std::string::npos);
  auto version = ReadSchemaVersion(*db);
  ASSERT_TRUE(version.ok());
  EXPECT_EQ(*version, 1);
  EXPECT_EQ(Names(*db, "table"), (std::set<std::string>{"a", "schema_version"}));
  EXPECT_EQ(QueryInt(*db, "SELECT count(*) FROM a"), 0);

  const Migration fixed[] = {
      {1, "create a", "CREATE TABLE a (x INTEGER);"},
      {2, "fixed", "CREATE TABLE b (y INTEGER);"},
  };
  auto retried = Migrate(*db, fixed);
  ASSERT_TRUE(retried.ok()) << retried.status().ToString();
  EXPECT_EQ(retried->from_version, 1);
  EXPECT_EQ(retried->to_version, 2);
  EXPECT_EQ(Names(*db, "table"), (std::set<std::string>{"a", "b", "schema_version"}));
}

TEST(MigrationsTest, MisnumberedListIsRefused) {
  TempDir tmp;
  auto db = OpenDb(tmp.path() / "m.db");
  ASSERT_NE(db, nullptr);
  const Migration gap[] = {{1, "one", "CREATE TABLE a (x);"}, {3, "three", "CREATE TABLE c (x);"}};
  auto outcome = Migrate(*db, gap);
  ASSERT_FALSE(outcome.ok());
  EXPECT_EQ(outcome.status().code(), ErrorCode::kInternal);
  EXPECT_TRUE(Names(*db, "table").empty());  // checked before anything is written
}

TEST(MigrationsTest, NewerDatabaseIsRefusedAndLeftUntouched) {
  TempDir tmp;
  const auto path = tmp.path() / "new.db";
  {
    auto store = SqliteStore::Open(path.string());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
  }
  {
    auto db = OpenDb(path);
    ASSERT_NE(db, nullptr);
    ASSERT_TRUE(
        db->Exec("INSERT INTO schema_version (version, name) VALUES (7, 'from the future')").ok());
  }
  auto store = SqliteStore::Open(path.string());
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(store.status().message().find("schema version 7, newer than this maxkernel "
                                          "understands (6)"),
            std::string::npos)
      << store.status().message();

  auto db = OpenDb(path);
  ASSERT_NE(db, nullptr);
  auto outcome = Migrate(*db, BuiltinMigrations());
  ASSERT_FALSE(outcome.ok());
  EXPECT_EQ(QueryInt(*db, "SELECT max(version) FROM schema_version"), 7);
}

TEST(MigrationsTest, ForeignFilesAreRefused) {
  TempDir tmp;
  {  // some other application's SQLite database
    const auto path = tmp.path() / "other.db";
    auto db = OpenDb(path);
    ASSERT_NE(db, nullptr);
    ASSERT_TRUE(
        db->Exec("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('keep me')").ok());
    db.reset();
    auto store = SqliteStore::Open(path.string());
    ASSERT_FALSE(store.ok());
    EXPECT_NE(store.status().message().find("not a maxkernel store"), std::string::npos)
        << store.status().message();
    auto reopened = OpenDb(path);
    ASSERT_NE(reopened, nullptr);
    EXPECT_EQ(Names(*reopened, "table"), (std::set<std::string>{"notes"}));
  }
  {  // another application's id
    const auto path = tmp.path() / "app.db";
    auto db = OpenDb(path);
    ASSERT_NE(db, nullptr);
    ASSERT_TRUE(db->Exec("PRAGMA application_id = 1234").ok());
    db.reset();
    auto store = SqliteStore::Open(path.string());
    ASSERT_FALSE(store.ok());
    EXPECT_NE(store.status().message().find("another application"), std::string::npos);
  }
  {  // not SQLite at all
    const auto path = tmp.path() / "text.db";
    std::ofstream(path) << std::string(4096, 'x');
    auto store = SqliteStore::Open(path.string());
    ASSERT_FALSE(store.ok());
    // Refused before SQLite sees it (the header is checked): bad input, like an empty file.
    EXPECT_EQ(store.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(store.status().ToString().find("text.db: error: is not a SQLite database"),
              std::string::npos)
        << store.status().ToString();
  }
}

TEST(MigrationsTest, TwoProcessesMigratingOneFreshFileAgree) {
  TempDir tmp;
  const std::string path = (tmp.path() / "race.db").string();
  auto open_in_child = [&]() { return SqliteStore::Open(path).ok() ? 0 : 1; };
  pid_t a = testing::ForkChild(open_in_child);
  pid_t b = testing::ForkChild(open_in_child);
  ASSERT_GT(a, 0);
  ASSERT_GT(b, 0);
  EXPECT_EQ(testing::WaitChild(a), 0);
  EXPECT_EQ(testing::WaitChild(b), 0);
  auto db = OpenDb(path);
  ASSERT_NE(db, nullptr);
  EXPECT_EQ(QueryInt(*db, "SELECT count(*) FROM schema_version"), 6);
  EXPECT_EQ(QueryInt(*db, "SELECT max(version) FROM schema_version"), 6);
}

}  // namespace
}  // namespace mk::store
