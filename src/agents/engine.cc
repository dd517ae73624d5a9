#include "agents/engine.h"

#include <csignal>
#include <cstdio>

#include "hlo/call_inliner.h"
#include "interp/elided_constants.h"

namespace mk::agents {

namespace {

runtime::CompileOptions CompileOptionsFor(const EngineOptions& options) {
  runtime::CompileOptions c;
  c.cache_dir = options.cache_dir;
  c.timeout_s = options.compile_timeout_s;
  return c;
}

// The conventional name of a signal ("SIGSEGV"): what people search for, unlike strsignal's
// localized prose.
std::string SignalName(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGTRAP: return "SIGTRAP";
    case SIGSYS: return "SIGSYS";
    case SIGXCPU: return "SIGXCPU";
    default: return "signal " + std::to_string(sig);
  }
}

std::string FormatSeconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", s);
  return buf;
}

}  // namespace

CpuEngine::CpuEngine(EngineOptions options)
    : options_(std::move(options)),
      target_(target::HostCpu()),
      compiler_(CompileOptionsFor(options_)),
      executor_(compiler_, sandbox_) {}

Result<std::unique_ptr<hlo::Module>> PrepareForLowering(const hlo::Module& module) {
  if (!module.entry()) return InvalidArgument("module has no ENTRY computation");
  // JAX wraps many functions in `call`; inlined, their ops fuse like any others.
  MK_ASSIGN_OR_RETURN(std::unique_ptr<hlo::Module> prepared, hlo::InlineCalls(module));
  // Constants dumped as `{...}` get the interpreter's values, so the generated code computes
  // what the oracle computes (real dumps such as graphsage_tf elide their embedding tables).
  interp::FillElidedConstants(*prepared);
  return prepared;
}

analysis::FusionOptions FusionOptionsFor(analysis::FusionOptions options,
                                         const target::Target& target) {
  if (target.l3_bytes > 0) options.row_reduction_min_bytes = target.l3_bytes;
  if (target.kind == target::TargetKind::kTpu) options.fuse_lane_reshapes = false;
  return options;
}

Result<LoweredModule> CpuEngine::Lower(const hlo::Module& module) {
  LoweredModule lowered;
  MK_ASSIGN_OR_RETURN(lowered.module, PrepareForLowering(module));
  MK_ASSIGN_OR_RETURN(lowered.plan, analysis::PlanFusion(*lowered.module,
                                                        FusionOptionsFor(options_.fusion, target_)));
  for (const analysis::Kernel& k : lowered.plan.kernels) {
    lowered.candidate.kernels.push_back(emitter_.SpaceFor(k, target_).Initial());
  }
  MK_ASSIGN_OR_RETURN(lowered.impl, emitter_.Emit(lowered.plan, lowered.candidate, target_));
  return lowered;
}

Result<runtime::CompiledLibrary> CpuEngine::Build(const codegen::Implementation& impl) {
  return executor_.Build(impl);
}

Result<runtime::Execution> CpuEngine::Run(const runtime::CompiledLibrary& lib,
                                          const codegen::Implementation& impl,
                                          const std::vector<hlo::Literal>& args,
                                          const runtime::ExecuteOptions& options) {
  return executor_.Run(lib, impl, args, options);
}

hlo::Literal RootValue(const hlo::Module& module, std::vector<hlo::Literal> outputs) {
  const hlo::Computation* entry = module.entry();
  if (entry && entry->root() && entry->root()->shape.is_tuple()) {
    return hlo::Literal::Tuple(std::move(outputs));
  }
  if (outputs.empty()) return hlo::Literal();
  return std::move(outputs.front());
}

std::string DescribeOutcome(const runtime::RunOutcome& outcome, double timeout_s) {
  switch (outcome.status) {
    case runtime::RunStatus::kOk: return "ok";
    case runtime::RunStatus::kCrashed:
      return "kernel crashed with signal " + SignalName(outcome.signal);
    case runtime::RunStatus::kTimedOut:
      return "timed out after " + FormatSeconds(timeout_s) + " s";
    case runtime::RunStatus::kOutOfMemory:
      return "kernel ran out of memory (signal " + SignalName(outcome.signal) + ")";
    case runtime::RunStatus::kLoadFailed:
      return "kernel library could not be loaded: " + outcome.message;
    case runtime::RunStatus::kInternalError:
      return "sandbox error: " + outcome.message;
  }
  return outcome.message;
}

}  // namespace mk::agents
