// reduce, reduce-window and select-and-scatter.
//
// Each op is reduced to a FoldPlan: for every output element (row-major), the list of input
// offsets it folds, in row-major order of the reduced dims / window. Two evaluators consume
// it: a generic one that calls the to_apply computation once per step (any reducer, any number
// of operands), and a typed fast one for a single operand whose reducer is one binary op of its
// two parameters. Both fold from the init value in the same order and round to the element type
// after every step, exactly as the computation would, so they agree bit for bit.
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "interp/contraction_window.h"
#include "interp/ops.h"

namespace mk::interp {
namespace {

using hlo::Computation;
using hlo::DType;
using hlo::Instruction;
using hlo::Literal;
using hlo::Opcode;

// ---------------------------------------------------------------------------------------------
// Which input offsets each output element folds.

class FoldPlan {
 public:
  // reduce: output o folds in[out_offsets[o] + reduced_offsets[r]] for every r.
  static FoldPlan ForReduce(std::vector<int64_t> out_offsets, std::vector<int64_t> reduced) {
    FoldPlan p;
    p.out_offsets_ = std::move(out_offsets);
    p.reduced_offsets_ = std::move(reduced);
    p.out_count_ = static_cast<int64_t>(p.out_offsets_.size());
    return p;
  }
  // Windowed ops: one resolved axis per input dim; padding positions are left out.
  static FoldPlan ForWindow(std::vector<window::Axis> axes, const std::vector<int64_t>& in_dims) {
    FoldPlan p;
    p.windowed_ = true;
    p.in_strides_ = hlo::RowMajorStrides(in_dims);
    p.out_count_ = 1;
    for (const auto& a : axes) {
      p.out_sizes_.push_back(a.out_size);
      p.win_sizes_.push_back(a.window_size);
      p.out_count_ *= a.out_size;
    }
    p.axes_ = std::move(axes);
    return p;
  }

  int64_t out_count() const { return out_count_; }

  // Calls fn(output_index, offsets) for each output element in row-major order; stops at the
  // first error. `offsets` is reused between calls (no allocation per element).
  template <typename Fn>
  Status ForEach(Fn&& fn) const {
    std::vector<int64_t> offsets;
    if (!windowed_) {
      offsets.resize(reduced_offsets_.size());
      for (int64_t o = 0; o < out_count_; ++o) {
        int64_t base = out_offsets_[static_cast<size_t>(o)];
        for (size_t r = 0; r < reduced_offsets_.size(); ++r) offsets[r] = base + reduced_offsets_[r];
        MK_RETURN_IF_ERROR(fn(o, offsets));
      }
      return Status::Ok();
    }
    const size_t rank = axes_.size();
    int64_t window_count = 1;
    for (int64_t s : win_sizes_) window_count *= s;
    offsets.reserve(static_cast<size_t>(window_count));
    std::vector<int64_t> opos(rank, 0), wpos(rank, 0);
    for (int64_t o = 0; o < out_count_; ++o) {
      offsets.clear();
      std::fill(wpos.begin(), wpos.end(), 0);
      for (int64_t w = 0; w < window_count; ++w) {
        int64_t offset = 0;
        bool valid = true;
        for (size_t d = 0; d < rank; ++d) {
          int64_t i = axes_[d].input_index[static_cast<size_t>(opos[d] * win_sizes_[d] + wpos[d])];
          if (i < 0) {
            valid = false;
            break;
          }
          offset += i * in_strides_[d];
        }
        if (valid) offsets.push_back(offset);
        window::Advance(wpos, win_sizes_);
      }
      MK_RETURN_IF_ERROR(fn(o, offsets));
      window::Advance(opos, out_sizes_);
    }
    return Status::Ok();
  }

