// Data movement: iota, reshape, bitcast, broadcast, transpose, slice, dynamic-slice,
// dynamic-update-slice, concatenate, pad, reverse.
//
// Apart from iota these only move elements, so they are dtype-agnostic: each op is turned into
// one or more StridedCopy plans (an odometer over a box of indices with a stride per dimension
// on each side) that copy DTypeByteSize bytes per element. Every plan is bounds-checked against
// both buffers before it runs, so inconsistent shapes give an error, never a stray access.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "interp/elementwise_scalar.h"
#include "interp/ops.h"

namespace mk::interp {
namespace {

using hlo::DType;
using hlo::Instruction;
using hlo::Literal;
using hlo::Opcode;

std::string DimsStr(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

// Copies the box `counts` from src to dst; strides and offsets are in elements and may be
// negative (reverse) or zero (broadcast).
struct StridedCopy {
  std::vector<int64_t> counts;
  std::vector<int64_t> dst_strides, src_strides;
  int64_t dst_offset = 0, src_offset = 0;
};

bool IsEmpty(const StridedCopy& c) {
  return std::any_of(c.counts.begin(), c.counts.end(), [](int64_t n) { return n <= 0; });
}

// Whether every offset the copy reaches on one side lies in [0, size).
bool InBounds(const std::vector<int64_t>& counts, const std::vector<int64_t>& strides,
              int64_t offset, int64_t size) {
  int64_t lo = offset, hi = offset;
  for (size_t d = 0; d < counts.size(); ++d) {
    int64_t span;
    if (__builtin_mul_overflow(counts[d] - 1, strides[d], &span)) return false;
    if (__builtin_add_overflow(span < 0 ? lo : hi, span, span < 0 ? &lo : &hi)) return false;
  }
  return lo >= 0 && hi < size;
}

// Drops unit dimensions and merges neighbours that are contiguous on both sides, so that e.g.
// a concatenate along dim 0 becomes one memcpy per operand.
void Simplify(StridedCopy& c) {
  StridedCopy s;
  s.dst_offset = c.dst_offset;
  s.src_offset = c.src_offset;
  for (size_t d = 0; d < c.counts.size(); ++d) {
    if (c.counts[d] == 1) continue;
    if (!s.counts.empty() && s.dst_strides.back() == c.counts[d] * c.dst_strides[d] &&
        s.src_strides.back() == c.counts[d] * c.src_strides[d]) {
      s.counts.back() *= c.counts[d];
      s.dst_strides.back() = c.dst_strides[d];
      s.src_strides.back() = c.src_strides[d];
      continue;
    }
    s.counts.push_back(c.counts[d]);
    s.dst_strides.push_back(c.dst_strides[d]);
    s.src_strides.push_back(c.src_strides[d]);
  }
  c = std::move(s);
}

template <size_t kBytes>
void CopyRow(uint8_t* dst, int64_t dst_step, const uint8_t* src, int64_t src_step, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    std::memcpy(dst + j * dst_step, src + j * src_step, kBytes);
  }
}

void CopyRowAnySize(uint8_t* dst, int64_t dst_step, const uint8_t* src, int64_t src_step,
                    int64_t n, int64_t bytes) {
  for (int64_t j = 0; j < n; ++j) {
    std::memcpy(dst + j * dst_step, src + j * src_step, static_cast<size_t>(bytes));
  }
}

Status RunCopy(const Instruction& inst, StridedCopy c, Literal& dst, const Literal& src) {
  if (IsEmpty(c)) return Status::Ok();
  if (dst.dtype() != src.dtype()) return Internal("strided copy between different types");
  const size_t rank = c.counts.size();
  if (c.dst_strides.size() != rank || c.src_strides.size() != rank ||
      !InBounds(c.counts, c.dst_strides, c.dst_offset, dst.num_elements()) ||
      !InBounds(c.counts, c.src_strides, c.src_offset, src.num_elements())) {
    return OpError(inst, "operand and result shapes are inconsistent (index out of bounds)");
  }
  Simplify(c);
  const int64_t es = hlo::DTypeByteSize(dst.dtype());
  uint8_t* dst_base = dst.raw();
  const uint8_t* src_base = src.raw();
  if (c.counts.empty()) {  // a single element
    std::memcpy(dst_base + c.dst_offset * es, src_base + c.src_offset * es, static_cast<size_t>(es));
    return Status::Ok();
  }
  const size_t inner = c.counts.size() - 1;
  const int64_t n = c.counts[inner];
  const int64_t dst_step = c.dst_strides[inner] * es;
  const int64_t src_step = c.src_strides[inner] * es;
  std::vector<int64_t> index(inner, 0);
  int64_t dst_at = c.dst_offset, src_at = c.src_offset;
  while (true) {
    uint8_t* d = dst_base + dst_at * es;
    const uint8_t* s = src_base + src_at * es;
    if (dst_step == es && src_step == es) {
      std::memcpy(d, s, static_cast<size_t>(n * es));
    } else {
      switch (es) {
        case 1: CopyRow<1>(d, dst_step, s, src_step, n); break;
        case 2: CopyRow<2>(d, dst_step, s, src_step, n); break;
        case 4: CopyRow<4>(d, dst_step, s, src_step, n); break;
        case 8: CopyRow<8>(d, dst_step, s, src_step, n); break;
        default: CopyRowAnySize(d, dst_step, s, src_step, n, es);
      }
    }
    // Odometer over the outer dimensions; done when the outermost one wraps (or there is none).
    size_t k = inner;
    while (true) {
      if (k == 0) return Status::Ok();
      --k;
      dst_at += c.dst_strides[k];
      src_at += c.src_strides[k];
      if (++index[k] < c.counts[k]) break;
      dst_at -= c.dst_strides[k] * c.counts[k];
      src_at -= c.src_strides[k] * c.counts[k];
      index[k] = 0;
    }
  }
}

Status CheckOperands(const Instruction& inst, const Operands& ops, size_t min_count) {
  if (!inst.shape.is_array()) return OpError(inst, "result must be an array");
  if (ops.size() < min_count) {
    return OpError(inst, "expects " + std::to_string(min_count) + " operand(s), got " +
                             std::to_string(ops.size()));
  }
  for (const Literal* op : ops) {
    if (op == nullptr || !op->shape().is_array()) return OpError(inst, "operands must be arrays");
  }
  return Status::Ok();
}

Status CheckSameDType(const Instruction& inst, const Literal& op) {
  if (op.dtype() != inst.shape.dtype()) {
    return OpError(inst, "operand element type " + std::string(hlo::DTypeName(op.dtype())) +
                             " differs from the result's " +
                             std::string(hlo::DTypeName(inst.shape.dtype())));
  }
  return Status::Ok();
}

// A copy of the whole `src` box (row-major) into `dst` at element offset `dst_offset`.
StridedCopy DenseSource(const std::vector<int64_t>& src_dims, const std::vector<int64_t>& dst_dims,
                        int64_t dst_offset) {
  StridedCopy c;
  c.counts = src_dims;
  c.src_strides = hlo::RowMajorStrides(src_dims);
  c.dst_strides = hlo::RowMajorStrides(dst_dims);
  c.dst_offset = dst_offset;
  return c;
}

// ---------------------------------------------------------------------------------------------

Result<Literal> EvalIota(const Instruction& inst) {
  if (!inst.shape.is_array()) return OpError(inst, "result must be an array");
  const auto& dims = inst.shape.dims();
  const int64_t d = inst.iota_dimension;
  if (d < 0 || d >= static_cast<int64_t>(dims.size())) {
    return OpError(inst, "iota_dimension " + std::to_string(d) + " out of range for rank " +
                             std::to_string(dims.size()));
  }
  Literal out(inst.shape);
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < d; ++i) outer *= dims[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(d) + 1; i < dims.size(); ++i) inner *= dims[i];
  const int64_t len = dims[static_cast<size_t>(d)];
  MK_RETURN_IF_ERROR(hlo::DispatchDType(out.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    T* r = out.data<T>();
    for (int64_t j = 0; j < len; ++j) {
      const T v = scalar::Convert<DType::kS64, decltype(tag)::kDType>(j);
      for (int64_t o = 0; o < outer; ++o) {
        T* row = r + (o * len + j) * inner;
        std::fill(row, row + inner, v);
      }
    }
    return Status::Ok();
  }));
  return out;
}

