#include "codegen/cpu/gemm_params.h"

#include <algorithm>
#include <bit>
#include <string>

namespace mk::codegen::cpu {

using hlo::DType;

namespace {

int64_t RoundUp(int64_t v, int64_t to) { return (v + to - 1) / to * to; }
int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
// Rows of M past its end in whole tiles of mr rows.
int64_t PaddedRows(int64_t m, int64_t mr) { return CeilDiv(m, mr) * mr - m; }

// KC of the AMX tile (bf16 elements). Deep: each K slice loads and stores the 32×32 C tile,
// whose rows lie ldc apart (for power-of-two N in one L1 set), and that costs more than
// streaming 2048-deep A and B slivers from L2. Measured on the Xeon, 1 thread, GFLOP/s at
// 2048³ / 4096³: KC 512 630 / 570, 1024 890 / 870, 2048 970 / 970, 4096 890 / 870.
constexpr int64_t kAmxKc = 2048;

bool IsGemmFloat(DType t) { return t == DType::kF32 || t == DType::kBF16 || t == DType::kF16; }

// f32 lanes of the widest vector the generated micro-kernel uses (AVX-512: 16, AVX2: 8); NR is a
// multiple of 8 so that the AVX2 variant exists for every tile.
int64_t F32Lanes(const target::Target& t) { return std::max<int64_t>(8, t.vector_bytes / 4); }

int64_t VectorRegisters(const target::Target& t) {
  return t.vector_registers > 0 ? t.vector_registers : (t.Has("avx512f") ? 32 : 16);
}

Status CheckRange(const char* name, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi) {
    return InvalidArgument(std::string("gemm parameter ") + name + "=" + std::to_string(v) +
                           " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) +
                           "]");
  }
  return Status::Ok();
}

}  // namespace

Result<DotGeometry> AnalyzeDot(const hlo::Instruction& dot, const target::Target& target) {
  if (dot.operands.size() != 2 || !dot.dot_dims) return InvalidArgument("not a dot: " + dot.name);
  const auto& dd = *dot.dot_dims;
  const hlo::Shape& lhs = dot.operands[0]->shape;
  const hlo::Shape& rhs = dot.operands[1]->shape;
  if (dd.lhs_batch.size() != dd.rhs_batch.size() ||
      dd.lhs_contracting.size() != dd.rhs_contracting.size()) {
    return InvalidArgument("dot %" + dot.name + ": dimension numbers do not pair up");
  }
  DotGeometry g;
  g.lhs_batch = dd.lhs_batch;
  g.rhs_batch = dd.rhs_batch;
  g.lhs_contracting = dd.lhs_contracting;
  g.rhs_contracting = dd.rhs_contracting;
  auto free_dims = [](const hlo::Shape& s, const std::vector<int64_t>& a,
                      const std::vector<int64_t>& b) {
    std::vector<int64_t> out;
    for (int64_t d = 0; d < s.rank(); ++d) {
      if (std::find(a.begin(), a.end(), d) == a.end() &&
          std::find(b.begin(), b.end(), d) == b.end()) {
        out.push_back(d);
      }
    }
    return out;
  };
  g.lhs_free = free_dims(lhs, dd.lhs_batch, dd.lhs_contracting);
  g.rhs_free = free_dims(rhs, dd.rhs_batch, dd.rhs_contracting);
  auto in_range = [](const hlo::Shape& s, const std::vector<int64_t>& dims) {
    for (int64_t d : dims) {
      if (d < 0 || d >= s.rank()) return false;
    }
    return true;
  };
  if (!in_range(lhs, dd.lhs_batch) || !in_range(lhs, dd.lhs_contracting) ||
      !in_range(rhs, dd.rhs_batch) || !in_range(rhs, dd.rhs_contracting) ||
      g.lhs_free.size() + dd.lhs_batch.size() + dd.lhs_contracting.size() !=
          static_cast<size_t>(lhs.rank()) ||
      g.rhs_free.size() + dd.rhs_batch.size() + dd.rhs_contracting.size() !=
          static_cast<size_t>(rhs.rank())) {
    return InvalidArgument("dot %" + dot.name + ": bad or repeated dimension numbers");
  }
  for (int64_t d : dd.lhs_batch) g.batch_dims.push_back(lhs.dim(d));
  for (int64_t d : g.lhs_free) g.m_dims.push_back(lhs.dim(d));
  for (int64_t d : g.rhs_free) g.n_dims.push_back(rhs.dim(d));
  for (int64_t d : dd.lhs_contracting) g.k_dims.push_back(lhs.dim(d));
  auto product = [](const std::vector<int64_t>& v) {
    int64_t p = 1;
    for (int64_t x : v) p *= x;
    return p;
  };
  g.batch = product(g.batch_dims);
  g.m = product(g.m_dims);
  g.n = product(g.n_dims);
  g.k = product(g.k_dims);
  g.lhs_type = lhs.dtype();
  g.rhs_type = rhs.dtype();
  g.out_type = dot.shape.dtype();
  g.blockable = IsGemmFloat(g.lhs_type) && IsGemmFloat(g.rhs_type) && IsGemmFloat(g.out_type) &&
                g.batch > 0 && g.m > 0 && g.n > 0 && g.k > 0;
  g.bf16_pairs = g.blockable && g.lhs_type == DType::kBF16 && g.rhs_type == DType::kBF16 &&
                 target.Has("avx512_bf16") && target.Has("avx512f");
  g.rhs_columns_contiguous = (g.rhs_type == DType::kF32 || g.rhs_type == DType::kBF16) &&
                             g.rhs_free.size() == 1 &&
                             g.rhs_free[0] == rhs.rank() - 1 && dd.rhs_contracting.size() == 1;
  // f32, one free dim, one contracting dim that is the operand's minor-most.
  auto rows_contiguous = [](const hlo::Shape& s, DType t, const std::vector<int64_t>& free,
                            const std::vector<int64_t>& contracting) {
    return t == DType::kF32 && free.size() == 1 && contracting.size() == 1 &&
           contracting[0] == s.rank() - 1;
  };
  g.lhs_rows_contiguous = rows_contiguous(lhs, g.lhs_type, g.lhs_free, dd.lhs_contracting);
  g.rhs_rows_contiguous = rows_contiguous(rhs, g.rhs_type, g.rhs_free, dd.rhs_contracting);
  return g;
}

