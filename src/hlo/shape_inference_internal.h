// Helpers shared by the shape-inference files (shape_inference*.cc). Not part of the hlo API:
// everything here reports errors as "<opcode> %<name>: <what>" at the instruction's position.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hlo/module.h"
#include "support/status.h"

namespace mk::hlo::shape_inference {

// An error at `inst`'s position, prefixed with its opcode and name.
Status Err(const Instruction& inst, const std::string& message);

std::string DimsToString(const std::vector<int64_t>& dims);  // "{1,2}"
std::string ShapeText(const Shape& shape);                    // without layout

Status ExpectOperandCount(const Instruction& inst, size_t count);
Status ExpectOperandCountAtLeast(const Instruction& inst, size_t count);

// Operand `i` when it is an array (not a tuple or token).
Result<const Shape*> ArrayOperand(const Instruction& inst, size_t i);

// Each of `dims` within [0, rank) and no value twice; `sorted` additionally requires ascending order.
Status CheckDimList(const Instruction& inst, const std::vector<int64_t>& dims, int64_t rank,
                    const std::string& what, bool sorted);
bool Contains(const std::vector<int64_t>& dims, int64_t d);

// Called computation `i` (an error when absent).
Result<const Computation*> CalledComputation(const Instruction& inst, size_t i,
                                             const std::string& role);
// Checks that `computation` takes exactly `params` (layouts ignored) and returns its root shape.
Result<Shape> CheckSignature(const Instruction& inst, const Computation& computation,
                             const std::vector<Shape>& params, const std::string& role);

// The element type of a contraction (dot, convolution): the declared one when it is a legal
// "preferred element type" for these operands (bf16 x bf16 -> f32, s8 x s8 -> s32), otherwise
// the operands' type, so that the caller reports the mismatch.
Result<DType> ContractionDType(const Instruction& inst, DType lhs, DType rhs);

// Output size of one windowed dimension (convolution, reduce-window, select-and-scatter):
// floor((dilated_base + pad_lo + pad_hi - dilated_window) / stride) + 1, or 0 when the window does
// not fit. `dim` is only used in messages.
Result<int64_t> WindowOutputSize(const Instruction& inst, int64_t base, const WindowDimension& w,
                                 size_t dim);

// Per-op groups implemented in shape_inference_indexing.cc.
Result<Shape> InferDot(const Instruction& inst);
Result<Shape> InferConvolution(const Instruction& inst);
Result<Shape> InferReduce(const Instruction& inst);
Result<Shape> InferReduceWindow(const Instruction& inst);
Result<Shape> InferSelectAndScatter(const Instruction& inst);
Result<Shape> InferGather(const Instruction& inst);
Result<Shape> InferScatter(const Instruction& inst);

}  // namespace mk::hlo::shape_inference
