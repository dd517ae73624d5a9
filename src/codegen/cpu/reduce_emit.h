// Internal to the CPU emitter: the vector forms of a single-input reduce (materialize.cc keeps
// the serial form: one accumulator per result element, inputs combined in row-major order).
//
//   strided  the innermost input dimension is kept: a block of neighbouring results is
//            accumulated together, the reduced dimensions in the outer loops and the block in the
//            innermost (unit-stride, vectorized) loop. Every result still combines its inputs in
//            the serial order, so the results are bit-identical to the serial form, whatever the
//            combiner.
//   lanes    the innermost input dimension is reduced and the combiner is associative (add,
//            multiply, maximum, minimum, and, or on a plain type): `reduce_lanes` independent
//            partial accumulators take every lane-th input of a row (one vector register), and
//            are combined pairwise at the end, then with the init value. This changes the order
//            of a float sum (within the tasks' tolerances), not its inputs.
//
// Variadic reduces (argmax) and other combiners keep the serial form.
#pragma once

#include <optional>
#include <string>

#include "codegen/cpu/emit_context.h"

namespace mk::codegen::cpu {

// A to_apply computation that is one associative, commutative binary op of its two scalar
// parameters.
struct Combiner {
  hlo::Opcode op;
  hlo::DType dtype;
};
std::optional<Combiner> AssociativeCombiner(const hlo::Computation& comp);

// The identity of `c` (x op identity == x, bit for bit) as a C++ expression of its compute type;
// nullopt if the combiner has none this emitter knows.
std::optional<std::string> CombinerIdentity(const Combiner& c);

// Emits reduce `inst` (one input, one init value) into `ptr` in a vector form when the
// schedule's `reduce_lanes` is above 1 and a form applies; `fn` is the scalar combiner function.
// Returns false, having emitted nothing, when the serial form must be used.
Result<bool> EmitVectorReduce(FunctionEmitter& f, const hlo::Instruction& inst,
                              const std::string& fn, const std::string& ptr);

}  // namespace mk::codegen::cpu
