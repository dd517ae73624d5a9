#include "codegen/cpu/gemm_microkernel.h"

#include <sstream>

namespace mk::codegen::cpu {

namespace {

// The prelude lives inside the generated file's anonymous namespace, but <immintrin.h> must be
// included at file scope: close the namespace around the include (once per module).
constexpr const char* kIntrinsicsMarker = "// mk-gemm: SIMD intrinsics\n";

std::string Var(const char* p, int64_t i, int64_t v) {
  return std::string(p) + std::to_string(i) + "_" + std::to_string(v);
}

// One SIMD flavour of the tile update: `lanes` f32 per vector, intrinsic spellings in `isa`.
struct Isa {
  int64_t lanes;
  const char* vec;     // __m512 / __m256
  const char* prefix;  // _mm512 / _mm256
};

// Prefetches, `ahead` k steps on, of the B sliver's lines (`b_step` elements per k, `line`
// elements per 64-byte line; with `strided_b` the k rows are `ldb` apart) and of A's (one line
// per k: A's step is at most a line).
void EmitPrefetchAB(std::ostream& o, int64_t a_step, int64_t b_step, int64_t ahead, int64_t line,
                    bool strided_b = false, bool strided_a = false) {
  if (ahead <= 0) return;
  for (int64_t j = 0; j < b_step; j += line) {
    o << "    _mm_prefetch(reinterpret_cast<const char*>(b + ";
    if (strided_b) o << ahead << " * ldb + " << j;
    else o << b_step * ahead + j;
    o << "), _MM_HINT_T0);\n";
  }
  // A read in place spans MR rows, each its own stream: the hardware prefetchers follow them.
  if (strided_a) return;
  o << "    _mm_prefetch(reinterpret_cast<const char*>(a + " << a_step * ahead
    << "), _MM_HINT_T0);\n";
}

// B's vector `v` of the k row at b: f32 loaded, or bf16 widened to f32 (the bits shifted into
// the upper half, exact).
std::string LoadB(const Isa& isa, int64_t v, bool bf16_b) {
  const std::string off = std::to_string(v * isa.lanes);
  if (!bf16_b) return std::string(isa.prefix) + "_loadu_ps(b + " + off + ")";
  if (isa.lanes == 16) {
    return "_mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256("
           "reinterpret_cast<const __m256i*>(b + " + off + "))), 16))";
  }
  return "_mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128("
         "reinterpret_cast<const __m128i*>(b + " + off + "))), 16))";
}

// f32 panels: per k, NR/lanes vector loads of B, MR broadcasts of A, MR·NR/lanes FMAs. With
// `strided_b` B's k rows are `ldb` elements apart (B read in place) instead of NR; with
// `bf16_b` they are bf16, widened to f32 as they are loaded. With `strided_a` A's rows are
// `lda` elements apart and contiguous along k (A read in place) instead of k-major `aw` wide.
void EmitF32Body(std::ostream& o, const Isa& isa, int64_t mr, int64_t nr, int64_t aw,
                 int64_t unroll, int64_t ahead, bool strided_b, bool bf16_b, bool strided_a) {
  const int64_t nv = nr / isa.lanes;
  const std::string p = isa.prefix;
  for (int64_t i = 0; i < mr; ++i) {
    for (int64_t v = 0; v < nv; ++v) {
      o << "  " << isa.vec << " " << Var("c", i, v) << " = " << p << "_setzero_ps();\n";
    }
  }
  o << "#pragma GCC unroll " << unroll << "\n  for (int64_t k = 0; k < kc; ++k) {\n";
  for (int64_t v = 0; v < nv; ++v) {
    o << "    const " << isa.vec << " b" << v << " = " << LoadB(isa, v, bf16_b) << ";\n";
  }
  EmitPrefetchAB(o, aw, nr, ahead, bf16_b ? 32 : 16, strided_b, strided_a);
  for (int64_t i = 0; i < mr; ++i) {
    o << "    { const " << isa.vec << " ai = " << p << "_set1_ps(a["
      << (strided_a ? std::to_string(i) + " * lda" : std::to_string(i)) << "]);";
    for (int64_t v = 0; v < nv; ++v) {
      o << " " << Var("c", i, v) << " = " << p << "_fmadd_ps(ai, b" << v << ", " << Var("c", i, v)
        << ");";
    }
    o << " }\n";
  }
  o << "    a += " << (strided_a ? 1 : aw) << ";\n    b += "
    << (strided_b ? std::string("ldb") : std::to_string(nr)) << ";\n  }\n";
}

// bf16 pairs: per pair of k, NR/16 vector loads of B (16 columns × 2 k), MR 32-bit broadcasts
// of A (one row's 2 k, rows `aw` pairs apart), MR·NR/16 vdpbf16ps.
void EmitBf16Body(std::ostream& o, int64_t mr, int64_t nr, int64_t aw, int64_t unroll,
                  int64_t ahead) {
  const int64_t nv = nr / 16;
  for (int64_t i = 0; i < mr; ++i) {
    for (int64_t v = 0; v < nv; ++v) {
      o << "  __m512 " << Var("c", i, v) << " = _mm512_setzero_ps();\n";
    }
  }
  o << "#pragma GCC unroll " << unroll << "\n  for (int64_t k = 0; k < kp; ++k) {\n";
  for (int64_t v = 0; v < nv; ++v) {
    o << "    const __m512bh b" << v << " = (__m512bh)_mm512_loadu_si512(b + " << v * 32
      << ");\n";
  }
  EmitPrefetchAB(o, 2 * aw, 2 * nr, ahead, 32);
  for (int64_t i = 0; i < mr; ++i) {
    o << "    { uint32_t w; std::memcpy(&w, a + " << 2 * i
      << ", 4); const __m512bh ai = (__m512bh)_mm512_set1_epi32(static_cast<int>(w));";
    for (int64_t v = 0; v < nv; ++v) {
      o << " " << Var("c", i, v) << " = _mm512_dpbf16_ps(" << Var("c", i, v) << ", ai, b" << v
        << ");";
    }
    o << " }\n";
  }
  o << "    a += " << 2 * aw << ";\n    b += " << 2 * nr << ";\n  }\n";
}

// Stores (or adds into) c the accumulators of EmitF32Body / EmitBf16Body.
void EmitWriteBack(std::ostream& o, const Isa& isa, int64_t mr, int64_t nr) {
  const int64_t nv = nr / isa.lanes;
  const std::string p = isa.prefix;
  o << "  if (acc) {\n";
  for (int64_t i = 0; i < mr; ++i) {
    for (int64_t v = 0; v < nv; ++v) {
      std::string addr = "c + " + std::to_string(i) + " * ldc + " + std::to_string(v * isa.lanes);
      o << "    " << Var("c", i, v) << " = " << p << "_add_ps(" << Var("c", i, v) << ", " << p
        << "_loadu_ps(" << addr << "));\n";
    }
  }
  o << "  }\n";
  for (int64_t i = 0; i < mr; ++i) {
    for (int64_t v = 0; v < nv; ++v) {
      o << "  " << p << "_storeu_ps(c + " << i << " * ldc + " << v * isa.lanes << ", "
        << Var("c", i, v) << ");\n";
    }
  }
}

// Portable fallback (no SIMD flavour matched the compiler's flags): same contract, plain loops.
void EmitScalar(std::ostream& o, bool bf16_pairs, int64_t mr, int64_t nr, int64_t aw,
                bool strided_b, bool bf16_b, bool strided_a) {
  o << "  float t[" << mr * nr << "] = {};\n";
  if (bf16_pairs) {
    o << "  for (int64_t k = 0; k < kp; ++k, a += " << 2 * aw << ", b += " << 2 * nr << ")\n"
      << "    for (int64_t i = 0; i < " << mr << "; ++i)\n"
      << "      for (int64_t j = 0; j < " << nr << "; ++j)\n"
      << "        t[i * " << nr << " + j] += mkrt::bf16_to_f32(a[2 * i]) * "
      << "mkrt::bf16_to_f32(b[2 * j]) + mkrt::bf16_to_f32(a[2 * i + 1]) * "
      << "mkrt::bf16_to_f32(b[2 * j + 1]);\n";
  } else {
    o << "  for (int64_t k = 0; k < kc; ++k, a += " << (strided_a ? 1 : aw) << ", b += "
      << (strided_b ? std::string("ldb") : std::to_string(nr)) << ")\n"
      << "    for (int64_t i = 0; i < " << mr << "; ++i)\n"
      << "      for (int64_t j = 0; j < " << nr << "; ++j) t[i * " << nr
      << " + j] += a[" << (strided_a ? "i * lda" : "i") << "] * "
      << (bf16_b ? "mkrt::bf16_to_f32(b[j])" : "b[j]") << ";\n";
  }
  o << "  for (int64_t i = 0; i < " << mr << "; ++i)\n"
    << "    for (int64_t j = 0; j < " << nr << "; ++j)\n"
    << "      c[i * ldc + j] = acc ? c[i * ldc + j] + t[i * " << nr << " + j] : t[i * " << nr
    << " + j];\n";
}

}  // namespace

// Prefetches of the MR×NR C tile's 64-byte lines (f32), issued before the k loop so that they
// complete under its FMAs. Only where the call accumulates (`acc`): a call that overwrites the
// tile never reads C, and reading it early only costs bandwidth (13p: 8% of its time with a
// single K slice, every call overwriting).
void EmitPrefetchC(std::ostream& o, int64_t mr, int64_t nr) {
  o << "#if defined(__SSE__)\n"
    << "  if (acc) {\n";
  for (int64_t i = 0; i < mr; ++i) {
    for (int64_t j = 0; j < nr; j += 16) {
      o << "    _mm_prefetch(reinterpret_cast<const char*>(c + " << i << " * ldc + " << j
        << "), _MM_HINT_T0);\n";
    }
  }
  o << "  }\n"
    << "#endif\n";
}

void EnsureGemmIntrinsics(ModuleContext& mc) {
  if (mc.prelude().str().find(kIntrinsicsMarker) != std::string::npos) return;
  mc.prelude() << kIntrinsicsMarker << "}  // namespace\n"
               << "#if defined(__x86_64__) || defined(__i386__)\n#include <immintrin.h>\n#endif\n"
               << "namespace {\n";
}

std::string GemmMicroKernel(ModuleContext& mc, const MicroKernelSpec& spec) {
  const bool bf16_pairs = spec.bf16_pairs;
  const bool strided_b = spec.strided_b && !bf16_pairs;
  const bool bf16_b = spec.bf16_b && strided_b;
  const bool strided_a = spec.strided_a && !bf16_pairs;
  const int64_t mr = spec.mr, nr = spec.nr, unroll_k = spec.unroll_k;
  const int64_t aw = spec.a_width > 0 && !strided_a ? spec.a_width : mr;
  const bool prefetch_c = spec.prefetch_c;
  const int64_t prefetch_ab = spec.prefetch_ab;
  std::string name = std::string("mk_gemm_") + (bf16_pairs ? "bf16" : "f32") + "_" +
                     std::to_string(mr) + "x" + std::to_string(nr) + "_u" +
                     std::to_string(unroll_k) + (prefetch_c ? "_pc" : "") +
                     (prefetch_ab > 0 ? "_pf" + std::to_string(prefetch_ab) : "") +
                     (strided_b ? "_sb" : "") + (bf16_b ? "h" : "") + (strided_a ? "_sa" : "") +
                     (aw != mr ? "_aw" + std::to_string(aw) : "");
  if (mc.prelude().str().find(" " + name + "(") != std::string::npos) return name;
  EnsureGemmIntrinsics(mc);
  std::ostringstream o;
  o << "// GEMM micro-kernel: " << mr << "x" << nr << " f32 accumulators"
    << (bf16_pairs ? ", bf16 pairs (vdpbf16ps)" : "")
    << (strided_b ? ", B rows ldb apart" : "") << (bf16_b ? " in bf16" : "")
    << (strided_a ? ", A rows lda apart" : "")
    << (aw != mr ? ", the first rows of a " + std::to_string(aw) + "-row A sliver" : "") << "\n"
    << "__attribute__((noinline)) static void " << name << "(int64_t "
    << (bf16_pairs ? "kp, const uint16_t* __restrict a, const uint16_t* __restrict b"
                   : bf16_b ? "kc, const float* __restrict a, const uint16_t* __restrict b"
                            : "kc, const float* __restrict a, const float* __restrict b")
    << ", float* __restrict c, int64_t ldc, bool acc" << (strided_b ? ", int64_t ldb" : "")
    << (strided_a ? ", int64_t lda" : "") << ") {\n";
  const Isa avx512{16, "__m512", "_mm512"}, avx2{8, "__m256", "_mm256"};
  if (prefetch_c) EmitPrefetchC(o, mr, nr);
  if (bf16_pairs) {
    if (nr % 16 == 0) {
      o << "#if defined(__AVX512F__) && defined(__AVX512BF16__)\n";
      EmitBf16Body(o, mr, nr, aw, unroll_k, prefetch_ab);
      EmitWriteBack(o, avx512, mr, nr);
      o << "#else\n";
      EmitScalar(o, true, mr, nr, aw, false, false, false);
      o << "#endif\n";
    } else {
      EmitScalar(o, true, mr, nr, aw, false, false, false);
    }
  } else {
    o << (nr % 16 == 0 ? "#if defined(__AVX512F__)\n" : "#if 0\n");
    if (nr % 16 == 0) {
      EmitF32Body(o, avx512, mr, nr, aw, unroll_k, prefetch_ab, strided_b, bf16_b, strided_a);
      EmitWriteBack(o, avx512, mr, nr);
    }
    o << "#elif defined(__AVX2__) && defined(__FMA__)\n";
    EmitF32Body(o, avx2, mr, nr, aw, unroll_k, prefetch_ab, strided_b, bf16_b, strided_a);
    EmitWriteBack(o, avx2, mr, nr);
    o << "#else\n";
    EmitScalar(o, false, mr, nr, aw, strided_b, bf16_b, strided_a);
    o << "#endif\n";
  }
  o << "}\n";
  mc.prelude() << o.str();
  return name;
}

namespace {

// One SIMD flavour of the inner-product kernel's k loop and lane sums.
void EmitInnerBody(std::ostream& o, const Isa& isa, int64_t mr, int64_t nr) {
  const std::string p = isa.prefix, v = isa.vec, w = std::to_string(isa.lanes);
  for (int64_t i = 0; i < mr; ++i) {
    for (int64_t j = 0; j < nr; ++j) {
      o << "  " << v << " " << Var("c", i, j) << " = " << p << "_setzero_ps();\n";
    }
  }
  // The full vectors of k, then the partial last one: masked loads read zeros past k.
  auto load = [&](bool masked, const std::string& ptr) {
    if (!masked) return p + "_loadu_ps(" + ptr + ")";
    return isa.lanes == 16 ? "_mm512_maskz_loadu_ps(m, " + ptr + ")"
                           : "_mm256_maskload_ps(" + ptr + ", m)";
  };
  auto step = [&](bool masked) {
    for (int64_t j = 0; j < nr; ++j) {
      o << "    const " << v << " b" << j << " = "
        << load(masked, "b + " + std::to_string(j) + " * ldb + kk") << ";\n";
    }
    for (int64_t i = 0; i < mr; ++i) {
      o << "    { const " << v << " ai = " << load(masked, "a + " + std::to_string(i) + " * lda + kk")
        << ";";
      for (int64_t j = 0; j < nr; ++j) {
        o << " " << Var("c", i, j) << " = " << p << "_fmadd_ps(ai, b" << j << ", "
          << Var("c", i, j) << ");";
      }
      o << " }\n";
    }
  };
  o << "  int64_t kk = 0;\n"
    << "  for (; kk + " << w << " <= k; kk += " << w << ") {\n";
  step(false);
  o << "  }\n"
    << "  if (kk < k) {\n";
  if (isa.lanes == 16) {
    o << "    const __mmask16 m = static_cast<__mmask16>((1u << (k - kk)) - 1u);\n";
  } else {
    o << "    const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(k - kk)), "
         "_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));\n";
  }
  step(true);
  o << "  }\n";
  for (int64_t i = 0; i < mr; ++i) {
    for (int64_t j = 0; j < nr; ++j) {
      o << "  c[" << i << " * ldc + " << j << "] = ";
      if (isa.lanes == 16) {
        o << "_mm512_reduce_add_ps(" << Var("c", i, j) << ");\n";
      } else {
        o << "mk_inner_sum8(" << Var("c", i, j) << ");\n";
      }
    }
  }
}

}  // namespace

std::string GemmInnerKernel(ModuleContext& mc, int64_t mr, int64_t nr) {
  const std::string name = "mk_gemm_inner_f32_" + std::to_string(mr) + "x" + std::to_string(nr);
  if (mc.prelude().str().find(" " + name + "(") != std::string::npos) return name;
  EnsureGemmIntrinsics(mc);
  std::ostringstream o;
  if (mc.prelude().str().find(" mk_inner_sum8(") == std::string::npos) {
    o << "#if !defined(__AVX512F__) && defined(__AVX2__) && defined(__FMA__)\n"
      << "// The sum of an AVX2 vector's 8 lanes.\n"
      << "static inline float mk_inner_sum8(__m256 v) {\n"
      << "  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));\n"
      << "  s = _mm_add_ps(s, _mm_movehl_ps(s, s));\n"
      << "  s = _mm_add_ss(s, _mm_movehdup_ps(s));\n"
      << "  return _mm_cvtss_f32(s);\n"
      << "}\n"
      << "#endif\n";
  }
  const Isa avx512{16, "__m512", "_mm512"}, avx2{8, "__m256", "_mm256"};
  o << "// GEMM inner-product kernel: " << mr << "x" << nr
    << " results, each a sum over k of an A row times a transposed-B row\n"
    << "__attribute__((noinline)) static void " << name
    << "(int64_t k, const float* __restrict a, int64_t lda, const float* __restrict b, "
       "int64_t ldb, float* __restrict c, int64_t ldc) {\n"
    << "#if defined(__AVX512F__)\n";
  EmitInnerBody(o, avx512, mr, nr);
  o << "#elif defined(__AVX2__) && defined(__FMA__)\n";
  EmitInnerBody(o, avx2, mr, nr);
  o << "#else\n"
    << "  for (int64_t i = 0; i < " << mr << "; ++i)\n"
    << "    for (int64_t j = 0; j < " << nr << "; ++j) {\n"
    << "      float s = 0.0f;\n"
    << "      for (int64_t kk = 0; kk < k; ++kk) s += a[i * lda + kk] * b[j * ldb + kk];\n"
    << "      c[i * ldc + j] = s;\n"
    << "    }\n"
    << "#endif\n"
    << "}\n";
  mc.prelude() << o.str();
  return name;
}

}  // namespace mk::codegen::cpu
