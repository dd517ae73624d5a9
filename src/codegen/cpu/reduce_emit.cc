#include "codegen/cpu/reduce_emit.h"

#include <algorithm>
#include <sstream>

#include "analysis/reducer.h"
#include "codegen/cpu/cpu_types.h"
#include "codegen/cpu/flat_index.h"
#include "codegen/cpu/vector_loops.h"

namespace mk::codegen::cpu {

using hlo::DType;
using hlo::Instruction;
using hlo::Opcode;

std::optional<Combiner> AssociativeCombiner(const hlo::Computation& comp) {
  const std::optional<Opcode> op = analysis::BinaryReducerOp(comp);
  if (!op) return std::nullopt;
  const DType t = comp.root()->shape.dtype();
  const bool fl = IsFloatCompute(t);
  const bool integral = t == DType::kPred || hlo::IsInteger(t);
  if (!fl && !integral) return std::nullopt;
  switch (*op) {
    case Opcode::kAdd:
    case Opcode::kMultiply:
    case Opcode::kMaximum:
    case Opcode::kMinimum:
      return Combiner{*op, t};
    case Opcode::kAnd:
    case Opcode::kOr:
      if (integral) return Combiner{*op, t};
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

std::optional<std::string> CombinerIdentity(const Combiner& c) {
  auto ct_or = ComputeType(c.dtype);
  if (!ct_or.ok()) return std::nullopt;
  const std::string ct = *ct_or;
  if (c.dtype == DType::kPred) {
    switch (c.op) {
      case Opcode::kAdd: case Opcode::kOr: case Opcode::kMaximum: return std::string("false");
      case Opcode::kMultiply: case Opcode::kAnd: case Opcode::kMinimum: return std::string("true");
      default: return std::nullopt;
    }
  }
  if (IsFloatCompute(c.dtype)) {
    switch (c.op) {
      // -0 rather than +0: -0 + x is x for every x, including -0.
      case Opcode::kAdd: return "static_cast<" + ct + ">(-0.0)";
      case Opcode::kMultiply: return "static_cast<" + ct + ">(1)";
      case Opcode::kMaximum: return "(-std::numeric_limits<" + ct + ">::infinity())";
      case Opcode::kMinimum: return "std::numeric_limits<" + ct + ">::infinity()";
      default: return std::nullopt;
    }
  }
  switch (c.op) {
    case Opcode::kAdd: case Opcode::kOr: return "static_cast<" + ct + ">(0)";
    case Opcode::kMultiply: return "static_cast<" + ct + ">(1)";
    case Opcode::kMaximum: return "std::numeric_limits<" + ct + ">::lowest()";
    case Opcode::kMinimum: return "std::numeric_limits<" + ct + ">::max()";
    case Opcode::kAnd: return "static_cast<" + ct + ">(~" + ct + "(0))";
    default: return std::nullopt;
  }
}

namespace {

// The result block of the strided form, per lane of the schedule (8 lanes: 512 results).
constexpr int64_t kStridedBlockPerLane = 64;
// Results per block when a block groups whole rows (8 KiB of f32 accumulators, in L1). 46k's
// channel reduction: 97 ms with 4 rows of 126 per block, 90-92 ms with 8 to 64.
constexpr int64_t kStridedGroupElements = 2048;

struct ReduceLayout {
  std::vector<std::string> in_idx;    // the input index: i<k> for kept dims, r<d> for reduced
  std::vector<std::string> red_vars;  // r<d>, in dimension order
  std::vector<int64_t> red_dims;
};

ReduceLayout LayoutOf(const hlo::Shape& in_shape, const std::vector<bool>& reduced) {
  ReduceLayout l;
  int64_t kept = 0;
  for (int64_t d = 0; d < in_shape.rank(); ++d) {
    if (reduced[static_cast<size_t>(d)]) {
      l.in_idx.push_back("r" + std::to_string(d));
      l.red_vars.push_back(l.in_idx.back());
      l.red_dims.push_back(in_shape.dim(d));
    } else {
      l.in_idx.push_back("i" + std::to_string(kept++));
    }
  }
  return l;
}

void ForLines(std::ostream& out, const std::vector<std::string>& vars,
              const std::vector<int64_t>& dims, size_t count) {
  for (size_t d = 0; d < count; ++d) {
    out << "  for (int64_t " << vars[d] << " = 0; " << vars[d] << " < " << dims[d] << "; ++"
        << vars[d] << ")\n";
  }
}

// Innermost input dim kept: blocks of results accumulate together, in the serial order. When
// the block holds the whole last result dim and the input's last two dims are both kept, the
// block takes several result rows (up to kStridedGroupElements results): at each reduced index
// they are one contiguous run of the input. With one row per block, a reduction over channels
// (46k: [16,64,126,126] over dim 1) read 504 bytes per channel plane before jumping 63 KB to
// the next, 64 planes at a time, which the hardware prefetchers do not follow: 150 -> 91 ms
// with 16 rows.
void EmitStrided(FunctionEmitter& f, const Instruction& inst, const ReduceLayout& l,
                 const std::string& ct, const std::string& fn, const std::string& ptr,
                 int64_t lanes) {
  const LoopSchedule s = LoopScheduleOf(f);
  const hlo::Shape& out_shape = inst.shape;
  const int64_t k = out_shape.rank();
  const int64_t c = out_shape.dim(k - 1);
  const int64_t block = std::min<int64_t>(c, kStridedBlockPerLane * lanes);
  const int64_t blocks = (c + block - 1) / block;
  const std::string iv = "i" + std::to_string(k - 1);
  const std::string x = CallExpr(f.Fn(inst.operands[0]), l.in_idx);
  const std::string init = CallExpr(f.Fn(inst.operands[1]), {});
  std::vector<std::string> out_vars = IndexVars(k);
  // Row fusion binds the leading row dims (never the last result dim: see EmitVectorReduce).
  const size_t bound = f.row_dims().size();
  const size_t in_rank = l.in_idx.size();
  const bool last_two_kept = in_rank >= 2 && l.in_idx[in_rank - 2][0] == 'i';
  int64_t rows = 1;  // result rows (of dim k-2) per block
  if (blocks == 1 && k >= 2 && static_cast<size_t>(k - 2) >= bound && last_two_kept) {
    rows = std::min<int64_t>(out_shape.dim(k - 2), std::max<int64_t>(1, kStridedGroupElements / c));
  }
  const size_t outer_end = static_cast<size_t>(rows > 1 ? k - 2 : k - 1);
  std::vector<int64_t> trips(out_shape.dims().begin() + static_cast<std::ptrdiff_t>(bound),
                             out_shape.dims().begin() + static_cast<std::ptrdiff_t>(outer_end));
  const std::string rv = rows > 1 ? out_vars[static_cast<size_t>(k - 2)] : "";
  const int64_t row_dim = rows > 1 ? out_shape.dim(k - 2) : 1;
  trips.push_back(rows > 1 ? (row_dim + rows - 1) / rows : blocks);
  auto& out = f.loops();
  out << "  {\n";
  if (bound == 0) {
    out << ParallelPragma(s, CollapseCount(trips, s.threads),
                          inst.operands[0]->shape.num_elements());
  }
  for (size_t d = bound; d < outer_end; ++d) {
    out << "  for (int64_t " << out_vars[d] << " = 0; " << out_vars[d] << " < "
        << out_shape.dim(static_cast<int64_t>(d)) << "; ++" << out_vars[d] << ")\n";
  }
  const std::string store = ptr + "[" + LinearIndexExpr(out_vars, out_shape.dims()) + "] = ";
  if (rows > 1) {
    // acc[(row - rb) * c + i]: `rows` rows of the last dim, whole.
    const std::string slot = "acc[(" + rv + " - rb) * " + std::to_string(c) + " + " + iv + "]";
    out << "  for (int64_t rb = 0; rb < " << row_dim << "; rb += " << rows << ")\n  {\n"
        << "    const int64_t re = std::min<int64_t>(rb + " << rows << ", " << row_dim << ");\n"
        << "    " << ct << " acc[" << rows * c << "];\n"
        << "    for (int64_t q = 0; q < (re - rb) * " << c << "; ++q) acc[q] = " << init << ";\n";
    ForLines(out, l.red_vars, l.red_dims, l.red_vars.size());
    // Where the input indexes its last two dims flatly, the block is one run of q = (row - rb)
    // * c + i, passed as row rb and column q: one vector loop per reduced index, no remainder
    // per row (46k: 74.5 -> 58.5 ms, C harness). Each result still accumulates in input order.
    // A row-cached value is flat over two dims after the row dims.
    const bool after_rows = in_rank - 2 >= f.row_dims().size();
    const bool flat = FlatOverDims(
        *inst.operands[0], static_cast<int64_t>(in_rank) - 2, static_cast<int64_t>(in_rank) - 1,
        [&f, after_rows](const Instruction& i) {
          return f.HasValue(&i) &&
                 (f.DensePointer(f.Fn(&i)) || (after_rows && f.RowCached(f.Fn(&i))));
        });
    if (flat) {
      std::vector<std::string> flat_in = l.in_idx, flat_out = out_vars;
      flat_in[in_rank - 2] = flat_out[static_cast<size_t>(k - 2)] = "rb";
      flat_in[in_rank - 1] = flat_out[static_cast<size_t>(k - 1)] = "q";
      const std::string xq = CallExpr(f.Fn(inst.operands[0]), flat_in);
      out << "    {\n" << InnerLoopPragmas(s) << "    for (int64_t q = 0; q < (re - rb) * " << c
          << "; ++q)\n      acc[q] = " << fn << "(acc[q], " << xq << ");\n    }\n"
          << InnerLoopPragmas(s) << "    for (int64_t q = 0; q < (re - rb) * " << c
          << "; ++q)\n      " << ptr << "[" << LinearIndexExpr(flat_out, out_shape.dims())
          << "] = " << StoreExpr(out_shape.dtype(), "acc[q]") << ";\n  }\n  }\n";
      return;
    }
    out << "    for (int64_t " << rv << " = rb; " << rv << " < re; ++" << rv << ")\n"
        << "    {\n" << InnerLoopPragmas(s) << "    for (int64_t " << iv << " = 0; " << iv
        << " < " << c << "; ++" << iv << ")\n      " << slot << " = " << fn << "(" << slot
        << ", " << x << ");\n    }\n"
        << "    for (int64_t " << rv << " = rb; " << rv << " < re; ++" << rv << ")\n"
        << InnerLoopPragmas(s) << "    for (int64_t " << iv << " = 0; " << iv << " < " << c
        << "; ++" << iv << ")\n      " << store << StoreExpr(out_shape.dtype(), slot)
        << ";\n  }\n  }\n";
    return;
  }
  out << "  for (int64_t bt = 0; bt < " << blocks << "; ++bt)\n  {\n"
      << "    const int64_t lo = bt * " << block << ", hi = std::min<int64_t>(lo + " << block
      << ", " << c << ");\n"
      << "    " << ct << " acc[" << block << "];\n"
      << "    for (int64_t " << iv << " = lo; " << iv << " < hi; ++" << iv << ") acc[" << iv
      << " - lo] = " << init << ";\n";
  ForLines(out, l.red_vars, l.red_dims, l.red_vars.size());
  out << "    {\n" << InnerLoopPragmas(s) << "    for (int64_t " << iv << " = lo; " << iv
      << " < hi; ++" << iv << ")\n      acc[" << iv << " - lo] = " << fn << "(acc[" << iv
      << " - lo], " << x << ");\n    }\n";
  out << InnerLoopPragmas(s) << "    for (int64_t " << iv << " = lo; " << iv << " < hi; ++" << iv
      << ")\n      " << store << StoreExpr(out_shape.dtype(), "acc[" + iv + " - lo]")
      << ";\n  }\n  }\n";
}

// Innermost input dim reduced, associative combiner: `lanes` partial accumulators per result.
void EmitLanes(FunctionEmitter& f, const Instruction& inst, const ReduceLayout& l,
               const std::string& ct, const std::string& identity, const std::string& fn,
               const std::string& ptr, int64_t lanes) {
  const hlo::Shape& out_shape = inst.shape;
  const std::string& rv = l.red_vars.back();
  const int64_t n = l.red_dims.back();
  std::vector<std::string> vec_idx = l.in_idx, tail_idx = l.in_idx;
  vec_idx.back() = "(" + rv + " + j)";
  const std::string x = f.Fn(inst.operands[0]);
  const std::string init = CallExpr(f.Fn(inst.operands[1]), {});
  auto& out = f.loops();
  out << "  {\n";
  OpenResultLoops(f, out_shape.dims(), inst.operands[0]->shape.num_elements());
  out << "  {\n    " << ct << " lane[" << lanes << "];\n"
      << "    for (int j = 0; j < " << lanes << "; ++j) lane[j] = " << identity << ";\n";
  ForLines(out, l.red_vars, l.red_dims, l.red_vars.size() - 1);
  out << "    {\n      int64_t " << rv << " = 0;\n"
      << "      for (; " << rv << " + " << lanes << " <= " << n << "; " << rv << " += " << lanes
      << ") {\n"
      // `omp simd` keeps the lane loop a loop until the vectorizer sees it (unrolled first, a
      // max with NaN checks would stay scalar).
      << "#pragma omp simd\n"
      << "        for (int j = 0; j < " << lanes << "; ++j) lane[j] = " << fn << "(lane[j], "
      << CallExpr(x, vec_idx) << ");\n      }\n";
  // The remainder (known here): one narrower simd step per power of two in it, into the first
  // lanes, then at most one element alone. Element by element, the 14 left of each row of 62
  // (22k's instance norm over 62x62) cost more than its 3 full steps. No step that would never
  // run: g++ warns about dead loops (-Waggressive-loop-optimizations) in the user's build output.
  const int64_t tail = n % lanes;
  for (int64_t w = lanes / 2; w >= 2; w /= 2) {
    if ((tail & w) == 0) continue;
    out << "      {\n#pragma omp simd\n"
        << "        for (int j = 0; j < " << w << "; ++j) lane[j] = " << fn << "(lane[j], "
        << CallExpr(x, vec_idx) << ");\n        " << rv << " += " << w << ";\n      }\n";
  }
  if (tail & 1) {
    out << "      lane[0] = " << fn << "(lane[0], " << CallExpr(x, tail_idx) << ");\n";
  }
  out << "    }\n"
      << "    for (int w = " << lanes / 2 << "; w > 0; w /= 2)\n"
      << "      for (int j = 0; j < w; ++j) lane[j] = " << fn << "(lane[j], lane[j + w]);\n"
      << "    " << ptr << "[" << LinearIndexExpr(IndexVars(out_shape.rank()), out_shape.dims())
      << "] = " << StoreExpr(out_shape.dtype(), fn + "(" + init + ", lane[0])") << ";\n"
      << "  }\n  }\n";
}

}  // namespace

Result<bool> EmitVectorReduce(FunctionEmitter& f, const Instruction& inst, const std::string& fn,
                              const std::string& ptr) {
  const int64_t lanes = f.schedule().Get("reduce_lanes", 1);
  if (lanes <= 1 || inst.operands.size() != 2 || !inst.shape.is_array()) return false;
  if ((lanes & (lanes - 1)) != 0) return false;  // the pairwise combine halves the lanes
  const hlo::Shape& in_shape = inst.operands[0]->shape;
  if (in_shape.rank() == 0) return false;
  std::vector<bool> reduced(static_cast<size_t>(in_shape.rank()), false);
  for (int64_t d : inst.dimensions) reduced[static_cast<size_t>(d)] = true;
  MK_ASSIGN_OR_RETURN(std::string ct, ComputeType(inst.shape.dtype()));
  const ReduceLayout layout = LayoutOf(in_shape, reduced);
  if (!reduced.back()) {
    // Under row fusion the last result dim is never a row dim (the rows end before the first
    // reduced dim); keep the serial form if it were.
    if (f.row_dims().size() >= static_cast<size_t>(inst.shape.rank())) return false;
    EmitStrided(f, inst, layout, ct, fn, ptr, lanes);
    return true;
  }
  if (inst.called.empty()) return false;
  const auto combiner = AssociativeCombiner(*inst.called[0]);
  if (!combiner || combiner->dtype != inst.shape.dtype()) return false;
  const auto identity = CombinerIdentity(*combiner);
  if (!identity || layout.red_dims.back() < lanes) return false;
  EmitLanes(f, inst, layout, ct, *identity, fn, ptr, lanes);
  return true;
}

}  // namespace mk::codegen::cpu
