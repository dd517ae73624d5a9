// The GEMM micro-kernel: an MR×NR register tile of f32 accumulators updated over KC packed
// steps, generated as C++ with SIMD intrinsics (AVX-512, an AVX2 fallback and a scalar one,
// chosen by the preprocessor in the generated source). Emitted once per module per shape into
// the prelude, so every dot with the same tile shares it.
#pragma once

#include <cstdint>
#include <string>

#include "codegen/cpu/emit_context.h"

namespace mk::codegen::cpu {

// One register micro-kernel's shape and variant.
struct MicroKernelSpec {
  bool bf16_pairs = false;
  int64_t mr = 0, nr = 0;  // the register tile: MR rows x NR columns
  int64_t unroll_k = 4;
  bool prefetch_c = true;
  int64_t prefetch_ab = 0;
  bool strided_b = false, bf16_b = false, strided_a = false;
  // Lanes per k step of the packed A sliver (0: mr). A tile of the last M % MR rows reads the
  // first mr lanes of an MR-wide sliver, so that it multiplies only the rows that exist.
  int64_t a_width = 0;
};

// Signature of the returned function (f32 panels):
//   void NAME(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, bool acc)
// and with `bf16_pairs` (panels of bf16 pairs, `kp` = number of k pairs, vdpbf16ps):
//   void NAME(int64_t kp, const uint16_t* a, const uint16_t* b, float* c, int64_t ldc, bool acc)
// `a` is a sliver of W = a_width (or MR) lanes, k-major: a[k*W + i], or pairs
// a[(p*W + i)*2 + (k&1)], of which rows i < MR are read; `b` an NR-column sliver (b[k*NR + j],
// or b[(p*NR + j)*2 + (k&1)]). The MR×NR tile is written to c[i*ldc + j]; with `acc` it is
// added to what c holds. With `prefetch_c` the tile's cache
// lines are prefetched before the k loop of a call that adds to C: over a large C the rows of a
// tile are far apart and would otherwise miss when read back, once per K slice after the first.
// With `prefetch_ab` > 0 each k step prefetches the A and B lines that many steps ahead.
// With `strided_b` (f32 only) the function takes a last argument `int64_t ldb` and B's k rows
// are ldb floats apart (b[k*ldb + j]): B read in place from a row-major operand, unpacked.
// With `bf16_b` as well, b is a `const uint16_t*` of bf16 elements, widened to f32 (exactly)
// as they are loaded: a bf16 B read in place, multiplied with f32 FMAs.
// With `strided_a` (f32 only) the function takes a last argument `int64_t lda` (after ldb) and
// A's rows are lda floats apart, each contiguous along k (a[i*lda + k]): A read in place from
// a row-major operand, unpacked (its prefetch is left to the hardware's stream prefetchers);
// a_width does not apply.
std::string GemmMicroKernel(ModuleContext& mc, const MicroKernelSpec& spec);

// The inner-product form's kernel (GemmParams::inner):
//   void NAME(int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
//             int64_t ldc)
// writes c[i*ldc + j] = sum over kk < k of a[i*lda + kk] * b[j*ldb + kk], for i < MR, j < NR:
// MR rows of A and NR rows of the transposed B, both contiguous along k, read a vector of k at
// a time into MR·NR vector accumulators (the last partial vector with masked loads), each then
// summed across its lanes. The lane sums change the order of the float sum, not its terms.
std::string GemmInnerKernel(ModuleContext& mc, int64_t mr, int64_t nr);

// Prefetches of the MR×NR f32 C tile's 64-byte lines (`c`, row stride `ldc` in the emitted
// function), issued before the k loop so that they complete under its multiplies, when the
// call adds to C (its `acc` argument).
void EmitPrefetchC(std::ostream& o, int64_t mr, int64_t nr);

// Includes <immintrin.h> at file scope of the generated source (once per module).
void EnsureGemmIntrinsics(ModuleContext& mc);

}  // namespace mk::codegen::cpu
