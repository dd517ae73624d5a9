// Element types of HLO arrays (XLA's PrimitiveType), by their HLO text names.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mk::hlo {

enum class DType : uint8_t {
  kPred,
  kS4, kS8, kS16, kS32, kS64,
  kU4, kU8, kU16, kU32, kU64,
  kF16, kBF16, kF32, kF64,
  kF8E5M2, kF8E4M3FN, kF8E4M3B11FNUZ, kF8E5M2FNUZ, kF8E4M3FNUZ,
  kC64, kC128,
  kToken,
  kTuple,  // the element type of a tuple shape (no elements of its own)
};

std::string_view DTypeName(DType t);                     // "f32", "bf16", "pred", ...
std::optional<DType> ParseDType(std::string_view name);  // inverse of DTypeName
int64_t DTypeByteSize(DType t);  // storage bytes per element (s4/u4 use one byte); 0 for token/tuple

bool IsFloat(DType t);    // f16, bf16, f32, f64 and the f8 types
bool IsF8(DType t);
bool IsComplex(DType t);
bool IsSignedInt(DType t);
bool IsUnsignedInt(DType t);
inline bool IsInteger(DType t) { return IsSignedInt(t) || IsUnsignedInt(t); }
int IntBitWidth(DType t);  // bits of an integer or pred type (pred = 1)
// Whether the interpreter and code generators compute on this type (f8, complex, 4-bit: not yet).
bool IsEvaluable(DType t);

}  // namespace mk::hlo
