// For tests of what reads finished runs (export, `runs`, `artifacts get`): puts into a store a
// run the way `maxkernel optimize` leaves one (docs/EXPORT.md, "what the store must hold"),
// with a kernel really lowered and compiled by the CPU engine. Shared by agents_test and
// cli_test so that both check against one picture of a finished run:
//
//   candidate seq 0: build failed (a failed build + a syntax diagnosis)
//   candidate seq 1: correct, built (source, library, implementation artifacts), measured,
//                    the run's best — or, with `with_best = false`, test_failed (no best)
//   events run.started, candidate.built, run.finished; the run finished succeeded / failed.
#pragma once

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "agents/engine.h"
#include "hlo/parser.h"
#include "hlo/verifier.h"
#include "space/schedule.h"
#include "store/artifact_store.h"
#include "store/store.h"
#include "support/status.h"

namespace mk::agents::testing {

// Small and quick to compile; one parameter name that needs quoting care ("x.1").
inline constexpr const char* kFixtureModule = R"(HloModule fixture_axpy

ENTRY main {
  x.1 = f32[4,8] parameter(0)
  y = f32[8] parameter(1)
  two = f32[] constant(2)
  b2 = f32[4,8] broadcast(two), dimensions={}
  by = f32[4,8] broadcast(y), dimensions={1}
  m = f32[4,8] multiply(x.1, b2)
  ROOT r = f32[4,8] add(m, by)
}
)";

inline constexpr const char* kFixtureYaml = R"(format: 1
id: "fx1"
name: "axpy_fixture"
parameters:
  - {name: "x.1", shape: [4, 8], dtype: f32, init: {kind: normal}}
  - {name: "y", shape: [8], dtype: f32, init: {kind: normal}}
outputs:
  - {shape: [4, 8], dtype: f32}
)";

struct FixtureOptions {
  // A task directory (task.yaml + module.hlo) to take the module and task from; empty: the
  // inline kFixtureModule / kFixtureYaml.
  std::string task_dir;
  bool with_best = true;  // false: the run failed, nothing is correct
};

struct FixtureRun {
  int64_t task_id = 0;
  int64_t run_id = 0;
  int64_t failed_candidate_id = 0;
  int64_t last_candidate_id = 0;  // the best one when with_best
  std::string module_sha256, source_sha256, library_sha256, implementation_sha256;
  std::string implementation_hash;
};