// reshape, and bitcast (same elements, or the same bytes of another type).
Result<Literal> EvalReshape(const Instruction& inst, const Operands& ops) {
  MK_RETURN_IF_ERROR(CheckOperands(inst, ops, 1));
  const Literal& in = *ops[0];
  if (inst.opcode == Opcode::kReshape) MK_RETURN_IF_ERROR(CheckSameDType(inst, in));
  Literal out(inst.shape);
  if (out.raw_size() != in.raw_size()) {
    return OpError(inst, "cannot reshape " + in.shape().ToString(false) + " to " +
                             inst.shape.ToString(false) + " (sizes differ)");
  }
  if (out.raw_size() > 0) std::memcpy(out.raw(), in.raw(), out.raw_size());
  return out;
}

Result<Literal> EvalBroadcast(const Instruction& inst, const Operands& ops) {
  MK_RETURN_IF_ERROR(CheckOperands(inst, ops, 1));
  const Literal& in = *ops[0];
  MK_RETURN_IF_ERROR(CheckSameDType(inst, in));
  const auto& map = inst.dimensions;
  if (static_cast<int64_t>(map.size()) != in.shape().rank()) {
    return OpError(inst, "dimensions= must list one result dimension per operand dimension");
  }
  Literal out(inst.shape);
  StridedCopy c;
  c.counts = inst.shape.dims();
  c.dst_strides = hlo::RowMajorStrides(c.counts);
  c.src_strides.assign(c.counts.size(), 0);
  const auto in_strides = hlo::RowMajorStrides(in.shape().dims());
  std::vector<bool> used(c.counts.size(), false);
  for (size_t i = 0; i < map.size(); ++i) {
    const int64_t to = map[i];
    if (to < 0 || to >= inst.shape.rank() || used[static_cast<size_t>(to)] ||
        inst.shape.dim(to) != in.shape().dim(static_cast<int64_t>(i))) {
      return OpError(inst, "dimensions=" + DimsStr(map) + " do not map " +
                               in.shape().ToString(false) + " into " + inst.shape.ToString(false));
    }
    used[static_cast<size_t>(to)] = true;
    c.src_strides[static_cast<size_t>(to)] = in_strides[i];
  }
  MK_RETURN_IF_ERROR(RunCopy(inst, std::move(c), out, in));
  return out;
}