 private:
  bool windowed_ = false;
  int64_t out_count_ = 0;
  std::vector<int64_t> out_offsets_, reduced_offsets_;
  std::vector<window::Axis> axes_;
  std::vector<int64_t> in_strides_, out_sizes_, win_sizes_;
};

// ---------------------------------------------------------------------------------------------
// Recognizing simple reducers, and applying them on typed values.

enum class Reducer { kNone, kAdd, kMul, kMax, kMin, kAnd, kOr };

// The binary op a computation is, when its root is `op(p0, p1)` (or `op(p1, p0)`: all are
// commutative) on scalars of `dtype`.
Reducer RecognizeReducer(const Computation* c, DType dtype) {
  if (c == nullptr || c->parameters().size() != 2 || c->root() == nullptr) return Reducer::kNone;
  const Instruction* root = c->root();
  if (root->operands.size() != 2) return Reducer::kNone;
  const Instruction* p0 = c->parameter(0);
  const Instruction* p1 = c->parameter(1);
  bool params = (root->operands[0] == p0 && root->operands[1] == p1) ||
                (root->operands[0] == p1 && root->operands[1] == p0);
  if (!params) return Reducer::kNone;
  hlo::Shape scalar = hlo::Shape::Scalar(dtype);
  if (!p0->shape.SameAs(scalar) || !p1->shape.SameAs(scalar) || !root->shape.SameAs(scalar)) {
    return Reducer::kNone;
  }
  // Arithmetic on pred and bitwise ops on floats are left to the computation's own semantics.
  bool is_pred = dtype == DType::kPred;
  bool is_int = hlo::IsInteger(dtype) || is_pred;
  switch (root->opcode) {
    case Opcode::kAdd: return is_pred ? Reducer::kNone : Reducer::kAdd;
    case Opcode::kMultiply: return is_pred ? Reducer::kNone : Reducer::kMul;
    case Opcode::kMaximum: return is_pred ? Reducer::kNone : Reducer::kMax;
    case Opcode::kMinimum: return is_pred ? Reducer::kNone : Reducer::kMin;
    case Opcode::kAnd: return is_int ? Reducer::kAnd : Reducer::kNone;
    case Opcode::kOr: return is_int ? Reducer::kOr : Reducer::kNone;
    default: return Reducer::kNone;
  }
}

// The type a fast-path step computes in: f32 for the 16-bit floats (rounded back after every
// step), the element type otherwise.
template <typename T>
using ComputeType =
    std::conditional_t<std::is_same_v<T, hlo::bf16_t> || std::is_same_v<T, hlo::f16_t>, float, T>;

template <typename T>
ComputeType<T> Widen(T v) {
  return static_cast<ComputeType<T>>(v);
}
template <typename T>
T Narrow(ComputeType<T> v) {
  if constexpr (std::is_same_v<ComputeType<T>, T>) {
    return v;
  } else {
    return T(v);
  }
}

template <Reducer R, typename C>
C Combine(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    // Integer add/multiply wrap: compute in uint64_t (no promotion to int, no signed overflow).
    if constexpr (R == Reducer::kAdd) {
      return static_cast<C>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
    } else if constexpr (R == Reducer::kMul) {
      return static_cast<C>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
    } else if constexpr (R == Reducer::kMax) {
      return a > b ? a : b;
    } else if constexpr (R == Reducer::kMin) {
      return a < b ? a : b;
    } else if constexpr (R == Reducer::kAnd) {
      return static_cast<C>(a & b);
    } else {
      return static_cast<C>(a | b);
    }
  } else {
    if constexpr (R == Reducer::kAdd) {
      return a + b;
    } else if constexpr (R == Reducer::kMul) {
      return a * b;
    } else if constexpr (R == Reducer::kMax || R == Reducer::kMin) {
      // XLA's maximum/minimum propagate NaN and order -0 below +0 (as elementwise.cc does).
      if (std::isnan(a)) return a;
      if (std::isnan(b)) return b;
      if constexpr (R == Reducer::kMax) {
        if (a == b) return std::signbit(a) ? b : a;
        return a > b ? a : b;
      } else {
        if (a == b) return std::signbit(a) ? a : b;
        return a < b ? a : b;
      }
    } else {
      return a;  // unreachable: RecognizeReducer never picks and/or for floats
    }
  }
}

// One typed fold over the plan for reducer R.
template <DType D, Reducer R>
void FastFoldTyped(const FoldPlan& plan, const Literal& in, const Literal& init, Literal& out,
                   bool high_precision_add) {
  using T = typename hlo::NativeOf<D>::type;
  using C = ComputeType<T>;
  const T* x = in.data<T>();
  T* y = out.data<T>();
  const T init_value = init.data<T>()[0];
  constexpr bool kRoundEachStep = !std::is_same_v<C, T>;
  Status ignored = plan.ForEach([&](int64_t o, const std::vector<int64_t>& offsets) -> Status {
    if constexpr (R == Reducer::kAdd && std::is_floating_point_v<C>) {
      if (high_precision_add) {
        double acc = static_cast<double>(Widen(init_value));
        for (int64_t off : offsets) acc += static_cast<double>(Widen(x[off]));
        y[o] = Narrow<T>(static_cast<C>(acc));
        return Status::Ok();
      }
    }
    C acc = Widen(init_value);
    for (int64_t off : offsets) {
      acc = Combine<R>(acc, Widen(x[off]));
      if constexpr (kRoundEachStep) acc = Widen(Narrow<T>(acc));
    }
    y[o] = Narrow<T>(acc);
    return Status::Ok();
  });
  (void)ignored;  // the callback never fails
}

Status FastFold(Reducer r, const FoldPlan& plan, const Literal& in, const Literal& init,
                Literal& out, bool high_precision_add) {
  return hlo::DispatchDType(in.dtype(), [&](auto tag) -> Status {
    constexpr DType D = decltype(tag)::kDType;
    switch (r) {
      case Reducer::kAdd: FastFoldTyped<D, Reducer::kAdd>(plan, in, init, out, high_precision_add); break;
      case Reducer::kMul: FastFoldTyped<D, Reducer::kMul>(plan, in, init, out, false); break;
      case Reducer::kMax: FastFoldTyped<D, Reducer::kMax>(plan, in, init, out, false); break;
      case Reducer::kMin: FastFoldTyped<D, Reducer::kMin>(plan, in, init, out, false); break;
      case Reducer::kAnd: FastFoldTyped<D, Reducer::kAnd>(plan, in, init, out, false); break;
      case Reducer::kOr: FastFoldTyped<D, Reducer::kOr>(plan, in, init, out, false); break;
      case Reducer::kNone: return Internal("fast fold without a reducer");
    }
    return Status::Ok();
  });
}

// ---------------------------------------------------------------------------------------------
// The generic path: scalars in, to_apply called per step.

Literal ScalarAt(const Literal& lit, int64_t index) {
  Literal s(hlo::Shape::Scalar(lit.dtype()));
  size_t bytes = static_cast<size_t>(hlo::DTypeByteSize(lit.dtype()));
  std::memcpy(s.raw(), lit.raw() + static_cast<size_t>(index) * bytes, bytes);
  return s;
}

Status StoreScalar(const Instruction& inst, const Literal& scalar, Literal& dst, int64_t index) {
  if (!scalar.shape().is_array() || scalar.shape().rank() != 0 || scalar.dtype() != dst.dtype()) {
    return OpError(inst, "reducer returned " + scalar.shape().ToString(false) + ", expected " +
                             std::string(hlo::DTypeName(dst.dtype())) + "[]");
  }
  size_t bytes = static_cast<size_t>(hlo::DTypeByteSize(dst.dtype()));
  std::memcpy(dst.raw() + static_cast<size_t>(index) * bytes, scalar.raw(), bytes);
  return Status::Ok();
}

// Unpacks a reducer's result into `n` scalars (a tuple for multi-operand reducers).
Status UnpackReducerResult(const Instruction& inst, Literal result, size_t n,
                           std::vector<Literal>& acc) {
  if (n == 1 && !result.shape().is_tuple()) {
    acc[0] = std::move(result);
  } else if (result.shape().is_tuple() && result.elements().size() == n) {
    for (size_t i = 0; i < n; ++i) acc[i] = std::move(result.mutable_elements()[i]);
  } else {
    return OpError(inst, "reducer returned " + result.shape().ToString(false) + ", expected " +
                             std::to_string(n) + " scalar(s)");
  }
  for (const Literal& a : acc) {
    if (!a.shape().is_array() || a.shape().rank() != 0) {
      return OpError(inst, "reducer must return scalars, got " + a.shape().ToString(false));
    }
  }
  return Status::Ok();
}

Status GenericFold(const Instruction& inst, const Computation& reducer, EvalContext& ctx,
                   const FoldPlan& plan, const std::vector<const Literal*>& inputs,
                   const std::vector<const Literal*>& inits, std::vector<Literal*>& outs) {
  const size_t n = inputs.size();
  std::vector<Literal> acc(n), args;
  return plan.ForEach([&](int64_t o, const std::vector<int64_t>& offsets) -> Status {
    for (size_t i = 0; i < n; ++i) acc[i] = *inits[i];
    for (int64_t off : offsets) {
      args.clear();
      for (size_t i = 0; i < n; ++i) args.push_back(std::move(acc[i]));
      for (size_t i = 0; i < n; ++i) args.push_back(ScalarAt(*inputs[i], off));
      MK_ASSIGN_OR_RETURN(Literal r, ctx.Call(reducer, args));
      MK_RETURN_IF_ERROR(UnpackReducerResult(inst, std::move(r), n, acc));
    }
    for (size_t i = 0; i < n; ++i) MK_RETURN_IF_ERROR(StoreScalar(inst, acc[i], *outs[i], o));
    return Status::Ok();
  });
}

// ---------------------------------------------------------------------------------------------
// Shared checks for reduce and reduce-window: N inputs of equal dims, N scalar inits, and a
// result (array or N-tuple) of `out_dims` whose element types are the inits'.

struct Folded {
  std::vector<const Literal*> inputs, inits;
  std::vector<hlo::Shape> out_shapes;
};

Result<Folded> CheckFoldOperands(const Instruction& inst, const Operands& ops) {
  if (ops.size() < 2 || ops.size() % 2 != 0) {
    return OpError(inst, "expects N inputs followed by N init values");
  }
  if (inst.to_apply() == nullptr) return OpError(inst, "missing to_apply computation");
  Folded f;
  const size_t n = ops.size() / 2;
  for (size_t i = 0; i < n; ++i) {
    const Literal* in = ops[i];
    const Literal* init = ops[n + i];
    if (!in->shape().is_array() || !init->shape().is_array()) {
      return OpError(inst, "operands must be arrays");
    }
    if (in->shape().dims() != ops[0]->shape().dims()) {
      return OpError(inst, "all inputs must have the same dimensions");
    }
    if (init->shape().rank() != 0) return OpError(inst, "init values must be scalars");
    f.inputs.push_back(in);
    f.inits.push_back(init);
  }
  if (n == 1 && inst.shape.is_array()) {
    f.out_shapes.push_back(inst.shape);
  } else if (inst.shape.is_tuple() && inst.shape.tuple_shapes().size() == n) {
    f.out_shapes = inst.shape.tuple_shapes();
  } else {
    return OpError(inst, "result must be " + std::to_string(n) + " array(s)");
  }
  for (size_t i = 0; i < n; ++i) {
    if (!f.out_shapes[i].is_array() || f.out_shapes[i].dtype() != f.inits[i]->dtype()) {
      return OpError(inst, "result element types must match the init values");
    }
  }
  return f;
}

Result<Literal> RunFold(const Instruction& inst, const Folded& f, const FoldPlan& plan,
                        const std::vector<int64_t>& out_dims, EvalContext& ctx) {
  for (const hlo::Shape& s : f.out_shapes) {
    if (s.dims() != out_dims) {
      return OpError(inst, "result dims do not match the reduced input");
    }
  }
  std::vector<Literal> results;
  for (const hlo::Shape& s : f.out_shapes) results.emplace_back(s);
  const Computation& reducer = *inst.to_apply();
  Reducer r = f.inputs.size() == 1 && f.inputs[0]->dtype() == f.inits[0]->dtype()
                  ? RecognizeReducer(&reducer, f.inputs[0]->dtype())
                  : Reducer::kNone;
  if (r != Reducer::kNone) {
    MK_RETURN_IF_ERROR(FastFold(r, plan, *f.inputs[0], *f.inits[0], results[0],
                                ctx.options().high_precision));
  } else {
    std::vector<Literal*> outs;
    for (Literal& l : results) outs.push_back(&l);
    MK_RETURN_IF_ERROR(GenericFold(inst, reducer, ctx, plan, f.inputs, f.inits, outs));
  }
  if (results.size() == 1 && inst.shape.is_array()) return std::move(results[0]);
  return Literal::Tuple(std::move(results));
}

// ---------------------------------------------------------------------------------------------
// reduce

Result<Literal> EvalReduce(const Instruction& inst, const Operands& ops, EvalContext& ctx) {
  MK_ASSIGN_OR_RETURN(Folded f, CheckFoldOperands(inst, ops));
  const std::vector<int64_t>& in_dims = f.inputs[0]->shape().dims();
  const int64_t rank = static_cast<int64_t>(in_dims.size());
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t d : inst.dimensions) {
    if (d < 0 || d >= rank || reduced[static_cast<size_t>(d)]) {
      return OpError(inst, "dimensions out of range or repeated");
    }
    reduced[static_cast<size_t>(d)] = true;
  }
  std::vector<int64_t> strides = hlo::RowMajorStrides(in_dims);
  std::vector<int64_t> kept_sizes, kept_strides, red_sizes, red_strides;
  for (int64_t d = 0; d < rank; ++d) {
    auto& sizes = reduced[static_cast<size_t>(d)] ? red_sizes : kept_sizes;
    auto& strs = reduced[static_cast<size_t>(d)] ? red_strides : kept_strides;
    sizes.push_back(in_dims[static_cast<size_t>(d)]);
    strs.push_back(strides[static_cast<size_t>(d)]);
  }
  FoldPlan plan = FoldPlan::ForReduce(window::OffsetTable(kept_sizes, kept_strides),
                                      window::OffsetTable(red_sizes, red_strides));
  return RunFold(inst, f, plan, kept_sizes, ctx);
}

