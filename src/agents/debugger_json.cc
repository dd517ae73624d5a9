// JSON forms of the debugger's request, failure and diagnosis. Readers check every field's type
// and report a bad document as InvalidArgument; they never throw and never convert a float to
// an integer (that cast is undefined behavior when out of range).
#include <cmath>
#include <limits>

#include "agents/debugger.h"

namespace mk::agents {

namespace {

using nlohmann::json;

Status WrongType(const char* key, const char* what) {
  return InvalidArgument(std::string("'") + key + "' must be " + what);
}

bool Absent(const json& j, const char* key) { return !j.contains(key) || j[key].is_null(); }

Result<std::string> GetString(const json& j, const char* key, std::string fallback = "") {
  if (Absent(j, key)) return fallback;
  if (!j[key].is_string()) return WrongType(key, "a string");
  return j[key].get<std::string>();
}

Result<int64_t> GetInt(const json& j, const char* key, int64_t fallback = 0) {
  if (Absent(j, key)) return fallback;
  const json& v = j[key];
  if (v.is_number_unsigned()) {
    if (v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return WrongType(key, "an integer in range");
    }
    return static_cast<int64_t>(v.get<uint64_t>());
  }
  if (!v.is_number_integer()) return WrongType(key, "an integer");
  return v.get<int64_t>();
}

Result<int> GetSmallInt(const json& j, const char* key, int fallback = 0) {
  MK_ASSIGN_OR_RETURN(int64_t v, GetInt(j, key, fallback));
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max()) {
    return WrongType(key, "a small integer");
  }
  return static_cast<int>(v);
}

Result<uint64_t> GetUInt(const json& j, const char* key, uint64_t fallback = 0) {
  if (Absent(j, key)) return fallback;
  const json& v = j[key];
  if (!v.is_number_unsigned()) return WrongType(key, "a non-negative integer");
  return v.get<uint64_t>();
}

Result<bool> GetBool(const json& j, const char* key, bool fallback = false) {
  if (Absent(j, key)) return fallback;
  if (!j[key].is_boolean()) return WrongType(key, "true or false");
  return j[key].get<bool>();
}

// JSON has no NaN or infinity (a kernel's wrong value may be either): they travel as strings.
json Number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

Result<double> GetNumber(const json& j, const char* key, double fallback = 0) {
  if (Absent(j, key)) return fallback;
  const json& v = j[key];
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s == "nan") return std::nan("");
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
  }
  return WrongType(key, "a number");
}

const runtime::RunStatus kRunStatuses[] = {
    runtime::RunStatus::kOk,         runtime::RunStatus::kCrashed,
    runtime::RunStatus::kTimedOut,   runtime::RunStatus::kOutOfMemory,
    runtime::RunStatus::kLoadFailed, runtime::RunStatus::kInternalError};

Result<runtime::RunStatus> RunStatusFromName(const std::string& name) {
  for (runtime::RunStatus s : kRunStatuses) {
    if (name == runtime::RunStatusName(s)) return s;
  }
  return InvalidArgument("unknown run status '" + name + "'");
}

}  // namespace

json ToJson(const Failure& f) {
  json j = {{"kind", FailureKindName(f.kind)}, {"message", f.message}};
  switch (f.kind) {
    case Failure::Kind::kNone: break;
    case Failure::Kind::kCompile: j["compiler_log"] = f.compiler_log; break;
    case Failure::Kind::kRun:
      j["run_status"] = runtime::RunStatusName(f.run_status);
      j["signal"] = f.signal;
      j["seed"] = f.seed;
      break;
    case Failure::Kind::kMismatch:
      j["seed"] = f.seed;
      j["output_index"] = f.output_index;
      j["first_mismatch"] = f.first_mismatch;
      j["first_got"] = Number(f.first_got);
      j["first_want"] = Number(f.first_want);
      j["max_abs_err"] = Number(f.max_abs_err);
      j["max_rel_err"] = Number(f.max_rel_err);
      j["mismatches"] = f.mismatches;
      break;
  }
  return j;
}

