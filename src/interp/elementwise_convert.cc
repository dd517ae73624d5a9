// The type-changing elementwise ops: convert, bitcast-convert, reduce-precision.
#include "interp/elementwise_convert.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "interp/elementwise_scalar.h"

namespace mk::interp {
namespace {

using hlo::DType;
using hlo::Instruction;
using hlo::Literal;

Status CheckSingleArrayOperand(const Instruction& inst, const Operands& ops) {
  if (ops.size() != 1 || ops[0] == nullptr || !ops[0]->shape().is_array()) {
    return OpError(inst, "expects one array operand");
  }
  if (!inst.shape.is_array()) return OpError(inst, "result must be an array");
  return Status::Ok();
}

// XLA's reduce-precision on the raw bits of a float with `src_exp` exponent and `src_mant`
// mantissa bits: round the mantissa to `mant` bits (RNE), then values whose exponent does not fit
// `exp` bits overflow to +-inf or flush to +-0 (reduced-type subnormals flush too). NaN is kept.
uint64_t ReducePrecisionBits(uint64_t x, int nbits, int src_exp, int src_mant, int exp, int mant) {
  const uint64_t all = nbits == 64 ? ~uint64_t{0} : (uint64_t{1} << nbits) - 1;
  if (mant < src_mant) {
    const int drop = src_mant - mant;
    const uint64_t last_kept = uint64_t{1} << drop;
    const uint64_t base_bias = (last_kept >> 1) - 1;
    const uint64_t kept_lsb = (x & last_kept) >> drop;
    x = (x + kept_lsb + base_bias) & ~(last_kept - 1);
  }
  if (exp < src_exp) {
    const uint64_t sign_mask = uint64_t{1} << (nbits - 1);
    const uint64_t exp_mask = ((uint64_t{1} << src_exp) - 1) << src_mant;
    const uint64_t bias = (uint64_t{1} << (src_exp - 1)) - 1;
    const uint64_t reduced_bias = (uint64_t{1} << (exp - 1)) - 1;
    const uint64_t max_exp = bias + reduced_bias;
    const uint64_t min_exp = bias - reduced_bias;
    const uint64_t x_exp = x & exp_mask;
    const uint64_t signed_zero = x & sign_mask;
    if (x_exp > (max_exp << src_mant)) {
      x = signed_zero | exp_mask;
    } else if (x_exp <= (min_exp << src_mant)) {
      x = signed_zero;
    }
  }
  return x & all;
}

}  // namespace

Result<Literal> EvalConvert(const Instruction& inst, const Operands& ops) {
  MK_RETURN_IF_ERROR(CheckSingleArrayOperand(inst, ops));
  const Literal& in = *ops[0];
  if (in.num_elements() != inst.shape.num_elements()) {
    return OpError(inst, "operand " + in.shape().ToString(false) + " and result " +
                             inst.shape.ToString(false) + " differ in dimensions");
  }
  Literal out(inst.shape);
  const int64_t n = out.num_elements();
  MK_RETURN_IF_ERROR(hlo::DispatchDType(in.dtype(), [&](auto from) -> Status {
    return hlo::DispatchDType(out.dtype(), [&](auto to) -> Status {
      using From = typename decltype(from)::type;
      using To = typename decltype(to)::type;
      const From* a = in.data<From>();
      To* r = out.data<To>();
      for (int64_t i = 0; i < n; ++i) {
        r[i] = scalar::Convert<decltype(from)::kDType, decltype(to)::kDType>(a[i]);
      }
      return Status::Ok();
    });
  }));
  return out;
}

Result<Literal> EvalBitcastConvert(const Instruction& inst, const Operands& ops) {
  MK_RETURN_IF_ERROR(CheckSingleArrayOperand(inst, ops));
  const Literal& in = *ops[0];
  const int64_t in_size = hlo::DTypeByteSize(in.dtype());
  const int64_t out_size = hlo::DTypeByteSize(inst.shape.dtype());
  if (in_size == 0 || out_size == 0) return OpError(inst, "element types have no storage");
  // The narrower side carries one extra, minor dimension of size wide/narrow.
  std::vector<int64_t> expected = in.shape().dims();
  if (out_size < in_size) {
    if (in_size % out_size != 0) return OpError(inst, "element sizes are not multiples");
    expected.push_back(in_size / out_size);
  } else if (out_size > in_size) {
    if (out_size % in_size != 0 || expected.empty() || expected.back() != out_size / in_size) {
      return OpError(inst, "operand's last dimension must be " +
                               std::to_string(out_size / in_size) + " to widen the elements");
    }
    expected.pop_back();
  }
  if (expected != inst.shape.dims()) {
    return OpError(inst, "cannot bitcast " + in.shape().ToString(false) + " to " +
                             inst.shape.ToString(false));
  }
  Literal out(inst.shape);
  if (out.raw_size() != in.raw_size()) return OpError(inst, "byte sizes differ");
  // Row-major byte order is the order of the narrow elements (XLA on a little-endian host).
  if (out.raw_size() > 0) std::memcpy(out.raw(), in.raw(), out.raw_size());
  return out;
}

Result<Literal> EvalReducePrecision(const Instruction& inst, const Operands& ops) {
  MK_RETURN_IF_ERROR(CheckSingleArrayOperand(inst, ops));
  const Literal& in = *ops[0];
  if (in.dtype() != inst.shape.dtype() || in.num_elements() != inst.shape.num_elements()) {
    return OpError(inst, "result must have the operand's shape");
  }
  int src_exp = 0, src_mant = 0;
  switch (in.dtype()) {
    case DType::kF16: src_exp = 5; src_mant = 10; break;
    case DType::kBF16: src_exp = 8; src_mant = 7; break;
    case DType::kF32: src_exp = 8; src_mant = 23; break;
    case DType::kF64: src_exp = 11; src_mant = 52; break;
    default:
      return OpError(inst, "operand must be floating point, got " +
                               std::string(hlo::DTypeName(in.dtype())));
  }
  if (inst.exponent_bits < 1 || inst.mantissa_bits < 0) {
    return OpError(inst, "needs exponent_bits >= 1 and mantissa_bits >= 0");
  }
  // Counts at or above the source type's leave that part unchanged; clamping keeps shifts valid.
  const int exp = static_cast<int>(std::min<int64_t>(inst.exponent_bits, src_exp));
  const int mant = static_cast<int>(std::min<int64_t>(inst.mantissa_bits, src_mant));
  Literal out(inst.shape);
  const int64_t n = out.num_elements();
  const size_t bytes = static_cast<size_t>(hlo::DTypeByteSize(in.dtype()));
  const int nbits = static_cast<int>(bytes * 8);
  for (int64_t i = 0; i < n; ++i) {
    const size_t at = static_cast<size_t>(i) * bytes;
    uint64_t x = 0;
    std::memcpy(&x, in.raw() + at, bytes);  // little-endian: the low bytes of x
    const uint64_t exp_mask = ((uint64_t{1} << src_exp) - 1) << src_mant;
    const uint64_t mant_mask = (uint64_t{1} << src_mant) - 1;
    const bool is_nan = (x & exp_mask) == exp_mask && (x & mant_mask) != 0;
    uint64_t y = is_nan ? x : ReducePrecisionBits(x, nbits, src_exp, src_mant, exp, mant);
    std::memcpy(out.raw() + at, &y, bytes);
  }
  return out;
}

}  // namespace mk::interp