ThreadSplit InitialThreadSplit(const DotGeometry& g, const GemmParams& p) {
  const int64_t t = p.threads;
  if (t <= 1) return ThreadSplit::kBlocks;
  // Whole GEMMs per thread when the batch divides well: no duplicated packing, no barriers.
  if (g.batch >= t && (g.batch % t == 0 || g.batch >= 4 * t)) return ThreadSplit::kBatch;
  if (DepthSplitPays(g, p)) return ThreadSplit::kDepth;
  // Column ranges need no barriers (a thread that is descheduled stalls only itself) and cost
  // one extra packing of A per thread, small next to the GEMM once N spans several slivers per
  // thread; otherwise the shared-B row blocks divide the work more evenly.
  auto balance = [t](int64_t slivers) {
    if (slivers <= 0) return 0.0;
    return static_cast<double>(slivers) / static_cast<double>(t * CeilDiv(slivers, t));
  };
  const int64_t n_slivers = CeilDiv(g.n, p.nr), m_slivers = CeilDiv(g.m, p.mr);
  // B read in place: each thread streams its own columns of B once.
  if (!p.pack_b && n_slivers >= t) return ThreadSplit::kColumns;
  // AMX tiles follow the same rule. Row blocks used to win there once M spanned 8 tiles per
  // thread (2048³ 9.9 vs 8.4 ms), while each thread's B sliver streamed from L3 unprefetched;
  // with the next sliver prefetched into L2 (prefetch_ab) columns are as fast or faster
  // (bench --schedule, 2 threads, blocks -> columns: 512³ 173 -> 171 us, 1024³ 1.23 -> 1.18
  // ms, 2048³ 8.24 -> 8.12 ms, 4096³ 67.3 -> 67.0 ms, 8p 2.57 -> 2.46 ms).
  // Each thread needs a few slivers for its A packing to stay small next to its multiplies
  // (4096x100x4096 f32, 2 threads of 2 slivers: 16.9 ms against 14.4 over row blocks), and a
  // sliver count within 5% as even as the row blocks' (128x2048x2048 f32, 8x48 tiles, 43
  // slivers against 16 row slivers: 3.45 ms over columns, 4.17 over row blocks).
  if (!g.gathered_a && n_slivers >= 4 * t &&
      balance(n_slivers) + 0.05 >= balance(m_slivers)) {
    return ThreadSplit::kColumns;
  }
  return ThreadSplit::kBlocks;
}

// A few tiles over a deep K leave column ranges or row blocks either uneven or each thread
// packing all of A for a sliver or two of B. Over K ranges every thread packs only its own part
// of both operands, and the partials to sum (threads × M × N floats) are small next to it.
// Measured with bench --suite gemm --schedule, 2 threads, f32, the model's split before (row
// blocks or columns) -> K ranges: 64x64x4096 159 -> 126 us, 100x100x2048 213 -> 155 us,
// 128x128x8192 1.20 -> 0.99 ms, 32x32x8192 76 -> 54 us, 64x256x4096 565 -> 462 us,
// 16x512x8192 718 -> 632 us, 512x256x4096 3.85 -> 3.59 ms, 512x512x8192 15.0 -> 14.4 ms; one
// 8x16 tile over K 8192: 1 thread 14.0 us, 2 over K 9.0 us. Not measured past 512x512 results.
bool DepthSplitPays(const DotGeometry& g, const GemmParams& p) {
  if (p.threads <= 1 || !p.blocked || p.inner || g.batch >= p.threads) return false;
  const int64_t wide = std::max(g.m, g.n);
  return g.m * g.n <= kDepthMaxResult && g.k >= kDepthMinK && g.k >= kDepthMinRatio * wide;
}