Result<Failure> FailureFromJson(const json& j) {
  if (!j.is_object()) return InvalidArgument("a failure is a JSON object");
  Failure f;
  MK_ASSIGN_OR_RETURN(std::string kind, GetString(j, "kind", "none"));
  bool known = false;
  for (Failure::Kind k : {Failure::Kind::kNone, Failure::Kind::kCompile, Failure::Kind::kRun,
                          Failure::Kind::kMismatch}) {
    if (kind == FailureKindName(k)) {
      f.kind = k;
      known = true;
    }
  }
  if (!known) return InvalidArgument("unknown failure kind '" + kind + "'");
  MK_ASSIGN_OR_RETURN(f.message, GetString(j, "message"));
  MK_ASSIGN_OR_RETURN(f.compiler_log, GetString(j, "compiler_log"));
  MK_ASSIGN_OR_RETURN(std::string status, GetString(j, "run_status", "ok"));
  MK_ASSIGN_OR_RETURN(f.run_status, RunStatusFromName(status));
  MK_ASSIGN_OR_RETURN(f.signal, GetSmallInt(j, "signal"));
  MK_ASSIGN_OR_RETURN(f.seed, GetUInt(j, "seed"));
  MK_ASSIGN_OR_RETURN(f.output_index, GetSmallInt(j, "output_index"));
  if (!Absent(j, "first_mismatch")) {
    if (!j["first_mismatch"].is_array()) return WrongType("first_mismatch", "an array");
    for (const json& d : j["first_mismatch"]) {
      if (!d.is_number_integer()) return WrongType("first_mismatch", "an array of integers");
      f.first_mismatch.push_back(d.get<int64_t>());
    }
  }
  MK_ASSIGN_OR_RETURN(f.first_got, GetNumber(j, "first_got"));
  MK_ASSIGN_OR_RETURN(f.first_want, GetNumber(j, "first_want"));
  MK_ASSIGN_OR_RETURN(f.max_abs_err, GetNumber(j, "max_abs_err"));
  MK_ASSIGN_OR_RETURN(f.max_rel_err, GetNumber(j, "max_rel_err"));
  MK_ASSIGN_OR_RETURN(f.mismatches, GetInt(j, "mismatches"));
  return f;
}

json ToJson(const ScheduleFix& fix) {
  return {{"description", fix.description}, {"kernel", fix.kernel}, {"set", fix.set}};
}

Result<ScheduleFix> ScheduleFixFromJson(const json& j) {
  if (!j.is_object()) return InvalidArgument("a suggested fix is a JSON object");
  ScheduleFix fix;
  MK_ASSIGN_OR_RETURN(fix.description, GetString(j, "description"));
  MK_ASSIGN_OR_RETURN(fix.kernel, GetSmallInt(j, "kernel", -1));
  if (!Absent(j, "set")) {
    if (!j["set"].is_object()) return WrongType("set", "an object of parameter values");
    for (const auto& [name, v] : j["set"].items()) {
      if (!v.is_number_integer()) return WrongType("set", "an object of integer values");
      fix.set[name] = v.get<int64_t>();
    }
  }
  return fix;
}

json ToJson(const Diagnosis& d) {
  json fixes = json::array();
  for (const ScheduleFix& f : d.suggested_fix) fixes.push_back(ToJson(f));
  return {{"class", FailureClassName(d.failure_class)},
          {"summary", d.summary},
          {"evidence", d.evidence},
          {"kernels", d.kernels},
          {"narrowed", d.narrowed},
          {"hlo_snippet", d.hlo_snippet},
          {"minimized_hlo", d.minimized_hlo},
          {"suggested_fix", fixes},
          {"artifact_path", d.artifact_path},
          {"reproduce_cmd", d.reproduce_cmd}};
}

