// gather and scatter with XLA's full dimension numbers (including batching dims).
//
// Both ops walk the "batch" positions of the indices array (every dimension except
// index_vector_dim), read one start-index vector per position, and move a window of elements
// between the operand and the result (gather) or from the updates into the result (scatter).
// Gather clamps each start so the slice stays in bounds; scatter skips an update whose whole
// window would not fit (XLA's rule). Both are type-agnostic in their addressing; only scatter's
// combiner looks at values, with typed fast paths for the usual reducers.
#include <algorithm>
#include <cstring>
#include <limits>

#include "hlo/module.h"
#include "interp/elementwise_scalar.h"
#include "interp/ops.h"

namespace mk::interp {

using hlo::DType;
using hlo::Instruction;
using hlo::Literal;
using hlo::Opcode;

namespace {

std::string DimsToString(const std::vector<int64_t>& v) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "}";
}

// Checks that every entry of `dims` (an attribute named `what`) is in [0, bound) and unique.
Status CheckDimList(const Instruction& inst, const char* what, const std::vector<int64_t>& dims,
                    int64_t bound) {
  std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(bound, 0)), false);
  for (int64_t d : dims) {
    if (d < 0 || d >= bound) {
      return OpError(inst, std::string(what) + "=" + DimsToString(dims) +
                               " has a dimension out of range [0, " + std::to_string(bound) + ")");
    }
    if (seen[static_cast<size_t>(d)]) {
      return OpError(inst, std::string(what) + "=" + DimsToString(dims) + " repeats a dimension");
    }
    seen[static_cast<size_t>(d)] = true;
  }
  return Status::Ok();
}

bool Contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// The dims of [0, rank) that are in neither `a` nor `b`, in increasing order.
std::vector<int64_t> RemainingDims(int64_t rank, const std::vector<int64_t>& a,
                                   const std::vector<int64_t>& b) {
  std::vector<int64_t> out;
  for (int64_t d = 0; d < rank; ++d) {
    if (!Contains(a, d) && !Contains(b, d)) out.push_back(d);
  }
  return out;
}

// How the start-index vectors sit in the indices array.
struct IndexLayout {
  std::vector<int64_t> values;         // all index values as int64 (saturated), row-major
  std::vector<int64_t> batch_sizes;    // the indices' dims other than index_vector_dim, in order
  std::vector<int64_t> batch_strides;  // their strides in `values`
  std::vector<int64_t> batch_position;  // per indices dim: its position among batch dims, or -1
  int64_t vector_size = 1;
  int64_t vector_stride = 0;
};

Result<IndexLayout> MakeIndexLayout(const Instruction& inst, const Literal& indices,
                                    int64_t index_vector_dim) {
  if (indices.shape().is_tuple() || !hlo::IsInteger(indices.dtype())) {
    return OpError(inst, "indices must be an integer array, got " +
                             indices.shape().ToString(false));
  }
  const std::vector<int64_t>& dims = indices.shape().dims();
  const int64_t rank = indices.shape().rank();
  if (index_vector_dim < 0 || index_vector_dim > rank) {
    return OpError(inst, "index_vector_dim=" + std::to_string(index_vector_dim) +
                             " is out of range for indices of rank " + std::to_string(rank));
  }
  IndexLayout layout;
  const std::vector<int64_t> strides = hlo::RowMajorStrides(dims);
  for (int64_t d = 0; d < rank; ++d) {
    if (d == index_vector_dim) {
      layout.vector_size = dims[static_cast<size_t>(d)];
      layout.vector_stride = strides[static_cast<size_t>(d)];
      layout.batch_position.push_back(-1);
    } else {
      layout.batch_position.push_back(static_cast<int64_t>(layout.batch_sizes.size()));
      layout.batch_sizes.push_back(dims[static_cast<size_t>(d)]);
      layout.batch_strides.push_back(strides[static_cast<size_t>(d)]);
    }
  }
  // index_vector_dim == rank: each index is a size-1 vector.
  const int64_t n = indices.num_elements();
  layout.values.resize(static_cast<size_t>(n));
  const bool is_unsigned = hlo::IsUnsignedInt(indices.dtype());
  for (int64_t i = 0; i < n; ++i) {
    if (is_unsigned) {
      const uint64_t u = indices.GetUInt64(i);
      layout.values[static_cast<size_t>(i)] =
          u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
              ? std::numeric_limits<int64_t>::max()
              : static_cast<int64_t>(u);
    } else {
      layout.values[static_cast<size_t>(i)] = indices.GetInt64(i);
    }
  }
  return layout;
}

