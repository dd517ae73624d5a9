// HLO opcodes, by their text names. The list is XLA's; which of them maxkernel can evaluate is
// decided by the interpreter, not here (the parser accepts every name in this list).
#pragma once

#include <optional>
#include <string_view>

namespace mk::hlo {

// X(enumerator, "text name")
#define MK_HLO_OPCODES(X)                                   \
  X(kAbs, "abs")                                            \
  X(kAdd, "add")                                            \
  X(kAfterAll, "after-all")                                 \
  X(kAllGather, "all-gather")                               \
  X(kAllReduce, "all-reduce")                               \
  X(kAllToAll, "all-to-all")                                \
  X(kAnd, "and")                                            \
  X(kAtan2, "atan2")                                        \
  X(kBatchNormGrad, "batch-norm-grad")                      \
  X(kBatchNormInference, "batch-norm-inference")            \
  X(kBatchNormTraining, "batch-norm-training")              \
  X(kBitcast, "bitcast")                                    \
  X(kBitcastConvert, "bitcast-convert")                     \
  X(kBroadcast, "broadcast")                                \
  X(kCall, "call")                                          \
  X(kCbrt, "cbrt")                                          \
  X(kCeil, "ceil")                                          \
  X(kCholesky, "cholesky")                                  \
  X(kClamp, "clamp")                                        \
  X(kClz, "count-leading-zeros")                            \
  X(kCollectivePermute, "collective-permute")               \
  X(kCompare, "compare")                                    \
  X(kComplex, "complex")                                    \
  X(kConcatenate, "concatenate")                            \
  X(kConditional, "conditional")                            \
  X(kConstant, "constant")                                  \
  X(kConvert, "convert")                                    \
  X(kConvolution, "convolution")                            \
  X(kCopy, "copy")                                          \
  X(kCopyDone, "copy-done")                                 \
  X(kCopyStart, "copy-start")                               \
  X(kCos, "cosine")                                         \
  X(kCustomCall, "custom-call")                             \
  X(kDivide, "divide")                                      \
  X(kDomain, "domain")                                      \
  X(kDot, "dot")                                            \
  X(kDynamicReshape, "dynamic-reshape")                     \
  X(kDynamicSlice, "dynamic-slice")                         \
  X(kDynamicUpdateSlice, "dynamic-update-slice")            \
  X(kErf, "erf")                                            \
  X(kExp, "exponential")                                    \
  X(kExpm1, "exponential-minus-one")                        \
  X(kFft, "fft")                                            \
  X(kFloor, "floor")                                        \
  X(kFusion, "fusion")                                      \
  X(kGather, "gather")                                      \
  X(kGetDimensionSize, "get-dimension-size")                \
  X(kGetTupleElement, "get-tuple-element")                  \
  X(kImag, "imag")                                          \
  X(kInfeed, "infeed")                                      \
  X(kIota, "iota")                                          \
  X(kIsFinite, "is-finite")                                 \
  X(kLog, "log")                                            \
  X(kLog1p, "log-plus-one")                                 \
  X(kLogistic, "logistic")                                  \
  X(kMap, "map")                                            \
  X(kMaximum, "maximum")                                    \
  X(kMinimum, "minimum")                                    \
  X(kMultiply, "multiply")                                  \
  X(kNegate, "negate")                                      \
  X(kNot, "not")                                            \
  X(kOptimizationBarrier, "opt-barrier")                    \
  X(kOr, "or")                                              \
  X(kOutfeed, "outfeed")                                    \
  X(kPad, "pad")                                            \
  X(kParameter, "parameter")                                \
  X(kPartitionId, "partition-id")                           \
  X(kPopulationCount, "popcnt")                             \
  X(kPower, "power")                                        \
  X(kReal, "real")                                          \
  X(kRecv, "recv")                                          \
  X(kRecvDone, "recv-done")                                 \
  X(kReduce, "reduce")                                      \
  X(kReducePrecision, "reduce-precision")                   \
  X(kReduceScatter, "reduce-scatter")                       \
  X(kReduceWindow, "reduce-window")                         \
  X(kRemainder, "remainder")                                \
  X(kReplicaId, "replica-id")                               \
  X(kReshape, "reshape")                                    \
  X(kReverse, "reverse")                                    \
  X(kRng, "rng")                                            \
  X(kRngBitGenerator, "rng-bit-generator")                  \
  X(kRngGetAndUpdateState, "rng-get-and-update-state")      \
  X(kRoundNearestAfz, "round-nearest-afz")                  \
  X(kRoundNearestEven, "round-nearest-even")                \
  X(kRsqrt, "rsqrt")                                        \
  X(kScatter, "scatter")                                    \
  X(kSelect, "select")                                      \
  X(kSelectAndScatter, "select-and-scatter")                \
  X(kSend, "send")                                          \
  X(kSendDone, "send-done")                                 \
  X(kSetDimensionSize, "set-dimension-size")                \
  X(kShiftLeft, "shift-left")                               \
  X(kShiftRightArithmetic, "shift-right-arithmetic")        \
  X(kShiftRightLogical, "shift-right-logical")              \
  X(kSign, "sign")                                          \
  X(kSin, "sine")                                           \
  X(kSlice, "slice")                                        \
  X(kSort, "sort")                                          \
  X(kSqrt, "sqrt")                                          \
  X(kStochasticConvert, "stochastic-convert")               \
  X(kSubtract, "subtract")                                  \
  X(kTan, "tan")                                            \
  X(kTanh, "tanh")                                          \
  X(kTopK, "topk")                                          \
  X(kTranspose, "transpose")                                \
  X(kTriangularSolve, "triangular-solve")                   \
  X(kTuple, "tuple")                                        \
  X(kWhile, "while")                                        \
  X(kXor, "xor")

enum class Opcode {
#define MK_OPCODE_ENUM(e, name) e,
  MK_HLO_OPCODES(MK_OPCODE_ENUM)
#undef MK_OPCODE_ENUM
};

std::string_view OpcodeName(Opcode op);
// Accepts the canonical names above plus the aliases XLA also prints ("clz" for
// count-leading-zeros, "optimization-barrier" for opt-barrier).
std::optional<Opcode> ParseOpcode(std::string_view name);

bool IsElementwiseUnary(Opcode op);   // abs, negate, exponential, convert-free math ...
bool IsElementwiseBinary(Opcode op);  // add, multiply, compare, shifts ...
// Elementwise in the HLO sense: unary, binary, select, clamp, convert, compare, map-free ops.
bool IsElementwise(Opcode op);

}  // namespace mk::hlo
