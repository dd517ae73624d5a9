#include "agents/target_runner.h"

namespace mk::agents {

Result<codegen::Implementation> CpuRunner::Lower(const hlo::Module& module) {
  MK_ASSIGN_OR_RETURN(LoweredModule lowered, engine_.Lower(module));
  return std::move(lowered.impl);
}

Result<BuildOutcome> CpuRunner::Build(const codegen::Implementation& impl) {
  Result<runtime::CompiledLibrary> lib = engine_.Build(impl);
  // An unusable compile cache says nothing about the implementation: an error, not a verdict.
  if (!lib.ok() && lib.status().code() == ErrorCode::kEnvironment) return lib.status();
  BuildOutcome b;
  if (!lib.ok()) {
    b.ok = false;
    b.message = lib.status().ToString();
    return b;
  }
  b.source_path = lib->source_path;
  built_[impl.hash] = *lib;
  return b;
}

Result<RunResult> CpuRunner::Run(const codegen::Implementation& impl,
                                 const std::vector<hlo::Literal>& args, double timeout_s) {
  auto lib = built_.find(impl.hash);
  if (lib == built_.end()) return Internal("run before build of " + impl.hash);
  runtime::ExecuteOptions exec;
  exec.timeout_s = timeout_s;
  exec.poison_byte = poison_byte();
  exec.poison_scratch = true;
  MK_ASSIGN_OR_RETURN(runtime::Execution ran, engine_.Run(lib->second, impl, args, exec));
  RunResult r;
  if (!ran.outcome.ok()) {
    r.status = runtime::RunStatusName(ran.outcome.status);
    r.message = DescribeOutcome(ran.outcome, timeout_s);
    return r;
  }
  r.outputs = std::move(ran.outputs);
  return r;
}

}  // namespace mk::agents
