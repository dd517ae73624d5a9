// Flash attention as one pallas_call: the kernels an AttentionMatch replaces (q.k dot, softmax,
// p.v dot) become a grid (batch*heads, q blocks, kv blocks) with the kv axis "arbitrary", VMEM
// scratch m (running row max), l (running row sum) and acc (f32 output accumulator), the online
// softmax update per kv block and the normalization at the last kv step. Causal masks skip the
// blocks wholly above the diagonal (pl.when; their K/V index is held so nothing is copied);
// GQA reads the kv head of query head h as h // group in the index_map. Block sizes `bq`, `bkv`
// are declared space parameters obeying the (8,128) rule, the MXU side and the VMEM budget.
#pragma once

#include <string>

#include "analysis/fusion_plan.h"
#include "codegen/pallas/flash_attention.h"
#include "codegen/pallas/pallas_call.h"
#include "space/schedule.h"
#include "target/target.h"

namespace mk::codegen::pallas {

// Adds `bq` and `bkv` to `space` when `kernel` holds the p.v dot of an attention (the anchor
// kernel its flash call replaces); otherwise leaves it as it is.
void AddAttentionSpace(const analysis::Kernel& kernel, const target::Target& target,
                       space::KernelSpace& space);

// `kernel_<anchor id>(inputs...)`: glue before, the flash pallas_call, glue after; its map entry
// (runs "pallas", family "attention"). An InvalidArgument when the schedule's blocks are not in
// the declared space.
Result<KernelText> EmitAttentionKernel(const analysis::FusionPlan& plan, const PlannedAttention& pa,
                                       const space::Schedule& schedule,
                                       const target::Target& target, const Names& names);

// The map entry of a replaced kernel other than the anchor (runs "fused").
nlohmann::json FusedKernelEntry(const analysis::Kernel& k, const analysis::Kernel& anchor);

}  // namespace mk::codegen::pallas
