// sort: N operands of equal dimensions sorted together along one dimension by a comparator
// computation over 2N scalars. Each row is sorted as a permutation of positions with
// std::stable_sort (deterministic, and what `is_stable=true` asks for), then every operand is
// permuted. A comparator that is a single LT/GT compare of one operand's two parameters runs as
// typed C++; any other comparator is evaluated by calling the computation.
#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <type_traits>

#include "hlo/module.h"
#include "interp/ops.h"

namespace mk::interp {

using hlo::ComparisonDirection;
using hlo::DType;
using hlo::Instruction;
using hlo::Literal;
using hlo::Opcode;

namespace {

// The comparator `compare(p[2k], p[2k+1]), direction=LT|GT` (or with the parameters swapped).
struct SimpleComparator {
  size_t operand = 0;     // k
  bool descending = false;  // true when the comparator orders larger values first
  bool total_order = false;
};

std::optional<SimpleComparator> MatchSimpleComparator(const hlo::Computation& comparator,
                                                      const Operands& ops) {
  const Instruction* root = comparator.root();
  if (root == nullptr || root->opcode != Opcode::kCompare || root->operand_count() != 2 ||
      !root->direction.has_value()) {
    return std::nullopt;
  }
  const Instruction* lhs = root->operand(0);
  const Instruction* rhs = root->operand(1);
  if (lhs->opcode != Opcode::kParameter || rhs->opcode != Opcode::kParameter) return std::nullopt;
  const int64_t a = lhs->parameter_number, b = rhs->parameter_number;
  if (a < 0 || b < 0 || a / 2 != b / 2 || a == b) return std::nullopt;
  SimpleComparator m;
  m.operand = static_cast<size_t>(a / 2);
  if (m.operand >= ops.size()) return std::nullopt;
  const DType t = ops[m.operand]->dtype();
  if (lhs->shape.dtype() != t || rhs->shape.dtype() != t || lhs->shape.rank() != 0) {
    return std::nullopt;
  }
  bool less;
  switch (*root->direction) {
    case ComparisonDirection::kLt: less = true; break;
    case ComparisonDirection::kGt: less = false; break;
    default: return std::nullopt;  // LE/GE/EQ/NE are not strict orders: use the general path
  }
  const bool swapped = a > b;  // compare(p1, p0) reverses the order
  m.descending = less == swapped;
  const std::string& type = root->comparison_type;
  if (hlo::IsFloat(t)) {
    if (type == "TOTALORDER") {
      m.total_order = true;
    } else if (!type.empty() && type != "FLOAT") {
      return std::nullopt;
    }
  } else if (hlo::IsSignedInt(t)) {
    if (!type.empty() && type != "SIGNED") return std::nullopt;
  } else if (hlo::IsUnsignedInt(t) || t == DType::kPred) {
    if (!type.empty() && type != "UNSIGNED") return std::nullopt;
  } else {
    return std::nullopt;
  }
  return m;
}

// Maps a float's bits to a signed integer whose order is the IEEE total order:
// -NaN < -Inf < ... < -0 < +0 < ... < +Inf < +NaN.
template <typename Bits, typename Signed>
Signed TotalOrderKey(Bits bits) {
  Signed s;
  std::memcpy(&s, &bits, sizeof(s));
  const Signed magnitude_mask = std::numeric_limits<Signed>::max();
  return s < 0 ? static_cast<Signed>(s ^ magnitude_mask) : s;
}

template <typename T>
int64_t TotalOrderKeyOf(T v) {
  if constexpr (std::is_same_v<T, float>) {
    uint32_t b;
    std::memcpy(&b, &v, 4);
    return TotalOrderKey<uint32_t, int32_t>(b);
  } else if constexpr (std::is_same_v<T, double>) {
    uint64_t b;
    std::memcpy(&b, &v, 8);
    return TotalOrderKey<uint64_t, int64_t>(b);
  } else {  // bf16_t / f16_t: the 16-bit pattern
    return TotalOrderKey<uint16_t, int16_t>(v.bits);
  }
}

// Sorts every row along `dim` and writes the permuted rows of every operand to `outs`.
// sort_row(base, stride, perm) orders `perm` (positions 0..n-1 of the row whose first element
// is at linear offset `base`); one permutation buffer is reused for all rows.
template <typename SortRow>
Status SortRows(const Operands& ops, std::vector<Literal>& outs, size_t dim, SortRow&& sort_row) {
  const std::vector<int64_t>& dims = ops[0]->shape().dims();
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < dim; ++i) outer *= dims[i];
  for (size_t i = dim + 1; i < dims.size(); ++i) inner *= dims[i];
  const int64_t n = dims[dim];
  const int64_t stride = inner;
  std::vector<int64_t> perm(static_cast<size_t>(n));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t in = 0; in < inner; ++in) {
      const int64_t base = o * n * inner + in;
      std::iota(perm.begin(), perm.end(), 0);
      MK_RETURN_IF_ERROR(sort_row(base, stride, perm));
      for (size_t k = 0; k < ops.size(); ++k) {
        const size_t es = static_cast<size_t>(hlo::DTypeByteSize(ops[k]->dtype()));
        const uint8_t* src = ops[k]->raw();
        uint8_t* dst = outs[k].raw();
        for (int64_t i = 0; i < n; ++i) {
          std::memcpy(dst + static_cast<size_t>(base + i * stride) * es,
                      src + static_cast<size_t>(base + perm[static_cast<size_t>(i)] * stride) * es,
                      es);
        }
      }
    }
  }
  return Status::Ok();
}

