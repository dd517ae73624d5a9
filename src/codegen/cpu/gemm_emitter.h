// A dot_general as a BLIS-style blocked GEMM in the generated C++: for each batch, NC-column
// panels of B and KC-deep slices of K are packed into NR-column slivers, MC-row blocks of A into
// MR-row slivers (both zero-padded to whole tiles), and the MR×NR micro-kernel
// (gemm_microkernel.h) runs over every tile of the block. Operands are read through their value
// lambdas while packing, so fused transposes, converts and broadcasts, batch dims and any number
// of free and contracting dims cost nothing in the inner loop. Edge tiles go through a small
// tile buffer, of which only the valid part is written back; a bf16/f16 result is rounded once,
// from f32 sums. OpenMP threads split the work as GemmParams::split says (gemm_params.h).
#pragma once

#include <string>

#include "codegen/cpu/emit_context.h"
#include "codegen/cpu/gemm_params.h"

namespace mk::codegen::cpu {

// Emits the blocked GEMM computing `dot` into `ptr` (typed pointer to its row-major storage).
// `p` must come from ResolveGemmParams for `g` (p.blocked).
Status EmitBlockedGemm(FunctionEmitter& f, const hlo::Instruction& dot, const DotGeometry& g,
                       const GemmParams& p, const std::string& ptr);

}  // namespace mk::codegen::cpu
