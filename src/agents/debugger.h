// The debugger agent: a failed build or run of an implementation -> a Diagnosis (DESIGN.md §4).
//
//   DebugRequest (module text, candidate, implementation, the failure and how it was observed)
//     -> class (from the compiler log or the run outcome, by rules written for g++/clang messages)
//     -> the failing kernel(s): a compile error's line mapped back to the `static void kernel_N(`
//        function holding it; a mismatch's output mapped to the kernel producing it; a crash
//        narrowed by re-running the implementation with only the first k kernels called
//     -> their fused subgraph as HLO, a single failing kernel as its own module (minimized repro)
//     -> suggested schedule fixes (concrete values; ApplyFix applies them)
//     -> a repro artifact (repro.h) and the command that re-runs it: `maxkernel debug repro FILE`.
// Everything is plain data with a JSON form, so a diagnosis can be stored and shown in the UI.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "agents/engine.h"
#include "agents/tester.h"
#include "codegen/emitter.h"
#include "runtime/sandbox.h"
#include "space/schedule.h"
#include "support/status.h"
#include "task/task.h"

namespace mk::agents {

enum class FailureClass {
  kSyntax,             // the source does not parse ("expected ';' before ...")
  kType,               // it parses but does not type-check ("cannot convert", "no matching function")
  kUndefinedSymbol,    // a name that is not declared / not defined
  kResource,           // compiler or kernel limits: memory, stack, registers, object size, ICE
  kCrash,              // the kernel died on a signal
  kTimeout,            // the compiler or the kernel ran past its time limit
  kNumericalMismatch,  // it ran, and an output disagrees with the interpreter
  kLoadFailure,        // the library does not load (dlopen: undefined symbol, bad ELF ...)
  kUnknown,
};
const char* FailureClassName(FailureClass c);  // "syntax", "undefined-symbol", ...
std::optional<FailureClass> FailureClassFromName(std::string_view name);

// What went wrong, as observed by whoever ran the implementation (engine, tester, pipeline).
struct Failure {
  enum class Kind { kNone, kCompile, kRun, kMismatch };
  Kind kind = Kind::kNone;
  // kCompile: the compiler's log (or, when the log is gone, the error message).
  std::string compiler_log;
  // kRun: the sandbox outcome.
  runtime::RunStatus run_status = runtime::RunStatus::kOk;
  int signal = 0;
  std::string message;  // one line for people (all kinds)
  // kRun / kMismatch: the seed of the inputs; kMismatch: the first failing output.
  uint64_t seed = 0;
  int output_index = 0;
  std::vector<int64_t> first_mismatch;
  double first_got = 0, first_want = 0;
  double max_abs_err = 0, max_rel_err = 0;
  int64_t mismatches = 0;
};
const char* FailureKindName(Failure::Kind kind);  // "none", "compile", "run", "mismatch"

// A compile error from CompilerDriver::Compile; reads the full log the message points at.
Failure FailureFromCompileError(const Status& status);
Failure FailureFromOutcome(const runtime::RunOutcome& outcome, uint64_t seed);
// The first failure in a tester report (none for a passing one). A build failure carries the
// report's message; the full log is read from the path the message names.
Failure FailureFromTestReport(const TestReport& report);

struct DebugRequest {
  std::string module_text;          // the module as given (the oracle)
  space::Candidate candidate;       // the schedules the implementation was emitted with
  codegen::Implementation implementation;
  Failure failure;
  // How the failure was observed, so the repro observes it the same way. `task_yaml` (a task's
  // generators and tolerances) is optional: without it the module's default generators are used.
  std::string task_yaml;
  std::string task_dir;             // for generators reading data files
  std::vector<uint64_t> seeds = {0};
  std::optional<double> atol, rtol;
  double timeout_s = 30;
  // In-process only (not in the JSON form): limits on the reference interpreter, which the
  // debugger runs again in this process for the failing seed; it stops with kCancelled at
  // `deadline` or once `*cancel` is true (the run's budget and SIGINT, as the tester's).
  std::optional<std::chrono::steady_clock::time_point> deadline;
  const std::atomic<bool>* cancel = nullptr;
};

// A concrete schedule change: set these parameters of `kernel` (-1: of every kernel).
struct ScheduleFix {
  std::string description;
  int kernel = -1;
  std::map<std::string, int64_t> set;
};

struct Diagnosis {
  FailureClass failure_class = FailureClass::kUnknown;
  std::string summary;    // one line: what failed and where
  std::string evidence;   // the compiler's error line, the signal, the mismatch
  std::vector<int> kernels;  // ids of the failing kernels (all of them when not narrowed)
  bool narrowed = false;     // kernels is a proper subset found by mapping or bisection
  std::string hlo_snippet;   // the failing kernels' fused subgraphs (Kernel::ToHloText)
  std::string minimized_hlo;  // one failing kernel as a standalone module; empty otherwise
  std::vector<ScheduleFix> suggested_fix;
  std::string artifact_path;   // the repro artifact (empty when none was written)
  std::string reproduce_cmd;   // `maxkernel debug repro ARTIFACT.json`
};

struct DebugOptions {
  std::string artifact_dir;     // where the repro artifact goes; empty: not written
  bool narrow_crashes = true;   // bisect a crash over the kernels (a few extra compiles)
  std::string binary = "maxkernel";  // the command reproduce_cmd starts with
};

// ---- the rules (debugger_classify.cc) ----------------------------------------------------------

// The class of a compiler failure from its log: the first error line decides, except that
// signs of exhausted resources (memory, ICE, killed compiler) anywhere in the log win.
FailureClass ClassifyCompilerLog(const std::string& log);
// The class of a failed run.
FailureClass ClassifyOutcome(runtime::RunStatus status);
// The first error's line in the generated source ("module.cc:123:5: error: ..."), skipping
// errors located in system headers; nullopt when the log names no line.
std::optional<int> FirstErrorSourceLine(const std::string& log);
// The first line of the log that is an error ("...: error: ..."), or the first non-empty one.
std::string FirstErrorText(const std::string& log);
// The kernel a log names in a function context ("In function 'void {anonymous}::kernel_3(void**)'",
// the linker's "in function `kernel_3'"): the fallback when no source line maps to a kernel.
std::optional<int> KernelNamedInLog(const std::string& log);
// The id N of the `static void kernel_N(` function whose body holds 1-based `line` of `source`.
std::optional<int> KernelAtSourceLine(const std::string& source, int line);
// The kernel ids in the order mk_kernel calls them (`  kernel_N(slot);`).
std::vector<int> KernelCallOrder(const std::string& source);
// `source` with only the first `count` kernel calls of mk_kernel kept.
std::string KeepFirstKernelCalls(const std::string& source, size_t count);

// ---- the agent (debugger.cc) -------------------------------------------------------------------

// Diagnoses `request`. Writes the repro artifact when options.artifact_dir is set. Errors only
// for bad input (an unparsable module) or when the artifact cannot be written.
Result<Diagnosis> Diagnose(const DebugRequest& request, CpuEngine& engine,
                           const DebugOptions& options = {});

// Builds and runs `impl` on the request's seeds like the tester does (NaN-poisoned outputs,
// interpreter oracle); returns the first failure (Kind::kNone when everything passed).
Result<Failure> ObserveFailure(const DebugRequest& request, const codegen::Implementation& impl,
                               CpuEngine& engine);

// The candidate with the fix (or every fix of the diagnosis) applied. Kernels the candidate
// does not have are left alone.
space::Candidate ApplyFix(const space::Candidate& candidate, const ScheduleFix& fix);
space::Candidate ApplyFix(const space::Candidate& candidate, const Diagnosis& diagnosis);

// Human-readable (for `debug explain` and logs).
std::string FormatDiagnosis(const Diagnosis& diagnosis);

// ---- JSON forms (debugger_json.cc) -------------------------------------------------------------

nlohmann::json ToJson(const Failure& failure);
Result<Failure> FailureFromJson(const nlohmann::json& j);
nlohmann::json ToJson(const ScheduleFix& fix);
Result<ScheduleFix> ScheduleFixFromJson(const nlohmann::json& j);
nlohmann::json ToJson(const Diagnosis& diagnosis);
Result<Diagnosis> DiagnosisFromJson(const nlohmann::json& j);
nlohmann::json ToJson(const DebugRequest& request);
Result<DebugRequest> DebugRequestFromJson(const nlohmann::json& j);

}  // namespace mk::agents
