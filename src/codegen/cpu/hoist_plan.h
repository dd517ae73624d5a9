// Internal to the CPU emitter: which values of a kernel are computed once per call into a small
// array, before its loops, instead of once per element of the loops that read them.
//
// JAX programs derive per-head or per-channel factors from constants and iotas (a retention's
// decay log(1 - 2^(-5-h)), RoPE's inverse frequencies) and broadcast them over large arrays.
// Every value is a lambda evaluated where it is read, and the C++ compiler cannot hoist such a
// factor out of the loops over the large array: the loops store through float pointers that
// might alias the constants it loads. 15p's decay mask evaluated a log and two exps per element
// of its [4,1024,1024] mask where one exp was needed.
#pragma once

#include <vector>

#include "analysis/fusion_plan.h"
#include "hlo/instruction.h"

namespace mk::codegen::cpu {

// Ops that cost tens of cycles per element (mk_cpu_rt.h's vectorized exp/log/tanh/erf/... are
// a few dozen operations each; libm calls the compiler cannot vectorize cost more).
bool IsTranscendentalOp(hlo::Opcode op);
// Those, a division and a (reciprocal) square root.
bool IsCostlyOp(hlo::Opcode op);

// Largest value hoisted (elements), and how many times larger a value reading it must be.
inline constexpr int64_t kMaxHoistedElements = 4096;
inline constexpr int64_t kMinSpread = 8;

// The values to hoist, in topological order: elementwise values of at most
// kMaxHoistedElements elements that depend only on the kernel's inputs (through other such
// values: no reduce, dot or other loop nest of the kernel), whose computation holds a costly op,
// and that a value outside that set at least kMinSpread times larger reads (a broadcast over
// the large array). Of a chain of small values only the last one before the broadcast is
// hoisted; it computes its operands once per element of its own.
std::vector<const hlo::Instruction*> PlanHoisted(const analysis::Kernel& kernel);

}  // namespace mk::codegen::cpu
