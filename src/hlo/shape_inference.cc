// Shape inference for the elementwise, data-movement and control-flow ops, following XLA's
// shape_inference rules (no implicit broadcasting, exact operand shapes). Contractions, reductions
// and the indexing ops live in shape_inference_indexing.cc.
#include <algorithm>
#include <limits>

#include "hlo/shape_inference_internal.h"
#include "hlo/verifier.h"

namespace mk::hlo {
namespace shape_inference {

Status Err(const Instruction& inst, const std::string& message) {
  return InvalidArgument(std::string(OpcodeName(inst.opcode)) + " %" + inst.name + ": " + message,
                         inst.loc);
}

std::string DimsToString(const std::vector<int64_t>& dims) {
  std::string out = "{";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) out += ",";
    out += std::to_string(dims[i]);
  }
  return out + "}";
}

std::string ShapeText(const Shape& shape) { return shape.ToString(/*print_layout=*/false); }

Status ExpectOperandCount(const Instruction& inst, size_t count) {
  if (inst.operand_count() != count) {
    return Err(inst, "expects " + std::to_string(count) + " operand" + (count == 1 ? "" : "s") +
                         ", got " + std::to_string(inst.operand_count()));
  }
  return Status::Ok();
}

Status ExpectOperandCountAtLeast(const Instruction& inst, size_t count) {
  if (inst.operand_count() < count) {
    return Err(inst, "expects at least " + std::to_string(count) + " operand" +
                         (count == 1 ? "" : "s") + ", got " + std::to_string(inst.operand_count()));
  }
  return Status::Ok();
}

Result<const Shape*> ArrayOperand(const Instruction& inst, size_t i) {
  if (i >= inst.operands.size() || inst.operands[i] == nullptr) {
    return Err(inst, "operand " + std::to_string(i) + " is missing");
  }
  const Shape& s = inst.operands[i]->shape;
  if (!s.is_array()) {
    return Err(inst, "operand " + std::to_string(i) + " must be an array, got " + ShapeText(s));
  }
  return &s;
}

Status CheckDimList(const Instruction& inst, const std::vector<int64_t>& dims, int64_t rank,
                    const std::string& what, bool sorted) {
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0 || dims[i] >= rank) {
      return Err(inst, what + "=" + DimsToString(dims) + " has dimension " +
                           std::to_string(dims[i]) + " out of range for rank " +
                           std::to_string(rank));
    }
    for (size_t j = 0; j < i; ++j) {
      if (dims[j] == dims[i]) {
        return Err(inst, what + "=" + DimsToString(dims) + " repeats dimension " +
                             std::to_string(dims[i]));
      }
      if (sorted && dims[j] > dims[i]) {
        return Err(inst, what + "=" + DimsToString(dims) + " must be in increasing order");
      }
    }
  }
  return Status::Ok();
}

bool Contains(const std::vector<int64_t>& dims, int64_t d) {
  return std::find(dims.begin(), dims.end(), d) != dims.end();
}

Result<const Computation*> CalledComputation(const Instruction& inst, size_t i,
                                             const std::string& role) {
  if (i >= inst.called.size() || inst.called[i] == nullptr) {
    return Err(inst, "missing " + role + " computation");
  }
  return inst.called[i];
}

Result<Shape> CheckSignature(const Instruction& inst, const Computation& computation,
                             const std::vector<Shape>& params, const std::string& role) {
  const auto& actual = computation.parameters();
  if (actual.size() != params.size()) {
    return Err(inst, role + " computation %" + computation.name + " takes " +
                         std::to_string(actual.size()) + " parameters, expected " +
                         std::to_string(params.size()));
  }
  for (size_t i = 0; i < params.size(); ++i) {
    if (actual[i] == nullptr || !actual[i]->shape.SameAs(params[i])) {
      return Err(inst, role + " computation %" + computation.name + " parameter " +
                           std::to_string(i) + " has shape " +
                           (actual[i] ? ShapeText(actual[i]->shape) : std::string("<missing>")) +
                           ", expected " + ShapeText(params[i]));
    }
  }
  if (computation.root() == nullptr) {
    return Err(inst, role + " computation %" + computation.name + " has no root");
  }
  return computation.root()->shape;
}

Result<DType> ContractionDType(const Instruction& inst, DType lhs, DType rhs) {
  auto is_floaty = [](DType t) { return IsFloat(t) || IsComplex(t); };
  bool floats = is_floaty(lhs) && is_floaty(rhs);
  bool ints = IsInteger(lhs) && IsInteger(rhs);
  if (lhs != rhs && !floats && !ints) {
    return Err(inst, "operand element types " + std::string(DTypeName(lhs)) + " and " +
                         std::string(DTypeName(rhs)) + " cannot be combined");
  }
  const Shape& declared = inst.shape;
  if (!declared.is_array()) return lhs;
  DType want = declared.dtype();
  if (want == lhs) return want;
  if (is_floaty(lhs) && is_floaty(want)) return want;
  // Integer contractions may accumulate in a wider integer or produce floats, never narrower.
  if (IsInteger(lhs) && (is_floaty(want) || (IsInteger(want) && IntBitWidth(want) >= IntBitWidth(lhs)))) {
    return want;
  }
  return lhs;
}

