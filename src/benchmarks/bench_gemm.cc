#include "benchmarks/bench_gemm.h"

#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "agents/implementer.h"
#include "agents/planner.h"
#include "agents/tester.h"
#include "hlo/parser.h"
#include "hlo/verifier.h"
#include "support/subprocess.h"
#include "task/inputs.h"

namespace mk::bench {

using agents::BenchSide;
using agents::CpuEngine;
using agents::DescribeOutcome;
using agents::FormatSeconds;
using agents::Implemented;
using agents::KernelRoofline;
using agents::OutputCheck;
using agents::Plan;
using agents::PlanRequest;
using agents::RoundTimes;
using agents::RunImplementer;
using agents::RunInterleaved;
using agents::RunPlanner;
using agents::RunTester;
using agents::SandboxSide;
using agents::SeedResult;
using agents::TaskForModule;
using agents::TestReport;
using agents::TestRequest;
using agents::ValidateProtocol;


namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr double kUnitRoundoff = 1.0 / (1 << 24);  // f32
constexpr int64_t kMaxGemmSize = 16384;

std::vector<std::string> Split(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream s(text);
  std::string part;
  while (std::getline(s, part, ',')) {
    while (!part.empty() && part.front() == ' ') part.erase(part.begin());
    while (!part.empty() && part.back() == ' ') part.pop_back();
    parts.push_back(part);
  }
  return parts;
}

std::string Sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// A temporary directory that removes itself.
struct TempDir {
  fs::path path;
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
};

Result<std::unique_ptr<TempDir>> MakeTempDir() {
  std::string pattern = (fs::temp_directory_path() / "maxkernel-bench-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) return IoError("cannot create a temporary directory");
  auto dir = std::make_unique<TempDir>();
  dir->path = pattern;
  return dir;
}

Status WriteText(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) return IoError("cannot write " + path.string());
  return Status::Ok();
}

// A library's dtype support from `maxkernel-baselines info`: the reason it cannot run `c`, or "".
std::string Unsupported(const json& info, const std::string& lib, const GemmCase& c) {
  if (!info.contains("libs") || !info["libs"].contains(lib))
    return "not in this maxkernel-baselines";
  const json& l = info["libs"][lib];
  auto has = [](const json& list, const std::string& v) {
    if (!list.is_array()) return false;
    for (const json& e : list) {
      if (e.is_string() && e.get<std::string>() == v) return true;
    }
    return false;
  };
  const std::string version = l.value("version", "");
  if (!has(l.value("dtypes", json::array()), c.dtype)) {
    // The library says why where it knows (oneDNN: no bf16 matmul below AVX-512).
    const json details = l.value("details", json::object());
    if (details.is_object() && details.contains(c.dtype) && details[c.dtype].is_string()) {
      return details[c.dtype].get<std::string>();
    }
    return lib + " " + version + " has no " + c.dtype + " GEMM in this build";
  }
  if (c.out_dtype == "bf16" && !has(l.value("bf16_out", json::array()), c.dtype)) {
    return lib + " " + version + " has no " + c.dtype + " GEMM with a bf16 result";
  }
  return "";
}

// The tolerance for comparing ours with the interpreter: both accumulate K products in f32,
// each within 2·K·u·Σ|a·b| of the exact value; with normal(0,1) inputs Σ|a·b| averages 0.64·K
// and stays below K, so two correct results differ by less than 4·K²·u (the 1e-6 floor covers
// tiny K). A bf16 result may round either way: one ulp.
std::pair<double, double> InterpreterTolerance(const GemmCase& c) {
  const double k = static_cast<double>(c.k);
  const double atol = 4.0 * k * k * kUnitRoundoff + 1e-6;
  const double rtol = c.out_dtype == "bf16" ? std::ldexp(1.0, -7) : 0.0;
  return {atol, rtol};
}

Result<std::string> CheckWithTester(const GemmCase& c, const std::string& module_text,
                                    const codegen::Implementation& impl, CpuEngine& engine,
                                    double timeout_s) {
  MK_ASSIGN_OR_RETURN(auto dir, MakeTempDir());
  const fs::path path = dir->path / (GemmCaseName(c) + ".hlo");
  MK_RETURN_IF_ERROR(WriteText(path, module_text));
  TestRequest tr;
  tr.module_path = path.string();
  tr.implementation = impl;
  tr.seeds = {1};
  auto [atol, rtol] = InterpreterTolerance(c);
  tr.atol = atol;
  tr.rtol = rtol;
  tr.timeout_s = timeout_s;
  MK_ASSIGN_OR_RETURN(TestReport report, RunTester(tr, engine));
  if (!report.passed()) {
    std::string why = report.message;
    for (const SeedResult& s : report.seeds) {
      if (!s.passed()) why = s.message.empty() ? s.status : s.message;
      for (const OutputCheck& o : s.outputs) {
        if (!o.passed()) why = o.message;
      }
    }
    return Internal("the tester rejected our kernel: " + why);
  }
  double max_abs = 0;
  for (const SeedResult& s : report.seeds) {
    for (const OutputCheck& o : s.outputs) max_abs = std::max(max_abs, o.max_abs_err);
  }
  return "tester: interpreter oracle, seed 1, NaN-poisoned output, atol " + Sci(atol) +
         (rtol > 0 ? ", rtol " + Sci(rtol) : "") + " (max |error| " + Sci(max_abs) + ")";
}

}  // namespace