// ---------------------------------------------------------------------------------------------
// reduce-window

Result<std::vector<window::Axis>> ResolveWindow(const Instruction& inst,
                                                const std::vector<int64_t>& in_dims) {
  if (!inst.window.has_value() && !in_dims.empty()) return OpError(inst, "missing window");
  const std::vector<hlo::WindowDimension> win =
      inst.window.has_value() ? *inst.window : std::vector<hlo::WindowDimension>{};
  if (win.size() != in_dims.size()) {
    return OpError(inst, "window must have one entry per input dimension");
  }
  std::vector<window::Axis> axes(win.size());
  for (size_t d = 0; d < win.size(); ++d) {
    std::string error;
    if (win[d].reversal) return OpError(inst, "window reversal is only valid for convolution");
    if (!window::ResolveAxis(win[d], in_dims[d], axes[d], error)) return OpError(inst, error);
  }
  return axes;
}

// Padding and base-dilation holes are skipped rather than folded in as init values, as XLA's
// backends do; the two agree whenever init is the reducer's identity (the only use JAX makes).
Result<Literal> EvalReduceWindow(const Instruction& inst, const Operands& ops, EvalContext& ctx) {
  MK_ASSIGN_OR_RETURN(Folded f, CheckFoldOperands(inst, ops));
  const std::vector<int64_t>& in_dims = f.inputs[0]->shape().dims();
  MK_ASSIGN_OR_RETURN(std::vector<window::Axis> axes, ResolveWindow(inst, in_dims));
  std::vector<int64_t> out_dims;
  for (const auto& a : axes) out_dims.push_back(a.out_size);
  FoldPlan plan = FoldPlan::ForWindow(std::move(axes), in_dims);
  return RunFold(inst, f, plan, out_dims, ctx);
}