bool AmxAvailable(const target::Target& target) {
  return target.Has("amx_tile") && target.Has("amx_bf16");
}

namespace {

// A row segment of the result this long spans a page (ModelNc).
constexpr int64_t kPageBytes = 4096;
// The model's K slice: this many bytes of operand per lane (512 f32, 1024 bf16), deeper only
// under DeepenSlices (InitialGemmParams says why so deep).
constexpr int64_t kBaseSliceBytes = 2048;

// Bytes of a packed element and the K slice's packing granule under `p`.
int64_t PackedBytes(const GemmParams& p) { return p.bf16_pairs ? 2 : 4; }
int64_t PackedKc(const GemmParams& p) { return RoundUp(p.kc, p.amx ? kAmxKStep : 8); }

// KC near `depth`, balanced over K's slices in whole `step`s (at most K).
int64_t BalancedKc(int64_t k, int64_t depth, int64_t step) {
  return std::min(k, RoundUp(CeilDiv(k, CeilDiv(k, depth)), step));
}

// The K depth at which a B sliver of `row_bytes` per k fills half of L1: whole `step`s, at
// least `floor`.
int64_t HalfL1Depth(const target::Target& target, int64_t row_bytes, int64_t step,
                    int64_t floor) {
  return std::max(floor, target.l1_bytes / 2 / row_bytes / step * step);
}

// Bytes of a result element.
int64_t OutBytes(const DotGeometry& g) { return g.out_type == DType::kF32 ? 4 : 2; }

// Bytes per k of the A panel the A-sliver-outer order packs: all of M's rows, whole slivers.
int64_t APanelBytesPerK(const DotGeometry& g, const GemmParams& p) {
  return RoundUp(std::max<int64_t>(1, g.m), p.mr) * PackedBytes(p);
}

// Bytes of the result that one K slice's pass rereads and rewrites while it runs: one GEMM's,
// each thread's own under ThreadSplit::kBatch.
int64_t LiveResultBytes(const DotGeometry& g, const GemmParams& p) {
  const int64_t gemms = p.split == ThreadSplit::kBatch ? std::min(p.threads, g.batch) : 1;
  return std::max<int64_t>(1, gemms) * g.m * g.n * OutBytes(g);
}

// Whether the result is large enough (over a quarter of L3) that the A-sliver-outer order's
// passes over it, one per K slice, cost more than deeper slices do (DeepenSlices).
bool ResultOutgrowsL3Quarter(const DotGeometry& g, const target::Target& target,
                             const GemmParams& p) {
  return LiveResultBytes(g, p) > target.l3_bytes / 4;
}

// NC for `order`. kBSliverOuter: the packed B panel (KC×NC) in a share of L3, capped so the
// panel stays a few MB. kASliverOuter: the panel in a quarter of L2, where the A sliver's
// streaming past it leaves it (measured on the Xeon, f32 4096³, KC 512, example harness A/B
// against kBSliverOuter at NC 4096: NC 128 1.6%, 256 3.5-5.3%, 512 1.6% faster) - unless the
// result outgrows a quarter of L3, or all of it over a batch.
int64_t ModelNc(const DotGeometry& g, const target::Target& target, const GemmParams& p,
                LoopOrder order) {
  const int64_t panel_k = PackedKc(p) * PackedBytes(p);
  int64_t nc = 0;
  if (order == LoopOrder::kASliverOuter) {
    nc = target.l2_bytes / 4 / panel_k;
    // A result over a quarter of L3 is reread once per K slice; DeepenSlices makes those
    // slices deep, and the B panel is then an eighth of L3 in a power of two of columns (so a
    // thread's column range splits evenly), each A sliver, streaming from L2, meeting many B
    // slivers. Measured on Zen 4 (L2 1 MiB, L3 32 MiB; C harness, medians): 4096³ KC 2048 NC
    // 512 616 ms against NC 1024 625 ms; 1536³ KC 1536 NC 512 33.4 ms against NC 672 33.8 ms.
    // Slices of the base depth (K of at most 512 f32, or a KC the schedule names) keep the
    // rules they were measured with.
    const bool deep = PackedKc(p) * PackedBytes(p) > kBaseSliceBytes;
    if (deep && ResultOutgrowsL3Quarter(g, target, p)) {
      const auto eighth = static_cast<uint64_t>(std::max<int64_t>(1, target.l3_bytes / 8 / panel_k));
      nc = std::max(nc, static_cast<int64_t>(std::bit_floor(eighth)));
    } else if (g.batch * g.m * g.n * OutBytes(g) > target.l3_bytes) {
      // Many GEMMs whose results together outgrow L3 (the batch split among the threads)
      // come from memory as MR row segments of NC columns per A sliver: of a page each, each
      // A sliver then meets as many B slivers (likely what lets the prefetchers stream C).
      // Measured on Zen 4 before the slices were deep (bench --schedule, f32 4096³, KC 512):
      // NC 1024 1.00x and 0.99x oneDNN, NC 2048 1.01x and 1.00x, against 0.94x and 0.93x at
      // NC 128, the L2 quarter; 39k's batched convolution GEMMs (16 of 64x15876x72) NC 1008
      // 23.1 and 22.8 ms against NC 864 24.0 and 23.4 ms.
      nc = std::max(nc, kPageBytes / OutBytes(g));
    }
  } else {
    const int64_t l3_share =
        std::min<int64_t>(target.l3_bytes / std::max(1, target.cores), 16 << 20);
    nc = std::min<int64_t>(4096, l3_share / 2 / panel_k);
  }
  nc = std::max(p.nr, nc / p.nr * p.nr);
  return std::min(nc, RoundUp(std::max<int64_t>(1, g.n), p.nr));
}

}  // namespace

