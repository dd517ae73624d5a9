#include "agents/tpu_runner.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>

#include "agents/engine.h"
#include "codegen/pallas/pallas_emitter.h"
#include "hlo/literal_npy.h"
#include "target/tpu_calibration.h"
#include "target/tpu_perf_model.h"
#include "task/bridge.h"

namespace mk::agents {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A private scratch folder, removed with everything in it when it goes out of scope.
class ScratchDir {
 public:
  static Result<ScratchDir> Create() {
    std::string pattern = (fs::temp_directory_path() / "mk-tpu-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) return EnvironmentError("cannot create a folder in /tmp");
    return ScratchDir(pattern);
  }
  ScratchDir(ScratchDir&& o) noexcept : path_(std::move(o.path_)) { o.path_.clear(); }
  ~ScratchDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  explicit ScratchDir(std::string p) : path_(std::move(p)) {}
  std::string path_;
};


Status WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) return EnvironmentError("cannot write " + path);
  return Status::Ok();
}

// The bridge's JSON answer from a finished run, or an error carrying what it printed.
Result<json> BridgeAnswer(const ProcessResult& r, double timeout_s, const std::string& what) {
  if (r.timed_out) return Status(ErrorCode::kInternal, what + " timed out after " + std::to_string(static_cast<int>(timeout_s)) + " s");
  if (r.exit_code != 0) return task::BridgeFailure(r, what);
  json j = json::parse(r.out, nullptr, false);
  if (!j.is_object()) return Internal(what + " printed no JSON: " + r.out.substr(0, 300));
  return j;
}

Result<json> BridgeJson(const std::vector<std::string>& args, double timeout_s, const std::string& what) {
  MK_ASSIGN_OR_RETURN(ProcessResult r, task::RunBridge(args, timeout_s));
  return BridgeAnswer(r, timeout_s, what);
}

std::string SignalName(int sig) {
  const char* name = sigabbrev_np(sig);
  return "signal " + std::to_string(sig) + (name ? std::string(" SIG") + name : std::string());
}

}  // namespace

std::string CompilerCrashSummary(const std::string& text, size_t n) {
  std::vector<std::string> lines, fatal;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    const bool glog_fatal = line.size() > 5 && line[0] == 'F' && isdigit(static_cast<unsigned char>(line[1])) &&
                            isdigit(static_cast<unsigned char>(line[4]));
    // (glog prints a fatal line twice: to the log and to stderr.)
    const bool again = !fatal.empty() && fatal.back() == line;
    if ((glog_fatal || line.find("Check failed") != std::string::npos) && !again) fatal.push_back(line);
    if (line.find_first_not_of(" \t\r") != std::string::npos) lines.push_back(std::move(line));
    start = end + 1;
  }
  if (!fatal.empty()) lines = std::move(fatal);
  if (lines.empty()) return "";
  std::string out = ": ";
  for (size_t i = lines.size() > n ? lines.size() - n : 0; i < lines.size(); ++i) {
    if (out.size() > 2) out += " | ";
    out += lines[i].substr(0, 400);
  }
  return out;
}

namespace {

Result<target::TpuKernelShape> ShapeFromJson(const json& j) {
  try {
    target::TpuKernelShape k;
    k.name = j.value("name", std::string());
    k.grid_steps = j.at("grid_steps").get<int64_t>();
    const json& mxu = j.at("mxu");
    k.mxu_m = mxu.at("m").get<int64_t>();
    k.mxu_n = mxu.at("n").get<int64_t>();
    k.mxu_k = mxu.at("k").get<int64_t>();
    k.mxu_bf16 = mxu.at("bf16").get<bool>();
    if (j.contains("mxu2")) {
      k.mxu2_m = j["mxu2"].at("m").get<int64_t>();
      k.mxu2_n = j["mxu2"].at("n").get<int64_t>();
      k.mxu2_k = j["mxu2"].at("k").get<int64_t>();
    }
    k.skipped_steps = j.value("skipped_steps", int64_t{0});
    k.vpu_flops_per_step = j.value("vpu_flops_per_step", int64_t{0});
    k.transcendentals_per_step = j.value("transcendentals_per_step", int64_t{0});
    k.xlu_vregs_per_step = j.value("xlu_vregs_per_step", int64_t{0});
    k.in_bytes_per_step = j.at("in_bytes_per_step").get<int64_t>();
    k.out_bytes_per_step = j.at("out_bytes_per_step").get<int64_t>();
    k.prologue_bytes = j.value("prologue_bytes", int64_t{0});
    k.epilogue_bytes = j.value("epilogue_bytes", int64_t{0});
    k.vmem_bytes = j.at("vmem_bytes").get<int64_t>();
    return k;
  } catch (const json::exception& e) {
    return InvalidArgument(std::string("a damaged kernel shape in kernel_map.json: ") + e.what());
  }
}

}  // namespace

