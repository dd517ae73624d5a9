// Dot and convolution. Both first gather their operands into dense buffers of the accumulator
// type in a canonical order (dot: [batch, M, K] x [batch, K, N]; convolution: channels-last input
// and [window, in-feature, out-feature] kernel), so the inner loops are unit-stride, typed once
// per op, and vectorizable. The result is rounded to its element type exactly once, at the end.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "interp/contraction_window.h"
#include "interp/ops.h"

// GCC's -O2 only vectorizes loops whose trip count needs no epilogue; the packed inner loops
// here have arbitrary lengths and are most of the interpreter's time at bench sizes.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

namespace mk::interp {
namespace {

using hlo::DType;
using hlo::Instruction;
using hlo::Literal;

// What the products are summed in: f32 for float results (XLA's rule, also for bf16/f16), f64
// when asked for or when f64 is involved, and the integer result type (wrapping) otherwise.
enum class AccKind { kFloat, kDouble, kWrapInt };

AccKind ChooseAcc(const Instruction& inst, const Literal& lhs, const Literal& rhs,
                  const EvalContext& ctx) {
  DType out = inst.shape.dtype();
  if (!hlo::IsFloat(out)) return AccKind::kWrapInt;
  if (out == DType::kF64 || lhs.dtype() == DType::kF64 || rhs.dtype() == DType::kF64 ||
      ctx.options().high_precision) {
    return AccKind::kDouble;
  }
  return AccKind::kFloat;
}

// Integer accumulation happens in uint64_t: wrapping is defined there, and truncating a
// mod-2^64 sum to the narrower result type gives the same value as wrapping in that type.
template <typename Acc, typename T>
Acc ToAcc(T v) {
  if constexpr (std::is_same_v<Acc, uint64_t>) {
    if constexpr (std::is_integral_v<T>) {
      if constexpr (std::is_signed_v<T>) {
        return static_cast<uint64_t>(static_cast<int64_t>(v));
      } else {
        return static_cast<uint64_t>(v);
      }
    } else {
      // A float operand of an integer dot: saturate like a convert would, never UB.
      double d = static_cast<double>(static_cast<std::conditional_t<std::is_same_v<T, double>,
                                                                    double, float>>(v));
      if (std::isnan(d)) return 0;
      constexpr double kTwo63 = 9223372036854775808.0;
      if (d >= kTwo63) return static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
      if (d < -kTwo63) return static_cast<uint64_t>(std::numeric_limits<int64_t>::min());
      return static_cast<uint64_t>(static_cast<int64_t>(d));
    }
  } else if constexpr (std::is_integral_v<T> || std::is_same_v<T, double> ||
                       std::is_same_v<T, float>) {
    return static_cast<Acc>(v);
  } else {
    return static_cast<Acc>(static_cast<float>(v));  // bf16_t / f16_t widen exactly
  }
}

template <DType D, typename Acc>
typename hlo::NativeOf<D>::type FromAcc(Acc a) {
  using T = typename hlo::NativeOf<D>::type;
  if constexpr (D == DType::kPred) {
    return a != Acc{0} ? 1 : 0;
  } else if constexpr (std::is_integral_v<T>) {
    if constexpr (std::is_same_v<Acc, uint64_t>) {
      return static_cast<T>(a);  // modular narrowing (defined since C++20)
    } else {
      return static_cast<T>(ToAcc<uint64_t>(a));  // unreachable by ChooseAcc; kept UB-free
    }
  } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    return static_cast<T>(a);
  } else {
    return T(static_cast<float>(a));  // bf16/f16: one RNE rounding
  }
}

// dst[(a * n1 + b) * n2 + c] = src[t0[a] + t1[b] + t2[c]], converting to Acc.
template <typename Acc>
Status Gather3(const Literal& src, const std::vector<int64_t>& t0, const std::vector<int64_t>& t1,
               const std::vector<int64_t>& t2, std::vector<Acc>& dst) {
  dst.assign(t0.size() * t1.size() * t2.size(), Acc{0});
  return hlo::DispatchDType(src.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const T* in = src.data<T>();
    Acc* out = dst.data();
    for (int64_t a : t0) {
      for (int64_t b : t1) {
        const T* row = in + a + b;
        for (int64_t c : t2) *out++ = ToAcc<Acc>(row[c]);
      }
    }
    return Status::Ok();
  });
}

