// The store: everything maxkernel remembers about its work — tasks, runs, the candidates a run
// tried, their builds, measurements and diagnoses, and an event (audit) log. Large blobs
// (sources, binaries, reports) live in the ArtifactStore and are referenced here by sha256.
//
// `Store` is an interface so that a shared PostgreSQL backend can be added beside the embedded
// SQLite one (sqlite_store.h) without touching its users. Every method is one atomic
// transaction; a method that returned OK is durable (it survives SIGKILL of the process).
//
// Lifecycle of a run, as the pipeline drives it:
//   task_id = UpsertTask(...); run = CreateRun(...);
//   per iteration: c = AddCandidate(run, seq, schedule); AddBuild(c, ...);
//                  [AddDiagnosis(...)] SetCandidateStatus(c, ...); AddMeasurement(run, c, seq, ...)
//   SetRunBest(run, c) whenever a better *correct* candidate appears; FinishRun(run, status).
// Resume: IncompleteRuns() lists runs still marked running (their process died, or is still
// working); FinishedMeasurementKeys(run) says which measurements need not be repeated. Adding a
// candidate or a measurement again with the same key is a no-op, so a resumed run may re-submit.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/access.h"
#include "support/status.h"

namespace mk::store {

enum class RunMode { kAuto, kHitl, kSearch };
enum class RunStatus {
  kRunning,    // created and not finished (a killed run stays here until resumed)
  kSucceeded,  // finished with a correct kernel
  kFailed,     // finished without a correct kernel
  kCancelled,  // stopped on purpose (SIGINT, a person in the UI)
};
enum class CandidateStatus {
  kProposed,     // schedule chosen, nothing built yet
  kBuilt,        // compiled, not tested yet
  kBuildFailed,  // the compiler refused (see builds / diagnoses)
  kTestFailed,   // ran but wrong, crashed or timed out (see diagnoses)
  kCorrect,      // passed the tester: the only status that may become a run's best
  kDuplicate,    // built the same library (sha256) as an earlier candidate of the run: not run
};
enum class BuildStatus { kOk, kFailed, kTimeout };

// Names as stored in the database and shown to users ("auto", "running", "build_failed", ...).
std::string_view RunModeName(RunMode mode);
std::string_view RunStatusName(RunStatus status);
std::string_view CandidateStatusName(CandidateStatus status);
std::string_view BuildStatusName(BuildStatus status);
Result<RunMode> ParseRunMode(std::string_view name);
Result<RunStatus> ParseRunStatus(std::string_view name);
Result<CandidateStatus> ParseCandidateStatus(std::string_view name);
Result<BuildStatus> ParseBuildStatus(std::string_view name);

// Timestamps are seconds since the Unix epoch (UTC), with sub-second precision.

struct TaskRecord {
  int64_t id = 0;  // assigned by the store
  std::string directory;
  std::string module_sha256;
  std::string yaml;  // task.yaml text as it was when the run started
  double created_at = 0;
};

struct NewRun {
  int64_t task_id = 0;
  RunMode mode = RunMode::kAuto;
  std::string target;              // "cpu", "tpu-v5e", ...
  std::string config_json = "{}";  // the run's options (budget, target metric, seed, ...)
};

struct RunRecord {
  int64_t id = 0;
  int64_t task_id = 0;
  std::string task_directory;
  RunMode mode = RunMode::kAuto;
  std::string target;
  std::string config_json;
  RunStatus status = RunStatus::kRunning;
  std::optional<int64_t> best_candidate_id;
  std::optional<double> best_median_s;  // fastest measurement of the best candidate
  int64_t candidate_count = 0;
  int64_t measurement_count = 0;
  double started_at = 0;
  std::optional<double> finished_at;
};

struct NewCandidate {
  int64_t run_id = 0;
  int64_t seq = 0;  // position in the run (0, 1, 2, ...): the candidate's idempotency key
  std::string schedule_json;
  std::string implementation_sha256;  // may be empty until the implementer ran
};

struct CandidateRecord {
  int64_t id = 0;
  int64_t run_id = 0;
  int64_t seq = 0;
  std::string schedule_json;
  std::string implementation_sha256;
  CandidateStatus status = CandidateStatus::kProposed;
  double created_at = 0;
};

struct NewBuild {
  int64_t candidate_id = 0;
  BuildStatus status = BuildStatus::kOk;
  double compile_seconds = 0;
  std::map<std::string, std::string> artifacts;  // role ("source", "library", "log") -> sha256
  std::string diagnosis;                         // one line; the full one is in diagnoses
};

struct BuildRecord {
  int64_t id = 0;
  int64_t candidate_id = 0;
  BuildStatus status = BuildStatus::kOk;
  double compile_seconds = 0;
  std::map<std::string, std::string> artifacts;
  std::string diagnosis;
  double created_at = 0;
};

// The caller-chosen identity of a measurement: the same key is stored at most once.
struct MeasurementKey {
  int64_t candidate_id = 0;
  int64_t seq = 0;
  friend bool operator==(const MeasurementKey&, const MeasurementKey&) = default;
  friend auto operator<=>(const MeasurementKey&, const MeasurementKey&) = default;
};

struct NewMeasurement {
  int64_t run_id = 0;
  MeasurementKey key;
  double median_s = 0, p10_s = 0, p90_s = 0;  // 0 <= p10 <= median <= p90
  int64_t iterations = 1;                     // timed repetitions behind the statistics
  std::string environment_json;  // cpu model, compiler, flags, threads, versions (a JSON object)
};

struct MeasurementRecord {
  int64_t id = 0;
  int64_t run_id = 0;
  MeasurementKey key;
  double median_s = 0, p10_s = 0, p90_s = 0;
  int64_t iterations = 0;
  std::string environment_json;
  double created_at = 0;
};

struct AddMeasurementResult {
  int64_t id = 0;         // the stored row (the earlier one when the key existed)
  bool inserted = false;  // false: the key was already stored; nothing changed
};

struct NewDiagnosis {
  int64_t candidate_id = 0;
  std::optional<int64_t> build_id;
  std::string diagnosis_class;  // syntax, type, undefined_symbol, resource, crash, timeout, ...
  std::string message;
  std::string artifact_sha256;  // the debugger's JSON artifact (may be empty)
};

struct DiagnosisRecord {
  int64_t id = 0;
  int64_t candidate_id = 0;
  std::optional<int64_t> build_id;
  std::string diagnosis_class;
  std::string message;
  std::string artifact_sha256;
  double created_at = 0;
};

struct EventRecord {
  int64_t id = 0;
  std::optional<int64_t> run_id;
  double ts = 0;
  std::string kind;          // "run.started", "candidate.built", "user.approved", ...
  std::string payload_json;  // a JSON object
  // One JSON log line: {"id":..,"ts":..,"run":..,"kind":..,"payload":{...}}.
  std::string ToJsonLine() const;
};

// One run of the machine probe (target/machine_probe.h): this CPU's measured peak rates, keyed
// by CPU model and core count (the same model with fewer cores, e.g. a smaller VM, measures
// differently). Probes are appended, never replaced: the newest one for a key is the current.
struct MachineProbeRecord {
  int64_t id = 0;  // assigned by the store
  std::string cpu_model;
  int64_t cores = 0;
  double peak_flops_f32 = 0;               // FLOP/s, > 0
  std::optional<double> peak_flops_bf16;   // absent: the CPU has no bf16 dot-product instruction
  double bandwidth_bytes_per_s = 0;        // streaming, > 0
  std::string details_json = "{}";         // the full probe result (a JSON object)
  double measured_at = 0;                  // set by the store
};

// A reference implementation's time for one module on one CPU (XLA:CPU through the bridge):
// what "vs XLA" divides by when no interleaved comparison ran. Keyed by the module's sha256, the
// CPU model and the engine; the engine's version (jax) is recorded with it. Appended: the newest
// for a key is the current one. Baselines live here, never in a task's task.yaml.
struct BaselineRecord {
  int64_t id = 0;  // assigned by the store
  std::string module_sha256;
  std::string cpu_model;
  std::string engine = "xla-cpu";
  std::string engine_version;  // "jax 0.4.38"
  double median_s = 0, p10_s = 0, p90_s = 0;  // median > 0
  int64_t runs = 0;
  std::string details_json = "{}";  // what the engine reported (a JSON object)
  double measured_at = 0;           // set by the store
};

// A lease: `holder` owns `resource` ("run:5"; later "job:17" for remote workers) until
// `expires_at`, which every heartbeat pushes forward. Another holder may take the resource over
// only after that time (the old holder stopped heartbeating: it died or hangs).
struct LeaseRecord {
  std::string resource;
  std::string holder;  // who: "host:pid:nonce" (lease.h's LeaseHolderId)
  double acquired_at = 0;
  double heartbeat_at = 0;
  double expires_at = 0;
};

class Store {
 public:
  virtual ~Store() = default;

