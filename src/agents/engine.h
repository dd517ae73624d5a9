// The CPU engine: the one path from an HLO module to generated native code and its execution,
// shared by `eval --engine cpu`, `compile`, `check` and the tester agent:
//   module -> InlineCalls -> PlanFusion -> CpuEmitter (each kernel's initial schedule) -> compile (cached)
//   -> run in the sandbox (outputs poisoned with NaN before every run).
// Keeping it in one place means every command checks and times exactly the same program.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "analysis/fusion_plan.h"
#include "codegen/cpu/cpu_emitter.h"
#include "codegen/emitter.h"
#include "hlo/literal.h"
#include "hlo/module.h"
#include "runtime/compiler.h"
#include "runtime/cpu_executor.h"
#include "runtime/sandbox.h"
#include "space/schedule.h"
#include "target/target.h"

namespace mk::agents {

struct EngineOptions {
  // Compile cache; empty: $MAXKERNEL_CACHE, else ~/.cache/maxkernel/compile (CompilerDriver).
  std::string cache_dir;
  analysis::FusionOptions fusion;
  double compile_timeout_s = 300;
};

// A module lowered for the CPU: the plan (which points into `module`, the caller's module with
// its calls inlined), the schedule of every kernel, and the generated implementation. Owns that
// module so the plan stays valid.
struct LoweredModule {
  std::unique_ptr<hlo::Module> module;
  analysis::FusionPlan plan;
  space::Candidate candidate;
  codegen::Implementation impl;
};

class CpuEngine {
 public:
  explicit CpuEngine(EngineOptions options = {});
  CpuEngine(const CpuEngine&) = delete;
  CpuEngine& operator=(const CpuEngine&) = delete;

  // Plans and emits a copy of `module` (which must already be verified). An op the emitter
  // cannot lower is an Unimplemented error naming the op and its position. `module` itself is
  // untouched, so it stays an independent oracle for the tester.
  Result<LoweredModule> Lower(const hlo::Module& module);

  // Compiles an implementation through the cache. A compiler failure is an error carrying the
  // compiler's first error line and the path of the kept source.
  Result<runtime::CompiledLibrary> Build(const codegen::Implementation& impl);

  // Runs a built implementation once on `args` (entry parameters in order) in the sandbox.
  // A crash, hang or OOM is not an error: it is reported in the Execution's outcome.
  Result<runtime::Execution> Run(const runtime::CompiledLibrary& lib,
                                 const codegen::Implementation& impl,
                                 const std::vector<hlo::Literal>& args,
                                 const runtime::ExecuteOptions& options = {});

  const target::Target& target() const { return target_; }
  // The target with measured peaks (machine probe) instead of the nominal ones.
  void set_target(target::Target target) { target_ = std::move(target); }
  const codegen::Emitter& emitter() const { return emitter_; }
  runtime::CompilerDriver& compiler() { return compiler_; }
  runtime::SandboxRunner& sandbox() { return sandbox_; }

 private:
  EngineOptions options_;
  target::Target target_;
  codegen::cpu::CpuEmitter emitter_;
  runtime::CompilerDriver compiler_;
  runtime::SandboxRunner sandbox_;
  runtime::CpuExecutor executor_;
};

// The module every lowering starts from: calls inlined, elided constants filled with the
// interpreter's values. Used by CpuEngine::Lower and the planner, so both plan the same graph.
Result<std::unique_ptr<hlo::Module>> PrepareForLowering(const hlo::Module& module);

// `options` for `target`: row reductions move into a GEMM's kernel only for a result larger
// than the target's last cache level (analysis::FusionOptions::row_reduction_min_bytes).
// Used by CpuEngine::Lower and the planner, so both plan the same kernels.
analysis::FusionOptions FusionOptionsFor(analysis::FusionOptions options,
                                         const target::Target& target);

// The outputs of a run as the module's root value: the single array, or a tuple of them.
hlo::Literal RootValue(const hlo::Module& module, std::vector<hlo::Literal> outputs);

// "kernel crashed with signal SIGSEGV", "timed out after 5 s", ...: one line for a failed run.
std::string DescribeOutcome(const runtime::RunOutcome& outcome, double timeout_s);

}  // namespace mk::agents
