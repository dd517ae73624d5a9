#include "codegen/pallas/jnp_ops.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace mk::codegen::pallas {

using hlo::DType;
using hlo::Instruction;
using hlo::Opcode;

namespace {

std::string Join(const std::vector<std::string>& parts, const std::string& sep = ", ") {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

std::string Call(const std::string& fn, const std::vector<std::string>& args) {
  return fn + "(" + Join(args) + ")";
}

// A Python float literal that evaluates to exactly `v` (17 significant digits round-trip a
// double; the value is one of its type, so casting it back is exact).
std::string PyFloat(double v) {
  if (std::isnan(v)) return "float('nan')";
  if (std::isinf(v)) return v > 0 ? "float('inf')" : "float('-inf')";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

std::string ElementLiteral(const hlo::Literal& lit, int64_t i) {
  const DType t = lit.dtype();
  if (t == DType::kPred) return lit.GetInt64(i) ? "True" : "False";
  if (hlo::IsFloat(t)) return PyFloat(lit.GetDouble(i));
  if (t == DType::kU64) return std::to_string(lit.GetUInt64(i));
  return std::to_string(lit.GetInt64(i));
}

// jax.lax's unary function for an elementwise unary opcode, or empty.
std::string LaxUnary(Opcode op) {
  switch (op) {
    case Opcode::kAbs: return "jax.lax.abs";
    case Opcode::kNegate: return "jax.lax.neg";
    case Opcode::kExp: return "jax.lax.exp";
    case Opcode::kExpm1: return "jax.lax.expm1";
    case Opcode::kLog: return "jax.lax.log";
    case Opcode::kLog1p: return "jax.lax.log1p";
    case Opcode::kTanh: return "jax.lax.tanh";
    case Opcode::kLogistic: return "jax.lax.logistic";
    case Opcode::kSqrt: return "jax.lax.sqrt";
    case Opcode::kRsqrt: return "jax.lax.rsqrt";
    case Opcode::kCbrt: return "jax.lax.cbrt";
    case Opcode::kSin: return "jax.lax.sin";
    case Opcode::kCos: return "jax.lax.cos";
    case Opcode::kTan: return "jax.lax.tan";
    case Opcode::kFloor: return "jax.lax.floor";
    case Opcode::kCeil: return "jax.lax.ceil";
    case Opcode::kSign: return "jax.lax.sign";
    case Opcode::kErf: return "jax.lax.erf";
    case Opcode::kIsFinite: return "jax.lax.is_finite";
    case Opcode::kNot: return "jax.lax.bitwise_not";
    case Opcode::kPopulationCount: return "jax.lax.population_count";
    case Opcode::kClz: return "jax.lax.clz";
    case Opcode::kCopy: return "";
    default: return "";
  }
}

std::string LaxBinary(Opcode op) {
  switch (op) {
    case Opcode::kAdd: return "jax.lax.add";
    case Opcode::kSubtract: return "jax.lax.sub";
    case Opcode::kMultiply: return "jax.lax.mul";
    case Opcode::kDivide: return "jax.lax.div";  // integers: truncation toward zero, as HLO
    case Opcode::kRemainder: return "jax.lax.rem";
    case Opcode::kMaximum: return "jax.lax.max";
    case Opcode::kMinimum: return "jax.lax.min";
    case Opcode::kPower: return "jax.lax.pow";
    case Opcode::kAtan2: return "jax.lax.atan2";
    case Opcode::kAnd: return "jax.lax.bitwise_and";
    case Opcode::kOr: return "jax.lax.bitwise_or";
    case Opcode::kXor: return "jax.lax.bitwise_xor";
    case Opcode::kShiftLeft: return "jax.lax.shift_left";
    case Opcode::kShiftRightArithmetic: return "jax.lax.shift_right_arithmetic";
    case Opcode::kShiftRightLogical: return "jax.lax.shift_right_logical";
    default: return "";
  }
}

std::string CompareFn(hlo::ComparisonDirection d) {
  switch (d) {
    case hlo::ComparisonDirection::kEq: return "jax.lax.eq";
    case hlo::ComparisonDirection::kNe: return "jax.lax.ne";
    case hlo::ComparisonDirection::kLt: return "jax.lax.lt";
    case hlo::ComparisonDirection::kLe: return "jax.lax.le";
    case hlo::ComparisonDirection::kGt: return "jax.lax.gt";
    case hlo::ComparisonDirection::kGe: return "jax.lax.ge";
  }
  return "jax.lax.eq";
}

// The type a dot or convolution accumulates in (what preferred_element_type asks for).
Result<std::string> AccumulatorType(const Instruction& inst) {
  const DType t = inst.shape.dtype();
  if (t == DType::kF64) return std::string("jnp.float64");
  if (hlo::IsFloat(t)) return std::string("jnp.float32");
  if (hlo::IsInteger(t) && hlo::IntBitWidth(t) <= 32) {
    return std::string(hlo::IsSignedInt(t) ? "jnp.int32" : "jnp.uint32");
  }
  return CannotTranslate(inst, "no accumulator type for " + std::string(hlo::DTypeName(t)));
}

std::string Precision(const Instruction& inst) {
  // f32 operands at full precision: a TPU's default runs them as bf16 passes, which the HLO
  // (and the reference interpreter) do not.
  for (const Instruction* o : inst.operands) {
    if (o->shape.dtype() == DType::kF32 || o->shape.dtype() == DType::kF64) {
      return "jax.lax.Precision.HIGHEST";
    }
  }
  return "None";
}

Result<std::string> DotExpr(const Instruction& inst, const std::vector<std::string>& args) {
  if (!inst.dot_dims) return CannotTranslate(inst, "dot without dimension numbers");
  const auto& d = *inst.dot_dims;
  MK_ASSIGN_OR_RETURN(std::string acc, AccumulatorType(inst));
  MK_ASSIGN_OR_RETURN(std::string out, JnpDType(inst.shape.dtype()));
  return "jax.lax.dot_general(" + args[0] + ", " + args[1] + ", ((" + PyTuple(d.lhs_contracting) +
         ", " + PyTuple(d.rhs_contracting) + "), (" + PyTuple(d.lhs_batch) + ", " +
         PyTuple(d.rhs_batch) + ")), precision=" + Precision(inst) +
         ", preferred_element_type=" + acc + ").astype(" + out + ")";
}

std::string ConvSpec(int64_t a, int64_t b, const std::vector<int64_t>& spatial) {
  std::vector<int64_t> all = {a, b};
  all.insert(all.end(), spatial.begin(), spatial.end());
  return PyTuple(all);
}

Result<std::string> ConvExpr(const Instruction& inst, const std::vector<std::string>& args) {
  if (!inst.conv_dims || !inst.window) return CannotTranslate(inst, "convolution without window or dim_labels");
  const auto& c = *inst.conv_dims;
  std::vector<int64_t> strides, lhs_dil, rhs_dil;
  std::vector<std::string> pads;
  for (const auto& w : *inst.window) {
    if (w.reversal) return CannotTranslate(inst, "window reversal");
    strides.push_back(w.stride);
    lhs_dil.push_back(w.lhs_dilation);
    rhs_dil.push_back(w.rhs_dilation);
    pads.push_back("(" + std::to_string(w.pad_low) + ", " + std::to_string(w.pad_high) + ")");
  }
  MK_ASSIGN_OR_RETURN(std::string acc, AccumulatorType(inst));
  MK_ASSIGN_OR_RETURN(std::string out, JnpDType(inst.shape.dtype()));
  return "jax.lax.conv_general_dilated(" + args[0] + ", " + args[1] + ", window_strides=" +
         PyTuple(strides) + ", padding=[" + Join(pads) + "], lhs_dilation=" + PyTuple(lhs_dil) +
         ", rhs_dilation=" + PyTuple(rhs_dil) + ", dimension_numbers=jax.lax.ConvDimensionNumbers(" +
         ConvSpec(c.input_batch, c.input_feature, c.input_spatial) + ", " +
         ConvSpec(c.kernel_output_feature, c.kernel_input_feature, c.kernel_spatial) + ", " +
         ConvSpec(c.output_batch, c.output_feature, c.output_spatial) +
         "), feature_group_count=" + std::to_string(inst.feature_group_count) +
         ", batch_group_count=" + std::to_string(inst.batch_group_count) +
         ", precision=" + Precision(inst) + ", preferred_element_type=" + acc + ").astype(" + out +
         ")";
}

// A reduction of `x` over `dims` combined with the init value `init`.
Result<std::string> ReduceExpr(const Instruction& inst, const std::vector<std::string>& args) {
  if (inst.operands.size() != 2 || !inst.shape.is_array()) {
    return CannotTranslate(inst, "variadic reduce (several inputs)");
  }
  MK_ASSIGN_OR_RETURN(std::string kind, ReducerKind(inst));
  MK_ASSIGN_OR_RETURN(std::string out, JnpDType(inst.shape.dtype()));
  const std::string axes = PyTuple(inst.dimensions);
  const std::string& x = args[0];
  const std::string& init = args[1];
  const DType t = inst.shape.dtype();
  std::string reduced;
  if (kind == "add") {
    // Floats narrower than f32 accumulate in f32 and round once; integers wrap in their type.
    if (t == DType::kBF16 || t == DType::kF16) {
      reduced = "jnp.sum(" + x + ".astype(jnp.float32), axis=" + axes + ").astype(" + out + ")";
    } else {
      reduced = "jnp.sum(" + x + ", axis=" + axes + ", dtype=" + out + ")";
    }
    return "jax.lax.add(" + reduced + ", " + init + ")";
  }
  if (kind == "mul") return "jax.lax.mul(jnp.prod(" + x + ", axis=" + axes + ", dtype=" + out + "), " + init + ")";
  if (kind == "max") return "jax.lax.max(jnp.max(" + x + ", axis=" + axes + "), " + init + ")";
  if (kind == "min") return "jax.lax.min(jnp.min(" + x + ", axis=" + axes + "), " + init + ")";
  if (kind == "and") return "jax.lax.bitwise_and(jnp.all(" + x + ", axis=" + axes + "), " + init + ")";
  if (kind == "or") return "jax.lax.bitwise_or(jnp.any(" + x + ", axis=" + axes + "), " + init + ")";
  return CannotTranslate(inst, "reduction computation " + kind);
}

Result<std::string> ReduceWindowExpr(const Instruction& inst, const std::vector<std::string>& args) {
  if (inst.operands.size() != 2 || !inst.window) return CannotTranslate(inst, "variadic reduce-window");
  MK_ASSIGN_OR_RETURN(std::string kind, ReducerKind(inst));
  std::string fn;
  if (kind == "add") fn = "jax.lax.add";
  else if (kind == "max") fn = "jax.lax.max";
  else if (kind == "min") fn = "jax.lax.min";
  else return CannotTranslate(inst, "reduce-window computation " + kind);
  std::vector<int64_t> size, stride, base, win;
  std::vector<std::string> pads;
  for (const auto& w : *inst.window) {
    if (w.reversal) return CannotTranslate(inst, "window reversal");
    size.push_back(w.size);
    stride.push_back(w.stride);
    base.push_back(w.lhs_dilation);
    win.push_back(w.rhs_dilation);
    pads.push_back("(" + std::to_string(w.pad_low) + ", " + std::to_string(w.pad_high) + ")");
  }
  return "jax.lax.reduce_window(" + args[0] + ", " + args[1] + ", " + fn + ", " + PyTuple(size) +
         ", " + PyTuple(stride) + ", [" + Join(pads) + "], " + PyTuple(base) + ", " +
         PyTuple(win) + ")";
}

// HLO gather as jax.lax.gather: the index vector moved to the last dim of the indices (where
// jax wants it), out-of-range starts clamped as HLO does (GatherScatterMode.CLIP).
Result<std::string> GatherExpr(const Instruction& inst, const std::vector<std::string>& args) {
  if (!inst.gather_dims) return CannotTranslate(inst, "gather without dimension numbers");
  const auto& g = *inst.gather_dims;
  const int64_t rank = inst.operands[1]->shape.rank();
  const int64_t ivd = g.index_vector_dim;
  std::string idx = args[1];
  std::vector<int64_t> idx_batching = g.start_indices_batching_dims;
  if (ivd == rank) {
    idx = "jnp.expand_dims(" + idx + ", -1)";
  } else if (ivd != rank - 1) {
    idx = "jnp.moveaxis(" + idx + ", " + std::to_string(ivd) + ", -1)";
    for (int64_t& b : idx_batching) {
      if (b > ivd) --b;
    }
  }
  return "jax.lax.gather(" + args[0] + ", " + idx +
         ", jax.lax.GatherDimensionNumbers(offset_dims=" + PyTuple(g.offset_dims) +
         ", collapsed_slice_dims=" + PyTuple(g.collapsed_slice_dims) +
         ", start_index_map=" + PyTuple(g.start_index_map) +
         ", operand_batching_dims=" + PyTuple(g.operand_batching_dims) +
         ", start_indices_batching_dims=" + PyTuple(idx_batching) + "), slice_sizes=" +
         PyTuple(inst.gather_slice_sizes) + ", indices_are_sorted=" +
         (inst.indices_are_sorted ? "True" : "False") +
         ", mode=jax.lax.GatherScatterMode.CLIP)";
}

// HLO scatter as jax.lax.scatter_<op>: the index vector moved last as for gather; updates
// whose window falls outside the operand are skipped, as HLO does (FILL_OR_DROP).
Result<std::string> ScatterExpr(const Instruction& inst, const std::vector<std::string>& args) {
  if (!inst.scatter_dims || inst.operands.size() != 3) {
    return CannotTranslate(inst, "variadic scatter or scatter without dimension numbers");
  }
  const auto& g = *inst.scatter_dims;
  std::string fn;
  const hlo::Computation* comp = inst.to_apply();
  if (comp && comp->root() && comp->root()->opcode == Opcode::kParameter &&
      comp->root()->parameter_number == 1) {
    fn = "jax.lax.scatter";  // the update replaces the element
  } else {
    MK_ASSIGN_OR_RETURN(std::string kind, ReducerKind(inst));
    if (kind == "add") fn = "jax.lax.scatter_add";
    else if (kind == "mul") fn = "jax.lax.scatter_mul";
    else if (kind == "max") fn = "jax.lax.scatter_max";
    else if (kind == "min") fn = "jax.lax.scatter_min";
    else return CannotTranslate(inst, "scatter computation " + kind);
  }
  const int64_t rank = inst.operands[1]->shape.rank();
  const int64_t ivd = g.index_vector_dim;
  std::string idx = args[1];
  std::vector<int64_t> idx_batching = g.scatter_indices_batching_dims;
  if (ivd == rank) {
    idx = "jnp.expand_dims(" + idx + ", -1)";
  } else if (ivd != rank - 1) {
    idx = "jnp.moveaxis(" + idx + ", " + std::to_string(ivd) + ", -1)";
    for (int64_t& b : idx_batching) {
      if (b > ivd) --b;
    }
  }
  return fn + "(" + args[0] + ", " + idx + ", " + args[2] +
         ", jax.lax.ScatterDimensionNumbers(update_window_dims=" + PyTuple(g.update_window_dims) +
         ", inserted_window_dims=" + PyTuple(g.inserted_window_dims) +
         ", scatter_dims_to_operand_dims=" + PyTuple(g.scatter_dims_to_operand_dims) +
         ", operand_batching_dims=" + PyTuple(g.input_batching_dims) +
         ", scatter_indices_batching_dims=" + PyTuple(idx_batching) + "), indices_are_sorted=" +
         (inst.indices_are_sorted ? "True" : "False") + ", unique_indices=" +
         (inst.unique_indices ? "True" : "False") + ", mode=jax.lax.GatherScatterMode.FILL_OR_DROP)";
}

}  // namespace

Status CannotTranslate(const Instruction& inst, const std::string& why) {
  return Status(ErrorCode::kUnimplemented,
                "pallas codegen cannot translate " + std::string(hlo::OpcodeName(inst.opcode)) +
                    " %" + inst.name + ": " + why,
                inst.loc);
}

Result<std::string> JnpDType(DType t) {
  switch (t) {
    case DType::kPred: return std::string("jnp.bool_");
    case DType::kS8: return std::string("jnp.int8");
    case DType::kS16: return std::string("jnp.int16");
    case DType::kS32: return std::string("jnp.int32");
    case DType::kS64: return std::string("jnp.int64");
    case DType::kU8: return std::string("jnp.uint8");
    case DType::kU16: return std::string("jnp.uint16");
    case DType::kU32: return std::string("jnp.uint32");
    case DType::kU64: return std::string("jnp.uint64");
    case DType::kF16: return std::string("jnp.float16");
    case DType::kBF16: return std::string("jnp.bfloat16");
    case DType::kF32: return std::string("jnp.float32");
    case DType::kF64: return std::string("jnp.float64");
    default:
      return Unimplemented("pallas codegen: no JAX element type for " +
                           std::string(hlo::DTypeName(t)) + " here");
  }
}

std::string PyTuple(const std::vector<int64_t>& values) {
  if (values.empty()) return "()";
  std::string s = "(";
  for (size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + std::to_string(values[i]);
  return s + (values.size() == 1 ? ",)" : ")");
}

Result<std::string> ScalarConstantExpr(const Instruction& c) {
  if (!c.literal) return CannotTranslate(c, "constant values are elided ({...}); give them values first");
  MK_ASSIGN_OR_RETURN(std::string t, JnpDType(c.shape.dtype()));
  return "jnp.asarray(" + ElementLiteral(*c.literal, 0) + ", " + t + ")";
}

Result<std::string> ArrayConstantExpr(const Instruction& c) {
  if (!c.literal) return CannotTranslate(c, "constant values are elided ({...}); give them values first");
  if (!c.shape.is_array()) return CannotTranslate(c, "tuple constants");
  MK_ASSIGN_OR_RETURN(std::string t, JnpDType(c.shape.dtype()));
  std::vector<std::string> elems;
  elems.reserve(static_cast<size_t>(c.literal->num_elements()));
  for (int64_t i = 0; i < c.literal->num_elements(); ++i) elems.push_back(ElementLiteral(*c.literal, i));
  // Floats of every width go through f64 (exact: the values are the type's own).
  const std::string host = hlo::IsFloat(c.shape.dtype()) ? "np.float64" : t;
  return "jnp.asarray(np.array([" + Join(elems) + "], dtype=" + host + ").reshape(" +
         PyTuple(c.shape.dims()) + "), " + t + ")";
}

Result<std::string> ReducerKind(const Instruction& reduce) {
  const hlo::Computation* comp = reduce.to_apply();
  if (!comp || !comp->root()) return CannotTranslate(reduce, "no reduction computation");
  const Instruction* root = comp->root();
  if (root->operands.size() != 2 || comp->parameters().size() != 2 ||
      root->operands[0]->opcode != Opcode::kParameter ||
      root->operands[1]->opcode != Opcode::kParameter ||
      root->operands[0] == root->operands[1]) {
    return CannotTranslate(reduce, "its computation is not one binary op of its two parameters");
  }
  switch (root->opcode) {
    case Opcode::kAdd: return std::string("add");
    case Opcode::kMultiply: return std::string("mul");
    case Opcode::kMaximum: return std::string("max");
    case Opcode::kMinimum: return std::string("min");
    case Opcode::kAnd: return std::string(root->shape.dtype() == DType::kPred ? "and" : "bitand");
    case Opcode::kOr: return std::string(root->shape.dtype() == DType::kPred ? "or" : "bitor");
    default:
      return CannotTranslate(reduce, "reduction computation " +
                                         std::string(hlo::OpcodeName(root->opcode)));
  }
}

bool IsTranslatable(Opcode op) {
  if (!LaxUnary(op).empty() || !LaxBinary(op).empty()) return true;
  switch (op) {
    case Opcode::kCopy: case Opcode::kConvert: case Opcode::kBitcastConvert:
    case Opcode::kCompare: case Opcode::kSelect: case Opcode::kClamp:
    case Opcode::kRoundNearestEven: case Opcode::kRoundNearestAfz: case Opcode::kReducePrecision:
    case Opcode::kBroadcast: case Opcode::kReshape: case Opcode::kBitcast:
    case Opcode::kTranspose: case Opcode::kSlice: case Opcode::kConcatenate: case Opcode::kPad:
    case Opcode::kReverse: case Opcode::kIota: case Opcode::kConstant: case Opcode::kReduce:
    case Opcode::kDot: case Opcode::kConvolution: case Opcode::kReduceWindow:
    case Opcode::kTuple: case Opcode::kGetTupleElement: case Opcode::kGather:
    case Opcode::kScatter:
      return true;
    default:
      return false;
  }
}

Result<std::string> TranslateOp(const Instruction& inst, const std::vector<std::string>& args,
                                const OpSite& site) {
  const Opcode op = inst.opcode;
  if (args.size() != inst.operands.size()) return Internal("operand count mismatch for %" + inst.name);
  if (op == Opcode::kTuple) return "(" + Join(args) + (args.size() == 1 ? ",)" : ")");
  if (op == Opcode::kGetTupleElement) return args[0] + "[" + std::to_string(inst.tuple_index) + "]";
  if (!inst.shape.is_array()) return CannotTranslate(inst, "tuple-shaped results");
  MK_ASSIGN_OR_RETURN(std::string out, JnpDType(inst.shape.dtype()));
  const std::string shape = PyTuple(site.block_dims);
  if (op == Opcode::kCopy) return args[0];
  if (std::string fn = LaxUnary(op); !fn.empty()) {
    if (op == Opcode::kNot && inst.shape.dtype() == DType::kPred) return "jnp.logical_not(" + args[0] + ")";
    return Call(fn, args);
  }
  if (std::string fn = LaxBinary(op); !fn.empty()) return Call(fn, args);
  switch (op) {
    case Opcode::kConvert:
      return "jax.lax.convert_element_type(" + args[0] + ", " + out + ")";
    case Opcode::kBitcastConvert:
      if (hlo::DTypeByteSize(inst.shape.dtype()) != hlo::DTypeByteSize(inst.operands[0]->shape.dtype())) {
        return CannotTranslate(inst, "bitcast-convert between types of different widths");
      }
      return "jax.lax.bitcast_convert_type(" + args[0] + ", " + out + ")";
    case Opcode::kCompare:
      if (!inst.direction) return CannotTranslate(inst, "compare without a direction");
      if (inst.comparison_type == "TOTALORDER") return CannotTranslate(inst, "TOTALORDER comparisons");
      return Call(CompareFn(*inst.direction), args);
    case Opcode::kSelect:
      return "jnp.where(" + Join(args) + ")";
    case Opcode::kClamp:  // clamp(min, x, max)
      return "jax.lax.clamp(" + args[0] + ", " + args[1] + ", " + args[2] + ")";
    case Opcode::kRoundNearestEven:
      return "jax.lax.round(" + args[0] + ", jax.lax.RoundingMethod.TO_NEAREST_EVEN)";
    case Opcode::kRoundNearestAfz:
      return "jax.lax.round(" + args[0] + ", jax.lax.RoundingMethod.AWAY_FROM_ZERO)";
    case Opcode::kReducePrecision:
      return "jax.lax.reduce_precision(" + args[0] + ", exponent_bits=" +
             std::to_string(inst.exponent_bits) + ", mantissa_bits=" +
             std::to_string(inst.mantissa_bits) + ")";
    case Opcode::kBroadcast:
    case Opcode::kReshape:
    case Opcode::kBitcast:
    case Opcode::kTranspose: {
      // Mosaic lays bool vectors out as masks and refuses most of their shape casts ("unsupported
      // shape cast" of vector<15xi1> to vector<15x1xi1>, or a crash): in a kernel body a bool
      // array is moved as int32 0/1 and compared back.
      const bool bool_in_kernel = site.in_kernel && inst.shape.dtype() == hlo::DType::kPred;
      const std::string x = bool_in_kernel ? args[0] + ".astype(jnp.int32)" : args[0];
      std::string e = inst.opcode == Opcode::kBroadcast
                          ? "jax.lax.broadcast_in_dim(" + x + ", " + shape + ", " + PyTuple(inst.dimensions) + ")"
                      : inst.opcode == Opcode::kTranspose
                          ? "jax.lax.transpose(" + x + ", " + PyTuple(inst.dimensions) + ")"
                          : "jnp.reshape(" + x + ", " + shape + ")";
      return bool_in_kernel ? "(" + e + " != 0)" : e;
    }
    case Opcode::kSlice: {
      std::vector<int64_t> start, limit, stride;
      for (const auto& s : inst.slice) {
        start.push_back(s.start);
        limit.push_back(s.limit);
        stride.push_back(s.stride);
      }
      // A dimension the block covers in part is sliced whole (the block plan allows slicing
      // only along dimensions it keeps whole): its limit is the block's.
      for (size_t d = 0; d < limit.size() && d < site.block_dims.size(); ++d) {
        if (start[d] == 0 && stride[d] == 1 && limit[d] == inst.operands[0]->shape.dim(static_cast<int64_t>(d))) {
          limit[d] = site.block_dims[d];
        }
      }
      return "jax.lax.slice(" + args[0] + ", " + PyTuple(start) + ", " + PyTuple(limit) + ", " +
             PyTuple(stride) + ")";
    }
    case Opcode::kConcatenate:
      return "jax.lax.concatenate([" + Join(args) + "], " + std::to_string(inst.dimensions.at(0)) + ")";
    case Opcode::kPad: {
      std::vector<std::string> cfg;
      for (const auto& p : inst.padding) {
        cfg.push_back("(" + std::to_string(p.low) + ", " + std::to_string(p.high) + ", " +
                      std::to_string(p.interior) + ")");
      }
      return "jax.lax.pad(" + args[0] + ", " + args[1] + ", [" + Join(cfg) + "])";
    }
    case Opcode::kReverse:
      return "jax.lax.rev(" + args[0] + ", " + PyTuple(inst.dimensions) + ")";
    case Opcode::kIota: {
      // Mosaic's iota makes integers only (a float one fails Pallas' verifier, 3p's and 15p's
      // RoPE positions): in a kernel body a float iota is an int32 one converted. Positions
      // stay exact in f32 up to 2^24, past any block.
      const bool float_in_kernel = site.in_kernel && hlo::IsFloat(inst.shape.dtype());
      const std::string t = float_in_kernel ? "jnp.int32" : out;
      std::string e = "jax.lax.broadcasted_iota(" + t + ", " + shape + ", " +
                      std::to_string(inst.iota_dimension) + ")";
      if (!site.iota_offset.empty()) e = "(" + e + " + jnp.asarray(" + site.iota_offset + ", " + t + "))";
      if (float_in_kernel) e += ".astype(" + out + ")";
      return e;
    }
    case Opcode::kConstant:
      if (inst.shape.rank() == 0) return ScalarConstantExpr(inst);
      if (site.in_kernel) return Internal("array constant %" + inst.name + " inside a kernel body");
      return ArrayConstantExpr(inst);
    case Opcode::kReduce:
      return ReduceExpr(inst, args);
    case Opcode::kDot:
      if (site.in_kernel) return Internal("dot %" + inst.name + " translated inside a kernel body");
      return DotExpr(inst, args);
    case Opcode::kConvolution:
      if (site.in_kernel) return CannotTranslate(inst, "convolution inside a pallas_call body");
      return ConvExpr(inst, args);
    case Opcode::kReduceWindow:
      if (site.in_kernel) return CannotTranslate(inst, "reduce-window inside a pallas_call body");
      return ReduceWindowExpr(inst, args);
    case Opcode::kScatter:
      if (site.in_kernel) return CannotTranslate(inst, "scatter inside a pallas_call body");
      return ScatterExpr(inst, args);
    case Opcode::kGather:
      if (site.in_kernel) return CannotTranslate(inst, "gather inside a pallas_call body");
      return GatherExpr(inst, args);
    default:
      return CannotTranslate(inst, "no jax translation yet");
  }
}

}  // namespace mk::codegen::pallas
