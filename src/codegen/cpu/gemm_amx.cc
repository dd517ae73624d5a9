#include "codegen/cpu/gemm_amx.h"

#include <sstream>

#include "codegen/cpu/gemm_microkernel.h"
#include "target/amx_runtime.h"

namespace mk::codegen::cpu {

namespace {

// The preprocessor test of a source built for tiles (-march=native on an AMX machine, or
// -mamx-tile -mamx-bf16); the arch_prctl request is Linux's.
constexpr const char* kAmxBuilt =
    "defined(__AMX_TILE__) && defined(__AMX_BF16__) && defined(__linux__)";

constexpr const char* kAmxMarker = "// mk-gemm: AMX tiles\n";

// The permission request and the per-thread tile configuration (gemm_amx.h).
void EnsureAmxRuntime(ModuleContext& mc) {
  if (mc.prelude().str().find(kAmxMarker) != std::string::npos) return;
  EnsureGemmIntrinsics(mc);
  std::ostringstream o;
  // The system headers go at file scope, outside the prelude's anonymous namespace.
  o << kAmxMarker << "}  // namespace\n"
    << "#if " << kAmxBuilt << "\n#include <sys/syscall.h>\n#include <unistd.h>\n#endif\n"
    << "namespace {\n"
    << "#if " << kAmxBuilt << "\n"
    << target::AmxTileRuntimeSource()
    << "// This thread's tiles for the micro-kernel (palette 1): tmm0-3 the 16x16 f32 C tiles,\n"
    << "// tmm4-5 A (16 rows x 32 bf16), tmm6-7 B (16 k pairs x 16 columns x 2 bf16); every\n"
    << "// tile 16 rows of 64 bytes. False when tiles cannot be used.\n"
    << "static bool " << kAmxBegin << "() {\n"
    << "  if (!mk_amx_permitted()) return false;\n"
    << "  mk_amx_load_config();\n"
    << "  return true;\n"
    << "}\n"
    << "static void " << kAmxEnd << "(bool on) {\n"
    << "  if (on) _tile_release();\n"
    << "}\n"
    << "#else\n"
    << "static bool " << kAmxBegin << "() { return false; }\n"
    << "static void " << kAmxEnd << "(bool) {}\n"
    << "#endif\n";
  mc.prelude() << o.str();
}

// The tile path: C tiles zeroed or loaded, per k step A0 A1 × B0 B1, C stored. With
// `prefetch_next`, each k step also asks L2 for `pfl` lines of the next B sliver from `pf` on:
// the tiles consume a 64-byte line every 2 cycles, faster than the hardware prefetchers bring
// the next sliver from L3 (2048^3 bf16, example harness: 8.8 -> 8.0 ms).
void EmitTileBody(std::ostream& o, bool prefetch_next) {
  o << "  if (tiles) {\n"
    << "    const int64_t lda = kpad * 2, ldcb = ldc * 4;\n"
    << "    if (acc) {\n"
    << "      _tile_loadd(0, c, ldcb);\n"
    << "      _tile_loadd(1, c + 16, ldcb);\n"
    << "      _tile_loadd(2, c + 16 * ldc, ldcb);\n"
    << "      _tile_loadd(3, c + 16 * ldc + 16, ldcb);\n"
    << "    } else {\n"
    << "      _tile_zero(0);\n"
    << "      _tile_zero(1);\n"
    << "      _tile_zero(2);\n"
    << "      _tile_zero(3);\n"
    << "    }\n"
    << "    for (int64_t k = 0; k < kpad; k += 32) {\n"
    << "      _tile_loadd(4, a + k, lda);\n"
    << "      _tile_loadd(6, b + k * 32, 128);\n"
    << "      _tile_loadd(7, b + k * 32 + 32, 128);\n"
    << "      _tile_dpbf16ps(0, 4, 6);\n"
    << "      _tile_dpbf16ps(1, 4, 7);\n"
    << "      _tile_loadd(5, a + 16 * kpad + k, lda);\n";
  if (prefetch_next) {
    o << "      if (pf) {\n"
      << "        for (int64_t j = 0; j < pfl; ++j) {\n"
      << "          _mm_prefetch(reinterpret_cast<const char*>(pf + k * pfl + j * 32), "
      << "_MM_HINT_T1);\n"
      << "        }\n"
      << "      }\n";
  }
  o << "      _tile_dpbf16ps(2, 5, 6);\n"
    << "      _tile_dpbf16ps(3, 5, 7);\n"
    << "    }\n"
    << "    _tile_stored(0, c, ldcb);\n"
    << "    _tile_stored(1, c + 16, ldcb);\n"
    << "    _tile_stored(2, c + 16 * ldc, ldcb);\n"
    << "    _tile_stored(3, c + 16 * ldc + 16, ldcb);\n"
    << "    return;\n"
    << "  }\n";
}

// Without tiles, vdpbf16ps on the same layouts: 8 rows × 2 vectors of accumulators at a time
// (the 32×32 tile does not fit the register file), each row's k pair broadcast from its row.
void EmitVectorBody(std::ostream& o) {
  constexpr int kRows = 8;
  o << "  for (int64_t i0 = 0; i0 < 32; i0 += " << kRows << ") {\n"
    << "    const uint16_t* const ar = a + i0 * kpad;\n"
    << "    float* const cr = c + i0 * ldc;\n";
  for (int i = 0; i < kRows; ++i) {
    o << "    __m512 c" << i << "_0 = _mm512_setzero_ps(), c" << i << "_1 = _mm512_setzero_ps();\n";
  }
  o << "    for (int64_t p = 0; p < kpad / 2; ++p) {\n"
    << "      const __m512bh b0 = (__m512bh)_mm512_loadu_si512(b + p * 64);\n"
    << "      const __m512bh b1 = (__m512bh)_mm512_loadu_si512(b + p * 64 + 32);\n";
  for (int i = 0; i < kRows; ++i) {
    o << "      { uint32_t w; std::memcpy(&w, ar + " << i
      << " * kpad + 2 * p, 4); const __m512bh ai = (__m512bh)_mm512_set1_epi32(static_cast<int>(w));"
      << " c" << i << "_0 = _mm512_dpbf16_ps(c" << i << "_0, ai, b0);"
      << " c" << i << "_1 = _mm512_dpbf16_ps(c" << i << "_1, ai, b1); }\n";
  }
  o << "    }\n";
  for (int i = 0; i < kRows; ++i) {
    for (int v = 0; v < 2; ++v) {
      std::ostringstream addr, acc;
      addr << "cr + " << i << " * ldc + " << 16 * v;
      acc << "c" << i << "_" << v;
      o << "    if (acc) " << acc.str() << " = _mm512_add_ps(" << acc.str() << ", _mm512_loadu_ps("
        << addr.str() << "));\n"
        << "    _mm512_storeu_ps(" << addr.str() << ", " << acc.str() << ");\n";
    }
  }
  o << "  }\n";
}

// Portable loops on the same layouts.
void EmitScalarBody(std::ostream& o) {
  o << "  for (int64_t i = 0; i < 32; ++i) {\n"
    << "    for (int64_t j = 0; j < 32; ++j) {\n"
    << "      float t = 0;\n"
    << "      for (int64_t k = 0; k < kpad; ++k) {\n"
    << "        t += mkrt::bf16_to_f32(a[i * kpad + k]) *\n"
    << "             mkrt::bf16_to_f32(b[(k & ~int64_t{1}) * 32 + 2 * j + (k & 1)]);\n"
    << "      }\n"
    << "      c[i * ldc + j] = acc ? c[i * ldc + j] + t : t;\n"
    << "    }\n"
    << "  }\n";
}

}  // namespace

std::string AmxGemmMicroKernel(ModuleContext& mc, bool prefetch_c, bool prefetch_next) {
  const std::string name = std::string("mk_gemm_amx_32x32") + (prefetch_c ? "_pc" : "") +
                           (prefetch_next ? "_pn" : "");
  if (mc.prelude().str().find(" " + name + "(") != std::string::npos) return name;
  EnsureAmxRuntime(mc);
  std::ostringstream o;
  o << "// GEMM micro-kernel: 32x32 f32 in AMX tiles (tdpbf16ps), A rows of kpad bf16, B pairs\n"
    << "__attribute__((noinline)) static void " << name
    << "(int64_t kpad, const uint16_t* __restrict a, const uint16_t* __restrict b, "
    << "float* __restrict c, int64_t ldc, bool acc, bool tiles, const uint16_t* pf, "
    << "int64_t pfl) {\n";
  if (prefetch_c) EmitPrefetchC(o, 32, 32);
  o << "#if " << kAmxBuilt << "\n";
  EmitTileBody(o, prefetch_next);
  o << "#endif\n"
    << "  (void)tiles;\n"
    << "  (void)pf;\n"
    << "  (void)pfl;\n"
    << "#if defined(__AVX512F__) && defined(__AVX512BF16__)\n";
  EmitVectorBody(o);
  o << "#else\n";
  EmitScalarBody(o);
  o << "#endif\n"
    << "}\n";
  mc.prelude() << o.str();
  return name;
}

}  // namespace mk::codegen::cpu
