// Elementwise ops: unary math, binary arithmetic/logic, compare, select, clamp and map. The
// type-changing ops (convert, bitcast-convert, reduce-precision) live in elementwise_convert.cc.
//
// Every op dispatches on the element type once and then runs a typed loop; bf16/f16 values are
// widened to f32, computed, and rounded back (RNE) per element, as XLA does.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "interp/elementwise_convert.h"
#include "interp/elementwise_scalar.h"
#include "interp/ops.h"

namespace mk::interp {
namespace {

using hlo::ComparisonDirection;
using hlo::DType;
using hlo::Instruction;
using hlo::Literal;
using hlo::Opcode;
namespace sc = scalar;

std::string DTypeStr(DType t) { return std::string(hlo::DTypeName(t)); }

Status CheckOperandCount(const Instruction& inst, const Operands& ops, size_t n) {
  if (ops.size() != n) {
    return OpError(inst, "expects " + std::to_string(n) + " operand(s), got " +
                             std::to_string(ops.size()));
  }
  for (const Literal* op : ops) {
    if (op == nullptr || !op->shape().is_array()) return OpError(inst, "operands must be arrays");
  }
  return Status::Ok();
}

// The operand must hold `n` elements of `dtype` (or exactly one when `scalar_ok`), so that the
// typed loops never read past its storage.
Status CheckOperand(const Instruction& inst, const Literal& op, size_t index, DType dtype,
                    int64_t n, bool scalar_ok = false) {
  if (op.dtype() != dtype) {
    return OpError(inst, "operand " + std::to_string(index) + " has element type " +
                             DTypeStr(op.dtype()) + ", expected " + DTypeStr(dtype));
  }
  if (op.num_elements() != n && !(scalar_ok && op.num_elements() == 1)) {
    return OpError(inst, "operand " + std::to_string(index) + " has shape " +
                             op.shape().ToString(false) + ", which does not match the result " +
                             inst.shape.ToString(false));
  }
  return Status::Ok();
}

Status NotDefinedOn(const Instruction& inst, DType t) {
  return OpError(inst, "not defined on element type " + DTypeStr(t));
}

// ---------------------------------------------------------------------------------------------
// Unary.

template <typename T, typename F>
void MapFloatUnary(const Literal& in, Literal& out, F f) {
  using C = sc::ComputeOf<T>;
  const T* a = in.data<T>();
  T* r = out.data<T>();
  const int64_t n = out.num_elements();
  for (int64_t i = 0; i < n; ++i) r[i] = T(f(static_cast<C>(a[i])));
}

template <typename T>
Status FloatUnary(const Instruction& inst, const Literal& in, Literal& out) {
  using C = sc::ComputeOf<T>;
  auto run = [&](auto f) {
    MapFloatUnary<T>(in, out, f);
    return Status::Ok();
  };
  switch (inst.opcode) {
    case Opcode::kAbs: return run([](C x) { return std::fabs(x); });
    case Opcode::kNegate: return run([](C x) { return -x; });
    case Opcode::kSign: return run([](C x) { return sc::FloatSign(x); });
    case Opcode::kFloor: return run([](C x) { return std::floor(x); });
    case Opcode::kCeil: return run([](C x) { return std::ceil(x); });
    // nearbyint rounds half to even in the default rounding mode, which nothing here changes.
    case Opcode::kRoundNearestEven: return run([](C x) { return std::nearbyint(x); });
    case Opcode::kRoundNearestAfz: return run([](C x) { return std::round(x); });
    case Opcode::kExp: return run([](C x) { return std::exp(x); });
    case Opcode::kExpm1: return run([](C x) { return std::expm1(x); });
    case Opcode::kLog: return run([](C x) { return std::log(x); });
    case Opcode::kLog1p: return run([](C x) { return std::log1p(x); });
    case Opcode::kSqrt: return run([](C x) { return std::sqrt(x); });
    case Opcode::kRsqrt: return run([](C x) { return C(1) / std::sqrt(x); });
    case Opcode::kCbrt: return run([](C x) { return std::cbrt(x); });
    case Opcode::kTanh: return run([](C x) { return std::tanh(x); });
    case Opcode::kLogistic: return run([](C x) { return C(1) / (C(1) + std::exp(-x)); });
    case Opcode::kSin: return run([](C x) { return std::sin(x); });
    case Opcode::kCos: return run([](C x) { return std::cos(x); });
    case Opcode::kTan: return run([](C x) { return std::tan(x); });
    case Opcode::kErf: return run([](C x) { return std::erf(x); });
    default: return NotDefinedOn(inst, in.dtype());
  }
}

template <typename T>
Status IntUnary(const Instruction& inst, const Literal& in, Literal& out) {
  using U = std::make_unsigned_t<T>;
  auto run = [&](auto f) {
    const T* a = in.data<T>();
    T* r = out.data<T>();
    const int64_t n = out.num_elements();
    for (int64_t i = 0; i < n; ++i) r[i] = static_cast<T>(f(a[i]));
    return Status::Ok();
  };
  switch (inst.opcode) {
    case Opcode::kAbs:
      // abs(INT_MIN) wraps to INT_MIN, as XLA.
      if constexpr (std::is_signed_v<T>) return run([](T x) { return x < 0 ? sc::WrapNeg(x) : x; });
      else return run([](T x) { return x; });
    case Opcode::kNegate: return run([](T x) { return sc::WrapNeg(x); });
    case Opcode::kSign:
      if constexpr (std::is_signed_v<T>) return run([](T x) { return T((x > 0) - (x < 0)); });
      else return run([](T x) { return T(x != 0); });
    case Opcode::kNot: return run([](T x) { return static_cast<U>(~static_cast<U>(x)); });
    case Opcode::kPopulationCount: return run([](T x) { return std::popcount(static_cast<U>(x)); });
    case Opcode::kClz: return run([](T x) { return std::countl_zero(static_cast<U>(x)); });
    default: return NotDefinedOn(inst, in.dtype());
  }
}

Status PredUnary(const Instruction& inst, const Literal& in, Literal& out) {
  if (inst.opcode != Opcode::kNot) return NotDefinedOn(inst, DType::kPred);
  const uint8_t* a = in.data<uint8_t>();
  uint8_t* r = out.data<uint8_t>();
  for (int64_t i = 0; i < out.num_elements(); ++i) r[i] = a[i] ? 0 : 1;
  return Status::Ok();
}

Result<Literal> EvalIsFinite(const Instruction& inst, const Literal& in) {
  if (inst.shape.dtype() != DType::kPred) return OpError(inst, "result must be pred");
  if (!hlo::IsFloat(in.dtype())) return NotDefinedOn(inst, in.dtype());
  MK_RETURN_IF_ERROR(CheckOperand(inst, in, 0, in.dtype(), inst.shape.num_elements()));
  Literal out(inst.shape);
  MK_RETURN_IF_ERROR(hlo::DispatchDType(in.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (sc::kIsFloatType<decltype(tag)::kDType>) {
      const T* a = in.data<T>();
      uint8_t* r = out.data<uint8_t>();
      for (int64_t i = 0; i < out.num_elements(); ++i) {
        r[i] = std::isfinite(static_cast<sc::ComputeOf<T>>(a[i])) ? 1 : 0;
      }
      return Status::Ok();
    } else {
      return NotDefinedOn(inst, in.dtype());
    }
  }));
  return out;
}

Result<Literal> EvalUnary(const Instruction& inst, const Operands& ops) {
  MK_RETURN_IF_ERROR(CheckOperandCount(inst, ops, 1));
  const Literal& in = *ops[0];
  if (inst.opcode == Opcode::kIsFinite) return EvalIsFinite(inst, in);
  MK_RETURN_IF_ERROR(CheckOperand(inst, in, 0, inst.shape.dtype(), inst.shape.num_elements()));
  Literal out(inst.shape);
  MK_RETURN_IF_ERROR(hlo::DispatchDType(in.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    constexpr DType D = decltype(tag)::kDType;
    if constexpr (sc::kIsFloatType<D>) {
      return FloatUnary<T>(inst, in, out);
    } else if constexpr (D == DType::kPred) {
      return PredUnary(inst, in, out);
    } else {
      return IntUnary<T>(inst, in, out);
    }
  }));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Binary.

template <typename T, typename R, typename F>
void MapBinary(const Literal& lhs, const Literal& rhs, Literal& out, F f) {
  const T* a = lhs.data<T>();
  const T* b = rhs.data<T>();
  R* r = out.data<R>();
  const int64_t n = out.num_elements();
  for (int64_t i = 0; i < n; ++i) r[i] = f(a[i], b[i]);
}

template <typename T>
Status FloatBinary(const Instruction& inst, const Literal& lhs, const Literal& rhs, Literal& out) {
  using C = sc::ComputeOf<T>;
  auto run = [&](auto f) {
    MapBinary<T, T>(lhs, rhs, out,
                    [f](T x, T y) { return T(f(static_cast<C>(x), static_cast<C>(y))); });
    return Status::Ok();
  };
  switch (inst.opcode) {
    case Opcode::kAdd: return run([](C x, C y) { return x + y; });
    case Opcode::kSubtract: return run([](C x, C y) { return x - y; });
    case Opcode::kMultiply: return run([](C x, C y) { return x * y; });
    case Opcode::kDivide: return run([](C x, C y) { return x / y; });
    case Opcode::kRemainder: return run([](C x, C y) { return std::fmod(x, y); });
    case Opcode::kPower: return run([](C x, C y) { return std::pow(x, y); });
    case Opcode::kMaximum: return run([](C x, C y) { return sc::FloatMax(x, y); });
    case Opcode::kMinimum: return run([](C x, C y) { return sc::FloatMin(x, y); });
    case Opcode::kAtan2: return run([](C x, C y) { return std::atan2(x, y); });
    default: return NotDefinedOn(inst, lhs.dtype());
  }
}

template <typename T>
Status IntBinary(const Instruction& inst, const Literal& lhs, const Literal& rhs, Literal& out) {
  auto run = [&](auto f) {
    MapBinary<T, T>(lhs, rhs, out, f);
    return Status::Ok();
  };
  switch (inst.opcode) {
    case Opcode::kAdd: return run([](T x, T y) { return sc::WrapAdd(x, y); });
    case Opcode::kSubtract: return run([](T x, T y) { return sc::WrapSub(x, y); });
    case Opcode::kMultiply: return run([](T x, T y) { return sc::WrapMul(x, y); });
    case Opcode::kDivide: return run([](T x, T y) { return sc::IntDiv(x, y); });
    case Opcode::kRemainder: return run([](T x, T y) { return sc::IntRem(x, y); });
    case Opcode::kPower: return run([](T x, T y) { return sc::IntPow(x, y); });
    case Opcode::kMaximum: return run([](T x, T y) { return std::max(x, y); });
    case Opcode::kMinimum: return run([](T x, T y) { return std::min(x, y); });
    case Opcode::kAnd: return run([](T x, T y) { return static_cast<T>(x & y); });
    case Opcode::kOr: return run([](T x, T y) { return static_cast<T>(x | y); });
    case Opcode::kXor: return run([](T x, T y) { return static_cast<T>(x ^ y); });
    case Opcode::kShiftLeft: return run([](T x, T y) { return sc::ShiftLeft(x, y); });
    case Opcode::kShiftRightLogical:
      return run([](T x, T y) { return sc::ShiftRightLogical(x, y); });
    case Opcode::kShiftRightArithmetic:
      return run([](T x, T y) { return sc::ShiftRightArithmetic(x, y); });
    default: return NotDefinedOn(inst, lhs.dtype());
  }
}

Status PredBinary(const Instruction& inst, const Literal& lhs, const Literal& rhs, Literal& out) {
  auto run = [&](auto f) {
    MapBinary<uint8_t, uint8_t>(lhs, rhs, out,
                                [f](uint8_t x, uint8_t y) -> uint8_t { return f(x != 0, y != 0); });
    return Status::Ok();
  };
  switch (inst.opcode) {
    case Opcode::kAnd:
    case Opcode::kMinimum: return run([](bool x, bool y) { return x && y; });
    case Opcode::kOr:
    case Opcode::kMaximum: return run([](bool x, bool y) { return x || y; });
    case Opcode::kXor: return run([](bool x, bool y) { return x != y; });
    default: return NotDefinedOn(inst, DType::kPred);
  }
}

// compare: the comparison type picks the key each element is compared by.
enum class CompareKind { kFloat, kTotalOrder, kSigned, kUnsigned };

Result<CompareKind> ResolveCompareKind(const Instruction& inst, DType t) {
  const std::string& s = inst.comparison_type;
  bool is_float = hlo::IsFloat(t);
  if (s.empty()) {
    if (is_float) return CompareKind::kFloat;
    return hlo::IsSignedInt(t) ? CompareKind::kSigned : CompareKind::kUnsigned;
  }
  if (s == "FLOAT" || s == "TOTALORDER") {
    // On integers both orders are the integer order of the operand's own signedness.
    if (!is_float) return hlo::IsSignedInt(t) ? CompareKind::kSigned : CompareKind::kUnsigned;
    return s == "FLOAT" ? CompareKind::kFloat : CompareKind::kTotalOrder;
  }
  if (s == "SIGNED" || s == "UNSIGNED") {
    if (is_float) return OpError(inst, "type=" + s + " cannot compare " + DTypeStr(t));
    return s == "SIGNED" ? CompareKind::kSigned : CompareKind::kUnsigned;
  }
  return OpError(inst, "unknown comparison type '" + s + "'");
}

template <typename T, typename KeyFn>
Status CompareLoop(ComparisonDirection dir, const Literal& lhs, const Literal& rhs, Literal& out,
                   KeyFn key) {
  auto run = [&](auto pred) {
    MapBinary<T, uint8_t>(lhs, rhs, out,
                          [&](T x, T y) -> uint8_t { return pred(key(x), key(y)) ? 1 : 0; });
    return Status::Ok();
  };
  switch (dir) {
    case ComparisonDirection::kEq: return run([](auto x, auto y) { return x == y; });
    case ComparisonDirection::kNe: return run([](auto x, auto y) { return x != y; });
    case ComparisonDirection::kLt: return run([](auto x, auto y) { return x < y; });
    case ComparisonDirection::kLe: return run([](auto x, auto y) { return x <= y; });
    case ComparisonDirection::kGt: return run([](auto x, auto y) { return x > y; });
    case ComparisonDirection::kGe: return run([](auto x, auto y) { return x >= y; });
  }
  return Internal("unknown comparison direction");
}

Result<Literal> EvalCompare(const Instruction& inst, const Operands& ops) {
  MK_RETURN_IF_ERROR(CheckOperandCount(inst, ops, 2));
  if (inst.shape.dtype() != DType::kPred) return OpError(inst, "result must be pred");
  if (!inst.direction.has_value()) return OpError(inst, "missing direction=");
  const Literal& lhs = *ops[0];
  const Literal& rhs = *ops[1];
  const int64_t n = inst.shape.num_elements();
  MK_RETURN_IF_ERROR(CheckOperand(inst, lhs, 0, lhs.dtype(), n));
  MK_RETURN_IF_ERROR(CheckOperand(inst, rhs, 1, lhs.dtype(), n));
  MK_ASSIGN_OR_RETURN(CompareKind kind, ResolveCompareKind(inst, lhs.dtype()));
  const ComparisonDirection dir = *inst.direction;
  Literal out(inst.shape);
  MK_RETURN_IF_ERROR(hlo::DispatchDType(lhs.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (sc::kIsFloatType<decltype(tag)::kDType>) {
      if (kind == CompareKind::kTotalOrder) {
        return CompareLoop<T>(dir, lhs, rhs, out, [](T x) { return sc::TotalOrderKey(x); });
      }
      return CompareLoop<T>(dir, lhs, rhs, out,
                            [](T x) { return static_cast<sc::ComputeOf<T>>(x); });
    } else {
      if (kind == CompareKind::kSigned) {
        return CompareLoop<T>(dir, lhs, rhs, out,
                              [](T x) { return static_cast<std::make_signed_t<T>>(x); });
      }
      return CompareLoop<T>(dir, lhs, rhs, out,
                            [](T x) { return static_cast<std::make_unsigned_t<T>>(x); });
    }
  }));
  return out;
}

