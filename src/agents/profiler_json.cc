// JSON forms of the profiler's request, profile and comparison (and of a Target, which a request
// carries). Readers validate types and report a bad document as InvalidArgument, never throw.
// Inputs travel as {"shape": {...}, "base64": "..."} of their raw little-endian bytes, so a
// request replays bit-identically in another process.
#include <cmath>
#include <cstring>

#include "agents/profiler.h"
#include "agents/tester.h"

namespace mk::agents {

namespace {

using nlohmann::json;

constexpr char kBase64Alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string Base64Encode(const uint8_t* data, size_t size) {
  std::string out;
  out.reserve((size + 2) / 3 * 4);
  for (size_t i = 0; i < size; i += 3) {
    uint32_t chunk = uint32_t{data[i]} << 16;
    if (i + 1 < size) chunk |= uint32_t{data[i + 1]} << 8;
    if (i + 2 < size) chunk |= data[i + 2];
    out += kBase64Alphabet[(chunk >> 18) & 63];
    out += kBase64Alphabet[(chunk >> 12) & 63];
    out += i + 1 < size ? kBase64Alphabet[(chunk >> 6) & 63] : '=';
    out += i + 2 < size ? kBase64Alphabet[chunk & 63] : '=';
  }
  return out;
}

Result<std::vector<uint8_t>> Base64Decode(const std::string& text) {
  if (text.size() % 4 != 0) return InvalidArgument("base64 length is not a multiple of 4");
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::vector<uint8_t> out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    int pad = (text[i + 3] == '=') + (text[i + 2] == '=');
    if (pad > 0 && i + 4 != text.size()) return InvalidArgument("base64 padding before the end");
    if (pad == 1 && text[i + 2] == '=') return InvalidArgument("bad base64 padding");
    uint32_t chunk = 0;
    for (int k = 0; k < 4; ++k) {
      int v = (k >= 4 - pad) ? 0 : value(text[i + static_cast<size_t>(k)]);
      if (v < 0) return InvalidArgument("bad base64 character");
      chunk = (chunk << 6) | static_cast<uint32_t>(v);
    }
    out.push_back(static_cast<uint8_t>(chunk >> 16));
    if (pad < 2) out.push_back(static_cast<uint8_t>(chunk >> 8));
    if (pad < 1) out.push_back(static_cast<uint8_t>(chunk));
  }
  return out;
}

// nlohmann's typed accessors throw on a type mismatch; this turns that into an error value.
template <typename T>
Result<T> Get(const json& j, const char* key, T fallback) {
  if (!j.is_object()) return InvalidArgument(std::string("expected an object holding '") + key + "'");
  if (!j.contains(key) || j[key].is_null()) return fallback;
  try {
    return j[key].get<T>();
  } catch (const json::exception&) {
    return InvalidArgument(std::string("'") + key + "' has the wrong type");
  }
}

Result<hlo::Literal> LiteralFromJson(const json& j) {
  if (!j.is_object() || !j.contains("shape") || !j["shape"].is_object()) {
    return InvalidArgument("an input is {\"shape\": {...}, \"base64\": \"...\"}");
  }
  const json& s = j["shape"];
  MK_ASSIGN_OR_RETURN(std::string dtype_name, Get<std::string>(s, "dtype", ""));
  std::optional<hlo::DType> dtype = hlo::ParseDType(dtype_name);
  if (!dtype) return InvalidArgument("unknown element type '" + dtype_name + "'");
  MK_ASSIGN_OR_RETURN(std::vector<int64_t> dims, Get<std::vector<int64_t>>(s, "dims", {}));
  int64_t elements = 1;
  for (int64_t d : dims) {
    // Refuse sizes that would overflow or allocate absurdly before decoding anything.
    if (d < 0 || (d > 0 && elements > (int64_t{1} << 40) / d)) {
      return InvalidArgument("input dimensions are negative or too large");
    }
    elements *= d;
  }
  MK_ASSIGN_OR_RETURN(std::string data, Get<std::string>(j, "base64", ""));
  MK_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, Base64Decode(data));
  hlo::Literal lit(hlo::Shape(*dtype, std::move(dims)));
  if (bytes.size() != lit.raw_size()) {
    return InvalidArgument("input data has " + std::to_string(bytes.size()) +
                           " bytes, its shape needs " + std::to_string(lit.raw_size()));
  }
  if (!bytes.empty()) std::memcpy(lit.raw(), bytes.data(), bytes.size());
  return lit;
}

json TimingToJson(const TimingStats& t) {
  return {{"median_s", t.median_s}, {"p10_s", t.p10_s}, {"p90_s", t.p90_s}, {"mean_s", t.mean_s},
          {"min_s", t.min_s},       {"max_s", t.max_s}, {"iterations", t.iterations}};
}

}  // namespace

