// A batched GEMM as a BLIS-style blocked GEMM in the generated C++: for each batch, NC-column
// panels of B and KC-deep slices of K are packed into NR-column slivers, MC-row blocks of A into
// MR-row slivers (both zero-padded to whole tiles), and the MR×NR micro-kernel
// (gemm_microkernel.h, or on AMX tiles gemm_amx.h, which takes A slivers row-major and K slices
// padded to 32) runs over every tile of the block. Operands are read while packing through
// a PackSource: for a dot_general, the operands' value lambdas (so fused transposes, converts and
// broadcasts, batch dims and any number of free and contracting dims cost nothing in the inner
// loop); for a convolution (conv_gemm.h), the im2col elements gathered from the input's lambda
// on the fly (an implicit GEMM). Edge tiles go through a small tile buffer, of which only the
// valid part is written back; a bf16/f16 result is rounded once, from f32 sums. OpenMP threads
// split the work as GemmParams::split says (gemm_params.h). An operand in memory may skip its
// packing: B with contiguous columns (pack_b off) or an f32 A contiguous along K (pack_a off)
// is read in place by the micro-kernel at its own stride, only a partial last sliver packed.
// For a small N, the inner-product form (GemmParams::inner) replaces all of this: A's rows in
// place, B packed transposed, one horizontal sum per result.
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "codegen/cpu/emit_context.h"
#include "codegen/cpu/gemm_params.h"

