#include "hlo/dtype.h"

#include <array>
#include <utility>

namespace mk::hlo {
namespace {

struct DTypeInfo {
  DType type;
  std::string_view name;
  int64_t bytes;
};

constexpr std::array<DTypeInfo, 24> kInfo = {{
    {DType::kPred, "pred", 1},
    {DType::kS4, "s4", 1},
    {DType::kS8, "s8", 1},
    {DType::kS16, "s16", 2},
    {DType::kS32, "s32", 4},
    {DType::kS64, "s64", 8},
    {DType::kU4, "u4", 1},
    {DType::kU8, "u8", 1},
    {DType::kU16, "u16", 2},
    {DType::kU32, "u32", 4},
    {DType::kU64, "u64", 8},
    {DType::kF16, "f16", 2},
    {DType::kBF16, "bf16", 2},
    {DType::kF32, "f32", 4},
    {DType::kF64, "f64", 8},
    {DType::kF8E5M2, "f8e5m2", 1},
    {DType::kF8E4M3FN, "f8e4m3fn", 1},
    {DType::kF8E4M3B11FNUZ, "f8e4m3b11fnuz", 1},
    {DType::kF8E5M2FNUZ, "f8e5m2fnuz", 1},
    {DType::kF8E4M3FNUZ, "f8e4m3fnuz", 1},
    {DType::kC64, "c64", 8},
    {DType::kC128, "c128", 16},
    {DType::kToken, "token", 0},
    {DType::kTuple, "tuple", 0},
}};

}  // namespace

std::string_view DTypeName(DType t) { return kInfo[static_cast<size_t>(t)].name; }

std::optional<DType> ParseDType(std::string_view name) {
  for (const auto& info : kInfo) {
    if (info.name == name && info.type != DType::kTuple) return info.type;
  }
  return std::nullopt;
}

int64_t DTypeByteSize(DType t) { return kInfo[static_cast<size_t>(t)].bytes; }

bool IsF8(DType t) {
  return t == DType::kF8E5M2 || t == DType::kF8E4M3FN || t == DType::kF8E4M3B11FNUZ ||
         t == DType::kF8E5M2FNUZ || t == DType::kF8E4M3FNUZ;
}
bool IsFloat(DType t) {
  return t == DType::kF16 || t == DType::kBF16 || t == DType::kF32 || t == DType::kF64 || IsF8(t);
}
bool IsComplex(DType t) { return t == DType::kC64 || t == DType::kC128; }
bool IsSignedInt(DType t) {
  return t == DType::kS4 || t == DType::kS8 || t == DType::kS16 || t == DType::kS32 ||
         t == DType::kS64;
}
bool IsUnsignedInt(DType t) {
  return t == DType::kU4 || t == DType::kU8 || t == DType::kU16 || t == DType::kU32 ||
         t == DType::kU64;
}
int IntBitWidth(DType t) {
  switch (t) {
    case DType::kPred: return 1;
    case DType::kS4: case DType::kU4: return 4;
    case DType::kS8: case DType::kU8: return 8;
    case DType::kS16: case DType::kU16: return 16;
    case DType::kS32: case DType::kU32: return 32;
    case DType::kS64: case DType::kU64: return 64;
    default: return 0;
  }
}
bool IsEvaluable(DType t) {
  return !(IsF8(t) || IsComplex(t) || t == DType::kS4 || t == DType::kU4 || t == DType::kToken);
}

}  // namespace mk::hlo
