// A thin RAII layer over the sqlite3 C API, shared by the migrations and SqliteStore: a
// connection with a prepared-statement cache, a statement cursor that always resets itself, and
// sqlite result codes turned into Status values. Not thread-safe by itself: SqliteStore
// serializes access with its own mutex.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "support/status.h"

namespace mk::store {

// A cached prepared statement in use. Binding indices are 1-based (sqlite's convention). The
// destructor resets the statement and clears its bindings, so a cached statement can never leak
// a half-stepped state (or a read lock) into the next call.
class SqliteCursor {
 public:
  SqliteCursor(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  SqliteCursor(const SqliteCursor&) = delete;
  SqliteCursor& operator=(const SqliteCursor&) = delete;
  ~SqliteCursor();

  SqliteCursor& Bind(int index, int64_t value);
  SqliteCursor& Bind(int index, double value);
  SqliteCursor& Bind(int index, std::string_view value);
  SqliteCursor& Bind(int index, const char* value) { return Bind(index, std::string_view(value)); }
  SqliteCursor& Bind(int index, std::optional<int64_t> value);
  SqliteCursor& BindNull(int index);

  // Advances: true when a row is available, false when done.
  Result<bool> Step();
  // Steps a statement that returns no rows (INSERT/UPDATE/DDL).
  Status Run();

  int64_t Int(int column) const;
  double Real(int column) const;
  std::string Text(int column) const;
  bool IsNull(int column) const;
  std::optional<int64_t> OptionalInt(int column) const;

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_;
  Status bind_error_;  // the first failed Bind, reported by Step()
};

class SqliteDb {
 public:
  // Opens (creating when `create`) the database file. busy_timeout_ms applies to every lock wait.
  // `read_only`: SQLITE_OPEN_READONLY (nothing can be written; `create` is ignored). `uri`: `path`
  // is a file: URI (SQLITE_OPEN_URI), e.g. with ?immutable=1; path() is then that URI.
  static Result<std::unique_ptr<SqliteDb>> Open(const std::string& path, bool create,
                                                int busy_timeout_ms, bool read_only = false,
                                                bool uri = false);
  ~SqliteDb();
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  sqlite3* handle() const { return db_; }
  const std::string& path() const { return path_; }
  int busy_timeout_ms() const { return busy_timeout_ms_; }

  // Runs one or more ';'-separated statements that return nothing useful.
  Status Exec(const std::string& sql);
  // A prepared statement for `sql` (compiled once per connection, then reused).
  Result<std::unique_ptr<SqliteCursor>> Query(const std::string& sql);

  // Runs `body` inside BEGIN IMMEDIATE ... COMMIT: the write lock is taken up front, so two
  // writers queue on busy_timeout instead of one of them failing on a lock upgrade. Any error
  // (from `body` or from COMMIT) rolls the whole transaction back.
  Status WriteTransaction(const std::function<Status()>& body);
  // A consistent snapshot for several reads (BEGIN DEFERRED).
  Status ReadTransaction(const std::function<Status()>& body);

  // Rows changed by the last INSERT/UPDATE/DELETE, and the rowid of the last INSERT.
  int64_t Changes() const { return sqlite3_changes64(db_); }
  int64_t LastInsertId() const { return sqlite3_last_insert_rowid(db_); }

  // The sqlite error for `rc` on this connection as a Status, with `context` in front.
  Status Error(int rc, const std::string& context) const;

 private:
  SqliteDb(sqlite3* db, std::string path, int busy_timeout_ms)
      : db_(db), path_(std::move(path)), busy_timeout_ms_(busy_timeout_ms) {}
  Status Transaction(const char* begin, const std::function<Status()>& body);

  sqlite3* db_;
  std::string path_;
  int busy_timeout_ms_;
  std::unordered_map<std::string, sqlite3_stmt*> statements_;
};

}  // namespace mk::store
