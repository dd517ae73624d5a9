// A GEMM's group norm run group by group in the GEMM's tiles (analysis/segment_epilogue.h
// says which). The kernel's GEMM epilogue stores the group norm's input tile by tile, as usual;
// the group norm's passes are emitted as a row program (one row per GEMM row and group, as a
// row-fused reduction kernel's, vector_rows.h) and run in each tile after its last K slice, for
// the groups in it, while they are in L1. The GEMM is emitted last (FunctionEmitter::EndKernel),
// when the passes' code is complete. Where the tiles do not hold whole groups (NR not a multiple
// of the group, an inner-product GEMM), the same passes run after the GEMM in one loop over the
// rows, reading the stored input back.
#pragma once

#include <optional>

#include "analysis/segment_epilogue.h"
#include "codegen/cpu/emit_context.h"

namespace mk::codegen::cpu {

// The group-norm epilogue of a contraction kernel's dot hero, if it has one: the analysis
// accepts it, and the chain from the dot to the group norm's input is a GEMM epilogue
// (gemm_epilogue.h) ending in that input.
std::optional<analysis::SegmentEpilogue> KernelSegmentEpilogue(const analysis::Kernel& kernel);

}  // namespace mk::codegen::cpu