Result<std::string> SourceNamed(const codegen::Implementation& impl, const std::string& name) {
  for (const auto& s : impl.sources) {
    if (s.name == name) return s.text;
  }
  return InvalidArgument("the implementation has no " + name + " (not the Pallas emitter's)");
}

json XlaTpuEstimate(const std::string& task_dir, const target::Target& tpu) {
  const std::string generation = tpu.name.rfind("tpu-", 0) == 0 ? tpu.name.substr(4) : tpu.name;
  Result<ProcessResult> r = task::RunBridge(
      {"tpu-xla-cost", "--task", task_dir, "--generation", generation, "--json"}, 900);
  if (!r.ok()) return {{"error", r.status().message()}};
  json j = json::parse(r->out, nullptr, false);
  if (!j.is_object()) return {{"error", "the bridge printed no JSON: " + r->err.substr(0, 300)}};
  return j;
}

json ToJson(const TpuModelledTime& t) {
  json kernels = json::array();
  for (const auto& k : t.kernels) {
    kernels.push_back({{"name", k.name}, {"runs", k.runs}, {"modelled_s", k.modelled_s},
                       {"bound", k.bound}, {"reason", k.reason.empty() ? json(nullptr) : json(k.reason)},
                       {"ops_in_pallas", k.ops_in_pallas}, {"ops_in_glue", k.ops_in_glue}});
  }
  return {{"modelled_s", t.seconds}, {"label", "modelled (no TPU measured it)"},
          {"pallas_kernels", t.pallas_kernels}, {"glue_kernels", t.glue_kernels},
          {"kernels", kernels}};
}

Result<TpuModelledTime> ModelTpuImplementation(const codegen::Implementation& impl,
                                               const target::Target& tpu) {
  MK_ASSIGN_OR_RETURN(std::string map_text, SourceNamed(impl, "kernel_map.json"));
  json map = json::parse(map_text, nullptr, false);
  if (!map.is_object() || !map.contains("kernels") || !map["kernels"].is_array()) {
    return InvalidArgument("kernel_map.json is not the Pallas emitter's kernel map");
  }
  const target::TpuModelConstants constants = target::FittedTpuModelConstants(tpu);
  TpuModelledTime total;
  for (const json& k : map["kernels"]) {
    TpuModelledKernel mk;
    mk.name = k.value("name", std::string());
    mk.runs = k.value("runs", std::string());
    for (const char* key : {"ops_in_pallas", "ops_in_glue"}) {
      auto& ops = std::string(key) == "ops_in_pallas" ? mk.ops_in_pallas : mk.ops_in_glue;
      if (auto it = k.find(key); it != k.end() && it->is_array()) {
        for (const json& op : *it) {
          if (op.is_string()) ops.push_back(op.get<std::string>());
        }
      }
    }
    // A plan kernel fused into another's pallas_call (flash attention): that call's time holds it.
    if (mk.runs == "fused") {
      mk.bound = "fused";
      mk.reason = "fused into " + k.value("fused_into", std::string());
      total.kernels.push_back(std::move(mk));
      continue;
    }
    if (mk.runs == "pallas" && k.contains("tpu_kernel_shape")) {
      MK_ASSIGN_OR_RETURN(target::TpuKernelShape shape, ShapeFromJson(k["tpu_kernel_shape"]));
      MK_ASSIGN_OR_RETURN(target::TpuModelledTime t, target::ModelTpuKernel(tpu, shape, constants));
      mk.modelled_s = t.seconds;
      mk.bound = t.bound;
      ++total.pallas_kernels;
    } else {
      mk.reason = k.value("reason", std::string());
      const double flops = k.value("flops", 0.0), bytes = k.value("bytes", 0.0);
      const double compute = tpu.peak_flops_bf16 > 0 ? flops / tpu.peak_flops_bf16 : 0;
      const double memory = tpu.bandwidth_bytes_per_s > 0 ? bytes / tpu.bandwidth_bytes_per_s : 0;
      mk.modelled_s = std::max(compute, memory);
      mk.bound = "roofline";
      ++total.glue_kernels;
    }
    total.seconds += mk.modelled_s;
    total.kernels.push_back(std::move(mk));
  }
  return total;
}