Result<int64_t> WindowOutputSize(const Instruction& inst, int64_t base, const WindowDimension& w,
                                 size_t dim) {
  std::string where = "window dimension " + std::to_string(dim) + ": ";
  if (w.size <= 0) return Err(inst, where + "size must be positive, got " + std::to_string(w.size));
  if (w.stride <= 0) return Err(inst, where + "stride must be positive, got " + std::to_string(w.stride));
  if (w.lhs_dilation <= 0 || w.rhs_dilation <= 0) {
    return Err(inst, where + "dilations must be positive");
  }
  // 128-bit arithmetic: attributes are arbitrary int64 text, and overflow would be UB.
  using Wide = __int128;
  Wide dilated_base = base <= 0 ? 0 : (Wide(base) - 1) * w.lhs_dilation + 1;
  Wide padded = dilated_base + w.pad_low + w.pad_high;
  Wide dilated_window = Wide(w.size - 1) * w.rhs_dilation + 1;
  if (padded < 0) {
    return Err(inst, where + "padding makes the input size negative");
  }
  if (dilated_window > padded) return int64_t{0};
  Wide out = (padded - dilated_window) / w.stride + 1;
  if (out > std::numeric_limits<int64_t>::max()) return Err(inst, where + "output size overflows");
  return static_cast<int64_t>(out);
}

