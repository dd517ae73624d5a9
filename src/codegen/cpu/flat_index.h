// Whether a value's two dims can be walked as one flat index (reduce_emit.cc's strided form).
#pragma once

#include <cstdint>
#include <functional>

#include "hlo/instruction.h"

namespace mk::codegen::cpu {

// Whether `inst`'s element, as its value lambda computes it, depends on its dims e0 < e1 (every
// dim between them of size 1) only through idx[e0] * dim(e1) + idx[e1], also where idx[e1] runs
// past dim(e1). A block of whole rows of those two dims is then one run of that flat index, one
// vector loop: 46k's reduction over channels ([16,64,126,126] over dim 1, 16 rows of 126 per
// block) had a loop per row whose 14-column remainder ran in narrower vectors and scalars.
// Conservative: false wherever the lambdas are not known to index that way. `dense` says
// whether an instruction's lambda loads a dense row-major array by its linear index
// (FunctionEmitter::DensePointer): those are flat over any two adjacent dims.
bool FlatOverDims(const hlo::Instruction& inst, int64_t e0, int64_t e1,
                  const std::function<bool(const hlo::Instruction&)>& dense);

}  // namespace mk::codegen::cpu
