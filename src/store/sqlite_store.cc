#include "store/sqlite_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "store/migrations.h"
#include "support/sha256.h"

namespace mk::store {

namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

bool IsSha256(std::string_view text) {
  if (text.size() != 64) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

Status CheckSha256(std::string_view text, const char* what, bool allow_empty) {
  if (allow_empty && text.empty()) return Status::Ok();
  if (IsSha256(text)) return Status::Ok();
  return InvalidArgument(std::string(what) + " is not a sha256 (64 lowercase hex digits): '" +
                         std::string(text.substr(0, 80)) + "'");
}

// Payloads are stored as text but must parse, so every reader (UI, export, a later migration)
// can rely on them. `object_only`: the value must be a JSON object.
Status CheckJson(std::string_view text, const char* what, bool object_only) {
  Json value = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return InvalidArgument(std::string(what) + " is not valid JSON");
  if (object_only && !value.is_object()) {
    return InvalidArgument(std::string(what) + " must be a JSON object");
  }
  return Status::Ok();
}

Status CheckId(int64_t id, const char* what) {
  if (id > 0) return Status::Ok();
  return NotFound(std::string(what) + " " + std::to_string(id) + " not found");
}

// Retries a statement that sqlite refuses with BUSY without consulting the busy handler
// (switching the journal mode of a file that another process is opening at the same moment).
Result<std::string> PragmaWithRetry(SqliteDb& db, const std::string& sql) {
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(db.busy_timeout_ms());
  while (true) {
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v2(db.handle(), sql.c_str(), -1, &stmt, nullptr);
    std::string value;
    if (rc == SQLITE_OK) {
      rc = sqlite3_step(stmt);
      if (rc == SQLITE_ROW) {
        const unsigned char* text = sqlite3_column_text(stmt, 0);
        value = text != nullptr ? reinterpret_cast<const char*>(text) : "";
        rc = SQLITE_OK;
      } else if (rc == SQLITE_DONE) {
        rc = SQLITE_OK;
      }
    }
    Status error = rc == SQLITE_OK ? Status::Ok() : db.Error(rc, sql);
    sqlite3_finalize(stmt);
    if (rc == SQLITE_OK) return value;
    int primary = rc & 0xff;
    if ((primary != SQLITE_BUSY && primary != SQLITE_LOCKED) ||
        std::chrono::steady_clock::now() > deadline) {
      return error;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

Result<RunRecord> RunFromRow(const SqliteCursor& row) {
  RunRecord run;
  run.id = row.Int(0);
  run.task_id = row.Int(1);
  run.task_directory = row.Text(2);
  MK_ASSIGN_OR_RETURN(run.mode, ParseRunMode(row.Text(3)));
  run.target = row.Text(4);
  run.config_json = row.Text(5);
  MK_ASSIGN_OR_RETURN(run.status, ParseRunStatus(row.Text(6)));
  run.best_candidate_id = row.OptionalInt(7);
  if (!row.IsNull(8)) run.best_median_s = row.Real(8);
  run.candidate_count = row.Int(9);
  run.measurement_count = row.Int(10);
  run.started_at = row.Real(11);
  if (!row.IsNull(12)) run.finished_at = row.Real(12);
  return run;
}

constexpr const char* kCandidateColumns =
    "SELECT id, run_id, seq, schedule_json, implementation_sha256, status, created_at "
    "FROM candidates ";

Result<CandidateRecord> CandidateFromRow(const SqliteCursor& row) {
  CandidateRecord candidate;
  candidate.id = row.Int(0);
  candidate.run_id = row.Int(1);
  candidate.seq = row.Int(2);
  candidate.schedule_json = row.Text(3);
  candidate.implementation_sha256 = row.Text(4);
  MK_ASSIGN_OR_RETURN(candidate.status, ParseCandidateStatus(row.Text(5)));
  candidate.created_at = row.Real(6);
  return candidate;
}

// True when the row exists (`sql` selects anything with one bound id pair).
Result<bool> Exists(SqliteDb& db, const std::string& sql, int64_t a,
                    std::optional<int64_t> b = {}) {
  MK_ASSIGN_OR_RETURN(auto cursor, db.Query(sql));
  cursor->Bind(1, a);
  if (b.has_value()) cursor->Bind(2, *b);
  return cursor->Step();
}

Status RequireRun(SqliteDb& db, int64_t run_id) {
  MK_RETURN_IF_ERROR(CheckId(run_id, "run"));
  MK_ASSIGN_OR_RETURN(bool found, Exists(db, "SELECT 1 FROM runs WHERE id = ?", run_id));
  return found ? Status::Ok() : NotFound("run " + std::to_string(run_id) + " not found");
}

Status RequireCandidate(SqliteDb& db, int64_t candidate_id) {
  MK_RETURN_IF_ERROR(CheckId(candidate_id, "candidate"));
  MK_ASSIGN_OR_RETURN(bool found,
                      Exists(db, "SELECT 1 FROM candidates WHERE id = ?", candidate_id));
  return found ? Status::Ok()
               : NotFound("candidate " + std::to_string(candidate_id) + " not found");
}

// An existing database file must be a regular file that starts like a SQLite database. SQLite
// itself would take an empty (0-byte) file for a new database and migrate it, and a FIFO would
// block its open. Read with O_NONBLOCK so that a FIFO cannot hang us either.
Status CheckExistingDatabaseFile(const std::string& path) {
  const SourceLoc loc{path, 0, 0};
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return Status::Ok();  // missing or unreadable: SQLite's open says which
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return InvalidArgument("is not a regular file, so not a maxkernel database", loc);
  }
  static constexpr char kMagic[] = "SQLite format 3";  // 16 bytes with its NUL
  char head[sizeof(kMagic)] = {};
  ssize_t got = ::pread(fd, head, sizeof(head), 0);
  ::close(fd);
  if (st.st_size == 0) {
    return InvalidArgument("is an empty file, not a SQLite database; maxkernel left it untouched "
                           "(remove it, or name a new file, to start a store)",
                           loc);
  }
  if (got != static_cast<ssize_t>(sizeof(head)) || std::memcmp(head, kMagic, sizeof(head)) != 0) {
    return InvalidArgument("is not a SQLite database; maxkernel left it untouched", loc);
  }
  return Status::Ok();
}

// How to open `path` read-only. SQLite reads a WAL database through its -shm index, which it
// creates beside the file: in a folder the user cannot write (read-only media, someone else's
// folder) that fails ("attempt to write a readonly database"). When there is no index and no
// unfinished WAL (so the file alone holds everything), the file is opened as immutable instead.
struct ReadOnlyTarget {
  std::string path;
  bool uri = false;
};
ReadOnlyTarget ReadOnlyOpenTarget(const std::string& path) {
  std::error_code ec;
  const fs::path absolute = fs::absolute(path, ec);
  if (ec) return {path, false};
  const fs::path folder = absolute.parent_path();
  if (::access(folder.c_str(), W_OK) == 0 || fs::exists(path + "-shm", ec)) return {path, false};
  struct stat wal {};
  if (::stat((path + "-wal").c_str(), &wal) == 0 && wal.st_size > 0) return {path, false};
  std::string uri = "file:";
  for (char c : absolute.string()) {
    if (c == '%' || c == '?' || c == '#') {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", static_cast<unsigned char>(c));
      uri += hex;
    } else {
      uri += c;
    }
  }
  return {uri + "?immutable=1", true};
}

// Sets a fresh database up: WAL journal, foreign keys, durability, migrations.
Status Prepare(SqliteDb& db, const std::string& path, const SqliteStoreOptions& options);

// Creates the database `path` complete: migrated in a private file beside it, which is then
// hard-linked into place. No other process ever sees `path` empty (which it would refuse, see
// CheckExistingDatabaseFile); when two create it at once, the first link wins and the other
// uses that file. The mode is set to 0600 before anything is written, whatever the umask.
Status CreateDatabaseFile(const std::string& path, const SqliteStoreOptions& options) {
  std::random_device rd;
  const std::string tmp = path + ".creating-" + std::to_string(::getpid()) + "-" +
                          std::to_string(rd());
  auto remove_tmp = [&tmp] {
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) ::unlink((tmp + suffix).c_str());
  };
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return IoError("cannot create database " + path + ": " + std::strerror(errno));
  ::fchmod(fd, 0600);  // the umask may have taken bits away, never added: this is exact
  ::close(fd);
  Status prepared;
  {
    auto db = SqliteDb::Open(tmp, /*create=*/false, options.busy_timeout_ms);
    prepared = db.ok() ? Prepare(**db, path, options) : db.status();
  }  // closed: the WAL is checkpointed into the file and removed
  if (!prepared.ok()) {
    remove_tmp();
    return prepared;
  }
  if (::link(tmp.c_str(), path.c_str()) != 0 && errno != EEXIST) {
    const int err = errno;
    // A filesystem without hard links: rename, unless someone created the file meanwhile.
    struct stat st {};
    if ((err == EPERM || err == ENOTSUP || err == EOPNOTSUPP) &&
        ::stat(path.c_str(), &st) != 0 && ::rename(tmp.c_str(), path.c_str()) == 0) {
      return Status::Ok();
    }
    remove_tmp();
    return IoError("cannot create database " + path + ": " + std::strerror(err));
  }
  remove_tmp();
  return Status::Ok();
}

Status Prepare(SqliteDb& db, const std::string& path, const SqliteStoreOptions& options) {
  MK_ASSIGN_OR_RETURN(std::string mode, PragmaWithRetry(db, "PRAGMA journal_mode = WAL"));
  if (mode != "wal" && mode != "memory") {
    return IoError("database " + path + " cannot use the WAL journal (got '" + mode + "')");
  }
  MK_RETURN_IF_ERROR(db.Exec("PRAGMA foreign_keys = ON"));
  MK_RETURN_IF_ERROR(db.Exec(options.durable_commits ? "PRAGMA synchronous = FULL"
                                                     : "PRAGMA synchronous = NORMAL"));
  MK_ASSIGN_OR_RETURN(MigrationOutcome outcome, Migrate(db, BuiltinMigrations()));
  (void)outcome;
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<SqliteStore>> SqliteStore::Open(const std::string& path,
                                                       SqliteStoreOptions options) {
  auto opened = [&]() -> Result<std::unique_ptr<SqliteStore>> {
    if (path.empty()) return InvalidArgument("empty database path");
    struct stat st {};
    if (options.create && !options.read_only && ::lstat(path.c_str(), &st) != 0 &&
        errno == ENOENT) {
      MK_RETURN_IF_ERROR(CreateDatabaseFile(path, options));
    }
    MK_RETURN_IF_ERROR(CheckExistingDatabaseFile(path));
    const ReadOnlyTarget target =
        options.read_only ? ReadOnlyOpenTarget(path) : ReadOnlyTarget{path, false};
    MK_ASSIGN_OR_RETURN(auto db, SqliteDb::Open(target.path, /*create=*/false,
                                                options.busy_timeout_ms, options.read_only,
                                                target.uri));
    // Reading the header first turns "not a database" into an error before anything is written.
    MK_ASSIGN_OR_RETURN(int version, ReadSchemaVersion(*db));
    if (version > LatestSchemaVersion()) {
      return InvalidArgument("database " + path + " has schema version " + std::to_string(version) +
                             ", newer than this maxkernel understands (" +
                             std::to_string(LatestSchemaVersion()) +
                             "); it was written by a newer maxkernel: use that version or a "
                             "newer one");
    }
    if (options.read_only) {
      MK_RETURN_IF_ERROR(db->Exec("PRAGMA foreign_keys = ON"));
    } else {
      MK_RETURN_IF_ERROR(Prepare(*db, path, options));
    }
    return std::unique_ptr<SqliteStore>(new SqliteStore(std::move(db), std::move(options)));
  }();
  // An error that already names the file as its position needs no "opening store PATH" too.
  if (!opened.ok() && opened.status().loc().file != path) {
    return opened.status().WithContext("opening store " + path);
  }
  return opened;
}

double SqliteStore::Now() const {
  if (options_.clock) return options_.clock();
  auto since_epoch = std::chrono::system_clock::now().time_since_epoch();
  return std::chrono::duration<double>(since_epoch).count();
}

Result<int> SqliteStore::SchemaVersion() {
  std::lock_guard lock(mu_);
  return ReadSchemaVersion(*db_);
}

Status SqliteStore::CheckIntegrity() {
  std::lock_guard lock(mu_);
  std::string problems;
  {
    MK_ASSIGN_OR_RETURN(auto cursor, db_->Query("PRAGMA integrity_check"));
    while (true) {
      MK_ASSIGN_OR_RETURN(bool row, cursor->Step());
      if (!row) break;
      std::string line = cursor->Text(0);
      if (line != "ok") problems += line + "\n";
    }
  }
  {
    MK_ASSIGN_OR_RETURN(auto cursor, db_->Query("PRAGMA foreign_key_check"));
    while (true) {
      MK_ASSIGN_OR_RETURN(bool row, cursor->Step());
      if (!row) break;
      problems += "foreign key violation in " + cursor->Text(0) + " rowid " +
                  std::to_string(cursor->Int(1)) + "\n";
    }
  }
  if (problems.empty()) return Status::Ok();
  return IoError("database " + db_->path() + " failed its integrity check:\n" + problems);
}

Result<int64_t> SqliteStore::UpsertTask(const TaskRecord& task) {
  if (task.directory.empty()) return InvalidArgument("task directory is empty");
  MK_RETURN_IF_ERROR(CheckSha256(task.module_sha256, "task module_sha256", false));
  const std::string yaml_sha = Sha256Hex(task.yaml);
  std::lock_guard lock(mu_);
  int64_t id = 0;
  MK_RETURN_IF_ERROR(db_->WriteTransaction([&]() -> Status {
    MK_ASSIGN_OR_RETURN(
        auto insert, db_->Query("INSERT INTO tasks (directory, module_sha256, yaml, "
                                "yaml_sha256, created_at) VALUES (?, ?, ?, ?, ?) "
                                "ON CONFLICT (directory, module_sha256, yaml_sha256) DO NOTHING"));
    insert->Bind(1, task.directory).Bind(2, task.module_sha256).Bind(3, task.yaml);
    insert->Bind(4, yaml_sha).Bind(5, Now());
    MK_RETURN_IF_ERROR(insert->Run());
    MK_ASSIGN_OR_RETURN(auto select, db_->Query("SELECT id FROM tasks WHERE directory = ? AND "
                                                "module_sha256 = ? AND yaml_sha256 = ?"));
    select->Bind(1, task.directory).Bind(2, task.module_sha256).Bind(3, yaml_sha);
    MK_ASSIGN_OR_RETURN(bool row, select->Step());
    if (!row) return Internal("task row vanished after insert");
    id = select->Int(0);
    return Status::Ok();
  }));
  return id;
}

Result<TaskRecord> SqliteStore::GetTask(int64_t task_id) {
  std::lock_guard lock(mu_);
  MK_ASSIGN_OR_RETURN(auto cursor, db_->Query("SELECT id, directory, module_sha256, yaml, "
                                              "created_at FROM tasks WHERE id = ?"));
  cursor->Bind(1, task_id);
  MK_ASSIGN_OR_RETURN(bool row, cursor->Step());
  if (!row) return NotFound("task " + std::to_string(task_id) + " not found");
  TaskRecord task;
  task.id = cursor->Int(0);
  task.directory = cursor->Text(1);
  task.module_sha256 = cursor->Text(2);
  task.yaml = cursor->Text(3);
  task.created_at = cursor->Real(4);
  return task;
}

Result<int64_t> SqliteStore::CreateRun(const NewRun& run) {
  if (run.target.empty()) return InvalidArgument("run target is empty");
  MK_RETURN_IF_ERROR(CheckJson(run.config_json, "run config_json", true));
  std::lock_guard lock(mu_);
  int64_t id = 0;
  MK_RETURN_IF_ERROR(db_->WriteTransaction([&]() -> Status {
    MK_RETURN_IF_ERROR(CheckId(run.task_id, "task"));
    MK_ASSIGN_OR_RETURN(bool task_found,
                        Exists(*db_, "SELECT 1 FROM tasks WHERE id = ?", run.task_id));
    if (!task_found) return NotFound("task " + std::to_string(run.task_id) + " not found");
    MK_ASSIGN_OR_RETURN(auto insert,
                        db_->Query("INSERT INTO runs (task_id, mode, target, config_json, status, "
                                   "started_at) VALUES (?, ?, ?, ?, ?, ?)"));
    insert->Bind(1, run.task_id).Bind(2, RunModeName(run.mode)).Bind(3, run.target);
    insert->Bind(4, run.config_json).Bind(5, RunStatusName(RunStatus::kRunning)).Bind(6, Now());
    MK_RETURN_IF_ERROR(insert->Run());
    id = db_->LastInsertId();
    return Status::Ok();
  }));
  return id;
}

Status SqliteStore::FinishRun(int64_t run_id, RunStatus status) {
  if (status == RunStatus::kRunning) {
    return InvalidArgument("FinishRun needs a final status (succeeded, failed or cancelled)");
  }
  std::lock_guard lock(mu_);
  return db_->WriteTransaction([&]() -> Status {
    MK_RETURN_IF_ERROR(RequireRun(*db_, run_id));
    MK_ASSIGN_OR_RETURN(auto update,
                        db_->Query("UPDATE runs SET status = ?, finished_at = ? WHERE id = ?"));
    update->Bind(1, RunStatusName(status)).Bind(2, Now()).Bind(3, run_id);
    return update->Run();
  });
}

Status SqliteStore::ResumeRun(int64_t run_id) {
  std::lock_guard lock(mu_);
  return db_->WriteTransaction([&]() -> Status {
    MK_RETURN_IF_ERROR(RequireRun(*db_, run_id));
    MK_ASSIGN_OR_RETURN(auto update,
                        db_->Query("UPDATE runs SET status = ?, finished_at = NULL WHERE id = ?"));
    update->Bind(1, RunStatusName(RunStatus::kRunning)).Bind(2, run_id);
    return update->Run();
  });
}

Status SqliteStore::SetRunBest(int64_t run_id, int64_t candidate_id) {
  std::lock_guard lock(mu_);
  return db_->WriteTransaction([&]() -> Status {
    MK_RETURN_IF_ERROR(RequireRun(*db_, run_id));
    MK_ASSIGN_OR_RETURN(auto select,
                        db_->Query("SELECT status FROM candidates WHERE id = ? AND run_id = ?"));
    select->Bind(1, candidate_id).Bind(2, run_id);
    MK_ASSIGN_OR_RETURN(bool row, select->Step());
    if (!row) {
      return NotFound("candidate " + std::to_string(candidate_id) + " of run " +
                      std::to_string(run_id) + " not found");
    }
    std::string status = select->Text(0);
    if (status != CandidateStatusName(CandidateStatus::kCorrect)) {
      return InvalidArgument("candidate " + std::to_string(candidate_id) + " is " + status +
                             ": only a candidate that passed the tester can be a run's best");
    }
    MK_ASSIGN_OR_RETURN(auto update,
                        db_->Query("UPDATE runs SET best_candidate_id = ? WHERE id = ?"));
    update->Bind(1, candidate_id).Bind(2, run_id);
    return update->Run();
  });
}

Result<std::vector<RunRecord>> SqliteStore::QueryRuns(const std::string& where_and_order,
                                                      std::optional<int64_t> run_id,
                                                      int64_t limit) {
  const std::string sql =
      "SELECT r.id, r.task_id, t.directory, r.mode, r.target, r.config_json, r.status, "
      "r.best_candidate_id, "
      "(SELECT MIN(m.median_s) FROM measurements m WHERE m.run_id = r.id AND "
      "m.candidate_id = r.best_candidate_id), "
      "(SELECT count(*) FROM candidates c WHERE c.run_id = r.id), "
      "(SELECT count(*) FROM measurements m WHERE m.run_id = r.id), "
      "r.started_at, r.finished_at FROM runs r JOIN tasks t ON t.id = r.task_id " +
      where_and_order + " LIMIT ?";
  MK_ASSIGN_OR_RETURN(auto cursor, db_->Query(sql));
  int index = 1;
  if (run_id.has_value()) cursor->Bind(index++, *run_id);
  cursor->Bind(index, limit > 0 ? limit : int64_t{-1});  // LIMIT -1: no limit
  std::vector<RunRecord> runs;
  while (true) {
    MK_ASSIGN_OR_RETURN(bool row, cursor->Step());
    if (!row) break;
    MK_ASSIGN_OR_RETURN(RunRecord run, RunFromRow(*cursor));
    runs.push_back(std::move(run));
  }
  return runs;
}

Result<RunRecord> SqliteStore::GetRun(int64_t run_id) {
  std::lock_guard lock(mu_);
  MK_ASSIGN_OR_RETURN(auto runs, QueryRuns("WHERE r.id = ?", run_id, 1));
  if (runs.empty()) return NotFound("run " + std::to_string(run_id) + " not found");
  return std::move(runs.front());
}

Result<std::vector<RunRecord>> SqliteStore::ListRuns(int64_t limit) {
  std::lock_guard lock(mu_);
  return QueryRuns("ORDER BY r.id DESC", std::nullopt, limit);
}

Result<std::vector<RunRecord>> SqliteStore::IncompleteRuns() {
  std::lock_guard lock(mu_);
  return QueryRuns("WHERE r.status = 'running' ORDER BY r.id", std::nullopt, 0);
}

Result<int64_t> SqliteStore::AddCandidate(const NewCandidate& candidate) {
  if (candidate.seq < 0) return InvalidArgument("candidate seq must be >= 0");
  MK_RETURN_IF_ERROR(CheckJson(candidate.schedule_json, "candidate schedule_json", false));
  MK_RETURN_IF_ERROR(
      CheckSha256(candidate.implementation_sha256, "candidate implementation_sha256", true));
  std::lock_guard lock(mu_);
  int64_t id = 0;
  MK_RETURN_IF_ERROR(db_->WriteTransaction([&]() -> Status {
    MK_RETURN_IF_ERROR(RequireRun(*db_, candidate.run_id));
    MK_ASSIGN_OR_RETURN(auto existing,
                        db_->Query("SELECT id, schedule_json, implementation_sha256 FROM "
                                   "candidates WHERE run_id = ? AND seq = ?"));
    existing->Bind(1, candidate.run_id).Bind(2, candidate.seq);
    MK_ASSIGN_OR_RETURN(bool found, existing->Step());
    if (found) {
      id = existing->Int(0);
      // Compared as JSON values: a resumed run may serialize the same schedule differently.
      if (Json::parse(existing->Text(1), nullptr, false) !=
          Json::parse(candidate.schedule_json, nullptr, false)) {
        return InvalidArgument("candidate " + std::to_string(candidate.seq) + " of run " +
                               std::to_string(candidate.run_id) +
                               " already exists with a different schedule");
      }
      std::string stored_sha = existing->Text(2);
      if (!candidate.implementation_sha256.empty() &&
          stored_sha != candidate.implementation_sha256) {
        if (!stored_sha.empty()) {
          return InvalidArgument("candidate " + std::to_string(candidate.seq) + " of run " +
                                 std::to_string(candidate.run_id) +
                                 " already exists with a different implementation");
        }
        MK_ASSIGN_OR_RETURN(auto update, db_->Query("UPDATE candidates SET "
                                                    "implementation_sha256 = ? WHERE id = ?"));
        update->Bind(1, candidate.implementation_sha256).Bind(2, id);
        MK_RETURN_IF_ERROR(update->Run());
      }
      return Status::Ok();
    }
    MK_ASSIGN_OR_RETURN(auto insert,
                        db_->Query("INSERT INTO candidates (run_id, seq, schedule_json, "
                                   "implementation_sha256, status, created_at) "
                                   "VALUES (?, ?, ?, ?, ?, ?)"));
    insert->Bind(1, candidate.run_id).Bind(2, candidate.seq).Bind(3, candidate.schedule_json);
    insert->Bind(4, candidate.implementation_sha256)
        .Bind(5, CandidateStatusName(CandidateStatus::kProposed))
        .Bind(6, Now());
    MK_RETURN_IF_ERROR(insert->Run());
    id = db_->LastInsertId();
    return Status::Ok();
  }));
  return id;
}

Status SqliteStore::SetCandidateStatus(int64_t candidate_id, CandidateStatus status) {
  std::lock_guard lock(mu_);
  return db_->WriteTransaction([&]() -> Status {
    MK_RETURN_IF_ERROR(RequireCandidate(*db_, candidate_id));
    MK_ASSIGN_OR_RETURN(auto update, db_->Query("UPDATE candidates SET status = ? WHERE id = ?"));
    update->Bind(1, CandidateStatusName(status)).Bind(2, candidate_id);
    return update->Run();
  });
}

Status SqliteStore::SetCandidateImplementation(int64_t candidate_id, std::string_view sha256) {
  MK_RETURN_IF_ERROR(CheckSha256(sha256, "implementation sha256", false));
  std::lock_guard lock(mu_);
  return db_->WriteTransaction([&]() -> Status {
    MK_RETURN_IF_ERROR(RequireCandidate(*db_, candidate_id));
    MK_ASSIGN_OR_RETURN(auto update, db_->Query("UPDATE candidates SET implementation_sha256 "
                                                "= ? WHERE id = ?"));
    update->Bind(1, sha256).Bind(2, candidate_id);
    return update->Run();
  });
}

Result<CandidateRecord> SqliteStore::GetCandidate(int64_t candidate_id) {
  std::lock_guard lock(mu_);
  MK_ASSIGN_OR_RETURN(auto cursor, db_->Query(std::string(kCandidateColumns) + "WHERE id = ?"));
  cursor->Bind(1, candidate_id);
  MK_ASSIGN_OR_RETURN(bool row, cursor->Step());
  if (!row) return NotFound("candidate " + std::to_string(candidate_id) + " not found");
  return CandidateFromRow(*cursor);
}

Result<std::vector<CandidateRecord>> SqliteStore::ListCandidates(int64_t run_id) {
  std::lock_guard lock(mu_);
  MK_ASSIGN_OR_RETURN(auto cursor,
                      db_->Query(std::string(kCandidateColumns) + "WHERE run_id = ? ORDER BY seq"));
  cursor->Bind(1, run_id);
  std::vector<CandidateRecord> candidates;
  while (true) {
    MK_ASSIGN_OR_RETURN(bool row, cursor->Step());
    if (!row) break;
    MK_ASSIGN_OR_RETURN(CandidateRecord candidate, CandidateFromRow(*cursor));
    candidates.push_back(std::move(candidate));
  }
  return candidates;
}

Result<int64_t> SqliteStore::AddBuild(const NewBuild& build) {
  if (!std::isfinite(build.compile_seconds) || build.compile_seconds < 0) {
    return InvalidArgument("build compile_seconds must be a finite number >= 0");
  }
  Json artifacts = Json::object();
  for (const auto& [role, sha] : build.artifacts) {
    if (role.empty()) return InvalidArgument("build artifact with an empty role");
    MK_RETURN_IF_ERROR(CheckSha256(sha, "build artifact hash", false));
    artifacts[role] = sha;
  }
  std::lock_guard lock(mu_);
  int64_t id = 0;
  MK_RETURN_IF_ERROR(db_->WriteTransaction([&]() -> Status {
    MK_RETURN_IF_ERROR(RequireCandidate(*db_, build.candidate_id));
    MK_ASSIGN_OR_RETURN(auto insert,
                        db_->Query("INSERT INTO builds (candidate_id, status, compile_seconds, "
                                   "artifacts_json, diagnosis, created_at) "
                                   "VALUES (?, ?, ?, ?, ?, ?)"));
    insert->Bind(1, build.candidate_id).Bind(2, BuildStatusName(build.status));
    insert->Bind(3, build.compile_seconds).Bind(4, artifacts.dump()).Bind(5, build.diagnosis);
    insert->Bind(6, Now());
    MK_RETURN_IF_ERROR(insert->Run());
    id = db_->LastInsertId();
    return Status::Ok();
  }));
  return id;
}

Result<std::vector<BuildRecord>> SqliteStore::ListBuilds(int64_t candidate_id) {
  std::lock_guard lock(mu_);
  MK_ASSIGN_OR_RETURN(auto cursor, db_->Query("SELECT id, candidate_id, status, compile_seconds, "
                                              "artifacts_json, diagnosis, created_at FROM builds "
                                              "WHERE candidate_id = ? ORDER BY id"));
  cursor->Bind(1, candidate_id);
  std::vector<BuildRecord> builds;
  while (true) {
    MK_ASSIGN_OR_RETURN(bool row, cursor->Step());
    if (!row) break;
    BuildRecord build;
    build.id = cursor->Int(0);
    build.candidate_id = cursor->Int(1);
    MK_ASSIGN_OR_RETURN(build.status, ParseBuildStatus(cursor->Text(2)));
    build.compile_seconds = cursor->Real(3);
    Json artifacts = Json::parse(cursor->Text(4), nullptr, false);
    if (!artifacts.is_object()) {
      return Internal("build " + std::to_string(build.id) + " has unreadable artifacts_json");
    }
    for (const auto& [role, sha] : artifacts.items()) {
      if (!sha.is_string()) {
        return Internal("build " + std::to_string(build.id) + " has a non-string artifact hash");
      }
      build.artifacts[role] = sha.get<std::string>();
    }
    build.diagnosis = cursor->Text(5);
    build.created_at = cursor->Real(6);
    builds.push_back(std::move(build));
  }
  return builds;
}

Result<AddMeasurementResult> SqliteStore::AddMeasurement(const NewMeasurement& m) {
  if (m.key.seq < 0) return InvalidArgument("measurement seq must be >= 0");
  if (!std::isfinite(m.median_s) || !std::isfinite(m.p10_s) || !std::isfinite(m.p90_s) ||
      m.p10_s < 0 || m.p10_s > m.median_s || m.median_s > m.p90_s) {
    return InvalidArgument("measurement times must be finite with 0 <= p10 <= median <= p90");
  }
  if (m.iterations < 1) return InvalidArgument("measurement iterations must be >= 1");
  MK_RETURN_IF_ERROR(CheckJson(m.environment_json, "measurement environment_json", true));
  std::lock_guard lock(mu_);
  AddMeasurementResult result;
  MK_RETURN_IF_ERROR(db_->WriteTransaction([&]() -> Status {
    MK_RETURN_IF_ERROR(CheckId(m.run_id, "run"));
    MK_ASSIGN_OR_RETURN(bool owned,
                        Exists(*db_, "SELECT 1 FROM candidates WHERE id = ? AND run_id = ?",
                               m.key.candidate_id, m.run_id));
    if (!owned) {
      return NotFound("candidate " + std::to_string(m.key.candidate_id) + " of run " +
                      std::to_string(m.run_id) + " not found");
    }
    MK_ASSIGN_OR_RETURN(auto insert,
                        db_->Query("INSERT INTO measurements (run_id, candidate_id, seq, "
                                   "median_s, p10_s, p90_s, iterations, environment_json, "
                                   "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                                   "ON CONFLICT (run_id, candidate_id, seq) DO NOTHING"));
    insert->Bind(1, m.run_id).Bind(2, m.key.candidate_id).Bind(3, m.key.seq);
    insert->Bind(4, m.median_s).Bind(5, m.p10_s).Bind(6, m.p90_s).Bind(7, m.iterations);
    insert->Bind(8, m.environment_json).Bind(9, Now());
    MK_RETURN_IF_ERROR(insert->Run());
    if (db_->Changes() == 1) {
      result = {db_->LastInsertId(), true};
      return Status::Ok();
    }
    MK_ASSIGN_OR_RETURN(auto select, db_->Query("SELECT id FROM measurements WHERE run_id = ? "
                                                "AND candidate_id = ? AND seq = ?"));
    select->Bind(1, m.run_id).Bind(2, m.key.candidate_id).Bind(3, m.key.seq);
    MK_ASSIGN_OR_RETURN(bool row, select->Step());
    if (!row) return Internal("measurement insert neither stored nor found its key");
    result = {select->Int(0), false};
    return Status::Ok();
  }));
  return result;
}

Result<std::vector<MeasurementRecord>> SqliteStore::ListMeasurements(int64_t run_id) {
  std::lock_guard lock(mu_);
  MK_ASSIGN_OR_RETURN(auto cursor,
                      db_->Query("SELECT id, run_id, candidate_id, seq, median_s, p10_s, p90_s, "
                                 "iterations, environment_json, created_at FROM measurements "
                                 "WHERE run_id = ? ORDER BY id"));
  cursor->Bind(1, run_id);
  std::vector<MeasurementRecord> measurements;
  while (true) {
    MK_ASSIGN_OR_RETURN(bool row, cursor->Step());
    if (!row) break;
    MeasurementRecord m;
    m.id = cursor->Int(0);
    m.run_id = cursor->Int(1);
    m.key = {cursor->Int(2), cursor->Int(3)};
    m.median_s = cursor->Real(4);
    m.p10_s = cursor->Real(5);
    m.p90_s = cursor->Real(6);
    m.iterations = cursor->Int(7);
    m.environment_json = cursor->Text(8);
    m.created_at = cursor->Real(9);
    measurements.push_back(std::move(m));
  }
  return measurements;
}

Result<std::vector<MeasurementKey>> SqliteStore::FinishedMeasurementKeys(int64_t run_id) {
  std::lock_guard lock(mu_);
  MK_ASSIGN_OR_RETURN(auto cursor, db_->Query("SELECT candidate_id, seq FROM measurements WHERE "
                                              "run_id = ? ORDER BY candidate_id, seq"));
  cursor->Bind(1, run_id);
  std::vector<MeasurementKey> keys;
  while (true) {
    MK_ASSIGN_OR_RETURN(bool row, cursor->Step());
    if (!row) break;
    keys.push_back({cursor->Int(0), cursor->Int(1)});
  }
  return keys;
}

Result<int64_t> SqliteStore::AddDiagnosis(const NewDiagnosis& d) {
  if (d.diagnosis_class.empty()) return InvalidArgument("diagnosis class is empty");
  MK_RETURN_IF_ERROR(CheckSha256(d.artifact_sha256, "diagnosis artifact_sha256", true));
  std::lock_guard lock(mu_);
  int64_t id = 0;
  MK_RETURN_IF_ERROR(db_->WriteTransaction([&]() -> Status {
    MK_RETURN_IF_ERROR(RequireCandidate(*db_, d.candidate_id));
    if (d.build_id.has_value()) {
      MK_ASSIGN_OR_RETURN(bool owned,
                          Exists(*db_, "SELECT 1 FROM builds WHERE id = ? AND candidate_id = ?",
                                 *d.build_id, d.candidate_id));
      if (!owned) {
        return NotFound("build " + std::to_string(*d.build_id) + " of candidate " +
                        std::to_string(d.candidate_id) + " not found");
      }
    }
    MK_ASSIGN_OR_RETURN(auto insert,
                        db_->Query("INSERT INTO diagnoses (candidate_id, build_id, class, "
                                   "message, artifact_sha256, created_at) "
                                   "VALUES (?, ?, ?, ?, ?, ?)"));
    insert->Bind(1, d.candidate_id).Bind(2, d.build_id).Bind(3, d.diagnosis_class);
    insert->Bind(4, d.message).Bind(5, d.artifact_sha256).Bind(6, Now());
    MK_RETURN_IF_ERROR(insert->Run());
    id = db_->LastInsertId();
    return Status::Ok();
  }));
  return id;
}

Result<std::vector<DiagnosisRecord>> SqliteStore::ListDiagnoses(int64_t run_id) {
  std::lock_guard lock(mu_);
  MK_ASSIGN_OR_RETURN(auto cursor,
                      db_->Query("SELECT d.id, d.candidate_id, d.build_id, d.class, d.message, "
                                 "d.artifact_sha256, d.created_at FROM diagnoses d JOIN "
                                 "candidates c ON c.id = d.candidate_id WHERE c.run_id = ? "
                                 "ORDER BY d.id"));
  cursor->Bind(1, run_id);
  std::vector<DiagnosisRecord> diagnoses;
  while (true) {
    MK_ASSIGN_OR_RETURN(bool row, cursor->Step());
    if (!row) break;
    DiagnosisRecord d;
    d.id = cursor->Int(0);
    d.candidate_id = cursor->Int(1);
    d.build_id = cursor->OptionalInt(2);
    d.diagnosis_class = cursor->Text(3);
    d.message = cursor->Text(4);
    d.artifact_sha256 = cursor->Text(5);
    d.created_at = cursor->Real(6);
    diagnoses.push_back(std::move(d));
  }
  return diagnoses;
}

Result<int64_t> SqliteStore::AddEvent(std::optional<int64_t> run_id, std::string_view kind,
                                      std::string_view payload_json) {
  if (kind.empty()) return InvalidArgument("event kind is empty");
  std::string payload = payload_json.empty() ? "{}" : std::string(payload_json);
  MK_RETURN_IF_ERROR(CheckJson(payload, "event payload", true));
  std::lock_guard lock(mu_);
  int64_t id = 0;
  MK_RETURN_IF_ERROR(db_->WriteTransaction([&]() -> Status {
    if (run_id.has_value()) MK_RETURN_IF_ERROR(RequireRun(*db_, *run_id));
    MK_ASSIGN_OR_RETURN(auto insert, db_->Query("INSERT INTO events (run_id, ts, kind, "
                                                "payload_json) VALUES (?, ?, ?, ?)"));
    insert->Bind(1, run_id).Bind(2, Now()).Bind(3, kind).Bind(4, payload);
    MK_RETURN_IF_ERROR(insert->Run());
    id = db_->LastInsertId();
    return Status::Ok();
  }));
  return id;
}

namespace {

Result<std::vector<EventRecord>> ReadEvents(SqliteCursor& cursor) {
  std::vector<EventRecord> events;
  while (true) {
    MK_ASSIGN_OR_RETURN(bool row, cursor.Step());
    if (!row) break;
    EventRecord e;
    e.id = cursor.Int(0);
    e.run_id = cursor.OptionalInt(1);
    e.ts = cursor.Real(2);
    e.kind = cursor.Text(3);
    e.payload_json = cursor.Text(4);
    events.push_back(std::move(e));
  }
  return events;
}

}  // namespace

Result<std::vector<EventRecord>> SqliteStore::ListEvents(std::optional<int64_t> run_id,
                                                         int64_t limit) {
  std::lock_guard lock(mu_);
  // `run_id IS ?` with NULL would select only run-less events; a flag column keeps one statement.
  MK_ASSIGN_OR_RETURN(auto cursor,
                      db_->Query("SELECT id, run_id, ts, kind, payload_json FROM events "
                                 "WHERE (? = 0 OR run_id = ?) ORDER BY id LIMIT ?"));
  cursor->Bind(1, int64_t{run_id.has_value() ? 1 : 0}).Bind(2, run_id.value_or(0));
  cursor->Bind(3, limit > 0 ? limit : int64_t{-1});
  return ReadEvents(*cursor);
}

Result<std::vector<EventRecord>> SqliteStore::EventsAfter(int64_t after_id, int64_t limit) {
  std::lock_guard lock(mu_);
  MK_ASSIGN_OR_RETURN(auto cursor, db_->Query("SELECT id, run_id, ts, kind, payload_json FROM "
                                              "events WHERE id > ? ORDER BY id LIMIT ?"));
  cursor->Bind(1, after_id).Bind(2, limit > 0 ? limit : int64_t{1});
  return ReadEvents(*cursor);
}

Result<int64_t> SqliteStore::AddMachineProbe(const MachineProbeRecord& probe) {
  if (probe.cpu_model.empty()) return InvalidArgument("machine probe has no cpu model");
  if (probe.cores < 1) return InvalidArgument("machine probe has cores < 1");
  // !(x > 0) also refuses NaN; an infinity is no measurement either.
  auto positive = [](double x) { return x > 0 && std::isfinite(x); };
  if (!positive(probe.peak_flops_f32) || !positive(probe.bandwidth_bytes_per_s) ||
      (probe.peak_flops_bf16.has_value() && !positive(*probe.peak_flops_bf16))) {
    return InvalidArgument("machine probe rates must be positive and finite");
  }
  std::string details = probe.details_json.empty() ? "{}" : probe.details_json;
  MK_RETURN_IF_ERROR(CheckJson(details, "machine probe details", true));
  std::lock_guard lock(mu_);
  int64_t id = 0;
  MK_RETURN_IF_ERROR(db_->WriteTransaction([&]() -> Status {
    MK_ASSIGN_OR_RETURN(auto insert,
                        db_->Query("INSERT INTO machine_probes (cpu_model, cores, peak_flops_f32, "
                                   "peak_flops_bf16, bandwidth_bytes_per_s, details_json, "
                                   "measured_at) VALUES (?, ?, ?, ?, ?, ?, ?)"));
    insert->Bind(1, std::string_view(probe.cpu_model)).Bind(2, probe.cores);
    insert->Bind(3, probe.peak_flops_f32);
    if (probe.peak_flops_bf16.has_value()) {
      insert->Bind(4, *probe.peak_flops_bf16);
    } else {
      insert->BindNull(4);
    }
    insert->Bind(5, probe.bandwidth_bytes_per_s).Bind(6, std::string_view(details)).Bind(7, Now());
    MK_RETURN_IF_ERROR(insert->Run());
    id = db_->LastInsertId();
    return Status::Ok();
  }));
  return id;
}

Result<std::optional<MachineProbeRecord>> SqliteStore::LatestMachineProbe(
    std::string_view cpu_model, int64_t cores) {
  std::lock_guard lock(mu_);
  MK_ASSIGN_OR_RETURN(auto cursor,
                      db_->Query("SELECT id, cpu_model, cores, peak_flops_f32, peak_flops_bf16, "
                                 "bandwidth_bytes_per_s, details_json, measured_at FROM "
                                 "machine_probes WHERE cpu_model = ? AND cores = ? "
                                 "ORDER BY id DESC LIMIT 1"));
  cursor->Bind(1, cpu_model).Bind(2, cores);
  MK_ASSIGN_OR_RETURN(bool row, cursor->Step());
  if (!row) return std::optional<MachineProbeRecord>();
  MachineProbeRecord probe;
  probe.id = cursor->Int(0);
  probe.cpu_model = cursor->Text(1);
  probe.cores = cursor->Int(2);
  probe.peak_flops_f32 = cursor->Real(3);
  if (!cursor->IsNull(4)) probe.peak_flops_bf16 = cursor->Real(4);
  probe.bandwidth_bytes_per_s = cursor->Real(5);
  probe.details_json = cursor->Text(6);
  probe.measured_at = cursor->Real(7);
  return std::optional<MachineProbeRecord>(std::move(probe));
}

// ---- leases ---------------------------------------------------------------------------------

namespace {

Result<std::optional<LeaseRecord>> ReadLease(SqliteDb& db, std::string_view resource) {
  MK_ASSIGN_OR_RETURN(auto cursor,
                      db.Query("SELECT resource, holder, acquired_at, heartbeat_at, expires_at "
                               "FROM leases WHERE resource = ?"));
  cursor->Bind(1, resource);
  MK_ASSIGN_OR_RETURN(bool row, cursor->Step());
  if (!row) return std::optional<LeaseRecord>();
  LeaseRecord lease;
  lease.resource = cursor->Text(0);
  lease.holder = cursor->Text(1);
  lease.acquired_at = cursor->Real(2);
  lease.heartbeat_at = cursor->Real(3);
  lease.expires_at = cursor->Real(4);
  return std::optional<LeaseRecord>(std::move(lease));
}

Status CheckLeaseArguments(std::string_view resource, std::string_view holder, double ttl_s) {
  if (resource.empty()) return InvalidArgument("a lease needs a resource name");
  if (holder.empty()) return InvalidArgument("a lease needs a holder");
  if (!(ttl_s > 0) || !std::isfinite(ttl_s)) return InvalidArgument("a lease's ttl must be > 0");
  return Status::Ok();
}

}  // namespace

Result<LeaseRecord> SqliteStore::AcquireLease(std::string_view resource, std::string_view holder,
                                              double ttl_s, std::string_view dead_holder) {
  MK_RETURN_IF_ERROR(CheckLeaseArguments(resource, holder, ttl_s));
  std::lock_guard lock(mu_);
  LeaseRecord lease;
  // Read and write under one write lock: two contenders serialize here, and the second sees
  // the first's row.
  MK_RETURN_IF_ERROR(db_->WriteTransaction([&]() -> Status {
    const double now = Now();
    MK_ASSIGN_OR_RETURN(std::optional<LeaseRecord> current, ReadLease(*db_, resource));
    if (current && current->holder != holder && current->expires_at > now &&
        (dead_holder.empty() || current->holder != dead_holder)) {
      char text[160];
      std::snprintf(text, sizeof text,
                    " (last heartbeat %.1f s ago; the lease expires in %.1f s unless renewed)",
                    now - current->heartbeat_at, current->expires_at - now);
      return InvalidArgument(std::string(resource) + " is held by " + current->holder + text);
    }
    lease.resource = std::string(resource);
    lease.holder = std::string(holder);
    lease.acquired_at = current && current->holder == holder ? current->acquired_at : now;
    lease.heartbeat_at = now;
    lease.expires_at = now + ttl_s;
    MK_ASSIGN_OR_RETURN(auto upsert,
                        db_->Query("INSERT INTO leases (resource, holder, acquired_at, "
                                   "heartbeat_at, expires_at) VALUES (?, ?, ?, ?, ?) "
                                   "ON CONFLICT (resource) DO UPDATE SET holder = "
                                   "excluded.holder, acquired_at = excluded.acquired_at, "
                                   "heartbeat_at = excluded.heartbeat_at, expires_at = "
                                   "excluded.expires_at"));
    upsert->Bind(1, resource).Bind(2, holder).Bind(3, lease.acquired_at);
    upsert->Bind(4, lease.heartbeat_at).Bind(5, lease.expires_at);
    return upsert->Run();
  }));
  return lease;
}

Result<LeaseRecord> SqliteStore::RenewLease(std::string_view resource, std::string_view holder,
                                            double ttl_s) {
  MK_RETURN_IF_ERROR(CheckLeaseArguments(resource, holder, ttl_s));
  std::lock_guard lock(mu_);
  LeaseRecord lease;
  MK_RETURN_IF_ERROR(db_->WriteTransaction([&]() -> Status {
    const double now = Now();
    MK_ASSIGN_OR_RETURN(std::optional<LeaseRecord> current, ReadLease(*db_, resource));
    if (!current || current->holder != holder) {
      return NotFound(std::string(holder) + " no longer holds " + std::string(resource) +
                      (current ? " (taken over by " + current->holder + ")" : " (released)"));
    }
    MK_ASSIGN_OR_RETURN(auto update,
                        db_->Query("UPDATE leases SET heartbeat_at = ?, expires_at = ? "
                                   "WHERE resource = ? AND holder = ?"));
    update->Bind(1, now).Bind(2, now + ttl_s).Bind(3, resource).Bind(4, holder);
    MK_RETURN_IF_ERROR(update->Run());
    lease = *current;
    lease.heartbeat_at = now;
    lease.expires_at = now + ttl_s;
    return Status::Ok();
  }));
  return lease;
}

Status SqliteStore::ReleaseLease(std::string_view resource, std::string_view holder) {
  std::lock_guard lock(mu_);
  return db_->WriteTransaction([&]() -> Status {
    MK_ASSIGN_OR_RETURN(auto remove,
                        db_->Query("DELETE FROM leases WHERE resource = ? AND holder = ?"));
    remove->Bind(1, resource).Bind(2, holder);
    return remove->Run();
  });
}

Result<std::optional<LeaseRecord>> SqliteStore::GetLease(std::string_view resource) {
  std::lock_guard lock(mu_);
  return ReadLease(*db_, resource);
}

}  // namespace mk::store
