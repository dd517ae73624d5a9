// What the tester needs of a target: lower a module, build the implementation (a compiler that
// may refuse it), and run it on inputs. The CPU runs the .so in the sandbox (CpuRunner, over
// CpuEngine); a TPU target runs the emitted Pallas module in TPU interpret mode and builds it
// with the real TPU compiler, compile-only (tpu_runner.h). The tester's verdicts (inputs,
// oracle, comparison) are the same for every target.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "agents/engine.h"
#include "codegen/emitter.h"
#include "hlo/literal.h"
#include "hlo/module.h"
#include "support/status.h"

namespace mk::agents {

struct BuildOutcome {
  bool ok = true;
  std::string message;      // the compiler's refusal ("build-failed")
  std::string source_path;  // where the built source is kept, if anywhere
};

struct RunResult {
  // "passed" when it ran to the end; else the tester's seed status: "crashed", "timed-out",
  // "out-of-memory", "load-failed", "race", "out-of-bounds", "internal-error".
  std::string status = "passed";
  std::string message;
  std::vector<hlo::Literal> outputs;  // the module's outputs, in order, when it ran
  bool ok() const { return status == "passed"; }
};

class TargetRunner {
 public:
  virtual ~TargetRunner() = default;
  virtual std::string target_name() const = 0;
  // An op the target's emitter cannot lower is an error (Unimplemented, naming it).
  virtual Result<codegen::Implementation> Lower(const hlo::Module& module) = 0;
  // An error only when the toolchain itself is unusable (ErrorCode::kEnvironment); a compiler
  // that refuses the implementation is an outcome.
  virtual Result<BuildOutcome> Build(const codegen::Implementation& impl) = 0;
  // The implementation as last built by Build.
  virtual Result<RunResult> Run(const codegen::Implementation& impl,
                                const std::vector<hlo::Literal>& args, double timeout_s) = 0;
  // The byte every output is filled with before a run, so an unwritten output is caught
  // (0 where the target poisons its own way, as interpret mode's NaN-filled buffers do).
  virtual uint8_t poison_byte() const { return 0xFF; }
};

// The CPU: CpuEngine's compile and sandboxed run.
class CpuRunner final : public TargetRunner {
 public:
  explicit CpuRunner(CpuEngine& engine) : engine_(engine) {}
  std::string target_name() const override { return engine_.target().name; }
  Result<codegen::Implementation> Lower(const hlo::Module& module) override;
  Result<BuildOutcome> Build(const codegen::Implementation& impl) override;
  Result<RunResult> Run(const codegen::Implementation& impl, const std::vector<hlo::Literal>& args,
                        double timeout_s) override;

 private:
  CpuEngine& engine_;
  std::map<std::string, runtime::CompiledLibrary> built_;  // by implementation hash
};

}  // namespace mk::agents
