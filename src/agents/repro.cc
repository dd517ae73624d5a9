#include "agents/repro.h"

#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "codegen/cpu/cpu_emitter.h"
#include "hlo/parser.h"
#include "hlo/verifier.h"
#include "support/regular_file.h"

namespace mk::agents {

namespace fs = std::filesystem;
using nlohmann::json;

json ToJson(const ReproArtifact& a) {
  json j = {{"format", kReproFormat},
            {"version", kReproVersion},
            {"expected_class", FailureClassName(a.expected_class)},
            {"request", ToJson(a.request)}};
  if (a.diagnosis) j["diagnosis"] = ToJson(*a.diagnosis);
  return j;
}

Result<ReproArtifact> ReproArtifactFromJson(const json& j) {
  if (!j.is_object() || !j.contains("format") || j["format"] != kReproFormat) {
    return InvalidArgument(std::string("not a repro artifact (\"format\" must be \"") +
                           kReproFormat + "\")");
  }
  if (!j.contains("version") || !j["version"].is_number_integer() ||
      j["version"].get<int64_t>() != kReproVersion) {
    return InvalidArgument("unsupported repro artifact version (this maxkernel reads version " +
                           std::to_string(kReproVersion) + ")");
  }
  ReproArtifact a;
  if (!j.contains("expected_class") || !j["expected_class"].is_string()) {
    return InvalidArgument("the repro artifact has no \"expected_class\"");
  }
  std::optional<FailureClass> cls = FailureClassFromName(j["expected_class"].get<std::string>());
  if (!cls) {
    return InvalidArgument("unknown failure class '" + j["expected_class"].get<std::string>() +
                           "'");
  }
  a.expected_class = *cls;
  if (!j.contains("request")) return InvalidArgument("the repro artifact has no \"request\"");
  Result<DebugRequest> request = DebugRequestFromJson(j["request"]);
  if (!request.ok()) return request.status().WithContext("reading the artifact's request");
  a.request = std::move(*request);
  if (j.contains("diagnosis") && !j["diagnosis"].is_null()) {
    Result<Diagnosis> d = DiagnosisFromJson(j["diagnosis"]);
    if (!d.ok()) return d.status().WithContext("reading the artifact's diagnosis");
    a.diagnosis = std::move(*d);
  }
  return a;
}

Result<ReproArtifact> ReadReproArtifact(const std::string& path) {
  Result<std::string> text = ReadRegularFile(path);
  if (!text.ok()) {
    return Status(ErrorCode::kInvalidArgument,
                  "cannot read the repro artifact: " + text.status().message(), {path, 0, 0});
  }
  json j = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return Status(ErrorCode::kInvalidArgument, "the repro artifact is not valid JSON", {path, 0, 0});
  }
  Result<ReproArtifact> a = ReproArtifactFromJson(j);
  if (!a.ok()) return Status(a.status().code(), a.status().message(), {path, 0, 0});
  return a;
}

Status WriteReproArtifact(const std::string& path, const ReproArtifact& artifact) {
  std::error_code ec;
  fs::path p(path);
  if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
  if (ec) return IoError("cannot create " + p.parent_path().string() + ": " + ec.message());
  fs::path tmp = p;
  tmp += ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    // dump's replace mode: a compiler log with invalid UTF-8 must not make the write throw.
    out << ToJson(artifact).dump(2, ' ', false, json::error_handler_t::replace) << "\n";
    if (!out) {
      fs::remove(tmp, ec);
      return IoError("cannot write " + tmp.string());
    }
  }
  fs::rename(tmp, p, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return IoError("cannot rename " + tmp.string() + " to " + path);
  }
  return Status::Ok();
}

std::string ReproduceCommand(const std::string& binary, const std::string& artifact_path) {
  auto quote = [](const std::string& s) {
    bool plain = !s.empty();
    for (char c : s) {
      if (!(std::isalnum(static_cast<unsigned char>(c)) || std::string_view("/._-+=:,@").find(c) !=
                                                               std::string_view::npos)) {
        plain = false;
      }
    }
    if (plain) return s;
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
  };
  return quote(binary) + " debug repro " + quote(artifact_path);
}

Result<ReproResult> RunRepro(const ReproArtifact& artifact, CpuEngine& engine) {
  const DebugRequest& request = artifact.request;
  codegen::Implementation impl = request.implementation;
  if (impl.sources.empty()) {
    // No sources kept: regenerate them from the candidate, as the implementer did.
    MK_ASSIGN_OR_RETURN(std::unique_ptr<hlo::Module> module,
                        hlo::ParseModule(request.module_text, "<repro module>"));
    MK_RETURN_IF_ERROR(hlo::VerifyModule(*module));
    MK_ASSIGN_OR_RETURN(LoweredModule lowered, engine.Lower(*module));
    space::Candidate candidate =
        request.candidate.kernels.empty() ? lowered.candidate : request.candidate;
    if (candidate.kernels.size() != lowered.plan.kernels.size()) {
      return InvalidArgument("the candidate has " + std::to_string(candidate.kernels.size()) +
                             " schedules, the module's plan " +
                             std::to_string(lowered.plan.kernels.size()) + " kernels");
    }
    codegen::cpu::CpuEmitter emitter;
    MK_ASSIGN_OR_RETURN(impl, emitter.Emit(lowered.plan, candidate, engine.target()));
  }
  ReproResult result;
  MK_ASSIGN_OR_RETURN(result.observed, ObserveFailure(request, impl, engine));
  if (result.observed.kind == Failure::Kind::kNone) return result;
  DebugRequest fresh = request;
  fresh.implementation = impl;
  fresh.failure = result.observed;
  DebugOptions options;  // no new artifact: the one being reproduced stays the reference
  MK_ASSIGN_OR_RETURN(Diagnosis d, Diagnose(fresh, engine, options));
  result.reproduced = d.failure_class == artifact.expected_class;
  result.fresh = std::move(d);
  return result;
}

}  // namespace mk::agents