inline Result<std::string> FixtureReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError("cannot read " + path.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline Result<FixtureRun> AddFinishedRun(store::Store& db, store::ArtifactStore& artifacts,
                                         CpuEngine& engine, const FixtureOptions& options = {}) {
  std::string module_text = kFixtureModule, yaml = kFixtureYaml, directory = "fixture";
  if (!options.task_dir.empty()) {
    std::filesystem::path dir = std::filesystem::absolute(options.task_dir);
    MK_ASSIGN_OR_RETURN(module_text, FixtureReadFile(dir / "module.hlo"));
    MK_ASSIGN_OR_RETURN(yaml, FixtureReadFile(dir / "task.yaml"));
    directory = dir.lexically_normal().string();
  }
  MK_ASSIGN_OR_RETURN(auto module, hlo::ParseModule(module_text));
  MK_RETURN_IF_ERROR(hlo::VerifyModule(*module));
  MK_ASSIGN_OR_RETURN(LoweredModule lowered, engine.Lower(*module));
  MK_ASSIGN_OR_RETURN(runtime::CompiledLibrary lib, engine.Build(lowered.impl));
  MK_ASSIGN_OR_RETURN(std::string so_bytes, FixtureReadFile(lib.so_path));

  FixtureRun f;
  f.implementation_hash = lowered.impl.hash;
  MK_ASSIGN_OR_RETURN(f.module_sha256, artifacts.Put(module_text, "text/x-hlo"));
  MK_ASSIGN_OR_RETURN(f.source_sha256,
                      artifacts.Put(lowered.impl.sources.at(0).text, "text/x-c++src"));
  MK_ASSIGN_OR_RETURN(f.library_sha256, artifacts.Put(so_bytes, "application/x-sharedlib"));
  MK_ASSIGN_OR_RETURN(
      f.implementation_sha256,
      artifacts.Put(codegen::ImplementationToJson(lowered.impl).dump(), "application/json"));

  store::TaskRecord task;
  task.directory = directory;
  task.module_sha256 = f.module_sha256;
  task.yaml = yaml;
  MK_ASSIGN_OR_RETURN(f.task_id, db.UpsertTask(task));
  nlohmann::json config = {{"module_artifact", f.module_sha256},
                           {"task_dir", directory},
                           {"max_iterations", 2},
                           {"target", "cpu"}};
  MK_ASSIGN_OR_RETURN(f.run_id,
                      db.CreateRun({f.task_id, store::RunMode::kAuto, "cpu", config.dump()}));
  MK_RETURN_IF_ERROR(db.AddEvent(f.run_id, "run.started", "{}").status());

  // seq 0: the compiler refused it.
  const std::string schedule = space::ToJson(lowered.candidate).dump();
  MK_ASSIGN_OR_RETURN(f.failed_candidate_id,
                      db.AddCandidate({f.run_id, 0, R"({"note":"bad unroll"})", ""}));
  store::NewBuild failed;
  failed.candidate_id = f.failed_candidate_id;
  failed.status = store::BuildStatus::kFailed;
  failed.compile_seconds = 0.5;
  failed.diagnosis = "syntax: expected ';' before 'float'";
  MK_ASSIGN_OR_RETURN(int64_t failed_build, db.AddBuild(failed));
  MK_RETURN_IF_ERROR(db.AddDiagnosis({f.failed_candidate_id, failed_build, "syntax",
                                      "module.cc:12:3: error: expected ';' before 'float'", ""})
                         .status());
  MK_RETURN_IF_ERROR(
      db.SetCandidateStatus(f.failed_candidate_id, store::CandidateStatus::kBuildFailed));

  // seq 1: the real kernel.
  MK_ASSIGN_OR_RETURN(f.last_candidate_id,
                      db.AddCandidate({f.run_id, 1, schedule, lowered.impl.hash}));
  store::NewBuild ok;
  ok.candidate_id = f.last_candidate_id;
  ok.status = store::BuildStatus::kOk;
  ok.compile_seconds = lib.compile_seconds;
  ok.artifacts = {{"source", f.source_sha256},
                  {"library", f.library_sha256},
                  {"implementation", f.implementation_sha256}};
  MK_RETURN_IF_ERROR(db.AddBuild(ok).status());
  MK_RETURN_IF_ERROR(db.AddEvent(f.run_id, "candidate.built",
                                 nlohmann::json{{"candidate", f.last_candidate_id}}.dump())
                         .status());
  if (options.with_best) {
    MK_RETURN_IF_ERROR(
        db.SetCandidateStatus(f.last_candidate_id, store::CandidateStatus::kCorrect));
    store::NewMeasurement m;
    m.run_id = f.run_id;
    m.key = {f.last_candidate_id, 0};
    m.median_s = 2.5e-6;
    m.p10_s = 2.0e-6;
    m.p90_s = 3.0e-6;
    m.iterations = 100;
    m.environment_json = R"({"threads":1})";
    MK_RETURN_IF_ERROR(db.AddMeasurement(m).status());
    MK_RETURN_IF_ERROR(db.SetRunBest(f.run_id, f.last_candidate_id));
  } else {
    MK_RETURN_IF_ERROR(
        db.SetCandidateStatus(f.last_candidate_id, store::CandidateStatus::kTestFailed));
    MK_RETURN_IF_ERROR(db.AddDiagnosis({f.last_candidate_id, std::nullopt, "mismatch",
                                        "output 0: 3/32 elements out of tolerance", ""})
                           .status());
  }
  MK_RETURN_IF_ERROR(db.AddEvent(f.run_id, "run.finished", "{}").status());
  MK_RETURN_IF_ERROR(db.FinishRun(
      f.run_id, options.with_best ? store::RunStatus::kSucceeded : store::RunStatus::kFailed));
  return f;
}

}  // namespace mk::agents::testing