std::string GemmDtypeLabel(const GemmCase& c) {
  return c.dtype == "f32" && c.out_dtype == "f32" ? "f32" : c.dtype + "->" + c.out_dtype;
}

std::string GemmCaseName(const GemmCase& c) {
  std::string name = "gemm_" + c.dtype;
  if (c.dtype == "bf16" && c.out_dtype == "bf16") name += "_bf16out";
  if (c.m == c.n && c.n == c.k) return name + "_" + std::to_string(c.m);
  return name + "_" + std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k);
}

std::string GemmModuleText(const GemmCase& c) {
  const std::string m = std::to_string(c.m), n = std::to_string(c.n), k = std::to_string(c.k);
  std::ostringstream s;
  s << "HloModule " << GemmCaseName(c) << "\n\nENTRY main {\n";
  s << "  a = " << c.dtype << "[" << m << "," << k << "]{1,0} parameter(0)\n";
  s << "  b = " << c.dtype << "[" << k << "," << n << "]{1,0} parameter(1)\n";
  const std::string dot = "dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}";
  if (c.out_dtype == "bf16") {
    s << "  d = f32[" << m << "," << n << "]{1,0} " << dot << "\n";
    s << "  ROOT c = bf16[" << m << "," << n << "]{1,0} convert(d)\n";
  } else {
    s << "  ROOT d = f32[" << m << "," << n << "]{1,0} " << dot << "\n";
  }
  s << "}\n";
  return s.str();
}

int64_t GemmFlops(const GemmCase& c) {
  return 2 * c.m * c.n * c.k;
}

Result<std::vector<int64_t>> ParseGemmSizes(const std::string& text) {
  std::vector<int64_t> sizes;
  for (const std::string& part : Split(text)) {
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (part.empty() || used != part.size()) {
      return InvalidArgument("--sizes: '" + part +
                             "' is not a whole number (e.g. --sizes 256,1024)");
    }
    if (v < 1 || v > kMaxGemmSize) {
      return InvalidArgument("--sizes: " + part + " is out of range (1 to " +
                             std::to_string(kMaxGemmSize) + ")");
    }
    sizes.push_back(v);
  }
  if (sizes.empty()) return InvalidArgument("--sizes: give at least one size");
  return sizes;
}

Result<std::vector<std::string>> ParseGemmDtypes(const std::string& text) {
  std::vector<std::string> dtypes;
  for (const std::string& part : Split(text)) {
    if (part != "f32" && part != "bf16") {
      return InvalidArgument("--dtype: '" + part + "' is not one of f32, bf16");
    }
    if (std::find(dtypes.begin(), dtypes.end(), part) != dtypes.end()) {
      return InvalidArgument("--dtype: " + part + " is given twice");
    }
    dtypes.push_back(part);
  }
  if (dtypes.empty()) return InvalidArgument("--dtype: give at least one of f32, bf16");
  return dtypes;
}

