// The default Store: one SQLite file, shared safely by several processes.
//
// - WAL journal: readers never block the writer, and a process killed mid-write leaves the file
//   consistent (the unfinished transaction is simply not there on the next open).
// - busy_timeout: a writer waits for another process's transaction instead of failing.
// - every write is one BEGIN IMMEDIATE transaction; synchronous=FULL makes a returned write
//   durable across power loss too (kill safety alone would only need NORMAL).
// - foreign keys on; statements prepared once per connection.
// The object is thread-safe (one mutex around the connection). Never use one across fork():
// open a new SqliteStore in the child.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "store/sqlite_db.h"
#include "store/store.h"

namespace mk::store {

struct SqliteStoreOptions {
  int busy_timeout_ms = 30000;
  bool create = true;           // create the file when missing (mode 0600, whatever the umask)
  // Read-only commands (runs list/show, export): SQLITE_OPEN_READONLY, no WAL switch and no
  // migration, so a database the user cannot write (or one on read-only media) can be read.
  // The caller checks SchemaVersion(): an older database is not upgraded by a read-only open.
  bool read_only = false;
  bool durable_commits = true;  // synchronous=FULL (true) or NORMAL
  // Seconds since the epoch for created_at / ts columns (tests pin it).
  std::function<double()> clock;
};

class SqliteStore final : public Store, public AccessStore {
 public:
  // Opens `path`, sets the connection up and applies missing migrations. Refuses a database
  // whose schema is newer than this binary knows, a SQLite file of another application, and an
  // existing file that is not a SQLite database at all (an empty file included: SQLite would
  // take it for a new database and write into it); such a file is left untouched. A new file is
  // created complete (migrated beside `path`, then linked into place) and private (0600; its
  // -wal and -shm files inherit the mode).
  static Result<std::unique_ptr<SqliteStore>> Open(const std::string& path,
                                                   SqliteStoreOptions options = {});

  Result<int> SchemaVersion() override;
  Status CheckIntegrity() override;

  Result<int64_t> UpsertTask(const TaskRecord& task) override;
  Result<TaskRecord> GetTask(int64_t task_id) override;

  Result<int64_t> CreateRun(const NewRun& run) override;
  Status FinishRun(int64_t run_id, RunStatus status) override;
  Status ResumeRun(int64_t run_id) override;
  Status SetRunBest(int64_t run_id, int64_t candidate_id) override;
  Result<RunRecord> GetRun(int64_t run_id) override;
  Result<std::vector<RunRecord>> ListRuns(int64_t limit) override;
  Result<std::vector<RunRecord>> IncompleteRuns() override;

  Result<int64_t> AddCandidate(const NewCandidate& candidate) override;
  Status SetCandidateStatus(int64_t candidate_id, CandidateStatus status) override;
  Status SetCandidateImplementation(int64_t candidate_id, std::string_view sha256) override;
  Result<CandidateRecord> GetCandidate(int64_t candidate_id) override;
  Result<std::vector<CandidateRecord>> ListCandidates(int64_t run_id) override;

  Result<int64_t> AddBuild(const NewBuild& build) override;
  Result<std::vector<BuildRecord>> ListBuilds(int64_t candidate_id) override;

  Result<AddMeasurementResult> AddMeasurement(const NewMeasurement& measurement) override;
  Result<std::vector<MeasurementRecord>> ListMeasurements(int64_t run_id) override;
  Result<std::vector<MeasurementKey>> FinishedMeasurementKeys(int64_t run_id) override;

  Result<int64_t> AddDiagnosis(const NewDiagnosis& diagnosis) override;
  Result<std::vector<DiagnosisRecord>> ListDiagnoses(int64_t run_id) override;

  Result<int64_t> AddEvent(std::optional<int64_t> run_id, std::string_view kind,
                           std::string_view payload_json) override;
  Result<std::vector<EventRecord>> ListEvents(std::optional<int64_t> run_id,
                                              int64_t limit) override;

  Result<std::vector<EventRecord>> EventsAfter(int64_t after_id, int64_t limit) override;
  Result<LeaseRecord> AcquireLease(std::string_view resource, std::string_view holder,
                                   double ttl_s, std::string_view dead_holder = {}) override;
  Result<LeaseRecord> RenewLease(std::string_view resource, std::string_view holder,
                                 double ttl_s) override;
  Status ReleaseLease(std::string_view resource, std::string_view holder) override;
  Result<std::optional<LeaseRecord>> GetLease(std::string_view resource) override;
  Result<int64_t> AddMachineProbe(const MachineProbeRecord& probe) override;
  Result<std::optional<MachineProbeRecord>> LatestMachineProbe(std::string_view cpu_model,
                                                               int64_t cores) override;

  // sqlite_baselines.cc
  Result<int64_t> AddBaseline(const BaselineRecord& baseline) override;
  Result<std::optional<BaselineRecord>> LatestBaseline(std::string_view module_sha256,
                                                       std::string_view cpu_model,
                                                       std::string_view engine) override;

  // sqlite_access.cc
  AccessStore* Access() override { return this; }
  Result<UserRecord> CreateUser(std::string_view name, std::string_view role,
                                const AuditEntry& audit) override;
  Result<std::optional<UserRecord>> FindUser(std::string_view name) override;
  Result<std::optional<UserRecord>> GetUser(int64_t id) override;
  Result<std::vector<UserRecord>> ListUsers() override;
  Status SetUserRole(std::string_view name, std::string_view role,
                     const AuditEntry& audit) override;
  Status SetUserDisabled(std::string_view name, bool disabled, const AuditEntry& audit) override;
  Result<int64_t> AddToken(const NewToken& token, const AuditEntry& audit) override;
  Result<std::optional<TokenRecord>> FindToken(std::string_view lookup_id) override;
  Result<std::vector<TokenRecord>> ListTokens() override;
  Status RevokeToken(std::string_view lookup_id, const AuditEntry& audit) override;
  Status AddWebSession(const WebSessionRecord& session, const AuditEntry& audit) override;
  Result<std::optional<WebSessionRecord>> FindWebSession(std::string_view id_sha256) override;
  Status DeleteWebSession(std::string_view id_sha256, const AuditEntry& audit) override;
  Result<AuditRecord> AppendAudit(const AuditEntry& audit) override;
  Result<std::vector<AuditRecord>> ListAudit(int64_t after_id, int64_t limit) override;

  const std::string& path() const { return db_->path(); }

 private:
  SqliteStore(std::unique_ptr<SqliteDb> db, SqliteStoreOptions options)
      : db_(std::move(db)), options_(std::move(options)) {}
  double Now() const;
  // Appends `audit` to the chain; call inside a write transaction.
  Result<AuditRecord> AppendAuditLocked(const AuditEntry& audit);
  // `where_and_order` may hold one `?` for run_id (bound when given).
  Result<std::vector<RunRecord>> QueryRuns(const std::string& where_and_order,
                                           std::optional<int64_t> run_id, int64_t limit);

  std::mutex mu_;
  std::unique_ptr<SqliteDb> db_;
  SqliteStoreOptions options_;
};

}  // namespace mk::store
