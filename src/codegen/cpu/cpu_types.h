// How HLO element types appear in generated C++: the storage type of a buffer element, the type
// values compute in (bf16/f16 -> float, pred -> bool), and the conversions between the two.
#pragma once

#include <string>

#include "hlo/dtype.h"
#include "support/status.h"

namespace mk::codegen::cpu {

// Both return an Unimplemented error naming the type for types not generated (f8, complex, s4...).
Result<std::string> StorageType(hlo::DType t);
Result<std::string> ComputeType(hlo::DType t);
// Expression converting a storage value `e` to the compute type.
std::string LoadExpr(hlo::DType t, const std::string& e);
// Expression converting a compute value `e` to the storage type.
std::string StoreExpr(hlo::DType t, const std::string& e);
// StoreExpr for a value of an HLO instruction of type `t` (a lambda's or a statement chain's
// value), which is exactly representable in `t` already: bf16 keeps its top 16 bits instead of
// rounding again.
std::string StoreExactExpr(hlo::DType t, const std::string& e);
// Expression rounding a float compute value `e` to the precision of `t` (bf16/f16), else `e`.
std::string RoundExpr(hlo::DType t, const std::string& e);
// A C++ literal of value `v` in the compute type of `t` ("1.5f", "-inf" as an expression ...).
std::string ComputeLiteral(hlo::DType t, double v);
bool IsFloatCompute(hlo::DType t);  // f16, bf16, f32, f64

}  // namespace mk::codegen::cpu