namespace {

DType ComplexComponent(DType t) { return t == DType::kC128 ? DType::kF64 : DType::kF32; }

std::string TypeName(DType t) { return std::string(DTypeName(t)); }

Result<Shape> InferUnary(const Instruction& inst) {
  MK_RETURN_IF_ERROR(ExpectOperandCount(inst, 1));
  MK_ASSIGN_OR_RETURN(const Shape* in, ArrayOperand(inst, 0));
  DType t = in->dtype();
  auto bad_type = [&]() { return Err(inst, "does not accept element type " + TypeName(t)); };
  switch (inst.opcode) {
    case Opcode::kIsFinite:
      if (!IsFloat(t)) return bad_type();
      return Shape(DType::kPred, in->dims());
    case Opcode::kNot:
      if (t != DType::kPred && !IsInteger(t)) return bad_type();
      return *in;
    case Opcode::kPopulationCount:
    case Opcode::kClz:
      if (!IsInteger(t)) return bad_type();
      return *in;
    case Opcode::kCeil:
    case Opcode::kFloor:
    case Opcode::kRoundNearestAfz:
    case Opcode::kRoundNearestEven:
      if (!IsFloat(t)) return bad_type();
      return *in;
    case Opcode::kAbs:
      if (t == DType::kPred) return bad_type();
      if (IsComplex(t)) return Shape(ComplexComponent(t), in->dims());
      return *in;
    case Opcode::kReal:
    case Opcode::kImag:
      if (IsComplex(t)) return Shape(ComplexComponent(t), in->dims());
      if (!IsFloat(t)) return bad_type();
      return *in;
    case Opcode::kNegate:
    case Opcode::kSign:
      if (t == DType::kPred) return bad_type();
      return *in;
    default:  // transcendental functions
      if (!IsFloat(t) && !IsComplex(t)) return bad_type();
      return *in;
  }
}

Result<Shape> InferBinary(const Instruction& inst) {
  MK_RETURN_IF_ERROR(ExpectOperandCount(inst, 2));
  MK_ASSIGN_OR_RETURN(const Shape* lhs, ArrayOperand(inst, 0));
  MK_ASSIGN_OR_RETURN(const Shape* rhs, ArrayOperand(inst, 1));
  if (!lhs->SameAs(*rhs)) {
    // XLA has no implicit broadcast in HLO: a mismatch here is always an error.
    return Err(inst, "operand shapes " + ShapeText(*lhs) + " and " + ShapeText(*rhs) + " differ");
  }
  DType t = lhs->dtype();
  auto bad_type = [&]() { return Err(inst, "does not accept element type " + TypeName(t)); };
  switch (inst.opcode) {
    case Opcode::kCompare:
      return Shape(DType::kPred, lhs->dims());
    case Opcode::kComplex:
      if (t != DType::kF32 && t != DType::kF64) return bad_type();
      return Shape(t == DType::kF64 ? DType::kC128 : DType::kC64, lhs->dims());
    case Opcode::kAnd:
    case Opcode::kOr:
    case Opcode::kXor:
      if (t != DType::kPred && !IsInteger(t)) return bad_type();
      return *lhs;
    case Opcode::kShiftLeft:
    case Opcode::kShiftRightArithmetic:
    case Opcode::kShiftRightLogical:
      if (!IsInteger(t)) return bad_type();
      return *lhs;
    case Opcode::kAtan2:
      if (!IsFloat(t) && !IsComplex(t)) return bad_type();
      return *lhs;
    case Opcode::kSubtract:
    case Opcode::kDivide:
    case Opcode::kRemainder:
    case Opcode::kPower:
      if (t == DType::kPred) return bad_type();
      return *lhs;
    default:  // add, multiply, maximum, minimum (also defined on pred)
      return *lhs;
  }
}

Result<Shape> InferSelect(const Instruction& inst) {
  MK_RETURN_IF_ERROR(ExpectOperandCount(inst, 3));
  MK_ASSIGN_OR_RETURN(const Shape* pred, ArrayOperand(inst, 0));
  MK_ASSIGN_OR_RETURN(const Shape* on_true, ArrayOperand(inst, 1));
  MK_ASSIGN_OR_RETURN(const Shape* on_false, ArrayOperand(inst, 2));
  if (pred->dtype() != DType::kPred) {
    return Err(inst, "predicate must be pred, got " + ShapeText(*pred));
  }
  if (!on_true->SameAs(*on_false)) {
    return Err(inst, "branch shapes " + ShapeText(*on_true) + " and " + ShapeText(*on_false) +
                         " differ");
  }
  if (pred->rank() != 0 && pred->dims() != on_true->dims()) {
    return Err(inst, "predicate shape " + ShapeText(*pred) + " must be scalar or match " +
                         ShapeText(*on_true));
  }
  return *on_true;
}

Result<Shape> InferClamp(const Instruction& inst) {
  MK_RETURN_IF_ERROR(ExpectOperandCount(inst, 3));
  MK_ASSIGN_OR_RETURN(const Shape* lo, ArrayOperand(inst, 0));
  MK_ASSIGN_OR_RETURN(const Shape* x, ArrayOperand(inst, 1));
  MK_ASSIGN_OR_RETURN(const Shape* hi, ArrayOperand(inst, 2));
  for (const Shape* bound : {lo, hi}) {
    if (bound->dtype() != x->dtype() || (bound->rank() != 0 && bound->dims() != x->dims())) {
      return Err(inst, "bound " + ShapeText(*bound) + " must be a scalar or the shape of operand " +
                           ShapeText(*x));
    }
  }
  return *x;
}

int64_t BitWidth(DType t) {
  if (t == DType::kS4 || t == DType::kU4) return 4;
  return DTypeByteSize(t) * 8;
}

Result<Shape> InferBitcastConvert(const Instruction& inst) {
  MK_RETURN_IF_ERROR(ExpectOperandCount(inst, 1));
  MK_ASSIGN_OR_RETURN(const Shape* in, ArrayOperand(inst, 0));
  if (!inst.shape.is_array()) return Err(inst, "result must be an array");
  DType to = inst.shape.dtype();
  int64_t from_bits = BitWidth(in->dtype()), to_bits = BitWidth(to);
  if ((in->dtype() == DType::kPred) != (to == DType::kPred)) {
    return Err(inst, "cannot bitcast between pred and " +
                         TypeName(to == DType::kPred ? in->dtype() : to));
  }
  std::vector<int64_t> dims = in->dims();
  if (from_bits > to_bits) {
    // A wide element becomes a trailing dimension of narrow ones.
    dims.push_back(from_bits / to_bits);
  } else if (from_bits < to_bits) {
    if (dims.empty() || dims.back() != to_bits / from_bits) {
      return Err(inst, "converting " + ShapeText(*in) + " to " + TypeName(to) +
                           " needs a last dimension of " + std::to_string(to_bits / from_bits));
    }
    dims.pop_back();
  }
  return Shape(to, dims);
}

Result<Shape> InferMap(const Instruction& inst) {
  MK_RETURN_IF_ERROR(ExpectOperandCountAtLeast(inst, 1));
  MK_ASSIGN_OR_RETURN(const Computation* fn, CalledComputation(inst, 0, "to_apply"));
  std::vector<Shape> params;
  MK_ASSIGN_OR_RETURN(const Shape* first, ArrayOperand(inst, 0));
  for (size_t i = 0; i < inst.operand_count(); ++i) {
    MK_ASSIGN_OR_RETURN(const Shape* s, ArrayOperand(inst, i));
    if (s->dims() != first->dims()) {
      return Err(inst, "operand shapes " + ShapeText(*first) + " and " + ShapeText(*s) + " differ");
    }
    params.push_back(Shape::Scalar(s->dtype()));
  }
  if (!inst.dimensions.empty()) {
    for (size_t i = 0; i < inst.dimensions.size(); ++i) {
      if (inst.dimensions.size() != first->dims().size() ||
          inst.dimensions[i] != static_cast<int64_t>(i)) {
        return Err(inst, "dimensions=" + DimsToString(inst.dimensions) +
                             " must list every dimension in order");
      }
    }
  }
  MK_ASSIGN_OR_RETURN(Shape root, CheckSignature(inst, *fn, params, "to_apply"));
  if (!root.is_array() || root.rank() != 0) {
    return Err(inst, "to_apply must return a scalar, returns " + ShapeText(root));
  }
  return Shape(root.dtype(), first->dims());
}

Result<Shape> InferBroadcast(const Instruction& inst) {
  MK_RETURN_IF_ERROR(ExpectOperandCount(inst, 1));
  MK_ASSIGN_OR_RETURN(const Shape* in, ArrayOperand(inst, 0));
  // The result dimensions are not derivable from the operand: they come from the declaration.
  if (!inst.shape.is_array()) return Err(inst, "result must be an array");
  const Shape& out = inst.shape;
  if (static_cast<int64_t>(inst.dimensions.size()) != in->rank()) {
    return Err(inst, "dimensions=" + DimsToString(inst.dimensions) + " must name " +
                         std::to_string(in->rank()) + " result dimensions (one per operand dim)");
  }
  MK_RETURN_IF_ERROR(CheckDimList(inst, inst.dimensions, out.rank(), "dimensions", true));
  for (int64_t i = 0; i < in->rank(); ++i) {
    if (in->dim(i) != out.dim(inst.dimensions[static_cast<size_t>(i)])) {
      return Err(inst, "operand dimension " + std::to_string(i) + " (size " +
                           std::to_string(in->dim(i)) + ") does not match result dimension " +
                           std::to_string(inst.dimensions[static_cast<size_t>(i)]) + " (size " +
                           std::to_string(out.dim(inst.dimensions[static_cast<size_t>(i)])) + ")");
    }
  }
  return Shape(in->dtype(), out.dims());
}

// Product of dims, or -1 when it does not fit in int64.
int64_t CheckedElementCount(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return -1;
  }
  return n;
}

