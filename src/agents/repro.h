// The repro artifact: one JSON file that holds everything needed to observe a failure again —
// the module text, the candidate, the implementation's sources and flags (or, without sources,
// the candidate they are regenerated from), the inputs' seeds and generators, the tolerances,
// and the failure class that is expected. `maxkernel debug repro FILE` re-runs it; the file is
// the unit people attach to a bug report, so it must not depend on the machine's compile cache.
//
//   {"format": "maxkernel-repro", "version": 1, "expected_class": "crash",
//    "request": {DebugRequest JSON}, "diagnosis": {Diagnosis JSON, as written}}
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "agents/debugger.h"
#include "agents/engine.h"
#include "support/status.h"

namespace mk::agents {

inline constexpr const char* kReproFormat = "maxkernel-repro";
inline constexpr int kReproVersion = 1;

struct ReproArtifact {
  DebugRequest request;
  FailureClass expected_class = FailureClass::kUnknown;
  std::optional<Diagnosis> diagnosis;  // the diagnosis when the artifact was written
};

nlohmann::json ToJson(const ReproArtifact& artifact);
Result<ReproArtifact> ReproArtifactFromJson(const nlohmann::json& j);
// Reads and validates a file; a missing file, bad JSON or a wrong format is InvalidArgument.
Result<ReproArtifact> ReadReproArtifact(const std::string& path);
// Writes atomically (temporary file, then rename), creating the directory if needed.
Status WriteReproArtifact(const std::string& path, const ReproArtifact& artifact);

// "maxkernel debug repro '/tmp/x y/repro.json'": the command, with the path shell-quoted.
std::string ReproduceCommand(const std::string& binary, const std::string& artifact_path);

struct ReproResult {
  bool reproduced = false;  // the failure observed again has the expected class
  Failure observed;         // what happened this time (kind none: it passed)
  std::optional<Diagnosis> fresh;  // the diagnosis of `observed` (absent when it passed)
};

// Rebuilds (sources from the artifact, or regenerated from its candidate), reruns on the
// artifact's seeds, and diagnoses what it sees. Errors only for bad artifacts.
Result<ReproResult> RunRepro(const ReproArtifact& artifact, CpuEngine& engine);

}  // namespace mk::agents
