#include "codegen/cpu/cpu_types.h"

#include <cmath>
#include <cstdio>

namespace mk::codegen::cpu {

using hlo::DType;

Result<std::string> StorageType(DType t) {
  switch (t) {
    case DType::kPred: return std::string("uint8_t");
    case DType::kS8: return std::string("int8_t");
    case DType::kS16: return std::string("int16_t");
    case DType::kS32: return std::string("int32_t");
    case DType::kS64: return std::string("int64_t");
    case DType::kU8: return std::string("uint8_t");
    case DType::kU16: return std::string("uint16_t");
    case DType::kU32: return std::string("uint32_t");
    case DType::kU64: return std::string("uint64_t");
    case DType::kF16: case DType::kBF16: return std::string("uint16_t");
    case DType::kF32: return std::string("float");
    case DType::kF64: return std::string("double");
    default:
      return Unimplemented("the CPU code generator does not support element type " +
                           std::string(hlo::DTypeName(t)));
  }
}

Result<std::string> ComputeType(DType t) {
  switch (t) {
    case DType::kPred: return std::string("bool");
    case DType::kF16: case DType::kBF16: case DType::kF32: return std::string("float");
    default: return StorageType(t);
  }
}

bool IsFloatCompute(DType t) {
  return t == DType::kF16 || t == DType::kBF16 || t == DType::kF32 || t == DType::kF64;
}

std::string LoadExpr(DType t, const std::string& e) {
  switch (t) {
    case DType::kBF16: return "mkrt::bf16_to_f32(" + e + ")";
    case DType::kF16: return "mkrt::f16_to_f32(" + e + ")";
    case DType::kPred: return "(" + e + " != 0)";
    default: return e;
  }
}

std::string StoreExpr(DType t, const std::string& e) {
  switch (t) {
    case DType::kBF16: return "mkrt::f32_to_bf16(" + e + ")";
    case DType::kF16: return "mkrt::f32_to_f16(" + e + ")";
    case DType::kPred: return "static_cast<uint8_t>(" + e + ")";
    default: return e;
  }
}

std::string StoreExactExpr(DType t, const std::string& e) {
  if (t == DType::kBF16) return "mkrt::bf16_bits(" + e + ")";
  return StoreExpr(t, e);
}

std::string RoundExpr(DType t, const std::string& e) {
  switch (t) {
    case DType::kBF16: return "mkrt::round_bf16(" + e + ")";
    case DType::kF16: return "mkrt::round_f16(" + e + ")";
    default: return e;
  }
}

std::string ComputeLiteral(DType t, double v) {
  std::string ct = ComputeType(t).ok() ? *ComputeType(t) : "float";
  if (IsFloatCompute(t)) {
    if (std::isnan(v)) return "std::numeric_limits<" + ct + ">::quiet_NaN()";
    if (std::isinf(v)) {
      return std::string(v < 0 ? "-" : "") + "std::numeric_limits<" + ct + ">::infinity()";
    }
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.17g", v);
    return "static_cast<" + ct + ">(" + buf + ")";
  }
  if (t == DType::kPred) return v != 0 ? "true" : "false";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.0f", v);
  return "static_cast<" + ct + ">(" + std::string(buf) + (hlo::IsUnsignedInt(t) ? "ULL" : "LL") +
         ")";
}

}  // namespace mk::codegen::cpu
