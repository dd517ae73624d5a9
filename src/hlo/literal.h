// A concrete value of an HLO shape: dense row-major elements, or a tuple of literals.
// Used for constants in the IR and as the value type of the interpreter.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "hlo/shape.h"
#include "support/float16.h"
#include "support/status.h"

namespace mk::hlo {

// Storage types for the 16-bit floats; convert to/from float with exact RNE rounding.
struct bf16_t {
  uint16_t bits = 0;
  bf16_t() = default;
  explicit bf16_t(float f) : bits(FloatToBf16(f)) {}
  operator float() const { return Bf16ToFloat(bits); }  // NOLINT: widening is exact
};
struct f16_t {
  uint16_t bits = 0;
  f16_t() = default;
  explicit f16_t(float f) : bits(FloatToF16(f)) {}
  operator float() const { return F16ToFloat(bits); }  // NOLINT: widening is exact
};

// The C++ type that stores one element of `D` (pred is stored as one byte, 0 or 1).
template <DType D> struct NativeOf;
template <> struct NativeOf<DType::kPred> { using type = uint8_t; };
template <> struct NativeOf<DType::kS8> { using type = int8_t; };
template <> struct NativeOf<DType::kS16> { using type = int16_t; };
template <> struct NativeOf<DType::kS32> { using type = int32_t; };
template <> struct NativeOf<DType::kS64> { using type = int64_t; };
template <> struct NativeOf<DType::kU8> { using type = uint8_t; };
template <> struct NativeOf<DType::kU16> { using type = uint16_t; };
template <> struct NativeOf<DType::kU32> { using type = uint32_t; };
template <> struct NativeOf<DType::kU64> { using type = uint64_t; };
template <> struct NativeOf<DType::kF16> { using type = f16_t; };
template <> struct NativeOf<DType::kBF16> { using type = bf16_t; };
template <> struct NativeOf<DType::kF32> { using type = float; };
template <> struct NativeOf<DType::kF64> { using type = double; };

template <DType D>
struct DTypeTag {
  static constexpr DType kDType = D;
  using type = typename NativeOf<D>::type;
};

// Calls fn(DTypeTag<D>{}) for the evaluable dtype `t`; returns an Unimplemented status for
// types the interpreter does not compute on (f8, complex, 4-bit ints, token, tuple).
// fn must return Status.
template <typename Fn>
Status DispatchDType(DType t, Fn&& fn) {
  switch (t) {
    case DType::kPred: return fn(DTypeTag<DType::kPred>{});
    case DType::kS8: return fn(DTypeTag<DType::kS8>{});
    case DType::kS16: return fn(DTypeTag<DType::kS16>{});
    case DType::kS32: return fn(DTypeTag<DType::kS32>{});
    case DType::kS64: return fn(DTypeTag<DType::kS64>{});
    case DType::kU8: return fn(DTypeTag<DType::kU8>{});
    case DType::kU16: return fn(DTypeTag<DType::kU16>{});
    case DType::kU32: return fn(DTypeTag<DType::kU32>{});
    case DType::kU64: return fn(DTypeTag<DType::kU64>{});
    case DType::kF16: return fn(DTypeTag<DType::kF16>{});
    case DType::kBF16: return fn(DTypeTag<DType::kBF16>{});
    case DType::kF32: return fn(DTypeTag<DType::kF32>{});
    case DType::kF64: return fn(DTypeTag<DType::kF64>{});
    default:
      return Unimplemented("element type " + std::string(DTypeName(t)) +
                           " is parsed but not supported for evaluation");
  }
}

class Literal {
 public:
  Literal() = default;
  explicit Literal(const Shape& shape);  // zero-filled array, or tuple of zero-filled elements
  static Literal Tuple(std::vector<Literal> elements);

  const Shape& shape() const { return shape_; }
  DType dtype() const { return shape_.dtype(); }
  int64_t num_elements() const { return shape_.num_elements(); }

  // Raw element storage (arrays only), row-major.
  uint8_t* raw() { return bytes_.data(); }
  const uint8_t* raw() const { return bytes_.data(); }
  size_t raw_size() const { return bytes_.size(); }

  template <typename T>
  T* data() {
    return reinterpret_cast<T*>(bytes_.data());
  }
  template <typename T>
  const T* data() const {
    return reinterpret_cast<const T*>(bytes_.data());
  }

  // Element access through a wide type, for generic code paths (tests, printing, constants).
  // Integers: exact for every integer type via Int64/UInt64; floats via double.
  double GetDouble(int64_t linear_index) const;
  void SetDouble(int64_t linear_index, double v);  // rounds to the element type (RNE for floats)
  int64_t GetInt64(int64_t linear_index) const;
  void SetInt64(int64_t linear_index, int64_t v);  // wraps to the element type
  uint64_t GetUInt64(int64_t linear_index) const;
  void SetUInt64(int64_t linear_index, uint64_t v);

  const std::vector<Literal>& elements() const { return tuple_; }
  std::vector<Literal>& mutable_elements() { return tuple_; }

  // Same shape (ignoring layout) and bitwise-equal elements (NaN == NaN if same bits).
  bool operator==(const Literal& o) const;

  // HLO constant text for the elements: "{ {1, 2}, {3, 4} }", "42", "(1, {2})" for tuples.
  std::string ValuesToString() const;

 private:
  Shape shape_;
  std::vector<uint8_t> bytes_;
  std::vector<Literal> tuple_;
};

// Formats a double the way HLO text does: shortest form that parses back to the same value
// for the given type; "inf", "-inf", "nan".
std::string FormatFloat(double v, DType t);

}  // namespace mk::hlo
