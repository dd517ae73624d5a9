// The declared design space of a Pallas kernel: the block size of each grid axis that has one
// ("bm", "bn", "bk" for a contraction, "block_rows" for loops and reductions), restricted to
// blocks the TPU accepts: divisors of the dimension that are multiples of the (8,128) tile where
// they land in an array's last two dims (or the whole dimension), N and K blocks whole multiples
// of the target's MXU side (or the whole dimension), and only as large as lets the
// blocks, their double buffers and the f32 accumulator fit the target's VMEM at every point of
// the space (the largest values are dropped until the largest combination fits).
#pragma once

#include <functional>
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

// The scoped VMEM limit a pallas_call asks for (`vmem_limit_bytes`; the compiler's default is
// smaller than the chip's) when the model counts `vmem` bytes: twice the count, at least 4 MiB
// over it and 16 MiB in all, at most the budget. Mosaic's own scratch is not in the count (a
// transpose that moves the lane dim relayouts through scoped buffers: 2p's [2,128,16,512] f32
// block took 67 MiB where 42 MiB were counted), and a limit only caps what a kernel may take.
int64_t ScopedVmemLimit(const target::Target& target, int64_t vmem);

KernelDecision Decide(const analysis::Kernel& kernel, const target::Target& target);

// Block domains (each ascending) cut until their largest blocks together fit `budget` by
// `vmem(blocks)`: each round drops the largest block of an axis that still has a smaller one
// (the first such axis on a tie). "" when they fit; else why even the smallest legal blocks do
// not.
std::string FitBlocksToVmem(const std::vector<std::vector<int64_t>*>& domains, int64_t budget,
                            const std::function<int64_t(const std::vector<int64_t>&)>& vmem);

// The analytical initial block of a domain (ascending): its largest value up to 512 (an
// MXU-friendly tile that keeps several grid steps for the pipeline), else its smallest.
int64_t InitialBlock(const std::vector<int64_t>& legal);

}  // namespace mk::codegen::pallas
