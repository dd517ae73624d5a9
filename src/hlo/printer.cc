// Canonical HLO text, in XLA's long form: every operand with its shape, every name with `%`,
// every computation with its signature. parse(print(m)) reproduces m.
#include "hlo/printer.h"

#include <string_view>

namespace mk::hlo {
namespace {

std::string JoinInts(const std::vector<int64_t>& v, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += sep;
    out += std::to_string(v[i]);
  }
  return out;
}

std::string IntList(const std::vector<int64_t>& v) { return "{" + JoinInts(v, ",") + "}"; }

// Escapes for a double-quoted string; octal escapes have a fixed width of three digits so
// that a following digit can never be read as part of the escape.
std::string QuoteString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u >= 0x7f) {
      out += '\\';
      out += static_cast<char>('0' + ((u >> 6) & 7));
      out += static_cast<char>('0' + ((u >> 3) & 7));
      out += static_cast<char>('0' + (u & 7));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string WindowText(const std::vector<WindowDimension>& window) {
  if (window.empty()) return "{}";
  std::vector<int64_t> size, stride, lhs, rhs, reversal;
  bool any_stride = false, any_pad = false, any_lhs = false, any_rhs = false, any_rev = false;
  std::string pad;
  for (size_t i = 0; i < window.size(); ++i) {
    const WindowDimension& w = window[i];
    size.push_back(w.size);
    stride.push_back(w.stride);
    lhs.push_back(w.lhs_dilation);
    rhs.push_back(w.rhs_dilation);
    reversal.push_back(w.reversal ? 1 : 0);
    any_stride |= w.stride != 1;
    any_pad |= w.pad_low != 0 || w.pad_high != 0;
    any_lhs |= w.lhs_dilation != 1;
    any_rhs |= w.rhs_dilation != 1;
    any_rev |= w.reversal;
    if (i) pad += "x";
    pad += std::to_string(w.pad_low) + "_" + std::to_string(w.pad_high);
  }
  std::string out = "{size=" + JoinInts(size, "x");
  if (any_stride) out += " stride=" + JoinInts(stride, "x");
  if (any_pad) out += " pad=" + pad;
  if (any_lhs) out += " lhs_dilate=" + JoinInts(lhs, "x");
  if (any_rhs) out += " rhs_dilate=" + JoinInts(rhs, "x");
  if (any_rev) out += " rhs_reversal=" + JoinInts(reversal, "x");
  return out + "}";
}

// Inverse of the dim_labels parser: position p of a side holds 'b'/'f' (or 'i'/'o') or the
// digit of the spatial dimension stored there.
std::string LabelsText(int64_t a_dim, char a, int64_t b_dim, char b,
                       const std::vector<int64_t>& spatial) {
  size_t rank = spatial.size() + 2;
  std::string out(rank, '?');
  auto put = [&](int64_t pos, char c) {
    if (pos >= 0 && static_cast<size_t>(pos) < rank) out[static_cast<size_t>(pos)] = c;
  };
  put(a_dim, a);
  put(b_dim, b);
  for (size_t i = 0; i < spatial.size() && i < 10; ++i) put(spatial[i], static_cast<char>('0' + i));
  return out;
}

std::string DimLabelsText(const ConvDimensionNumbers& d) {
  return LabelsText(d.input_batch, 'b', d.input_feature, 'f', d.input_spatial) + "_" +
         LabelsText(d.kernel_input_feature, 'i', d.kernel_output_feature, 'o', d.kernel_spatial) +
         "->" + LabelsText(d.output_batch, 'b', d.output_feature, 'f', d.output_spatial);
}

std::string CalleeName(const Computation* c) { return c ? "%" + c->name : "%<null>"; }

void AppendCalled(const Instruction& inst, std::vector<std::string>& attrs) {
  const auto& called = inst.called;
  if (called.empty()) return;
  auto list = [&]() {
    std::string out = "{";
    for (size_t i = 0; i < called.size(); ++i) {
      if (i) out += ", ";
      out += CalleeName(called[i]);
    }
    return out + "}";
  };
  switch (inst.opcode) {
    case Opcode::kWhile:
      if (called.size() == 2) {
        attrs.push_back("condition=" + CalleeName(called[0]));
        attrs.push_back("body=" + CalleeName(called[1]));
        return;
      }
      break;
    case Opcode::kSelectAndScatter:
      if (called.size() == 2) {
        attrs.push_back("select=" + CalleeName(called[0]));
        attrs.push_back("scatter=" + CalleeName(called[1]));
        return;
      }
      break;
    case Opcode::kConditional:
      if (called.size() == 2 && !inst.operands.empty() && inst.operands[0] &&
          inst.operands[0]->shape.dtype() == DType::kPred) {
        attrs.push_back("true_computation=" + CalleeName(called[0]));
        attrs.push_back("false_computation=" + CalleeName(called[1]));
      } else {
        attrs.push_back("branch_computations=" + list());
      }
      return;
    case Opcode::kFusion:
      if (called.size() == 1) {
        attrs.push_back("calls=" + CalleeName(called[0]));
        return;
      }
      break;
    default:
      break;
  }
  if (called.size() == 1) {
    attrs.push_back("to_apply=" + CalleeName(called[0]));
  } else {
    attrs.push_back("called_computations=" + list());
  }
}

std::vector<std::string> AttributeTexts(const Instruction& inst) {
  std::vector<std::string> a;
  if (inst.opcode == Opcode::kGetTupleElement || inst.tuple_index != 0) {
    a.push_back("index=" + std::to_string(inst.tuple_index));
  }
  if (inst.opcode == Opcode::kIota || inst.iota_dimension != 0) {
    a.push_back("iota_dimension=" + std::to_string(inst.iota_dimension));
  }
  if (!inst.slice.empty()) {
    std::string s = "slice={";
    for (size_t i = 0; i < inst.slice.size(); ++i) {
      const SliceDimension& d = inst.slice[i];
      if (i) s += ", ";
      s += "[" + std::to_string(d.start) + ":" + std::to_string(d.limit);
      if (d.stride != 1) s += ":" + std::to_string(d.stride);
      s += "]";
    }
    a.push_back(s + "}");
  }
  if (!inst.padding.empty()) {
    std::string s = "padding=";
    for (size_t i = 0; i < inst.padding.size(); ++i) {
      const PaddingDimension& p = inst.padding[i];
      if (i) s += "x";
      s += std::to_string(p.low) + "_" + std::to_string(p.high);
      if (p.interior != 0) s += "_" + std::to_string(p.interior);
    }
    a.push_back(s);
  }
  if (inst.window) a.push_back("window=" + WindowText(*inst.window));
  if (inst.conv_dims) a.push_back("dim_labels=" + DimLabelsText(*inst.conv_dims));
  if (inst.feature_group_count != 1) {
    a.push_back("feature_group_count=" + std::to_string(inst.feature_group_count));
  }
  if (inst.batch_group_count != 1) {
    a.push_back("batch_group_count=" + std::to_string(inst.batch_group_count));
  }
  if (inst.dot_dims) {
    const DotDimensions& d = *inst.dot_dims;
    if (!d.lhs_batch.empty()) a.push_back("lhs_batch_dims=" + IntList(d.lhs_batch));
    a.push_back("lhs_contracting_dims=" + IntList(d.lhs_contracting));
    if (!d.rhs_batch.empty()) a.push_back("rhs_batch_dims=" + IntList(d.rhs_batch));
    a.push_back("rhs_contracting_dims=" + IntList(d.rhs_contracting));
  }
  if (!inst.dimensions.empty() || inst.opcode == Opcode::kBroadcast ||
      inst.opcode == Opcode::kTranspose || inst.opcode == Opcode::kReduce ||
      inst.opcode == Opcode::kReverse) {
    a.push_back("dimensions=" + IntList(inst.dimensions));
  }
  if (inst.gather_dims) {
    const GatherDimensions& g = *inst.gather_dims;
    a.push_back("offset_dims=" + IntList(g.offset_dims));
    a.push_back("collapsed_slice_dims=" + IntList(g.collapsed_slice_dims));
    a.push_back("start_index_map=" + IntList(g.start_index_map));
    if (!g.operand_batching_dims.empty()) {
      a.push_back("operand_batching_dims=" + IntList(g.operand_batching_dims));
    }
    if (!g.start_indices_batching_dims.empty()) {
      a.push_back("start_indices_batching_dims=" + IntList(g.start_indices_batching_dims));
    }
    a.push_back("index_vector_dim=" + std::to_string(g.index_vector_dim));
  }
  if (!inst.gather_slice_sizes.empty() || inst.opcode == Opcode::kGather) {
    a.push_back("slice_sizes=" + IntList(inst.gather_slice_sizes));
  }
  if (inst.scatter_dims) {
    const ScatterDimensions& s = *inst.scatter_dims;
    a.push_back("update_window_dims=" + IntList(s.update_window_dims));
    a.push_back("inserted_window_dims=" + IntList(s.inserted_window_dims));
    a.push_back("scatter_dims_to_operand_dims=" + IntList(s.scatter_dims_to_operand_dims));
    if (!s.input_batching_dims.empty()) {
      a.push_back("input_batching_dims=" + IntList(s.input_batching_dims));
    }
    if (!s.scatter_indices_batching_dims.empty()) {
      a.push_back("scatter_indices_batching_dims=" + IntList(s.scatter_indices_batching_dims));
    }
    a.push_back("index_vector_dim=" + std::to_string(s.index_vector_dim));
  }
  if (inst.indices_are_sorted) a.push_back("indices_are_sorted=true");
  if (inst.unique_indices) a.push_back("unique_indices=true");
  if (!inst.dynamic_slice_sizes.empty() || inst.opcode == Opcode::kDynamicSlice) {
    a.push_back("dynamic_slice_sizes=" + IntList(inst.dynamic_slice_sizes));
  }
  if (inst.direction) a.push_back("direction=" + std::string(ComparisonDirectionName(*inst.direction)));
  if (!inst.comparison_type.empty()) a.push_back("type=" + inst.comparison_type);
  if (!inst.operand_precision.empty()) {
    std::string s = "operand_precision={";
    for (size_t i = 0; i < inst.operand_precision.size(); ++i) {
      if (i) s += ",";
      s += inst.operand_precision[i];
    }
    a.push_back(s + "}");
  }
  if (inst.is_stable) a.push_back("is_stable=true");
  if (inst.exponent_bits != 0 || inst.opcode == Opcode::kReducePrecision) {
    a.push_back("exponent_bits=" + std::to_string(inst.exponent_bits));
  }
  if (inst.mantissa_bits != 0 || inst.opcode == Opcode::kReducePrecision) {
    a.push_back("mantissa_bits=" + std::to_string(inst.mantissa_bits));
  }
  if (!inst.rng_algorithm.empty()) a.push_back("algorithm=" + inst.rng_algorithm);
  if (!inst.rng_distribution.empty()) a.push_back("distribution=" + inst.rng_distribution);
  if (inst.k != 0 || inst.opcode == Opcode::kTopK) a.push_back("k=" + std::to_string(inst.k));
  if (!inst.has_largest || inst.opcode == Opcode::kTopK) {
    a.push_back(std::string("largest=") + (inst.has_largest ? "true" : "false"));
  }
  if (!inst.custom_call_target.empty() || inst.opcode == Opcode::kCustomCall) {
    a.push_back("custom_call_target=" + QuoteString(inst.custom_call_target));
  }
  AppendCalled(inst, a);
  for (const auto& [key, value] : inst.extra_attributes) a.push_back(key + "=" + value);
  return a;
}

}  // namespace