bool ASliverOuterApplies(const DotGeometry& g, const GemmParams& p) {
  if (p.amx) return false;
  if (p.threads > 1 && p.split == ThreadSplit::kBlocks) return false;
  return APanelBytesPerK(g, p) * PackedKc(p) <= kMaxAPanelBytes;
}

void SetInitialLoopOrder(const DotGeometry& g, const target::Target& target, GemmParams& p) {
  // The model's panel bound is taken at the base slice depth (2 KiB per lane), so that a KC
  // DeepenSlices made deeper does not change the order on a second call.
  const int64_t base_kc = std::min<int64_t>(PackedKc(p), kBaseSliceBytes / PackedBytes(p));
  const bool model_panel = APanelBytesPerK(g, p) * base_kc <= kModelAPanelBytes;
  p.order = ASliverOuterApplies(g, p) && model_panel && !p.bf16_pairs ? LoopOrder::kASliverOuter
                                                                      : LoopOrder::kBSliverOuter;
  p.nc = ModelNc(g, target, p, p.order);
}

// Each K slice rereads and rewrites the C tiles once. Where the A-sliver-outer order's result
// outgrows a quarter of L3, those passes cost more than an A sliver's leaving L1 does: slices
// of 8 KiB of A per row (2048 f32; the sliver then streams from L2, prefetched), within
// kMaxAPanelBytes for all rows, with the B panel an eighth of L3 (ModelNc). Measured on Zen 4
// (L1d 32 KiB, L2 1 MiB, L3 32 MiB; 2 threads, C harness, one call per module per round,
// medians of 25-40 rounds, 14x32 tile): 1536³ KC 512/NC 128 34.7 ms -> KC 1536/NC 512 33.8 ms;
// 2048³ KC 512/NC 128 81.6-82.5 ms -> KC 2048/NC 512 78.7-79.1 ms; 4096³ KC 512/NC 1024 632 ms
// -> KC 1024/NC 512 626 ms (KC 2048, a 32 MiB A panel, 621 ms). At 1024³ (a 4 MiB result)
// KC 1024 was 2-4% slower than 512.
void DeepenSlices(const DotGeometry& g, const target::Target& target, GemmParams& p) {
  if (p.amx || p.bf16_pairs || p.inner || !p.pack_a || !p.pack_b) return;
  if (p.order != LoopOrder::kASliverOuter || !ResultOutgrowsL3Quarter(g, target, p)) return;
  if (g.k <= p.kc) return;
  const int64_t within_panel = kMaxAPanelBytes / APanelBytesPerK(g, p) / 8 * 8;
  const int64_t deep = BalancedKc(g.k, std::min<int64_t>(kDeepKc, within_panel), 8);
  if (deep <= p.kc) return;
  p.kc = deep;
  p.nc = ModelNc(g, target, p, p.order);
}

bool InitialAmx(const DotGeometry& g, const target::Target& target) {
  // Tiles win even where most of the 32×32 tile is padding (M or N of 1-8: packing bounds
  // both paths, and the vdpbf16ps tile is as wasteful at NR=32), but not where K is under half
  // a 32-deep tile step: the padded k multiply zeros (measured on the Xeon, 1 thread: K 8
  // 76 -> 54 GFLOP/s with tiles, K 16 84 -> 107, M 4 or N 8 with K 1024 up to 7x faster).
  return g.bf16_pairs && AmxAvailable(target) && g.k >= 16 && !Bf16BInPlace(g);
}

bool InnerApplies(const DotGeometry& g) { return g.blockable && g.lhs_rows_contiguous; }

bool InnerSwapped(const DotGeometry& g) {
  return InnerApplies(g) && g.rhs_rows_contiguous && g.m < g.n;
}

// Measured with a standalone 2-thread harness of this form (f32, M 4096, K 4096) against the
// blocked form's bench times: N 1-4 1.15 ms (A streamed once, at memory bandwidth; blocked with
// A packed 3.35 ms, oneDNN 1.16-2.66 ms), N 8 1.94 ms, N 12 2.47 ms; N 16 3.66 ms against 1.88
// ms for the blocked form with A in place (pack_a): with every operand streaming from L2 (no
// sliver stays in L1) this form is load-bound past 12 columns.
bool InitialInner(const DotGeometry& g) {
  if (!InnerApplies(g) || g.k < kInnerMinK) return false;
  return InnerSwapped(g) ? g.m <= kInnerMaxN : g.n <= kInnerMaxN;
}