  // The schema version of the open database.
  virtual Result<int> SchemaVersion() = 0;
  // The backend's own consistency check (SQLite: PRAGMA integrity_check + foreign_key_check).
  virtual Status CheckIntegrity() = 0;

  // Returns the existing id when the same (directory, module, yaml) was stored before.
  virtual Result<int64_t> UpsertTask(const TaskRecord& task) = 0;
  virtual Result<TaskRecord> GetTask(int64_t task_id) = 0;

  virtual Result<int64_t> CreateRun(const NewRun& run) = 0;
  // Marks a run finished (status must not be kRunning) and records its finish time.
  virtual Status FinishRun(int64_t run_id, RunStatus status) = 0;
  // Marks a run running again (after SIGINT or a crash) so that its process may continue it.
  virtual Status ResumeRun(int64_t run_id) = 0;
  // Makes `candidate_id` (a kCorrect candidate of this run) the run's best.
  virtual Status SetRunBest(int64_t run_id, int64_t candidate_id) = 0;
  virtual Result<RunRecord> GetRun(int64_t run_id) = 0;
  // Newest first; limit <= 0 means all.
  virtual Result<std::vector<RunRecord>> ListRuns(int64_t limit) = 0;
  // Runs still marked running, oldest first (the order to resume them in).
  virtual Result<std::vector<RunRecord>> IncompleteRuns() = 0;

