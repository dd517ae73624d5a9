// Lambda bodies for the ops that compute one element from a few operand elements: elementwise
// math, compare/select/clamp/convert, and index remapping (broadcast, transpose, reshape, slice,
// pad, concatenate, reverse, iota, dynamic-slice). The semantics mirror the interpreter's
// (src/interp/elementwise.cc, data_movement.cc) through mk_cpu_rt.h.
#include <sstream>

#include "analysis/row_program.h"
#include "codegen/cpu/cpu_types.h"
#include "codegen/cpu/emit_context.h"
#include "codegen/cpu/fused_math.h"

namespace mk::codegen::cpu {

using hlo::DType;
using hlo::Instruction;
using hlo::Opcode;

namespace {

std::string Ret(const std::string& e) { return "return " + e + ";"; }

// `f(i0, ..., i{rank-1})` for an operand at the same index as the result.
std::string SameIndex(const FunctionEmitter& f, const Instruction* op) {
  if (const std::string* local = f.Local(op)) return *local;
  return CallExpr(f.Fn(op), IndexVars(op->shape.rank()));
}

// Scalar operand (rank 0) or same-index operand.
std::string ScalarOrSame(const FunctionEmitter& f, const Instruction* op, int64_t rank) {
  if (op->shape.rank() == 0 && rank > 0) return CallExpr(f.Fn(op), {});
  return SameIndex(f, op);
}

Result<std::string> UnaryExpr(const Instruction& inst, const std::string& x) {
  DType t = inst.operands[0]->shape.dtype();
  bool fl = IsFloatCompute(t);
  switch (inst.opcode) {
    case Opcode::kAbs: return fl ? "std::fabs(" + x + ")" : "mkrt::iabs(" + x + ")";
    case Opcode::kNegate: return fl ? "(-" + x + ")" : (t == DType::kPred ? x : "mkrt::wneg(" + x + ")");
    case Opcode::kSign: return fl ? "mkrt::fsign(" + x + ")" : "mkrt::isign(" + x + ")";
    case Opcode::kNot: return t == DType::kPred ? "(!" + x + ")" : "static_cast<decltype(" + x + ")>(~" + x + ")";
    case Opcode::kPopulationCount: return "mkrt::popcnt(" + x + ")";
    case Opcode::kClz: return "mkrt::clz(" + x + ")";
    default: break;
  }
  if (!fl) return CannotLower(inst, "this op needs a floating-point operand");
  // exp, expm1, log, log1p, tanh, erf and logistic: mk_cpu_rt.h's vectorizable float versions
  // for float compute (f32, bf16, f16), overloads forwarding to std:: for f64.
  switch (inst.opcode) {
    case Opcode::kFloor: return "std::floor(" + x + ")";
    case Opcode::kCeil: return "std::ceil(" + x + ")";
    case Opcode::kRoundNearestEven: return "mkrt::round_even(" + x + ")";
    case Opcode::kRoundNearestAfz: return "mkrt::round_afz(" + x + ")";
    case Opcode::kExp: return "mkrt::vexp(" + x + ")";
    case Opcode::kExpm1: return "mkrt::vexpm1(" + x + ")";
    case Opcode::kLog: return "mkrt::vlog(" + x + ")";
    case Opcode::kLog1p: return "mkrt::vlog1p(" + x + ")";
    case Opcode::kSqrt: return "std::sqrt(" + x + ")";
    case Opcode::kRsqrt: return "mkrt::rsqrt(" + x + ")";
    case Opcode::kCbrt: return "std::cbrt(" + x + ")";
    case Opcode::kTanh: return "mkrt::vtanh(" + x + ")";
    case Opcode::kLogistic: return "mkrt::logistic(" + x + ")";
    case Opcode::kSin: return "std::sin(" + x + ")";
    case Opcode::kCos: return "std::cos(" + x + ")";
    case Opcode::kTan: return "std::tan(" + x + ")";
    case Opcode::kErf: return "mkrt::verf(" + x + ")";
    case Opcode::kIsFinite: return "static_cast<bool>(std::isfinite(" + x + "))";
    default: return CannotLower(inst, "unsupported unary op");
  }
}

Result<std::string> BinaryExpr(const Instruction& inst, const std::string& a,
                               const std::string& b) {
  DType t = inst.operands[0]->shape.dtype();
  bool fl = IsFloatCompute(t);
  bool pred = t == DType::kPred;
  switch (inst.opcode) {
    case Opcode::kAdd: return fl ? "(" + a + " + " + b + ")" : pred ? "(" + a + " || " + b + ")" : "mkrt::wadd(" + a + ", " + b + ")";
    case Opcode::kSubtract: return fl ? "(" + a + " - " + b + ")" : "mkrt::wsub(" + a + ", " + b + ")";
    case Opcode::kMultiply: return fl ? "(" + a + " * " + b + ")" : pred ? "(" + a + " && " + b + ")" : "mkrt::wmul(" + a + ", " + b + ")";
    case Opcode::kDivide: return fl ? "(" + a + " / " + b + ")" : "mkrt::idiv(" + a + ", " + b + ")";
    case Opcode::kRemainder: return fl ? "std::fmod(" + a + ", " + b + ")" : "mkrt::irem(" + a + ", " + b + ")";
    case Opcode::kPower: return fl ? "std::pow(" + a + ", " + b + ")" : "mkrt::ipow(" + a + ", " + b + ")";
    case Opcode::kMaximum: return fl ? "mkrt::fmax_nan(" + a + ", " + b + ")" : "std::max(" + a + ", " + b + ")";
    case Opcode::kMinimum: return fl ? "mkrt::fmin_nan(" + a + ", " + b + ")" : "std::min(" + a + ", " + b + ")";
    case Opcode::kAtan2: return "std::atan2(" + a + ", " + b + ")";
    case Opcode::kAnd: return pred ? "(" + a + " && " + b + ")" : "static_cast<decltype(" + a + ")>(" + a + " & " + b + ")";
    case Opcode::kOr: return pred ? "(" + a + " || " + b + ")" : "static_cast<decltype(" + a + ")>(" + a + " | " + b + ")";
    case Opcode::kXor: return pred ? "(" + a + " != " + b + ")" : "static_cast<decltype(" + a + ")>(" + a + " ^ " + b + ")";
    case Opcode::kShiftLeft: return "mkrt::shl(" + a + ", " + b + ")";
    case Opcode::kShiftRightLogical: return "mkrt::shr_logical(" + a + ", " + b + ")";
    case Opcode::kShiftRightArithmetic: return "mkrt::shr_arith(" + a + ", " + b + ")";
    default: return CannotLower(inst, "unsupported binary op");
  }
}

Result<std::string> CompareExpr(const Instruction& inst, const std::string& a,
                                const std::string& b) {
  if (!inst.direction) return CannotLower(inst, "compare without direction");
  const char* op = "==";
  switch (*inst.direction) {
    case hlo::ComparisonDirection::kEq: op = "=="; break;
    case hlo::ComparisonDirection::kNe: op = "!="; break;
    case hlo::ComparisonDirection::kLt: op = "<"; break;
    case hlo::ComparisonDirection::kLe: op = "<="; break;
    case hlo::ComparisonDirection::kGt: op = ">"; break;
    case hlo::ComparisonDirection::kGe: op = ">="; break;
  }
  DType t = inst.operands[0]->shape.dtype();
  if (IsFloatCompute(t) && inst.comparison_type == "TOTALORDER") {
    return "(mkrt::total_key(" + a + ") " + op + " mkrt::total_key(" + b + "))";
  }
  return "(" + a + " " + op + " " + b + ")";
}

Result<std::string> ConvertExpr(const Instruction& inst, const std::string& x) {
  DType from = inst.operands[0]->shape.dtype();
  DType to = inst.shape.dtype();
  MK_ASSIGN_OR_RETURN(std::string to_ct, ComputeType(to));
  if (to == DType::kPred) return "(" + x + " != 0)";
  if (IsFloatCompute(to)) {
    if (IsFloatCompute(from) || from == DType::kPred || hlo::IsInteger(from)) {
      return RoundExpr(to, "static_cast<" + to_ct + ">(" + x + ")");
    }
  }
  if (hlo::IsInteger(to)) {
    if (IsFloatCompute(from)) return "mkrt::f2i<" + to_ct + ">(" + x + ")";
    return "static_cast<" + to_ct + ">(" + x + ")";
  }
  return CannotLower(inst, "unsupported conversion");
}

// The operand index of a reshape from `from` to `to` dims (equal element counts) at result
// index i0..: size-1 dims are dropped (their index is 0), the rest split into the smallest groups
// of consecutive dims with equal products. A group of one dim on each side is the same index
// (most reshapes add or remove unit dims); otherwise the group's linear index is split up again.
// Keeping the innermost index affine is what lets the compiler vectorize loops through reshapes.
std::vector<std::string> ReshapeArgs(const std::vector<int64_t>& from,
                                     const std::vector<int64_t>& to) {
  std::vector<std::string> args(from.size(), "0");
  std::vector<size_t> fi, ti;  // positions of the non-unit dims
  for (size_t d = 0; d < from.size(); ++d) {
    if (from[d] != 1) fi.push_back(d);
  }
  for (size_t d = 0; d < to.size(); ++d) {
    if (to[d] != 1) ti.push_back(d);
  }
  size_t a = 0, b = 0;
  while (a < fi.size() && b < ti.size()) {
    const size_t a0 = a, b0 = b;
    int64_t pa = from[fi[a++]], pb = to[ti[b++]];
    while (pa != pb) {
      if (pa < pb && a < fi.size()) pa *= from[fi[a++]];
      else if (pb < pa && b < ti.size()) pb *= to[ti[b++]];
      else break;  // unequal element counts: rejected by the caller
    }
    if (a - a0 == 1 && b - b0 == 1) {
      args[fi[a0]] = "i" + std::to_string(ti[b0]);
      continue;
    }
    std::string lin;
    for (size_t k = b0; k < b; ++k) {
      const std::string v = "i" + std::to_string(ti[k]);
      lin = k == b0 ? v : "(" + lin + ") * " + std::to_string(to[ti[k]]) + " + " + v;
    }
    int64_t stride = 1;
    for (size_t k = a; k-- > a0;) {
      std::string e = stride == 1 ? "(" + lin + ")" : "((" + lin + ") / " + std::to_string(stride) + ")";
      if (k != a0) e = "(" + e + " % " + std::to_string(from[fi[k]]) + ")";
      args[fi[k]] = e;
      stride *= from[fi[k]];
    }
  }
  return args;
}

}  // namespace

bool IsElemental(const Instruction& inst) { return analysis::IsElementalOp(inst); }

Result<std::string> ElementalBody(FunctionEmitter& f, const Instruction& inst) {
  const auto& ops = inst.operands;
  const int64_t rank = inst.shape.rank();
  const DType out_t = inst.shape.dtype();
  auto need = [&](size_t n) -> Status {
    if (ops.size() != n) return CannotLower(inst, "expected " + std::to_string(n) + " operands");
    return Status::Ok();
  };
  if (hlo::IsElementwiseUnary(inst.opcode)) {
    MK_RETURN_IF_ERROR(need(1));
    // mish's tanh(softplus(x)) from x, one exp instead of an exp, a log1p and a tanh (27k's
    // epilogue, two mish: 19.8 -> 16.0 ms).
    if (inst.opcode == Opcode::kTanh && out_t == DType::kF32) {
      if (const Instruction* x = SoftplusInput(*ops[0])) {
        return Ret("mkrt::tanh_softplus(" + SameIndex(f, x) + ")");
      }
    }
    MK_ASSIGN_OR_RETURN(std::string e, UnaryExpr(inst, SameIndex(f, ops[0])));
    return Ret(RoundExpr(out_t, e));
  }
  if (inst.opcode == Opcode::kCompare) {
    MK_RETURN_IF_ERROR(need(2));
    MK_ASSIGN_OR_RETURN(std::string e, CompareExpr(inst, SameIndex(f, ops[0]), SameIndex(f, ops[1])));
    return Ret(e);
  }
  if (hlo::IsElementwiseBinary(inst.opcode)) {
    MK_RETURN_IF_ERROR(need(2));
    MK_ASSIGN_OR_RETURN(std::string e, BinaryExpr(inst, SameIndex(f, ops[0]), SameIndex(f, ops[1])));
    return Ret(RoundExpr(out_t, e));
  }
  switch (inst.opcode) {
    case Opcode::kSelect:
      MK_RETURN_IF_ERROR(need(3));
      // Both arms are read unconditionally (every lambda is in bounds and cannot trap), so the
      // select compiles to a blend: with the reads under the condition, GCC vectorized the
      // arms' closure loads as masked gathers, 5x slower than the GEMM epilogue it sat in.
      return "const auto mk_on = " + SameIndex(f, ops[1]) + "; const auto mk_off = " +
             SameIndex(f, ops[2]) + "; " + Ret("(" + ScalarOrSame(f, ops[0], rank) +
                                               " ? mk_on : mk_off)");
    case Opcode::kClamp: {
      MK_RETURN_IF_ERROR(need(3));
      std::string lo = ScalarOrSame(f, ops[0], rank), x = SameIndex(f, ops[1]),
                  hi = ScalarOrSame(f, ops[2], rank);
      if (IsFloatCompute(out_t)) {
        return Ret(RoundExpr(out_t, "mkrt::fmax_nan(" + lo + ", mkrt::fmin_nan(" + x + ", " + hi + "))"));
      }
      return Ret("std::max(" + lo + ", std::min(" + x + ", " + hi + "))");
    }
    case Opcode::kConvert: {
      MK_RETURN_IF_ERROR(need(1));
      MK_ASSIGN_OR_RETURN(std::string e, ConvertExpr(inst, SameIndex(f, ops[0])));
      return Ret(e);
    }
    case Opcode::kBitcastConvert: {
      MK_RETURN_IF_ERROR(need(1));
      DType from = ops[0]->shape.dtype();
      MK_ASSIGN_OR_RETURN(std::string from_st, StorageType(from));
      MK_ASSIGN_OR_RETURN(std::string to_st, StorageType(out_t));
      const int64_t from_bytes = hlo::DTypeByteSize(from), to_bytes = hlo::DTypeByteSize(out_t);
      if (from_bytes != to_bytes) {
        // The narrower side has one extra minor dimension of size wide/narrow; its elements are
        // the wide element's bytes in memory order (little-endian), as the interpreter copies.
        if (from_bytes <= 0 || to_bytes <= 0) return CannotLower(inst, "bad element sizes");
        if (to_bytes < from_bytes) {
          if (from_bytes % to_bytes != 0 || rank != ops[0]->shape.rank() + 1 ||
              inst.shape.dim(rank - 1) != from_bytes / to_bytes) {
            return CannotLower(inst, "bitcast-convert to a narrower type needs a minor dim");
          }
          std::vector<std::string> in_idx = IndexVars(rank - 1);
          return "const " + from_st + " b = " + StoreExpr(from, CallExpr(f.Fn(ops[0]), in_idx)) +
                 "; " + to_st + " r; std::memcpy(&r, reinterpret_cast<const unsigned char*>(&b) + i" +
                 std::to_string(rank - 1) + " * sizeof r, sizeof r); " + Ret(LoadExpr(out_t, "r"));
        }
        const int64_t ratio = to_bytes / from_bytes;
        if (to_bytes % from_bytes != 0 || ops[0]->shape.rank() != rank + 1 ||
            ops[0]->shape.dim(rank) != ratio) {
          return CannotLower(inst, "bitcast-convert to a wider type needs a minor dim of " +
                                       std::to_string(ratio));
        }
        std::vector<std::string> in_idx = IndexVars(rank);
        in_idx.push_back("bj");
        return to_st + " r; unsigned char* const rp = reinterpret_cast<unsigned char*>(&r); " +
               "for (int64_t bj = 0; bj < " + std::to_string(ratio) + "; ++bj) { const " +
               from_st + " b = " + StoreExpr(from, CallExpr(f.Fn(ops[0]), in_idx)) +
               "; std::memcpy(rp + bj * sizeof b, &b, sizeof b); } " + Ret(LoadExpr(out_t, "r"));
      }
      std::string bits = StoreExpr(from, SameIndex(f, ops[0]));
      return "const " + from_st + " b = " + bits + "; " + to_st +
             " r; std::memcpy(&r, &b, sizeof r); " + Ret(LoadExpr(out_t, "r"));
    }
    case Opcode::kReducePrecision: {
      MK_RETURN_IF_ERROR(need(1));
      if (out_t == DType::kF64) return CannotLower(inst, "reduce-precision of f64");
      return Ret(RoundExpr(out_t, "mkrt::reduce_precision(static_cast<float>(" +
                                      SameIndex(f, ops[0]) + "), " +
                                      std::to_string(inst.exponent_bits) + ", " +
                                      std::to_string(inst.mantissa_bits) + ")"));
    }
    case Opcode::kMap: {
      if (inst.called.empty()) return CannotLower(inst, "map without to_apply");
      MK_ASSIGN_OR_RETURN(std::string fn, f.module().ScalarFunction(inst.called[0]));
      std::vector<std::string> args;
      for (const Instruction* op : ops) args.push_back(SameIndex(f, op));
      return Ret(CallExpr(fn, args));
    }
    case Opcode::kCopy:
    case Opcode::kOptimizationBarrier:
      MK_RETURN_IF_ERROR(need(1));
      return Ret(SameIndex(f, ops[0]));
    case Opcode::kGetTupleElement:
      MK_RETURN_IF_ERROR(need(1));
      return Ret(CallExpr(f.Fn(ops[0], static_cast<int>(inst.tuple_index)), IndexVars(rank)));
    case Opcode::kIota: {
      MK_ASSIGN_OR_RETURN(std::string ct, ComputeType(out_t));
      if (inst.iota_dimension < 0 || inst.iota_dimension >= rank) {
        return CannotLower(inst, "iota_dimension out of range");
      }
      return Ret(RoundExpr(out_t, "static_cast<" + ct + ">(i" +
                                      std::to_string(inst.iota_dimension) + ")"));
    }
    case Opcode::kBroadcast: {
      MK_RETURN_IF_ERROR(need(1));
      std::vector<std::string> args;
      for (int64_t d : inst.dimensions) {
        if (d < 0 || d >= rank) return CannotLower(inst, "broadcast dimension out of range");
        args.push_back("i" + std::to_string(d));
      }
      return Ret(CallExpr(f.Fn(ops[0]), args));
    }
    case Opcode::kTranspose: {
      MK_RETURN_IF_ERROR(need(1));
      // Result dim i is operand dim perm[i]: the operand's index at perm[i] is i_i.
      std::vector<std::string> args(static_cast<size_t>(rank));
      if (static_cast<int64_t>(inst.dimensions.size()) != rank) {
        return CannotLower(inst, "transpose permutation has the wrong length");
      }
      for (int64_t i = 0; i < rank; ++i) {
        int64_t d = inst.dimensions[static_cast<size_t>(i)];
        if (d < 0 || d >= rank) return CannotLower(inst, "transpose permutation out of range");
        args[static_cast<size_t>(d)] = "i" + std::to_string(i);
      }
      return Ret(CallExpr(f.Fn(ops[0]), args));
    }
    case Opcode::kReshape:
    case Opcode::kBitcast: {
      MK_RETURN_IF_ERROR(need(1));
      if (ops[0]->shape.num_elements() != inst.shape.num_elements() ||
          ops[0]->shape.dtype() != out_t) {
        return CannotLower(inst, "reshape/bitcast that changes the element count or type");
      }
      if (ops[0]->shape.dims() == inst.shape.dims()) return Ret(SameIndex(f, ops[0]));
      // Row-major reshapes keep the linear order: load the operand's array at our linear index.
      if (const std::string* p = f.DensePointer(f.Fn(ops[0]))) {
        return Ret(LoadExpr(out_t, *p + "[" + LinearIndexExpr(IndexVars(rank), inst.shape.dims()) +
                                       "]"));
      }
      return Ret(CallExpr(f.Fn(ops[0]), ReshapeArgs(ops[0]->shape.dims(), inst.shape.dims())));
    }
    case Opcode::kSlice: {
      MK_RETURN_IF_ERROR(need(1));
      if (static_cast<int64_t>(inst.slice.size()) != rank) return CannotLower(inst, "bad slice");
      std::vector<std::string> args;
      for (int64_t d = 0; d < rank; ++d) {
        const auto& s = inst.slice[static_cast<size_t>(d)];
        args.push_back("(" + std::to_string(s.start) + " + i" + std::to_string(d) + " * " +
                       std::to_string(s.stride) + ")");
      }
      return Ret(CallExpr(f.Fn(ops[0]), args));
    }
    case Opcode::kReverse: {
      MK_RETURN_IF_ERROR(need(1));
      std::vector<std::string> args = IndexVars(rank);
      for (int64_t d : inst.dimensions) {
        if (d < 0 || d >= rank) return CannotLower(inst, "reverse dimension out of range");
        args[static_cast<size_t>(d)] =
            "(" + std::to_string(inst.shape.dim(d) - 1) + " - i" + std::to_string(d) + ")";
      }
      return Ret(CallExpr(f.Fn(ops[0]), args));
    }
    case Opcode::kPad: {
      MK_RETURN_IF_ERROR(need(2));
      if (static_cast<int64_t>(inst.padding.size()) != rank) return CannotLower(inst, "bad padding");
      std::ostringstream body;
      std::vector<std::string> args;
      for (int64_t d = 0; d < rank; ++d) {
        const auto& p = inst.padding[static_cast<size_t>(d)];
        std::string ds = std::to_string(d);
        int64_t step = p.interior + 1;
        body << "const int64_t t" << ds << " = i" << ds << " - (" << p.low << "); ";
        if (step == 1) {  // no interior padding: a plain bounds test keeps the index affine
          body << "if (t" << ds << " < 0 || t" << ds << " >= " << ops[0]->shape.dim(d) << ") "
               << Ret(CallExpr(f.Fn(ops[1]), {})) << " ";
          args.push_back("t" + ds);
          continue;
        }
        body << "if (t" << ds << " < 0 || t" << ds << " % " << step << " != 0 || t" << ds
             << " / " << step << " >= " << ops[0]->shape.dim(d) << ") "
             << Ret(CallExpr(f.Fn(ops[1]), {})) << " ";
        args.push_back("(t" + ds + " / " + std::to_string(step) + ")");
      }
      body << Ret(CallExpr(f.Fn(ops[0]), args));
      return body.str();
    }
    case Opcode::kConcatenate: {
      if (ops.empty() || inst.dimensions.size() != 1) return CannotLower(inst, "bad concatenate");
      int64_t c = inst.dimensions[0];
      if (c < 0 || c >= rank) return CannotLower(inst, "concatenate dimension out of range");
      std::ostringstream body;
      int64_t offset = 0;
      for (size_t k = 0; k < ops.size(); ++k) {
        std::vector<std::string> args = IndexVars(rank);
        args[static_cast<size_t>(c)] = "(i" + std::to_string(c) + " - " + std::to_string(offset) + ")";
        offset += ops[k]->shape.dim(c);
        if (k + 1 < ops.size()) {
          body << "if (i" << c << " < " << offset << ") ";
        }
        body << Ret(CallExpr(f.Fn(ops[k]), args)) << " ";
      }
      return body.str();
    }
    case Opcode::kDynamicSlice: {
      if (static_cast<int64_t>(ops.size()) != rank + 1 ||
          static_cast<int64_t>(inst.dynamic_slice_sizes.size()) != rank) {
        return CannotLower(inst, "dynamic-slice needs one start index per dimension");
      }
      std::ostringstream body;
      std::vector<std::string> args;
      for (int64_t d = 0; d < rank; ++d) {
        int64_t hi = ops[0]->shape.dim(d) - inst.dynamic_slice_sizes[static_cast<size_t>(d)];
        std::string ds = std::to_string(d);
        body << "const int64_t s" << ds << " = std::min<int64_t>(std::max<int64_t>(static_cast<int64_t>("
             << CallExpr(f.Fn(ops[static_cast<size_t>(d) + 1]), {}) << "), 0), " << hi << "); ";
        args.push_back("(s" + ds + " + i" + ds + ")");
      }
      body << Ret(CallExpr(f.Fn(ops[0]), args));
      return body.str();
    }
    default:
      return CannotLower(inst, "not an elemental op");
  }
}

}  // namespace mk::codegen::cpu
