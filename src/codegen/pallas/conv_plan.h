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
// channels, the kernel's [taps, bk, bn] block (each double-buffered) and the f32 accumulator;
// plus the body's values (the running sum, one tap's product and one tap's input rows).
int64_t ConvVmemBytes(const BlockPlan& plan, const std::vector<int64_t>& blocks);

// Rows of one step's matmul: the block of output rows times the other output spatial dims (the
// last one as computed: geom.last_computed).
int64_t ConvBlockM(const BlockPlan& plan, const std::vector<int64_t>& blocks);
int64_t ConvRowsM(const BlockPlan& plan, int64_t rows);

// Positions per phase of the padded input image, per spatial dim, with blocks of `rows` output
// rows: the first dim holds every block's rows whole (the last block's extra rows read zeros),
// the last (of two or more) the computed positions geom.last_computed, each plus the window's
// reach.
std::vector<int64_t> ConvImageQ(const BlockPlan& plan, int64_t rows);

// The initial block of output rows: the largest of `legal` whose step matmul has at most
// `max_m` rows, else the smallest. A step's body is unrolled over its vregs by the compiler, so
// a whole image per step (the largest block) makes a body libtpu takes minutes to compile.
int64_t InitialConvRows(const BlockPlan& plan, const std::vector<int64_t>& legal, int64_t max_m);
constexpr int64_t kConvInitialMaxM = 1024;

// Window taps merged into one matmul: when the input channels are one block (`bk` = C_in, a
// single K step) narrower than the MXU's depth (`mxu_dim`), that many taps' input rows are
// concatenated along K, so that a tap of 8 channels does not cost a whole MXU pass; else 1.
int64_t ConvTapGroup(const BlockPlan& plan, const std::vector<int64_t>& blocks, int64_t mxu_dim);

// The MXU depth a step pays: each group of taps' depth padded to the MXU side.
int64_t ConvPaddedDepth(const BlockPlan& plan, const std::vector<int64_t>& blocks, int64_t mxu_dim);

}  // namespace mk::codegen::pallas