Result<Shape> InferReshape(const Instruction& inst) {
  MK_RETURN_IF_ERROR(ExpectOperandCount(inst, 1));
  MK_ASSIGN_OR_RETURN(const Shape* in, ArrayOperand(inst, 0));
  if (!inst.shape.is_array()) return Err(inst, "result must be an array");
  int64_t from = CheckedElementCount(in->dims()), to = CheckedElementCount(inst.shape.dims());
  if (from < 0 || to < 0 || from != to) {
    return Err(inst, "cannot reshape " + ShapeText(*in) + " to " + ShapeText(inst.shape) +
                         ": element counts differ");
  }
  return Shape(in->dtype(), inst.shape.dims());
}

Result<Shape> InferBitcast(const Instruction& inst) {
  MK_RETURN_IF_ERROR(ExpectOperandCount(inst, 1));
  MK_ASSIGN_OR_RETURN(const Shape* in, ArrayOperand(inst, 0));
  if (!inst.shape.is_array()) return Err(inst, "result must be an array");
  int64_t from = CheckedElementCount(in->dims()), to = CheckedElementCount(inst.shape.dims());
  __int128 from_bytes = __int128(from) * DTypeByteSize(in->dtype());
  __int128 to_bytes = __int128(to) * DTypeByteSize(inst.shape.dtype());
  if (from < 0 || to < 0 || from_bytes != to_bytes) {
    return Err(inst, "cannot bitcast " + ShapeText(*in) + " to " + ShapeText(inst.shape) +
                         ": byte sizes differ");
  }
  return Shape(inst.shape.dtype(), inst.shape.dims());
}

Result<Shape> InferTranspose(const Instruction& inst) {
  MK_RETURN_IF_ERROR(ExpectOperandCount(inst, 1));
  MK_ASSIGN_OR_RETURN(const Shape* in, ArrayOperand(inst, 0));
  if (static_cast<int64_t>(inst.dimensions.size()) != in->rank()) {
    return Err(inst, "dimensions=" + DimsToString(inst.dimensions) +
                         " is not a permutation of rank " + std::to_string(in->rank()));
  }
  MK_RETURN_IF_ERROR(CheckDimList(inst, inst.dimensions, in->rank(), "dimensions", false));
  std::vector<int64_t> dims;
  for (int64_t d : inst.dimensions) dims.push_back(in->dim(d));
  return Shape(in->dtype(), dims);
}

Result<Shape> InferSlice(const Instruction& inst) {
  MK_RETURN_IF_ERROR(ExpectOperandCount(inst, 1));
  MK_ASSIGN_OR_RETURN(const Shape* in, ArrayOperand(inst, 0));
  if (static_cast<int64_t>(inst.slice.size()) != in->rank()) {
    return Err(inst, "slice has " + std::to_string(inst.slice.size()) +
                         " dimensions, operand rank is " + std::to_string(in->rank()));
  }
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < in->rank(); ++i) {
    const SliceDimension& s = inst.slice[static_cast<size_t>(i)];
    if (s.start < 0 || s.start > s.limit || s.limit > in->dim(i) || s.stride < 1) {
      return Err(inst, "slice dimension " + std::to_string(i) + " [" + std::to_string(s.start) +
                           ":" + std::to_string(s.limit) + ":" + std::to_string(s.stride) +
                           "] is invalid for size " + std::to_string(in->dim(i)));
    }
    int64_t span = s.limit - s.start;  // both within [0, dim]: cannot overflow
    dims.push_back(span / s.stride + (span % s.stride != 0 ? 1 : 0));
  }
  return Shape(in->dtype(), dims);
}

