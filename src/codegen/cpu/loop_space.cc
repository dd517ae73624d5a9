// The design space of loop and reduction kernels (read by vector_loops.cc and reduce_emit.cc).
// Every value of every domain produces correct code; the initial values are the analytical
// choice: vector-friendly innermost loops, vector partial sums for reductions.
#include "codegen/cpu/kernel_spaces.h"

#include <algorithm>

#include "codegen/cpu/vector_rows.h"

namespace mk::codegen::cpu {

namespace {

// Input elements per row (of the widest reduce) below which row_fuse starts at 0.
constexpr int64_t kMinRowFuseElements = 256;

space::ParamDomain Domain(std::string name, std::vector<int64_t> values, int64_t initial,
                          std::string doc) {
  space::ParamDomain d;
  d.name = std::move(name);
  d.values = std::move(values);
  d.initial = initial;
  d.doc = std::move(doc);
  return d;
}

// The parameters every loop nest of these kernels reads.
void AddLoopParams(space::KernelSpace& s, const analysis::Kernel& kernel,
                   const target::Target& target) {
  s.params.push_back(ThreadsParam(kernel, target));
  if (auto bits = VectorBitsParam(kernel, target)) s.params.push_back(*bits);
  s.params.push_back(Domain("vectorize", {0, 1}, 1,
                            "1: innermost loops are marked `#pragma GCC ivdep` (no alias checks "
                            "before vector code); 0: no hint"));
  s.params.push_back(Domain("unroll", {1, 2, 4}, 1,
                            "`#pragma GCC unroll N` on innermost loops (1: the compiler decides)"));
  s.params.push_back(Domain("tile_inner", {0, 1024, 4096}, 0,
                            "split the innermost loop into tiles of this many elements (0: only "
                            "when the threads need the pieces)"));
}

}  // namespace

space::KernelSpace LoopKernelSpace(const analysis::Kernel& kernel, const target::Target& target) {
  space::KernelSpace s;
  AddLoopParams(s, kernel, target);
  return s;
}

space::KernelSpace ReductionKernelSpace(const analysis::Kernel& kernel,
                                        const target::Target& target) {
  space::KernelSpace s;
  AddLoopParams(s, kernel, target);
  s.params.push_back(Domain("reduce_lanes", {1, 8, 16}, 16,
                            "partial accumulators per reduced row (1: the serial order; >1: "
                            "vector lanes when the innermost dim is reduced, blocks of "
                            "64*lanes results when it is kept)"));
  // Worth it when there are rows for every thread and each row is long enough that reading it
  // again costs more than the per-row loop: with rows of 16-64 elements (a group norm of 16
  // to 64 features per group) the fused loop was the slower one (bench --schedule, row_fuse
  // 1 -> 0: 40k 19.8 -> 14.1 ms, 45k 15.4 -> 13.6 ms, 29k 14.3 -> 13.8 ms; rows of 2048, 26k:
  // 13.2 -> 13.4 ms). A kernel that cannot be fused by rows ignores the parameter.
  int64_t rows = 1;
  const std::vector<int64_t> row_dims = RowFusionDims(kernel);
  for (int64_t d : row_dims) rows *= d;
  int64_t row_elements = 0;  // the most input elements any reduce reads per row
  for (const hlo::Instruction* inst : kernel.instructions) {
    if (inst->opcode != hlo::Opcode::kReduce || inst->operands.empty() || rows <= 0) continue;
    const hlo::Shape& in = inst->operands[0]->shape;
    if (in.is_array()) row_elements = std::max(row_elements, in.num_elements() / rows);
  }
  const bool fuse = !row_dims.empty() && rows >= 4 * std::max(1, target.cores) &&
                    row_elements >= kMinRowFuseElements;
  s.params.push_back(Domain("row_fuse", {0, 1}, fuse ? 1 : 0,
                            "1: the passes of a softmax/norm kernel run row by row inside one "
                            "loop over the rows (each row read from memory once); 0: one pass "
                            "after the other over the whole input"));
  return s;
}

}  // namespace mk::codegen::cpu