// Typed key comparison of one operand (the fast path).
template <typename T>
Status SortRowsTyped(const Operands& ops, std::vector<Literal>& outs, size_t dim,
                     const SimpleComparator& m) {
  const T* data = ops[m.operand]->data<T>();
  constexpr bool kIsFloat = std::is_floating_point_v<T> || std::is_same_v<T, hlo::bf16_t> ||
                            std::is_same_v<T, hlo::f16_t>;
  // bf16/f16 compare through their exact float values.
  using Wide = std::conditional_t<std::is_same_v<T, hlo::bf16_t> || std::is_same_v<T, hlo::f16_t>,
                                  float, T>;
  return SortRows(ops, outs, dim, [&](int64_t base, int64_t stride, std::vector<int64_t>& perm) {
    auto at = [&](int64_t i) { return data[base + i * stride]; };
    if constexpr (kIsFloat) {
      if (m.total_order) {
        if (m.descending) {
          std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
            return TotalOrderKeyOf(at(a)) > TotalOrderKeyOf(at(b));
          });
        } else {
          std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
            return TotalOrderKeyOf(at(a)) < TotalOrderKeyOf(at(b));
          });
        }
        return Status::Ok();
      }
    }
    // IEEE comparison: NaN compares false both ways, as XLA's FLOAT compare does.
    if (m.descending) {
      std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
        return static_cast<Wide>(at(a)) > static_cast<Wide>(at(b));
      });
    } else {
      std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
        return static_cast<Wide>(at(a)) < static_cast<Wide>(at(b));
      });
    }
    return Status::Ok();
  });
}

// Any comparator: calls the computation on 2N scalars per comparison.
Status SortRowsGeneric(const Instruction& inst, const hlo::Computation& comparator,
                       const Operands& ops, std::vector<Literal>& outs, size_t dim,
                       EvalContext& ctx) {
  std::vector<Literal> args;
  std::vector<size_t> elem_bytes;
  for (const Literal* op : ops) {
    const hlo::Shape scalar = hlo::Shape::Scalar(op->dtype());
    args.emplace_back(scalar);
    args.emplace_back(scalar);
    elem_bytes.push_back(static_cast<size_t>(hlo::DTypeByteSize(op->dtype())));
  }
  return SortRows(ops, outs, dim, [&](int64_t base, int64_t stride, std::vector<int64_t>& perm) {
    Status error;
    std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
      if (!error.ok()) return false;
      for (size_t k = 0; k < ops.size(); ++k) {
        const size_t es = elem_bytes[k];
        std::memcpy(args[2 * k].raw(), ops[k]->raw() + static_cast<size_t>(base + a * stride) * es,
                    es);
        std::memcpy(args[2 * k + 1].raw(),
                    ops[k]->raw() + static_cast<size_t>(base + b * stride) * es, es);
      }
      Result<Literal> r = ctx.Call(comparator, args);
      if (!r.ok()) {
        error = r.status();
        return false;
      }
      if (r->shape().is_tuple() || r->dtype() != DType::kPred || r->num_elements() != 1) {
        error = OpError(inst, "comparator must return pred[], got " + r->shape().ToString(false));
        return false;
      }
      return r->GetInt64(0) != 0;
    });
    return error;
  });
}

}  // namespace

Result<Literal> EvalSort(const Instruction& inst, const Operands& ops, EvalContext& ctx) {
  if (ops.empty()) return OpError(inst, "needs at least one operand");
  const std::vector<int64_t>& dims = ops[0]->shape().dims();
  for (const Literal* op : ops) {
    if (op->shape().is_tuple() || op->shape().dims() != dims) {
      return OpError(inst, "all operands must be arrays of the same dimensions");
    }
    MK_RETURN_IF_ERROR(hlo::DispatchDType(op->dtype(), [](auto) { return Status::Ok(); }));
  }
  if (inst.dimensions.size() != 1 || inst.dimensions[0] < 0 ||
      inst.dimensions[0] >= static_cast<int64_t>(dims.size())) {
    return OpError(inst, "needs one sort dimension within the operand rank");
  }
  const hlo::Computation* comparator = inst.to_apply();
  if (comparator == nullptr) return OpError(inst, "has no comparator computation");
  if (comparator->parameters().size() != 2 * ops.size()) {
    return OpError(inst, "comparator must take " + std::to_string(2 * ops.size()) +
                             " parameters, takes " +
                             std::to_string(comparator->parameters().size()));
  }
  const bool tuple_result = ops.size() > 1;
  if (tuple_result != inst.shape.is_tuple() ||
      (tuple_result && inst.shape.tuple_shapes().size() != ops.size())) {
    return OpError(inst, "result must be a tuple with one element per operand when N > 1");
  }
  const size_t dim = static_cast<size_t>(inst.dimensions[0]);
  std::vector<Literal> outs;
  for (const Literal* op : ops) outs.emplace_back(op->shape());
  if (auto simple = MatchSimpleComparator(*comparator, ops)) {
    MK_RETURN_IF_ERROR(hlo::DispatchDType(ops[simple->operand]->dtype(), [&](auto tag) {
      return SortRowsTyped<typename decltype(tag)::type>(ops, outs, dim, *simple);
    }));
  } else {
    MK_RETURN_IF_ERROR(SortRowsGeneric(inst, *comparator, ops, outs, dim, ctx));
  }
  if (!tuple_result) return std::move(outs[0]);
  return Literal::Tuple(std::move(outs));
}

}  // namespace mk::interp