// The start-index operands of dynamic-slice / dynamic-update-slice from `first` on: one integer
// scalar per dimension (or, in the old form, a single index vector).
Status CheckStartIndices(const Instruction& inst, size_t first, int64_t rank) {
  size_t n = inst.operand_count() - first;
  if (n == 1 && rank != 1) {
    MK_ASSIGN_OR_RETURN(const Shape* v, ArrayOperand(inst, first));
    if (v->rank() == 1 && v->dim(0) == rank && IsInteger(v->dtype())) return Status::Ok();
  }
  if (static_cast<int64_t>(n) != rank) {
    return Err(inst, "needs " + std::to_string(rank) + " start indices, got " + std::to_string(n));
  }
  for (size_t i = first; i < inst.operand_count(); ++i) {
    MK_ASSIGN_OR_RETURN(const Shape* s, ArrayOperand(inst, i));
    if (s->rank() != 0 || !IsInteger(s->dtype())) {
      return Err(inst, "start index operand " + std::to_string(i) +
                           " must be an integer scalar, got " + ShapeText(*s));
    }
  }
  return Status::Ok();
}

Result<Shape> InferDynamicSlice(const Instruction& inst) {
  MK_RETURN_IF_ERROR(ExpectOperandCountAtLeast(inst, 1));
  MK_ASSIGN_OR_RETURN(const Shape* in, ArrayOperand(inst, 0));
  MK_RETURN_IF_ERROR(CheckStartIndices(inst, 1, in->rank()));
  const auto& sizes = inst.dynamic_slice_sizes;
  if (static_cast<int64_t>(sizes.size()) != in->rank()) {
    return Err(inst, "dynamic_slice_sizes=" + DimsToString(sizes) + " must have " +
                         std::to_string(in->rank()) + " entries");
  }
  for (int64_t i = 0; i < in->rank(); ++i) {
    if (sizes[static_cast<size_t>(i)] < 0 || sizes[static_cast<size_t>(i)] > in->dim(i)) {
      return Err(inst, "dynamic_slice_sizes=" + DimsToString(sizes) + " exceeds operand " +
                           ShapeText(*in) + " in dimension " + std::to_string(i));
    }
  }
  return Shape(in->dtype(), sizes);
}

Result<Shape> InferDynamicUpdateSlice(const Instruction& inst) {
  MK_RETURN_IF_ERROR(ExpectOperandCountAtLeast(inst, 2));
  MK_ASSIGN_OR_RETURN(const Shape* in, ArrayOperand(inst, 0));
  MK_ASSIGN_OR_RETURN(const Shape* update, ArrayOperand(inst, 1));
  MK_RETURN_IF_ERROR(CheckStartIndices(inst, 2, in->rank()));
  if (update->dtype() != in->dtype() || update->rank() != in->rank()) {
    return Err(inst, "update " + ShapeText(*update) + " does not fit operand " + ShapeText(*in));
  }
  for (int64_t i = 0; i < in->rank(); ++i) {
    if (update->dim(i) > in->dim(i)) {
      return Err(inst, "update " + ShapeText(*update) + " is larger than operand " +
                           ShapeText(*in) + " in dimension " + std::to_string(i));
    }
  }
  return *in;
}

Result<Shape> InferConcatenate(const Instruction& inst) {
  MK_RETURN_IF_ERROR(ExpectOperandCountAtLeast(inst, 1));
  MK_ASSIGN_OR_RETURN(const Shape* first, ArrayOperand(inst, 0));
  if (inst.dimensions.size() != 1) {
    return Err(inst, "needs exactly one concatenation dimension, got dimensions=" +
                         DimsToString(inst.dimensions));
  }
  int64_t d = inst.dimensions[0];
  MK_RETURN_IF_ERROR(CheckDimList(inst, inst.dimensions, first->rank(), "dimensions", false));
  std::vector<int64_t> dims = first->dims();
  for (size_t i = 1; i < inst.operand_count(); ++i) {
    MK_ASSIGN_OR_RETURN(const Shape* s, ArrayOperand(inst, i));
    bool compatible = s->dtype() == first->dtype() && s->rank() == first->rank();
    for (int64_t j = 0; compatible && j < s->rank(); ++j) {
      if (j != d && s->dim(j) != first->dim(j)) compatible = false;
    }
    if (!compatible) {
      return Err(inst, "operand " + std::to_string(i) + " " + ShapeText(*s) +
                           " cannot be concatenated with " + ShapeText(*first) +
                           " along dimension " + std::to_string(d));
    }
    if (__builtin_add_overflow(dims[static_cast<size_t>(d)], s->dim(d),
                               &dims[static_cast<size_t>(d)])) {
      return Err(inst, "result size overflows");
    }
  }
  return Shape(first->dtype(), dims);
}