// Advances a row-major odometer `idx` over the first `rank` entries of `sizes`, keeping two
// linear offsets in step. Returns false after the last position.
inline bool Advance(std::vector<int64_t>& idx, size_t rank, const std::vector<int64_t>& sizes,
                    const std::vector<int64_t>& a_strides, const std::vector<int64_t>& b_strides,
                    int64_t& a, int64_t& b) {
  for (size_t k = rank; k-- > 0;) {
    if (++idx[k] < sizes[k]) {
      a += a_strides[k];
      b += b_strides[k];
      return true;
    }
    a -= (sizes[k] - 1) * a_strides[k];
    b -= (sizes[k] - 1) * b_strides[k];
    idx[k] = 0;
  }
  return false;
}

bool AnyZero(const std::vector<int64_t>& v) {
  return std::any_of(v.begin(), v.end(), [](int64_t x) { return x == 0; });
}

// A window walked in lock-step over two arrays: calls fn(a_offset, b_offset) for every element.
// The innermost window dimension is a plain loop (that is where the time goes).
struct Window {
  std::vector<int64_t> sizes, a_strides, b_strides;
  std::vector<int64_t> scratch;  // odometer over the outer dims, reused between calls

  template <typename Fn>
  void ForEach(int64_t a, int64_t b, Fn&& fn) {
    if (sizes.empty()) {
      fn(a, b);
      return;
    }
    if (AnyZero(sizes)) return;
    const size_t outer = sizes.size() - 1;
    const int64_t n = sizes[outer], as = a_strides[outer], bs = b_strides[outer];
    scratch.assign(outer, 0);
    do {
      for (int64_t i = 0; i < n; ++i) fn(a + i * as, b + i * bs);
    } while (Advance(scratch, outer, sizes, a_strides, b_strides, a, b));
  }
};

// ---------------------------------------------------------------------------------------------
// gather

template <typename E>
void CopyGatherWindow(Window& window, const uint8_t* src, uint8_t* dst, int64_t op_base,
                      int64_t out_base) {
  window.ForEach(op_base, out_base, [&](int64_t a, int64_t b) {
    std::memcpy(dst + static_cast<size_t>(b) * sizeof(E), src + static_cast<size_t>(a) * sizeof(E),
                sizeof(E));
  });
}