void InnerTile(int64_t n, const target::Target& target, int64_t& mr, int64_t& nr) {
  const int64_t budget = VectorRegisters(target) * 3 / 4;
  nr = std::min<int64_t>(n <= 8 ? std::max<int64_t>(1, n) : 6, budget / 2);
  mr = std::clamp<int64_t>(budget / nr, 2, 8);
}

namespace {

// The inner-product form on or off for `g`: its orientation and tile follow.
void SetInner(const DotGeometry& g, const target::Target& target, bool on, GemmParams& p) {
  p.inner = on && InnerApplies(g);
  p.inner_swapped = p.inner && InnerSwapped(g);
  InnerTile(p.inner_swapped ? g.m : g.n, target, p.inner_mr, p.inner_nr);
}

}  // namespace

bool Bf16BInPlace(const DotGeometry& g) {
  return g.bf16_pairs && g.rhs_columns_contiguous && g.m <= kBf16InPlaceMaxRows;
}

GemmParams InitialGemmParams(const DotGeometry& g, const target::Target& target) {
  return InitialGemmParams(g, target, InitialAmx(g, target));
}

GemmParams InitialGemmParams(const DotGeometry& g, const target::Target& target, bool amx) {
  GemmParams p;
  p.blocked = g.blockable;
  // A bf16 B read in place is multiplied in f32 (A packed as f32), not in pairs.
  const bool bf16_in_place = Bf16BInPlace(g) && !amx;
  p.bf16_pairs = g.bf16_pairs && !bf16_in_place;
  p.amx = amx && g.bf16_pairs && AmxAvailable(target);
  // Register tile: MR×NR accumulators + NR/W vectors of B + one broadcast of A must fit the
  // register file; loads per FMA ((MR + NR/W) / (MR·NR/W)) must stay well under the 1 load :
  // 1 FMA port balance; among those, the most accumulators (hides FMA latency, best reuse).
  const int64_t lanes = F32Lanes(target), regs = VectorRegisters(target);
  auto max_rows = [regs](int64_t nv) { return std::min<int64_t>(16, (regs - nv - 1) / nv); };
  auto loads_per_fma = [](int64_t mr, int64_t nv) {
    return static_cast<double>(mr + nv) / static_cast<double>(mr * nv);
  };
  int64_t best = 0;
  for (int64_t nv = 1; nv * lanes <= 64; ++nv) {
    const int64_t mr = max_rows(nv);
    if (mr < 1 || loads_per_fma(mr, nv) > 0.7) continue;
    if (mr * nv > best) best = mr * nv, p.mr = mr, p.nr = nv * lanes;
  }
  // Empty dots are never blocked; keep the arithmetic below well defined for them anyway.
  const int64_t m = std::max<int64_t>(1, g.m), k = std::max<int64_t>(1, g.k);
  // A skinny M wastes the padded rows of every sliver: shrink the tile to it.
  p.mr = std::min(p.mr, m);
  // Rows padded up to a whole tile cost as much as real ones. Past 5% of M (64 output channels
  // on 14-row tiles are 70 rows), take the feasible tile that pads least (then the most
  // accumulators, then the fewest loads per FMA). Measured with bench --schedule, alternating:
  // 18k (M 128) 20.5 -> 19.0 ms and 33k (M 64) 16.9 -> 16.3 ms with 8x48 for 14x32; at M 512
  // (1.2% padded) 14x32 stayed 4% faster than 8x48 (41k), so it keeps the tile.
  if (!p.amx && PaddedRows(m, p.mr) * 20 > m) {
    int64_t best_pad = PaddedRows(m, p.mr), best_acc = 0;
    double best_ratio = 1.0;
    for (int64_t nv = 1; nv * lanes <= 64; ++nv) {
      for (int64_t mr = 1; mr <= max_rows(nv); ++mr) {
        const double ratio = loads_per_fma(mr, nv);
        if (ratio > 0.7) continue;
        const int64_t pad = PaddedRows(m, mr), acc = mr * nv;
        if (pad < best_pad || (pad == best_pad && acc > best_acc) ||
            (pad == best_pad && acc == best_acc && ratio < best_ratio)) {
          best_pad = pad, best_acc = acc, best_ratio = ratio;
          p.mr = mr, p.nr = nv * lanes;
        }
      }
    }
  }
  // A skinny N (a MoE router's few experts) would pad every tile's columns: NR shrinks to N in
  // whole vectors and MR grows to what the register file then holds (8 columns: 16x16, not
  // 14x32 with a 16-column last sliver).
  if (!p.amx && g.n < p.nr) {
    const int64_t nv = CeilDiv(std::max<int64_t>(1, g.n), lanes);
    p.nr = nv * lanes;
    p.mr = std::min(max_rows(nv), m);
  }
  // KC: deep slices, so that the C tile (loaded and stored once per slice) and the call
  // overhead are a small share of each micro-kernel call: 2 KiB of operand per lane (512 f32,
  // 1024 bf16), balanced over K's slices. The B sliver (KC×NR) then outgrows L1 and streams
  // from L2 with the A sliver; that costs less than more passes over C (measured on Zen 5 and
  // Xeon: KC 512 beat the L1-resident 176 by 10-15% at 1024-4096³, docs/benchmarks/).
  const int64_t elt = p.bf16_pairs ? 2 : 4;
  int64_t kc = kBaseSliceBytes / elt, kstep = 8;
  if (p.amx) {
    // The tile is the hardware's; KC in whole tile steps (kAmxKc says why so deep).
    p.mr = kAmxMr;
    p.nr = kAmxNr;
    kc = kAmxKc;
    kstep = kAmxKStep;
    // With at most two A tiles (M <= 64) each B sliver is reread by those few: KC so that the
    // sliver (KC × 32 bf16) fills half of L1 instead (bench --schedule, 2 threads, KC 2048 ->
    // 384: 16x2048x2048 511 -> 346 us, 32x4096x4096 2.15 -> 1.97 ms, 64x2048x2048 626 -> 545
    // us; 128x2048x2048 827 -> 991 us, so not past 64 rows).
    if (m <= 2 * kAmxMr) {
      kc = HalfL1Depth(target, kAmxNr * 2, kAmxKStep, kAmxKStep);
    }
  }
  p.kc = BalancedKc(k, kc, kstep);
  // B in place (pack_b off) where few A slivers would reuse each packed B sliver: packing B
  // then costs more than it saves (bench --schedule, 2 threads, against packed B: 17x2048x2048
  // 1.39 -> 0.65 ms, 64x2048x2048 2.80 -> 1.56 ms; at 128 rows about even, at 256 packing
  // wins). KC keeps the sliver (KC×NR) in half of L1 for the next A sliver; a single A sliver
  // of under 8 rows is all loads, and a short slice keeps the k rows in flight few enough for
  // the prefetchers to stream them (f32 1x4096x4096: KC 16 1.13 ms, 128 1.66 ms, 512 1.87 ms;
  // 4x4096x4096 KC 16 1.31 ms, 256 2.05 ms; at 8 rows even, at 12 rows KC 256 is 28% faster).
  // A bf16 B in place (Bf16BInPlace) gives up vdpbf16ps and the tiles for f32 FMAs on the
  // widened B: only for the few rows where reading B is all the time there is.
  const int64_t m_slivers = CeilDiv(m, p.mr);
  if (bf16_in_place || (g.rhs_columns_contiguous && !p.amx && !p.bf16_pairs && m_slivers <= 8)) {
    p.pack_b = false;
    const int64_t b_elt = g.rhs_type == DType::kBF16 ? 2 : 4;
    const int64_t slice =
        m_slivers == 1 && p.mr < 8 ? 16 : HalfL1Depth(target, p.nr * b_elt, 8, 16);
    p.kc = BalancedKc(k, slice, 8);
  }
  // A in place (pack_a off) where few B slivers would reuse each packed A sliver (a skinny N):
  // packing all of A was most of the work. At most 8 rows, each its own stream of broadcasts,
  // and K in slices of up to 4096 (the C tile read and written once per slice). Measured with
  // bench --schedule, 2 threads, f32 4096xNx4096 against the packed A (14x32 or 16x16, KC
  // 512): N 16 3.35 -> 1.96 ms, N 32 5.33 -> 2.92 ms, N 100 14.0 -> 10.9 ms; 12 rows or KC 512
  // instead were 5-30% slower.
  p.pack_a = !(g.lhs_rows_contiguous && !p.amx && !p.bf16_pairs && g.n <= kAInPlaceMaxN);
  if (!p.pack_a) {
    p.mr = std::min(p.mr, kAInPlaceMaxMr);
    if (p.pack_b) p.kc = BalancedKc(k, kAInPlaceKc, 8);
  }
  // MC: the packed A block (MC×KC) in a quarter of L2, leaving the rest to the B sliver and
  // the C tile streams (half of L2 measured slower).
  int64_t mc = target.l2_bytes / 4 / (PackedKc(p) * PackedBytes(p));
  p.mc = std::max(p.mr, mc / p.mr * p.mr);
  p.mc = std::min(p.mc, RoundUp(m, p.mr));
  p.unroll_k = 4;
  p.prefetch_c = true;
  // Measured on a 2048³ f32 GEMM (Xeon, AMX machine): 8 or 16 k steps ahead 3% faster than none.
  p.prefetch_ab = 8;
  SetInner(g, target, InitialInner(g), p);
  int64_t flops = 2 * g.batch * g.m * g.n * g.k;
  p.threads = flops < (int64_t{1} << 20) ? 1 : std::max(1, target.cores);
  // K ranges give every thread work however few the tiles are.
  if (!DepthSplitPays(g, p)) p.threads = std::min(p.threads, GemmTiles(g, p));
  p.split = InitialThreadSplit(g, p);
  SetInitialLoopOrder(g, target, p);
  DeepenSlices(g, target, p);
  p.share_a = ShareAPays(g, p, target);
  return p;
}