// dst[t0[a] + t1[b] + t2[c]] = src[(a * n1 + b) * n2 + c], rounding to dst's element type.
template <typename Acc>
Status Scatter3(const std::vector<Acc>& src, const std::vector<int64_t>& t0,
                const std::vector<int64_t>& t1, const std::vector<int64_t>& t2, Literal& dst) {
  return hlo::DispatchDType(dst.dtype(), [&](auto tag) -> Status {
    constexpr DType D = decltype(tag)::kDType;
    using T = typename decltype(tag)::type;
    T* out = dst.data<T>();
    const Acc* in = src.data();
    for (int64_t a : t0) {
      for (int64_t b : t1) {
        T* row = out + a + b;
        for (int64_t c : t2) row[c] = FromAcc<D>(*in++);
      }
    }
    return Status::Ok();
  });
}

std::vector<int64_t> Iota(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(std::max<int64_t>(n, 0)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>(i);
  return v;
}

// Offsets along `dims` of a literal with `strides`, row-major over those dims.
std::vector<int64_t> DimsOffsets(const std::vector<int64_t>& dims,
                                 const std::vector<int64_t>& all_sizes,
                                 const std::vector<int64_t>& all_strides) {
  std::vector<int64_t> sizes, strides;
  for (int64_t d : dims) {
    sizes.push_back(all_sizes[static_cast<size_t>(d)]);
    strides.push_back(all_strides[static_cast<size_t>(d)]);
  }
  return window::OffsetTable(sizes, strides);
}

std::string DimsString(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

// Checks that every dim is in [0, rank) and none repeats across the given lists.
bool DistinctDimsInRange(const std::vector<const std::vector<int64_t>*>& lists, int64_t rank) {
  std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(rank, 0)), false);
  for (const auto* list : lists) {
    for (int64_t d : *list) {
      if (d < 0 || d >= rank || seen[static_cast<size_t>(d)]) return false;
      seen[static_cast<size_t>(d)] = true;
    }
  }
  return true;
}