Result<Literal> EvalGather(const Instruction& inst, const Operands& ops) {
  if (ops.size() != 2) return OpError(inst, "expects operand and start_indices");
  if (!inst.gather_dims.has_value()) return OpError(inst, "has no gather dimension numbers");
  const hlo::GatherDimensions& g = *inst.gather_dims;
  const Literal& operand = *ops[0];
  if (operand.shape().is_tuple()) return OpError(inst, "operand must be an array");
  MK_ASSIGN_OR_RETURN(IndexLayout layout, MakeIndexLayout(inst, *ops[1], g.index_vector_dim));
  const int64_t rank = operand.shape().rank();
  const std::vector<int64_t>& op_dims = operand.shape().dims();
  const std::vector<int64_t>& ss = inst.gather_slice_sizes;
  if (static_cast<int64_t>(ss.size()) != rank) {
    return OpError(inst, "slice_sizes has " + std::to_string(ss.size()) +
                             " entries, operand rank is " + std::to_string(rank));
  }
  MK_RETURN_IF_ERROR(CheckDimList(inst, "collapsed_slice_dims", g.collapsed_slice_dims, rank));
  MK_RETURN_IF_ERROR(CheckDimList(inst, "operand_batching_dims", g.operand_batching_dims, rank));
  MK_RETURN_IF_ERROR(CheckDimList(inst, "start_index_map", g.start_index_map, rank));
  const int64_t idx_rank = ops[1]->shape().rank();
  MK_RETURN_IF_ERROR(CheckDimList(inst, "start_indices_batching_dims",
                                  g.start_indices_batching_dims, idx_rank));
  for (int64_t d : g.collapsed_slice_dims) {
    if (Contains(g.operand_batching_dims, d)) {
      return OpError(inst, "dimension " + std::to_string(d) +
                               " is both collapsed and a batching dimension");
    }
  }
  for (int64_t d : g.start_index_map) {
    if (Contains(g.operand_batching_dims, d)) {
      return OpError(inst, "start_index_map names batching dimension " + std::to_string(d));
    }
  }
  if (static_cast<int64_t>(g.start_index_map.size()) != layout.vector_size) {
    return OpError(inst, "start_index_map has " + std::to_string(g.start_index_map.size()) +
                             " entries but index vectors have " +
                             std::to_string(layout.vector_size));
  }
  if (g.start_indices_batching_dims.size() != g.operand_batching_dims.size()) {
    return OpError(inst, "operand_batching_dims and start_indices_batching_dims differ in size");
  }
  for (size_t i = 0; i < g.start_indices_batching_dims.size(); ++i) {
    const int64_t sd = g.start_indices_batching_dims[i];
    const int64_t od = g.operand_batching_dims[i];
    if (sd == g.index_vector_dim) {
      return OpError(inst, "start_indices_batching_dims names index_vector_dim");
    }
    if (ops[1]->shape().dim(sd) != op_dims[static_cast<size_t>(od)]) {
      return OpError(inst, "batching dimension sizes differ between operand and indices");
    }
  }
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t s = ss[static_cast<size_t>(d)];
    if (s < 0 || s > op_dims[static_cast<size_t>(d)]) {
      return OpError(inst, "slice_sizes" + DimsToString(ss) + " do not fit operand " +
                               operand.shape().ToString(false));
    }
    if ((Contains(g.collapsed_slice_dims, d) || Contains(g.operand_batching_dims, d)) && s != 1) {
      return OpError(inst, "collapsed and batching dimensions need slice size 1");
    }
  }
  const std::vector<int64_t> window_dims =
      RemainingDims(rank, g.collapsed_slice_dims, g.operand_batching_dims);
  const hlo::Shape& out_shape = inst.shape;
  const int64_t out_rank = out_shape.rank();
  if (!out_shape.is_array() || out_shape.dtype() != operand.dtype() ||
      window_dims.size() != g.offset_dims.size() ||
      out_rank != static_cast<int64_t>(layout.batch_sizes.size() + g.offset_dims.size())) {
    return OpError(inst, "result shape " + out_shape.ToString(false) +
                             " does not match the gather's operand, indices and offset_dims");
  }
  MK_RETURN_IF_ERROR(CheckDimList(inst, "offset_dims", g.offset_dims, out_rank));
  if (!std::is_sorted(g.offset_dims.begin(), g.offset_dims.end())) {
    return OpError(inst, "offset_dims must be sorted");
  }
  const std::vector<int64_t> out_strides = hlo::RowMajorStrides(out_shape.dims());
  const std::vector<int64_t> op_strides = hlo::RowMajorStrides(op_dims);
  Window window;
  for (size_t k = 0; k < window_dims.size(); ++k) {
    const int64_t size = ss[static_cast<size_t>(window_dims[k])];
    if (out_shape.dim(g.offset_dims[k]) != size) {
      return OpError(inst, "result dimension " + std::to_string(g.offset_dims[k]) +
                               " must equal the slice size " + std::to_string(size));
    }
    window.sizes.push_back(size);
    window.a_strides.push_back(op_strides[static_cast<size_t>(window_dims[k])]);
    window.b_strides.push_back(out_strides[static_cast<size_t>(g.offset_dims[k])]);
  }
  // Result dims that are not offset dims enumerate the indices' batch positions, in order.
  std::vector<int64_t> out_batch_strides;
  for (int64_t d = 0, j = 0; d < out_rank; ++d) {
    if (Contains(g.offset_dims, d)) continue;
    if (out_shape.dim(d) != layout.batch_sizes[static_cast<size_t>(j)]) {
      return OpError(inst, "result batch dimension " + std::to_string(d) +
                               " does not match the indices");
    }
    out_batch_strides.push_back(out_strides[static_cast<size_t>(d)]);
    ++j;
  }

  Literal out(out_shape);
  if (out.num_elements() == 0) return out;
  const size_t es = static_cast<size_t>(hlo::DTypeByteSize(operand.dtype()));
  std::vector<int64_t> batch(layout.batch_sizes.size(), 0);
  int64_t idx_base = 0, out_base = 0;
  do {
    int64_t op_base = 0;
    for (size_t k = 0; k < g.start_index_map.size(); ++k) {
      const size_t d = static_cast<size_t>(g.start_index_map[k]);
      const int64_t v = layout.values[static_cast<size_t>(
          idx_base + static_cast<int64_t>(k) * layout.vector_stride)];
      op_base += std::clamp<int64_t>(v, 0, op_dims[d] - ss[d]) * op_strides[d];
    }
    for (size_t i = 0; i < g.operand_batching_dims.size(); ++i) {
      const int64_t pos = layout.batch_position[static_cast<size_t>(g.start_indices_batching_dims[i])];
      op_base += batch[static_cast<size_t>(pos)] *
                 op_strides[static_cast<size_t>(g.operand_batching_dims[i])];
    }
    switch (es) {
      case 1: CopyGatherWindow<uint8_t>(window, operand.raw(), out.raw(), op_base, out_base); break;
      case 2: CopyGatherWindow<uint16_t>(window, operand.raw(), out.raw(), op_base, out_base); break;
      case 4: CopyGatherWindow<uint32_t>(window, operand.raw(), out.raw(), op_base, out_base); break;
      case 8: CopyGatherWindow<uint64_t>(window, operand.raw(), out.raw(), op_base, out_base); break;
      default: return OpError(inst, "unsupported element size");
    }
  } while (Advance(batch, batch.size(), layout.batch_sizes, layout.batch_strides,
                   out_batch_strides, idx_base, out_base));
  return out;
}