// The emitter's first cut shared the panel everywhere. In `bench --suite gemm` (f32, 2
// threads, alternated with the private panels' build, two runs each) it paid at 2048^3, a 16
// MiB panel (79.1/78.9 -> 77.9/77.6 ms), and lost below: 1024^3's 2 MiB slices 10.3/10.0 ->
// 10.8/10.9 ms, 512^3 1.24/1.21 -> 1.49/1.49 ms, 256^3 178-181 -> 176-265 us. (In a C harness
// calling the kernels back to back it won at 256^3 too: the loss is the barrier where a
// thread arrives late, as between the bench's calls.)
bool ShareAPays(const DotGeometry& g, const GemmParams& p, const target::Target& target) {
  if (p.order != LoopOrder::kASliverOuter || p.threads < 2 || p.split != ThreadSplit::kColumns ||
      g.batch != 1 || !p.pack_a || p.amx || p.inner) {
    return false;
  }
  const int64_t panel = RoundUp(std::max<int64_t>(1, g.m), p.mr) * PackedKc(p) * PackedBytes(p);
  return panel >= target.l3_bytes / kShareAMinL3Fraction;
}

// A thread with no tile of its own only waits at the others' barriers (bench --schedule, f32
// 8x16x8192, one 8x16 tile: 2 threads 20.6 us, 1 thread 12.3 us).
int64_t GemmTiles(const DotGeometry& g, const GemmParams& p) {
  const int64_t mr = p.inner ? p.inner_mr : p.mr, nr = p.inner ? p.inner_nr : p.nr;
  const int64_t rows = p.inner_swapped ? g.n : g.m, cols = p.inner_swapped ? g.m : g.n;
  return std::max<int64_t>(1, g.batch * CeilDiv(std::max<int64_t>(1, rows), mr) *
                                  CeilDiv(std::max<int64_t>(1, cols), nr));
}

