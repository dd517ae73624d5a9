// The Python of a convolution kernel's pallas_call (an implicit GEMM, ConvGeometry in
// block_plan.h): the glue that brings its operands to the call's layout, their BlockSpecs, the
// per-step body (one MXU matmul per window tap into the f32 accumulator) and the result block
// computed from the accumulator at the last input-channel step. EmitPallasKernel (pallas_call.cc)
// writes the rest, as for a dot: the epilogue, the outputs, the call.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "codegen/pallas/block_plan.h"
#include "codegen/pallas/py_text.h"
#include "support/status.h"

namespace mk::codegen::pallas {

// Lines (in the kernel function) assigning `lhs` ([batch, phases, Q.., C_in]) and `rhs`
// ([taps, C_in, C_out]) from the convolution's operands; the image padded to ConvImageQ for the
// block of rows in `blocks`.
// With taps merged (`tap_group` > 1, ConvTapGroup) the kernel is passed as [taps x C_in, C_out].
void EmitConvOperands(std::ostringstream& fn, int indent, const BlockPlan& plan,
                      const std::vector<int64_t>& blocks, int64_t tap_group, const Names& names);

// The BlockSpecs of `lhs` and `rhs` over a grid of `num_axes` axes.
std::vector<std::string> ConvOperandSpecs(const BlockPlan& plan, const std::vector<int64_t>& blocks,
                                          int64_t tap_group, size_t num_axes);

// Body lines of every step: the accumulator zeroed at the first C_in step, then one matmul per
// window tap of the rows this step's output block reads (per group of `tap_group` taps, their
// rows concatenated along K, when it is > 1).
Status EmitConvSteps(std::ostringstream& body, int indent, const BlockPlan& plan,
                     const std::vector<int64_t>& blocks, int64_t tap_group);

// The expression of the convolution's result block from `acc_ref`, cast to `dtype` and in the
// result's dim order.
std::string ConvResultBlock(const BlockPlan& plan, const std::vector<int64_t>& blocks,
                            const std::string& dtype);

}  // namespace mk::codegen::pallas