Result<std::vector<GemmCase>> ParseGemmShapes(const std::string& text) {
  std::vector<GemmCase> shapes;
  for (const std::string& part : Split(text)) {
    int64_t e[3] = {0, 0, 0};
    size_t at = 0;
    bool ok = !part.empty();
    for (int i = 0; i < 3 && ok; ++i) {
      size_t end = i < 2 ? part.find('x', at) : part.size();
      if (end == std::string::npos || end == at) {
        ok = false;
        break;
      }
      const std::string digits = part.substr(at, end - at);
      ok = digits.find_first_not_of("0123456789") == std::string::npos && digits.size() <= 6;
      if (ok) e[i] = std::stoll(digits);
      at = end + 1;
    }
    if (!ok) {
      return InvalidArgument("--shapes: '" + part + "' is not MxNxK (e.g. --shapes 512x2048x2048)");
    }
    for (int64_t v : e) {
      if (v < 1 || v > kMaxGemmSize) {
        return InvalidArgument("--shapes: " + part + " has an extent out of range (1 to " +
                               std::to_string(kMaxGemmSize) + ")");
      }
    }
    GemmCase c;
    c.m = e[0];
    c.n = e[1];
    c.k = e[2];
    shapes.push_back(c);
  }
  if (shapes.empty()) return InvalidArgument("--shapes: give at least one MxNxK");
  return shapes;
}

namespace {

int64_t ProductOf(const std::vector<int64_t>& dims, const std::vector<int64_t>& which) {
  int64_t p = 1;
  for (int64_t d : which) p *= dims[static_cast<size_t>(d)];
  return p;
}

int64_t ProductOfOthers(const std::vector<int64_t>& dims, const std::vector<int64_t>& except) {
  int64_t p = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (std::find(except.begin(), except.end(), static_cast<int64_t>(d)) == except.end()) {
      p *= dims[d];
    }
  }
  return p;
}

bool SameCase(const GemmCase& a, const GemmCase& b) {
  return a.m == b.m && a.n == b.n && a.k == b.k && a.dtype == b.dtype &&
         a.out_dtype == b.out_dtype;
}

// Appends `c`, or merges its `from` into an equal case already there.
void AddCase(std::vector<GemmCase>& cases, const GemmCase& c) {
  for (GemmCase& have : cases) {
    if (!SameCase(have, c)) continue;
    for (const std::string& id : c.from) {
      if (std::find(have.from.begin(), have.from.end(), id) == have.from.end()) {
        have.from.push_back(id);
      }
    }
    return;
  }
  cases.push_back(c);
}

}  // namespace

std::vector<GemmCase> GemmCasesOfModule(const hlo::Module& module) {
  std::vector<GemmCase> cases;
  const hlo::Computation* entry = module.entry();
  if (entry == nullptr) return cases;
  std::map<const hlo::Instruction*, std::vector<const hlo::Instruction*>> users;
  for (const auto& inst : entry->instructions()) {
    for (const hlo::Instruction* op : inst->operands) users[op].push_back(inst.get());
  }
  for (const auto& inst : entry->instructions()) {
    if (inst->opcode != hlo::Opcode::kDot || !inst->dot_dims) continue;
    const hlo::DotDimensions& d = *inst->dot_dims;
    if (!d.lhs_batch.empty() || !d.rhs_batch.empty()) continue;
    const hlo::DType a = inst->operand(0)->shape.dtype(), b = inst->operand(1)->shape.dtype();
    if (a != b || (a != hlo::DType::kF32 && a != hlo::DType::kBF16)) continue;
    if (inst->shape.dtype() != hlo::DType::kF32) continue;
    const std::vector<int64_t>& lhs = inst->operand(0)->shape.dims();
    const std::vector<int64_t>& rhs = inst->operand(1)->shape.dims();
    GemmCase c;
    c.m = ProductOfOthers(lhs, d.lhs_contracting);
    c.n = ProductOfOthers(rhs, d.rhs_contracting);
    c.k = ProductOf(lhs, d.lhs_contracting);
    c.dtype = std::string(hlo::DTypeName(a));
    const auto& u = users[inst.get()];
    const bool to_bf16 = u.size() == 1 && u[0]->opcode == hlo::Opcode::kConvert &&
                         u[0]->shape.dtype() == hlo::DType::kBF16;
    c.out_dtype = a == hlo::DType::kBF16 && to_bf16 ? "bf16" : "f32";
    if (c.m < 1 || c.n < 1 || c.k < 1) continue;
    AddCase(cases, c);
  }
  return cases;
}

