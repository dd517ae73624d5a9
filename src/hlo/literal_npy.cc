#include "hlo/literal_npy.h"

#include <cmath>
#include <cstring>

namespace mk::hlo {
namespace {

using npy::NpyType;

// Rounds `v` to float with round-to-odd: truncate toward zero, then set the last mantissa bit if
// anything was lost. A second RNE rounding to a type with at least two fewer mantissa bits
// (bf16, f16) then gives exactly the RNE rounding of the original double.
float DoubleToFloatRoundToOdd(double v) {
  float f = static_cast<float>(v);
  if (std::isnan(v) || static_cast<double>(f) == v) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(v)) f = std::nextafter(f, 0.0f);
  return BitsToFloat(FloatBits(f) | 1u);  // an infinity cannot occur here: truncation is finite
}

template <typename T>
T LoadAt(const std::vector<uint8_t>& bytes, int64_t i) {
  T v;
  std::memcpy(&v, bytes.data() + static_cast<size_t>(i) * sizeof(T), sizeof(T));
  return v;
}

template <typename T>
void StoreAt(Literal& lit, int64_t i, T v) {
  std::memcpy(lit.raw() + static_cast<size_t>(i) * sizeof(T), &v, sizeof(T));
}

// Element i of a float .npy array, widened exactly to double.
double NpyFloatAt(const npy::NpyArray& a, int64_t i) {
  switch (a.type) {
    case NpyType::kF2: return F16ToFloat(LoadAt<uint16_t>(a.data, i));
    case NpyType::kF4: return LoadAt<float>(a.data, i);
    default: return LoadAt<double>(a.data, i);
  }
}

bool IsNpyFloat(NpyType t) { return t == NpyType::kF2 || t == NpyType::kF4 || t == NpyType::kF8; }

std::string NpyTypeText(NpyType t) {
  return std::string(npy::NpyTypeName(t)) + " ('" + std::string(npy::NpyTypeDescr(t)) + "')";
}

}  // namespace

uint16_t DoubleToBf16(double v) { return FloatToBf16(DoubleToFloatRoundToOdd(v)); }
uint16_t DoubleToF16(double v) { return FloatToF16(DoubleToFloatRoundToOdd(v)); }

Result<NpyType> NpyTypeFor(DType dtype) {
  switch (dtype) {
    case DType::kPred: return NpyType::kB1;
    case DType::kS8: return NpyType::kI1;
    case DType::kS16: return NpyType::kI2;
    case DType::kS32: return NpyType::kI4;
    case DType::kS64: return NpyType::kI8;
    case DType::kU8: return NpyType::kU1;
    case DType::kU16: return NpyType::kU2;
    case DType::kU32: return NpyType::kU4;
    case DType::kU64: return NpyType::kU8;
    case DType::kF16:
    case DType::kBF16:
    case DType::kF32:
    case DType::kF64: return NpyType::kF4;
    default:
      return Unimplemented("element type " + std::string(DTypeName(dtype)) +
                           " cannot be exchanged as .npy yet");
  }
}

Result<npy::NpyArray> LiteralToNpy(const Literal& literal) {
  const Shape& shape = literal.shape();
  if (!shape.is_array()) {
    return Unimplemented("a " + shape.ToString(false) + " value cannot be written as one .npy file");
  }
  MK_ASSIGN_OR_RETURN(NpyType type, NpyTypeFor(shape.dtype()));
  npy::NpyArray out;
  out.type = type;
  out.shape = shape.dims();
  int64_t n = literal.num_elements();
  if (!IsFloat(shape.dtype())) {
    // Same element layout on both sides: pred is one 0/1 byte like NumPy's bool.
    out.data.assign(literal.raw(), literal.raw() + literal.raw_size());
    return out;
  }
  out.data.resize(static_cast<size_t>(n) * sizeof(float));
  for (int64_t i = 0; i < n; ++i) {
    // bf16/f16 -> f32 is exact; f64 -> f32 rounds to nearest even (the C++ conversion).
    float v = static_cast<float>(literal.GetDouble(i));
    std::memcpy(out.data.data() + static_cast<size_t>(i) * sizeof(float), &v, sizeof(float));
  }
  return out;
}

Result<Literal> NpyToLiteral(const npy::NpyArray& array, const Shape& expected,
                             const std::string& what) {
  if (!expected.is_array()) {
    return Unimplemented(what + " has shape " + expected.ToString(false) +
                         ", which cannot be read from a .npy file");
  }
  DType dtype = expected.dtype();
  MK_ASSIGN_OR_RETURN(NpyType wanted, NpyTypeFor(dtype));
  std::string expected_text = expected.ToString(false);
  bool float_ok = IsFloat(dtype) && IsNpyFloat(array.type);
  if (!float_ok && array.type != wanted) {
    std::string needs = IsFloat(dtype) ? "float16, float32 or float64 ('<f2', '<f4', '<f8')"
                                       : NpyTypeText(wanted);
    return InvalidArgument(what + " is " + expected_text + ", which needs " + needs +
                           " data; got " + NpyTypeText(array.type));
  }
  if (array.shape != expected.dims()) {
    return InvalidArgument(what + " is " + expected_text + ", which needs shape " +
                           npy::NpyShapeString(expected.dims()) + "; got shape " +
                           npy::NpyShapeString(array.shape));
  }
  Literal lit(expected);
  int64_t n = lit.num_elements();
  if (static_cast<size_t>(n) * static_cast<size_t>(npy::NpyTypeByteSize(array.type)) !=
      array.data.size()) {
    return Internal("npy array data does not match its shape");
  }
  if (!IsFloat(dtype)) {
    std::memcpy(lit.raw(), array.data.data(), array.data.size());
    if (dtype == DType::kPred) {
      // NumPy treats any non-zero byte as True; the interpreter relies on 0/1.
      for (size_t i = 0; i < lit.raw_size(); ++i) lit.raw()[i] = lit.raw()[i] != 0 ? 1 : 0;
    }
    return lit;
  }
  for (int64_t i = 0; i < n; ++i) {
    double v = NpyFloatAt(array, i);
    switch (dtype) {
      case DType::kBF16: StoreAt<uint16_t>(lit, i, DoubleToBf16(v)); break;
      case DType::kF16: StoreAt<uint16_t>(lit, i, DoubleToF16(v)); break;
      case DType::kF32: StoreAt<float>(lit, i, static_cast<float>(v)); break;
      default: StoreAt<double>(lit, i, v); break;
    }
  }
  return lit;
}

Result<Literal> ReadLiteralNpy(const std::string& path, const Shape& expected,
                               const std::string& what) {
  MK_ASSIGN_OR_RETURN(npy::NpyArray array, npy::ReadNpyFile(path));
  Result<Literal> lit = NpyToLiteral(array, expected, what);
  if (!lit.ok()) {
    return Status(lit.status().code(), lit.status().message(), SourceLoc{path, 0, 0});
  }
  return lit;
}

Status WriteLiteralNpy(const std::string& path, const Literal& literal) {
  MK_ASSIGN_OR_RETURN(npy::NpyArray array, LiteralToNpy(literal));
  return npy::WriteNpyFile(path, array);
}

}  // namespace mk::hlo
