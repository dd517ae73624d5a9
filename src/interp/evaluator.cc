// Walks a computation in definition order, keeps each value until its last use, and evaluates
// control flow (call, while, conditional, tuple) itself; every other op goes to its group file.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "interp/elided_constants.h"
#include "interp/ops.h"

namespace mk::interp {

using hlo::Computation;
using hlo::DType;
using hlo::Instruction;
using hlo::Literal;
using hlo::Opcode;

Status OpError(const Instruction& inst, const std::string& msg) {
  return InvalidArgument(std::string(hlo::OpcodeName(inst.opcode)) + " %" + inst.name + ": " + msg,
                         inst.loc);
}

Status CheckInterrupted(const InterpreterOptions& options) {
  if (options.cancel != nullptr && options.cancel->load(std::memory_order_relaxed)) {
    return Cancelled("the reference interpreter was interrupted");
  }
  if (options.deadline && std::chrono::steady_clock::now() >= *options.deadline) {
    return Cancelled("the reference interpreter ran out of time");
  }
  return Status::Ok();
}

namespace {

// Deterministic values for a constant elided as `{...}` (the rule is shared with codegen).
Literal FillElidedConstant(const Instruction& inst) { return ElidedConstantValue(inst); }

Result<Literal> EvalConstant(const Instruction& inst, EvalContext& ctx) {
  if (inst.literal.has_value()) return *inst.literal;
  if (!hlo::IsEvaluable(inst.shape.dtype()) && !inst.shape.is_tuple()) {
    return Status(ErrorCode::kUnimplemented,
                  "constant %" + inst.name + ": element type " +
                      std::string(hlo::DTypeName(inst.shape.dtype())) +
                      " is parsed but not supported for evaluation",
                  inst.loc);
  }
  if (!ctx.options().fill_elided_constants) {
    return OpError(inst, "constant values are elided ({...}); cannot evaluate");
  }
  if (ctx.options().on_note) {
    ctx.options().on_note("constant %" + inst.name + " " + inst.shape.ToString(false) +
                          " was elided ({...}); filled with deterministic pseudo-random values");
  }
  return FillElidedConstant(inst);
}

Status CheckEvaluable(const Instruction& inst, const hlo::Shape& shape) {
  if (shape.is_tuple()) {
    for (const auto& s : shape.tuple_shapes()) MK_RETURN_IF_ERROR(CheckEvaluable(inst, s));
    return Status::Ok();
  }
  if (shape.is_token()) return Status::Ok();
  if (!hlo::IsEvaluable(shape.dtype())) {
    return Status(ErrorCode::kUnimplemented,
                  std::string(hlo::OpcodeName(inst.opcode)) + " %" + inst.name +
                      ": element type " + std::string(hlo::DTypeName(shape.dtype())) +
                      " is parsed but not supported for evaluation",
                  inst.loc);
  }
  return Status::Ok();
}

// Bytes of every array in `shape` (tuples summed), in long double: a legal shape can be larger
// than any int64 sum of its leaves.
long double ShapeBytes(const hlo::Shape& shape) {
  if (shape.is_tuple()) {
    long double sum = 0;
    for (const auto& s : shape.tuple_shapes()) sum += ShapeBytes(s);
    return sum;
  }
  return shape.is_array() ? static_cast<long double>(shape.byte_size()) : 0;
}

// A result larger than this machine's memory is bad input (a broadcast to f32[1e12] inside a
// module whose inputs are small), refused before the allocation fails as an internal error.
Status CheckResultFitsInMemory(const Instruction& inst) {
  static const long double kMemory = [] {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page_size = ::sysconf(_SC_PAGESIZE);
    return pages > 0 && page_size > 0 ? static_cast<long double>(pages) * page_size : 0.0L;
  }();
  const long double need = ShapeBytes(inst.shape);
  if (kMemory <= 0 || need <= kMemory) return Status::Ok();
  char text[96];
  std::snprintf(text, sizeof text, "%.3Lg bytes, more than this machine's %.3Lg", need, kMemory);
  return InvalidArgument(std::string(hlo::OpcodeName(inst.opcode)) + " %" + inst.name +
                             ": its result " + inst.shape.ToString(false) + " needs " + text +
                             " bytes of memory",
                         inst.loc);
}

Result<bool> ScalarPredicate(const Literal& lit) {
  if (lit.shape().is_tuple() || lit.num_elements() != 1) {
    return InvalidArgument("expected a scalar predicate, got " + lit.shape().ToString(false));
  }
  return lit.GetInt64(0) != 0;
}

// The verifier normally guarantees operand counts; the evaluator re-checks what it indexes.
Status NeedOperands(const Instruction& inst, const Operands& ops, size_t n) {
  if (ops.size() < n) {
    return OpError(inst, "expects " + std::to_string(n) + " operand(s), has " +
                             std::to_string(ops.size()));
  }
  return Status::Ok();
}

Result<Literal> EvalConditional(const Instruction& inst, const Operands& ops, EvalContext& ctx) {
  MK_RETURN_IF_ERROR(NeedOperands(inst, ops, 1));
  const Literal& selector = *ops[0];
  if (selector.shape().is_tuple() || selector.num_elements() != 1 ||
      !(selector.dtype() == DType::kPred || hlo::IsInteger(selector.dtype()))) {
    return OpError(inst, "branch selector must be a pred[] or integer scalar, got " +
                             selector.shape().ToString(false));
  }
  const int64_t n = static_cast<int64_t>(inst.called.size());
  if (n == 0 || ops.size() != inst.called.size() + 1 ||
      (selector.dtype() == DType::kPred && n != 2)) {
    return OpError(inst, "branch operands do not match branch computations");
  }
  size_t branch;
  if (selector.dtype() == DType::kPred) {
    // true_computation first, false_computation second.
    branch = selector.GetInt64(0) ? 0 : 1;
  } else {
    const int64_t index = selector.GetInt64(0);
    // Out-of-range indices run the last branch (XLA's rule).
    branch = static_cast<size_t>(index < 0 || index >= n ? n - 1 : index);
  }
  return ctx.Call(*inst.called[branch], {*ops[branch + 1]});
}

Result<Literal> EvalInstruction(const Instruction& inst, const Operands& ops, EvalContext& ctx) {
  switch (inst.opcode) {
    case Opcode::kParameter:
      return Internal("parameters are bound by the evaluator");
    case Opcode::kConstant:
      return EvalConstant(inst, ctx);
    case Opcode::kTuple: {
      std::vector<Literal> elements;
      for (const Literal* op : ops) elements.push_back(*op);
      return Literal::Tuple(std::move(elements));
    }
    case Opcode::kGetTupleElement: {
      MK_RETURN_IF_ERROR(NeedOperands(inst, ops, 1));
      const auto& elements = ops[0]->elements();
      if (inst.tuple_index < 0 || inst.tuple_index >= static_cast<int64_t>(elements.size())) {
        return OpError(inst, "index " + std::to_string(inst.tuple_index) + " out of range");
      }
      return elements[static_cast<size_t>(inst.tuple_index)];
    }
    case Opcode::kOptimizationBarrier:
    case Opcode::kCopy:
      MK_RETURN_IF_ERROR(NeedOperands(inst, ops, 1));
      return *ops[0];
    case Opcode::kCall: {
      std::vector<Literal> args;
      for (const Literal* op : ops) args.push_back(*op);
      if (inst.called.empty()) return OpError(inst, "has no called computation");
      return ctx.Call(*inst.called[0], args);
    }
    case Opcode::kWhile: {
      if (inst.called.size() != 2) return OpError(inst, "needs condition and body");
      MK_RETURN_IF_ERROR(NeedOperands(inst, ops, 1));
      Literal state = *ops[0];
      while (true) {
        MK_ASSIGN_OR_RETURN(Literal cond, ctx.Call(*inst.called[0], {state}));
        MK_ASSIGN_OR_RETURN(bool go_on, ScalarPredicate(cond));
        if (!go_on) break;
        MK_ASSIGN_OR_RETURN(state, ctx.Call(*inst.called[1], {state}));
      }
      return state;
    }
    case Opcode::kConditional:
      return EvalConditional(inst, ops, ctx);
    case Opcode::kCustomCall:
      return Status(ErrorCode::kUnimplemented,
                    "custom-call %" + inst.name + ": target \"" + inst.custom_call_target +
                        "\" is not supported by the interpreter",
                    inst.loc);
    case Opcode::kDot:
    case Opcode::kConvolution:
      return EvalContraction(inst, ops, ctx);
    case Opcode::kReduce:
    case Opcode::kReduceWindow:
    case Opcode::kSelectAndScatter:
      return EvalReduction(inst, ops, ctx);
    case Opcode::kGather:
    case Opcode::kScatter:
      return EvalIndexing(inst, ops, ctx);
    case Opcode::kSort:
      return EvalSort(inst, ops, ctx);
    case Opcode::kTopK:
      return EvalTopK(inst, ops);
    case Opcode::kRng:
    case Opcode::kRngBitGenerator:
      return EvalRng(inst, ops, ctx);
    case Opcode::kIota:
    case Opcode::kReshape:
    case Opcode::kBitcast:
    case Opcode::kBroadcast:
    case Opcode::kTranspose:
    case Opcode::kSlice:
    case Opcode::kDynamicSlice:
    case Opcode::kDynamicUpdateSlice:
    case Opcode::kConcatenate:
    case Opcode::kPad:
    case Opcode::kReverse:
      return EvalDataMovement(inst, ops, ctx);
    default:
      if (hlo::IsElementwise(inst.opcode) || inst.opcode == Opcode::kBitcastConvert ||
          inst.opcode == Opcode::kMap) {
        return EvalElementwise(inst, ops, ctx);
      }
      return Status(ErrorCode::kUnimplemented,
                    "the interpreter does not support opcode " +
                        std::string(hlo::OpcodeName(inst.opcode)) + " (%" + inst.name + ")",
                    inst.loc);
  }
}

}  // namespace

Result<Literal> EvaluateComputation(const Computation& computation,
                                    const std::vector<Literal>& args,
                                    const InterpreterOptions& options) {
  const auto& params = computation.parameters();
  if (args.size() != params.size()) {
    return InvalidArgument("computation " + computation.name + " takes " +
                           std::to_string(params.size()) + " parameter(s), got " +
                           std::to_string(args.size()));
  }
  EvalContext ctx(options);
  const auto& insts = computation.instructions();

  // Last use of each instruction, so values die as soon as nothing needs them.
  std::unordered_map<const Instruction*, size_t> last_use;
  for (size_t i = 0; i < insts.size(); ++i) {
    for (const Instruction* op : insts[i]->operands) last_use[op] = i;
  }
  std::unordered_map<const Instruction*, Literal> values;
  for (size_t i = 0; i < insts.size(); ++i) {
    const Instruction& inst = *insts[i];
    MK_RETURN_IF_ERROR(CheckInterrupted(options));
    if (inst.opcode == Opcode::kParameter) {
      size_t n = static_cast<size_t>(inst.parameter_number);
      if (n >= args.size()) return OpError(inst, "parameter number out of range");
      // An f8/complex/4-bit parameter is reported here, before any op sees its bytes.
      MK_RETURN_IF_ERROR(CheckEvaluable(inst, inst.shape));
      if (!args[n].shape().SameAs(inst.shape)) {
        return OpError(inst, "argument has shape " + args[n].shape().ToString(false) +
                                 ", parameter expects " + inst.shape.ToString(false));
      }
      values[&inst] = args[n];
    } else {
      MK_RETURN_IF_ERROR(CheckEvaluable(inst, inst.shape));
      MK_RETURN_IF_ERROR(CheckResultFitsInMemory(inst));
      Operands ops;
      for (const Instruction* op : inst.operands) {
        auto it = values.find(op);
        if (it == values.end()) return Internal("operand %" + op->name + " not evaluated");
        ops.push_back(&it->second);
      }
      MK_ASSIGN_OR_RETURN(Literal value, EvalInstruction(inst, ops, ctx));
      if (!value.shape().SameAs(inst.shape)) {
        return Internal(std::string(hlo::OpcodeName(inst.opcode)) + " %" + inst.name +
                        " produced " + value.shape().ToString(false) + ", expected " +
                        inst.shape.ToString(false));
      }
      values[&inst] = std::move(value);
    }
    for (const Instruction* op : inst.operands) {
      if (last_use[op] == i && op != computation.root()) values.erase(op);
    }
  }
  auto it = values.find(computation.root());
  if (it == values.end()) return Internal("root of " + computation.name + " not evaluated");
  return std::move(it->second);
}

Result<Literal> Evaluate(const hlo::Module& module, const std::vector<Literal>& args,
                         const InterpreterOptions& options) {
  if (module.entry() == nullptr) return InvalidArgument("module has no ENTRY computation");
  return EvaluateComputation(*module.entry(), args, options);
}

}  // namespace mk::interp