Result<Diagnosis> DiagnosisFromJson(const json& j) {
  if (!j.is_object()) return InvalidArgument("a diagnosis is a JSON object");
  Diagnosis d;
  MK_ASSIGN_OR_RETURN(std::string cls, GetString(j, "class", "unknown"));
  std::optional<FailureClass> parsed = FailureClassFromName(cls);
  if (!parsed) return InvalidArgument("unknown failure class '" + cls + "'");
  d.failure_class = *parsed;
  MK_ASSIGN_OR_RETURN(d.summary, GetString(j, "summary"));
  MK_ASSIGN_OR_RETURN(d.evidence, GetString(j, "evidence"));
  if (!Absent(j, "kernels")) {
    if (!j["kernels"].is_array()) return WrongType("kernels", "an array of kernel ids");
    for (const json& k : j["kernels"]) {
      if (!k.is_number_integer() || k.get<int64_t>() < 0 ||
          k.get<int64_t>() > std::numeric_limits<int>::max()) {
        return WrongType("kernels", "an array of kernel ids");
      }
      d.kernels.push_back(static_cast<int>(k.get<int64_t>()));
    }
  }
  MK_ASSIGN_OR_RETURN(d.narrowed, GetBool(j, "narrowed"));
  MK_ASSIGN_OR_RETURN(d.hlo_snippet, GetString(j, "hlo_snippet"));
  MK_ASSIGN_OR_RETURN(d.minimized_hlo, GetString(j, "minimized_hlo"));
  if (!Absent(j, "suggested_fix")) {
    if (!j["suggested_fix"].is_array()) return WrongType("suggested_fix", "an array");
    for (const json& f : j["suggested_fix"]) {
      MK_ASSIGN_OR_RETURN(ScheduleFix fix, ScheduleFixFromJson(f));
      d.suggested_fix.push_back(std::move(fix));
    }
  }
  MK_ASSIGN_OR_RETURN(d.artifact_path, GetString(j, "artifact_path"));
  MK_ASSIGN_OR_RETURN(d.reproduce_cmd, GetString(j, "reproduce_cmd"));
  return d;
}

json ToJson(const DebugRequest& r) {
  json j = {{"module_text", r.module_text},
            {"candidate", space::ToJson(r.candidate)},
            {"implementation", codegen::ImplementationToJson(r.implementation)},
            {"failure", ToJson(r.failure)},
            {"seeds", r.seeds},
            {"timeout_s", r.timeout_s}};
  if (!r.task_yaml.empty()) j["task_yaml"] = r.task_yaml;
  if (!r.task_dir.empty()) j["task_dir"] = r.task_dir;
  if (r.atol) j["atol"] = *r.atol;
  if (r.rtol) j["rtol"] = *r.rtol;
  return j;
}

Result<DebugRequest> DebugRequestFromJson(const json& j) {
  if (!j.is_object()) return InvalidArgument("a debug request is a JSON object");
  DebugRequest r;
  MK_ASSIGN_OR_RETURN(r.module_text, GetString(j, "module_text"));
  if (r.module_text.empty()) return InvalidArgument("the debug request has no 'module_text'");
  if (!Absent(j, "candidate")) {
    const json& c = j["candidate"];
    if (!c.is_object() || (c.contains("kernels") && !c["kernels"].is_array())) {
      return WrongType("candidate", "{\"kernels\": [schedule, ...]}");
    }
    r.candidate = space::CandidateFromJson(c);
  }
  if (!Absent(j, "implementation")) {
    MK_ASSIGN_OR_RETURN(r.implementation, codegen::ImplementationFromJson(j["implementation"]));
  }
  if (!Absent(j, "failure")) {
    MK_ASSIGN_OR_RETURN(r.failure, FailureFromJson(j["failure"]));
  }
  MK_ASSIGN_OR_RETURN(r.task_yaml, GetString(j, "task_yaml"));
  MK_ASSIGN_OR_RETURN(r.task_dir, GetString(j, "task_dir"));
  if (!Absent(j, "seeds")) {
    if (!j["seeds"].is_array()) return WrongType("seeds", "an array of seeds");
    r.seeds.clear();
    for (const json& s : j["seeds"]) {
      if (!s.is_number_unsigned()) return WrongType("seeds", "an array of non-negative integers");
      r.seeds.push_back(s.get<uint64_t>());
    }
  }
  if (r.seeds.empty()) return InvalidArgument("the debug request needs at least one seed");
  if (!Absent(j, "atol")) {
    MK_ASSIGN_OR_RETURN(double atol, GetNumber(j, "atol"));
    r.atol = atol;
  }
  if (!Absent(j, "rtol")) {
    MK_ASSIGN_OR_RETURN(double rtol, GetNumber(j, "rtol"));
    r.rtol = rtol;
  }
  if ((r.atol && !(*r.atol >= 0)) || (r.rtol && !(*r.rtol >= 0))) {
    return InvalidArgument("tolerances must be non-negative numbers");
  }
  MK_ASSIGN_OR_RETURN(r.timeout_s, GetNumber(j, "timeout_s", 30));
  if (!(r.timeout_s > 0) || r.timeout_s > 86400) {
    return InvalidArgument("'timeout_s' must be a positive number of seconds (at most a day)");
  }
  return r;
}

}  // namespace mk::agents
