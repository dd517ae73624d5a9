// A TPU target for the tester and the profiler: the Pallas emitter's module (kernel.py) run in
// Pallas TPU interpret mode on this CPU (races and out-of-bounds block reads are failures),
// built by the real TPU compiler in compile-only mode (libtpu: Mosaic and XLA:TPU refuse what a
// TPU would), and timed by the TPU performance model (target/tpu_perf_model.h). No TPU measured
// anything here: every time it gives is "modelled".
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agents/target_runner.h"
#include "analysis/fusion_plan.h"
#include "space/schedule.h"
#include "target/target.h"

namespace mk::agents {

struct TpuModelledKernel {
  std::string name;
  std::string runs;       // "pallas" or "glue"
  std::string reason;     // for glue: why it is not a pallas_call
  double modelled_s = 0;  // pallas: the model; glue: its roofline at the chip's peaks
  std::string bound;      // "mxu", "hbm", ... or "roofline" for glue
  // The kernel's HLO instructions by where they run: inside the pallas_call, or in XLA glue
  // (a glue kernel's, and a Pallas kernel's operand producers computed before the call).
  std::vector<std::string> ops_in_pallas, ops_in_glue;
};

struct TpuModelledTime {
  double seconds = 0;  // the sum over kernels (they run one after another)
  int pallas_kernels = 0, glue_kernels = 0;
  std::vector<TpuModelledKernel> kernels;
};
nlohmann::json ToJson(const TpuModelledTime& t);

// The modelled time of an implementation the Pallas emitter made (its kernel_map.json), with the
// model's constants fitted for the generation where a fit exists. Glue kernels are bounded by
// their FLOPs and bytes at the chip's peaks (XLA:TPU runs them; nothing models them closer).
Result<TpuModelledTime> ModelTpuImplementation(const codegen::Implementation& impl,
                                               const target::Target& tpu);

// What a crashed TPU compiler printed, for a diagnosis: its fatal log lines (glog's "F1207 ...",
// a failed CHECK) when there are any, else its last `lines` non-empty lines; joined by " | "
// after ": ", or "" when it printed nothing.
std::string CompilerCrashSummary(const std::string& stderr_text, size_t lines);

// The per-kernel compile's report (`pallas-compile --per-kernel`, read from its stderr marks so
// that a crash does not lose it): one line naming each kernel function the compiler refused,
// with its error kind, first line and the Mosaic operation involved, and the kernel a crash
// stopped in; "" when none failed. `kernels` gets every kernel's result.
std::string KernelFailures(const std::string& bridge_stderr, nlohmann::json* kernels);

// The source file `name` of an implementation ("kernel.py", "kernel_map.json").
Result<std::string> SourceNamed(const codegen::Implementation& impl, const std::string& name);

// XLA:TPU's own estimate of a task's reference (`python -m maxkernel_jax tpu-xla-cost`): the
// bridge's JSON ({"ok", "cost": {"optimal_seconds", ...}} or {"ok": false, "error"}), or
// {"error": why} when the bridge itself failed.
nlohmann::json XlaTpuEstimate(const std::string& task_dir, const target::Target& tpu);

// A module planned for a TPU target: its prepared copy (the plan points into it), the fusion
// plan, and the Pallas emitter's initial candidate. TpuRunner::Lower and the glue fallback
// (tpu_fallback.h) start from it.
struct TpuPlanned {
  std::unique_ptr<hlo::Module> prepared;
  analysis::FusionPlan plan;
  space::Candidate initial;
};
Result<TpuPlanned> PlanForTpu(const hlo::Module& module, const target::Target& tpu);

class TpuRunner final : public TargetRunner {
 public:
  explicit TpuRunner(target::Target tpu);
  std::string target_name() const override { return tpu_.name; }
  Result<codegen::Implementation> Lower(const hlo::Module& module) override;
  // libtpu compile-only; without libtpu the toolchain is unusable: an Environment error. The
  // last build is remembered by the implementation's hash: the tester's build of a module the
  // fallback (tpu_fallback.h) already built costs nothing.
  Result<BuildOutcome> Build(const codegen::Implementation& impl) override;
  Result<RunResult> Run(const codegen::Implementation& impl, const std::vector<hlo::Literal>& args,
                        double timeout_s) override;
  // Interpret mode fills every buffer with NaN itself; there is no byte to poison with.
  uint8_t poison_byte() const override { return 0; }
  const target::Target& target() const { return tpu_; }
  // The last Build's compiler report (XLA:TPU's cost and memory analysis).
  const nlohmann::json& last_compile() const { return last_compile_; }
  // How many times Build ran the compiler (a build remembered by hash does not).
  int compiles() const { return compiles_; }

 private:
  // After a failed compile: each kernel compiled alone, and which ones fail (KernelFailures),
  // as "; compiled kernel by kernel, ..." for the diagnosis, or "".
  std::string DiagnoseKernels(const std::string& module_path, const std::string& generation,
                              nlohmann::json* kernels);

  Result<BuildOutcome> Compile(const codegen::Implementation& impl);

  target::Target tpu_;
  nlohmann::json last_compile_;
  std::string last_hash_;  // the implementation last_outcome_ and last_compile_ belong to
  BuildOutcome last_outcome_;
  int compiles_ = 0;
};

}  // namespace mk::agents