std::vector<GemmCase> GemmCases(const GemmBenchOptions& o) {
  std::vector<GemmCase> cases;
  for (const std::string& dtype : o.dtypes) {
    for (int64_t s : o.sizes) {
      GemmCase c;
      c.m = c.n = c.k = s;
      c.dtype = dtype;
      c.out_dtype = dtype == "bf16" ? o.bf16_result : "f32";
      AddCase(cases, c);
    }
  }
  for (const std::string& dtype : o.dtypes) {
    for (GemmCase c : o.shapes) {
      c.dtype = dtype;
      c.out_dtype = dtype == "bf16" ? o.bf16_result : "f32";
      AddCase(cases, c);
    }
  }
  for (const GemmCase& c : o.suite_cases) AddCase(cases, c);
  return cases;
}

Result<json> BaselinesInfo(const std::string& binary) {
  MK_ASSIGN_OR_RETURN(ProcessResult r, RunProcess({binary, "info"}, 60));
  if (r.timed_out || r.signaled || r.exit_code != 0) {
    return Internal(binary + " info failed: " + r.err.substr(0, 300));
  }
  json j = json::parse(r.out, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("libs")) {
    return Internal(binary + " info printed no JSON: " + r.out.substr(0, 200));
  }
  return j;
}

std::vector<std::string> LibraryProcessSide::Argv() const {
  char min_time[32];
  std::snprintf(min_time, sizeof min_time, "%.6g", protocol_.min_seconds);
  // env(1) removes the OpenBLAS overrides before the library is loaded (it reads them then).
  return {"env",
          "-u",
          "OPENBLAS_CORETYPE",
          "-u",
          "OPENBLAS_L2_SIZE",
          binary_,
          "gemm",
          "--lib",
          lib_,
          "--m",
          std::to_string(case_.m),
          "--n",
          std::to_string(case_.n),
          "--k",
          std::to_string(case_.k),
          "--dtype",
          case_.dtype,
          "--out-dtype",
          case_.out_dtype,
          "--threads",
          std::to_string(threads_),
          "--warmup",
          std::to_string(protocol_.warmup),
          "--min-iterations",
          std::to_string(protocol_.min_iterations),
          "--max-iterations",
          std::to_string(protocol_.max_iterations),
          "--min-time",
          min_time};
}

Result<RoundTimes> LibraryProcessSide::Round(int) {
  MK_ASSIGN_OR_RETURN(ProcessResult r, RunProcess(Argv(), protocol_.timeout_s));
  auto last_line = [](const std::string& text) {
    std::string t = text;
    while (!t.empty() && t.back() == '\n') t.pop_back();
    size_t nl = t.rfind('\n');
    return nl == std::string::npos ? t : t.substr(nl + 1);
  };
  if (r.timed_out) return Internal(lib_ + " timed out after " + Sci(protocol_.timeout_s) + " s");
  if (r.signaled) return Internal(lib_ + " was killed by signal " + std::to_string(r.term_signal));
  json j = json::parse(r.out, nullptr, false);
  if (r.exit_code != 0) {
    return Internal(lib_ + " failed (exit " + std::to_string(r.exit_code) +
                    "): " + last_line(r.err));
  }
  if (j.is_discarded() || !j.is_object() || !j.contains("times_s") || !j["times_s"].is_array()) {
    return Internal(lib_ + " printed no timing JSON");
  }
  // The tool checks its own result (and exits 1 when it is wrong); this guards the contract.
  if (!j.contains("check") || !j["check"].value("passed", false)) {
    return Internal(lib_ + " gave a result that failed its check");
  }
  RoundTimes t;
  for (const json& v : j["times_s"]) {
    if (!v.is_number()) return Internal(lib_ + " printed a non-numeric time");
    t.times_s.push_back(v.get<double>());
  }
  if (info_.empty()) {
    for (const char* key : {"api", "version", "isa", "env", "details", "threads"}) {
      if (j.contains(key)) info_[key] = j[key];
    }
    info_["check"] = j["check"];
  }
  return t;
}

