// The elementwise epilogue of a contraction kernel's GEMM, fused into the GEMM's tile write-back.
// Without it the GEMM stores its whole result, and a second loop nest reads it back from memory
// to apply bias, scale, activation ... and store the kernel's output. With it, each tile's
// epilogue runs as soon as the tile's last K slice is done, while the tile is in L1, and
// (when the output has the GEMM's element type) writes over the accumulators in place, so the
// result is stored once.
#pragma once

#include <optional>
#include <set>

#include "analysis/fusion_plan.h"

namespace mk::codegen::cpu {

struct GemmEpilogue {
  const hlo::Instruction* dot = nullptr;   // the kernel's hero (a dot or a convolution)
  const hlo::Instruction* root = nullptr;  // the kernel output the epilogue stores
  // The epilogue's ops: every op of the kernel that reads the dot, or another of these ops,
  // root included. Each is elementwise at its own index, of the dot's dims.
  std::set<const hlo::Instruction*> ops;
  // root has the dot's element type: the GEMM accumulates in root's output buffer, and the
  // epilogue replaces each element with root's value (no separate buffer for the dot).
  bool in_place = false;
};

// The epilogue of `kernel`'s hero when it has one that can be fused: the hero is a dot_general
// or a convolution, it is not itself a kernel output, and what reads it is a chain of
// same-index elementwise ops of its dims ending in exactly one kernel output (which later ops
// may read; no other op of the chain is read outside it). The emitter fuses it where the hero
// is a blocked GEMM whose result splits into rows and N (gemm_emitter.h's TileRowDims).
std::optional<GemmEpilogue> PlanGemmEpilogue(const analysis::Kernel& kernel);
// The same with `stored` (a value of the kernel read by later ops) taken as the output the
// epilogue ends in: a group norm's input, stored for its passes (gemm_segment.h).
std::optional<GemmEpilogue> PlanGemmEpilogue(const analysis::Kernel& kernel,
                                             const hlo::Instruction* stored);

// The epilogue reads an f32 GEMM result that it stores as another type (8p: rounded to bf16).
// With one K slice the result then needs no buffer: each tile goes from the micro-kernel to the
// epilogue through the tile buffer (gemm_emitter.h's TileEpilogue::from_tile).
bool ReadsUnroundedResult(const GemmEpilogue& e);

}  // namespace mk::codegen::cpu