namespace mk::codegen::cpu {

using IndexExprs = std::vector<std::string>;

// One packed element: `value` (an expression in the operand's compute type) where `valid` holds
// ("" = everywhere), 0 elsewhere (padding, dilation holes). `value` is only evaluated where valid.
struct PackElement {
  std::string value;
  std::string valid;
};

// A statement storing `value` (compute type, or the literal "0") at lane `lane` of the k row
// being packed, or (for PackSource::column) at k `lane` of the lane being packed; conversion to
// the packed type and bf16-pair placement included.
using LaneStore = std::function<std::string(const std::string& lane, const std::string& value)>;

// One operand's side of the GEMM. A sliver has MR lanes over M (A) or NR lanes over N (B); the
// emitter decomposes the lane index over DotGeometry's m_dims / n_dims, the k index over k_dims
// and the batch index over batch_dims, and asks the source for the element at those indices.
struct PackSource {
  // The lanes run along the operand's minor-most dim: pack k-outer, lanes-inner (reads stream).
  bool lanes_inner = false;
  // The element at batch index `b`, lane index `lane` and k index `k` (pure expressions).
  std::function<PackElement(const IndexExprs& b, const IndexExprs& lane, const IndexExprs& k)>
      element;
  // Optional (lanes-inner packing): emits into `o`, at `indent`, the stores of one k row's lanes
  // [0, count), lane 0 being linear lane index `first`, so the source can hoist index arithmetic
  // out of the lane loop. Without it the emitter loops over the lanes calling `element`.
  std::function<void(std::ostream& o, const std::string& indent, const IndexExprs& b,
                     const std::string& first, const std::string& count, const IndexExprs& k,
                     const LaneStore& store)>
      row;
  // Optional (k-inner packing): emits into `o`, at `indent`, the stores of one lane's elements
  // for the k slice [first, first + count) at lane index `lane`; `store` takes k relative to
  // `first`. Without it the emitter loops over k calling `element`.
  std::function<void(std::ostream& o, const std::string& indent, const IndexExprs& b,
                     const IndexExprs& lane, const std::string& first, const std::string& count,
                     const LaneStore& store)>
      column;
  // Optional (f32 or bf16 operands in memory with one lane dim and one k dim): a pointer
  // expression to the element (of type `dtype`) at batch index `b`, lane index `lane` and k
  // index `k`, and the distances in elements between consecutive lanes and consecutive k. When
  // one of them is 1 the emitter packs with gemm_pack.h's helpers instead of element by element.
  std::function<std::string(const IndexExprs& b, const std::string& lane, const std::string& k)>
      address;
  int64_t lane_stride = 0, k_stride = 0;
  hlo::DType dtype = hlo::DType::kF32;
};

// Code run on each tile after its last K slice, while the tile is in L1 (gemm_epilogue.h). For
// every element of the tile the emitter binds the result's index variables i0..i{rank-1}
// (`dims`, the GEMM's result row-major: leading dims spanning [batch][M], trailing ones N),
// `gm_e` (the element's linear index) and `gm_dv` (the GEMM's element, rounded to its type, in
// compute type), then runs `steps`, which store what they compute from them.
struct TileEpilogue {
  std::vector<int64_t> dims;
  // The per-element statements, the last one the store (empty: no per-element pass), and the
  // locals they define: the emitter may interleave two copies of them, one per tile row.
  std::vector<std::string> steps, locals;
  // Row reductions (gemm_row_reduce.h): `region` runs once per thread where its GEMM work
  // begins; `row(NR)` (if set) once per tile row before `steps`, with the row's index
  // variables, `gm_row` (its linear index over [batch][M]), `gm_rowp` (its tile values,
  // columns gm_j .. gm_j + gm_nv - 1 at gm_rowp[0 .. gm_nv - 1]) and `gm_j`, `gm_nv` bound.
  std::string region;
  std::function<std::string(int64_t nr)> row;
  // `gm_dv` comes from the thread's tile buffer, right after the micro-kernel wrote the tile, and
  // the GEMM's result is never stored: it has one K slice (K <= KC, so every tile is final when
  // the micro-kernel returns), an f32 result (read unrounded), and no buffer of its own (the
  // epilogue's root has another type). Set by EmitGemmValue.
  bool from_tile = false;
  // A group norm's passes (gemm_segment.h): `segment_code` runs once per group of `segment`
  // columns in the tile, after `steps` stored the tile's values, with the passes' row indices
  // i0.. over `segment_rows` bound (row gm_row * segment_groups + the group). Only where every
  // tile holds whole groups (NR a multiple of `segment`); the GEMM then sets *segment_done,
  // and otherwise leaves the passes to the caller.
  int64_t segment = 0;
  int64_t segment_groups = 1;
  std::vector<int64_t> segment_rows;
  std::string segment_code;
  bool* segment_done = nullptr;
};

// Declares i{first}..i{last-1}, the multi-index of linear index `var` over dims[first, last)
// (the first one unreduced: `var` is in range).
void EmitIndexVars(std::ostream& o, const std::string& in, const std::string& var,
                   const std::vector<int64_t>& dims, size_t first, size_t last);

// How many leading `dims` span the GEMM's rows (batch × M) when the rest span exactly its N,
// else -1 (no tile epilogue possible).
int64_t TileRowDims(const std::vector<int64_t>& dims, const DotGeometry& g);

// The sources of a dot_general's operands: A = lhs (lanes over its free dims), B = rhs.
PackSource DotLhsSource(FunctionEmitter& f, const hlo::Instruction& dot, const DotGeometry& g);
PackSource DotRhsSource(FunctionEmitter& f, const hlo::Instruction& dot, const DotGeometry& g);

// Emits the blocked GEMM computing `inst` (a dot or a convolution, for messages and the output
// type) into `ptr` (typed pointer to its row-major [batch][M][N] storage) from sources `a`, `b`.
// `p` must come from ResolveGemmParams for `g` (p.blocked).
// With `epilogue`, each finished tile then runs it.
Status EmitBlockedGemm(FunctionEmitter& f, const hlo::Instruction& inst, const DotGeometry& g,
                       const GemmParams& p, const PackSource& a, const PackSource& b,
                       const std::string& ptr, const TileEpilogue* epilogue = nullptr);

// `inst` (a dot or convolution) as a blocked GEMM from sources `a`, `b`, defining its value
// lambda: into its storage, or, when it is the hero of the kernel's fused epilogue
// (f.gemm_epilogue()), deferred until the epilogue's root is emitted (FunctionEmitter::DeferGemm)
// and then into the root's buffer (in place) or a scratch buffer.
Status EmitGemmValue(FunctionEmitter& f, const hlo::Instruction& inst, const DotGeometry& g,
                     const GemmParams& p, PackSource a, PackSource b);

// The dot_general `dot` as a blocked GEMM (its operands through DotLhsSource / DotRhsSource).
Status EmitBlockedGemm(FunctionEmitter& f, const hlo::Instruction& dot, const DotGeometry& g,
                       const GemmParams& p, const std::string& ptr,
                       const TileEpilogue* epilogue = nullptr);

}  // namespace mk::codegen::cpu