Result<Literal> EvalBinary(const Instruction& inst, const Operands& ops) {
  if (inst.opcode == Opcode::kCompare) return EvalCompare(inst, ops);
  MK_RETURN_IF_ERROR(CheckOperandCount(inst, ops, 2));
  const int64_t n = inst.shape.num_elements();
  MK_RETURN_IF_ERROR(CheckOperand(inst, *ops[0], 0, inst.shape.dtype(), n));
  MK_RETURN_IF_ERROR(CheckOperand(inst, *ops[1], 1, inst.shape.dtype(), n));
  const Literal& lhs = *ops[0];
  const Literal& rhs = *ops[1];
  Literal out(inst.shape);
  MK_RETURN_IF_ERROR(hlo::DispatchDType(lhs.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    constexpr DType D = decltype(tag)::kDType;
    if constexpr (sc::kIsFloatType<D>) {
      return FloatBinary<T>(inst, lhs, rhs, out);
    } else if constexpr (D == DType::kPred) {
      return PredBinary(inst, lhs, rhs, out);
    } else {
      return IntBinary<T>(inst, lhs, rhs, out);
    }
  }));
  return out;
}

// ---------------------------------------------------------------------------------------------
// select, clamp, map.

template <size_t kBytes>
void SelectLoop(const uint8_t* pred, const uint8_t* on_true, const uint8_t* on_false,
                uint8_t* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* src = pred[i] ? on_true : on_false;
    std::memcpy(out + i * kBytes, src + i * kBytes, kBytes);
  }
}