// ---------------------------------------------------------------------------------------------
// scatter

enum class Combiner { kGeneric, kAdd, kMultiply, kMax, kMin, kReplace, kKeep };

// Recognizes a single-operand combiner whose root is param0 op param1 (either order for the
// commutative ops), or a parameter itself.
Combiner MatchCombiner(const hlo::Computation& c, DType t) {
  const Instruction* root = c.root();
  if (root == nullptr || c.parameters().size() != 2 || t == DType::kPred) return Combiner::kGeneric;
  for (const Instruction* p : c.parameters()) {
    if (p->shape.is_tuple() || p->shape.dtype() != t || p->shape.rank() != 0) {
      return Combiner::kGeneric;
    }
  }
  if (root->shape.is_tuple() || root->shape.dtype() != t) return Combiner::kGeneric;
  if (root->opcode == Opcode::kParameter) {
    return root->parameter_number == 1 ? Combiner::kReplace : Combiner::kKeep;
  }
  if (root->operand_count() != 2 || root->operand(0)->opcode != Opcode::kParameter ||
      root->operand(1)->opcode != Opcode::kParameter ||
      root->operand(0)->parameter_number == root->operand(1)->parameter_number) {
    return Combiner::kGeneric;
  }
  switch (root->opcode) {
    case Opcode::kAdd: return Combiner::kAdd;
    case Opcode::kMultiply: return Combiner::kMultiply;
    case Opcode::kMaximum: return Combiner::kMax;
    case Opcode::kMinimum: return Combiner::kMin;
    default: return Combiner::kGeneric;
  }
}

// One combine step in the element type's arithmetic (bf16/f16 in f32, then rounded; integers
// wrap instead of overflowing).
template <typename T, Combiner kC>
inline T Combine(T old_value, T update) {
  if constexpr (kC == Combiner::kReplace) {
    return update;
  } else if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    const uint64_t a = static_cast<U>(old_value), b = static_cast<U>(update);
    if constexpr (kC == Combiner::kAdd) return static_cast<T>(static_cast<U>(a + b));
    if constexpr (kC == Combiner::kMultiply) return static_cast<T>(static_cast<U>(a * b));
    if constexpr (kC == Combiner::kMax) return std::max(old_value, update);
    if constexpr (kC == Combiner::kMin) return std::min(old_value, update);
  } else {
    using C = scalar::ComputeOf<T>;
    const C a = static_cast<C>(old_value), b = static_cast<C>(update);
    C r;
    if constexpr (kC == Combiner::kAdd) r = a + b;
    if constexpr (kC == Combiner::kMultiply) r = a * b;
    if constexpr (kC == Combiner::kMax) r = scalar::FloatMax(a, b);
    if constexpr (kC == Combiner::kMin) r = scalar::FloatMin(a, b);
    return T(r);
  }
}