Result<Shape> InferPad(const Instruction& inst) {
  MK_RETURN_IF_ERROR(ExpectOperandCount(inst, 2));
  MK_ASSIGN_OR_RETURN(const Shape* in, ArrayOperand(inst, 0));
  MK_ASSIGN_OR_RETURN(const Shape* value, ArrayOperand(inst, 1));
  if (value->rank() != 0 || value->dtype() != in->dtype()) {
    return Err(inst, "padding value must be a " + TypeName(in->dtype()) + " scalar, got " +
                         ShapeText(*value));
  }
  if (static_cast<int64_t>(inst.padding.size()) != in->rank()) {
    return Err(inst, "padding has " + std::to_string(inst.padding.size()) +
                         " dimensions, operand rank is " + std::to_string(in->rank()));
  }
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < in->rank(); ++i) {
    const PaddingDimension& p = inst.padding[static_cast<size_t>(i)];
    if (p.interior < 0) {
      return Err(inst, "interior padding of dimension " + std::to_string(i) + " is negative");
    }
    __int128 n = in->dim(i);
    __int128 size = n + p.low + p.high + (n > 0 ? (n - 1) * p.interior : 0);
    if (size < 0 || size > std::numeric_limits<int64_t>::max()) {
      return Err(inst, "padding " + std::to_string(p.low) + "_" + std::to_string(p.high) + "_" +
                           std::to_string(p.interior) + " gives dimension " + std::to_string(i) +
                           " of size " + std::to_string(in->dim(i)) + " an invalid size");
    }
    dims.push_back(static_cast<int64_t>(size));
  }
  return Shape(in->dtype(), dims);
}

Result<Shape> InferSort(const Instruction& inst) {
  MK_RETURN_IF_ERROR(ExpectOperandCountAtLeast(inst, 1));
  MK_ASSIGN_OR_RETURN(const Shape* first, ArrayOperand(inst, 0));
  std::vector<Shape> results, params;
  for (size_t i = 0; i < inst.operand_count(); ++i) {
    MK_ASSIGN_OR_RETURN(const Shape* s, ArrayOperand(inst, i));
    if (s->dims() != first->dims()) {
      return Err(inst, "operand shapes " + ShapeText(*first) + " and " + ShapeText(*s) +
                           " have different dimensions");
    }
    results.push_back(*s);
    params.push_back(Shape::Scalar(s->dtype()));
    params.push_back(Shape::Scalar(s->dtype()));
  }
  if (inst.dimensions.size() != 1) {
    return Err(inst, "needs exactly one sort dimension, got dimensions=" +
                         DimsToString(inst.dimensions));
  }
  MK_RETURN_IF_ERROR(CheckDimList(inst, inst.dimensions, first->rank(), "dimensions", false));
  MK_ASSIGN_OR_RETURN(const Computation* cmp, CalledComputation(inst, 0, "to_apply"));
  MK_ASSIGN_OR_RETURN(Shape root, CheckSignature(inst, *cmp, params, "comparator"));
  if (!root.SameAs(Shape::Scalar(DType::kPred))) {
    return Err(inst, "comparator must return pred[], returns " + ShapeText(root));
  }
  if (results.size() == 1) return results[0];
  return Shape::Tuple(results);
}

Result<Shape> InferWhile(const Instruction& inst) {
  MK_RETURN_IF_ERROR(ExpectOperandCount(inst, 1));
  if (!inst.operands[0]) return Err(inst, "operand 0 is missing");
  const Shape& state = inst.operands[0]->shape;
  MK_ASSIGN_OR_RETURN(const Computation* cond, CalledComputation(inst, 0, "condition"));
  MK_ASSIGN_OR_RETURN(const Computation* body, CalledComputation(inst, 1, "body"));
  MK_ASSIGN_OR_RETURN(Shape cond_root, CheckSignature(inst, *cond, {state}, "condition"));
  if (!cond_root.SameAs(Shape::Scalar(DType::kPred))) {
    return Err(inst, "condition must return pred[], returns " + ShapeText(cond_root));
  }
  MK_ASSIGN_OR_RETURN(Shape body_root, CheckSignature(inst, *body, {state}, "body"));
  if (!body_root.SameAs(state)) {
    return Err(inst, "body returns " + ShapeText(body_root) + " but the loop state is " +
                         ShapeText(state));
  }
  return state;
}

Result<Shape> InferConditional(const Instruction& inst) {
  MK_RETURN_IF_ERROR(ExpectOperandCountAtLeast(inst, 2));
  MK_ASSIGN_OR_RETURN(const Shape* selector, ArrayOperand(inst, 0));
  size_t branches = inst.called.size();
  if (selector->SameAs(Shape::Scalar(DType::kPred))) {
    if (branches != 2) return Err(inst, "a pred selector needs 2 branches");
  } else if (!selector->SameAs(Shape::Scalar(DType::kS32))) {
    return Err(inst, "selector must be pred[] or s32[], got " + ShapeText(*selector));
  } else if (branches < 1) {
    return Err(inst, "needs at least one branch computation");
  }
  if (inst.operand_count() != branches + 1) {
    return Err(inst, "has " + std::to_string(branches) + " branches but " +
                         std::to_string(inst.operand_count() - 1) + " branch operands");
  }
  Shape result;
  for (size_t b = 0; b < branches; ++b) {
    std::string role = "branch " + std::to_string(b);
    MK_ASSIGN_OR_RETURN(const Computation* branch, CalledComputation(inst, b, role));
    if (!inst.operands[b + 1]) return Err(inst, "operand " + std::to_string(b + 1) + " is missing");
    MK_ASSIGN_OR_RETURN(Shape root,
                        CheckSignature(inst, *branch, {inst.operands[b + 1]->shape}, role));
    if (b == 0) {
      result = root;
    } else if (!root.SameAs(result)) {
      return Err(inst, role + " returns " + ShapeText(root) + " but branch 0 returns " +
                           ShapeText(result));
    }
  }
  return result;
}