Result<Literal> EvalSelect(const Instruction& inst, const Operands& ops) {
  MK_RETURN_IF_ERROR(CheckOperandCount(inst, ops, 3));
  const int64_t n = inst.shape.num_elements();
  MK_RETURN_IF_ERROR(CheckOperand(inst, *ops[0], 0, DType::kPred, n, /*scalar_ok=*/true));
  MK_RETURN_IF_ERROR(CheckOperand(inst, *ops[1], 1, inst.shape.dtype(), n));
  MK_RETURN_IF_ERROR(CheckOperand(inst, *ops[2], 2, inst.shape.dtype(), n));
  const Literal& pred = *ops[0];
  if (pred.num_elements() == 1 && n != 1) {
    Literal out = pred.data<uint8_t>()[0] ? *ops[1] : *ops[2];
    return out;
  }
  Literal out(inst.shape);
  const uint8_t* p = pred.raw();
  const uint8_t* t = ops[1]->raw();
  const uint8_t* f = ops[2]->raw();
  switch (hlo::DTypeByteSize(inst.shape.dtype())) {
    case 1: SelectLoop<1>(p, t, f, out.raw(), n); break;
    case 2: SelectLoop<2>(p, t, f, out.raw(), n); break;
    case 4: SelectLoop<4>(p, t, f, out.raw(), n); break;
    case 8: SelectLoop<8>(p, t, f, out.raw(), n); break;
    default: return NotDefinedOn(inst, inst.shape.dtype());
  }
  return out;
}