  // Idempotent on (run_id, seq): re-adding the same schedule returns the existing id; a
  // different schedule under an existing key is an error (the run forked its history).
  virtual Result<int64_t> AddCandidate(const NewCandidate& candidate) = 0;
  virtual Status SetCandidateStatus(int64_t candidate_id, CandidateStatus status) = 0;
  virtual Status SetCandidateImplementation(int64_t candidate_id, std::string_view sha256) = 0;
  virtual Result<CandidateRecord> GetCandidate(int64_t candidate_id) = 0;
  virtual Result<std::vector<CandidateRecord>> ListCandidates(int64_t run_id) = 0;

  virtual Result<int64_t> AddBuild(const NewBuild& build) = 0;
  virtual Result<std::vector<BuildRecord>> ListBuilds(int64_t candidate_id) = 0;

  // Idempotent on (run_id, candidate_id, seq): the first stored values win.
  virtual Result<AddMeasurementResult> AddMeasurement(const NewMeasurement& measurement) = 0;
  virtual Result<std::vector<MeasurementRecord>> ListMeasurements(int64_t run_id) = 0;
  // Keys of the measurements stored for `run_id`, sorted.
  virtual Result<std::vector<MeasurementKey>> FinishedMeasurementKeys(int64_t run_id) = 0;

  virtual Result<int64_t> AddDiagnosis(const NewDiagnosis& diagnosis) = 0;
  virtual Result<std::vector<DiagnosisRecord>> ListDiagnoses(int64_t run_id) = 0;

