// topk (the `topk` opcode JAX emits for lax.top_k): along the last dimension, the k largest
// (largest=true) or smallest elements, in that order, with their positions as s32. Floats are
// ordered by XLA's total order (-NaN < -inf < ... < -0 < +0 < ... < inf < NaN), so NaN counts as
// the largest value; equal values keep the lower position first (a stable sort).
#include <algorithm>
#include <cstring>
#include <numeric>
#include <type_traits>

#include "interp/ops.h"

namespace mk::interp {

using hlo::DType;
using hlo::Instruction;
using hlo::Literal;

namespace {

// A key whose integer order is the element order (total order for floats).
template <typename T>
auto OrderKey(T v) {
  if constexpr (std::is_same_v<T, hlo::bf16_t> || std::is_same_v<T, hlo::f16_t> ||
                std::is_same_v<T, float>) {
    const float f = static_cast<float>(v);
    int32_t i;
    std::memcpy(&i, &f, 4);
    return i < 0 ? -static_cast<int64_t>(i & 0x7fffffff) - 1 : static_cast<int64_t>(i);
  } else if constexpr (std::is_same_v<T, double>) {
    int64_t i;
    std::memcpy(&i, &v, 8);
    return i < 0 ? -(i & INT64_MAX) - 1 : i;
  } else {
    return v;
  }
}

}  // namespace

Result<Literal> EvalTopK(const Instruction& inst, const Operands& ops) {
  if (ops.size() != 1 || ops[0]->shape().is_tuple() || ops[0]->shape().rank() < 1) {
    return OpError(inst, "expects one operand of rank >= 1");
  }
  const Literal& in = *ops[0];
  const int64_t n = in.shape().dims().back();
  const int64_t k = inst.k;
  if (k < 0 || k > n) return OpError(inst, "k=" + std::to_string(k) + " is out of range");
  std::vector<int64_t> out_dims = in.shape().dims();
  out_dims.back() = k;
  const hlo::Shape values_shape(in.dtype(), out_dims), indices_shape(DType::kS32, out_dims);
  if (!inst.shape.is_tuple() || inst.shape.tuple_shapes().size() != 2 ||
      !inst.shape.tuple_shape(0).SameAs(values_shape) ||
      !inst.shape.tuple_shape(1).SameAs(indices_shape)) {
    return OpError(inst, "result must be (" + values_shape.ToString(false) + ", " +
                             indices_shape.ToString(false) + ")");
  }
  Literal values(values_shape), indices(indices_shape);
  const int64_t rows = n == 0 ? 0 : in.num_elements() / n;
  MK_RETURN_IF_ERROR(hlo::DispatchDType(in.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const T* x = in.data<T>();
    T* v = values.data<T>();
    int32_t* idx = indices.data<int32_t>();
    std::vector<int64_t> perm(static_cast<size_t>(n));
    for (int64_t r = 0; r < rows; ++r) {
      const T* row = x + r * n;
      std::iota(perm.begin(), perm.end(), 0);
      if (inst.has_largest) {
        std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
          return OrderKey(row[a]) > OrderKey(row[b]);
        });
      } else {
        std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
          return OrderKey(row[a]) < OrderKey(row[b]);
        });
      }
      for (int64_t i = 0; i < k; ++i) {
        v[r * k + i] = row[perm[static_cast<size_t>(i)]];
        idx[r * k + i] = static_cast<int32_t>(perm[static_cast<size_t>(i)]);
      }
    }
    return Status::Ok();
  }));
  std::vector<Literal> parts;
  parts.push_back(std::move(values));
  parts.push_back(std::move(indices));
  return Literal::Tuple(std::move(parts));
}

}  // namespace mk::interp