Result<Literal> EvalClamp(const Instruction& inst, const Operands& ops) {
  MK_RETURN_IF_ERROR(CheckOperandCount(inst, ops, 3));
  const int64_t n = inst.shape.num_elements();
  const DType t = inst.shape.dtype();
  MK_RETURN_IF_ERROR(CheckOperand(inst, *ops[0], 0, t, n, /*scalar_ok=*/true));
  MK_RETURN_IF_ERROR(CheckOperand(inst, *ops[1], 1, t, n));
  MK_RETURN_IF_ERROR(CheckOperand(inst, *ops[2], 2, t, n, /*scalar_ok=*/true));
  Literal out(inst.shape);
  // Strides of 0 let a scalar bound serve every element.
  const int64_t lo_step = ops[0]->num_elements() == 1 ? 0 : 1;
  const int64_t hi_step = ops[2]->num_elements() == 1 ? 0 : 1;
  MK_RETURN_IF_ERROR(hlo::DispatchDType(t, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const T* lo = ops[0]->data<T>();
    const T* x = ops[1]->data<T>();
    const T* hi = ops[2]->data<T>();
    T* r = out.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (sc::kIsFloatType<decltype(tag)::kDType>) {
        using C = sc::ComputeOf<T>;
        C v = sc::FloatMax(static_cast<C>(lo[i * lo_step]),
                           sc::FloatMin(static_cast<C>(x[i]), static_cast<C>(hi[i * hi_step])));
        r[i] = T(v);
      } else {
        r[i] = std::max(lo[i * lo_step], std::min(x[i], hi[i * hi_step]));
      }
    }
    return Status::Ok();
  }));
  return out;
}