Result<GemmParams> ResolveGemmParams(const space::Schedule& s, const DotGeometry& g,
                                     const target::Target& target) {
  GemmParams p;
  int64_t amx = s.Get("amx", InitialAmx(g, target) ? 1 : 0);
  MK_RETURN_IF_ERROR(CheckRange("amx", amx, 0, 1));
  if (amx == 1 && !AmxAvailable(target)) {
    return InvalidArgument("gemm parameter amx=1 needs Intel AMX (amx_tile and amx_bf16), which "
                           "target '" + target.name + "' lacks");
  }
  p.amx = amx == 1 && g.bf16_pairs;
  // Missing parameters take the model's value for this AMX choice; mr, nr and unroll_k that of
  // the register tile, which is what they mean (the AMX tile ignores them).
  const GemmParams init = InitialGemmParams(g, target, p.amx);
  const GemmParams reg = p.amx ? InitialGemmParams(g, target, false) : init;
  int64_t blocked = s.Get("gemm_blocked", init.blocked ? 1 : 0);
  MK_RETURN_IF_ERROR(CheckRange("gemm_blocked", blocked, 0, 1));
  p.blocked = blocked == 1 && g.blockable;
  p.mr = s.Get("mr", reg.mr);
  MK_RETURN_IF_ERROR(CheckRange("mr", p.mr, 1, 16));
  p.nr = s.Get("nr", reg.nr);
  MK_RETURN_IF_ERROR(CheckRange("nr", p.nr, 8, 64));
  if (p.nr % 8 != 0) {
    return InvalidArgument("gemm parameter nr=" + std::to_string(p.nr) +
                           " must be a multiple of 8");
  }
  p.kc = s.Get("kc", init.kc);
  MK_RETURN_IF_ERROR(CheckRange("kc", p.kc, 1, 1 << 16));
  p.mc = s.Get("mc", init.mc);
  MK_RETURN_IF_ERROR(CheckRange("mc", p.mc, 1, 1 << 20));
  p.nc = s.Get("nc", init.nc);
  MK_RETURN_IF_ERROR(CheckRange("nc", p.nc, 1, 1 << 20));
  p.unroll_k = s.Get("unroll_k", reg.unroll_k);
  MK_RETURN_IF_ERROR(CheckRange("unroll_k", p.unroll_k, 1, 16));
  int64_t prefetch_c = s.Get("prefetch_c", init.prefetch_c ? 1 : 0);
  MK_RETURN_IF_ERROR(CheckRange("prefetch_c", prefetch_c, 0, 1));
  p.prefetch_c = prefetch_c == 1;
  p.prefetch_ab = s.Get("prefetch_ab", init.prefetch_ab);
  MK_RETURN_IF_ERROR(CheckRange("prefetch_ab", p.prefetch_ab, 0, 64));
  int64_t pack_b = s.Get("pack_b", init.pack_b ? 1 : 0);
  MK_RETURN_IF_ERROR(CheckRange("pack_b", pack_b, 0, 1));
  // AMX tiles need B re-laid into pairs: packed whatever the schedule says; so does a bf16-pair
  // GEMM whose B cannot be read in place (without pairs it would only lose vdpbf16ps).
  p.pack_b = pack_b == 1 || p.amx || (g.bf16_pairs && !g.rhs_columns_contiguous);
  int64_t pack_a = s.Get("pack_a", init.pack_a ? 1 : 0);
  MK_RETURN_IF_ERROR(CheckRange("pack_a", pack_a, 0, 1));
  if (p.amx) {
    // The hardware's tile; K slices in whole tile steps.
    p.mr = kAmxMr;
    p.nr = kAmxNr;
    p.kc = RoundUp(p.kc, kAmxKStep);
  }
  int64_t threads = s.Get("threads", 0);
  MK_RETURN_IF_ERROR(CheckRange("threads", threads, 0, 1024));
  p.threads = threads == 0 ? init.threads : threads;
  // Without a split, the model's choice for these threads and this tile.
  int64_t split = s.Get("thread_split", static_cast<int64_t>(InitialThreadSplit(g, p)));
  MK_RETURN_IF_ERROR(CheckRange("thread_split", split, 0, 3));
  p.split = static_cast<ThreadSplit>(split);
  p.bf16_pairs = g.bf16_pairs && p.nr % 16 == 0 && p.pack_b;
  // A in place is an f32 A on the register tile; AMX tiles and bf16 pairs pack it.
  p.pack_a = pack_a == 1 || !g.lhs_rows_contiguous || p.amx || p.bf16_pairs;
  // The loop order, ignored where it cannot run (AMX tiles, a shared B panel, a large A);
  // without an NC, the model's for that order.
  int64_t order = s.Get("loop_order", static_cast<int64_t>(init.order));
  MK_RETURN_IF_ERROR(CheckRange("loop_order", order, 0, 1));
  p.order = static_cast<LoopOrder>(order);
  if (p.order == LoopOrder::kASliverOuter && !ASliverOuterApplies(g, p)) {
    p.order = LoopOrder::kBSliverOuter;
  }
  if (s.values.count("nc") == 0) p.nc = ModelNc(g, target, p, p.order);
  int64_t inner = s.Get("inner", init.inner ? 1 : 0);
  MK_RETURN_IF_ERROR(CheckRange("inner", inner, 0, 1));
  SetInner(g, target, inner == 1, p);
  // Clamp the cache blocks to the problem and to whole register tiles.
  p.kc = std::min(p.kc, std::max<int64_t>(1, g.k));
  p.mc = std::min(RoundUp(p.mc, p.mr), RoundUp(std::max<int64_t>(1, g.m), p.mr));
  p.nc = std::min(RoundUp(p.nc, p.nr), RoundUp(std::max<int64_t>(1, g.n), p.nr));
  // Without it, the model's choice for the parameters as resolved.
  int64_t share_a = s.Get("share_a", ShareAPays(g, p, target) ? 1 : 0);
  MK_RETURN_IF_ERROR(CheckRange("share_a", share_a, 0, 1));
  p.share_a = share_a == 1;
  return p;
}