std::string KernelFailures(const std::string& bridge_stderr, json* kernels) {
  static const std::string kMark = "maxkernel: compiling ", kResult = "maxkernel: compiled ";
  *kernels = json::array();
  std::string started;  // the last kernel begun and not finished: the one a crash stopped in
  std::string out;
  size_t start = 0;
  while (start < bridge_stderr.size()) {
    size_t end = bridge_stderr.find('\n', start);
    if (end == std::string::npos) end = bridge_stderr.size();
    const std::string line = bridge_stderr.substr(start, end - start);
    start = end + 1;
    if (line.rfind(kMark, 0) == 0) {
      started = line.substr(kMark.size());
      continue;
    }
    if (line.rfind(kResult, 0) != 0) continue;
    json k = json::parse(line.substr(kResult.size()), nullptr, false);
    if (!k.is_object()) continue;
    started.clear();
    kernels->push_back(k);
    if (k.value("ok", true)) continue;
    const json err = k.value("error", json::object());
    std::string message = err.is_object() ? err.value("message", std::string()) : std::string();
    // Mosaic names the operation it could not lower after its first line: keep both.
    std::string first = message.substr(0, message.find('\n'));
    if (size_t op = message.find("operation involved:"); op != std::string::npos) {
      std::string rest = message.substr(op + 19);
      rest.erase(0, rest.find_first_not_of(" \n"));
      first += " [" + rest.substr(0, rest.find('\n')) + "]";
    }
    out += (out.empty() ? "" : "; ") + k.value("function", std::string("?")) + ": " +
           (err.is_object() ? err.value("kind", std::string("error")) : std::string("error")) + ": " + first;
  }
  if (!started.empty()) {
    kernels->push_back({{"function", started}, {"ok", false}, {"error", {{"kind", "compiler_crash"}}}});
    out += (out.empty() ? "" : "; ") + started + ": crashed the compiler";
  }
  return out;
}

std::string TpuRunner::DiagnoseKernels(const std::string& module_path, const std::string& generation,
                                       json* kernels) {
  // Each kernel alone, in one process (one jax start-up): a crash ends it, and the marks on
  // stderr still say which kernel it died on and which failed before.
  Result<ProcessResult> run = task::RunBridge({"pallas-compile", "--module", module_path, "--generation",
                                               generation, "--per-kernel", "--json"}, 600);
  if (!run.ok()) return "";
  const std::string failures = KernelFailures(run->err, kernels);
  if (failures.empty()) return "";
  return "; compiled kernel by kernel, the compiler refuses: " + failures +
         " (python3 -m maxkernel_jax pallas-compile --module kernel.py --generation " + generation +
         " --per-kernel)";
}

TpuRunner::TpuRunner(target::Target tpu) : tpu_(std::move(tpu)) {}

Result<TpuPlanned> PlanForTpu(const hlo::Module& module, const target::Target& tpu) {
  TpuPlanned out;
  MK_ASSIGN_OR_RETURN(out.prepared, PrepareForLowering(module));
  MK_ASSIGN_OR_RETURN(out.plan, analysis::PlanFusion(*out.prepared, FusionOptionsFor({}, tpu)));
  codegen::pallas::PallasEmitter emitter;
  for (const auto& k : out.plan.kernels) out.initial.kernels.push_back(emitter.SpaceFor(k, tpu).Initial());
  return out;
}

Result<codegen::Implementation> TpuRunner::Lower(const hlo::Module& module) {
  MK_ASSIGN_OR_RETURN(TpuPlanned planned, PlanForTpu(module, tpu_));
  return codegen::pallas::PallasEmitter().Emit(planned.plan, planned.initial, tpu_);
}

Result<BuildOutcome> TpuRunner::Build(const codegen::Implementation& impl) {
  if (!impl.hash.empty() && impl.hash == last_hash_) return last_outcome_;
  last_hash_.clear();
  ++compiles_;
  Result<BuildOutcome> b = Compile(impl);
  if (b.ok()) {
    last_hash_ = impl.hash;
    last_outcome_ = *b;
  }
  return b;
}

