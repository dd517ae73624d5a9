// Packing f32 and bf16 operands that sit in memory (gemm_emitter.h's PackSource::address).
//  - Lanes are rows of the source (an A operand [M][K], or a B operand stored [N][K]): the
//    packed sliver (lane r of k row k at dst[k*W + r]) is the transpose of the source. Element
//    by element that is a strided store per element and stayed scalar: 6% of a 2048³ GEMM for
//    A alone. mk_pack_rows_f32 loads 16 k of up to 16 rows as vectors and transposes them in
//    registers (AVX-512), with a plain loop for the rest and for other targets.
//  - Lanes are contiguous (B [K][N]): mk_pack_panel_f32 copies a whole panel k row by k row.
//  - bf16: the AMX A sliver (each row's K slice contiguous) is a row copy, mk_pack_rows_bf16;
//    a lanes-contiguous B panel in bf16 pairs is interleaved k row pair by pair,
//    mk_pack_panel_pairs_bf16.
#pragma once

#include <string>

#include "codegen/cpu/emit_context.h"

namespace mk::codegen::cpu {

// Emits (once per module) `void mk_pack_rows_f32(const float* src, int64_t ld, int64_t rows,
// int64_t kc, float* dst, int64_t width)`: row r < rows of the source starts at src + r*ld;
// for k < kc, dst[k*width + r] = src[r*ld + k] for r < rows and 0 for rows <= r < width.
// Returns its name.
std::string RowPackFunction(ModuleContext& mc);

// Emits (once per module) `void mk_pack_panel_f32(const float* src, int64_t ld, int64_t lanes,
// int64_t kc, float* dst, int64_t width)` for the other layout, lanes contiguous (a B operand
// [K][N]): lane n of k row k is src[k*ld + n]; lanes [0, lanes) go to consecutive slivers of
// `width` lanes (sliver q at dst + q*width*kc, element (k, r) at k*width + r), the last one
// zero-padded. Returns its name.
std::string PanelPackFunction(ModuleContext& mc);

// Emits (once per module) `void mk_pack_rows_bf16(const uint16_t* src, int64_t ld, int64_t
// rows, int64_t kc, int64_t kpad, uint16_t* dst, int64_t width)`: the lane-major sliver (the AMX
// A sliver) dst[r*kpad + k] = src[r*ld + k] for r < rows and k < kc, 0 elsewhere (k < kpad,
// r < width). Returns its name.
std::string RowPackBf16Function(ModuleContext& mc);

// Emits (once per module) `void mk_pack_panel_pairs_bf16(const uint16_t* src, int64_t ld,
// int64_t lanes, int64_t kc, int64_t kpad, uint16_t* dst, int64_t width)`: lane n of k row k is
// src[k*ld + n]; lanes [0, lanes) go to consecutive pair slivers of `width` lanes (sliver q at
// dst + q*width*kpad, element (k, r) at (k & ~1)*width + 2*r + (k & 1)), zero past `lanes` and
// for kc <= k < kpad (kpad even). Returns its name.
std::string PairsPanelPackFunction(ModuleContext& mc);

}  // namespace mk::codegen::cpu
