// `maxkernel debug repro ARTIFACT.json` and `maxkernel debug explain ARTIFACT.json`: the
// debugger agent's artifacts (agents/repro.h) from the command line. repro rebuilds and reruns
// the failing implementation and exits 0 when the same class of failure happens again, 1 when
// it does not, 2 when the artifact is unusable; explain prints what the artifact records.
// docs/DEBUGGING.md describes both.
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "agents/debugger.h"
#include "agents/engine.h"
#include "agents/repro.h"
#include "cli/cli_util.h"
#include "cli/commands.h"

namespace mk::cli {
namespace {

struct DebugFileOptions {
  std::string artifact;
  bool json = false;
};

std::string DescribeFailure(const agents::Failure& f) {
  if (f.kind == agents::Failure::Kind::kNone) return "no failure: every seed passed";
  return std::string(agents::FailureKindName(f.kind)) + " failure: " +
         (f.kind == agents::Failure::Kind::kCompile ? agents::FirstErrorText(f.compiler_log)
                                                    : f.message);
}

Result<int> RunDebugRepro(const DebugFileOptions& o) {
  MK_ASSIGN_OR_RETURN(agents::ReproArtifact artifact, agents::ReadReproArtifact(o.artifact));
  agents::CpuEngine engine;
  MK_ASSIGN_OR_RETURN(agents::ReproResult r, agents::RunRepro(artifact, engine));
  const char* expected = agents::FailureClassName(artifact.expected_class);
  std::string got = r.fresh ? agents::FailureClassName(r.fresh->failure_class) : "passed";
  if (o.json) {
    nlohmann::json j = {{"reproduced", r.reproduced},
                        {"expected_class", expected},
                        {"observed_class", got},
                        {"observed", agents::ToJson(r.observed)}};
    if (r.fresh) j["diagnosis"] = agents::ToJson(*r.fresh);
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    if (r.fresh) std::cout << agents::FormatDiagnosis(*r.fresh) << "\n";
    if (r.reproduced) {
      std::cout << "reproduced: " << expected << "\n";
    } else {
      std::cout << "not reproduced: expected " << expected << ", observed " << got << " ("
                << DescribeFailure(r.observed) << ")\n";
    }
  }
  return r.reproduced ? kExitOk : kExitFailed;
}

Result<int> RunDebugExplain(const DebugFileOptions& o) {
  MK_ASSIGN_OR_RETURN(agents::ReproArtifact artifact, agents::ReadReproArtifact(o.artifact));
  if (o.json) {
    nlohmann::json j = {{"expected_class", agents::FailureClassName(artifact.expected_class)},
                        {"failure", agents::ToJson(artifact.request.failure)}};
    if (artifact.diagnosis) j["diagnosis"] = agents::ToJson(*artifact.diagnosis);
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return kExitOk;
  }
  const agents::DebugRequest& req = artifact.request;
  std::cout << "expected failure: " << agents::FailureClassName(artifact.expected_class) << "\n"
            << "observed as:      " << DescribeFailure(req.failure) << "\n"
            << "implementation:   " << (req.implementation.hash.empty() ? "(regenerated)"
                                                                         : req.implementation.hash)
            << ", " << req.seeds.size() << " seed(s)\n";
  if (artifact.diagnosis) {
    std::cout << "\n" << agents::FormatDiagnosis(*artifact.diagnosis);
  } else {
    std::cout << "(the artifact records no diagnosis; `maxkernel debug repro` makes a fresh one)\n";
  }
  return kExitOk;
}

}  // namespace

void RegisterDebugCommands(CLI::App& app, CommandResult& result) {
  CLI::App* debug = app.add_subcommand("debug", "Reproduce and explain the debugger's failure artifacts");
  debug->require_subcommand(1);

  auto r = std::make_shared<DebugFileOptions>();
  CLI::App* repro = debug->add_subcommand(
      "repro", "Rebuild and rerun a failure artifact; exit 0 when the failure reproduces");
  repro->add_option("artifact", r->artifact, "Repro artifact (JSON) written by the debugger")
      ->required();
  repro->add_flag("--json", r->json, "Print the outcome and the fresh diagnosis as JSON");
  repro->callback([r, &result] { RunCommand(result, [&] { return RunDebugRepro(*r); }); });

  auto e = std::make_shared<DebugFileOptions>();
  CLI::App* explain = debug->add_subcommand("explain", "Print a failure artifact's diagnosis");
  explain->add_option("artifact", e->artifact, "Repro artifact (JSON) written by the debugger")
      ->required();
  explain->add_flag("--json", e->json, "Print it as JSON");
  explain->callback([e, &result] { RunCommand(result, [&] { return RunDebugExplain(*e); }); });
}

}  // namespace mk::cli