  // Appends to the event log (run_id may be empty for events outside a run).
  virtual Result<int64_t> AddEvent(std::optional<int64_t> run_id, std::string_view kind,
                                   std::string_view payload_json) = 0;
  // Oldest first. run_id empty: all events. limit <= 0: all.
  virtual Result<std::vector<EventRecord>> ListEvents(std::optional<int64_t> run_id,
                                                      int64_t limit) = 0;

  // Events with id > after_id, oldest first, at most `limit` (> 0): what a live stream sends
  // next. Not pure, as for leases.
  virtual Result<std::vector<EventRecord>> EventsAfter(int64_t after_id, int64_t limit) {
    (void)after_id, (void)limit;
    return Unimplemented("this store cannot stream events");
  }

  // Leases (schema version 4). Not pure, like machine probes: a backend without them says
  // Unimplemented.
  // Takes `resource` for `holder` for `ttl_s` seconds: granted when no lease exists, when it
  // has expired (a takeover), when `holder` already holds it (a renewal), or when it is held by
  // `dead_holder` (non-empty: a holder the caller knows is gone, e.g. a dead pid on this host).
  // Held by another holder and not expired: ErrorCode::kInvalidArgument naming the holder.
  virtual Result<LeaseRecord> AcquireLease(std::string_view resource, std::string_view holder,
                                           double ttl_s, std::string_view dead_holder = {}) {
    (void)resource, (void)holder, (void)ttl_s, (void)dead_holder;
    return Unimplemented("this store does not keep leases");
  }
  // Extends `holder`'s lease by `ttl_s` from now. An error (kNotFound) when `holder` no longer
  // holds it: it expired and another took it over, or it was released.
  virtual Result<LeaseRecord> RenewLease(std::string_view resource, std::string_view holder,
                                         double ttl_s) {
    (void)resource, (void)holder, (void)ttl_s;
    return Unimplemented("this store does not keep leases");
  }
  // Gives the lease up (a no-op when `holder` does not hold it).
  virtual Status ReleaseLease(std::string_view resource, std::string_view holder) {
    (void)resource, (void)holder;
    return Unimplemented("this store does not keep leases");
  }
  // The lease on `resource`, expired or not; nullopt when there is none.
  virtual Result<std::optional<LeaseRecord>> GetLease(std::string_view resource) {
    (void)resource;
    return Unimplemented("this store does not keep leases");
  }

  // Machine probes (schema version 3). Not pure so that a backend without them still compiles;
  // such a backend says Unimplemented and callers fall back to nominal peaks.
  virtual Result<int64_t> AddMachineProbe(const MachineProbeRecord& probe) {
    (void)probe;
    return Unimplemented("this store does not keep machine probes");
  }
  // The newest probe stored for (cpu_model, cores); nullopt when there is none.
  virtual Result<std::optional<MachineProbeRecord>> LatestMachineProbe(std::string_view cpu_model,
                                                                       int64_t cores) {
    (void)cpu_model, (void)cores;
    return Unimplemented("this store does not keep machine probes");
  }

  // Baselines (BaselineRecord). Not pure, as for the probes.
  virtual Result<int64_t> AddBaseline(const BaselineRecord& baseline) {
    (void)baseline;
    return Unimplemented("this store does not keep baselines");
  }
  // The newest baseline for (module, cpu, engine); nullopt when there is none.
  virtual Result<std::optional<BaselineRecord>> LatestBaseline(std::string_view module_sha256,
                                                               std::string_view cpu_model,
                                                               std::string_view engine) {
    (void)module_sha256, (void)cpu_model, (void)engine;
    return Unimplemented("this store does not keep baselines");
  }

  // Users, tokens, browser sessions and the audit log (schema version 6), for the server.
  // nullptr: this backend has none.
  virtual AccessStore* Access() { return nullptr; }
};

// Opens the store named by `location`: a file path or "sqlite:PATH" (created and migrated when
// needed). "postgres://..." is reserved for the server backend and not implemented yet.
Result<std::unique_ptr<Store>> OpenStore(const std::string& location);

}  // namespace mk::store