Result<Literal> EvalTranspose(const Instruction& inst, const Operands& ops) {
  MK_RETURN_IF_ERROR(CheckOperands(inst, ops, 1));
  const Literal& in = *ops[0];
  MK_RETURN_IF_ERROR(CheckSameDType(inst, in));
  const auto& perm = inst.dimensions;
  const int64_t rank = in.shape().rank();
  if (static_cast<int64_t>(perm.size()) != rank || inst.shape.rank() != rank) {
    return OpError(inst, "dimensions= must be a permutation of the operand's dimensions");
  }
  Literal out(inst.shape);
  StridedCopy c;
  c.counts = inst.shape.dims();
  c.dst_strides = hlo::RowMajorStrides(c.counts);
  const auto in_strides = hlo::RowMajorStrides(in.shape().dims());
  std::vector<bool> used(perm.size(), false);
  for (size_t i = 0; i < perm.size(); ++i) {
    const int64_t from = perm[i];
    if (from < 0 || from >= rank || used[static_cast<size_t>(from)] ||
        in.shape().dim(from) != inst.shape.dim(static_cast<int64_t>(i))) {
      return OpError(inst, "dimensions=" + DimsStr(perm) + " is not a permutation taking " +
                               in.shape().ToString(false) + " to " + inst.shape.ToString(false));
    }
    used[static_cast<size_t>(from)] = true;
    c.src_strides.push_back(in_strides[static_cast<size_t>(from)]);
  }
  MK_RETURN_IF_ERROR(RunCopy(inst, std::move(c), out, in));
  return out;
}