// ---------------------------------------------------------------------------------------------
// select-and-scatter

// The direction of a select computation that is just `compare(p0, p1)` (or the mirrored
// `compare(p1, p0)`) on scalars of `dtype`. TOTALORDER comparisons are left to the generic path.
std::optional<hlo::ComparisonDirection> RecognizeSelect(const Computation* c, DType dtype) {
  using hlo::ComparisonDirection;
  if (c == nullptr || c->parameters().size() != 2 || c->root() == nullptr) return std::nullopt;
  const Instruction* root = c->root();
  if (root->opcode != Opcode::kCompare || root->operands.size() != 2 ||
      !root->direction.has_value() || root->comparison_type == "TOTALORDER") {
    return std::nullopt;
  }
  const Instruction* p0 = c->parameter(0);
  const Instruction* p1 = c->parameter(1);
  hlo::Shape scalar = hlo::Shape::Scalar(dtype);
  if (!p0->shape.SameAs(scalar) || !p1->shape.SameAs(scalar) ||
      !root->shape.SameAs(hlo::Shape::Scalar(DType::kPred))) {
    return std::nullopt;
  }
  ComparisonDirection d = *root->direction;
  if (root->operands[0] == p0 && root->operands[1] == p1) return d;
  if (root->operands[0] == p1 && root->operands[1] == p0) {
    switch (d) {
      case ComparisonDirection::kLt: return ComparisonDirection::kGt;
      case ComparisonDirection::kLe: return ComparisonDirection::kGe;
      case ComparisonDirection::kGt: return ComparisonDirection::kLt;
      case ComparisonDirection::kGe: return ComparisonDirection::kLe;
      default: return d;
    }
  }
  return std::nullopt;
}

