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
};

// The block plan of `kernel` (no block sizes yet: those come from a schedule).
BlockPlan PlanBlocks(const analysis::Kernel& kernel);

// The legal block sizes of `axis`: divisors of its extent that are multiples of its alignment,
// and the whole extent; ascending.
std::vector<int64_t> LegalBlocks(const GridAxis& axis);

// The block dims of an array of `dims` under `assign`, with `blocks` per axis.
std::vector<int64_t> BlockDims(const std::vector<int64_t>& dims, const Assignment& assign,
                               const std::vector<int64_t>& blocks);

// VMEM the call holds with these blocks: every block twice (double buffering), each padded to
// whole (8,128) tiles, plus the f32 accumulator of a contraction.
int64_t VmemBytes(const BlockPlan& plan, const std::vector<int64_t>& blocks);

// The block size of each axis under `schedule` (a parameter it lacks: the axis's first legal
// block; a value that is not legal: an InvalidArgument naming it).
Result<std::vector<int64_t>> AxisBlocks(const BlockPlan& plan, const space::Schedule& schedule);

}  // namespace mk::codegen::pallas
