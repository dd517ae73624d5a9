// The block plan of a convolution kernel as an implicit GEMM (ConvGeometry in block_plan.h
// says how its operands are laid out): a grid over (batch, blocks of output rows along the
// first spatial dim, blocks of output channels, blocks of input channels), the last
// "arbitrary". Convolutions it cannot handle (grouped, window reversal, no spatial dims, an
// element type the MXU does not take) run in glue with the reason.
#pragma once

#include <vector>

#include "analysis/fusion_plan.h"
#include "codegen/pallas/block_plan.h"

namespace mk::codegen::pallas {

BlockPlan ConvolutionPlan(const analysis::Kernel& kernel);

// VMEM of the convolution's own blocks: the input image of one batch element and `bk`
// channels, the kernel's [taps, bk, bn] block (each double-buffered) and the f32 accumulator.
int64_t ConvVmemBytes(const BlockPlan& plan, const std::vector<int64_t>& blocks);

// Rows of one step's matmul: the block of output rows times the other output spatial dims.
int64_t ConvBlockM(const BlockPlan& plan, const std::vector<int64_t>& blocks);

}  // namespace mk::codegen::pallas