Result<Literal> EvalSlice(const Instruction& inst, const Operands& ops) {
  MK_RETURN_IF_ERROR(CheckOperands(inst, ops, 1));
  const Literal& in = *ops[0];
  MK_RETURN_IF_ERROR(CheckSameDType(inst, in));
  const int64_t rank = in.shape().rank();
  if (static_cast<int64_t>(inst.slice.size()) != rank || inst.shape.rank() != rank) {
    return OpError(inst, "slice= needs one [start:limit:stride] per operand dimension");
  }
  Literal out(inst.shape);
  StridedCopy c;
  c.counts = inst.shape.dims();
  c.dst_strides = hlo::RowMajorStrides(c.counts);
  const auto in_strides = hlo::RowMajorStrides(in.shape().dims());
  for (int64_t d = 0; d < rank; ++d) {
    const auto& s = inst.slice[static_cast<size_t>(d)];
    const int64_t dim = in.shape().dim(d);
    const bool valid = s.start >= 0 && s.start <= s.limit && s.limit <= dim && s.stride >= 1;
    const int64_t count = !valid || s.limit == s.start ? 0 : (s.limit - s.start - 1) / s.stride + 1;
    if (!valid || inst.shape.dim(d) != count) {
      return OpError(inst, "slice dimension " + std::to_string(d) + " [" +
                               std::to_string(s.start) + ":" + std::to_string(s.limit) + ":" +
                               std::to_string(s.stride) + "] does not fit " +
                               in.shape().ToString(false) + " -> " + inst.shape.ToString(false));
    }
    c.src_offset += s.start * in_strides[static_cast<size_t>(d)];
    // With fewer than two elements the stride is never applied (and may be huge).
    const int64_t stride = count > 1 ? s.stride : 1;
    c.src_strides.push_back(stride * in_strides[static_cast<size_t>(d)]);
  }
  MK_RETURN_IF_ERROR(RunCopy(inst, std::move(c), out, in));
  return out;
}

Result<Literal> EvalReverse(const Instruction& inst, const Operands& ops) {
  MK_RETURN_IF_ERROR(CheckOperands(inst, ops, 1));
  const Literal& in = *ops[0];
  MK_RETURN_IF_ERROR(CheckSameDType(inst, in));
  if (in.shape().dims() != inst.shape.dims()) return OpError(inst, "result must match operand");
  Literal out(inst.shape);
  StridedCopy c;
  c.counts = inst.shape.dims();
  c.dst_strides = hlo::RowMajorStrides(c.counts);
  c.src_strides = c.dst_strides;
  std::vector<bool> reversed(c.counts.size(), false);
  for (int64_t d : inst.dimensions) {
    if (d < 0 || d >= inst.shape.rank() || reversed[static_cast<size_t>(d)]) {
      return OpError(inst, "bad dimensions=" + DimsStr(inst.dimensions));
    }
    reversed[static_cast<size_t>(d)] = true;
    auto& stride = c.src_strides[static_cast<size_t>(d)];
    c.src_offset += std::max<int64_t>(inst.shape.dim(d) - 1, 0) * stride;
    stride = -stride;
  }
  MK_RETURN_IF_ERROR(RunCopy(inst, std::move(c), out, in));
  return out;
}

// A scalar start index of any integer type; unsigned values above INT64_MAX saturate (they are
// clamped into range afterwards anyway).
Result<int64_t> ReadStartIndex(const Instruction& inst, const Literal& lit, int64_t i) {
  if (!hlo::IsInteger(lit.dtype())) return OpError(inst, "start indices must be integers");
  if (i < 0 || i >= lit.num_elements()) return OpError(inst, "missing start index");
  if (hlo::IsUnsignedInt(lit.dtype())) {
    uint64_t u = lit.GetUInt64(i);
    return u > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(u);
  }
  return lit.GetInt64(i);
}

// Start indices for dynamic-(update-)slice from ops[first...]: one scalar per dimension (or,
// in old HLO, a single rank-1 array). Each is clamped to [0, dim - size] as XLA does.
Result<std::vector<int64_t>> ClampedStarts(const Instruction& inst, const Operands& ops,
                                           size_t first, const std::vector<int64_t>& dims,
                                           const std::vector<int64_t>& sizes) {
  const size_t rank = dims.size();
  std::vector<int64_t> starts(rank, 0);
  const bool one_vector = ops.size() == first + 1 && ops[first]->shape().rank() == 1 && rank != 1;
  if (!one_vector && ops.size() != first + rank) {
    return OpError(inst, "expects " + std::to_string(rank) + " start indices, got " +
                             std::to_string(ops.size() - first));
  }
  for (size_t d = 0; d < rank; ++d) {
    if (sizes[d] < 0 || sizes[d] > dims[d]) {
      return OpError(inst, "slice size " + std::to_string(sizes[d]) + " exceeds dimension " +
                               std::to_string(d) + " of size " + std::to_string(dims[d]));
    }
    int64_t start;
    if (one_vector) {
      MK_ASSIGN_OR_RETURN(start, ReadStartIndex(inst, *ops[first], static_cast<int64_t>(d)));
    } else {
      if (ops[first + d]->num_elements() != 1) {
        return OpError(inst, "start indices must be scalars");
      }
      MK_ASSIGN_OR_RETURN(start, ReadStartIndex(inst, *ops[first + d], 0));
    }
    starts[d] = std::clamp<int64_t>(start, 0, dims[d] - sizes[d]);
  }
  return starts;
}