json TargetToJson(const target::Target& t) {
  return {{"name", t.name},
          {"model", t.model},
          {"isa", t.isa},
          {"cores", t.cores},
          {"vector_bytes", t.vector_bytes},
          {"l1_bytes", t.l1_bytes},
          {"l2_bytes", t.l2_bytes},
          {"l3_bytes", t.l3_bytes},
          {"peak_flops_f32", t.peak_flops_f32},
          {"peak_flops_bf16", t.peak_flops_bf16},
          {"bandwidth_bytes_per_s", t.bandwidth_bytes_per_s},
          {"rates_measured", t.rates_measured},
          {"compile_flags", t.compile_flags}};
}

Result<target::Target> TargetFromJson(const json& j) {
  if (!j.is_object()) return InvalidArgument("a target is a JSON object");
  target::Target t;
  MK_ASSIGN_OR_RETURN(t.name, Get<std::string>(j, "name", "cpu"));
  if (t.name != "cpu") return Unimplemented("profiling target '" + t.name + "' (available: cpu)");
  MK_ASSIGN_OR_RETURN(t.model, Get<std::string>(j, "model", ""));
  MK_ASSIGN_OR_RETURN(t.isa, Get<std::vector<std::string>>(j, "isa", {}));
  MK_ASSIGN_OR_RETURN(t.cores, Get<int>(j, "cores", 1));
  MK_ASSIGN_OR_RETURN(t.vector_bytes, Get<int>(j, "vector_bytes", 32));
  MK_ASSIGN_OR_RETURN(t.l1_bytes, Get<int64_t>(j, "l1_bytes", t.l1_bytes));
  MK_ASSIGN_OR_RETURN(t.l2_bytes, Get<int64_t>(j, "l2_bytes", t.l2_bytes));
  MK_ASSIGN_OR_RETURN(t.l3_bytes, Get<int64_t>(j, "l3_bytes", t.l3_bytes));
  MK_ASSIGN_OR_RETURN(t.peak_flops_f32, Get<double>(j, "peak_flops_f32", 0.0));
  MK_ASSIGN_OR_RETURN(t.peak_flops_bf16, Get<double>(j, "peak_flops_bf16", 0.0));
  MK_ASSIGN_OR_RETURN(t.bandwidth_bytes_per_s, Get<double>(j, "bandwidth_bytes_per_s", 0.0));
  MK_ASSIGN_OR_RETURN(t.rates_measured, Get<bool>(j, "rates_measured", false));
  MK_ASSIGN_OR_RETURN(t.compile_flags, Get<std::vector<std::string>>(j, "compile_flags", {}));
  if (t.cores < 1) return InvalidArgument("target cores must be >= 1");
  return t;
}

json ToJson(const TimingProtocol& p) {
  return {{"warmup", p.warmup},
          {"min_iterations", p.min_iterations},
          {"min_seconds", p.min_seconds},
          {"max_iterations", p.max_iterations},
          {"timeout_s", p.timeout_s}};
}

Result<TimingProtocol> TimingProtocolFromJson(const json& j) {
  if (!j.is_object()) return InvalidArgument("a timing protocol is a JSON object");
  TimingProtocol p;
  MK_ASSIGN_OR_RETURN(p.warmup, Get<int>(j, "warmup", p.warmup));
  MK_ASSIGN_OR_RETURN(p.min_iterations, Get<int>(j, "min_iterations", p.min_iterations));
  MK_ASSIGN_OR_RETURN(p.min_seconds, Get<double>(j, "min_seconds", p.min_seconds));
  MK_ASSIGN_OR_RETURN(p.max_iterations, Get<int>(j, "max_iterations", p.max_iterations));
  MK_ASSIGN_OR_RETURN(p.timeout_s, Get<double>(j, "timeout_s", p.timeout_s));
  return p;
}

json ToJson(const ProfileRequest& r) {
  json inputs = json::array();
  for (const hlo::Literal& lit : r.inputs) {
    inputs.push_back({{"shape",
                       {{"dtype", std::string(hlo::DTypeName(lit.shape().dtype()))},
                        {"dims", lit.shape().dims()}}},
                      {"base64", Base64Encode(lit.raw(), lit.raw_size())}});
  }
  return {{"implementation", codegen::ImplementationToJson(r.implementation)},
          {"library",
           {{"key", r.library.key},
            {"so_path", r.library.so_path},
            {"source_path", r.library.source_path}}},
          {"inputs", inputs},
          {"target", TargetToJson(r.target)},
          {"flops", r.flops},
          {"bytes", r.bytes},
          {"compute_dtype", r.compute_dtype},
          {"protocol", ToJson(r.protocol)},
          {"compiler_identity", r.compiler_identity},
          {"compile_flags", r.compile_flags},
          {"maxkernel_version", r.maxkernel_version}};
}

