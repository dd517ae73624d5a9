// The AMX (Intel tile) micro-kernel of bf16-pair GEMMs (GemmParams::amx): a 32×32 f32 tile held
// in four 16×16 tile registers, updated per 32-deep k step by two A tiles × two B tiles
// (tdpbf16ps). Generated as C++ into the module prelude, with the per-thread tile setup it needs.
//
// Layouts (kpad: the K slice padded with zeros to a multiple of 32):
//   a: 32 rows, each row's kpad bf16 contiguous (a[i*kpad + k]); one A tile is 16 rows × 64 bytes
//      at stride kpad*2 bytes.
//   b: the bf16-pair sliver of 32 columns (b[(k & ~1)*32 + 2*j + (k & 1)]); its 128-byte rows
//      (one k pair) hold columns 0-15 then 16-31, so the two B tiles are the rows' two halves:
//      offsets 0 and 64 bytes, stride 128.
//
// Tiles need two things at run time: Linux must have granted the process the tile data state
// (arch_prctl ARCH_REQ_XCOMP_PERM), and the thread must have loaded a tile configuration. The
// prelude gets `bool mk_amx_begin()`, which asks for the permission once per process and loads
// the calling thread's configuration, false when tiles cannot be used (not granted, an old
// kernel, the source built without AMX, or MAXKERNEL_NO_AMX set in the environment), and
// `void mk_amx_end(bool)`, which releases the tiles. The GEMM calls them in each thread around
// its work and passes the result to the micro-kernel, which without tiles computes the same tile
// from the same layouts with vdpbf16ps (or plain loops where the source is built without it).
#pragma once

#include <string>

#include "codegen/cpu/emit_context.h"

namespace mk::codegen::cpu {

// Names of the tile setup and release functions (emitted by AmxGemmMicroKernel).
inline constexpr const char* kAmxBegin = "mk_amx_begin";
inline constexpr const char* kAmxEnd = "mk_amx_end";

// Emits (once per module) the tile setup and the micro-kernel; returns its name. Signature:
//   void NAME(int64_t kpad, const uint16_t* a, const uint16_t* b, float* c, int64_t ldc,
//             bool acc, bool tiles, const uint16_t* pf, int64_t pfl)
// The 32×32 tile is written to c[i*ldc + j] (added to what c holds with `acc`). `tiles`: what
// mk_amx_begin returned in this thread. With `prefetch_c` the C tile's cache lines are
// prefetched before the k loop. With `prefetch_next`, each 32-deep k step prefetches into L2
// `pfl` consecutive 64-byte lines from pf (pf[k*pfl] on: a run of kpad/32 * pfl lines in all),
// the caller's share of the B sliver it multiplies next; pf null: none. Without the variant,
// pf and pfl are ignored.
std::string AmxGemmMicroKernel(ModuleContext& mc, bool prefetch_c, bool prefetch_next);

}  // namespace mk::codegen::cpu