std::string PrintInstruction(const Instruction& inst) {
  std::string out = "%" + inst.name + " = " + inst.shape.ToString() + " " +
                    std::string(OpcodeName(inst.opcode)) + "(";
  if (inst.opcode == Opcode::kParameter) {
    out += std::to_string(inst.parameter_number);
  } else if (inst.opcode == Opcode::kConstant) {
    out += inst.literal ? inst.literal->ValuesToString() : "{...}";
  } else {
    for (size_t i = 0; i < inst.operands.size(); ++i) {
      if (i) out += ", ";
      const Instruction* op = inst.operands[i];
      out += op ? op->shape.ToString() + " %" + op->name : "%<null>";
    }
  }
  out += ")";
  for (const std::string& attr : AttributeTexts(inst)) out += ", " + attr;
  return out;
}

std::string PrintComputation(const Computation& computation, bool is_entry) {
  std::string out = is_entry ? "ENTRY %" : "%";
  out += computation.name + " (";
  const auto& params = computation.parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    if (i) out += ", ";
    out += params[i]->name + ": " + params[i]->shape.ToString();
  }
  out += ") -> ";
  out += computation.root() ? computation.root()->shape.ToString() : "()";
  out += " {\n";
  for (const auto& inst : computation.instructions()) {
    out += inst.get() == computation.root() ? "  ROOT " : "  ";
    out += PrintInstruction(*inst) + "\n";
  }
  return out + "}\n";
}

std::string PrintModule(const Module& module) {
  std::string out = "HloModule " + module.name;
  for (const auto& [key, value] : module.header_attributes) out += ", " + key + "=" + value;
  out += "\n";
  for (const auto& c : module.computations()) {
    out += "\n" + PrintComputation(*c, c.get() == module.entry());
  }
  return out;
}

}  // namespace mk::hlo
