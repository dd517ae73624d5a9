#include "agents/debugger.h"

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "agents/repro.h"
#include "hlo/parser.h"
#include "hlo/verifier.h"
#include "interp/interpreter.h"
#include "support/sha256.h"
#include "task/inputs.h"

namespace mk::agents {

namespace {

constexpr FailureClass kAllClasses[] = {
    FailureClass::kSyntax,     FailureClass::kType,    FailureClass::kUndefinedSymbol,
    FailureClass::kResource,   FailureClass::kCrash,   FailureClass::kTimeout,
    FailureClass::kNumericalMismatch, FailureClass::kLoadFailure, FailureClass::kUnknown};

std::vector<hlo::Literal> Leaves(hlo::Literal root) {
  std::vector<hlo::Literal> out;
  if (root.shape().is_tuple()) {
    for (hlo::Literal& e : root.mutable_elements()) out.push_back(std::move(e));
  } else {
    out.push_back(std::move(root));
  }
  return out;
}

// The module and the task its inputs come from, as the request describes them.
struct Subject {
  std::unique_ptr<hlo::Module> module;
  task::Task task;
};

Result<Subject> LoadSubject(const DebugRequest& request) {
  Subject s;
  MK_ASSIGN_OR_RETURN(s.module, hlo::ParseModule(request.module_text, "<debug request module>"));
  MK_RETURN_IF_ERROR(hlo::VerifyModule(*s.module));
  if (!request.task_yaml.empty()) {
    MK_ASSIGN_OR_RETURN(s.task, task::ParseTaskYaml(request.task_yaml, "<debug request task>"));
    s.task.dir = request.task_dir;
    MK_RETURN_IF_ERROR(task::CheckTaskAgainstModule(s.task, *s.module));
  } else {
    MK_ASSIGN_OR_RETURN(s.task, TaskForModule(*s.module, s.module->name));
  }
  return s;
}

// The implementation must have exactly the module's buffer ABI: the executor indexes the inputs
// by the buffers' parameter numbers, and an artifact is untrusted input.
Status CheckBuffers(const hlo::Module& module, const codegen::Implementation& impl) {
  MK_ASSIGN_OR_RETURN(std::vector<codegen::BufferSlot> want, codegen::EntryBuffers(module));
  if (want.size() != impl.buffers.size()) {
    return InvalidArgument("the implementation has " + std::to_string(impl.buffers.size()) +
                           " buffers, the module needs " + std::to_string(want.size()));
  }
  for (size_t i = 0; i < want.size(); ++i) {
    const codegen::BufferSlot& a = want[i];
    const codegen::BufferSlot& b = impl.buffers[i];
    if (a.role != b.role || a.index != b.index || !a.shape.SameAs(b.shape)) {
      return InvalidArgument("buffer " + std::to_string(i) + " of the implementation (" +
                             b.shape.ToString(false) + ") does not match the module's (" +
                             a.shape.ToString(false) + ")");
    }
  }
  if (impl.target != "cpu" || impl.sources.size() != 1) {
    return InvalidArgument("the implementation must be one C++ source for target cpu");
  }
  return Status::Ok();
}

// True when a Build error is the compiler rejecting (or timing out on) the source, as opposed to
// the driver failing (no compiler, unwritable cache), which is not the implementation's fault.
bool IsCompilerFailure(const Status& s) {
  const std::string& m = s.message();
  return (m.find("compiling ") != std::string::npos && m.find(" failed: ") != std::string::npos) ||
         m.find("compiler timed out") != std::string::npos;
}

int SignalFromName(const std::string& text) {
  struct Named { const char* name; int sig; };
  static const Named kSignals[] = {{"SIGSEGV", SIGSEGV}, {"SIGBUS", SIGBUS}, {"SIGFPE", SIGFPE},
                                   {"SIGILL", SIGILL},   {"SIGABRT", SIGABRT}, {"SIGKILL", SIGKILL},
                                   {"SIGTRAP", SIGTRAP}, {"SIGSYS", SIGSYS}, {"SIGXCPU", SIGXCPU}};
  for (const Named& n : kSignals) {
    if (text.find(n.name) != std::string::npos) return n.sig;
  }
  return 0;
}

const analysis::Kernel* KernelById(const analysis::FusionPlan& plan, int id) {
  for (const analysis::Kernel& k : plan.kernels) {
    if (k.id == id) return &k;
  }
  return nullptr;
}

std::vector<int> AllKernels(const analysis::FusionPlan& plan) {
  std::vector<int> ids;
  for (const analysis::Kernel& k : plan.kernels) ids.push_back(k.id);
  return ids;
}

// The kernel whose result is output `index` of the entry (nullopt: a parameter or constant is
// returned directly, or the index is out of range).
std::optional<int> KernelProducingOutput(const analysis::FusionPlan& plan, int index) {
  const hlo::Computation* entry = plan.module ? plan.module->entry() : nullptr;
  if (!entry || !entry->root() || index < 0) return std::nullopt;
  const hlo::Instruction* root = entry->root();
  const hlo::Instruction* leaf = root;
  if (root->opcode == hlo::Opcode::kTuple) {
    if (static_cast<size_t>(index) >= root->operands.size()) return std::nullopt;
    leaf = root->operands[static_cast<size_t>(index)];
  } else if (index != 0) {
    return std::nullopt;
  }
  for (const analysis::Kernel& k : plan.kernels) {
    for (const hlo::Instruction* out : k.outputs) {
      if (out == leaf) return k.id;
    }
  }
  return std::nullopt;
}

std::string KernelLabel(const analysis::FusionPlan& plan, int id) {
  const analysis::Kernel* k = KernelById(plan, id);
  return "kernel_" + std::to_string(id) + (k ? " (" + k->name + ")" : "");
}

std::string Join(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string FormatNumber(double v) {
  std::ostringstream s;
  s.precision(9);
  s << v;
  return s.str();
}

// Runs `impl` with only the first `count` kernels called; true when the run fails the way the
// original did. A build failure or a sandbox error ends the bisection (nullopt).
std::optional<bool> FailsWithPrefix(const codegen::Implementation& impl, size_t count,
                                    const std::vector<hlo::Literal>& args,
                                    runtime::RunStatus want, double timeout_s, CpuEngine& engine) {
  codegen::Implementation cut = impl;
  cut.sources[0].text = KeepFirstKernelCalls(impl.sources[0].text, count);
  Result<runtime::CompiledLibrary> lib = engine.Build(cut);
  if (!lib.ok()) return std::nullopt;
  runtime::ExecuteOptions exec;
  exec.timeout_s = timeout_s;
  Result<runtime::Execution> ran = engine.Run(*lib, cut, args, exec);
  if (!ran.ok()) return std::nullopt;
  return ran->outcome.status == want;
}

// Bisects a crash (or OOM) over mk_kernel's calls: the shortest prefix of kernels that still
// fails ends with the culprit. Assumes the failure is deterministic; checks the full program
// first so a flaky crash is not pinned on the last kernel.
std::optional<int> BisectCrash(const codegen::Implementation& impl, const Subject& subject,
                               const Failure& failure, double timeout_s, CpuEngine& engine) {
  std::vector<int> order = KernelCallOrder(impl.sources[0].text);
  if (order.empty()) return std::nullopt;
  if (order.size() == 1) return order[0];
  Result<std::vector<hlo::Literal>> args = task::GenerateInputs(subject.task, failure.seed);
  if (!args.ok()) return std::nullopt;
  auto fails = [&](size_t count) {
    return FailsWithPrefix(impl, count, *args, failure.run_status, timeout_s, engine);
  };
  std::optional<bool> full = fails(order.size());
  if (!full || !*full) return std::nullopt;
  size_t lo = 1, hi = order.size();
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    std::optional<bool> f = fails(mid);
    if (!f) return std::nullopt;
    if (*f) hi = mid;
    else lo = mid + 1;
  }
  return order[lo - 1];
}

// ---- suggested fixes -------------------------------------------------------------------------

bool IsTileParam(const std::string& name) {
  return name.rfind("tile", 0) == 0 || name.rfind("block", 0) == 0 ||
         name.find("_tile") != std::string::npos;
}

void AddFix(std::vector<ScheduleFix>& fixes, int kernel, std::string description,
            std::map<std::string, int64_t> set) {
  if (set.empty()) return;
  fixes.push_back({std::move(description), kernel, std::move(set)});
}

// Concrete changes for one kernel's current schedule; a change that would not change anything
// is not suggested.
void FixesForKernel(FailureClass cls, int kernel, const space::Schedule& s,
                    std::vector<ScheduleFix>& fixes) {
  std::string who = "kernel_" + std::to_string(kernel);
  auto lower_to_one = [&](const char* param) {
    std::map<std::string, int64_t> set;
    auto it = s.values.find(param);
    if (it != s.values.end() && it->second > 1) set[param] = 1;
    return set;
  };
  std::map<std::string, int64_t> smaller_tiles;
  for (const auto& [name, v] : s.values) {
    if (IsTileParam(name) && v > 1) smaller_tiles[name] = v / 2;
  }
  switch (cls) {
    case FailureClass::kSyntax:
    case FailureClass::kType:
    case FailureClass::kUndefinedSymbol: {
      // An emitter bug usually sits on one code path (parallel, vectorized, unrolled): the
      // simplest schedule takes the most-tested one.
      std::map<std::string, int64_t> simplest;
      for (const char* p : {"threads", "unroll", "vector_width"}) simplest.merge(lower_to_one(p));
      AddFix(fixes, kernel, who + ": simplest schedule (serial, no unroll, scalar)", simplest);
      break;
    }
    case FailureClass::kResource:
      AddFix(fixes, kernel, who + ": halve the tile sizes (less stack and register pressure)",
             smaller_tiles);
      AddFix(fixes, kernel, who + ": no unroll (smaller code, fewer live registers)",
             lower_to_one("unroll"));
      break;
    case FailureClass::kCrash:
      AddFix(fixes, kernel, who + ": threads=1 (rules out a data race or a thread's small stack)",
             lower_to_one("threads"));
      AddFix(fixes, kernel, who + ": no unroll (rules out an off-by-one in the remainder loop)",
             lower_to_one("unroll"));
      AddFix(fixes, kernel, who + ": halve the tile sizes (tile edges past the array)",
             smaller_tiles);
      break;
    case FailureClass::kTimeout:
      AddFix(fixes, kernel, who + ": threads=1 (rules out a parallel deadlock or oversubscription)",
             lower_to_one("threads"));
      break;
    case FailureClass::kNumericalMismatch:
      AddFix(fixes, kernel, who + ": threads=1 (rules out a race or a reordered reduction)",
             lower_to_one("threads"));
      AddFix(fixes, kernel, who + ": no unroll", lower_to_one("unroll"));
      AddFix(fixes, kernel, who + ": vector_width=1 (scalar code)", lower_to_one("vector_width"));
      break;
    case FailureClass::kLoadFailure:
    case FailureClass::kUnknown: break;
  }
}

std::string Summarize(FailureClass cls, const Failure& f, const std::vector<int>& kernels,
                      bool narrowed, const analysis::FusionPlan& plan,
                      std::optional<int> source_line) {
  std::string where;
  if (narrowed && kernels.size() == 1) {
    where = " in " + KernelLabel(plan, kernels[0]);
  } else if (!kernels.empty()) {
    where = " in one of " + std::to_string(kernels.size()) + " kernels (not narrowed)";
  }
  std::string what = FailureClassName(cls);
  switch (f.kind) {
    case Failure::Kind::kNone: return "no failure observed";
    case Failure::Kind::kCompile:
      return "compile error (" + what + ")" + where +
             (source_line ? ", module.cc line " + std::to_string(*source_line) : "");
    case Failure::Kind::kRun: return what + where + ": " + f.message;
    case Failure::Kind::kMismatch:
      return "numerical mismatch in output " + std::to_string(f.output_index) + where;
  }
  return what;
}

}  // namespace

const char* FailureClassName(FailureClass c) {
  switch (c) {
    case FailureClass::kSyntax: return "syntax";
    case FailureClass::kType: return "type";
    case FailureClass::kUndefinedSymbol: return "undefined-symbol";
    case FailureClass::kResource: return "resource";
    case FailureClass::kCrash: return "crash";
    case FailureClass::kTimeout: return "timeout";
    case FailureClass::kNumericalMismatch: return "numerical-mismatch";
    case FailureClass::kLoadFailure: return "load-failure";
    case FailureClass::kUnknown: return "unknown";
  }
  return "unknown";
}

std::optional<FailureClass> FailureClassFromName(std::string_view name) {
  for (FailureClass c : kAllClasses) {
    if (name == FailureClassName(c)) return c;
  }
  return std::nullopt;
}

const char* FailureKindName(Failure::Kind kind) {
  switch (kind) {
    case Failure::Kind::kNone: return "none";
    case Failure::Kind::kCompile: return "compile";
    case Failure::Kind::kRun: return "run";
    case Failure::Kind::kMismatch: return "mismatch";
  }
  return "none";
}

Failure FailureFromCompileError(const Status& status) {
  Failure f;
  f.kind = Failure::Kind::kCompile;
  f.message = status.message();
  f.compiler_log = status.message();
  // CompilerDriver keeps the whole log beside the source and names it in the message.
  const std::string marker = "(full log: ";
  size_t p = f.message.rfind(marker);
  if (p != std::string::npos) {
    size_t b = p + marker.size();
    size_t e = f.message.find(')', b);
    std::string path = f.message.substr(b, e == std::string::npos ? std::string::npos : e - b);
    std::ifstream in(path, std::ios::binary);
    std::ostringstream log;
    if (in && (log << in.rdbuf())) f.compiler_log = log.str();
  }
  return f;
}

Failure FailureFromOutcome(const runtime::RunOutcome& outcome, uint64_t seed) {
  Failure f;
  f.kind = outcome.ok() ? Failure::Kind::kNone : Failure::Kind::kRun;
  f.run_status = outcome.status;
  f.signal = outcome.signal;
  f.seed = seed;
  f.message = outcome.ok() ? "" : DescribeOutcome(outcome, 0);
  if (outcome.status == runtime::RunStatus::kTimedOut) f.message = "timed out";
  if (!outcome.message.empty() && outcome.status != runtime::RunStatus::kLoadFailed &&
      !outcome.ok()) {
    f.message += " (" + outcome.message + ")";
  }
  return f;
}

Failure FailureFromTestReport(const TestReport& report) {
  if (report.status == "build-failed") {
    return FailureFromCompileError(InvalidArgument(report.message));
  }
  Failure none;
  none.message = report.message;
  for (const SeedResult& sr : report.seeds) {
    if (sr.passed() || sr.status == "skipped") continue;
    if (sr.status == "mismatch") {
      for (const OutputCheck& c : sr.outputs) {
        if (c.passed()) continue;
        Failure f;
        f.kind = Failure::Kind::kMismatch;
        f.seed = sr.seed;
        f.output_index = c.index;
        if (c.first_mismatch) f.first_mismatch = *c.first_mismatch;
        f.first_got = c.first_got;
        f.first_want = c.first_want;
        f.max_abs_err = c.max_abs_err;
        f.max_rel_err = c.max_rel_err;
        f.mismatches = c.mismatches;
        f.message = "output " + std::to_string(c.index) + " " + c.message;
        return f;
      }
      continue;
    }
    Failure f;
    f.kind = Failure::Kind::kRun;
    f.seed = sr.seed;
    f.message = sr.message;
    f.run_status = runtime::RunStatus::kInternalError;
    for (runtime::RunStatus s : {runtime::RunStatus::kCrashed, runtime::RunStatus::kTimedOut,
                                 runtime::RunStatus::kOutOfMemory, runtime::RunStatus::kLoadFailed}) {
      if (sr.status == runtime::RunStatusName(s)) f.run_status = s;
    }
    f.signal = SignalFromName(sr.message);
    return f;
  }
  return none;
}

Result<Failure> ObserveFailure(const DebugRequest& request, const codegen::Implementation& impl,
                               CpuEngine& engine) {
  MK_ASSIGN_OR_RETURN(Subject subject, LoadSubject(request));
  MK_RETURN_IF_ERROR(CheckBuffers(*subject.module, impl));
  if (request.seeds.empty()) return InvalidArgument("no seeds to run the implementation on");
  Result<runtime::CompiledLibrary> lib = engine.Build(impl);
  if (!lib.ok()) {
    if (IsCompilerFailure(lib.status())) return FailureFromCompileError(lib.status());
    return lib.status();
  }
  runtime::ExecuteOptions exec;
  exec.timeout_s = request.timeout_s;
  for (uint64_t seed : request.seeds) {
    MK_ASSIGN_OR_RETURN(std::vector<hlo::Literal> args, task::GenerateInputs(subject.task, seed));
    MK_ASSIGN_OR_RETURN(runtime::Execution ran, engine.Run(*lib, impl, args, exec));
    if (!ran.outcome.ok()) return FailureFromOutcome(ran.outcome, seed);
    interp::InterpreterOptions oracle;
    oracle.deadline = request.deadline;
    oracle.cancel = request.cancel;
    Result<hlo::Literal> expected = interp::Evaluate(*subject.module, args, oracle);
    if (!expected.ok()) return expected.status().WithContext("evaluating the reference");
    std::vector<hlo::Literal> want = Leaves(std::move(*expected));
    if (want.size() != ran.outputs.size()) {
      return InvalidArgument("the implementation has " + std::to_string(ran.outputs.size()) +
                             " outputs, the module " + std::to_string(want.size()));
    }
    for (size_t o = 0; o < want.size(); ++o) {
      double atol = subject.task.atol, rtol = subject.task.rtol;
      if (o < subject.task.outputs.size()) {
        atol = subject.task.outputs[o].atol;
        rtol = subject.task.outputs[o].rtol;
      }
      if (request.atol) atol = *request.atol;
      if (request.rtol) rtol = *request.rtol;
      OutputCheck c = CompareOutput(ran.outputs[o], want[o], atol, rtol, exec.poison_byte);
      if (c.passed()) continue;
      Failure f;
      f.kind = Failure::Kind::kMismatch;
      f.seed = seed;
      f.output_index = static_cast<int>(o);
      if (c.first_mismatch) f.first_mismatch = *c.first_mismatch;
      f.first_got = c.first_got;
      f.first_want = c.first_want;
      f.max_abs_err = c.max_abs_err;
      f.max_rel_err = c.max_rel_err;
      f.mismatches = c.mismatches;
      f.message = "output " + std::to_string(o) + " " + c.message;
      return f;
    }
  }
  return Failure{};
}

Result<Diagnosis> Diagnose(const DebugRequest& request, CpuEngine& engine,
                           const DebugOptions& options) {
  MK_ASSIGN_OR_RETURN(Subject subject, LoadSubject(request));
  MK_ASSIGN_OR_RETURN(LoweredModule lowered, engine.Lower(*subject.module));
  const analysis::FusionPlan& plan = lowered.plan;
  const space::Candidate& candidate =
      request.candidate.kernels.empty() ? lowered.candidate : request.candidate;
  const codegen::Implementation& impl = request.implementation;
  const std::string source = impl.sources.empty() ? "" : impl.sources[0].text;
  const Failure& f = request.failure;

  Diagnosis d;
  std::optional<int> culprit;
  std::optional<int> source_line;
  switch (f.kind) {
    case Failure::Kind::kNone:
      d.failure_class = FailureClass::kUnknown;
      d.evidence = f.message;
      break;
    case Failure::Kind::kCompile: {
      d.failure_class = ClassifyCompilerLog(f.compiler_log);
      d.evidence = FirstErrorText(f.compiler_log);
      source_line = FirstErrorSourceLine(f.compiler_log);
      if (source_line) culprit = KernelAtSourceLine(source, *source_line);
      if (!culprit) culprit = KernelNamedInLog(f.compiler_log);
      break;
    }
    case Failure::Kind::kRun:
      d.failure_class = ClassifyOutcome(f.run_status);
      d.evidence = f.message + (f.signal ? " (signal " + std::to_string(f.signal) + ")" : "") +
                   ", inputs of seed " + std::to_string(f.seed);
      if (options.narrow_crashes && !source.empty() && impl.sources.size() == 1 &&
          (f.run_status == runtime::RunStatus::kCrashed ||
           f.run_status == runtime::RunStatus::kOutOfMemory) &&
          CheckBuffers(*subject.module, impl).ok()) {
        culprit = BisectCrash(impl, subject, f, request.timeout_s, engine);
      }
      break;
    case Failure::Kind::kMismatch:
      d.failure_class = FailureClass::kNumericalMismatch;
      culprit = KernelProducingOutput(plan, f.output_index);
      d.evidence = f.message.empty()
                       ? "output " + std::to_string(f.output_index) + " first differs at " +
                             Join(f.first_mismatch) + ": got " + FormatNumber(f.first_got) +
                             ", want " + FormatNumber(f.first_want)
                       : f.message;
      d.evidence += " (max abs err " + FormatNumber(f.max_abs_err) + ", max rel err " +
                    FormatNumber(f.max_rel_err) + ", seed " + std::to_string(f.seed) + ")";
      break;
  }
  if (culprit && !KernelById(plan, *culprit)) culprit.reset();  // a stale or foreign source
  if (f.kind != Failure::Kind::kNone) {
    d.narrowed = culprit.has_value();
    d.kernels = culprit ? std::vector<int>{*culprit} : AllKernels(plan);
  }
  d.summary = Summarize(d.failure_class, f, d.kernels, d.narrowed, plan, source_line);

  for (int id : d.kernels) {
    const analysis::Kernel* k = KernelById(plan, id);
    if (!k) continue;
    if (!d.hlo_snippet.empty()) d.hlo_snippet += "\n";
    d.hlo_snippet += "// kernel_" + std::to_string(id) + ": " + k->name + "\n" + k->ToHloText();
  }
  if (d.kernels.size() == 1) {
    if (const analysis::Kernel* k = KernelById(plan, d.kernels[0])) d.minimized_hlo = k->ToHloText();
  }
  for (int id : d.kernels) {
    FixesForKernel(d.failure_class, id, candidate.For(static_cast<size_t>(id)), d.suggested_fix);
  }

  if (!options.artifact_dir.empty() && f.kind != Failure::Kind::kNone) {
    ReproArtifact artifact;
    artifact.request = request;
    if (artifact.request.candidate.kernels.empty()) artifact.request.candidate = candidate;
    artifact.expected_class = d.failure_class;
    std::string id = impl.hash.empty() ? Sha256Hex(source) : impl.hash;
    d.artifact_path = (std::filesystem::absolute(options.artifact_dir) /
                       ("repro-" + std::string(FailureClassName(d.failure_class)) + "-" +
                        id.substr(0, 12) + ".json"))
                          .lexically_normal()
                          .string();
    d.reproduce_cmd = ReproduceCommand(options.binary, d.artifact_path);
    artifact.diagnosis = d;
    MK_RETURN_IF_ERROR(WriteReproArtifact(d.artifact_path, artifact));
  }
  return d;
}

space::Candidate ApplyFix(const space::Candidate& candidate, const ScheduleFix& fix) {
  space::Candidate out = candidate;
  for (size_t k = 0; k < out.kernels.size(); ++k) {
    if (fix.kernel >= 0 && static_cast<size_t>(fix.kernel) != k) continue;
    for (const auto& [name, v] : fix.set) out.kernels[k].values[name] = v;
  }
  return out;
}

space::Candidate ApplyFix(const space::Candidate& candidate, const Diagnosis& diagnosis) {
  space::Candidate out = candidate;
  for (const ScheduleFix& fix : diagnosis.suggested_fix) out = ApplyFix(out, fix);
  return out;
}

std::string FormatDiagnosis(const Diagnosis& d) {
  std::ostringstream s;
  s << "class:    " << FailureClassName(d.failure_class) << "\n"
    << "summary:  " << d.summary << "\n";
  if (!d.evidence.empty()) s << "evidence: " << d.evidence << "\n";
  s << "kernels:  ";
  for (size_t i = 0; i < d.kernels.size(); ++i) s << (i ? ", " : "") << "kernel_" << d.kernels[i];
  s << (d.kernels.empty() ? "(none)" : "") << (d.narrowed ? "" : "  (not narrowed)") << "\n";
  if (!d.suggested_fix.empty()) {
    s << "suggested fixes:\n";
    for (const ScheduleFix& f : d.suggested_fix) {
      s << "  - " << f.description << ":";
      for (const auto& [name, v] : f.set) s << " " << name << "=" << v;
      s << "\n";
    }
  }
  if (!d.reproduce_cmd.empty()) s << "reproduce: " << d.reproduce_cmd << "\n";
  if (!d.hlo_snippet.empty()) s << "\nfailing subgraph (HLO):\n" << d.hlo_snippet;
  return s.str();
}

}  // namespace mk::agents