// call and fusion: the computation's signature is the instruction's.
Result<Shape> InferCall(const Instruction& inst) {
  MK_ASSIGN_OR_RETURN(const Computation* fn, CalledComputation(inst, 0, "callee"));
  std::vector<Shape> params;
  for (const Instruction* op : inst.operands) params.push_back(op->shape);
  return CheckSignature(inst, *fn, params, "callee");
}

Result<Shape> InferGetTupleElement(const Instruction& inst) {
  MK_RETURN_IF_ERROR(ExpectOperandCount(inst, 1));
  const Shape& t = inst.operands[0]->shape;
  if (!t.is_tuple()) return Err(inst, "operand must be a tuple, got " + ShapeText(t));
  if (inst.tuple_index < 0 || inst.tuple_index >= static_cast<int64_t>(t.tuple_shapes().size())) {
    return Err(inst, "index " + std::to_string(inst.tuple_index) + " is out of range for " +
                         ShapeText(t));
  }
  return t.tuple_shape(inst.tuple_index);
}

Result<Shape> InferTopK(const Instruction& inst) {
  MK_RETURN_IF_ERROR(ExpectOperandCount(inst, 1));
  MK_ASSIGN_OR_RETURN(const Shape* in, ArrayOperand(inst, 0));
  if (in->rank() < 1 || inst.k < 0 || inst.k > in->dims().back()) {
    return Err(inst, "k=" + std::to_string(inst.k) + " is invalid for " + ShapeText(*in));
  }
  std::vector<int64_t> dims = in->dims();
  dims.back() = inst.k;
  return Shape::Tuple({Shape(in->dtype(), dims), Shape(DType::kS32, dims)});
}

Result<Shape> InferRngBitGenerator(const Instruction& inst) {
  MK_RETURN_IF_ERROR(ExpectOperandCount(inst, 1));
  MK_ASSIGN_OR_RETURN(const Shape* state, ArrayOperand(inst, 0));
  const Shape& out = inst.shape;
  if (!out.is_tuple() || out.tuple_shapes().size() != 2 || !out.tuple_shape(0).SameAs(*state) ||
      !out.tuple_shape(1).is_array()) {
    return Err(inst, "result must be a tuple (" + ShapeText(*state) + ", values), declared " +
                         ShapeText(out));
  }
  return out;
}

Result<Shape> InferRng(const Instruction& inst) {
  MK_RETURN_IF_ERROR(ExpectOperandCount(inst, 2));
  MK_ASSIGN_OR_RETURN(const Shape* a, ArrayOperand(inst, 0));
  MK_ASSIGN_OR_RETURN(const Shape* b, ArrayOperand(inst, 1));
  if (a->rank() != 0 || !a->SameAs(*b)) {
    return Err(inst, "parameters must be scalars of one type, got " + ShapeText(*a) + " and " +
                         ShapeText(*b));
  }
  if (!inst.shape.is_array()) return Err(inst, "result must be an array");
  return Shape(a->dtype(), inst.shape.dims());
}

}  // namespace
}  // namespace shape_inference

