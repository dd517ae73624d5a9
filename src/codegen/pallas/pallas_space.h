// The declared design space of a Pallas kernel: the block size of each grid axis that has one
// ("bm", "bn", "bk" for a contraction, "block_rows" for loops and reductions), restricted to
// blocks the TPU accepts: divisors of the dimension that are multiples of the (8,128) tile where
// they land in an array's last two dims (or the whole dimension), N and K blocks whole multiples
// of the target's MXU side (or the whole dimension), and only as large as lets the
// blocks, their double buffers and the f32 accumulator fit the target's VMEM at every point of
// the space (the largest values are dropped until the largest combination fits).
#pragma once

#include <string>
#include <vector>

#include "analysis/fusion_plan.h"
#include "codegen/pallas/block_plan.h"
#include "space/schedule.h"
#include "target/target.h"

namespace mk::codegen::pallas {

struct KernelDecision {
  BlockPlan plan;                  // plan.pallas false: glue, for plan.glue_reason
  space::KernelSpace space;        // empty for glue
};

// VMEM the declared space may use on `target` (its vmem_bytes; 16 MiB when it names none).
int64_t VmemBudget(const target::Target& target);

KernelDecision Decide(const analysis::Kernel& kernel, const target::Target& target);

}  // namespace mk::codegen::pallas
