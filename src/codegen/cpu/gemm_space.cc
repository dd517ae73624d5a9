#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

#include "codegen/cpu/conv_gemm.h"
#include "codegen/cpu/gemm_epilogue.h"
#include "codegen/cpu/gemm_row_reduce.h"
#include "codegen/cpu/gemm_segment.h"
#include "codegen/cpu/gemm_params.h"
#include "codegen/cpu/kernel_spaces.h"

namespace mk::codegen::cpu {

namespace {

// `values` plus `initial`, ascending and without repeats.
std::vector<int64_t> WithInitial(std::vector<int64_t> values, int64_t initial) {
  values.push_back(initial);
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

// A domain: `values` with the model's `initial` added, or (analytical off) `values` alone, the
// initial then set by CenterOnMedians.
space::ParamDomain Param(bool analytical, const char* name, std::vector<int64_t> values,
                         int64_t initial, const char* doc) {
  space::ParamDomain d;
  d.name = name;
  d.values = analytical ? WithInitial(std::move(values), initial) : std::move(values);
  d.initial = initial;
  d.doc = doc;
  return d;
}

// A cache block's grid for a dim of `dim`: the values below it and the first that covers it
// (ResolveGemmParams caps a block at the dim, so every larger one builds the same library).
std::vector<int64_t> UpToDim(std::vector<int64_t> values, int64_t dim) {
  std::vector<int64_t> out;
  for (int64_t v : values) {
    out.push_back(v);
    if (v >= dim) break;
  }
  return out;
}

// The register tile must fit the register file (gemm_params.h RegisterTileFits). The
// micro-kernel (gemm_microkernel.cc) is written as MR·NR/lanes accumulator variables that live
// in vector registers across the whole k loop; a tile past the register file makes GCC spill
// and reload accumulators on every k step, a kernel the BLIS blocking around it was never meant
// for. Decided as soon as mr and nr are: where the register tile does not run (gemm_blocked 0,
// amx 1, inner 1) mr and nr are ignored, so a point it rules out there has a legal twin that
// builds the same library.
space::Constraint RegisterTileConstraint(const target::Target& target) {
  space::Constraint c;
  c.name = "register_tile";
  c.reason = "the micro-kernel keeps MR*NR/lanes accumulators, NR/lanes B vectors and an A "
             "broadcast in vector registers; a larger tile spills every k step";
  c.check = [target](const space::Schedule& s) {
    auto mr = s.values.find("mr"), nr = s.values.find("nr");
    if (mr == s.values.end() || nr == s.values.end()) return space::Verdict::kUnknown;
    return RegisterTileFits(target, mr->second, nr->second) ? space::Verdict::kOk
                                                             : space::Verdict::kViolated;
  };
  return c;
}

// The tile epilogue reads its other operands tile by tile: MR rows, NR columns at a time,
// the next piece of a row only after MC/MR further tiles. For an operand as large as the
// result that is one 128-byte read per row per tile, from memory, which a short K (little
// multiply per tile) cannot hide: 16p (batch 8, 1024x1024, K 128 on AMX tiles, times an f32
// array of the result's size) ran 24.4 ms fused, 16.5 ms as a second pass over the stored
// GEMM. With K 2048 (26k's and 30k's residuals) the two were within noise, so fusing stays the
// rule there.
int64_t InitialFuseEpilogue(const analysis::Kernel& kernel, const GemmEpilogue& e,
                            const DotGeometry& g) {
  constexpr int64_t kShortK = 256;
  if (g.k > kShortK) return 1;
  for (const hlo::Instruction* op : e.ops) {
    for (const hlo::Instruction* in : op->operands) {
      const bool input = std::find(kernel.inputs.begin(), kernel.inputs.end(), in) !=
                         kernel.inputs.end();
      if (input && in->shape.num_elements() == e.dot->shape.num_elements()) {
        return 0;
      }
    }
  }
  return 1;
}

// AMX GEMMs whose fused epilogue rounds the f32 result to another type (or whose tiles compute
// row reductions) start with one K slice up to this depth: the tiles then go from the
// micro-kernel to the epilogue through the tile buffer and the f32 result is never stored
// (TileEpilogue::from_tile). 9p's down projection
// (K 2816): 3.32 -> 3.17 ms with one slice instead of two of 1408 (bench --schedule, 3 rounds
// each, alternating).
constexpr int64_t kAmxOneSliceK = 4096;

int64_t InitialKc(const GemmParams& init, const DotGeometry& g, bool reads_unrounded,
                  int64_t fuse_epilogue) {
  const bool from_tile = reads_unrounded && fuse_epilogue == 1;
  if (init.amx && from_tile && g.k > init.kc && g.k <= kAmxOneSliceK) {
    return g.k;  // ResolveGemmParams rounds it to whole tile steps
  }
  return init.kc;
}

// The GEMM a contraction hero is: a dot_general, or a convolution on the implicit-GEMM path
// (conv_gemm.h). None for a convolution that keeps the generic loop nest.
std::optional<DotGeometry> HeroGemm(const hlo::Instruction& hero, const target::Target& target) {
  if (hero.opcode == hlo::Opcode::kDot) {
    auto g = AnalyzeDot(hero, target);
    if (g.ok()) return *g;
  } else if (hero.opcode == hlo::Opcode::kConvolution) {
    auto cg = AnalyzeConv(hero, target);
    if (cg.ok() && cg->fallback.empty()) return cg->g;
  }
  return std::nullopt;
}

// The blocked GEMM's own parameters: under gemm_blocked=0 the dot or convolution is a loop nest
// (materialize.cc, materialize_conv.cc) that reads none of them.
constexpr const char* kBlockedOnly[] = {"amx", "mr", "nr", "kc", "mc", "nc", "unroll_k",
                                        "prefetch_c", "prefetch_ab", "pack_b", "pack_a", "inner",
                                        "share_a", "thread_split", "loop_order"};

// Under gemm_blocked=0 every value of a blocked-only parameter builds the same library: only
// each one's first value is kept. Declared for the grids alone: their median start is the loop
// nest (the lower median of {0, 1}), where a walk over these dead parameters proposes nothing but
// duplicates of one library; the analytical space starts blocked, and optimize's walk keeps its
// one-step move to the loop nest.
space::Constraint LoopNestConstraint(const space::KernelSpace& s) {
  std::map<std::string, int64_t> first;
  for (const auto& p : s.params) {
    for (const char* name : kBlockedOnly) {
      if (p.name == name && !p.values.empty()) first[p.name] = p.values.front();
    }
  }
  space::Constraint c;
  c.name = "loop_nest";
  c.reason = "under gemm_blocked=0 the loop nest reads no blocked-GEMM parameter: only their "
             "first values are kept";
  c.check = [first](const space::Schedule& sched) {
    auto blocked = sched.values.find("gemm_blocked");
    if (blocked == sched.values.end()) return space::Verdict::kUnknown;
    if (blocked->second != 0) return space::Verdict::kOk;
    bool undecided = false;
    for (const auto& [name, value] : first) {
      auto it = sched.values.find(name);
      if (it == sched.values.end()) undecided = true;
      else if (it->second != value) return space::Verdict::kViolated;
    }
    return undecided ? space::Verdict::kUnknown : space::Verdict::kOk;
  };
  return c;
}

}  // namespace

// Contraction kernels: the blocked GEMM's register and cache blocking (gemm_params.h) for a dot
// or convolution hero; a convolution on the generic path has only the thread count.
space::KernelSpace ContractionKernelSpace(const analysis::Kernel& kernel,
                                          const target::Target& target, bool analytical) {
  space::KernelSpace s;
  s.params.push_back(ThreadsParam(kernel, target));
  if (auto bits = VectorBitsParam(kernel, target)) s.params.push_back(*bits);
  if (!kernel.hero) return s;
  const std::optional<DotGeometry> geometry = HeroGemm(*kernel.hero, target);
  if (!geometry) return s;
  const DotGeometry& g = *geometry;
  if (!g.blockable) {
    s.params.push_back(Param(analytical, "gemm_blocked", {0}, 0, "blocked GEMM (integer/f64 dots: no)"));
    return s;
  }
  GemmParams init = InitialGemmParams(g, target);
  // No more threads than InitialGemmParams gives the GEMM (its tiles, unless K ranges split it),
  // whatever the kernel's size says.
  s.params[0].initial = std::min<int64_t>(s.params[0].initial, init.threads);
  init.threads = s.params[0].initial;
  init.split = InitialThreadSplit(g, init);
  SetInitialLoopOrder(g, target, init);
  DeepenSlices(g, target, init);
  // mr, nr and unroll_k shape the register tile; under amx=1 the tile is the hardware's and
  // they are not used, so their initial values are the register tile's either way.
  const GemmParams reg = InitialGemmParams(g, target, false);
  s.params.push_back(Param(analytical, "gemm_blocked", {0, 1}, 1,
                           "1: packed BLIS-style GEMM with a SIMD micro-kernel; 0: loop nest"));
  if (g.bf16_pairs && AmxAvailable(target)) {
    s.params.push_back(Param(analytical, "amx", {0, 1}, init.amx ? 1 : 0,
                             "1: Intel AMX tiles (tdpbf16ps, 32x32 tile); 0: vdpbf16ps registers"));
  }
  const std::optional<GemmEpilogue> epilogue = PlanGemmEpilogue(kernel);
  // A group norm in the tiles needs tiles of whole groups: NR a multiple of the group.
  const std::optional<analysis::SegmentEpilogue> segment =
      epilogue ? std::nullopt : KernelSegmentEpilogue(kernel);
  int64_t mr = reg.mr, nr = reg.nr;
  if (segment && !init.amx && nr % segment->segment != 0) {
    if (auto tile = RegisterTileWithNrMultiple(target, nr, segment->segment, g.m)) {
      std::tie(mr, nr) = *tile;
    }
  }
  // Without the model, the tile stops at the first value that covers the dims (rows past M or
  // columns past N are padding).
  std::vector<int64_t> mr_values = GemmMrValues(), nr_values = GemmNrValues(target);
  if (!analytical) {
    mr_values = UpToDim(std::move(mr_values), g.m);
    nr_values = UpToDim(std::move(nr_values), g.n);
  }
  s.params.push_back(Param(analytical, "mr", std::move(mr_values), mr,
                           "micro-kernel tile rows (MR)"));
  s.params.push_back(Param(analytical, "nr", std::move(nr_values), nr,
                           "micro-kernel tile columns (NR, whole vectors)"));
  s.constraints.push_back(RegisterTileConstraint(target));
  // 2048: the AMX tiles' initial KC (2 KiB of operand per lane, gemm_params.cc); 4096: one
  // slice for an epilogue fed from the tile buffer (InitialKc).
  // Row reductions on the tiles read the f32 result unrounded, like a from-tile epilogue.
  const bool row_reduce = !epilogue && !segment && KernelRowReduceEpilogue(kernel).has_value();
  const int64_t fuse =
      epilogue ? InitialFuseEpilogue(kernel, *epilogue, g) : (row_reduce || segment) ? 1 : 0;
  auto blocks = [&](std::vector<int64_t> values, int64_t dim) {
    return analytical ? values : UpToDim(std::move(values), dim);
  };
  s.params.push_back(Param(analytical, "kc",
                           blocks({16, 32, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 2048, 4096},
                                  g.k),
                           InitialKc(init, g, (epilogue && ReadsUnroundedResult(*epilogue)) ||
                                              row_reduce, fuse),
                           "K slice per packed panel (KC: A and B slivers in L1)"));
  s.params.push_back(Param(analytical, "mc",
                           blocks({16, 32, 64, 96, 128, 192, 256, 384, 512, 768, 1024}, g.m),
                           init.mc,
                           "rows per packed A block (MC: the block in L2; rounded to MR; "
                           "loop_order 1 packs all rows)"));
  s.params.push_back(Param(analytical, "nc",
                           blocks({64, 128, 256, 512, 1024, 2048, 4096, 8192}, g.n), init.nc,
                           "columns per packed B panel (NC: the panel in L3, in L2 under "
                           "loop_order 1; rounded to NR)"));
  s.params.push_back(
      Param(analytical, "unroll_k", {1, 2, 4, 8}, reg.unroll_k, "unroll of the micro-kernel's k loop"));
  s.params.push_back(Param(analytical, "prefetch_c", {0, 1}, init.prefetch_c ? 1 : 0,
                           "1: the micro-kernel prefetches its C tile before the k loop"));
  s.params.push_back(Param(analytical, "prefetch_ab", {0, 4, 8, 16}, init.prefetch_ab,
                           "k steps ahead the micro-kernel prefetches its A and B slivers "
                           "(0: none); AMX tiles: > 0 prefetches the next B sliver into L2"));
  if (g.rhs_columns_contiguous) {
    s.params.push_back(Param(analytical, "pack_b", {0, 1}, init.pack_b ? 1 : 0,
                             "1: B packed into NR-column slivers; 0: read in place at its own "
                             "row stride (an f32 or bf16 B with contiguous columns; a skinny M)"));
  }
  if (g.lhs_rows_contiguous && g.blockable) {
    s.params.push_back(Param(analytical, "pack_a", {0, 1}, init.pack_a ? 1 : 0,
                             "1: A packed into MR-row slivers; 0: read in place at its own row "
                             "stride (an f32 A contiguous along K; a skinny N)"));
  }
  if (InnerApplies(g)) {
    s.params.push_back(Param(analytical, "inner", {0, 1}, init.inner ? 1 : 0,
                             "1: inner-product form, lanes along K: A's rows read in place, B "
                             "packed transposed (an f32 A contiguous along K; a small N)"));
  }
  s.params.push_back(Param(analytical, "share_a", {0, 1}, init.share_a ? 1 : 0,
                           "1: threads splitting one GEMM's columns (loop_order 1) pack one "
                           "shared A panel, a barrier per K slice; 0: each packs its own"));
  s.params.push_back(Param(analytical, "thread_split", {0, 1, 2, 3}, static_cast<int64_t>(init.split),
                           "threads split: 0 row blocks (shared B), 1 the batch, 2 columns, 3 K "
                           "(partial results summed; columns where the tiles reduce rows)"));
  // Register tiles only: ignored under amx=1 and around a shared B panel (thread_split 0).
  s.params.push_back(Param(analytical, "loop_order", {0, 1}, static_cast<int64_t>(init.order),
                           "0: each B sliver streams past an MC block of A (L2); 1: each A "
                           "sliver stays in L1 while an L2-sized B panel streams past it"));
  if (epilogue || row_reduce || segment) {
    s.params.push_back(Param(analytical, "fuse_epilogue", {0, 1}, fuse,
                             "1: the elementwise epilogue, the row reductions, or a group norm's "
                             "passes run on each finished tile while it is in cache "
                             "(gemm_epilogue.h, gemm_row_reduce.h, gemm_segment.h); 0: a second "
                             "pass over the stored GEMM"));
  }
  if (segment) {
    // The group norm's reduces (reduce_emit.cc): vector partial sums along each group.
    s.params.push_back(Param(analytical, "reduce_lanes", {1, 8, 16}, segment->segment >= 16 ? 16 : 8,
                             "partial accumulators per group in a group norm's reduces (1: the "
                             "serial order)"));
  }
  if (!analytical) s.constraints.push_back(LoopNestConstraint(s));
  return s;
}

}  // namespace mk::codegen::cpu