// map: calls to_apply once per element with scalar arguments. Slow, but map is rare in
// programs JAX emits and only serves as a reference here.
Result<Literal> EvalMap(const Instruction& inst, const Operands& ops, EvalContext& ctx) {
  if (inst.to_apply() == nullptr) return OpError(inst, "missing to_apply");
  if (ops.empty()) return OpError(inst, "expects at least one operand");
  const int64_t n = inst.shape.num_elements();
  for (size_t k = 0; k < ops.size(); ++k) {
    if (!ops[k]->shape().is_array()) return OpError(inst, "operands must be arrays");
    MK_RETURN_IF_ERROR(CheckOperand(inst, *ops[k], k, ops[k]->dtype(), n));
  }
  Literal out(inst.shape);
  const size_t out_bytes = static_cast<size_t>(hlo::DTypeByteSize(out.dtype()));
  std::vector<Literal> args;
  for (const Literal* op : ops) args.emplace_back(hlo::Shape::Scalar(op->dtype()));
  for (int64_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < ops.size(); ++k) {
      size_t bytes = args[k].raw_size();
      std::memcpy(args[k].raw(), ops[k]->raw() + static_cast<size_t>(i) * bytes, bytes);
    }
    MK_ASSIGN_OR_RETURN(Literal value, ctx.Call(*inst.to_apply(), args));
    if (!value.shape().is_array() || value.dtype() != out.dtype() || value.num_elements() != 1) {
      return OpError(inst, "to_apply returned " + value.shape().ToString(false) +
                               ", expected a scalar " + DTypeStr(out.dtype()));
    }
    std::memcpy(out.raw() + static_cast<size_t>(i) * out_bytes, value.raw(), out_bytes);
  }
  return out;
}

}  // namespace

