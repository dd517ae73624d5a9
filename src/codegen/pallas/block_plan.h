// How one plan kernel maps onto a pallas_call: its grid axes, which dimension of every value
// each axis blocks (the "assignment"), which instructions run in the body and which in jnp glue
// before the call, and the TPU rules a block size must meet. Shared by SpaceFor (the declared
// block domains are legal by construction) and Emit (which writes exactly this plan).
//
// Assignments are found backward from the kernel's outputs: an output is blocked along its
// leading dimension (loops, reductions) or like the dot's result (contractions), and each op
// says which of its operands' dimensions follow (elementwise: the same; broadcast, transpose,
// reduce: mapped; slice, concatenate, pad, reverse: only along dimensions kept whole). A value
// needed as two different blocks, or an op with no blocked form, is a conflict: the kernel then
// runs as one whole-array block, or in glue when that does not fit VMEM (with the reason).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "analysis/fusion_plan.h"
#include "space/schedule.h"
#include "support/status.h"

namespace mk::codegen::pallas {

// Per dimension of an array: the grid axis that blocks it, or -1 for the whole dimension.
using Assignment = std::vector<int>;

struct GridAxis {
  std::string param;        // the schedule parameter that sizes its block; empty: block of 1
  int64_t extent = 1;       // elements along it
  int64_t align = 1;        // a block must be a multiple of this, or the whole extent
  bool arbitrary = false;   // "arbitrary" semantics (a contraction's K); else "parallel"
  // Blocks need not divide the extent: the grid has ceil(extent / block) steps and the last
  // block is partial (Pallas drops its out-of-range writes). Only where the body never reads
  // past the arrays for it (a convolution's output rows: its input image is padded to whole
  // blocks in glue).
  bool ragged = false;
};

// A convolution as an implicit GEMM (conv_plan.cc). The input is brought, in glue, to
// [batch, phases, Q_0.., C_in]: transposed to [batch, spatial.., C_in], padded (with interior
// padding for an lhs dilation) and split into its stride phases (element j*s+p of a spatial dim
// goes to phase p, position j), so that every window tap reads a contiguous run of rows of one
// phase. The kernel goes to [taps, C_in, C_out]. Each grid step multiplies, for every tap, the
// input rows it reads ([rows x the other output spatial dims, bk]) by the tap's [bk, bn] slice
// of the kernel into one f32 accumulator.
struct ConvGeometry {
  std::vector<int64_t> in_perm;      // input dims in [batch, spatial.., feature] order
  std::vector<int64_t> kernel_perm;  // kernel dims in [spatial.., in feature, out feature] order
  std::vector<int64_t> pad_low, pad_high, interior;  // per spatial dim (high: to Q*stride)
  std::vector<int64_t> stride, dilation, window;     // per spatial dim
  std::vector<int64_t> q;            // per spatial dim: positions per phase
  std::vector<int64_t> out_spatial;  // per spatial dim: output extent
  int64_t batch = 1, in_features = 1, out_features = 1, phases = 1, taps = 1;
  std::vector<int64_t> out_perm;     // [1, out spatial.., C_out] block -> the result's dim order
  // Output positions computed along the last spatial dim when there are two or more: the
  // extent rounded up to a whole sublane tile, so that a tap's [rows, .., W, bk] slice merges
  // into the matmul's [M, bk] without a relayout (the extra positions read padding and are
  // dropped from the result block).
  int64_t last_computed = 1;
};

struct BlockPlan {
  bool pallas = false;      // false: the whole kernel runs as jnp glue, for `glue_reason`
  std::string glue_reason;
  std::vector<GridAxis> axes;  // in grid order
  // Contraction: the hero dot, its operands' canonical layout and the M/N/K axes.
  const hlo::Instruction* dot = nullptr;
  std::vector<int64_t> lhs_perm, rhs_perm;  // transposes to [batch, free, K] / [batch, K, free]
  std::vector<int64_t> lhs_canon, rhs_canon;  // canonical dims (contracting dims merged)
  int64_t lhs_squeezed = 0, rhs_squeezed = 0;  // leading dims of block 1 (squeezed away)
  int axis_m = -1, axis_n = -1, axis_k = -1;
  // Convolution: the hero convolution (its operands are the call's first two, like a dot's;
  // axis_m blocks the first output spatial dim, axis_n C_out, axis_k C_in).
  const hlo::Instruction* conv = nullptr;
  ConvGeometry geom;
  // What the call passes for each dot operand, and the converts the body applies to its block
  // (a producer chain the plan fused: converts of an input, used by nothing else), in order.
  const hlo::Instruction* lhs_source = nullptr;
  const hlo::Instruction* rhs_source = nullptr;
  std::vector<const hlo::Instruction*> lhs_chain, rhs_chain;
  // Instructions computed in glue before the call (a dot's operand producers), in order.
  std::vector<const hlo::Instruction*> glue_before;
  // Instructions computed in the body, in order (a contraction's dot among them).
  std::vector<const hlo::Instruction*> body;
  // The call's blocked operands besides a dot's two (kernel inputs, array constants, glue
  // values), and its outputs, each with its assignment.
  std::vector<const hlo::Instruction*> call_inputs;
  std::vector<const hlo::Instruction*> call_outputs;
  std::map<const hlo::Instruction*, Assignment> assign;
  // A call input or output passed with other dims than its HLO shape: a grid axis of block 1
  // (a batch dim) that would land in its last two dims, where the (8,128) rule forbids a block
  // of 1, gets unit dims inserted after it (reshaped in glue around the call, and back to the
  // block's HLO dims in the body). Absent: passed as it is.
  struct Layout {
    std::vector<int64_t> dims;
    Assignment assign;
  };
  std::map<const hlo::Instruction*, Layout> call_layout;
};

// The dims and assignment `v` (a call input or output) is passed to the call with.
const std::vector<int64_t>& CallDims(const BlockPlan& plan, const hlo::Instruction* v);
const Assignment& CallAssign(const BlockPlan& plan, const hlo::Instruction* v);

// The block plan of `kernel` (no block sizes yet: those come from a schedule).
BlockPlan PlanBlocks(const analysis::Kernel& kernel);

// The building blocks of a plan, shared by the contraction plans (block_plan.cc, conv_plan.cc).
// A plan that runs in glue for `why`.
BlockPlan Glue(const std::string& why);
// Whether a pallas_call body may compute `inst` (not a dot, convolution, gather, ...).
bool BodyOp(const hlo::Instruction& inst);
bool IsArrayConstant(const hlo::Instruction& i);
// Members of a kernel (`members`) that `inst` depends on, itself included.
std::set<const hlo::Instruction*> Ancestors(const hlo::Instruction* inst,
                                            const std::set<const hlo::Instruction*>& members);
// Fills plan.assign backward from the outputs' assignments; values from outside `in_body`
// become call inputs. Returns the conflict, or empty.
std::string Propagate(BlockPlan& plan, const std::set<const hlo::Instruction*>& in_body);
// Sets every axis's alignment from the arrays' last two dims (and the MXU operands'); returns
// the error when an axis of block 1 lands there, or empty.
std::string Align(BlockPlan& plan);
// Empty when every output is blocked along every parallel axis; else which is not.
std::string CheckOutputsCoverAxes(const BlockPlan& plan);
// Bytes of one block in VMEM, its last two dims padded to whole (8,128) tiles.
int64_t TiledBytes(std::vector<int64_t> block, int64_t elem_bytes);

// The legal block sizes of `axis`: divisors of its extent that are multiples of its alignment
// (every multiple below the extent for a ragged axis), and the whole extent; ascending.
std::vector<int64_t> LegalBlocks(const GridAxis& axis);

// The block dims of an array of `dims` under `assign`, with `blocks` per axis.
std::vector<int64_t> BlockDims(const std::vector<int64_t>& dims, const Assignment& assign,
                               const std::vector<int64_t>& blocks);

// VMEM the call holds with these blocks: every block twice (double buffering), each padded to
// whole (8,128) tiles, plus the f32 accumulator of a contraction, plus the most the body's own
// values (each at its block's size, from its definition to its last use) hold at once.
int64_t VmemBytes(const BlockPlan& plan, const std::vector<int64_t>& blocks);

// Grid steps along `axis` with blocks of `block`: ceil(extent / block).
int64_t AxisSteps(const GridAxis& axis, int64_t block);

// The block size of each axis under `schedule` (a parameter it lacks: the axis's first legal
// block; a value that is not legal: an InvalidArgument naming it).
Result<std::vector<int64_t>> AxisBlocks(const BlockPlan& plan, const space::Schedule& schedule);

}  // namespace mk::codegen::pallas