// Everything needed to walk a scatter: per valid update window, calls
// fn(operand_offset, update_offset) for each of its elements.
struct ScatterWalk {
  const IndexLayout* layout = nullptr;
  const hlo::ScatterDimensions* dims = nullptr;
  std::vector<int64_t> op_dims, op_strides;
  std::vector<int64_t> extent;             // per operand dim: window extent (1 when inserted)
  std::vector<int64_t> upd_batch_strides;  // strides in the updates of the scatter dims
  Window window;                           // a = operand, b = updates

  template <typename Fn>
  void ForEach(Fn&& fn) {
    if (AnyZero(layout->batch_sizes)) return;
    std::vector<int64_t> batch(layout->batch_sizes.size(), 0);
    std::vector<int64_t> start(op_dims.size(), 0);
    int64_t idx_base = 0, upd_base = 0;
    do {
      std::fill(start.begin(), start.end(), 0);
      const auto& map = dims->scatter_dims_to_operand_dims;
      for (size_t k = 0; k < map.size(); ++k) {
        start[static_cast<size_t>(map[k])] = layout->values[static_cast<size_t>(
            idx_base + static_cast<int64_t>(k) * layout->vector_stride)];
      }
      for (size_t i = 0; i < dims->input_batching_dims.size(); ++i) {
        const int64_t pos =
            layout->batch_position[static_cast<size_t>(dims->scatter_indices_batching_dims[i])];
        start[static_cast<size_t>(dims->input_batching_dims[i])] = batch[static_cast<size_t>(pos)];
      }
      // XLA skips an update whose full window does not fit in the operand. (The offset is
      // computed only for fitting windows: a huge index would overflow it.)
      bool in_bounds = true;
      for (size_t d = 0; d < op_dims.size(); ++d) {
        if (start[d] < 0 || start[d] > op_dims[d] - extent[d]) in_bounds = false;
      }
      if (in_bounds) {
        int64_t op_base = 0;
        for (size_t d = 0; d < op_dims.size(); ++d) op_base += start[d] * op_strides[d];
        window.ForEach(op_base, upd_base, fn);
      }
    } while (Advance(batch, batch.size(), layout->batch_sizes, layout->batch_strides,
                     upd_batch_strides, idx_base, upd_base));
  }
};

template <typename T, Combiner kC>
void ScatterTyped(ScatterWalk& walk, Literal& out, const Literal& updates) {
  T* o = out.data<T>();
  const T* u = updates.data<T>();
  walk.ForEach([&](int64_t a, int64_t b) { o[a] = Combine<T, kC>(o[a], u[b]); });
}

Status ScatterFast(const Instruction& inst, Combiner combiner, ScatterWalk& walk, Literal& out,
                   const Literal& updates) {
  if (combiner == Combiner::kKeep) return Status::Ok();
  return hlo::DispatchDType(out.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    switch (combiner) {
      case Combiner::kAdd: ScatterTyped<T, Combiner::kAdd>(walk, out, updates); break;
      case Combiner::kMultiply: ScatterTyped<T, Combiner::kMultiply>(walk, out, updates); break;
      case Combiner::kMax: ScatterTyped<T, Combiner::kMax>(walk, out, updates); break;
      case Combiner::kMin: ScatterTyped<T, Combiner::kMin>(walk, out, updates); break;
      case Combiner::kReplace: ScatterTyped<T, Combiner::kReplace>(walk, out, updates); break;
      default: return OpError(inst, "internal: no fast path for this combiner");
    }
    return Status::Ok();
  });
}

// Calls the combiner computation once per updated element, with (old values..., updates...).
Status ScatterGeneric(const Instruction& inst, const hlo::Computation& combiner,
                      ScatterWalk& walk, std::vector<Literal>& outs, const Operands& updates,
                      EvalContext& ctx) {
  const size_t n = outs.size();
  std::vector<Literal> args;
  std::vector<size_t> es;
  for (size_t k = 0; k < n; ++k) es.push_back(static_cast<size_t>(hlo::DTypeByteSize(outs[k].dtype())));
  for (size_t k = 0; k < n; ++k) args.emplace_back(hlo::Shape::Scalar(outs[k].dtype()));
  for (size_t k = 0; k < n; ++k) args.emplace_back(hlo::Shape::Scalar(updates[k]->dtype()));
  Status error;
  walk.ForEach([&](int64_t a, int64_t b) {
    if (!error.ok()) return;
    for (size_t k = 0; k < n; ++k) {
      std::memcpy(args[k].raw(), outs[k].raw() + static_cast<size_t>(a) * es[k], es[k]);
      std::memcpy(args[n + k].raw(), updates[k]->raw() + static_cast<size_t>(b) * es[k], es[k]);
    }
    Result<Literal> r = ctx.Call(combiner, args);
    if (!r.ok()) {
      error = r.status();
      return;
    }
    for (size_t k = 0; k < n; ++k) {
      const Literal* v = nullptr;
      if (!r->shape().is_tuple()) {
        if (n == 1) v = &*r;
      } else if (r->elements().size() == n) {
        v = &r->elements()[k];
      }
      if (v == nullptr || v->shape().is_tuple() || v->dtype() != outs[k].dtype() ||
          v->num_elements() != 1) {
        error = OpError(inst, "combiner returned " + r->shape().ToString(false) +
                                  ", expected one scalar per operand");
        return;
      }
      std::memcpy(outs[k].raw() + static_cast<size_t>(a) * es[k], v->raw(), es[k]);
    }
  });
  return error;
}

