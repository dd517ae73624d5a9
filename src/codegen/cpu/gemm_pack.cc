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

// The source is read in bands of 8 k rows, each band sliver by sliver: 8 sequential read
// streams (packing B one whole sliver after the other read 128 bytes per 8 KiB row of a
// 2048-wide B: a new page per read), while each sliver gets 8 rows (1 KiB) at a time. Row by
// row, every k row wrote one 128-byte piece to each of the panel's slivers, KC·NR·4 bytes
// apart: as many write streams as slivers, all on the same L1 sets (a 2048-deep KC puts them
// 256 KiB apart). Measured on Zen 4 (f32 2048³, KC 2048, NC 512, C harness medians of 25 calls
// per module, alternated): bands of 8 rows 78.8-79.3 ms, 32 rows 79.2, 128 rows 79.3, row by
// row 79.4-79.7 ms; 4096³ bands of 8 622.8 ms against 630.1 ms.
constexpr const char* kPanelText = R"(// Packs a lanes-contiguous f32 panel into slivers (gemm_pack.h).
static inline void mk_pack_panel_f32(const float* src, int64_t ld, int64_t lanes, int64_t kc,
                                     float* dst, int64_t width) {
  const int64_t full = lanes / width, part = lanes % width;
  constexpr int64_t kBand = 8;
  for (int64_t k0 = 0; k0 < kc; k0 += kBand) {
    const int64_t k1 = k0 + kBand < kc ? k0 + kBand : kc;
    for (int64_t q = 0; q < full; ++q) {
      const float* s = src + k0 * ld + q * width;
      float* d = dst + q * width * kc + k0 * width;
      for (int64_t k = k0; k < k1; ++k, s += ld, d += width) {
        std::memcpy(d, s, width * sizeof(float));
      }
    }
    if (part) {
      for (int64_t k = k0; k < k1; ++k) {
        float* e = dst + full * width * kc + k * width;
        std::memcpy(e, src + k * ld + full * width, part * sizeof(float));
        std::memset(e + part, 0, (width - part) * sizeof(float));
      }
    }
  }
}
)";

constexpr const char* kRowsBf16Name = "mk_pack_rows_bf16";

// The AMX A sliver keeps each row's K slice contiguous: packing a row-major bf16 block is a row
// copy (element by element it ran at half the copy's speed: 6% of a 1024x1024x2048 GEMM).
constexpr const char* kRowsBf16Text = R"(// Packs rows of a row-major bf16 block lane-major, K slice padded (gemm_pack.h).
static inline void mk_pack_rows_bf16(const uint16_t* src, int64_t ld, int64_t rows, int64_t kc,
                                     int64_t kpad, uint16_t* dst, int64_t width) {
  for (int64_t r = 0; r < width; ++r) {
    uint16_t* d = dst + r * kpad;
    int64_t copied = 0;
    if (r < rows) {
      std::memcpy(d, src + r * ld, kc * sizeof(uint16_t));
      copied = kc;
    }
    if (copied < kpad) std::memset(d + copied, 0, (kpad - copied) * sizeof(uint16_t));
  }
}
)";

constexpr const char* kPairsName = "mk_pack_panel_pairs_bf16";

// bf16 pairs interleave k rows 2p and 2p+1 lane by lane. One sliver after the other down all
// of K read 64 bytes per row of B (a new page per read for a 2048-wide B: 9% of that GEMM's
// time); all slivers for one pair of rows wrote 128 bytes per sliver, slivers 64 KiB apart (one
// L1 set). So: 32 k rows at a time (their source stays in L2), sliver by sliver within them;
// each sliver gets 4 KiB of contiguous stores.
constexpr const char* kPairsText = R"(// Packs a lanes-contiguous bf16 panel into pair slivers (gemm_pack.h).
static inline void mk_pack_panel_pairs_bf16(const uint16_t* src, int64_t ld, int64_t lanes,
                                            int64_t kc, int64_t kpad, uint16_t* dst,
                                            int64_t width) {
  const int64_t slivers = (lanes + width - 1) / width;
#if defined(__AVX512F__) && defined(__AVX512BW__)
  // 16 lanes of both rows into one vector, then interleaved: [e0 o0 e1 o1 ...].
  alignas(64) static const uint16_t kOrder[32] = {0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21,
                                                  6, 22, 7, 23, 8, 24, 9, 25, 10, 26, 11, 27,
                                                  12, 28, 13, 29, 14, 30, 15, 31};
  const __m512i order = _mm512_load_si512(kOrder);
#endif
  for (int64_t k0 = 0; k0 < kpad; k0 += 32) {
    const int64_t k1 = k0 + 32 < kpad ? k0 + 32 : kpad;
    for (int64_t q = 0; q < slivers; ++q) {
      const int64_t base = q * width;
      const int64_t valid = lanes - base < width ? lanes - base : width;
      for (int64_t k = k0; k < k1; k += 2) {
        const uint16_t* s0 = src + k * ld + base;
        const uint16_t* s1 = k + 1 < kc ? s0 + ld : nullptr;  // the odd row, if in the slice
        uint16_t* d = dst + q * width * kpad + k * width;
        const int64_t have = k < kc ? valid : 0;
        int64_t r = 0;
#if defined(__AVX512F__) && defined(__AVX512BW__)
        for (; r + 16 <= have; r += 16) {
          const __m256i e = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s0 + r));
          const __m256i o = s1 ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s1 + r))
                               : _mm256_setzero_si256();
          const __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(e), o, 1);
          _mm512_storeu_si512(d + 2 * r, _mm512_permutexvar_epi16(order, both));
        }
#endif
        for (; r < have; ++r) {
          d[2 * r] = s0[r];
          d[2 * r + 1] = s1 ? s1[r] : 0;
        }
        // Guarded: a full sliver has nothing to clear (a libc call per k pair otherwise).
        if (r < width) std::memset(d + 2 * r, 0, (width - r) * 2 * sizeof(uint16_t));
      }
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


std::string RowPackBf16Function(ModuleContext& mc) {
  if (mc.prelude().str().find(std::string(" ") + kRowsBf16Name + "(") != std::string::npos) {
    return kRowsBf16Name;
  }
  mc.prelude() << kRowsBf16Text << "\n";
  return kRowsBf16Name;
}

std::string PairsPanelPackFunction(ModuleContext& mc) {
  if (mc.prelude().str().find(std::string(" ") + kPairsName + "(") != std::string::npos) {
    return kPairsName;
  }
  EnsureGemmIntrinsics(mc);
  mc.prelude() << kPairsText << "\n";
  return kPairsName;
}

}  // namespace mk::codegen::cpu