Result<std::string> CheckGemmSampled(const GemmCase& c, const std::vector<hlo::Literal>& inputs,
                                     const hlo::Literal& output) {
  if (inputs.size() != 2) return InvalidArgument("a GEMM has two inputs");
  const hlo::Literal& a = inputs[0];
  const hlo::Literal& b = inputs[1];
  if (a.num_elements() != c.m * c.k || b.num_elements() != c.k * c.n ||
      output.num_elements() != c.m * c.n) {
    return InvalidArgument("the GEMM's inputs or output have the wrong size");
  }
  int64_t nan = 0;
  for (int64_t i = 0; i < output.num_elements(); ++i) {
    if (std::isnan(output.GetDouble(i))) ++nan;
  }
  if (nan > 0) {
    return Internal(std::to_string(nan) + " output entries are NaN (not written, or wrong)");
  }
  std::vector<std::pair<int64_t, int64_t>> at = {
      {0, 0}, {0, c.n - 1}, {c.m - 1, 0}, {c.m - 1, c.n - 1}, {c.m / 2, c.n / 2}};
  for (int64_t t = 0; t < 16; ++t) at.push_back({t * (c.m - 1) / 15, t * (c.n - 1) / 15});
  std::mt19937_64 rng(12345);
  for (int t = 0; t < 235; ++t) {
    at.push_back({static_cast<int64_t>(rng() % static_cast<uint64_t>(c.m)),
                  static_cast<int64_t>(rng() % static_cast<uint64_t>(c.n))});
  }
  const double gamma = 2.0 * static_cast<double>(c.k) * kUnitRoundoff;
  double worst = 0;
  for (const auto& [i, j] : at) {
    double want = 0, magnitude = 0;
    for (int64_t l = 0; l < c.k; ++l) {
      const double p = a.GetDouble(i * c.k + l) * b.GetDouble(l * c.n + j);
      want += p;
      magnitude += std::fabs(p);
    }
    double bound = gamma * magnitude + 1e-30;
    if (c.out_dtype == "bf16") bound += std::ldexp(std::fabs(want), -8);
    const double got = output.GetDouble(i * c.n + j);
    const double err = std::fabs(got - want);
    if (!(err <= bound)) {
      return Internal("C[" + std::to_string(i) + "," + std::to_string(j) + "] = " + Sci(got) +
                      " but the reference is " + Sci(want) + " (allowed error " + Sci(bound) + ")");
    }
    worst = std::max(worst, err / bound);
  }
  return "sampled: " + std::to_string(at.size()) +
         " entries vs a double reference within 2·K·u·Σ|a·b|" +
         std::string(c.out_dtype == "bf16" ? " + ½ bf16 ulp" : "") + " (worst " + Sci(100 * worst) +
         "% of the bound), seed 1, no NaN in the NaN-poisoned output";
}