bool RegisterTileFits(const target::Target& target, int64_t mr, int64_t nr) {
  const int64_t lanes = F32Lanes(target);
  const int64_t nv = CeilDiv(std::max<int64_t>(1, nr), lanes);
  return mr * nv + nv + 1 <= VectorRegisters(target);
}

std::vector<int64_t> GemmMrValues() {
  std::vector<int64_t> v;
  for (int64_t mr = 1; mr <= 16; ++mr) v.push_back(mr);
  return v;
}

std::vector<int64_t> GemmNrValues(const target::Target& target) {
  std::vector<int64_t> v;
  const int64_t lanes = F32Lanes(target);
  for (int64_t nr = lanes; nr <= 64; nr += lanes) v.push_back(nr);
  return v;
}

std::optional<std::pair<int64_t, int64_t>> RegisterTileWithNrMultiple(
    const target::Target& target, int64_t nr, int64_t multiple, int64_t m) {
  if (multiple <= 0) return std::nullopt;
  const int64_t lanes = F32Lanes(target), regs = VectorRegisters(target);
  // InitialGemmParams' register budget: MR×NV accumulators, NV vectors of B, one of A.
  auto tile = [&](int64_t v) -> std::optional<std::pair<int64_t, int64_t>> {
    const int64_t nv = v / lanes;
    const int64_t mr = std::min<int64_t>({16, (regs - nv - 1) / nv, std::max<int64_t>(1, m)});
    if (mr < 1) return std::nullopt;
    return std::make_pair(mr, v);
  };
  const std::vector<int64_t> values = GemmNrValues(target);
  // The narrowest multiple at least as wide as `nr` that fits the registers ...
  for (int64_t v : values) {
    if (v < nr || v % multiple != 0) continue;
    if (auto t = tile(v)) return t;
  }
  // ... else the widest narrower one: with 16 registers (AVX2) a 40-column tile has no wider
  // multiple of 32 that fits, but 32 columns do.
  for (auto it = values.rbegin(); it != values.rend(); ++it) {
    if (*it >= nr || *it % multiple != 0) continue;
    if (auto t = tile(*it)) return t;
  }
  return std::nullopt;
}

}  // namespace mk::codegen::cpu
