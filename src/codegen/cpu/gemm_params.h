// The blocked GEMM's parameters for one dot: what a dot_general is as a batched M×N×K GEMM,
// which parameters the emitter reads from the schedule, their analytical initial values (the
// BLIS model: register tile from the register file, KC deep, MC from L2, NC from L3, or from L2
// for the A-sliver-outer loop order), and their validation. Shared by the kernel space
// (gemm_space.cc) and the emitter (gemm_emitter.cc) so a schedule that leaves a parameter out
// gets the value the space would have proposed.
#pragma once

#include <cstdint>
#include <vector>

#include "hlo/instruction.h"
#include "space/schedule.h"
#include "support/status.h"
#include "target/target.h"

namespace mk::codegen::cpu {

// A dot_general as a batched GEMM: out[b][m][n] = sum_k lhs[b][m][k] * rhs[b][k][n], where b, m,
// n and k are the row-major linearizations of the batch, lhs-free, rhs-free and contracting dims.
struct DotGeometry {
  int64_t batch = 1, m = 1, n = 1, k = 1;
  std::vector<int64_t> batch_dims, m_dims, n_dims, k_dims;  // sizes, in linearization order
  // Operand dimension numbers of each role (lhs: batch, free, contracting; rhs: batch,
  // contracting, free), in the same order as the sizes above.
  std::vector<int64_t> lhs_batch, lhs_free, lhs_contracting;
  std::vector<int64_t> rhs_batch, rhs_free, rhs_contracting;
  hlo::DType lhs_type = hlo::DType::kF32, rhs_type = hlo::DType::kF32,
             out_type = hlo::DType::kF32;
  // Float inputs and a f32/bf16/f16 result: the blocked path applies. Integer and f64 dots keep
  // the generic loop nest (exact wrapping / double accumulation).
  bool blockable = false;
  // Both operands bf16 and the target has AVX512_BF16: pack as bf16 pairs, multiply with
  // vdpbf16ps. Otherwise operands are converted to f32 while packing.
  bool bf16_pairs = false;
  // A is gathered while packing (a convolution's input, conv_gemm.h): packing it costs about as
  // much as multiplying it, so threads should not each pack all of it (no column split).
  bool gathered_a = false;
  // B is an f32 or bf16 operand with one free dim, its minor-most, and one contracting dim: its
  // columns are contiguous, so the micro-kernel can read its slivers in place (pack_b off)
  // when the emitter finds it in memory.
  bool rhs_columns_contiguous = false;
  // A is an f32 operand with one free dim and one contracting dim, its minor-most: each row's
  // K elements are contiguous, so the inner-product form (GemmParams::inner) can read A's rows
  // in place when the emitter finds A in memory.
  bool lhs_rows_contiguous = false;
  // The same of B: an f32 operand with one free dim and one contracting dim, its minor-most (B
  // stored [N][K], as weights laid out [out][in] are).
  bool rhs_rows_contiguous = false;
};

Result<DotGeometry> AnalyzeDot(const hlo::Instruction& dot, const target::Target& target);

// How threads share a GEMM (parameter "thread_split").
enum class ThreadSplit {
  kBlocks = 0,   // the MC blocks (or NR slivers) of each K slice, around one shared packed B
                 // panel: BLIS's ic/jr loops, two barriers per K slice
  kBatch = 1,    // the batch: each thread runs whole GEMMs, packing privately
  kColumns = 2,  // NR-aligned column ranges of each GEMM, packing privately: no barriers, A
                 // packed once per thread
  kDepth = 3,    // K ranges: each thread multiplies all of M×N over its part of K into its own
                 // f32 partial result, then after one barrier the threads sum the partials tile
                 // by tile (row ranges) and run the write-back and tile epilogue there. For few
                 // tiles and a deep K. Not with row reductions or group norms in the tiles (they
                 // then split columns)
};

// The order of the loops around the micro-kernel (parameter "loop_order").
enum class LoopOrder {
  kBSliverOuter = 0,  // per NC panel (L3) and K slice: MC blocks of A (L2), each B sliver
                      // streaming past the block's A slivers (BLIS's jr/ir loops)
  kASliverOuter = 1,  // per K slice: all of the thread's rows of A packed once (L3); per NC
                      // panel (L2): each A sliver stays in L1 while the panel's B slivers stream
                      // past it. Register tiles only, and not around a shared B panel
};

struct GemmParams {
  bool blocked = true;
  int64_t mr = 6, nr = 16;  // register tile: MR rows × NR columns (NR a multiple of 8)
  int64_t kc = 256, mc = 96, nc = 4096;  // cache blocks (mc a multiple of mr, nc of nr)
  int64_t unroll_k = 4;    // unroll of the micro-kernel's k loop
  bool prefetch_c = true;  // the micro-kernel prefetches its C tile before the k loop, so the
                           // write-back does not wait on C rows that left the caches
  // The register micro-kernel prefetches A and B this many k steps ahead (0: no); the AMX tile
  // micro-kernel prefetches the next B sliver into L2 when it is > 0.
  int64_t prefetch_ab = 8;
  // B packed into NR-column slivers (BLIS), or, off, read in place by a micro-kernel that
  // steps B's rows at their own stride: only where B is an f32 or bf16 array in memory with
  // contiguous columns and the tile is a register one (not AMX; a bf16-pair GEMM then runs in
  // f32 on the widened B); elsewhere it is packed whatever this says. Pays where few A slivers
  // reuse each packed sliver (a skinny M).
  bool pack_b = true;
  // A packed into MR-row slivers (BLIS), or, off, read in place: the micro-kernel broadcasts
  // from MR rows of A at their own stride, and only a partial last sliver is packed (row-major,
  // zero rows past M). Only where DotGeometry::lhs_rows_contiguous, the tile is a register one
  // and the emitter finds A in memory. Pays where few B slivers reuse each packed A sliver (a
  // skinny N), where packing all of A was most of the work.
  bool pack_a = true;
  int64_t threads = 1;     // OpenMP threads (resolved: >= 1)
  ThreadSplit split = ThreadSplit::kBlocks;
  LoopOrder order = LoopOrder::kBSliverOuter;
  // Threads splitting one GEMM's columns under kASliverOuter pack one A panel together, each a
  // range of its slivers, with a barrier per K slice (ShareAPays), rather than one each.
  bool share_a = false;
  bool bf16_pairs = false;  // DotGeometry::bf16_pairs and NR a multiple of 16 (zmm = 16 columns)
  // Intel AMX tiles (tdpbf16ps) for a bf16-pair GEMM: the tile is the hardware's, MR = NR = 32
  // (2×2 tiles of 16×16 f32), and K slices are padded to whole 32-deep tile steps.
  bool amx = false;
  // The inner-product form for a small N: vector lanes along K, each result the horizontal sum
  // of an A row (read in place, never packed) times a B column (B packed transposed, N rows of
  // K). Only where DotGeometry::lhs_rows_contiguous and the emitter finds A in memory; elsewhere
  // the blocked form runs whatever this says. Its tile is InnerTile's (mr, nr and the cache
  // blocks are not used): a blocked GEMM of a few columns spends its time packing all of A.
  bool inner = false;
  int64_t inner_mr = 1, inner_nr = 1;
  // ... with the operands' roles swapped (InnerSwapped): B's N rows are the tile's rows and A's
  // few rows its columns, both read in place, nothing packed.
  bool inner_swapped = false;
};

// The inner-product form's model: where it applies (lhs_rows_contiguous, blockable), and where
// the model picks it: N of at most kInnerMaxN columns and K of at least kInnerMinK (each
// result ends with a horizontal sum of MR·NR vectors, paid once per K).
constexpr int64_t kInnerMaxN = 12, kInnerMinK = 64;
// The model reads A in place (pack_a off) for an N of at most this many columns, on a tile of
// at most kAInPlaceMaxMr rows and (B packed) K slices of up to kAInPlaceKc.
constexpr int64_t kAInPlaceMaxN = 128, kAInPlaceMaxMr = 8, kAInPlaceKc = 4096;
// Swapped (where both operands' rows are contiguous along K and M is under N), at most
// kInnerMaxN rows of A: a decode-time GEMV against weights stored [N][K].
bool InnerApplies(const DotGeometry& g);
bool InnerSwapped(const DotGeometry& g);
bool InitialInner(const DotGeometry& g);
// Its register tile for N columns (M when swapped) on `target`: NR = N up to 8 (one pass over A's rows), 6
// above; MR rows (2 to 8) so that the MR·NR accumulators take at most 3/4 of the vector
// registers (AVX-512: 24 of 32), the rest holding the step's MR + NR loads.
void InnerTile(int64_t n, const target::Target& target, int64_t& mr, int64_t& nr);

// The AMX micro-kernel's fixed shape: 2 A tiles of 16 rows, 2 B tiles of 16 columns, and the
// bf16 depth of one tile step (a 64-byte tile row).
constexpr int64_t kAmxMr = 32, kAmxNr = 32, kAmxKStep = 32;

// The target has the AMX tile and bf16 instructions (amx_tile, amx_bf16).
bool AmxAvailable(const target::Target& target);

// Whether the model reads a bf16-pair GEMM's B in place (pack_b off) and multiplies it in f32
// rather than in pairs or tiles: B with contiguous columns and at most this many rows, where
// streaming B once is the whole cost.
constexpr int64_t kBf16InPlaceMaxRows = 12;
bool Bf16BInPlace(const DotGeometry& g);

// Whether the model runs `g` on AMX tiles (a bf16-pair GEMM, AMX available, K deep enough that
// the 32-deep tile step is not mostly padding).
bool InitialAmx(const DotGeometry& g, const target::Target& target);

// The analytical choice for `g` on `target` (threads: all cores for big dots, 1 for tiny ones),
// AMX as InitialAmx says; or with AMX on or off as `amx` says (on only where it applies).
GemmParams InitialGemmParams(const DotGeometry& g, const target::Target& target);
GemmParams InitialGemmParams(const DotGeometry& g, const target::Target& target, bool amx);

// The parameters `schedule` asks for (missing ones take InitialGemmParams' value), clamped to the
// dot (mc, nc rounded up to tile multiples and capped at the problem size, kc capped at K).
// An illegal value is an InvalidArgument naming the parameter. A dot that is not blockable gets
// blocked = false whatever the schedule says. "amx" (0/1) is read on every GEMM: 1 on a target
// without AMX is an error; on a GEMM that is not bf16 pairs it is ignored. Under amx=1 the tile
// is the hardware's: mr and nr are still validated but the tile is 32×32 whatever they say
// (so a tuner's mr/nr never make an amx=1 schedule illegal), kc is rounded up to a multiple of
// 32 and mc, nc to multiples of 32.
Result<GemmParams> ResolveGemmParams(const space::Schedule& schedule, const DotGeometry& g,
                                     const target::Target& target);

// The register tiles of `g` under `p` (batch × row tiles × column tiles, of the inner-product
// form's tile under p.inner): the model gives a GEMM at most that many threads.
int64_t GemmTiles(const DotGeometry& g, const GemmParams& p);

// The thread split the model picks for `g` under `p` (its threads and tile).
ThreadSplit InitialThreadSplit(const DotGeometry& g, const GemmParams& p);

// Whether the model splits `g`'s K over its threads (ThreadSplit::kDepth): a blocked register
// or AMX tile GEMM (not the inner-product form, not a batch the threads can share) whose result
// is small (M·N at most kDepthMaxResult) next to its depth (K at least kDepthMinRatio × the
// larger of M and N, and at least kDepthMinK).
bool DepthSplitPays(const DotGeometry& g, const GemmParams& p);
constexpr int64_t kDepthMaxResult = 512 * 512, kDepthMinRatio = 8, kDepthMinK = 1024;

// Whether the model shares the A panel (GemmParams::share_a) of `g` under `p`: the A-sliver-
// outer order, threads over the columns of one GEMM (no batch), A packed, and one slice's panel
// of at least kShareAMinL3Fraction of L3 (there two private copies crowd L3 out).
bool ShareAPays(const DotGeometry& g, const GemmParams& p, const target::Target& target);
constexpr int64_t kShareAMinL3Fraction = 4;  // a quarter

// Whether LoopOrder::kASliverOuter can run `g` under `p`: register tiles (not AMX), no shared B
// panel (threads split columns or the batch, or one thread), and the packed A of all M rows for
// one K slice within kMaxAPanelBytes (per thread: 4096 rows of 2048 f32 fit, for
// DeepenSlices). The model picks the order only where the panel at 2 KiB per row is within
// kModelAPanelBytes (what it was measured on).
bool ASliverOuterApplies(const DotGeometry& g, const GemmParams& p);
constexpr int64_t kMaxAPanelBytes = int64_t{40} << 20;
constexpr int64_t kModelAPanelBytes = int64_t{16} << 20;

// The model's loop order for `g` under `p` (its tile, KC, threads and split), and the NC that
// goes with it (the B panel in L3 for kBSliverOuter, in a quarter of L2 for kASliverOuter):
// sets p.order and p.nc.
void SetInitialLoopOrder(const DotGeometry& g, const target::Target& target, GemmParams& p);

// Under the A-sliver-outer order, a result over a quarter of L3 gets K slices of up to
// kDeepKc f32 (its A panel within kMaxAPanelBytes) and the NC that goes with them: sets p.kc
// and p.nc, or leaves them (the gemm_params.cc comment has the measurements).
void DeepenSlices(const DotGeometry& g, const target::Target& target, GemmParams& p);
constexpr int64_t kDeepKc = 2048;

// Whether an MR×NR register tile fits `target`'s vector registers: its MR·NV accumulators, the
// NV vectors of B and the broadcast of A (NV = NR / f32 lanes, rounded up). InitialGemmParams and
// RegisterTileWithNrMultiple choose only such tiles; the kernel space declares it as a constraint.
bool RegisterTileFits(const target::Target& target, int64_t mr, int64_t nr);

// Legal values of each parameter, for the kernel space (ascending).
std::vector<int64_t> GemmMrValues();
std::vector<int64_t> GemmNrValues(const target::Target& target);

// The register tile whose NR is the narrowest legal multiple of `multiple` at least `nr` wide
// (a GEMM whose tiles must hold whole groups of `multiple` columns, gemm_segment.h), else the
// widest legal one narrower than `nr`, with the most rows its accumulators leave registers for
// (at most `m`); nullopt when none is legal.
std::optional<std::pair<int64_t, int64_t>> RegisterTileWithNrMultiple(
    const target::Target& target, int64_t nr, int64_t multiple, int64_t m);

}  // namespace mk::codegen::cpu
