#include "store/sqlite_db.h"

namespace mk::store {

namespace {

Status StatusFromSqlite(sqlite3* db, int rc, const std::string& context) {
  std::string detail = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  std::string message = context.empty() ? detail : context + ": " + detail;
  switch (rc & 0xff) {  // the primary code; extended codes carry the detail
    case SQLITE_CONSTRAINT:
    case SQLITE_MISMATCH:
    case SQLITE_TOOBIG: return InvalidArgument(message);
    case SQLITE_MISUSE:
    case SQLITE_RANGE:
    case SQLITE_ERROR:
      // SQLITE_ERROR is a bad statement: always our bug, since no SQL comes from users.
      return Internal(message);
    default:
      // busy/locked, corrupt, not-a-database, full disk, read-only, I/O: the environment refused.
      return IoError(message);
  }
}

}  // namespace

SqliteCursor::~SqliteCursor() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

SqliteCursor& SqliteCursor::Bind(int index, int64_t value) {
  int rc = sqlite3_bind_int64(stmt_, index, value);
  if (rc != SQLITE_OK && bind_error_.ok()) bind_error_ = StatusFromSqlite(db_, rc, "bind");
  return *this;
}

SqliteCursor& SqliteCursor::Bind(int index, double value) {
  int rc = sqlite3_bind_double(stmt_, index, value);
  if (rc != SQLITE_OK && bind_error_.ok()) bind_error_ = StatusFromSqlite(db_, rc, "bind");
  return *this;
}

SqliteCursor& SqliteCursor::Bind(int index, std::string_view value) {
  // SQLITE_TRANSIENT: sqlite copies the bytes, so the caller's buffer may die before Step().
  int rc =
      sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK && bind_error_.ok()) bind_error_ = StatusFromSqlite(db_, rc, "bind");
  return *this;
}

SqliteCursor& SqliteCursor::Bind(int index, std::optional<int64_t> value) {
  return value.has_value() ? Bind(index, *value) : BindNull(index);
}

SqliteCursor& SqliteCursor::BindNull(int index) {
  int rc = sqlite3_bind_null(stmt_, index);
  if (rc != SQLITE_OK && bind_error_.ok()) bind_error_ = StatusFromSqlite(db_, rc, "bind");
  return *this;
}

Result<bool> SqliteCursor::Step() {
  if (!bind_error_.ok()) return bind_error_;
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return StatusFromSqlite(db_, rc, "");
}

Status SqliteCursor::Run() {
  while (true) {
    MK_ASSIGN_OR_RETURN(bool row, Step());
    if (!row) return Status::Ok();
  }
}

int64_t SqliteCursor::Int(int column) const {
  return sqlite3_column_int64(stmt_, column);
}
double SqliteCursor::Real(int column) const {
  return sqlite3_column_double(stmt_, column);
}
bool SqliteCursor::IsNull(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}
std::string SqliteCursor::Text(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  if (text == nullptr) return "";
  return std::string(reinterpret_cast<const char*>(text),
                     static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
}
std::optional<int64_t> SqliteCursor::OptionalInt(int column) const {
  if (IsNull(column)) return std::nullopt;
  return Int(column);
}

Result<std::unique_ptr<SqliteDb>> SqliteDb::Open(const std::string& path, bool create,
                                                 int busy_timeout_ms, bool read_only, bool uri) {
  if (path.empty()) return InvalidArgument("empty database path");
  sqlite3* raw = nullptr;
  // NOMUTEX: the connection is used by one thread at a time (SqliteStore holds a mutex).
  int flags = read_only ? SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX
                        : SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX |
                              (create ? SQLITE_OPEN_CREATE : 0);
  if (uri) flags |= SQLITE_OPEN_URI;
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  if (rc != SQLITE_OK) {
    Status error = StatusFromSqlite(raw, rc, "cannot open database " + path);
    sqlite3_close_v2(raw);  // a handle is returned even on failure
    return error;
  }
  std::unique_ptr<SqliteDb> db(new SqliteDb(raw, path, busy_timeout_ms));
  sqlite3_extended_result_codes(raw, 1);
  rc = sqlite3_busy_timeout(raw, busy_timeout_ms);
  if (rc != SQLITE_OK) return db->Error(rc, "setting busy_timeout on " + path);
  return db;
}

SqliteDb::~SqliteDb() {
  for (auto& [sql, stmt] : statements_) sqlite3_finalize(stmt);
  sqlite3_close_v2(db_);
}

Status SqliteDb::Exec(const std::string& sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
  if (rc == SQLITE_OK) return Status::Ok();
  std::string message = err != nullptr ? err : sqlite3_errstr(rc);
  sqlite3_free(err);
  Status status = StatusFromSqlite(nullptr, rc, "");
  return Status(status.code(), message);
}

Result<std::unique_ptr<SqliteCursor>> SqliteDb::Query(const std::string& sql) {
  auto it = statements_.find(sql);
  if (it == statements_.end()) {
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size() + 1),
                                SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    if (rc != SQLITE_OK) {
      sqlite3_finalize(stmt);
      return Error(rc, "preparing `" + sql + "`");
    }
    it = statements_.emplace(sql, stmt).first;
  }
  return std::make_unique<SqliteCursor>(db_, it->second);
}

Status SqliteDb::Transaction(const char* begin, const std::function<Status()>& body) {
  MK_RETURN_IF_ERROR(Exec(begin));
  Status status = body();
  if (status.ok()) {
    status = Exec("COMMIT");
    if (status.ok()) return status;
  }
  // After a failed COMMIT sqlite may already have rolled back; a second ROLLBACK then fails
  // harmlessly ("no transaction is active"), so its result is ignored on purpose.
  if (sqlite3_get_autocommit(db_) == 0) (void)Exec("ROLLBACK");
  return status;
}

Status SqliteDb::WriteTransaction(const std::function<Status()>& body) {
  return Transaction("BEGIN IMMEDIATE", body);
}

Status SqliteDb::ReadTransaction(const std::function<Status()>& body) {
  return Transaction("BEGIN", body);
}

Status SqliteDb::Error(int rc, const std::string& context) const {
  return StatusFromSqlite(db_, rc, context);
}

}  // namespace mk::store