Result<Literal> EvalDynamicSlice(const Instruction& inst, const Operands& ops) {
  MK_RETURN_IF_ERROR(CheckOperands(inst, ops, 1));
  const Literal& in = *ops[0];
  MK_RETURN_IF_ERROR(CheckSameDType(inst, in));
  const auto& sizes = inst.shape.dims();
  if (inst.shape.rank() != in.shape().rank() ||
      (!inst.dynamic_slice_sizes.empty() && inst.dynamic_slice_sizes != sizes)) {
    return OpError(inst, "dynamic_slice_sizes must match the result dimensions");
  }
  MK_ASSIGN_OR_RETURN(auto starts, ClampedStarts(inst, ops, 1, in.shape().dims(), sizes));
  Literal out(inst.shape);
  StridedCopy c;
  c.counts = sizes;
  c.dst_strides = hlo::RowMajorStrides(sizes);
  c.src_strides = hlo::RowMajorStrides(in.shape().dims());
  for (size_t d = 0; d < starts.size(); ++d) c.src_offset += starts[d] * c.src_strides[d];
  MK_RETURN_IF_ERROR(RunCopy(inst, std::move(c), out, in));
  return out;
}

Result<Literal> EvalDynamicUpdateSlice(const Instruction& inst, const Operands& ops) {
  MK_RETURN_IF_ERROR(CheckOperands(inst, ops, 2));
  const Literal& in = *ops[0];
  const Literal& update = *ops[1];
  MK_RETURN_IF_ERROR(CheckSameDType(inst, in));
  MK_RETURN_IF_ERROR(CheckSameDType(inst, update));
  if (in.shape().dims() != inst.shape.dims() || update.shape().rank() != in.shape().rank()) {
    return OpError(inst, "result must match the operand, and the update its rank");
  }
  MK_ASSIGN_OR_RETURN(auto starts,
                      ClampedStarts(inst, ops, 2, in.shape().dims(), update.shape().dims()));
  Literal out = in;
  StridedCopy c = DenseSource(update.shape().dims(), inst.shape.dims(), 0);
  for (size_t d = 0; d < starts.size(); ++d) c.dst_offset += starts[d] * c.dst_strides[d];
  MK_RETURN_IF_ERROR(RunCopy(inst, std::move(c), out, update));
  return out;
}

Result<Literal> EvalConcatenate(const Instruction& inst, const Operands& ops) {
  MK_RETURN_IF_ERROR(CheckOperands(inst, ops, 1));
  if (inst.dimensions.size() != 1) return OpError(inst, "needs dimensions={d}");
  const int64_t axis = inst.dimensions[0];
  const int64_t rank = inst.shape.rank();
  if (axis < 0 || axis >= rank) return OpError(inst, "concatenate dimension out of range");
  Literal out(inst.shape);
  const auto out_strides = hlo::RowMajorStrides(inst.shape.dims());
  int64_t at = 0;  // position along the axis where the next operand goes
  for (const Literal* op : ops) {
    MK_RETURN_IF_ERROR(CheckSameDType(inst, *op));
    bool fits = op->shape().rank() == rank;
    for (int64_t d = 0; fits && d < rank; ++d) {
      fits = d == axis || op->shape().dim(d) == inst.shape.dim(d);
    }
    if (!fits || at + op->shape().dim(axis) > inst.shape.dim(axis)) {
      return OpError(inst, "operand " + op->shape().ToString(false) + " does not fit into " +
                               inst.shape.ToString(false) + " along dimension " +
                               std::to_string(axis));
    }
    StridedCopy c = DenseSource(op->shape().dims(), inst.shape.dims(),
                                at * out_strides[static_cast<size_t>(axis)]);
    MK_RETURN_IF_ERROR(RunCopy(inst, std::move(c), out, *op));
    at += op->shape().dim(axis);
  }
  if (at != inst.shape.dim(axis)) return OpError(inst, "operands do not fill the result");
  return out;
}

