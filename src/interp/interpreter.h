// The reference interpreter: evaluates any HLO module on concrete literals. It is the oracle
// every generated kernel is checked against, so it favours clarity and XLA-exact numerics over
// speed: ops on bf16/f16 compute in f32 and round the result (RNE); dot and convolution
// accumulate in f32 (f64 with `high_precision`). Deterministic for a given input.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "hlo/literal.h"
#include "hlo/module.h"
#include "support/status.h"

namespace mk::interp {

struct InterpreterOptions {
  // Accumulate dot/convolution (and reductions with an add reducer) in f64, not f32.
  bool high_precision = false;
  // Constants printed as `{...}` in a dump have no values. When true they are filled with
  // deterministic pseudo-random data (seeded by the instruction name), as XLA's runners do, and
  // `on_note` is told; when false such a constant is an error.
  bool fill_elided_constants = true;
  // Receives one-line notes (e.g. which constants were filled). May be empty.
  std::function<void(const std::string&)> on_note;
  // Evaluation stops with an ErrorCode::kCancelled error once `deadline` has passed or `*cancel`
  // is true. Both are checked before every instruction and inside the long loops of single ops
  // (a dot's rows, a convolution's output positions, a reduce-window's outputs), so that even
  // one huge instruction (a 4096^3 dot) or a long while loop stops promptly.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  const std::atomic<bool>* cancel = nullptr;
};

// Ok, or the kCancelled error evaluation stops with (the deadline passed or cancel was set).
Status CheckInterrupted(const InterpreterOptions& options);

// Evaluates the entry computation. `args` are the entry parameters in parameter-number order;
// their shapes must match (dtype and dims). Returns the root's value (a tuple literal when the
// root is a tuple).
Result<hlo::Literal> Evaluate(const hlo::Module& module, const std::vector<hlo::Literal>& args,
                              const InterpreterOptions& options = {});

// Evaluates one computation (used for called computations and by tests).
Result<hlo::Literal> EvaluateComputation(const hlo::Computation& computation,
                                         const std::vector<hlo::Literal>& args,
                                         const InterpreterOptions& options = {});

}  // namespace mk::interp