template <typename C>
bool CompareValues(hlo::ComparisonDirection d, C a, C b) {
  switch (d) {
    case hlo::ComparisonDirection::kEq: return a == b;
    case hlo::ComparisonDirection::kNe: return a != b;
    case hlo::ComparisonDirection::kLt: return a < b;
    case hlo::ComparisonDirection::kLe: return a <= b;
    case hlo::ComparisonDirection::kGt: return a > b;
    case hlo::ComparisonDirection::kGe: return a >= b;
  }
  return false;
}

Status FastSelect(hlo::ComparisonDirection d, const FoldPlan& plan, const Literal& operand,
                  std::vector<int64_t>& chosen) {
  return hlo::DispatchDType(operand.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const T* x = operand.data<T>();
    return plan.ForEach([&](int64_t s, const std::vector<int64_t>& offsets) -> Status {
      if (offsets.empty()) return Status::Ok();
      int64_t current = offsets[0];
      for (size_t c = 1; c < offsets.size(); ++c) {
        if (!CompareValues(d, Widen(x[current]), Widen(x[offsets[c]]))) current = offsets[c];
      }
      chosen[static_cast<size_t>(s)] = current;
      return Status::Ok();
    });
  });
}

template <DType D, Reducer R>
void FastScatterTyped(const std::vector<int64_t>& chosen, const Literal& source, Literal& out) {
  using T = typename hlo::NativeOf<D>::type;
  const T* src = source.data<T>();
  T* y = out.data<T>();
  for (size_t s = 0; s < chosen.size(); ++s) {
    int64_t at = chosen[s];
    if (at >= 0) y[at] = Narrow<T>(Combine<R>(Widen(y[at]), Widen(src[s])));
  }
}

