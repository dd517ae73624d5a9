// Builds a CPU Implementation and runs it on literals in the sandbox: the bridge between
// generated code and everything that checks or times it (tester, profiler, `eval --engine cpu`).
#pragma once

#include <vector>

#include "codegen/emitter.h"
#include "hlo/literal.h"
#include "runtime/compiler.h"
#include "runtime/sandbox.h"

namespace mk::runtime {

struct ExecuteOptions {
  int warmup = 0;
  int min_iterations = 1;
  double min_seconds = 0;
  double timeout_s = 120;
  uint8_t poison_byte = 0xFF;  // outputs are filled with this before every run (NaN for floats)
  bool poison_scratch = false;  // the kernel's temporaries too (0xFF), as they are handed out
  size_t memory_limit_bytes = 0;
};

struct Execution {
  RunOutcome outcome;                // ok, crashed, timed-out ... (outputs only when ok)
  std::vector<hlo::Literal> outputs;  // one per output buffer slot
};

class CpuExecutor {
 public:
  CpuExecutor(CompilerDriver& compiler, SandboxRunner& sandbox)
      : compiler_(compiler), sandbox_(sandbox) {}

  Result<CompiledLibrary> Build(const codegen::Implementation& impl);
  // `args` are the entry parameters in order; their shapes must match the implementation's.
  Result<Execution> Run(const CompiledLibrary& lib, const codegen::Implementation& impl,
                        const std::vector<hlo::Literal>& args, const ExecuteOptions& options = {});

 private:
  CompilerDriver& compiler_;
  SandboxRunner& sandbox_;
};

}  // namespace mk::runtime
