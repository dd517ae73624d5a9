#include "codegen/cpu/gemm_pack.h"

#include "codegen/cpu/gemm_microkernel.h"

namespace mk::codegen::cpu {

namespace {

constexpr const char* kName = "mk_pack_rows_f32";

// The 16x16 transpose is the usual four rounds: unpack pairs of rows (32-bit), then pairs of
// pairs (64-bit), then 128-bit lanes across groups of four rows, twice.
constexpr const char* kText = R"(// Packs rows [0, rows) of a row-major f32 block k-major (gemm_pack.h).
static inline void mk_pack_rows_f32(const float* src, int64_t ld, int64_t rows, int64_t kc,
                                    float* dst, int64_t width) {
  int64_t k0 = 0;
#if defined(__AVX512F__)
  for (int64_t g = 0; g < width; g += 16) {
    const int64_t have = rows - g < 0 ? 0 : (rows - g > 16 ? 16 : rows - g);
    const int64_t lanes = width - g > 16 ? 16 : width - g;
    const __mmask16 store = static_cast<__mmask16>((1u << lanes) - 1u);
    const __mmask16 keep = static_cast<__mmask16>((1u << have) - 1u);
    float* d = dst + g;
    if (have == 0) {
      for (int64_t k = 0; k < kc; ++k) _mm512_mask_storeu_ps(d + k * width, store, _mm512_setzero_ps());
      continue;
    }
    // Rows past `have` read the last real row again (memory that exists) and are zeroed after
    // the transpose, where they are lanes: one mask for all of them, no test per row.
    const float* row[16];
    for (int i = 0; i < 16; ++i) row[i] = src + (g + (i < have ? i : have - 1)) * ld;
    int64_t k = 0;
    for (; k + 16 <= kc; k += 16) {
      __m512 r[16];
      for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(row[i] + k);
      __m512 t[16];
      for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
      }
      for (int i = 0; i < 16; i += 4) {  // u[i + j]: column j of each 128-bit lane, rows i..i+3
        r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
        r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
        r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
        r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
      }
      for (int j = 0; j < 4; ++j) {
        // Groups of four rows: 0 (r[j]), 1 (r[4 + j]), 2 (r[8 + j]), 3 (r[12 + j]).
        const __m512 v01 = _mm512_shuffle_f32x4(r[j], r[4 + j], 0x88);  // lanes 0, 2
        const __m512 w01 = _mm512_shuffle_f32x4(r[j], r[4 + j], 0xdd);  // lanes 1, 3
        const __m512 v23 = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0x88);
        const __m512 w23 = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0xdd);
        t[j] = _mm512_shuffle_f32x4(v01, v23, 0x88);       // k = j (lane 0)
        t[8 + j] = _mm512_shuffle_f32x4(v01, v23, 0xdd);   // k = 8 + j (lane 2)
        t[4 + j] = _mm512_shuffle_f32x4(w01, w23, 0x88);   // k = 4 + j (lane 1)
        t[12 + j] = _mm512_shuffle_f32x4(w01, w23, 0xdd);  // k = 12 + j (lane 3)
      }
      for (int j = 0; j < 16; ++j) {
        _mm512_mask_storeu_ps(d + (k + j) * width, store, _mm512_maskz_mov_ps(keep, t[j]));
      }
    }
    k0 = k;
  }
#endif
  for (int64_t k = k0; k < kc; ++k) {
    float* d = dst + k * width;
    for (int64_t r = 0; r < width; ++r) d[r] = r < rows ? src[r * ld + k] : 0.0f;
  }
}
)";

constexpr const char* kPanelName = "mk_pack_panel_f32";

// Reading the source row by row keeps the reads one sequential stream per k row (packing B one
// sliver after the other read 128 bytes per 8 KiB row of a 2048-wide B: a new page per read).
constexpr const char* kPanelText = R"(// Packs a lanes-contiguous f32 panel into slivers (gemm_pack.h).
static inline void mk_pack_panel_f32(const float* src, int64_t ld, int64_t lanes, int64_t kc,
                                     float* dst, int64_t width) {
  const int64_t full = lanes / width, part = lanes % width;
  for (int64_t k = 0; k < kc; ++k) {
    const float* s = src + k * ld;
    float* d = dst + k * width;
    for (int64_t q = 0; q < full; ++q) {
      std::memcpy(d + q * width * kc, s + q * width, width * sizeof(float));
    }
    if (part) {
      float* e = d + full * width * kc;
      std::memcpy(e, s + full * width, part * sizeof(float));
      std::memset(e + part, 0, (width - part) * sizeof(float));
    }
  }
}
)";

}  // namespace

std::string PanelPackFunction(ModuleContext& mc) {
  if (mc.prelude().str().find(std::string(" ") + kPanelName + "(") != std::string::npos) {
    return kPanelName;
  }
  mc.prelude() << kPanelText << "\n";
  return kPanelName;
}

std::string RowPackFunction(ModuleContext& mc) {
  if (mc.prelude().str().find(std::string(" ") + kName + "(") != std::string::npos) return kName;
  EnsureGemmIntrinsics(mc);
  mc.prelude() << kText << "\n";
  return kName;
}

}  // namespace mk::codegen::cpu