Status FastScatter(Reducer r, const std::vector<int64_t>& chosen, const Literal& source,
                   Literal& out) {
  return hlo::DispatchDType(out.dtype(), [&](auto tag) -> Status {
    constexpr DType D = decltype(tag)::kDType;
    switch (r) {
      case Reducer::kAdd: FastScatterTyped<D, Reducer::kAdd>(chosen, source, out); break;
      case Reducer::kMul: FastScatterTyped<D, Reducer::kMul>(chosen, source, out); break;
      case Reducer::kMax: FastScatterTyped<D, Reducer::kMax>(chosen, source, out); break;
      case Reducer::kMin: FastScatterTyped<D, Reducer::kMin>(chosen, source, out); break;
      case Reducer::kAnd: FastScatterTyped<D, Reducer::kAnd>(chosen, source, out); break;
      case Reducer::kOr: FastScatterTyped<D, Reducer::kOr>(chosen, source, out); break;
      case Reducer::kNone: return Internal("fast scatter without a reducer");
    }
    return Status::Ok();
  });
}

Result<Literal> EvalSelectAndScatter(const Instruction& inst, const Operands& ops,
                                     EvalContext& ctx) {
  if (ops.size() != 3) return OpError(inst, "expects operand, source and init value");
  if (inst.called.size() != 2 || inst.called[0] == nullptr || inst.called[1] == nullptr) {
    return OpError(inst, "needs select and scatter computations");
  }
  const Literal& operand = *ops[0];
  const Literal& source = *ops[1];
  const Literal& init = *ops[2];
  if (!operand.shape().is_array() || !source.shape().is_array() || !init.shape().is_array() ||
      init.shape().rank() != 0 || !inst.shape.is_array()) {
    return OpError(inst, "operand, source and result must be arrays and init a scalar");
  }
  const std::vector<int64_t>& in_dims = operand.shape().dims();
  if (inst.shape.dims() != in_dims || inst.shape.dtype() != init.dtype()) {
    return OpError(inst, "result must have the operand's dims and the init value's type");
  }
  MK_ASSIGN_OR_RETURN(std::vector<window::Axis> axes, ResolveWindow(inst, in_dims));
  std::vector<int64_t> out_dims;
  for (const auto& a : axes) out_dims.push_back(a.out_size);
  if (source.shape().dims() != out_dims) {
    return OpError(inst, "source dims must be the operand's windowed dims");
  }
  FoldPlan plan = FoldPlan::ForWindow(std::move(axes), in_dims);

  Literal result(inst.shape);
  const size_t bytes = static_cast<size_t>(hlo::DTypeByteSize(result.dtype()));
  for (int64_t i = 0; i < result.num_elements(); ++i) {
    std::memcpy(result.raw() + static_cast<size_t>(i) * bytes, init.raw(), bytes);
  }
  const Computation& select = *inst.called[0];
  const Computation& scatter = *inst.called[1];

  // Phase 1: the operand offset each source element scatters to (-1: window all padding).
  std::vector<int64_t> chosen(static_cast<size_t>(plan.out_count()), -1);
  if (auto direction = RecognizeSelect(&select, operand.dtype())) {
    MK_RETURN_IF_ERROR(FastSelect(*direction, plan, operand, chosen));
  } else {
    MK_RETURN_IF_ERROR(plan.ForEach([&](int64_t s, const std::vector<int64_t>& offsets) -> Status {
      if (offsets.empty()) return Status::Ok();
      int64_t current = offsets[0];
      for (size_t c = 1; c < offsets.size(); ++c) {
        MK_ASSIGN_OR_RETURN(Literal keep, ctx.Call(select, {ScalarAt(operand, current),
                                                            ScalarAt(operand, offsets[c])}));
        if (!keep.shape().is_array() || keep.dtype() != DType::kPred ||
            keep.num_elements() != 1) {
          return OpError(inst, "select must return a scalar pred");
        }
        if (keep.GetInt64(0) == 0) current = offsets[c];
      }
      chosen[static_cast<size_t>(s)] = current;
      return Status::Ok();
    }));
  }

  // Phase 2: combine each source value into the output at its chosen offset, in source order.
  Reducer r = source.dtype() == result.dtype() ? RecognizeReducer(&scatter, result.dtype())
                                               : Reducer::kNone;
  if (r != Reducer::kNone) {
    MK_RETURN_IF_ERROR(FastScatter(r, chosen, source, result));
    return result;
  }
  for (size_t si = 0; si < chosen.size(); ++si) {
    if (chosen[si] < 0) continue;
    MK_ASSIGN_OR_RETURN(Literal combined,
                        ctx.Call(scatter, {ScalarAt(result, chosen[si]),
                                           ScalarAt(source, static_cast<int64_t>(si))}));
    MK_RETURN_IF_ERROR(StoreScalar(inst, combined, result, chosen[si]));
  }
  return result;
}

}  // namespace

Result<Literal> EvalReduction(const Instruction& inst, const Operands& ops, EvalContext& ctx) {
  switch (inst.opcode) {
    case Opcode::kReduce: return EvalReduce(inst, ops, ctx);
    case Opcode::kReduceWindow: return EvalReduceWindow(inst, ops, ctx);
    case Opcode::kSelectAndScatter: return EvalSelectAndScatter(inst, ops, ctx);
    default: return OpError(inst, "not a reduction op");
  }
}

}  // namespace mk::interp
