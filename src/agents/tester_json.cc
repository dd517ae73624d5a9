// JSON forms of the tester's request and report (a request may carry an Implementation, whose
// form is codegen's). Readers validate types and report a bad document as InvalidArgument, never throw.
#include <cmath>

#include "agents/tester.h"

namespace mk::agents {

namespace {

using nlohmann::json;

json ShapeToJson(const hlo::Shape& s) {
  return {{"dtype", std::string(hlo::DTypeName(s.dtype()))}, {"dims", s.dims()}};
}

Result<hlo::Shape> ShapeFromJson(const json& j) {
  if (!j.is_object() || !j.contains("dtype") || !j["dtype"].is_string() || !j.contains("dims") ||
      !j["dims"].is_array()) {
    return InvalidArgument("a shape is {\"dtype\": NAME, \"dims\": [..]}");
  }
  std::optional<hlo::DType> t = hlo::ParseDType(j["dtype"].get<std::string>());
  if (!t) return InvalidArgument("unknown element type '" + j["dtype"].get<std::string>() + "'");
  std::vector<int64_t> dims;
  for (const json& d : j["dims"]) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0) {
      return InvalidArgument("shape dimensions must be non-negative integers");
    }
    dims.push_back(d.get<int64_t>());
  }
  return hlo::Shape(*t, std::move(dims));
}

// JSON has no infinity or NaN; they are written as strings so a report round-trips exactly.
json Number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

Result<double> NumberFrom(const json& j, const char* key, double fallback) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  const json& v = j[key];
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    if (s == "nan") return std::nan("");
    if (s == "inf") return INFINITY;
    if (s == "-inf") return -INFINITY;
  }
  return InvalidArgument(std::string("'") + key + "' must be a number");
}

template <typename T>
Result<T> Get(const json& j, const char* key, T fallback) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  try {
    return j[key].get<T>();
  } catch (const json::exception&) {
    return InvalidArgument(std::string("'") + key + "' has the wrong type");
  }
}

}  // namespace

json ToJson(const TestRequest& r) {
  json j = {{"num_seeds", r.num_seeds}, {"seeds", r.seeds}, {"timeout_s", r.timeout_s}};
  if (!r.task_dir.empty()) j["task_dir"] = r.task_dir;
  if (!r.module_path.empty()) j["module_path"] = r.module_path;
  if (r.atol) j["atol"] = *r.atol;
  if (r.rtol) j["rtol"] = *r.rtol;
  if (r.implementation) j["implementation"] = codegen::ImplementationToJson(*r.implementation);
  return j;
}

Result<TestRequest> TestRequestFromJson(const json& j) {
  if (!j.is_object()) return InvalidArgument("a test request is a JSON object");
  TestRequest r;
  MK_ASSIGN_OR_RETURN(r.task_dir, Get<std::string>(j, "task_dir", ""));
  MK_ASSIGN_OR_RETURN(r.module_path, Get<std::string>(j, "module_path", ""));
  MK_ASSIGN_OR_RETURN(r.num_seeds, Get<int>(j, "num_seeds", 3));
  MK_ASSIGN_OR_RETURN(r.seeds, Get<std::vector<uint64_t>>(j, "seeds", {}));
  MK_ASSIGN_OR_RETURN(r.timeout_s, NumberFrom(j, "timeout_s", 60));
  if (j.contains("atol")) {
    MK_ASSIGN_OR_RETURN(double a, NumberFrom(j, "atol", 0));
    r.atol = a;
  }
  if (j.contains("rtol")) {
    MK_ASSIGN_OR_RETURN(double a, NumberFrom(j, "rtol", 0));
    r.rtol = a;
  }
  if (j.contains("implementation")) {
    MK_ASSIGN_OR_RETURN(codegen::Implementation impl,
                        codegen::ImplementationFromJson(j["implementation"]));
    r.implementation = std::move(impl);
  }
  return r;
}

json ToJson(const TestReport& report) {
  json j = {{"status", report.status},
            {"passed", report.passed()},
            {"message", report.message},
            {"task_id", report.task_id},
            {"module", report.module_name},
            {"target", report.target},
            {"implementation_hash", report.implementation_hash},
            {"source_path", report.source_path}};
  j["seeds"] = json::array();
  for (const SeedResult& sr : report.seeds) {
    json s = {{"seed", sr.seed},
              {"status", sr.status},
              {"passed", sr.passed()},
              {"message", sr.message},
              {"run_seconds", sr.run_seconds}};
    s["outputs"] = json::array();
    for (const OutputCheck& c : sr.outputs) {
      json o = {{"index", c.index},
                {"shape", ShapeToJson(c.shape)},
                {"status", c.status},
                {"passed", c.passed()},
                {"atol", Number(c.atol)},
                {"rtol", Number(c.rtol)},
                {"max_abs_err", Number(c.max_abs_err)},
                {"max_rel_err", Number(c.max_rel_err)},
                {"mismatches", c.mismatches},
                {"nan_got", c.nan_got},
                {"nan_want", c.nan_want},
                {"message", c.message}};
      if (c.first_mismatch) {
        o["first_mismatch"] = {{"index", *c.first_mismatch},
                               {"got", Number(c.first_got)},
                               {"want", Number(c.first_want)}};
      } else {
        o["first_mismatch"] = nullptr;
      }
      s["outputs"].push_back(std::move(o));
    }
    j["seeds"].push_back(std::move(s));
  }
  return j;
}