Result<BuildOutcome> TpuRunner::Compile(const codegen::Implementation& impl) {
  MK_ASSIGN_OR_RETURN(std::string source, SourceNamed(impl, "kernel.py"));
  MK_ASSIGN_OR_RETURN(ScratchDir dir, ScratchDir::Create());
  const std::string path = dir.path() + "/kernel.py";
  MK_RETURN_IF_ERROR(WriteText(path, source));
  const std::string generation = tpu_.name.rfind("tpu-", 0) == 0 ? tpu_.name.substr(4) : tpu_.name;
  const std::vector<std::string> args = {"pallas-compile", "--module", path, "--generation",
                                         generation, "--json"};
  MK_ASSIGN_OR_RETURN(ProcessResult run, task::RunBridge(args, 600));
  if (run.signaled) {
    // The compiler died on this module (a failed CHECK in Mosaic or XLA:TPU aborts the process):
    // the module's failure, with what the compiler said last and how to reproduce it. A bridge
    // that cannot start at all stays an environment error (below).
    BuildOutcome b;
    b.ok = false;
    b.message = "the TPU compiler (libtpu, compile-only, " + tpu_.name + ") crashed on this module (" +
                SignalName(run.term_signal) + ")" + CompilerCrashSummary(run.err, 6) +
                "; reproduce with the module saved as kernel.py: python3 -m maxkernel_jax "
                "pallas-compile --module kernel.py --generation " + generation;
    last_compile_ = {{"ok", false}, {"error", {{"kind", "compiler_crash"}, {"message", b.message}}}};
    json kernels;
    b.message += DiagnoseKernels(path, generation, &kernels);
    last_compile_["kernels"] = kernels;
    return b;
  }
  Result<json> j = BridgeAnswer(run, 600, "compiling for " + tpu_.name);
  if (!j.ok()) {
    // No libtpu, or a bridge that cannot start: the toolchain, not the kernel.
    return EnvironmentError(j.status().message());
  }
  last_compile_ = *j;
  BuildOutcome b;
  if (!j->value("ok", false)) {
    b.ok = false;
    const json err = j->value("error", json::object());
    b.message = "the TPU compiler (libtpu, compile-only, " + tpu_.name + ") refused it: " +
                err.value("kind", std::string("error")) + ": " + err.value("message", std::string());
    json kernels;
    b.message += DiagnoseKernels(path, generation, &kernels);
    last_compile_["kernels"] = kernels;
  }
  return b;
}

Result<RunResult> TpuRunner::Run(const codegen::Implementation& impl,
                                 const std::vector<hlo::Literal>& args, double timeout_s) {
  MK_ASSIGN_OR_RETURN(std::string source, SourceNamed(impl, "kernel.py"));
  MK_ASSIGN_OR_RETURN(ScratchDir dir, ScratchDir::Create());
  const std::string module_path = dir.path() + "/kernel.py";
  MK_RETURN_IF_ERROR(WriteText(module_path, source));
  std::vector<std::string> argv = {"pallas-run", "--module", module_path, "--out", dir.path(), "--json", "--inputs"};
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string p = dir.path() + "/in" + std::to_string(i) + ".npy";
    MK_RETURN_IF_ERROR(hlo::WriteLiteralNpy(p, args[i]));
    argv.push_back(p);
  }
  // Interpret mode runs ~10 ms a grid step; the kernel's own timeout plus JAX's start-up.
  Result<json> j = BridgeJson(argv, timeout_s + 60, "running " + tpu_.name + " interpret mode");
  RunResult r;
  if (!j.ok()) {
    r.status = j.status().message().find("timed out") != std::string::npos ? "timed-out" : "internal-error";
    r.message = j.status().message();
    return r;
  }
  if (!j->value("ok", false)) {
    const json err = j->value("error", json::object());
    const std::string kind = err.value("kind", std::string("exception"));
    r.status = kind == "race" ? "race" : kind == "out_of_bounds" ? "out-of-bounds" : "crashed";
    r.message = "interpret mode: " + kind + ": " + err.value("message", std::string());
    return r;
  }
  for (size_t i = 0; i < impl.buffers.size(); ++i) {
    const codegen::BufferSlot& b = impl.buffers[i];
    if (b.role != codegen::BufferSlot::Role::kOutput) continue;
    const std::string p = dir.path() + "/out" + std::to_string(b.index) + ".npy";
    MK_ASSIGN_OR_RETURN(hlo::Literal out,
                        hlo::ReadLiteralNpy(p, b.shape, "output " + std::to_string(b.index)));
    r.outputs.push_back(std::move(out));
  }
  return r;
}

}  // namespace mk::agents