// pad: fill with the padding value, then copy the operand elements that land inside the result
// (negative low/high crop; interior padding spreads elements `interior + 1` apart).
Result<Literal> EvalPad(const Instruction& inst, const Operands& ops) {
  MK_RETURN_IF_ERROR(CheckOperands(inst, ops, 2));
  const Literal& in = *ops[0];
  const Literal& value = *ops[1];
  MK_RETURN_IF_ERROR(CheckSameDType(inst, in));
  MK_RETURN_IF_ERROR(CheckSameDType(inst, value));
  const int64_t rank = in.shape().rank();
  if (value.num_elements() != 1) return OpError(inst, "padding value must be a scalar");
  if (static_cast<int64_t>(inst.padding.size()) != rank || inst.shape.rank() != rank) {
    return OpError(inst, "padding= needs one low_high_interior per operand dimension");
  }
  Literal out(inst.shape);
  const int64_t es = hlo::DTypeByteSize(out.dtype());
  const int64_t n = out.num_elements();
  if (n > 0) {  // replicate the value by doubling copies
    std::memcpy(out.raw(), value.raw(), static_cast<size_t>(es));
    for (int64_t filled = 1; filled < n;) {
      const int64_t chunk = std::min(filled, n - filled);
      std::memcpy(out.raw() + filled * es, out.raw(), static_cast<size_t>(chunk * es));
      filled += chunk;
    }
  }
  StridedCopy c;
  const auto in_strides = hlo::RowMajorStrides(in.shape().dims());
  const auto out_strides = hlo::RowMajorStrides(inst.shape.dims());
  for (int64_t d = 0; d < rank; ++d) {
    const auto& p = inst.padding[static_cast<size_t>(d)];
    const int64_t in_dim = in.shape().dim(d);
    const int64_t out_dim = inst.shape.dim(d);
    const int64_t step = p.interior + 1;
    // The bound keeps the size arithmetic below far from int64 overflow.
    constexpr int64_t kMaxPad = int64_t{1} << 48;
    if (p.interior < 0 || p.interior > kMaxPad || p.low < -kMaxPad || p.low > kMaxPad ||
        p.high < -kMaxPad || p.high > kMaxPad ||
        out_dim != p.low + p.high + in_dim + std::max<int64_t>(in_dim - 1, 0) * p.interior) {
      return OpError(inst, "padding of dimension " + std::to_string(d) + " does not take " +
                               in.shape().ToString(false) + " to " + inst.shape.ToString(false));
    }
    // Operand index i lands at low + i * step; keep the i with 0 <= low + i*step < out_dim.
    const int64_t first = p.low >= 0 ? 0 : (-p.low + step - 1) / step;
    const int64_t room = out_dim - 1 - p.low;
    const int64_t last = room < 0 ? -1 : std::min(in_dim - 1, room / step);
    c.counts.push_back(last - first + 1);
    c.src_offset += first * in_strides[static_cast<size_t>(d)];
    c.src_strides.push_back(in_strides[static_cast<size_t>(d)]);
    c.dst_offset += (p.low + first * step) * out_strides[static_cast<size_t>(d)];
    c.dst_strides.push_back(step * out_strides[static_cast<size_t>(d)]);
  }
  MK_RETURN_IF_ERROR(RunCopy(inst, std::move(c), out, in));
  return out;
}

}  // namespace

Result<Literal> EvalDataMovement(const Instruction& inst, const Operands& ops, EvalContext&) {
  switch (inst.opcode) {
    case Opcode::kIota: return EvalIota(inst);
    case Opcode::kReshape:
    case Opcode::kBitcast: return EvalReshape(inst, ops);
    case Opcode::kBroadcast: return EvalBroadcast(inst, ops);
    case Opcode::kTranspose: return EvalTranspose(inst, ops);
    case Opcode::kSlice: return EvalSlice(inst, ops);
    case Opcode::kDynamicSlice: return EvalDynamicSlice(inst, ops);
    case Opcode::kDynamicUpdateSlice: return EvalDynamicUpdateSlice(inst, ops);
    case Opcode::kConcatenate: return EvalConcatenate(inst, ops);
    case Opcode::kPad: return EvalPad(inst, ops);
    case Opcode::kReverse: return EvalReverse(inst, ops);
    default:
      return Status(ErrorCode::kUnimplemented,
                    "interpreter: " + std::string(hlo::OpcodeName(inst.opcode)) + " %" +
                        inst.name + " is not a data-movement op",
                    inst.loc);
  }
}

}  // namespace mk::interp