Result<Shape> InferShape(const Instruction& inst) {
  using namespace shape_inference;  // NOLINT: this file's own helpers
  for (size_t i = 0; i < inst.operands.size(); ++i) {
    if (inst.operands[i] == nullptr) return Err(inst, "operand " + std::to_string(i) + " is missing");
  }
  const Opcode op = inst.opcode;
  if (IsElementwiseUnary(op)) return InferUnary(inst);
  if (IsElementwiseBinary(op)) return InferBinary(inst);
  switch (op) {
    case Opcode::kParameter:
      MK_RETURN_IF_ERROR(ExpectOperandCount(inst, 0));
      if (inst.parameter_number < 0) return Err(inst, "parameter number is negative");
      return inst.shape;
    case Opcode::kConstant:
      MK_RETURN_IF_ERROR(ExpectOperandCount(inst, 0));
      return inst.literal ? inst.literal->shape() : inst.shape;
    case Opcode::kIota:
      MK_RETURN_IF_ERROR(ExpectOperandCount(inst, 0));
      if (!inst.shape.is_array() || inst.iota_dimension < 0 ||
          inst.iota_dimension >= inst.shape.rank()) {
        return Err(inst, "iota_dimension=" + std::to_string(inst.iota_dimension) +
                             " is out of range for " + ShapeText(inst.shape));
      }
      return inst.shape;
    case Opcode::kSelect: return InferSelect(inst);
    case Opcode::kClamp: return InferClamp(inst);
    case Opcode::kConvert: {
      MK_RETURN_IF_ERROR(ExpectOperandCount(inst, 1));
      MK_ASSIGN_OR_RETURN(const Shape* in, ArrayOperand(inst, 0));
      if (!inst.shape.is_array()) return Err(inst, "result must be an array");
      return Shape(inst.shape.dtype(), in->dims());
    }
    case Opcode::kStochasticConvert: {
      MK_RETURN_IF_ERROR(ExpectOperandCount(inst, 2));
      MK_ASSIGN_OR_RETURN(const Shape* in, ArrayOperand(inst, 0));
      MK_ASSIGN_OR_RETURN(const Shape* random, ArrayOperand(inst, 1));
      if (random->dims() != in->dims() || !IsUnsignedInt(random->dtype())) {
        return Err(inst, "random bits " + ShapeText(*random) + " must be unsigned with dims of " +
                             ShapeText(*in));
      }
      if (!inst.shape.is_array()) return Err(inst, "result must be an array");
      return Shape(inst.shape.dtype(), in->dims());
    }
    case Opcode::kBitcastConvert: return InferBitcastConvert(inst);
    case Opcode::kReducePrecision: {
      MK_RETURN_IF_ERROR(ExpectOperandCount(inst, 1));
      MK_ASSIGN_OR_RETURN(const Shape* in, ArrayOperand(inst, 0));
      if (!IsFloat(in->dtype())) return Err(inst, "operand must be floating point");
      if (inst.exponent_bits < 1 || inst.mantissa_bits < 0) {
        return Err(inst, "needs exponent_bits >= 1 and mantissa_bits >= 0");
      }
      return *in;
    }
    case Opcode::kMap: return InferMap(inst);
    case Opcode::kReshape: return InferReshape(inst);
    case Opcode::kBitcast: return InferBitcast(inst);
    case Opcode::kBroadcast: return InferBroadcast(inst);
    case Opcode::kTranspose: return InferTranspose(inst);
    case Opcode::kCopy:
    case Opcode::kDomain:
      MK_RETURN_IF_ERROR(ExpectOperandCount(inst, 1));
      return inst.operands[0]->shape;
    case Opcode::kOptimizationBarrier:
      MK_RETURN_IF_ERROR(ExpectOperandCount(inst, 1));
      return inst.operands[0]->shape;
    case Opcode::kSlice: return InferSlice(inst);
    case Opcode::kDynamicSlice: return InferDynamicSlice(inst);
    case Opcode::kDynamicUpdateSlice: return InferDynamicUpdateSlice(inst);
    case Opcode::kConcatenate: return InferConcatenate(inst);
    case Opcode::kPad: return InferPad(inst);
    case Opcode::kReverse: {
      MK_RETURN_IF_ERROR(ExpectOperandCount(inst, 1));
      MK_ASSIGN_OR_RETURN(const Shape* in, ArrayOperand(inst, 0));
      MK_RETURN_IF_ERROR(CheckDimList(inst, inst.dimensions, in->rank(), "dimensions", false));
      return *in;
    }
    case Opcode::kDot: return InferDot(inst);
    case Opcode::kConvolution: return InferConvolution(inst);
    case Opcode::kReduce: return InferReduce(inst);
    case Opcode::kReduceWindow: return InferReduceWindow(inst);
    case Opcode::kSelectAndScatter: return InferSelectAndScatter(inst);
    case Opcode::kGather: return InferGather(inst);
    case Opcode::kScatter: return InferScatter(inst);
    case Opcode::kSort: return InferSort(inst);
    case Opcode::kWhile: return InferWhile(inst);
    case Opcode::kConditional: return InferConditional(inst);
    case Opcode::kCall:
    case Opcode::kFusion:
      return InferCall(inst);
    case Opcode::kTuple: {
      std::vector<Shape> elements;
      for (const Instruction* operand : inst.operands) elements.push_back(operand->shape);
      return Shape::Tuple(std::move(elements));
    }
    case Opcode::kGetTupleElement: return InferGetTupleElement(inst);
    case Opcode::kTopK: return InferTopK(inst);
    case Opcode::kRng: return InferRng(inst);
    case Opcode::kRngBitGenerator: return InferRngBitGenerator(inst);
    case Opcode::kAfterAll: return Shape(DType::kToken, {});
    case Opcode::kPartitionId:
    case Opcode::kReplicaId:
      MK_RETURN_IF_ERROR(ExpectOperandCount(inst, 0));
      return Shape::Scalar(DType::kU32);
    case Opcode::kGetDimensionSize:
      MK_RETURN_IF_ERROR(ExpectOperandCount(inst, 1));
      return Shape::Scalar(DType::kS32);
    default:
      // custom-call, collectives, infeed/outfeed, batch-norm, fft, ...: their result is whatever
      // the producer declared; there is nothing in the operands that contradicts it.
      return inst.shape;
  }
}

}  // namespace mk::hlo
