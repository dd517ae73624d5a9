// A grouped GEMM (grouped_gemm.h) as one megablox-style pallas_call: the kernels it replaces (the
// per-visit gathers of row tiles and weights, the batched dot, the mask, the scatter-add) become a
// grid (N blocks, entries, K blocks). The entries are the module's visits plus one empty entry per
// output tile, sorted by output tile in jnp glue, so that every visit of a tile follows the
// previous one and the tile's f32 accumulator (VMEM scratch) stays resident until its last visit,
// and a tile no visit writes still gets the scatter's initial value. Per entry, the output tile,
// the row tile, the group (the weight block the rhs index_map selects), the visit (the mask
// block) and flags are scalar-prefetched into SMEM; the K axis and the entry axis are
// "arbitrary". Entries that compute nothing hold the previous entry's blocks, so nothing is
// copied for them. Block sizes `gmm_bn` and `gmm_bk` are declared space parameters obeying the
// (8,128) rule, the MXU side and the VMEM budget; the row tile is the module's own.
#pragma once

#include <string>

#include "analysis/fusion_plan.h"
#include "codegen/pallas/grouped_gemm.h"
#include "codegen/pallas/pallas_call.h"
#include "space/schedule.h"
#include "target/target.h"

namespace mk::codegen::pallas {

// Adds `gmm_bn` and `gmm_bk` to `space` when `kernel` holds the scatter-add of a grouped GEMM
// (the anchor its call replaces); otherwise leaves it as it is.
void AddGroupedGemmSpace(const analysis::Kernel& kernel, const target::Target& target,
                         space::KernelSpace& space);

// Why no point of the call's space fits the target (its SMEM or VMEM), or empty when one does;
// the emitter then leaves the grouped GEMM to its plan kernels.
std::string GroupedGemmDoesNotFit(const GroupedGemmMatch& m, const target::Target& target);

// `kernel_<anchor id>(inputs...)`: glue before, the grouped pallas_call, glue after; its map
// entry (runs "pallas", family "grouped_gemm"). An InvalidArgument when the schedule's blocks are
// not in the declared space.
Result<KernelText> EmitGroupedGemmKernel(const analysis::FusionPlan& plan, const PlannedGroupedGemm& pg,
                                         const space::Schedule& schedule, const target::Target& target,
                                         const Names& names);

// The map entry of a replaced kernel other than the anchor (runs "fused"): its core ops are in
// the call's body, the others (the schedule's values) in glue before it.
nlohmann::json GroupedGemmFusedEntry(const analysis::Kernel& k, const analysis::Kernel& anchor,
                                     const PlannedGroupedGemm& pg);

}  // namespace mk::codegen::pallas