Result<Literal> EvalElementwise(const Instruction& inst, const Operands& ops, EvalContext& ctx) {
  if (!inst.shape.is_array()) return OpError(inst, "result must be an array");
  switch (inst.opcode) {
    case Opcode::kConvert: return EvalConvert(inst, ops);
    case Opcode::kBitcastConvert: return EvalBitcastConvert(inst, ops);
    case Opcode::kReducePrecision: return EvalReducePrecision(inst, ops);
    case Opcode::kMap: return EvalMap(inst, ops, ctx);
    case Opcode::kSelect: return EvalSelect(inst, ops);
    case Opcode::kClamp: return EvalClamp(inst, ops);
    default: break;
  }
  if (inst.opcode == Opcode::kReal || inst.opcode == Opcode::kImag ||
      inst.opcode == Opcode::kComplex || inst.opcode == Opcode::kStochasticConvert) {
    return Status(ErrorCode::kUnimplemented,
                  std::string(hlo::OpcodeName(inst.opcode)) + " %" + inst.name +
                      ": complex numbers and stochastic-convert are not evaluated yet",
                  inst.loc);
  }
  if (hlo::IsElementwiseUnary(inst.opcode)) return EvalUnary(inst, ops);
  if (hlo::IsElementwiseBinary(inst.opcode)) return EvalBinary(inst, ops);
  return Internal(std::string(hlo::OpcodeName(inst.opcode)) + " %" + inst.name +
                  " is not an elementwise op");
}

}  // namespace mk::interp