Result<std::vector<BenchRow>> RunGemmBench(const GemmBenchOptions& o, CpuEngine& engine,
                                           const BenchProgress& progress) {
  MK_RETURN_IF_ERROR(ValidateProtocol(o.protocol));
  if (o.threads < 1) return InvalidArgument("--threads must be at least 1");
  if (o.bf16_result != "f32" && o.bf16_result != "bf16") {
    return InvalidArgument("--bf16-result must be f32 or bf16");
  }
  std::optional<json> info;
  std::string no_libraries;
  if (o.baselines_binary.empty()) {
    no_libraries =
        "maxkernel-baselines was not found (build it: needs libdnnl-dev, libopenblas-dev)";
  } else {
    Result<json> i = BaselinesInfo(o.baselines_binary);
    if (i.ok()) {
      info = *i;
    } else {
      no_libraries = i.status().message();
    }
  }
  auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  std::vector<BenchRow> rows;
  const std::vector<GemmCase> cases = GemmCases(o);
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const GemmCase& c = cases[ci];
    BenchRow row;
    row.name = GemmCaseName(c);
    row.shape = std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k);
    row.dtype = GemmDtypeLabel(c);
    row.flops = GemmFlops(c);
    if (!c.from.empty()) row.details["from"] = c.from;
    say("[" + std::to_string(ci + 1) + "/" + std::to_string(cases.size()) + "] " + row.name + " (" +
        row.shape + ", " + row.dtype + "): plan, implement, build");
    const std::string text = GemmModuleText(c);
    MK_ASSIGN_OR_RETURN(auto module, hlo::ParseModule(text, row.name + ".hlo"));
    MK_RETURN_IF_ERROR(hlo::VerifyModule(*module));
    PlanRequest preq;
    preq.module = module.get();
    preq.target = engine.target();
    MK_ASSIGN_OR_RETURN(Plan plan, RunPlanner(preq, engine.emitter()));
    space::Candidate candidate = o.schedule ? space::CandidateFromJson(*o.schedule) : plan.initial;
    Result<Implemented> implemented = RunImplementer(plan, candidate, engine.emitter());
    if (!implemented.ok()) {
      if (o.schedule) return implemented.status().WithContext("--schedule");
      row.failed = true;
      row.checked = "not built: " + implemented.status().message();
      rows.push_back(std::move(row));
      continue;
    }
    row.details["schedule"] = space::ToJson(implemented->candidate);
    row.details["schedule_source"] =
        o.schedule ? "pinned (--schedule)" : "planner's initial candidate";
    json families = json::array();
    for (const KernelRoofline& k : plan.kernels) families.push_back(k.family);
    row.details["kernel_families"] = families;
    row.details["plan_lower_bound_s"] = plan.lower_bound_s;
    const codegen::Implementation& impl = implemented->implementation;
    Result<runtime::CompiledLibrary> lib = engine.Build(impl);
    if (!lib.ok()) {
      row.failed = true;
      row.checked = "build failed: " + lib.status().message();
      rows.push_back(std::move(row));
      continue;
    }

    // Check once, before any timing: a wrong kernel has no speed.
    say("  check");
    Result<std::string> checked = Internal("unchecked");
    if (c.m * c.n * c.k <= o.interpreter_check_limit) {
      checked = CheckWithTester(c, text, impl, engine, o.protocol.timeout_s);
    } else {
      MK_ASSIGN_OR_RETURN(task::Task t, TaskForModule(*module, row.name));
      MK_ASSIGN_OR_RETURN(auto inputs, task::GenerateInputs(t, 1));
      runtime::ExecuteOptions eo;
      eo.timeout_s = o.protocol.timeout_s;
      MK_ASSIGN_OR_RETURN(runtime::Execution run, engine.Run(*lib, impl, inputs, eo));
      if (!run.outcome.ok() || run.outputs.size() != 1) {
        checked = Internal("our kernel did not run: " + DescribeOutcome(run.outcome, eo.timeout_s));
      } else {
        checked = CheckGemmSampled(c, inputs, run.outputs[0]);
      }
    }
    if (!checked.ok()) {
      row.failed = true;
      row.checked = "FAILED: " + checked.status().message();
      say("  " + row.checked);
      rows.push_back(std::move(row));
      continue;
    }
    row.checked = *checked;

    // Time: ours and every library, interleaved.
    MK_ASSIGN_OR_RETURN(task::Task t, TaskForModule(*module, row.name));
    MK_ASSIGN_OR_RETURN(auto inputs, task::GenerateInputs(t, 0));
    MK_ASSIGN_OR_RETURN(auto ours,
                        SandboxSide::Create(engine.sandbox(), impl, *lib, inputs, o.protocol));
    std::vector<std::unique_ptr<LibraryProcessSide>> libs;
    for (const std::string& name : o.libs) {
      if (!info) {
        row.skipped.push_back({name, no_libraries});
        continue;
      }
      std::string why = Unsupported(*info, name, c);
      if (!why.empty()) {
        row.skipped.push_back({name, why});
        continue;
      }
      libs.push_back(
          std::make_unique<LibraryProcessSide>(o.baselines_binary, name, c, o.threads, o.protocol));
    }
    std::vector<BenchSide*> sides = {ours.get()};
    for (auto& l : libs) sides.push_back(l.get());
    say("  time: " + std::to_string(o.protocol.rounds) + " interleaved rounds");
    std::vector<SideResult> results = RunInterleaved(sides, o.protocol.rounds, progress);
    row.ours = results[0];
    row.baselines.assign(results.begin() + 1, results.end());
    std::string summary = "  ours " + FormatSeconds(row.ours->median_s);
    for (const SideResult& b : row.baselines) {
      if (auto q = RatioOf(row, b)) {
        char buf[64];
        std::snprintf(buf, sizeof buf, " | %s %s (%.2fx)", b.name.c_str(),
                      FormatSeconds(b.median_s).c_str(), *q);
        summary += buf;
      } else {
        summary += " | " + b.name + " failed: " + b.error;
      }
    }
    say(summary);
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace mk::bench