Result<Literal> EvalScatter(const Instruction& inst, const Operands& ops, EvalContext& ctx) {
  if (ops.size() < 3 || ops.size() % 2 == 0) {
    return OpError(inst, "expects N operands, the indices and N updates");
  }
  if (!inst.scatter_dims.has_value()) return OpError(inst, "has no scatter dimension numbers");
  const hlo::ScatterDimensions& s = *inst.scatter_dims;
  const size_t n = (ops.size() - 1) / 2;
  const Operands operands(ops.begin(), ops.begin() + static_cast<std::ptrdiff_t>(n));
  const Literal& indices = *ops[n];
  const Operands updates(ops.begin() + static_cast<std::ptrdiff_t>(n) + 1, ops.end());
  const hlo::Shape& op_shape = operands[0]->shape();
  const hlo::Shape& upd_shape = updates[0]->shape();
  for (size_t k = 0; k < n; ++k) {
    if (operands[k]->shape().is_tuple() || updates[k]->shape().is_tuple() ||
        operands[k]->shape().dims() != op_shape.dims() ||
        updates[k]->shape().dims() != upd_shape.dims() ||
        operands[k]->dtype() != updates[k]->dtype()) {
      return OpError(inst, "operands (and updates) must be arrays of equal dimensions, each "
                           "update with its operand's element type");
    }
    MK_RETURN_IF_ERROR(hlo::DispatchDType(operands[k]->dtype(), [](auto) { return Status::Ok(); }));
  }
  MK_ASSIGN_OR_RETURN(IndexLayout layout, MakeIndexLayout(inst, indices, s.index_vector_dim));
  const int64_t rank = op_shape.rank();
  const int64_t upd_rank = upd_shape.rank();
  MK_RETURN_IF_ERROR(CheckDimList(inst, "update_window_dims", s.update_window_dims, upd_rank));
  MK_RETURN_IF_ERROR(CheckDimList(inst, "inserted_window_dims", s.inserted_window_dims, rank));
  MK_RETURN_IF_ERROR(CheckDimList(inst, "input_batching_dims", s.input_batching_dims, rank));
  MK_RETURN_IF_ERROR(CheckDimList(inst, "scatter_dims_to_operand_dims",
                                  s.scatter_dims_to_operand_dims, rank));
  MK_RETURN_IF_ERROR(CheckDimList(inst, "scatter_indices_batching_dims",
                                  s.scatter_indices_batching_dims, indices.shape().rank()));
  for (int64_t d : s.inserted_window_dims) {
    if (Contains(s.input_batching_dims, d)) {
      return OpError(inst, "dimension " + std::to_string(d) +
                               " is both an inserted window and a batching dimension");
    }
  }
  for (int64_t d : s.scatter_dims_to_operand_dims) {
    if (Contains(s.input_batching_dims, d)) {
      return OpError(inst, "scatter_dims_to_operand_dims names batching dimension " +
                               std::to_string(d));
    }
  }
  if (static_cast<int64_t>(s.scatter_dims_to_operand_dims.size()) != layout.vector_size) {
    return OpError(inst, "scatter_dims_to_operand_dims has " +
                             std::to_string(s.scatter_dims_to_operand_dims.size()) +
                             " entries but index vectors have " +
                             std::to_string(layout.vector_size));
  }
  if (s.input_batching_dims.size() != s.scatter_indices_batching_dims.size()) {
    return OpError(inst, "input_batching_dims and scatter_indices_batching_dims differ in size");
  }
  for (size_t i = 0; i < s.input_batching_dims.size(); ++i) {
    const int64_t sd = s.scatter_indices_batching_dims[i];
    if (sd == s.index_vector_dim) {
      return OpError(inst, "scatter_indices_batching_dims names index_vector_dim");
    }
    if (indices.shape().dim(sd) != op_shape.dim(s.input_batching_dims[i])) {
      return OpError(inst, "batching dimension sizes differ between operand and indices");
    }
  }
  const std::vector<int64_t> window_dims =
      RemainingDims(rank, s.inserted_window_dims, s.input_batching_dims);
  if (window_dims.size() != s.update_window_dims.size()) {
    return OpError(inst, "update_window_dims" + DimsToString(s.update_window_dims) +
                             " do not match the operand's window dimensions");
  }
  if (!std::is_sorted(s.update_window_dims.begin(), s.update_window_dims.end())) {
    return OpError(inst, "update_window_dims must be sorted");
  }

  ScatterWalk walk;
  walk.layout = &layout;
  walk.dims = &s;
  walk.op_dims = op_shape.dims();
  walk.op_strides = hlo::RowMajorStrides(walk.op_dims);
  walk.extent.assign(static_cast<size_t>(rank), 1);
  const std::vector<int64_t> upd_strides = hlo::RowMajorStrides(upd_shape.dims());
  for (size_t k = 0; k < window_dims.size(); ++k) {
    const int64_t size = upd_shape.dim(s.update_window_dims[k]);
    if (size > op_shape.dim(window_dims[k])) {
      return OpError(inst, "update window dimension " + std::to_string(s.update_window_dims[k]) +
                               " is larger than the operand");
    }
    walk.extent[static_cast<size_t>(window_dims[k])] = size;
    walk.window.sizes.push_back(size);
    walk.window.a_strides.push_back(walk.op_strides[static_cast<size_t>(window_dims[k])]);
    walk.window.b_strides.push_back(upd_strides[static_cast<size_t>(s.update_window_dims[k])]);
  }
  // Update dims that are not window dims enumerate the indices' batch positions, in order.
  for (int64_t d = 0, j = 0; d < upd_rank; ++d) {
    if (Contains(s.update_window_dims, d)) continue;
    if (j >= static_cast<int64_t>(layout.batch_sizes.size()) ||
        upd_shape.dim(d) != layout.batch_sizes[static_cast<size_t>(j)]) {
      return OpError(inst, "update scatter dimension " + std::to_string(d) +
                               " does not match the indices");
    }
    walk.upd_batch_strides.push_back(upd_strides[static_cast<size_t>(d)]);
    ++j;
  }
  if (walk.upd_batch_strides.size() != layout.batch_sizes.size()) {
    return OpError(inst, "updates have fewer scatter dimensions than the indices have batch dims");
  }

  const bool tuple_result = n > 1;
  if (tuple_result != inst.shape.is_tuple() ||
      (tuple_result && inst.shape.tuple_shapes().size() != n)) {
    return OpError(inst, "result must be a tuple with one element per operand when N > 1");
  }
  const hlo::Computation* combiner = inst.to_apply();
  if (combiner == nullptr || combiner->parameters().size() != 2 * n) {
    return OpError(inst, "to_apply must take " + std::to_string(2 * n) + " scalar parameters");
  }
  std::vector<Literal> outs;
  for (const Literal* op : operands) outs.push_back(*op);
  const Combiner kind = n == 1 ? MatchCombiner(*combiner, outs[0].dtype()) : Combiner::kGeneric;
  if (kind != Combiner::kGeneric) {
    MK_RETURN_IF_ERROR(ScatterFast(inst, kind, walk, outs[0], *updates[0]));
  } else {
    MK_RETURN_IF_ERROR(ScatterGeneric(inst, *combiner, walk, outs, updates, ctx));
  }
  if (!tuple_result) return std::move(outs[0]);
  return Literal::Tuple(std::move(outs));
}

}  // namespace

Result<Literal> EvalIndexing(const Instruction& inst, const Operands& ops, EvalContext& ctx) {
  if (inst.opcode == Opcode::kGather) return EvalGather(inst, ops);
  if (inst.opcode == Opcode::kScatter) return EvalScatter(inst, ops, ctx);
  return OpError(inst, "not an indexing op");
}

}  // namespace mk::interp