Result<ProfileRequest> ProfileRequestFromJson(const json& j) {
  if (!j.is_object()) return InvalidArgument("a profile request is a JSON object");
  ProfileRequest r;
  if (!j.contains("implementation")) return InvalidArgument("profile request has no implementation");
  MK_ASSIGN_OR_RETURN(r.implementation, codegen::ImplementationFromJson(j["implementation"]));
  if (j.contains("library")) {
    const json& lib = j["library"];
    MK_ASSIGN_OR_RETURN(r.library.key, Get<std::string>(lib, "key", ""));
    MK_ASSIGN_OR_RETURN(r.library.so_path, Get<std::string>(lib, "so_path", ""));
    MK_ASSIGN_OR_RETURN(r.library.source_path, Get<std::string>(lib, "source_path", ""));
  }
  if (j.contains("inputs")) {
    if (!j["inputs"].is_array()) return InvalidArgument("'inputs' must be an array");
    for (const json& in : j["inputs"]) {
      MK_ASSIGN_OR_RETURN(hlo::Literal lit, LiteralFromJson(in));
      r.inputs.push_back(std::move(lit));
    }
  }
  if (j.contains("target")) {
    MK_ASSIGN_OR_RETURN(r.target, TargetFromJson(j["target"]));
  }
  MK_ASSIGN_OR_RETURN(r.flops, Get<int64_t>(j, "flops", 0));
  MK_ASSIGN_OR_RETURN(r.bytes, Get<int64_t>(j, "bytes", 0));
  MK_ASSIGN_OR_RETURN(r.compute_dtype, Get<std::string>(j, "compute_dtype", "f32"));
  if (r.compute_dtype != "f32" && r.compute_dtype != "bf16") {
    return InvalidArgument("compute_dtype must be \"f32\" or \"bf16\"");
  }
  if (j.contains("protocol")) {
    MK_ASSIGN_OR_RETURN(r.protocol, TimingProtocolFromJson(j["protocol"]));
  }
  MK_ASSIGN_OR_RETURN(r.compiler_identity, Get<std::string>(j, "compiler_identity", ""));
  MK_ASSIGN_OR_RETURN(r.compile_flags, Get<std::vector<std::string>>(j, "compile_flags", {}));
  MK_ASSIGN_OR_RETURN(r.maxkernel_version, Get<std::string>(j, "maxkernel_version", ""));
  return r;
}

json ToJson(const Profile& p) {
  const Roofline& r = p.roofline;
  const ProfileEnvironment& e = p.environment;
  return {{"status", p.status},
          {"message", p.message},
          {"timing", TimingToJson(p.timing)},
          {"flops", p.flops},
          {"bytes", p.bytes},
          {"compute_dtype", p.compute_dtype},
          {"gflops", p.gflops},
          {"gbytes_per_s", p.gbytes_per_s},
          {"roofline",
           {{"peak_flops", r.peak_flops},
            {"bandwidth_bytes_per_s", r.bandwidth_bytes_per_s},
            {"compute_s", r.compute_s},
            {"memory_s", r.memory_s},
            {"bound_s", r.bound_s},
            {"fraction", r.fraction},
            {"achieved_flops", r.achieved_flops},
            {"achieved_bytes_per_s", r.achieved_bytes_per_s},
            {"bottleneck", r.bottleneck},
            {"reason", r.reason}}},
          {"bimodal", p.bimodal},
          {"remeasured", p.remeasured},
          {"environment",
           {{"cpu_model", e.cpu_model},
            {"isa_level", e.isa_level},
            {"compiler", e.compiler},
            {"flags", e.flags},
            {"threads", e.threads},
            {"maxkernel_version", e.maxkernel_version},
            {"rates_measured", e.rates_measured},
            {"load", ToJson(e.load)},
            {"omp", e.omp}}}};
}

