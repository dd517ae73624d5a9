#include "hlo/opcode.h"

#include <array>

namespace mk::hlo {
namespace {
constexpr std::string_view kNames[] = {
#define MK_OPCODE_NAME(e, name) name,
    MK_HLO_OPCODES(MK_OPCODE_NAME)
#undef MK_OPCODE_NAME
};
}  // namespace

std::string_view OpcodeName(Opcode op) { return kNames[static_cast<size_t>(op)]; }

std::optional<Opcode> ParseOpcode(std::string_view name) {
  if (name == "clz") return Opcode::kClz;
  if (name == "optimization-barrier") return Opcode::kOptimizationBarrier;
  for (size_t i = 0; i < std::size(kNames); ++i) {
    if (kNames[i] == name) return static_cast<Opcode>(i);
  }
  return std::nullopt;
}

bool IsElementwiseUnary(Opcode op) {
  switch (op) {
    case Opcode::kAbs: case Opcode::kCbrt: case Opcode::kCeil: case Opcode::kClz:
    case Opcode::kCos: case Opcode::kErf: case Opcode::kExp: case Opcode::kExpm1:
    case Opcode::kFloor: case Opcode::kImag: case Opcode::kIsFinite: case Opcode::kLog:
    case Opcode::kLog1p: case Opcode::kLogistic: case Opcode::kNegate: case Opcode::kNot:
    case Opcode::kPopulationCount: case Opcode::kReal: case Opcode::kRoundNearestAfz:
    case Opcode::kRoundNearestEven: case Opcode::kRsqrt: case Opcode::kSign: case Opcode::kSin:
    case Opcode::kSqrt: case Opcode::kTan: case Opcode::kTanh:
      return true;
    default:
      return false;
  }
}

bool IsElementwiseBinary(Opcode op) {
  switch (op) {
    case Opcode::kAdd: case Opcode::kAnd: case Opcode::kAtan2: case Opcode::kCompare:
    case Opcode::kComplex: case Opcode::kDivide: case Opcode::kMaximum: case Opcode::kMinimum:
    case Opcode::kMultiply: case Opcode::kOr: case Opcode::kPower: case Opcode::kRemainder:
    case Opcode::kShiftLeft: case Opcode::kShiftRightArithmetic:
    case Opcode::kShiftRightLogical: case Opcode::kSubtract: case Opcode::kXor:
      return true;
    default:
      return false;
  }
}

bool IsElementwise(Opcode op) {
  return IsElementwiseUnary(op) || IsElementwiseBinary(op) || op == Opcode::kSelect ||
         op == Opcode::kClamp || op == Opcode::kConvert || op == Opcode::kReducePrecision ||
         op == Opcode::kStochasticConvert;
}

}  // namespace mk::hlo