Status CheckArrayOperands(const Instruction& inst, const Operands& ops, size_t n) {
  if (ops.size() != n) return OpError(inst, "expects " + std::to_string(n) + " operands");
  for (const Literal* op : ops) {
    if (op == nullptr || !op->shape().is_array()) return OpError(inst, "operands must be arrays");
  }
  if (!inst.shape.is_array()) return OpError(inst, "result must be an array");
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// dot

struct DotPlan {
  int64_t batch = 1, m = 1, k = 1, n = 1;
  std::vector<int64_t> lhs_batch, lhs_m, lhs_k;  // offset tables into lhs
  std::vector<int64_t> rhs_batch, rhs_k, rhs_n;  // offset tables into rhs
};

template <typename Acc>
Status RunDot(const DotPlan& p, const Literal& lhs, const Literal& rhs, Literal& result,
              const InterpreterOptions& options) {
  std::vector<Acc> a, b;
  MK_RETURN_IF_ERROR(Gather3(lhs, p.lhs_batch, p.lhs_m, p.lhs_k, a));
  MK_RETURN_IF_ERROR(Gather3(rhs, p.rhs_batch, p.rhs_k, p.rhs_n, b));
  std::vector<Acc> c(static_cast<size_t>(p.batch * p.m * p.n), Acc{0});
  // i-k-j order: the innermost loop streams a row of b into a row of c. Each c element still
  // sums over k in increasing order, so the result does not depend on vectorization.
  for (int64_t bi = 0; bi < p.batch; ++bi) {
    for (int64_t i = 0; i < p.m; ++i) {
      // One row is k*n multiply-adds: checking per row keeps a huge dot interruptible.
      MK_RETURN_IF_ERROR(CheckInterrupted(options));
      Acc* __restrict crow = c.data() + (bi * p.m + i) * p.n;
      const Acc* arow = a.data() + (bi * p.m + i) * p.k;
      for (int64_t kk = 0; kk < p.k; ++kk) {
        const Acc av = arow[kk];
        const Acc* __restrict brow = b.data() + (bi * p.k + kk) * p.n;
        for (int64_t j = 0; j < p.n; ++j) crow[j] += av * brow[j];
      }
    }
  }
  // The result is [batch..., lhs free..., rhs free...] row-major: exactly c's order.
  return Scatter3(c, std::vector<int64_t>{0}, std::vector<int64_t>{0}, Iota(p.batch * p.m * p.n),
                  result);
}

Result<Literal> EvalDot(const Instruction& inst, const Operands& ops, EvalContext& ctx) {
  MK_RETURN_IF_ERROR(CheckArrayOperands(inst, ops, 2));
  if (!inst.dot_dims.has_value()) return OpError(inst, "missing dot dimension numbers");
  const Literal& lhs = *ops[0];
  const Literal& rhs = *ops[1];
  const hlo::DotDimensions& dd = *inst.dot_dims;
  const auto& ls = lhs.shape().dims();
  const auto& rs = rhs.shape().dims();
  if (dd.lhs_batch.size() != dd.rhs_batch.size() ||
      dd.lhs_contracting.size() != dd.rhs_contracting.size()) {
    return OpError(inst, "lhs and rhs must have as many batch and contracting dims");
  }
  if (!DistinctDimsInRange({&dd.lhs_batch, &dd.lhs_contracting}, lhs.shape().rank()) ||
      !DistinctDimsInRange({&dd.rhs_batch, &dd.rhs_contracting}, rhs.shape().rank())) {
    return OpError(inst, "batch/contracting dims out of range or repeated");
  }
  for (size_t i = 0; i < dd.lhs_batch.size(); ++i) {
    if (ls[static_cast<size_t>(dd.lhs_batch[i])] != rs[static_cast<size_t>(dd.rhs_batch[i])]) {
      return OpError(inst, "batch dimension sizes differ");
    }
  }
  for (size_t i = 0; i < dd.lhs_contracting.size(); ++i) {
    if (ls[static_cast<size_t>(dd.lhs_contracting[i])] !=
        rs[static_cast<size_t>(dd.rhs_contracting[i])]) {
      return OpError(inst, "contracting dimension sizes differ");
    }
  }
  auto free_dims = [](int64_t rank, const std::vector<int64_t>& batch,
                      const std::vector<int64_t>& contracting) {
    std::vector<int64_t> out;
    for (int64_t d = 0; d < rank; ++d) {
      if (std::find(batch.begin(), batch.end(), d) == batch.end() &&
          std::find(contracting.begin(), contracting.end(), d) == contracting.end()) {
        out.push_back(d);
      }
    }
    return out;
  };
  std::vector<int64_t> lhs_free = free_dims(lhs.shape().rank(), dd.lhs_batch, dd.lhs_contracting);
  std::vector<int64_t> rhs_free = free_dims(rhs.shape().rank(), dd.rhs_batch, dd.rhs_contracting);

  std::vector<int64_t> expected;
  DotPlan p;
  for (int64_t d : dd.lhs_batch) {
    expected.push_back(ls[static_cast<size_t>(d)]);
    p.batch *= ls[static_cast<size_t>(d)];
  }
  for (int64_t d : lhs_free) {
    expected.push_back(ls[static_cast<size_t>(d)]);
    p.m *= ls[static_cast<size_t>(d)];
  }
  for (int64_t d : rhs_free) {
    expected.push_back(rs[static_cast<size_t>(d)]);
    p.n *= rs[static_cast<size_t>(d)];
  }
  for (int64_t d : dd.lhs_contracting) p.k *= ls[static_cast<size_t>(d)];
  if (expected != inst.shape.dims()) {
    return OpError(inst, "result dims " + DimsString(inst.shape.dims()) + " do not match " +
                             DimsString(expected));
  }
  std::vector<int64_t> lst = hlo::RowMajorStrides(ls), rst = hlo::RowMajorStrides(rs);
  p.lhs_batch = DimsOffsets(dd.lhs_batch, ls, lst);
  p.lhs_m = DimsOffsets(lhs_free, ls, lst);
  p.lhs_k = DimsOffsets(dd.lhs_contracting, ls, lst);
  p.rhs_batch = DimsOffsets(dd.rhs_batch, rs, rst);
  p.rhs_k = DimsOffsets(dd.rhs_contracting, rs, rst);
  p.rhs_n = DimsOffsets(rhs_free, rs, rst);

  Literal result(inst.shape);
  Status s;
  switch (ChooseAcc(inst, lhs, rhs, ctx)) {
    case AccKind::kFloat: s = RunDot<float>(p, lhs, rhs, result, ctx.options()); break;
    case AccKind::kDouble: s = RunDot<double>(p, lhs, rhs, result, ctx.options()); break;
    case AccKind::kWrapInt: s = RunDot<uint64_t>(p, lhs, rhs, result, ctx.options()); break;
  }
  if (!s.ok() && s.code() == ErrorCode::kCancelled) return s;
  if (!s.ok()) return OpError(inst, s.message());
  return result;
}

// ---------------------------------------------------------------------------------------------
// convolution

// Output features are processed in segments over which both the feature group and the batch
// group are constant (groups are contiguous ranges of output features).
struct ConvSegment {
  int64_t o_begin = 0, o_end = 0;
  int64_t feature_group = 0, batch_group = 0;
};

struct ConvPlan {
  int64_t out_batch = 0;        // input batch / batch_group_count
  int64_t in_features = 0;      // C
  int64_t group_features = 0;   // C / feature_group_count (kernel input features)
  int64_t out_features = 0;     // O
  int64_t in_positions = 1;     // product of input spatial sizes
  int64_t out_positions = 1;    // product of output spatial sizes
  int64_t window_positions = 1; // product of window sizes
  std::vector<window::Axis> axes;
  std::vector<int64_t> in_spatial_strides;  // row-major strides of the packed input's spatial part
  std::vector<ConvSegment> segments;
};

template <typename Acc>
Status ConvCompute(const ConvPlan& p, const std::vector<Acc>& in, const std::vector<Acc>& ker,
                   std::vector<Acc>& out, const InterpreterOptions& options) {
  const size_t spatial = p.axes.size();
  std::vector<int64_t> out_sizes(spatial), win_sizes(spatial);
  for (size_t d = 0; d < spatial; ++d) {
    out_sizes[d] = p.axes[d].out_size;
    win_sizes[d] = p.axes[d].window_size;
  }
  const int64_t C = p.in_features, Cg = p.group_features, O = p.out_features;
  // An empty input or kernel contributes nothing; the zero-filled output is the answer (and
  // offsets into an empty buffer would be pointer arithmetic on null).
  if (in.empty() || ker.empty()) return Status::Ok();
  std::vector<int64_t> opos(spatial), wpos(spatial);
  // Window position outermost per output position, so the index arithmetic is done once for
  // all feature groups (depthwise convolutions have one group per channel).
  for (int64_t ob = 0; ob < p.out_batch; ++ob) {
    std::fill(opos.begin(), opos.end(), 0);
    for (int64_t os = 0; os < p.out_positions; ++os) {
      if (os % 64 == 0) MK_RETURN_IF_ERROR(CheckInterrupted(options));
      Acc* out_row = out.data() + (ob * p.out_positions + os) * O;
      std::fill(wpos.begin(), wpos.end(), 0);
      for (int64_t w = 0; w < p.window_positions; ++w) {
        int64_t in_pos = 0;
        bool valid = true;
        for (size_t d = 0; d < spatial; ++d) {
          int64_t i = p.axes[d].input_index[static_cast<size_t>(opos[d] * win_sizes[d] + wpos[d])];
          if (i < 0) {
            valid = false;
            break;
          }
          in_pos += i * p.in_spatial_strides[d];
        }
        if (valid) {
          const Acc* kw = ker.data() + w * Cg * O;
          for (const ConvSegment& seg : p.segments) {
            const int64_t in_batch = seg.batch_group * p.out_batch + ob;
            const Acc* x =
                in.data() + (in_batch * p.in_positions + in_pos) * C + seg.feature_group * Cg;
            Acc* __restrict acc = out_row + seg.o_begin;
            const int64_t len = seg.o_end - seg.o_begin;
            for (int64_t ci = 0; ci < Cg; ++ci) {
              const Acc xv = x[ci];
              const Acc* __restrict krow = kw + ci * O + seg.o_begin;
              for (int64_t o = 0; o < len; ++o) acc[o] += xv * krow[o];
            }
          }
        }
        window::Advance(wpos, win_sizes);
      }
      window::Advance(opos, out_sizes);
    }
  }
  return Status::Ok();
}

template <typename Acc>
Status RunConv(const ConvPlan& p, const Literal& lhs, const Literal& rhs,
               const hlo::ConvDimensionNumbers& cd, const std::vector<hlo::WindowDimension>& win,
               Literal& result, const InterpreterOptions& options) {
  const auto& ls = lhs.shape().dims();
  const auto& ks = rhs.shape().dims();
  const auto& os = result.shape().dims();
  std::vector<int64_t> lst = hlo::RowMajorStrides(ls), kst = hlo::RowMajorStrides(ks),
                       ost = hlo::RowMajorStrides(os);
  // Input packed as [batch][spatial...][feature].
  std::vector<Acc> in, ker;
  MK_RETURN_IF_ERROR(Gather3(lhs, DimsOffsets({cd.input_batch}, ls, lst),
                             DimsOffsets(cd.input_spatial, ls, lst),
                             DimsOffsets({cd.input_feature}, ls, lst), in));
  // Kernel packed as [window position][input feature][output feature], reversal applied here.
  std::vector<int64_t> wsizes, wstrides;
  std::vector<bool> reversed;
  for (size_t d = 0; d < cd.kernel_spatial.size(); ++d) {
    wsizes.push_back(ks[static_cast<size_t>(cd.kernel_spatial[d])]);
    wstrides.push_back(kst[static_cast<size_t>(cd.kernel_spatial[d])]);
    reversed.push_back(win[d].reversal);
  }
  MK_RETURN_IF_ERROR(Gather3(rhs, window::OffsetTable(wsizes, wstrides, reversed),
                             DimsOffsets({cd.kernel_input_feature}, ks, kst),
                             DimsOffsets({cd.kernel_output_feature}, ks, kst), ker));
  std::vector<Acc> out(static_cast<size_t>(p.out_batch * p.out_positions * p.out_features),
                       Acc{0});
  MK_RETURN_IF_ERROR(ConvCompute(p, in, ker, out, options));
  return Scatter3(out, DimsOffsets({cd.output_batch}, os, ost),
                  DimsOffsets(cd.output_spatial, os, ost),
                  DimsOffsets({cd.output_feature}, os, ost), result);
}

Result<Literal> EvalConvolution(const Instruction& inst, const Operands& ops, EvalContext& ctx) {
  MK_RETURN_IF_ERROR(CheckArrayOperands(inst, ops, 2));
  if (!inst.conv_dims.has_value()) return OpError(inst, "missing dim_labels");
  const Literal& lhs = *ops[0];
  const Literal& rhs = *ops[1];
  const hlo::ConvDimensionNumbers& cd = *inst.conv_dims;
  const std::vector<hlo::WindowDimension> win =
      inst.window.has_value() ? *inst.window : std::vector<hlo::WindowDimension>{};
  const size_t spatial = cd.input_spatial.size();
  if (cd.kernel_spatial.size() != spatial || cd.output_spatial.size() != spatial ||
      win.size() != spatial) {
    return OpError(inst, "window and dim_labels disagree on the number of spatial dims");
  }
  const int64_t rank = static_cast<int64_t>(spatial) + 2;
  if (lhs.shape().rank() != rank || rhs.shape().rank() != rank || inst.shape.rank() != rank) {
    return OpError(inst, "operand and result ranks must be 2 + number of spatial dims");
  }
  std::vector<int64_t> ib = {cd.input_batch, cd.input_feature};
  std::vector<int64_t> kf = {cd.kernel_input_feature, cd.kernel_output_feature};
  std::vector<int64_t> ob = {cd.output_batch, cd.output_feature};
  if (!DistinctDimsInRange({&ib, &cd.input_spatial}, rank) ||
      !DistinctDimsInRange({&kf, &cd.kernel_spatial}, rank) ||
      !DistinctDimsInRange({&ob, &cd.output_spatial}, rank)) {
    return OpError(inst, "dim_labels name a dimension twice or out of range");
  }
  const auto& ls = lhs.shape().dims();
  const auto& ks = rhs.shape().dims();
  const auto& os = inst.shape.dims();
  auto at = [](const std::vector<int64_t>& v, int64_t i) { return v[static_cast<size_t>(i)]; };
  const int64_t N = at(ls, cd.input_batch), C = at(ls, cd.input_feature);
  const int64_t Cg = at(ks, cd.kernel_input_feature), O = at(ks, cd.kernel_output_feature);
  const int64_t G = inst.feature_group_count, BG = inst.batch_group_count;
  if (G < 1 || BG < 1) return OpError(inst, "group counts must be positive");
  if (C % G != 0 || C / G != Cg) {
    return OpError(inst, "kernel input features (" + std::to_string(Cg) +
                             ") must equal input features / feature_group_count");
  }
  if (O % G != 0 || O % BG != 0 || N % BG != 0) {
    return OpError(inst, "output features and batch must be divisible by the group counts");
  }
  if (at(os, cd.output_batch) != N / BG || at(os, cd.output_feature) != O) {
    return OpError(inst, "result batch/feature sizes do not match the operands");
  }
  ConvPlan p;
  p.out_batch = N / BG;
  p.in_features = C;
  p.group_features = Cg;
  p.out_features = O;
  std::vector<int64_t> in_spatial_sizes;
  for (size_t d = 0; d < spatial; ++d) {
    window::Axis axis;
    std::string error;
    if (!window::ResolveAxis(win[d], at(ls, cd.input_spatial[d]), axis, error)) {
      return OpError(inst, error);
    }
    if (win[d].size != at(ks, cd.kernel_spatial[d])) {
      return OpError(inst, "window size does not match the kernel's spatial dimension");
    }
    if (axis.out_size != at(os, cd.output_spatial[d])) {
      return OpError(inst, "result spatial dimension " + std::to_string(d) + " should be " +
                               std::to_string(axis.out_size));
    }
    in_spatial_sizes.push_back(at(ls, cd.input_spatial[d]));
    p.in_positions *= at(ls, cd.input_spatial[d]);
    p.out_positions *= axis.out_size;
    p.window_positions *= win[d].size;
    p.axes.push_back(std::move(axis));
  }
  p.in_spatial_strides = hlo::RowMajorStrides(in_spatial_sizes);
  const int64_t per_feature_group = O / G, per_batch_group = O / BG;
  for (int64_t start = 0; start < O;) {
    ConvSegment seg;
    seg.o_begin = start;
    seg.feature_group = start / per_feature_group;
    seg.batch_group = start / per_batch_group;
    seg.o_end = std::min((seg.feature_group + 1) * per_feature_group,
                         (seg.batch_group + 1) * per_batch_group);
    p.segments.push_back(seg);
    start = seg.o_end;
  }

  Literal result(inst.shape);
  Status s;
  switch (ChooseAcc(inst, lhs, rhs, ctx)) {
    case AccKind::kFloat: s = RunConv<float>(p, lhs, rhs, cd, win, result, ctx.options()); break;
    case AccKind::kDouble: s = RunConv<double>(p, lhs, rhs, cd, win, result, ctx.options()); break;
    case AccKind::kWrapInt: s = RunConv<uint64_t>(p, lhs, rhs, cd, win, result, ctx.options()); break;
  }
  if (!s.ok() && s.code() == ErrorCode::kCancelled) return s;
  if (!s.ok()) return OpError(inst, s.message());
  return result;
}

}  // namespace

Result<Literal> EvalContraction(const Instruction& inst, const Operands& ops, EvalContext& ctx) {
  switch (inst.opcode) {
    case hlo::Opcode::kDot: return EvalDot(inst, ops, ctx);
    case hlo::Opcode::kConvolution: return EvalConvolution(inst, ops, ctx);
    default:
      return OpError(inst, "not a contraction op");
  }
}

}  // namespace mk::interp