Result<Profile> ProfileFromJson(const json& j) {
  if (!j.is_object()) return InvalidArgument("a profile is a JSON object");
  Profile p;
  MK_ASSIGN_OR_RETURN(p.status, Get<std::string>(j, "status", "ok"));
  MK_ASSIGN_OR_RETURN(p.message, Get<std::string>(j, "message", ""));
  MK_ASSIGN_OR_RETURN(json timing, Get<json>(j, "timing", json::object()));
  MK_ASSIGN_OR_RETURN(p.timing.median_s, Get<double>(timing, "median_s", 0.0));
  MK_ASSIGN_OR_RETURN(p.timing.p10_s, Get<double>(timing, "p10_s", 0.0));
  MK_ASSIGN_OR_RETURN(p.timing.p90_s, Get<double>(timing, "p90_s", 0.0));
  MK_ASSIGN_OR_RETURN(p.timing.mean_s, Get<double>(timing, "mean_s", 0.0));
  MK_ASSIGN_OR_RETURN(p.timing.min_s, Get<double>(timing, "min_s", 0.0));
  MK_ASSIGN_OR_RETURN(p.timing.max_s, Get<double>(timing, "max_s", 0.0));
  MK_ASSIGN_OR_RETURN(p.timing.iterations, Get<int64_t>(timing, "iterations", 0));
  MK_ASSIGN_OR_RETURN(p.flops, Get<int64_t>(j, "flops", 0));
  MK_ASSIGN_OR_RETURN(p.bytes, Get<int64_t>(j, "bytes", 0));
  MK_ASSIGN_OR_RETURN(p.compute_dtype, Get<std::string>(j, "compute_dtype", "f32"));
  MK_ASSIGN_OR_RETURN(p.gflops, Get<double>(j, "gflops", 0.0));
  MK_ASSIGN_OR_RETURN(p.gbytes_per_s, Get<double>(j, "gbytes_per_s", 0.0));
  MK_ASSIGN_OR_RETURN(json roof, Get<json>(j, "roofline", json::object()));
  Roofline& r = p.roofline;
  MK_ASSIGN_OR_RETURN(r.peak_flops, Get<double>(roof, "peak_flops", 0.0));
  MK_ASSIGN_OR_RETURN(r.bandwidth_bytes_per_s, Get<double>(roof, "bandwidth_bytes_per_s", 0.0));
  MK_ASSIGN_OR_RETURN(r.compute_s, Get<double>(roof, "compute_s", 0.0));
  MK_ASSIGN_OR_RETURN(r.memory_s, Get<double>(roof, "memory_s", 0.0));
  MK_ASSIGN_OR_RETURN(r.bound_s, Get<double>(roof, "bound_s", 0.0));
  MK_ASSIGN_OR_RETURN(r.fraction, Get<double>(roof, "fraction", 0.0));
  MK_ASSIGN_OR_RETURN(r.achieved_flops, Get<double>(roof, "achieved_flops", 0.0));
  MK_ASSIGN_OR_RETURN(r.achieved_bytes_per_s, Get<double>(roof, "achieved_bytes_per_s", 0.0));
  MK_ASSIGN_OR_RETURN(r.bottleneck, Get<std::string>(roof, "bottleneck", ""));
  MK_ASSIGN_OR_RETURN(r.reason, Get<std::string>(roof, "reason", ""));
  MK_ASSIGN_OR_RETURN(json env, Get<json>(j, "environment", json::object()));
  ProfileEnvironment& e = p.environment;
  MK_ASSIGN_OR_RETURN(e.cpu_model, Get<std::string>(env, "cpu_model", ""));
  MK_ASSIGN_OR_RETURN(e.compiler, Get<std::string>(env, "compiler", ""));
  MK_ASSIGN_OR_RETURN(e.flags, Get<std::vector<std::string>>(env, "flags", {}));
  MK_ASSIGN_OR_RETURN(e.threads, Get<int>(env, "threads", 1));
  MK_ASSIGN_OR_RETURN(e.maxkernel_version, Get<std::string>(env, "maxkernel_version", ""));
  MK_ASSIGN_OR_RETURN(e.rates_measured, Get<bool>(env, "rates_measured", false));
  MK_ASSIGN_OR_RETURN(e.isa_level, Get<std::string>(env, "isa_level", ""));
  MK_ASSIGN_OR_RETURN(e.omp, Get<std::vector<std::string>>(env, "omp", {}));
  MK_ASSIGN_OR_RETURN(json load, Get<json>(env, "load", json::object()));
  MK_ASSIGN_OR_RETURN(e.load.load_avg_1m, Get<double>(load, "load_avg_1m", 0.0));
  MK_ASSIGN_OR_RETURN(e.load.busy_cores, Get<double>(load, "busy_cores", 0.0));
  MK_ASSIGN_OR_RETURN(e.load.cores, Get<int>(load, "cores", 1));
  MK_ASSIGN_OR_RETURN(e.load.window_s, Get<double>(load, "window_s", 0.0));
  MK_ASSIGN_OR_RETURN(p.bimodal, Get<bool>(j, "bimodal", false));
  MK_ASSIGN_OR_RETURN(p.remeasured, Get<int>(j, "remeasured", 0));
  return p;
}

json ToJson(const Comparison& c) {
  return {{"a", ToJson(c.a)},
          {"b", ToJson(c.b)},
          {"rounds", c.rounds},
          {"speedup_b_over_a", c.speedup_b_over_a},
          {"round_ratios", c.round_ratios},
          {"verdict", ToJson(c.verdict)},
          {"remeasured_rounds", c.remeasured_rounds},
          {"load_before", ToJson(c.load_before)},
          {"load_after", ToJson(c.load_after)}};
}

}  // namespace mk::agents