Result<TestReport> TestReportFromJson(const json& j) {
  if (!j.is_object()) return InvalidArgument("a test report is a JSON object");
  TestReport r;
  MK_ASSIGN_OR_RETURN(r.status, Get<std::string>(j, "status", "failed"));
  MK_ASSIGN_OR_RETURN(r.message, Get<std::string>(j, "message", ""));
  MK_ASSIGN_OR_RETURN(r.task_id, Get<std::string>(j, "task_id", ""));
  MK_ASSIGN_OR_RETURN(r.module_name, Get<std::string>(j, "module", ""));
  MK_ASSIGN_OR_RETURN(r.target, Get<std::string>(j, "target", "cpu"));
  MK_ASSIGN_OR_RETURN(r.implementation_hash, Get<std::string>(j, "implementation_hash", ""));
  MK_ASSIGN_OR_RETURN(r.source_path, Get<std::string>(j, "source_path", ""));
  if (j.contains("seeds")) {
    if (!j["seeds"].is_array()) return InvalidArgument("'seeds' must be an array");
    for (const json& s : j["seeds"]) {
      if (!s.is_object()) return InvalidArgument("a seed result is a JSON object");
      SeedResult sr;
      MK_ASSIGN_OR_RETURN(sr.seed, Get<uint64_t>(s, "seed", 0));
      MK_ASSIGN_OR_RETURN(sr.status, Get<std::string>(s, "status", "passed"));
      MK_ASSIGN_OR_RETURN(sr.message, Get<std::string>(s, "message", ""));
      MK_ASSIGN_OR_RETURN(sr.run_seconds, NumberFrom(s, "run_seconds", 0));
      if (s.contains("outputs")) {
        if (!s["outputs"].is_array()) return InvalidArgument("'outputs' must be an array");
        for (const json& o : s["outputs"]) {
          if (!o.is_object() || !o.contains("shape")) {
            return InvalidArgument("an output check needs a shape");
          }
          OutputCheck c;
          MK_ASSIGN_OR_RETURN(c.index, Get<int>(o, "index", 0));
          MK_ASSIGN_OR_RETURN(c.shape, ShapeFromJson(o["shape"]));
          MK_ASSIGN_OR_RETURN(c.status, Get<std::string>(o, "status", "pass"));
          MK_ASSIGN_OR_RETURN(c.atol, NumberFrom(o, "atol", 0));
          MK_ASSIGN_OR_RETURN(c.rtol, NumberFrom(o, "rtol", 0));
          MK_ASSIGN_OR_RETURN(c.max_abs_err, NumberFrom(o, "max_abs_err", 0));
          MK_ASSIGN_OR_RETURN(c.max_rel_err, NumberFrom(o, "max_rel_err", 0));
          MK_ASSIGN_OR_RETURN(c.mismatches, Get<int64_t>(o, "mismatches", 0));
          MK_ASSIGN_OR_RETURN(c.nan_got, Get<int64_t>(o, "nan_got", 0));
          MK_ASSIGN_OR_RETURN(c.nan_want, Get<int64_t>(o, "nan_want", 0));
          MK_ASSIGN_OR_RETURN(c.message, Get<std::string>(o, "message", ""));
          if (o.contains("first_mismatch") && o["first_mismatch"].is_object()) {
            const json& f = o["first_mismatch"];
            MK_ASSIGN_OR_RETURN(std::vector<int64_t> idx,
                                Get<std::vector<int64_t>>(f, "index", {}));
            c.first_mismatch = std::move(idx);
            MK_ASSIGN_OR_RETURN(c.first_got, NumberFrom(f, "got", 0));
            MK_ASSIGN_OR_RETURN(c.first_want, NumberFrom(f, "want", 0));
          }
          sr.outputs.push_back(std::move(c));
        }
      }
      r.seeds.push_back(std::move(sr));
    }
  }
  return r;
}

}  // namespace mk::agents
