#include "codegen/cpu/gemm_emitter.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "codegen/cpu/cpu_types.h"
#include "codegen/cpu/element_chain.h"
#include "codegen/cpu/gemm_amx.h"
#include "codegen/cpu/gemm_microkernel.h"
#include "codegen/cpu/gemm_pack.h"

namespace mk::codegen::cpu {

using hlo::DType;

namespace {

int64_t RoundUp(int64_t v, int64_t to) { return (v + to - 1) / to * to; }
int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
std::string S(int64_t v) { return std::to_string(v); }

// Declares the row-major multi-index of linear index `var` over `dims` ("const int64_t
// <prefix>d = ...;", the literal 0 for dims of size 1) and returns the index expressions.
std::vector<std::string> Decompose(std::ostream& o, const std::string& indent,
                                   const std::string& var, const std::vector<int64_t>& dims,
                                   const std::string& prefix) {
  if (dims.size() == 1) return {var};
  std::vector<std::string> idx(dims.size(), std::string("0"));
  int64_t stride = 1;
  for (size_t d = dims.size(); d-- > 0;) {
    if (dims[d] == 1) continue;
    std::string name = prefix + S(static_cast<int64_t>(d));
    o << indent << "const int64_t " << name << " = ";
    if (stride == 1) o << var;
    else o << "(" << var << " / " << stride << ")";
    if (d > 0) o << " % " << dims[d];
    o << ";\n";
    idx[d] = std::move(name);
    stride *= dims[d];
  }
  return idx;
}

// An operand's index from the indices of its batch, free and contracting dims.
std::vector<std::string> OperandIndex(int64_t rank, const std::vector<int64_t>& batch_dims,
                                      const std::vector<std::string>& batch_idx,
                                      const std::vector<int64_t>& free_dims,
                                      const std::vector<std::string>& free_idx,
                                      const std::vector<int64_t>& con_dims,
                                      const std::vector<std::string>& con_idx) {
  std::vector<std::string> idx(static_cast<size_t>(rank), "0");
  auto place = [&](const std::vector<int64_t>& dims, const std::vector<std::string>& vals) {
    for (size_t i = 0; i < dims.size(); ++i) idx[static_cast<size_t>(dims[i])] = vals[i];
  };
  place(batch_dims, batch_idx);
  place(free_dims, free_idx);
  place(con_dims, con_idx);
  return idx;
}

bool Contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Everything the text generation needs, decided once.
struct Layout {
  bool pairs = false;  // bf16 panels: B in pairs, A in pairs or (amx) in rows
  bool amx = false;    // the AMX micro-kernel (gemm_amx.h): A in rows, K slices padded to 32
  std::string pt;      // packed element type
  int64_t mc = 0;      // MC after the thread split
  int64_t groups = 1;  // NR-sliver groups per MC block (threads share a skinny M)
  int64_t work = 1;    // (MC block, sliver group) work items per K slice
  bool parallel = false, shared_b = false;
  bool a_outer = false;   // LoopOrder::kASliverOuter: one A panel of all M per K slice
  // ... packed by all the threads together into one panel they share (column ranges, one
  // GEMM): each thread packs a range of its slivers, then one barrier. Two panels alternate
  // over the K slices, so the barrier after packing slice s + 1 is also the one that says every
  // thread is done reading slice s - 1's panel.
  bool shared_a = false;
  int64_t a_panels = 1;
  int64_t chunks = 1;  // column ranges per GEMM (ThreadSplit::kColumns: one per thread)
  bool need_acc = false;  // bf16/f16 result with several K slices: f32 partial sums
  // ThreadSplit::kDepth: each thread's K range into its own f32 partial result (gm_part, all
  // of [batch][M][N]), then the partials summed tile by tile (EmitDepthSum).
  bool depth = false;
  bool tile_only = false;  // the epilogue reads each tile from gm_tile (TileEpilogue::from_tile)
  std::string ukr;        // micro-kernel name
  int64_t mr = 0, nr = 0;
  int64_t threads = 1;
  // B read in place (GemmParams::pack_b off, an f32 or bf16 B with contiguous columns): full
  // slivers at b_addr (row stride ldb; bf16 widened by the micro-kernel), only a partial last
  // sliver packed (as f32, zero-padded) into gm_bp, for ukr_part.
  bool b_in_place = false, b_bf16 = false;
  std::string b_addr, ldb, ukr_part;
  // The last sliver's own micro-kernel (register tiles): N % NR columns rounded up to whole
  // vectors, reading the NR-wide packed sliver at its row stride; 0 where N fills its slivers.
  int64_t nr_edge = 0;
  std::string ukr_edge;
  // The last sliver of M % MR rows (mr_edge; 0 where M fills its slivers): each kernel's twin
  // over just those rows of the MR-wide packed sliver (1024 rows on 14-row slivers: 2 rows
  // multiplied for the last sliver, not 14).
  int64_t mr_edge = 0;
  std::string ukr_rows, ukr_edge_rows, ukr_part_rows;
  // A read in place (GemmParams::pack_a off, an f32 A in memory contiguous along K): full
  // slivers at a_addr (row stride lda), a partial last sliver packed row-major (row stride
  // gm_kc, zero rows past M) into gm_ap; every micro-kernel takes the sliver's lda.
  bool a_in_place = false;
  std::string a_addr, lda;
};

// A bf16 operand's lambda returns values that are exactly bf16 (every bf16 value is rounded
// where it is computed), so its bf16 bits are the top half of the f32: packing is a copy.
std::string PackValue(const Layout& l, const std::string& call) {
  if (l.pairs) return "static_cast<uint16_t>(mkrt::f2u(" + call + ") >> 16)";
  return "static_cast<float>(" + call + ")";
}

// The pair's second element: zero past the end of the K slice.
std::string Second(const std::string& v) { return "gm_two ? " + v + " : 0"; }

// An element's packed value: converted, and 0 where the source says it is not valid.
std::string PackedElement(const Layout& l, const PackElement& e) {
  if (e.valid.empty()) return PackValue(l, e.value);
  return "(" + e.valid + ") ? " + PackValue(l, e.value) + " : 0";
}

// One side of the GEMM: an A sliver has MR lanes (rows, over M), a B sliver NR lanes (columns,
// over N). Packed k-major: element (k, lane) at dst[k*W + lane], or with bf16 pairs at
// dst[(k & ~1)*W + 2*lane + (k & 1)]; or lane-major (the AMX A sliver): at dst[lane*kpad + k].
// The packing writes k < gm_kc; a K slice padded past it (gm_kpad) is zeroed by EmitKTail.
struct Sliver {
  const PackSource* source;
  const std::vector<int64_t>* lane_sizes;  // sizes of the lane index space (M or N dims)
  const std::vector<int64_t>* k_sizes;
  int64_t width;      // W: MR or NR
  std::string valid;  // lanes holding data; the rest are zero
  std::string first;  // linear lane index of lane 0
  bool pairs = false;       // bf16 pairs (k-major)
  bool lane_major = false;  // each lane's k slice contiguous
};

// The start of k row `k` (the row pointer the lane slots below index).
std::string RowStart(const Sliver& s, const std::string& k) {
  if (s.lane_major) return "gm_dst + " + k;
  return "gm_dst + " + k + " * " + S(s.width);
}

// The offset of lane `lane` from its k row's start, for pair half `half` (0: even k, 1: odd k).
std::string LaneSlot(const Sliver& s, const std::string& lane, int half) {
  if (s.lane_major) return "(" + lane + ") * gm_kpad";
  if (s.pairs) return "2 * (" + lane + ") + " + S(half);
  return lane;
}

// A LaneStore into row pointer `row` for the pair half `half` (0 without pairs).
LaneStore RowStore(const Layout& l, const Sliver& s, const std::string& row, int half) {
  return [&l, &s, row, half](const std::string& lane, const std::string& value) {
    const std::string v = value == "0" ? "0" : PackValue(l, value);
    return row + "[" + LaneSlot(s, lane, half) + "] = " + v + ";";
  };
}

// The k row of the lanes-inner packing through the source's row emitter; with bf16 pairs, the
// even and odd k of the pair one after the other (the odd one 0 past the end of the slice).
void EmitSourceRows(std::ostream& o, const Layout& l, const Sliver& s, const IndexExprs& bidx,
                    const IndexExprs& kx, const IndexExprs& ky, const std::string& in) {
  if (!s.pairs) {
    s.source->row(o, in, bidx, s.first, s.valid, kx, RowStore(l, s, "gm_row", 0));
    return;
  }
  o << in << "{\n";
  s.source->row(o, in + "  ", bidx, s.first, s.valid, kx, RowStore(l, s, "gm_row", 0));
  o << in << "}\n" << in << "if (gm_two) {\n";
  s.source->row(o, in + "  ", bidx, s.first, s.valid, ky, RowStore(l, s, "gm_row", 1));
  o << in << "} else {\n"
    << in << "  for (int64_t gm_l = 0; gm_l < " << s.valid << "; ++gm_l) gm_row[2 * gm_l + 1] = 0;\n"
    << in << "}\n";
}

// One lane gm_l of the k-inner packing through the source's column emitter; with bf16 pairs the
// slot past an odd K slice's end is zeroed.
void EmitSourceColumn(std::ostream& o, const Layout& l, const Sliver& s, const IndexExprs& bidx,
                      const IndexExprs& fx, const std::string& in) {
  const std::string w = S(s.width);
  LaneStore store = [&l, &s, w](const std::string& kk, const std::string& value) {
    const std::string v = value == "0" ? "0" : PackValue(l, value);
    if (s.lane_major) return "gm_dst[gm_l * gm_kpad + (" + kk + ")] = " + v + ";";
    if (!s.pairs) return "gm_dst[(" + kk + ") * " + w + " + gm_l] = " + v + ";";
    return "gm_dst[((" + kk + ") & ~int64_t{1}) * " + w + " + 2 * gm_l + ((" + kk + ") & 1)] = " +
           v + ";";
  };
  s.source->column(o, in, bidx, fx, "gm_pc", "gm_kc", store);
  if (s.pairs) o << in << "if (gm_kc & 1) gm_dst[(gm_kc - 1) * " << w << " + 2 * gm_l + 1] = 0;\n";
}

// Zeroes the K slice's padding past gm_kc up to gm_kpad (AMX: whole 32-deep tile steps), which
// the micro-kernel multiplies like data: zeros there keep NaN/Inf garbage out of the sums.
void EmitKTail(std::ostream& o, const Layout& l, const Sliver& s, const std::string& in) {
  if (!l.amx) return;
  const std::string w = S(s.width);
  if (s.lane_major) {
    o << in << "for (int64_t gm_l = 0; gm_l < " << w << "; ++gm_l) {\n"
      << in << "  std::memset(gm_dst + gm_l * gm_kpad + gm_kc, 0, (gm_kpad - gm_kc) * "
      << "sizeof(*gm_dst));\n"
      << in << "}\n";
    return;
  }
  // Pairs: the rows of the pairs past the (even-rounded) slice.
  o << in << "std::memset(gm_dst + ((gm_kc + 1) & ~int64_t{1}) * " << w
    << ", 0, (gm_kpad - ((gm_kc + 1) & ~int64_t{1})) * " << w << " * sizeof(*gm_dst));\n";
}

// Emits the packing of one sliver into `gm_dst` (K slice gm_pc..gm_pc+gm_kc). When the lanes
// are the operand's minor-most dim the lane loop is innermost, so a plain row-major operand
// streams; otherwise the k loop is. This form: gemm_pack.h's helpers for f32 and the AMX A
// rows, else element by element (EmitSliverPack adds bf16 pairs packed as words).
void EmitSliverPackElements(FunctionEmitter& f, const Layout& l, const Sliver& s,
                            const std::vector<std::string>& bidx, const std::string& in) {
  auto& o = f.out();
  const std::string w = S(s.width);
  // bf16 rows from memory into the AMX A sliver: a row copy (gemm_pack.h).
  if (s.source->address && s.lane_major && l.pt == "uint16_t" &&
      s.source->dtype == DType::kBF16 && s.source->k_stride == 1) {
    o << in << RowPackBf16Function(f.module()) << "("
      << s.source->address(bidx, s.first, "gm_pc") << ", " << s.source->lane_stride << ", "
      << s.valid << ", gm_kc, gm_kpad, gm_dst, " << w << ");\n";
    return;
  }
  // f32 from memory: one call packs the sliver (gemm_pack.h).
  if (s.source->address && !s.pairs && !s.lane_major && l.pt == "float" &&
      s.source->dtype == DType::kF32) {
    const std::string at = s.source->address(bidx, s.first, "gm_pc");
    if (s.source->k_stride == 1) {
      o << in << RowPackFunction(f.module()) << "(" << at << ", " << s.source->lane_stride << ", "
        << s.valid << ", gm_kc, gm_dst, " << w << ");\n";
      return;
    }
    if (s.source->lane_stride == 1) {
      o << in << PanelPackFunction(f.module()) << "(" << at << ", " << s.source->k_stride << ", "
        << s.valid << ", gm_kc, gm_dst, " << w << ");\n";
      return;
    }
  }
  // Declares gm_fx*/gm_kx* (and gm_ky* for the pair's second k) and returns the element values.
  auto lane_index = [&](const std::string& ind) {
    o << ind << "const int64_t gm_fi = " << s.first << " + gm_l;\n";
    return Decompose(o, ind, "gm_fi", *s.lane_sizes, "gm_fx");
  };
  auto k_index = [&](const std::string& ind) {
    o << ind << "const int64_t gm_ki = gm_pc + gm_kk;\n";
    auto kx = Decompose(o, ind, "gm_ki", *s.k_sizes, "gm_kx");
    if (!s.pairs) return std::pair{kx, std::vector<std::string>{}};
    // The pair's second k; past the end of the slice it is read in bounds and stored as 0.
    o << ind << "const bool gm_two = gm_kk + 1 < gm_kc;\n"
      << ind << "const int64_t gm_ki1 = gm_two ? gm_ki + 1 : gm_ki;\n";
    return std::pair{kx, Decompose(o, ind, "gm_ki1", *s.k_sizes, "gm_ky")};
  };
  auto value = [&](const std::vector<std::string>& fx, const std::vector<std::string>& kx) {
    return PackedElement(l, s.source->element(bidx, fx, kx));
  };
  const std::string kstep = s.pairs ? "gm_kk += 2" : "++gm_kk";
  // Stores of element (gm_kk, gm_l) (and its pair partner) into row pointer `row`.
  auto store = [&](const std::string& ind, const std::string& row, const std::string& v0,
                   const std::string& v1) {
    o << ind << row << "[" << LaneSlot(s, "gm_l", 0) << "] = " << v0 << ";\n";
    if (s.pairs) o << ind << row << "[" << LaneSlot(s, "gm_l", 1) << "] = " << v1 << ";\n";
  };
  if (s.source->lanes_inner) {
    o << in << "for (int64_t gm_kk = 0; gm_kk < gm_kc; " << kstep << ") {\n";
    auto [kx, ky] = k_index(in + "  ");
    o << in << "  " << l.pt << "* const gm_row = " << RowStart(s, "gm_kk") << ";\n";
    if (s.source->row) {
      EmitSourceRows(o, l, s, bidx, kx, ky, in + "  ");
    } else {
      o << in << "  for (int64_t gm_l = 0; gm_l < " << s.valid << "; ++gm_l) {\n";
      auto fx = lane_index(in + "    ");
      store(in + "    ", "gm_row", value(fx, kx), s.pairs ? Second(value(fx, ky)) : "");
      o << in << "  }\n";
    }
    o << in << "  for (int64_t gm_l = " << s.valid << "; gm_l < " << w << "; ++gm_l) {\n";
    store(in + "    ", "gm_row", "0", "0");
    o << in << "  }\n" << in << "}\n";
    EmitKTail(o, l, s, in);
    return;
  }
  o << in << "for (int64_t gm_l = 0; gm_l < " << w << "; ++gm_l) {\n"
    << in << "  if (gm_l >= " << s.valid << ") {\n"
    << in << "    for (int64_t gm_kk = 0; gm_kk < gm_kc; " << kstep << ") {\n"
    << in << "      " << l.pt << "* const gm_row = " << RowStart(s, "gm_kk") << ";\n";
  store(in + "      ", "gm_row", "0", "0");
  o << in << "    }\n" << in << "    continue;\n" << in << "  }\n";
  auto fx = lane_index(in + "  ");
  if (s.source->column) {
    EmitSourceColumn(o, l, s, bidx, fx, in + "  ");
    o << in << "}\n";
    EmitKTail(o, l, s, in);
    return;
  }
  o << in << "  for (int64_t gm_kk = 0; gm_kk < gm_kc; " << kstep << ") {\n";
  auto [kx, ky] = k_index(in + "    ");
  o << in << "    " << l.pt << "* const gm_row = " << RowStart(s, "gm_kk") << ";\n";
  store(in + "    ", "gm_row", value(fx, kx), s.pairs ? Second(value(fx, ky)) : "");
  o << in << "  }\n" << in << "}\n";
  EmitKTail(o, l, s, in);
}

// The packing of one sliver: bf16 pairs as 32-bit words where they can be, else
// EmitSliverPackElements.
void EmitSliverPack(FunctionEmitter& f, const Layout& l, const Sliver& s,
                    const std::vector<std::string>& bidx, const std::string& in) {
  auto& o = f.out();
  const std::string w = S(s.width);
  // bf16 pairs from memory whose k run contiguous (A [M][K], B stored [N][K]): each pair is one
  // 32-bit word of the source, so the pair sliver is mk_pack_rows_f32's transpose of 32-bit
  // words (half the k, half the row stride). Needs whole pairs at 4-byte aligned addresses,
  // checked where the slice starts; otherwise element by element.
  if (s.source->address && s.pairs && !s.lane_major && s.source->dtype == DType::kBF16 &&
      s.source->k_stride == 1 && s.source->lane_stride % 2 == 0) {
    const std::string at = s.source->address(bidx, s.first, "gm_pc");
    o << in << "if (((gm_kc | gm_pc) & 1) == 0 && (reinterpret_cast<uintptr_t>(" << at
      << ") & 3) == 0) {\n"
      << in << "  " << RowPackFunction(f.module()) << "(reinterpret_cast<const float*>(" << at
      << "), " << s.source->lane_stride / 2 << ", " << s.valid
      << ", gm_kc / 2, reinterpret_cast<float*>(gm_dst), " << w << ");\n";
    EmitKTail(o, l, s, in + "  ");
    o << in << "} else {\n";
    EmitSliverPackElements(f, l, s, bidx, in + "  ");
    o << in << "}\n";
    return;
  }
  EmitSliverPackElements(f, l, s, bidx, in);
}

void EmitPackB(FunctionEmitter& f, const DotGeometry& g, const Layout& l, const PackSource& b,
               const std::vector<std::string>& bidx) {
  auto& o = f.out();
  // A panel from memory with contiguous lanes: packed k row by k row, reading the source
  // sequentially (gemm_pack.h); a shared panel in one contiguous range of slivers per thread.
  const bool f32_panel = !l.pairs && l.pt == "float" && b.dtype == DType::kF32;
  const bool pair_panel = l.pairs && b.dtype == DType::kBF16;
  if (l.b_in_place) {
    // Only a partial last sliver is packed; with a shared panel one thread packs it and the
    // others wait at the single's barrier.
    o << "            if (gm_nc % kNR != 0) {\n"
      << (l.shared_b ? "#pragma omp single\n" : "") << "              {\n"
      << "              float* const gm_dst = gm_bp;\n"
      << "              const int64_t gm_j0 = gm_jc + (gm_ns - 1) * kNR;\n"
      << "              const int64_t gm_nv = gm_nc - (gm_ns - 1) * kNR;\n";
    Sliver s{&b, &g.n_dims, &g.k_dims, l.nr, "gm_nv", "gm_j0", false, false};
    EmitSliverPack(f, l, s, bidx, "              ");
    o << "              }\n"
      << "            }\n";
    return;
  }
  if (b.address && b.lane_stride == 1 && (f32_panel || pair_panel)) {
    auto call = [&](const std::string& in, const std::string& j0, const std::string& lanes,
                    const std::string& dst) {
      o << in
        << (f32_panel ? PanelPackFunction(f.module()) : PairsPanelPackFunction(f.module()))
        << "(" << b.address(bidx, j0, "gm_pc") << ", " << b.k_stride << ", " << lanes
        << ", gm_kc, " << (f32_panel ? "" : "gm_kpad, ") << dst << ", kNR);\n";
    };
    if (!l.shared_b) {
      call("            ", "gm_jc", "gm_nc", "gm_bp");
      return;
    }
    o << "#pragma omp for schedule(static)\n"
      << "            for (int64_t gm_q = 0; gm_q < " << l.threads << "; ++gm_q) {\n"
      << "              const int64_t gm_q0 = gm_ns * gm_q / " << l.threads
      << ", gm_q1 = gm_ns * (gm_q + 1) / " << l.threads << ";\n"
      << "              if (gm_q0 >= gm_q1) continue;\n"
      << "              const int64_t gm_j0 = gm_jc + gm_q0 * kNR;\n";
    call("              ", "gm_j0", "std::min<int64_t>(gm_nc, gm_q1 * kNR) - gm_q0 * kNR",
         "gm_bp + gm_q0 * kNR * gm_kpad");
    o << "            }\n";
    return;
  }
  if (l.shared_b) o << "#pragma omp for schedule(static)\n";
  o << "            for (int64_t gm_s = 0; gm_s < gm_ns; ++gm_s) {\n"
    << "              " << l.pt << "* const gm_dst = gm_bp + gm_s * kNR * gm_kpad;\n"
    << "              const int64_t gm_j0 = gm_jc + gm_s * kNR;\n"
    << "              const int64_t gm_nv = std::min<int64_t>(kNR, kN - gm_j0);\n";
  Sliver s{&b, &g.n_dims, &g.k_dims, l.nr, "gm_nv", "gm_j0", l.pairs, false};
  EmitSliverPack(f, l, s, bidx, "              ");
  o << "            }\n";
}

void EmitPackA(FunctionEmitter& f, const DotGeometry& g, const Layout& l, const PackSource& a,
               const std::vector<std::string>& bidx) {
  auto& o = f.out();
  if (l.a_in_place) {
    // Only the block's partial last sliver, row-major (the in-place layout at stride gm_kc).
    o << "              for (int64_t gm_i = 0, gm_rp = gm_mc / kMR * kMR; gm_rp < gm_mc && gm_i < "
         "kMR; ++gm_i) {\n"
      << "                float* const gm_row = gm_ap + gm_i * gm_kc;\n"
      << "                const int64_t gm_r = gm_rp + gm_i;\n"
      << "                if (gm_r < gm_mc) std::memcpy(gm_row, " << l.a_addr
      << ", gm_kc * sizeof(float));\n"
      << "                else std::memset(gm_row, 0, gm_kc * sizeof(float));\n"
      << "              }\n";
    return;
  }
  // A shared panel: this thread's contiguous range of the slivers.
  o << (l.shared_a ? "              const int64_t gm_as = (gm_mc + kMR - 1) / kMR;\n"
                     "              for (int64_t gm_r = gm_as * gm_t / gm_nt * kMR, gm_re = "
                     "gm_as * (gm_t + 1) / gm_nt * kMR; gm_r < gm_re; gm_r += kMR) {\n"
                   : "              for (int64_t gm_r = 0; gm_r < gm_mc; gm_r += kMR) {\n")
    << "                " << l.pt << "* const gm_dst = gm_ap + gm_r * gm_kpad;\n"
    << "                const int64_t gm_mv = std::min<int64_t>(kMR, gm_mc - gm_r);\n"
    << "                const int64_t gm_i0 = gm_ic + gm_r;\n";
  Sliver s{&a, &g.m_dims, &g.k_dims, l.mr, "gm_mv", "gm_i0", l.pairs && !l.amx, l.amx};
  EmitSliverPack(f, l, s, bidx, "                ");
  o << "              }\n";
}

// The epilogue over the tile at rows gm_ic + gm_r .. + gm_mv, columns gm_j .. + gm_nv, reading
// the GEMM's elements from `ptr`, or with l.tile_only from gm_tile (row stride kNR). With one
// column dim the inner loop runs over its index; with several (a convolution's output
// positions) they are derived from the column, which costs nothing where the body does not
// read them.
void EmitTileEpilogue(std::ostream& o, const DotGeometry& g, const Layout& l,
                      const std::string& ptr, const TileEpilogue& e, const std::string& in) {
  const size_t rank = e.dims.size();
  const size_t rows = static_cast<size_t>(TileRowDims(e.dims, g));
  const std::string n = rank - rows == 1 ? "i" + S(static_cast<int64_t>(rank) - 1) : "gm_col";
  // gm_dv of the element at column n of tile row `ti`.
  auto load = [&](const std::string& ti) {
    if (l.tile_only) return "gm_tile[" + ti + " * kNR + (" + n + " - gm_j)]";
    return LoadExpr(g.out_type, ptr + "[gm_e]");
  };
  o << in << "if (gm_last) {\n"
    << in << "  int64_t gm_ti = 0;\n";
  // Two rows at a time, their statements interleaved: each op of the chain is a long
  // dependent sequence (an exp, a tanh, an erf: ~150 vector instructions per element of 47k's
  // chain), and one row's chain after the other's leaves the out-of-order window too few
  // independent instructions. Interleaved, the chain of 47k ran 4.0 -> 3.0 ns per element in
  // a C++ model of the loop; two whole chains one after the other gained nothing.
  if (!e.steps.empty() && !e.row && rank - rows == 1) {
    std::set<std::string> second(e.locals.begin(), e.locals.end());
    for (const char* v : {"gm_dv", "gm_e", "gm_row"}) second.insert(v);
    for (size_t d = 0; d < rows; ++d) second.insert("i" + S(static_cast<int64_t>(d)));
    std::ostringstream vars;
    EmitIndexVars(vars, in + "    ", "gm_row", e.dims, 0, rows);
    o << in << "  for (; gm_ti + 1 < gm_mv; gm_ti += 2) {\n"
      << in << "    const int64_t gm_row = gm_b * kM + gm_ic + gm_r + gm_ti;\n"
      << in << "    const int64_t gm_row_1 = gm_row + 1;\n"
      << vars.str() << SuffixIdentifiers(vars.str(), second, "_1")
      << in << "#pragma GCC ivdep\n"
      << in << "    for (int64_t " << n << " = gm_j; " << n << " < gm_j + gm_nv; ++" << n
      << ") {\n"
      << in << "      const int64_t gm_e = gm_row * kN + " << n << ";\n"
      << in << "      const int64_t gm_e_1 = gm_row_1 * kN + " << n << ";\n"
      << in << "      const float gm_dv = " << load("gm_ti") << ";\n"
      << in << "      const float gm_dv_1 = "
      << SuffixIdentifiers(load("(gm_ti + 1)"), {"gm_e"}, "_1") << ";\n";
    for (const std::string& step : e.steps) {
      o << in << "      " << step << "\n"
        << in << "      " << SuffixIdentifiers(step, second, "_1") << "\n";
    }
    o << in << "    }\n"
      << in << "  }\n";
  }
  o << in << "  for (; gm_ti < gm_mv; ++gm_ti) {\n"
    << in << "    const int64_t gm_row = gm_b * kM + gm_ic + gm_r + gm_ti;\n";
  EmitIndexVars(o, in + "    ", "gm_row", e.dims, 0, rows);
  if (e.row) {
    o << in << "    const float* const gm_rowp = "
      << (l.tile_only ? std::string("gm_tile + gm_ti * kNR") : ptr + " + gm_row * kN + gm_j")
      << ";\n"
      << e.row(l.nr);
  }
  if (!e.steps.empty()) {
    o << in << "#pragma GCC ivdep\n"
      << in << "    for (int64_t " << n << " = gm_j; " << n << " < gm_j + gm_nv; ++" << n
      << ") {\n";
    if (rank - rows > 1) EmitIndexVars(o, in + "      ", n, e.dims, rows, rank);
    o << in << "      const int64_t gm_e = gm_row * kN + " << n << ";\n"
      << in << "      const float gm_dv = " << load("gm_ti") << ";\n"
      << in << "      { ";
    for (const std::string& step : e.steps) o << step;
    o << " }\n"
      << in << "    }\n";
  }
  o << in << "  }\n";
  if (!e.segment_code.empty()) {
    // The tile's values are stored: each whole group in it, row by row, while it is in L1.
    const std::string seg = S(e.segment);
    o << in << "  for (int64_t gm_ti = 0; gm_ti < gm_mv; ++gm_ti)\n"
      << in << "  for (int64_t gm_sg = gm_j / " << seg << "; gm_sg < (gm_j + gm_nv) / " << seg
      << "; ++gm_sg) {\n"
      << in << "    const int64_t gm_prow = (gm_b * kM + gm_ic + gm_r + gm_ti) * "
      << e.segment_groups << " + gm_sg;\n";
    EmitIndexVars(o, in + "    ", "gm_prow", e.segment_rows, 0, e.segment_rows.size());
    o << e.segment_code << in << "  }\n";
  }
  o << in << "}\n";
}

// The micro-kernel call that writes the tile at gm_asl x gm_bsl to gm_tile (row stride kNR): for
// the last sliver, its narrower kernel where it has one, or with B in place the kernel of the
// packed partial sliver.
void EmitTileToBuffer(std::ostream& o, const Layout& l, const std::string& in,
                      const std::string& kArg, const std::string& extra_args) {
  const std::string lda = l.a_in_place ? ", gm_lda" : "";
  // The kernel, or on the last sliver's M % MR rows its twin over them (same signature).
  auto pick = [&](const std::string& full, const std::string& rows) {
    if (l.mr_edge == 0 || rows.empty()) return full;
    return "(gm_mv == " + S(l.mr_edge) + " ? " + rows + " : " + full + ")";
  };
  if (l.b_in_place) {
    o << in << "if (gm_nv < kNR) " << pick(l.ukr_part, l.ukr_part_rows) << "(" << kArg
      << ", gm_asl, gm_bp, gm_tile, kNR, false, kNR" << lda << ");\n"
      << in << "else ";
  } else if (l.nr_edge > 0) {
    o << in << "if (gm_nv <= " << l.nr_edge << ") " << pick(l.ukr_edge, l.ukr_edge_rows) << "("
      << kArg << ", gm_asl, gm_bsl, gm_tile, kNR, false, kNR" << lda << ");\n"
      << in << "else ";
  } else {
    o << in;
  }
  o << pick(l.ukr, l.ukr_rows) << "(" << kArg << ", gm_asl, gm_bsl, gm_tile, kNR, false"
    << extra_args << ");\n";
}

// The micro-kernel over the tile at gm_asl x gm_bsl and its write-back: full f32 tiles straight
// to the result or the partial sums, the rest through gm_tile (only the valid part stored).
void EmitTileStore(std::ostream& o, const DotGeometry& g, const Layout& l, const std::string& ptr,
                   const std::string& in, const std::string& kArg, const std::string& extra_args) {
  const bool f32_out = g.out_type == DType::kF32;
  std::string direct;
  if (f32_out) direct = ptr;
  else if (l.need_acc) direct = "gm_acc";
  std::string edge = in;  // the edge path's indent: inside an else when full tiles go direct
  if (!direct.empty()) {
    o << in << "if (gm_mv == kMR && gm_nv == kNR" << (f32_out ? "" : " && !gm_last") << ") {\n"
      << in << "  " << l.ukr << "(" << kArg << ", gm_asl, gm_bsl, " << direct
      << " + gm_o, kN, !gm_first" << extra_args << ");\n"
      << in << "} else {\n";
    edge += "  ";
  }
  EmitTileToBuffer(o, l, edge, kArg, extra_args);
  o << edge << "for (int64_t gm_ti = 0; gm_ti < gm_mv; ++gm_ti) {\n"
    << edge << "  for (int64_t gm_tj = 0; gm_tj < gm_nv; ++gm_tj) {\n"
    << edge << "    const int64_t gm_e = gm_o + gm_ti * kN + gm_tj;\n"
    << edge << "    float gm_v = gm_tile[gm_ti * kNR + gm_tj];\n";
  if (f32_out) {
    o << edge << "    " << ptr << "[gm_e] = gm_first ? gm_v : " << ptr << "[gm_e] + gm_v;\n";
  } else if (l.need_acc) {
    o << edge << "    if (!gm_first) gm_v += gm_acc[gm_e];\n"
      << edge << "    if (gm_last) " << ptr << "[gm_e] = "
      << StoreExpr(g.out_type, "gm_v") << ";\n"
      << edge << "    else gm_acc[gm_e] = gm_v;\n";
  } else {
    o << edge << "    " << ptr << "[gm_e] = "
      << StoreExpr(g.out_type, "gm_v") << ";\n";
  }
  o << edge << "  }\n" << edge << "}\n";
  if (!direct.empty()) o << in << "}\n";
}

// The micro-kernel call on the tile at gm_asl × gm_bsl (output offset gm_o), its write-back and
// the tile epilogue.
void EmitTileCall(FunctionEmitter& f, const DotGeometry& g, const Layout& l,
                  const std::string& ptr, const TileEpilogue* epilogue, const std::string& in) {
  auto& o = f.out();
  const std::string kArg = l.amx ? "gm_kpad" : l.pairs ? "gm_kpad / 2" : "gm_kc";
  // The micro-kernel's extra arguments. AMX: tiles usable, the next-sliver prefetch run; B in
  // place: the B sliver's row stride; A in place: the A sliver's.
  const std::string extra_args = l.amx          ? ", gm_amx, gm_pf, gm_pfl"
                                 : std::string(l.b_in_place ? ", gm_ldb" : "") +
                                       (l.a_in_place ? ", gm_lda" : "");
  if (l.tile_only) {
    // Every tile final after one K slice: the epilogue reads it where the micro-kernel put it.
    EmitTileToBuffer(o, l, in, kArg, extra_args);
  } else {
    EmitTileStore(o, g, l, ptr, in, kArg, extra_args);
  }
  if (epilogue) EmitTileEpilogue(o, g, l, ptr, *epilogue, in);
}

// Sliver gm_s of the packed B panel: its first column gm_j, its valid columns gm_nv, gm_bsl
// (B in place: a full sliver in the operand, row stride gm_ldb; a partial one packed).
std::string BSliverLines(const Layout& l, const std::string& in) {
  std::string lines = in + "const int64_t gm_j = gm_jc + gm_s * kNR;\n" + in +
                      "const int64_t gm_nv = std::min<int64_t>(kNR, kN - gm_j);\n";
  if (l.b_in_place) {
    return lines + in + "const " + (l.b_bf16 ? "uint16_t" : "float") + "* const gm_bsl = " +
           l.b_addr + ";\n" + in + "const int64_t gm_ldb = " + l.ldb + ";\n";
  }
  return lines + in + "const " + l.pt + "* const gm_bsl = gm_bp + gm_s * kNR * gm_kpad;\n";
}

// A sliver gm_r of the block: packed at gm_ap, or with A in place a full sliver in the operand
// (row stride lda) and the partial one packed row-major (row stride gm_kc).
std::string ASliverLines(const Layout& l, const std::string& in) {
  if (!l.a_in_place) {
    return in + "const " + l.pt + "* const gm_asl = gm_ap + gm_r * gm_kpad;\n";
  }
  return in + "const bool gm_afull = gm_mv == kMR;\n" + in +
         "const float* const gm_asl = gm_afull ? " + l.a_addr + " : gm_ap;\n" + in +
         "const int64_t gm_lda = gm_afull ? " + l.lda + " : gm_kc;\n";
}

// LoopOrder::kBSliverOuter: each B sliver of the panel, then the MC block's A slivers.
void EmitTiles(FunctionEmitter& f, const DotGeometry& g, const Layout& l,
               const std::string& ptr, const TileEpilogue* epilogue) {
  auto& o = f.out();
  const std::string in = "                  ";
  o << "              for (int64_t gm_s = gm_s0; gm_s < gm_s1; ++gm_s) {\n"
    << BSliverLines(l, "                ");
  if (l.amx) {
    // The next sliver's kpad lines (32 per k step) go to L2 in equal runs, one per call on
    // this sliver (AmxGemmMicroKernel); calls past its 32 lines per step prefetch nothing.
    o << "                const uint16_t* const gm_bnext = gm_s + 1 < gm_s1 ? gm_bsl + kNR * "
         "gm_kpad : nullptr;\n"
      << "                const int64_t gm_calls = (gm_mc + kMR - 1) / kMR;\n"
      << "                const int64_t gm_pfl = (32 + gm_calls - 1) / gm_calls;\n";
  }
  o << "                for (int64_t gm_r = 0; gm_r < gm_mc; gm_r += kMR) {\n"
    << in << "const int64_t gm_mv = std::min<int64_t>(kMR, gm_mc - gm_r);\n"
    << ASliverLines(l, in)
    << in << "const int64_t gm_o = (gm_b * kM + gm_ic + gm_r) * kN + gm_j;\n";
  if (l.amx) {
    o << in << "const int64_t gm_run = gm_r / kMR * gm_pfl;\n"
      << in << "const uint16_t* const gm_pf = gm_bnext && gm_run < 32 ? gm_bnext + gm_run * "
         "gm_kpad : nullptr;\n";
  }
  EmitTileCall(f, g, l, ptr, epilogue, in);
  o << "                }\n"
    << "              }\n";
}

// LoopOrder::kASliverOuter: each A sliver of the thread's rows, then the panel's B slivers.
void EmitTilesASliverOuter(FunctionEmitter& f, const DotGeometry& g, const Layout& l,
                           const std::string& ptr, const TileEpilogue* epilogue) {
  auto& o = f.out();
  const std::string in = "                  ";
  o << "              for (int64_t gm_r = 0; gm_r < gm_mc; gm_r += kMR) {\n"
    << "                const int64_t gm_mv = std::min<int64_t>(kMR, gm_mc - gm_r);\n"
    << ASliverLines(l, "                ")
    << "                for (int64_t gm_s = gm_s0; gm_s < gm_s1; ++gm_s) {\n"
    << BSliverLines(l, in) << in << "const int64_t gm_o = (gm_b * kM + gm_ic + gm_r) * kN + gm_j;\n";
  EmitTileCall(f, g, l, ptr, epilogue, in);
  o << "                }\n"
    << "              }\n";
}

// ThreadSplit::kDepth after the multiplies: once every thread's partial is complete, the
// result's tiles (row-major, so each thread gets a range of rows) are summed over the partials
// in thread order into gm_tile, then stored and given the tile epilogue as final tiles.
void EmitDepthSum(std::ostream& o, const DotGeometry& g, const Layout& l, const std::string& ptr,
                  const TileEpilogue* epilogue) {
  const std::string in = "          ";
  o << "#pragma omp barrier\n"
    << "      {\n"
    << "        constexpr int64_t kRT = (kM + kMR - 1) / kMR, kCT = (kN + kNR - 1) / kNR;\n"
    << "#pragma omp for schedule(static)\n"
    << "        for (int64_t gm_q = 0; gm_q < kB * kRT * kCT; ++gm_q) {\n"
    << in << "const int64_t gm_b = gm_q / (kRT * kCT), gm_ic = 0;\n"
    << in << "const int64_t gm_r = gm_q / kCT % kRT * kMR, gm_j = gm_q % kCT * kNR;\n"
    << in << "const int64_t gm_mv = std::min<int64_t>(kMR, kM - gm_r);\n"
    << in << "const int64_t gm_nv = std::min<int64_t>(kNR, kN - gm_j);\n"
    << in << "const int64_t gm_o = (gm_b * kM + gm_r) * kN + gm_j;\n"
    << in << "const bool gm_last = true;\n"
    << in << "(void)gm_ic;\n"
    << in << "(void)gm_last;\n"
    << in << "for (int64_t gm_ti = 0; gm_ti < gm_mv; ++gm_ti) {\n"
    << in << "  float* const gm_trow = gm_tile + gm_ti * kNR;\n"
    << in << "  const float* const gm_p0 = gm_parts + gm_o + gm_ti * kN;\n"
    << in << "  for (int64_t gm_tj = 0; gm_tj < gm_nv; ++gm_tj) gm_trow[gm_tj] = gm_p0[gm_tj];\n"
    << in << "  for (int64_t gm_u = 1; gm_u < gm_nt; ++gm_u) {\n"
    << in << "    const float* const gm_pu = gm_p0 + gm_u * kPart;\n"
    << in << "#pragma GCC ivdep\n"
    << in << "    for (int64_t gm_tj = 0; gm_tj < gm_nv; ++gm_tj) gm_trow[gm_tj] += gm_pu[gm_tj];\n"
    << in << "  }\n";
  if (!l.tile_only) {
    o << in << "  for (int64_t gm_tj = 0; gm_tj < gm_nv; ++gm_tj) " << ptr
      << "[gm_o + gm_ti * kN + gm_tj] = " << StoreExpr(g.out_type, "gm_trow[gm_tj]") << ";\n";
  }
  o << in << "}\n";
  if (epilogue) EmitTileEpilogue(o, g, l, ptr, *epilogue, in);
  o << "        }\n"
    << "      }\n";
}

// Whether the inner-product form can run on A: an f32 array in memory whose rows are
// contiguous along K.
bool InnerRuns(const GemmParams& p, const PackSource& a, const PackSource& b) {
  auto rows_in_memory = [](const PackSource& s) {
    return s.address && s.k_stride == 1 && s.dtype == DType::kF32;
  };
  return p.inner && rows_in_memory(a) && (!p.inner_swapped || rows_in_memory(b));
}

// The Layout the tile epilogue reads for an inner-product GEMM whose result tiles are `rows`
// (over M) by `cols` (over N).
Layout InnerLayout(const GemmParams& p, const TileEpilogue* epilogue, int64_t rows,
                   int64_t cols) {
  Layout l;
  l.mr = rows;
  l.nr = cols;
  l.pt = "float";
  l.threads = p.threads;
  l.parallel = p.threads > 1;
  l.tile_only = epilogue && epilogue->from_tile;
  return l;
}

// The inner-product kernel call on one tile of `kr` x `kc` kernel results: the full tile's
// kernel, or where the dot leaves `rem_r` rows or `rem_c` columns over, the edge's own (no
// padded results), chosen by the generated conditions `full_r` and `full_c`; `args` follow k.
std::string InnerKernelCall(ModuleContext& m, int64_t kr, int64_t kc, int64_t rem_r,
                            int64_t rem_c, const std::string& full_r, const std::string& full_c,
                            const std::string& args, const std::string& in) {
  auto call = [&](int64_t r, int64_t c) {
    return GemmInnerKernel(m, r, c) + "(kK, " + args + ");";
  };
  auto by_columns = [&](int64_t r) {
    const std::string whole = call(r, kc);
    if (rem_c == 0) return whole;
    return "if (" + full_c + ") " + whole + " else " + call(r, rem_c);
  };
  // One statement each: the kernels enter the prelude in this order (full tile first).
  const std::string full = by_columns(kr);
  if (rem_r == 0) return in + full + "\n";
  const std::string edge = by_columns(rem_r);
  return in + "if (" + full_r + ") { " + full + " }\n" + in + "else { " + edge + " }\n";
}

// Stores the valid part of gm_tile (the result's orientation, row stride kNR) at gm_o.
void EmitInnerWriteBack(std::ostream& o, const DotGeometry& g, const std::string& ptr,
                        const std::string& in) {
  o << in << "for (int64_t gm_ti = 0; gm_ti < gm_mv; ++gm_ti)\n"
    << in << "  for (int64_t gm_tj = 0; gm_tj < gm_nv; ++gm_tj)\n"
    << in << "    " << ptr << "[gm_o + gm_ti * kN + gm_tj] = "
    << StoreExpr(g.out_type, "gm_tile[gm_ti * kNR + gm_tj]") << ";\n";
}

// The inner-product form with the operands' roles swapped (GemmParams::inner_swapped): threads
// share the (batch, block of B's rows) work items; for each, the A rows run in tiles, each an
// inner-product kernel call on B's rows (the kernel's rows, N) and A's rows (its columns, M),
// both in place. The kernel's [n][m] tile is turned into the result's [m][n] in gm_tile, then
// written back and run through the tile epilogue as the blocked form's.
Status EmitInnerGemmSwapped(FunctionEmitter& f, const DotGeometry& g, const GemmParams& p,
                            const PackSource& a, const PackSource& b, const std::string& ptr,
                            const TileEpilogue* epilogue) {
  const int64_t kr = p.inner_mr, kc = p.inner_nr;  // the kernel's tile: kr of N x kc of M
  const Layout l = InnerLayout(p, epilogue, kc, kr);
  auto& o = f.out();
  o << "  {  // inner-product GEMM, operands swapped: batch " << g.batch << ", M " << g.m
    << ", N " << g.n << ", K " << g.k << "; kernel tile " << kr << "x" << kc << " (N x M), "
    << p.threads << " thread(s) over column blocks, A and B read in place along K\n"
    << "    constexpr int64_t kB = " << g.batch << ", kM = " << g.m << ", kN = " << g.n
    << ", kK = " << g.k << ";\n"
    << "    constexpr int64_t kMR = " << kc << ", kNR = " << kr << ", kCB = " << CeilDiv(g.n, kr)
    << ";\n";
  if (l.parallel) o << "#pragma omp parallel num_threads(" << p.threads << ")\n";
  o << "    {\n"
    << "      alignas(64) float gm_sw[kNR * kMR];  // the kernel's tile, [n][m]\n"
    << "      alignas(64) float gm_tile[kMR * kNR];\n";
  if (epilogue && !epilogue->region.empty()) o << epilogue->region;
  if (l.parallel) o << "#pragma omp for schedule(static)\n";
  o << "      for (int64_t gm_w = 0; gm_w < kB * kCB; ++gm_w) {\n"
    << "        const int64_t gm_b = gm_w / kCB;\n";
  const auto bidx = Decompose(o, "        ", "gm_b", g.batch_dims, "gm_bx");
  o << "        const int64_t gm_ic = 0;\n"
    << "        const int64_t gm_j = gm_w % kCB * kNR;\n"
    << "        const int64_t gm_nv = std::min<int64_t>(kNR, kN - gm_j);\n"
    << "        const float* const gm_brow = " << b.address(bidx, "gm_j", "0") << ";\n"
    << "        constexpr bool gm_first = true, gm_last = true;\n"
    << "        (void)gm_first;\n"
    << "        (void)gm_last;\n"
    << "        for (int64_t gm_r = 0; gm_r < kM; gm_r += kMR) {\n"
    << "          const int64_t gm_mv = std::min<int64_t>(kMR, kM - gm_r);\n"
    << "          const int64_t gm_o = (gm_b * kM + gm_r) * kN + gm_j;\n"
    << "          const float* const gm_ar = " << a.address(bidx, "gm_r", "0") << ";\n";
  const std::string in = "          ";
  o << InnerKernelCall(f.module(), kr, kc, g.n % kr, g.m % kc, "gm_nv == kNR", "gm_mv == kMR",
                       "gm_brow, " + S(b.lane_stride) + ", gm_ar, " + S(a.lane_stride) +
                           ", gm_sw, kMR",
                       in)
    << in << "for (int64_t gm_ti = 0; gm_ti < gm_mv; ++gm_ti)\n"
    << in << "  for (int64_t gm_tj = 0; gm_tj < gm_nv; ++gm_tj)\n"
    << in << "    gm_tile[gm_ti * kNR + gm_tj] = gm_sw[gm_tj * kMR + gm_ti];\n";
  if (!l.tile_only) EmitInnerWriteBack(o, g, ptr, in);
  if (epilogue) EmitTileEpilogue(o, g, l, ptr, *epilogue, in);
  o << "        }\n"   // A's tiles
    << "      }\n"     // work items
    << "    }\n"       // parallel region
    << "  }\n";
  return Status::Ok();
}

// The inner-product form (GemmParams::inner): threads share the (batch, MR-row block) work
// items; per batch, each thread packs B transposed (N rows of K, gm_bt) once, then runs the
// block's tiles left to right, each an inner-product kernel call on A's rows in place, then the
// write-back and the tile epilogue as the blocked form's (every tile is final: gm_last).
Status EmitInnerGemm(FunctionEmitter& f, const DotGeometry& g, const GemmParams& p,
                     const PackSource& a, const PackSource& b, const std::string& ptr,
                     const TileEpilogue* epilogue) {
  const int64_t mr = p.inner_mr, nr = p.inner_nr;
  const Layout l = InnerLayout(p, epilogue, mr, nr);
  const bool direct = g.out_type == DType::kF32 && !l.tile_only;
  auto& o = f.out();
  o << "  {  // inner-product GEMM: batch " << g.batch << ", M " << g.m << ", N " << g.n
    << ", K " << g.k << "; tile " << mr << "x" << nr << ", " << p.threads
    << " thread(s) over row blocks, A read in place along K, B packed transposed\n"
    << "    constexpr int64_t kB = " << g.batch << ", kM = " << g.m << ", kN = " << g.n
    << ", kK = " << g.k << ";\n"
    << "    constexpr int64_t kMR = " << mr << ", kNR = " << nr << ", kRB = " << CeilDiv(g.m, mr)
    << ";\n";
  if (l.parallel) o << "#pragma omp parallel num_threads(" << p.threads << ")\n";
  o << "    {\n"
    << "      mkrt::Scratch gm_bt_mem(" << g.n * g.k * 4 << ");\n"
    << "      float* const gm_bt = static_cast<float*>(gm_bt_mem.p);\n"
    << "      alignas(64) float gm_tile[kMR * kNR];\n"
    << "      int64_t gm_packed = -1;  // the batch whose B is in gm_bt\n";
  if (epilogue && !epilogue->region.empty()) o << epilogue->region;
  if (l.parallel) o << "#pragma omp for schedule(static)\n";
  o << "      for (int64_t gm_w = 0; gm_w < kB * kRB; ++gm_w) {\n"
    << "        const int64_t gm_b = gm_w / kRB;\n";
  const auto bidx = Decompose(o, "        ", "gm_b", g.batch_dims, "gm_bx");
  // B transposed: gm_bt[n * kK + k] = B(k, n). An f32 B in memory is copied: row by row
  // where its k run contiguous (B stored [N][K]), else k row by k row (a row-major [K][N] B
  // read in order); otherwise through the source (fused converts etc.).
  o << "        if (gm_b != gm_packed) {\n"
    << "          gm_packed = gm_b;\n";
  if (b.address && b.dtype == DType::kF32 && b.k_stride == 1) {
    o << "          for (int64_t gm_n = 0; gm_n < kN; ++gm_n)\n"
      << "            std::memcpy(gm_bt + gm_n * kK, " << b.address(bidx, "gm_n", "0")
      << ", kK * sizeof(float));\n";
  } else if (b.address && b.dtype == DType::kF32 && b.lane_stride == 1) {
    o << "          for (int64_t gm_k = 0; gm_k < kK; ++gm_k) {\n"
      << "            const float* const gm_src = " << b.address(bidx, "0", "gm_k") << ";\n"
      << "            for (int64_t gm_n = 0; gm_n < kN; ++gm_n) gm_bt[gm_n * kK + gm_k] = "
         "gm_src[gm_n];\n"
      << "          }\n";
  } else {
    o << "          for (int64_t gm_n = 0; gm_n < kN; ++gm_n) {\n";
    const auto nidx = Decompose(o, "            ", "gm_n", g.n_dims, "gm_nx");
    o << "            for (int64_t gm_k = 0; gm_k < kK; ++gm_k) {\n";
    const auto kidx = Decompose(o, "              ", "gm_k", g.k_dims, "gm_kx");
    const PackElement e = b.element(bidx, nidx, kidx);
    const std::string value = "static_cast<float>(" + e.value + ")";
    o << "              gm_bt[gm_n * kK + gm_k] = "
      << (e.valid.empty() ? value : "(" + e.valid + ") ? " + value + " : 0.0f") << ";\n"
      << "            }\n"
      << "          }\n";
  }
  o << "        }\n"
    << "        const int64_t gm_ic = 0;\n"
    << "        const int64_t gm_r = gm_w % kRB * kMR;\n"
    << "        const int64_t gm_mv = std::min<int64_t>(kMR, kM - gm_r);\n"
    << "        const float* const gm_ar = " << a.address(bidx, "gm_r", "0") << ";\n"
    << "        constexpr bool gm_first = true, gm_last = true;\n"
    << "        (void)gm_first;\n"
    << "        (void)gm_last;\n"
    << "        for (int64_t gm_j = 0; gm_j < kN; gm_j += kNR) {\n"
    << "          const int64_t gm_nv = std::min<int64_t>(kNR, kN - gm_j);\n"
    << "          const int64_t gm_o = (gm_b * kM + gm_r) * kN + gm_j;\n"
    << "          const float* const gm_btj = gm_bt + gm_j * kK;\n";
  const std::string dst = direct ? ptr + " + gm_o, kN" : "gm_tile, kNR";
  const std::string in = "          ";
  o << InnerKernelCall(f.module(), mr, nr, g.m % mr, g.n % nr, "gm_mv == kMR", "gm_nv == kNR",
                       "gm_ar, " + S(a.lane_stride) + ", gm_btj, kK, " + dst, in);
  if (!direct && !l.tile_only) EmitInnerWriteBack(o, g, ptr, in);
  if (epilogue) EmitTileEpilogue(o, g, l, ptr, *epilogue, in);
  o << "        }\n"   // tiles of the block
    << "      }\n"     // work items
    << "    }\n"       // parallel region
    << "  }\n";
  return Status::Ok();
}

// A dot operand read through its lambda, its dims placed by role.
PackSource DotSource(FunctionEmitter& f, const hlo::Instruction& operand,
                     const std::vector<int64_t>& batch, const std::vector<int64_t>& free,
                     const std::vector<int64_t>& contracting) {
  PackSource s;
  const int64_t rank = operand.shape.rank();
  s.lanes_inner = rank > 0 && Contains(free, rank - 1);
  s.element = [fn = f.Fn(&operand), rank, batch, free, contracting](
                  const IndexExprs& b, const IndexExprs& lane, const IndexExprs& k) {
    return PackElement{CallExpr(fn, OperandIndex(rank, batch, b, free, lane, contracting, k)), ""};
  };
  // An f32 or bf16 array in memory with one free and one contracting dim: strided lanes and k.
  const std::string* ptr = f.DensePointer(f.Fn(&operand));
  const hlo::DType dtype = operand.shape.dtype();
  if (ptr && (dtype == hlo::DType::kF32 || dtype == hlo::DType::kBF16) && free.size() == 1 &&
      contracting.size() == 1) {
    s.dtype = dtype;
    auto stride = [&operand, rank](int64_t dim) {
      int64_t st = 1;
      for (int64_t d = dim + 1; d < rank; ++d) st *= operand.shape.dim(d);
      return st;
    };
    s.lane_stride = stride(free[0]);
    s.k_stride = stride(contracting[0]);
    s.address = [p = *ptr, dims = operand.shape.dims(), rank, batch, free, contracting](
                    const IndexExprs& b, const std::string& lane, const std::string& k) {
      return p + " + " + LinearIndexExpr(OperandIndex(rank, batch, b, free, {lane}, contracting,
                                                      {k}),
                                         dims);
    };
  }
  return s;
}

// Column chunk `chunk` of kTN: gm_n0 .. gm_n1, whole NR slivers.
std::string ColumnRange(const std::string& chunk, const std::string& in) {
  return in + "const int64_t gm_n0 = kS * (" + chunk + ") / kTN * kNR;\n" + in +
         "const int64_t gm_n1 = std::min<int64_t>(kN, kS * (" + chunk + " + 1) / kTN * kNR);\n";
}

}  // namespace

void EmitIndexVars(std::ostream& o, const std::string& in, const std::string& var,
                   const std::vector<int64_t>& dims, size_t first, size_t last) {
  int64_t stride = 1;
  for (size_t d = last; d-- > first;) {
    o << in << "const int64_t i" << d << " = ";
    if (stride == 1) o << var;
    else o << "(" << var << " / " << stride << ")";
    if (d > first) o << " % " << dims[d];
    o << ";\n";
    stride *= dims[d];
  }
}

int64_t TileRowDims(const std::vector<int64_t>& dims, const DotGeometry& g) {
  int64_t rows = 1;
  for (size_t r = 0; r < dims.size(); ++r) {
    if (rows == g.batch * g.m) {
      int64_t cols = 1;
      for (size_t d = r; d < dims.size(); ++d) cols *= dims[d];
      if (cols == g.n) return static_cast<int64_t>(r);
    }
    rows *= dims[r];
  }
  return -1;
}

Status EmitGemmValue(FunctionEmitter& f, const hlo::Instruction& inst, const DotGeometry& g,
                     const GemmParams& p, PackSource a, PackSource b) {
  const GemmEpilogue* e = f.gemm_epilogue();
  RowReduceEmission* rr = f.row_reduce();
  const int64_t row_dims = inst.shape.is_array() ? TileRowDims(inst.shape.dims(), g) : -1;
  std::string ptr;
  // The result is final tile by tile and read only there, unrounded: each tile goes from the
  // micro-kernel to the tile code through the tile buffer and the result has no buffer.
  bool no_buffer = false;
  if (rr && rr->plan.dot == &inst && row_dims == rr->plan.row_dims) {
    // Emitted at the last of the row reductions its tiles compute (gemm_row_reduce.h). With one
    // K slice the f32 result is never stored (13p: 8 MiB of logits); otherwise it is
    // accumulated in a scratch buffer.
    no_buffer = g.k <= p.kc;
    rr->active = true;
    rr->threads = p.threads;
  } else if (const SegmentEmission* seg = f.segment();
             seg && seg->plan.value == &inst && row_dims == seg->plan.row_dims) {
    // The group norm's input (gemm_segment.h): stored by the tiles, its passes run in them.
    MK_ASSIGN_OR_RETURN(ptr, f.StorageFor(&inst, 0, inst.shape));
  } else if (e && e->dot == &inst && row_dims > 0) {
    // Emitted with the epilogue's root, after the epilogue's ops and side inputs are defined.
    // In place, it accumulates in the root's buffer, and this value's lambda is then only named
    // by the epilogue's own (never called) lambdas. Without a buffer (8p: 8 MiB of f32 results
    // that were stored and read back only to be rounded to bf16); in place that would save
    // nothing: the root is stored anyway, over the accumulators.
    no_buffer = ReadsUnroundedResult(*e) && g.k <= p.kc;
    if (e->in_place) {
      MK_ASSIGN_OR_RETURN(ptr, f.StorageFor(e->root, 0, e->root->shape));
    }
  } else {
    MK_ASSIGN_OR_RETURN(ptr, f.StorageFor(&inst, 0, inst.shape));
    MK_RETURN_IF_ERROR(EmitBlockedGemm(f, inst, g, p, a, b, ptr));
    const std::string name = f.NewName("v" + f.module().Id(&inst) + "_");
    MK_RETURN_IF_ERROR(f.DefineLoadLambda(name, inst.shape, ptr));
    f.SetFn(&inst, name);
    return Status::Ok();
  }
  if (ptr.empty() && !no_buffer) {
    MK_ASSIGN_OR_RETURN(ptr, f.DeclareScratch(inst.shape, "t"));
  }
  f.DeferGemm([&f, &inst, g, p, a = std::move(a), b = std::move(b), ptr, no_buffer](
                  const TileEpilogue* tile) {
    if (!no_buffer) return EmitBlockedGemm(f, inst, g, p, a, b, ptr, tile);
    if (!tile) return CannotLower(inst, "internal: a bufferless GEMM result without its tile code");
    TileEpilogue from_tile = *tile;
    from_tile.from_tile = true;
    return EmitBlockedGemm(f, inst, g, p, a, b, ptr, &from_tile);
  });
  // Without a buffer the dot's values exist only tile by tile, in gm_tile; its lambda is named
  // only by the tile code's own lambdas, which nothing calls.
  const std::string name = f.NewName("v" + f.module().Id(&inst) + "_");
  MK_RETURN_IF_ERROR(no_buffer ? f.DefineLambda(name, inst.shape, "__builtin_trap();")
                               : f.DefineLoadLambda(name, inst.shape, ptr));
  f.SetFn(&inst, name);
  return Status::Ok();
}

PackSource DotLhsSource(FunctionEmitter& f, const hlo::Instruction& dot, const DotGeometry& g) {
  return DotSource(f, *dot.operands[0], g.lhs_batch, g.lhs_free, g.lhs_contracting);
}

PackSource DotRhsSource(FunctionEmitter& f, const hlo::Instruction& dot, const DotGeometry& g) {
  return DotSource(f, *dot.operands[1], g.rhs_batch, g.rhs_free, g.rhs_contracting);
}

Status EmitBlockedGemm(FunctionEmitter& f, const hlo::Instruction& dot, const DotGeometry& g,
                       const GemmParams& p, const std::string& ptr,
                       const TileEpilogue* epilogue) {
  if (dot.operands.size() != 2) return CannotLower(dot, "internal: dot needs two operands");
  return EmitBlockedGemm(f, dot, g, p, DotLhsSource(f, dot, g), DotRhsSource(f, dot, g), ptr,
                         epilogue);
}

Status EmitBlockedGemm(FunctionEmitter& f, const hlo::Instruction& inst, const DotGeometry& g,
                       const GemmParams& p, const PackSource& a, const PackSource& b,
                       const std::string& ptr, const TileEpilogue* epilogue) {
  if (!p.blocked || !g.blockable) return CannotLower(inst, "internal: GEMM is not blockable");
  if (epilogue && TileRowDims(epilogue->dims, g) < 0) {
    return CannotLower(inst, "internal: a tile epilogue's dims do not split into rows and N");
  }
  // A group norm's passes run in the tiles only where each holds whole groups: tiles start at
  // multiples of NR (column chunks, NC and slivers are all whole NR), so NR a multiple of the
  // group suffices. The inner-product forms' tiles are narrower than any fused group.
  TileEpilogue without_segments;
  if (epilogue && !epilogue->segment_code.empty()) {
    if (!InnerRuns(p, a, b) && p.nr % epilogue->segment == 0) {
      if (epilogue->segment_done) *epilogue->segment_done = true;
    } else {
      without_segments = *epilogue;
      without_segments.segment_code.clear();
      epilogue = &without_segments;
    }
  }
  if (InnerRuns(p, a, b)) {
    return p.inner_swapped ? EmitInnerGemmSwapped(f, g, p, a, b, ptr, epilogue)
                           : EmitInnerGemm(f, g, p, a, b, ptr, epilogue);
  }
  Layout l;
  l.pairs = p.bf16_pairs;
  l.amx = p.amx && p.bf16_pairs && p.mr == kAmxMr && p.nr == kAmxNr;
  l.mr = p.mr;
  l.nr = p.nr;
  l.pt = l.pairs ? "uint16_t" : "float";
  l.parallel = p.threads > 1;
  l.threads = p.threads;
  // K ranges sum whole tiles after the multiplies; row reductions and group norms in the tiles
  // keep per-thread state across a row's tiles as the micro-kernel finishes them, so their
  // GEMMs split columns instead.
  ThreadSplit split = p.split;
  const bool row_state = epilogue && (epilogue->row || !epilogue->region.empty() ||
                                       !epilogue->segment_code.empty());
  if (split == ThreadSplit::kDepth && row_state) split = ThreadSplit::kColumns;
  l.depth = l.parallel && split == ThreadSplit::kDepth;
  l.shared_b = l.parallel && split == ThreadSplit::kBlocks;
  if (l.parallel && split == ThreadSplit::kColumns) l.chunks = p.threads;
  l.need_acc = !l.depth && g.out_type != DType::kF32 && g.k > p.kc;
  l.tile_only = epilogue && epilogue->from_tile;
  // Threads split the MC blocks of each K slice. Few blocks: resize them so that every thread
  // gets as many; few MR slivers in all: split whichever of the MR and NR slivers divides more
  // evenly among the threads (an NR split packs the A block once per thread).
  l.mc = p.mc;
  if (l.shared_b) {
    const int64_t t = p.threads;
    auto balance = [t](int64_t slivers) {
      return static_cast<double>(slivers) / static_cast<double>(t * CeilDiv(slivers, t));
    };
    const int64_t m_slivers = CeilDiv(g.m, p.mr), n_slivers = CeilDiv(std::min(g.n, p.nc), p.nr);
    int64_t blocks = CeilDiv(g.m, p.mc);
    if (m_slivers < 4 * t && balance(n_slivers) > balance(m_slivers)) {
      l.groups = t;  // every MC block's slivers split into `t` groups
    } else {
      if (blocks < 4 * t) {
        blocks = RoundUp(blocks, t);
        l.mc = RoundUp(CeilDiv(g.m, blocks), p.mr);
      }
      blocks = CeilDiv(g.m, l.mc);
      if (blocks < t) l.groups = CeilDiv(t, blocks);
    }
  }
  // ResolveGemmParams only keeps the order where it can run; a caller's own split is checked too.
  l.a_outer = p.order == LoopOrder::kASliverOuter && !l.amx && !l.shared_b;
  if (l.a_outer) l.mc = RoundUp(g.m, p.mr);
  l.work = CeilDiv(g.m, l.mc) * l.groups;
  l.b_in_place = !p.pack_b && !l.pairs && !l.amx && b.address && b.lane_stride == 1 &&
                 (b.dtype == DType::kF32 || b.dtype == DType::kBF16);
  l.b_bf16 = l.b_in_place && b.dtype == DType::kBF16;
  l.ldb = S(b.k_stride);
  l.a_in_place = !p.pack_a && !l.pairs && !l.amx && a.address && a.k_stride == 1 &&
                 a.dtype == DType::kF32;
  l.lda = S(a.lane_stride);
  // GemmParams::share_a, where it can run (ShareAPays has the measurements). Threads splitting
  // one GEMM's columns under the A-sliver-outer order otherwise each pack all of A (2048^3: 16
  // MiB per thread per slice, 33 MiB for two threads, more than L3).
  l.shared_a = p.share_a && l.a_outer && l.parallel && split == ThreadSplit::kColumns &&
               g.batch == 1 && !l.a_in_place;
  if (l.shared_a && g.k > p.kc) l.a_panels = 2;
  MicroKernelSpec spec;
  spec.bf16_pairs = l.pairs;
  spec.mr = p.mr;
  spec.nr = p.nr;
  spec.unroll_k = p.unroll_k;
  spec.prefetch_c = p.prefetch_c;
  spec.prefetch_ab = p.prefetch_ab;
  spec.strided_a = l.a_in_place;
  MicroKernelSpec main_spec = spec;
  main_spec.strided_b = l.b_in_place;
  main_spec.bf16_b = l.b_bf16;
  // The M % MR rows' twin of a kernel: those rows of the MR-wide packed sliver (A in place:
  // of the sliver packed row-major).
  if (!l.amx) l.mr_edge = g.m % p.mr;
  auto rows_twin = [&](MicroKernelSpec s) {
    if (l.mr_edge == 0) return std::string();
    s.a_width = s.mr;
    s.mr = l.mr_edge;
    return GemmMicroKernel(f.module(), s);
  };
  l.ukr = l.amx ? AmxGemmMicroKernel(f.module(), p.prefetch_c, p.prefetch_ab > 0)
                : GemmMicroKernel(f.module(), main_spec);
  l.ukr_rows = rows_twin(main_spec);
  // The last sliver of N % NR columns: a tile of whole vectors over them (N 100 on 32-column
  // slivers: 16 columns computed for its 4 rather than 32), reading the NR-wide sliver at its
  // row stride.
  MicroKernelSpec strided = spec;
  strided.strided_b = true;
  if (!l.amx && !l.pairs && g.n % p.nr != 0) {
    const int64_t nre = RoundUp(g.n % p.nr, p.nr % 16 == 0 ? 16 : 8);
    if (nre < p.nr) {
      MicroKernelSpec edge = strided;
      edge.nr = nre;
      l.nr_edge = nre;
      l.ukr_edge = GemmMicroKernel(f.module(), edge);
      l.ukr_edge_rows = rows_twin(edge);
    }
  }
  // B in place: the packed partial sliver (f32, NR wide) through the f32 strided kernel.
  if (l.b_in_place) {
    l.ukr_part = l.nr_edge > 0 ? l.ukr_edge : GemmMicroKernel(f.module(), strided);
    l.ukr_part_rows = l.nr_edge > 0 ? l.ukr_edge_rows : rows_twin(strided);
  }

  // The K slice as packed: bf16 pairs round it to even, AMX tiles to whole tile steps.
  const int64_t kalign = l.amx ? kAmxKStep : l.pairs ? 2 : 1;
  const int64_t kpad_max = RoundUp(p.kc, kalign);
  const int64_t elt = l.pairs ? 2 : 4;
  const int64_t a_bytes = (l.a_in_place ? l.mr : l.mc) * kpad_max * elt,
                b_bytes = (l.b_in_place ? p.nr : p.nc) * kpad_max * elt;
  auto& o = f.out();
  o << "  {  // blocked GEMM: batch " << g.batch << ", M " << g.m << ", N " << g.n << ", K " << g.k
    << "; tile " << p.mr << "x" << p.nr << ", kc " << p.kc << ", mc " << l.mc << ", nc " << p.nc
    << ", " << p.threads << " thread(s)"
    << (!l.parallel                         ? ""
        : l.depth                          ? " over K ranges"
        : split == ThreadSplit::kBatch     ? " over the batch"
        : split == ThreadSplit::kColumns   ? " over column ranges"
                                           : " over row blocks")
    << (l.amx ? ", AMX tiles" : l.pairs ? ", bf16 pairs" : "")
    << (l.a_outer ? ", A slivers outer" : "") << (l.b_in_place ? ", B in place" : "")
    << (l.a_in_place ? ", A in place" : "") << "\n"
    << "    constexpr int64_t kB = " << g.batch << ", kM = " << g.m << ", kN = " << g.n
    << ", kK = " << g.k << ";\n"
    << "    constexpr int64_t kMR = " << p.mr << ", kNR = " << p.nr << ", kKC = " << p.kc
    << ", kMC = " << l.mc << ", kNC = " << p.nc << ", kG = " << l.groups << ", kW = " << l.work
    << ", kTN = " << l.chunks << ", kS = " << CeilDiv(g.n, p.nr) << ";\n";
  if (l.need_acc) {
    o << "    mkrt::Scratch gm_acc_mem(" << g.batch * g.m * g.n * 4 << ");\n"
      << "    float* const gm_acc = static_cast<float*>(gm_acc_mem.p);\n";
  }
  if (l.shared_b) {
    o << "    mkrt::Scratch gm_bp_mem(" << b_bytes << ");\n"
      << "    " << l.pt << "* const gm_bp = static_cast<" << l.pt << "*>(gm_bp_mem.p);\n";
  }
  if (l.depth) {
    o << "    constexpr int64_t kPart = " << g.batch * g.m * g.n << ", kKA = " << kalign << ";\n"
      << "    mkrt::Scratch gm_parts_mem(" << p.threads * g.batch * g.m * g.n * 4 << ");\n"
      << "    float* const gm_parts = static_cast<float*>(gm_parts_mem.p);\n";
  }
  if (l.shared_a) {
    o << "    mkrt::Scratch gm_sap_mem(" << l.a_panels * a_bytes << ");\n"
      << "    " << l.pt << "* const gm_sap = static_cast<" << l.pt << "*>(gm_sap_mem.p);\n";
  }
  if (l.parallel) o << "#pragma omp parallel num_threads(" << p.threads << ")\n";
  o << "    {\n";
  if (l.shared_a) {
    // The team may be smaller than asked for: chunks and slivers go by its actual size.
    o << "      const int64_t gm_nt = mkrt::thread_count(), gm_t = mkrt::thread_index();\n";
  } else {
    o << "      mkrt::Scratch gm_ap_mem(" << a_bytes << ");\n"
      << "      " << l.pt << "* const gm_ap = static_cast<" << l.pt << "*>(gm_ap_mem.p);\n";
  }
  if (!l.shared_b) {
    o << "      mkrt::Scratch gm_bp_mem(" << b_bytes << ");\n"
      << "      " << l.pt << "* const gm_bp = static_cast<" << l.pt << "*>(gm_bp_mem.p);\n";
  }
  o << "      alignas(64) float gm_tile[kMR * kNR];\n";
  if (epilogue && !epilogue->region.empty()) o << epilogue->region;
  // Tiles are configured per thread, once per GEMM call (released at the end of the region).
  if (l.amx) o << "      const bool gm_amx = " << kAmxBegin << "();\n";
  if (l.depth) {
    // This thread's K range (whole tile steps or pairs) and partial result; an empty range
    // (K shorter than the threads) contributes zeros.
    o << "      const int64_t gm_nt = mkrt::thread_count(), gm_t = mkrt::thread_index();\n"
      << "      const int64_t gm_k0 = kK * gm_t / gm_nt / kKA * kKA;\n"
      << "      const int64_t gm_k1 = gm_t + 1 == gm_nt ? kK : kK * (gm_t + 1) / gm_nt / kKA * kKA;\n"
      << "      float* const gm_part = gm_parts + gm_t * kPart;\n"
      << "      if (gm_k0 >= gm_k1) std::memset(gm_part, 0, kPart * sizeof(float));\n";
  }
  // Work items: (batch, column range) pairs; the ranges are whole NR slivers. Over K ranges
  // every thread runs all of them. With a shared A panel the ranges are taken per K slice,
  // after the panel is packed.
  if (l.parallel && !l.shared_b && !l.depth && !l.shared_a) {
    o << "#pragma omp for schedule(static)\n";
  }
  if (l.shared_a) {
    o << "      for (int64_t gm_b = 0; gm_b < kB; ++gm_b) {\n";
  } else {
    o << "      for (int64_t gm_bt = 0; gm_bt < kB * kTN; ++gm_bt) {\n"
      << "        const int64_t gm_b = gm_bt / kTN;\n"
      << ColumnRange("gm_bt % kTN", "        ");
  }
  auto bidx = Decompose(o, "        ", "gm_b", g.batch_dims, "gm_bx");
  if (l.b_in_place) l.b_addr = b.address(bidx, "gm_j", "gm_pc");
  if (l.a_in_place) l.a_addr = a.address(bidx, "gm_ic + gm_r", "gm_pc");
  // The K slices: of all of K, or over K ranges of this thread's range. There the multiplies
  // write the f32 partial (`tiles_g`: an f32 result) with no tile epilogue; EmitDepthSum runs
  // it on the sums.
  const std::string k_begin = l.depth ? "gm_k0" : "0", k_end = l.depth ? "gm_k1" : "kK";
  DotGeometry tiles_g = g;
  Layout tiles_l = l;
  std::string tiles_ptr = ptr;
  const TileEpilogue* tiles_epilogue = epilogue;
  if (l.depth) {
    tiles_g.out_type = DType::kF32;
    tiles_l.tile_only = false;
    tiles_ptr = "gm_part";
    tiles_epilogue = nullptr;
  }
  const std::string kslice =
      "            const int64_t gm_kc = std::min<int64_t>(kKC, " + k_end + " - gm_pc);\n"
      "            const int64_t gm_kpad = " +
      (kalign == 1 ? std::string("gm_kc")
                   : "(gm_kc + " + S(kalign - 1) + ") & ~int64_t{" + S(kalign - 1) + "}") +
      ";\n"
      "            const bool gm_first = gm_pc == " + k_begin + ";\n"
      "            const bool gm_last = gm_pc + gm_kc == " + k_end + ";\n"
      "            (void)gm_first;\n"
      "            (void)gm_last;\n";
  const std::string k_loop = "for (int64_t gm_pc = " + k_begin + "; gm_pc < " + k_end +
                             "; gm_pc += kKC) {\n";
  auto panel = [](const std::string& in) {
    return in + "const int64_t gm_nc = std::min<int64_t>(kNC, gm_n1 - gm_jc);\n" + in +
           "const int64_t gm_ns = (gm_nc + kNR - 1) / kNR;\n";
  };
  if (l.a_outer) {
    // Per K slice, all of the rows packed once; per panel, A sliver by A sliver.
    o << "        " << k_loop << kslice
      << "            const int64_t gm_ic = 0, gm_mc = kM;\n";
    if (l.shared_a) {
      // Every thread packs its slivers of this slice's panel, then waits for the others'; its
      // column ranges are chunks gm_t, gm_t + gm_nt, ... (a chunk keeps its thread across
      // the slices, so each C element is accumulated by one thread in K order).
      o << "            " << l.pt << "* const gm_ap = gm_sap"
        << (l.a_panels > 1 ? " + ((gm_pc / kKC) & 1) * " + S(a_bytes / elt) : "") << ";\n";
      EmitPackA(f, g, l, a, bidx);
      o << "#pragma omp barrier\n"
        << "            for (int64_t gm_ch = gm_t; gm_ch < kTN; gm_ch += gm_nt) {\n"
        << ColumnRange("gm_ch", "            ");
    } else {
      EmitPackA(f, g, l, a, bidx);
    }
    o << "            for (int64_t gm_jc = gm_n0; gm_jc < gm_n1; gm_jc += kNC) {\n"
      << panel("              ");
    EmitPackB(f, g, l, b, bidx);
    o << "              const int64_t gm_s0 = 0, gm_s1 = gm_ns;\n";
    EmitTilesASliverOuter(f, tiles_g, tiles_l, tiles_ptr, tiles_epilogue);
    o << "            }\n";   // jc
    if (l.shared_a) o << "            }\n";  // column ranges
    o << "        }\n"        // pc
      << "      }\n";         // batch
  } else {
    o << "        for (int64_t gm_jc = gm_n0; gm_jc < gm_n1; gm_jc += kNC) {\n"
      << panel("          ")
      << "          " << k_loop << kslice;
    EmitPackB(f, g, l, b, bidx);
    if (l.shared_b) o << "#pragma omp for schedule(static)\n";
    o << "            for (int64_t gm_w = 0; gm_w < kW; ++gm_w) {\n"
      << "              const int64_t gm_ic = (gm_w / kG) * kMC;\n"
      << "              const int64_t gm_mc = std::min<int64_t>(kMC, kM - gm_ic);\n"
      << "              const int64_t gm_s0 = gm_ns * (gm_w % kG) / kG;\n"
      << "              const int64_t gm_s1 = gm_ns * (gm_w % kG + 1) / kG;\n"
      << "              if (gm_s0 >= gm_s1) continue;\n";
    EmitPackA(f, g, l, a, bidx);
    EmitTiles(f, tiles_g, tiles_l, tiles_ptr, tiles_epilogue);
    o << "            }\n"    // work items
      << "          }\n"      // pc
      << "        }\n"        // jc
      << "      }\n";         // batch
  }
  if (l.amx) o << "      " << kAmxEnd << "(gm_amx);\n";
  if (l.depth) EmitDepthSum(o, g, l, ptr, epilogue);
  o << "    }\n"            // parallel region
    << "  }\n";
  return Status::Ok();
}

}  // namespace mk::codegen::cpu
