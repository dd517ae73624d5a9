// Typed attributes of HLO instructions: `key=value` after the operand list.
#include <algorithm>
#include <array>

#include "hlo/parse_internal.h"

namespace mk::hlo::parse {
namespace {

// Attributes that carry no meaning for maxkernel (debug info, placement hints); parsed for
// syntax and dropped so that they do not clutter extra_attributes.
constexpr std::array<std::string_view, 10> kDroppedAttributes = {
    "metadata",   "frontend_attributes",    "sharding",             "backend_config",
    "origin",     "statistics",             "parameter_replication", "control-predecessors",
    "schedule_config", "scheduling_group_id",
};

Result<std::vector<int64_t>> ParseIntList(Lexer& lx, const std::string& what) {
  MK_RETURN_IF_ERROR(lx.Expect('{', "to open " + what));
  std::vector<int64_t> out;
  if (lx.TryConsume('}')) return out;
  while (true) {
    MK_ASSIGN_OR_RETURN(int64_t v, lx.ReadInt("an integer in " + what));
    out.push_back(v);
    if (lx.TryConsume(',')) continue;
    MK_RETURN_IF_ERROR(lx.Expect('}', "to close " + what));
    return out;
  }
}

// `3x3x1`: integers joined by 'x' with no spaces.
Result<std::vector<int64_t>> ParseXList(Lexer& lx, const std::string& what) {
  lx.SkipTrivia();
  std::vector<int64_t> out;
  while (true) {
    MK_ASSIGN_OR_RETURN(int64_t v, lx.ReadIntHere(what));
    out.push_back(v);
    if (lx.Peek() != 'x') return out;
    lx.Advance();
  }
}

// `0_1x1_1` (window pad: low_high) or `0_0_0x1_1_0` (pad's padding: low_high[_interior]).
Result<std::vector<PaddingDimension>> ParsePaddingList(Lexer& lx, const std::string& what,
                                                       bool allow_interior) {
  lx.SkipTrivia();
  std::vector<PaddingDimension> out;
  while (true) {
    size_t group_pos = lx.pos();
    PaddingDimension p;
    MK_ASSIGN_OR_RETURN(p.low, lx.ReadIntHere(what));
    if (lx.Peek() != '_') {
      return lx.ErrorAt(group_pos, "expected low_high in " + what + ", got " +
                                       lx.DescribeNext());
    }
    lx.Advance();
    MK_ASSIGN_OR_RETURN(p.high, lx.ReadIntHere(what));
    if (lx.Peek() == '_') {
      if (!allow_interior) return lx.ErrorAt(lx.pos(), "interior padding is not allowed in " + what);
      lx.Advance();
      MK_ASSIGN_OR_RETURN(p.interior, lx.ReadIntHere(what));
    }
    out.push_back(p);
    if (lx.Peek() != 'x') return out;
    lx.Advance();
  }
}

Result<std::vector<WindowDimension>> ParseWindow(Lexer& lx) {
  lx.SkipTrivia();
  size_t open_pos = lx.pos();
  MK_RETURN_IF_ERROR(lx.Expect('{', "to open the window"));
  std::map<std::string, std::vector<int64_t>> fields;
  std::vector<PaddingDimension> pads;
  bool has_pad = false;
  std::string first_field;
  size_t first_count = 0;
  while (!lx.TryConsume('}')) {
    lx.SkipTrivia();
    size_t key_pos = lx.pos();
    if (lx.AtEof()) return lx.Error("expected '}' to close the window, got end of input");
    MK_ASSIGN_OR_RETURN(std::string key, lx.ReadWord("window field"));
    MK_RETURN_IF_ERROR(lx.Expect('=', "after window field '" + key + "'"));
    size_t count = 0;
    if (key == "pad") {
      if (has_pad) return lx.ErrorAt(key_pos, "duplicate window field 'pad'");
      MK_ASSIGN_OR_RETURN(pads, ParsePaddingList(lx, "window pad", false));
      has_pad = true;
      count = pads.size();
    } else if (key == "size" || key == "stride" || key == "lhs_dilate" || key == "rhs_dilate" ||
               key == "rhs_reversal") {
      if (fields.count(key)) return lx.ErrorAt(key_pos, "duplicate window field '" + key + "'");
      MK_ASSIGN_OR_RETURN(fields[key], ParseXList(lx, "window " + key));
      count = fields[key].size();
      if (key == "rhs_reversal") {
        for (int64_t v : fields[key]) {
          if (v != 0 && v != 1) return lx.ErrorAt(key_pos, "rhs_reversal values must be 0 or 1");
        }
      }
    } else {
      return lx.ErrorAt(key_pos, "unknown window field '" + key + "'");
    }
    if (first_field.empty()) {
      first_field = key;
      first_count = count;
    } else if (count != first_count) {
      return lx.ErrorAt(key_pos, "window field '" + key + "' has " + std::to_string(count) +
                                     " dimensions but '" + first_field + "' has " +
                                     std::to_string(first_count));
    }
  }
  std::vector<WindowDimension> window;
  if (first_field.empty()) return window;
  if (!fields.count("size")) return lx.ErrorAt(open_pos, "window has no size");
  window.resize(first_count);
  for (size_t i = 0; i < first_count; ++i) {
    WindowDimension& w = window[i];
    w.size = fields["size"][i];
    if (fields.count("stride")) w.stride = fields["stride"][i];
    if (fields.count("lhs_dilate")) w.lhs_dilation = fields["lhs_dilate"][i];
    if (fields.count("rhs_dilate")) w.rhs_dilation = fields["rhs_dilate"][i];
    if (fields.count("rhs_reversal")) w.reversal = fields["rhs_reversal"][i] != 0;
    if (has_pad) {
      w.pad_low = pads[i].low;
      w.pad_high = pads[i].high;
    }
  }
  return window;
}

// One side of `dim_labels`: e.g. "b01f" with (major='b', minor='f') or "01io" with ('i','o').
// Digits name the spatial dimensions in order; every one of 0..n-1 must appear once.
Status ParseLabels(const Lexer& lx, size_t pos, std::string_view labels, char a, char b,
                   int64_t& a_dim, int64_t& b_dim, std::vector<int64_t>& spatial) {
  if (labels.size() < 2) return lx.ErrorAt(pos, "dim_labels '" + std::string(labels) + "' is too short");
  a_dim = b_dim = -1;
  spatial.assign(labels.size() - 2, -1);
  for (size_t i = 0; i < labels.size(); ++i) {
    char c = labels[i];
    int64_t* slot = nullptr;
    if (c == a) {
      slot = &a_dim;
    } else if (c == b) {
      slot = &b_dim;
    } else if (IsAsciiDigit(c) && static_cast<size_t>(c - '0') < spatial.size()) {
      slot = &spatial[static_cast<size_t>(c - '0')];
    } else {
      return lx.ErrorAt(pos + i, std::string("unexpected '") + c + "' in dim_labels (expected " +
                                     a + ", " + b + " or a spatial dimension digit)");
    }
    if (*slot != -1) return lx.ErrorAt(pos + i, std::string("repeated '") + c + "' in dim_labels");
    *slot = static_cast<int64_t>(i);
  }
  return Status::Ok();
}

Result<ConvDimensionNumbers> ParseDimLabels(Lexer& lx) {
  lx.SkipTrivia();
  auto read_run = [&lx]() {
    size_t start = lx.pos();
    while (IsAsciiAlpha(lx.Peek()) || IsAsciiDigit(lx.Peek())) lx.Advance();
    return lx.text().substr(start, lx.pos() - start);
  };
  size_t input_pos = lx.pos();
  std::string_view input = read_run();
  if (lx.Peek() != '_') return lx.ErrorAt(lx.pos(), "expected dim_labels like b01f_01io->b01f");
  lx.Advance();
  size_t kernel_pos = lx.pos();
  std::string_view kernel = read_run();
  if (lx.Peek() != '-' || lx.Peek(1) != '>') {
    return lx.ErrorAt(lx.pos(), "expected '->' in dim_labels like b01f_01io->b01f");
  }
  lx.Advance(2);
  size_t output_pos = lx.pos();
  std::string_view output = read_run();
  ConvDimensionNumbers d;
  MK_RETURN_IF_ERROR(ParseLabels(lx, input_pos, input, 'b', 'f', d.input_batch, d.input_feature,
                                 d.input_spatial));
  MK_RETURN_IF_ERROR(ParseLabels(lx, kernel_pos, kernel, 'i', 'o', d.kernel_input_feature,
                                 d.kernel_output_feature, d.kernel_spatial));
  MK_RETURN_IF_ERROR(ParseLabels(lx, output_pos, output, 'b', 'f', d.output_batch,
                                 d.output_feature, d.output_spatial));
  if (input.size() != kernel.size() || input.size() != output.size()) {
    return lx.ErrorAt(input_pos, "dim_labels sides have different numbers of dimensions");
  }
  for (size_t i = 0; i < d.input_spatial.size(); ++i) {
    if (d.input_spatial[i] < 0 || d.kernel_spatial[i] < 0 || d.output_spatial[i] < 0) {
      return lx.ErrorAt(input_pos, "dim_labels is missing spatial dimension " + std::to_string(i));
    }
  }
  return d;
}

Result<std::vector<SliceDimension>> ParseSlice(Lexer& lx) {
  MK_RETURN_IF_ERROR(lx.Expect('{', "to open the slice"));
  std::vector<SliceDimension> out;
  if (lx.TryConsume('}')) return out;
  while (true) {
    MK_RETURN_IF_ERROR(lx.Expect('[', "to open a slice range [start:limit]"));
    SliceDimension s;
    MK_ASSIGN_OR_RETURN(s.start, lx.ReadInt("slice start"));
    MK_RETURN_IF_ERROR(lx.Expect(':', "after the slice start"));
    MK_ASSIGN_OR_RETURN(s.limit, lx.ReadInt("slice limit"));
    if (lx.TryConsume(':')) {
      MK_ASSIGN_OR_RETURN(s.stride, lx.ReadInt("slice stride"));
    }
    MK_RETURN_IF_ERROR(lx.Expect(']', "to close the slice range"));
    out.push_back(s);
    if (lx.TryConsume(',')) continue;
    MK_RETURN_IF_ERROR(lx.Expect('}', "to close the slice"));
    return out;
  }
}

Result<std::vector<std::string>> ParseWordList(Lexer& lx, const std::string& what) {
  MK_RETURN_IF_ERROR(lx.Expect('{', "to open " + what));
  std::vector<std::string> out;
  if (lx.TryConsume('}')) return out;
  while (true) {
    MK_ASSIGN_OR_RETURN(std::string w, lx.ReadWord(what));
    out.push_back(std::move(w));
    if (lx.TryConsume(',')) continue;
    MK_RETURN_IF_ERROR(lx.Expect('}', "to close " + what));
    return out;
  }
}

Status ParseCallee(Lexer& lx, int slot, std::vector<CalleeRef>& callees) {
  lx.SkipTrivia();
  size_t pos = lx.pos();
  MK_ASSIGN_OR_RETURN(std::string name, lx.ReadName("computation name"));
  callees.push_back(CalleeRef{std::move(name), pos, slot});
  return Status::Ok();
}

Status ParseCalleeList(Lexer& lx, std::vector<CalleeRef>& callees) {
  MK_RETURN_IF_ERROR(lx.Expect('{', "to open the computation list"));
  if (lx.TryConsume('}')) return Status::Ok();
  while (true) {
    MK_RETURN_IF_ERROR(ParseCallee(lx, 0, callees));
    if (lx.TryConsume(',')) continue;
    return lx.Expect('}', "to close the computation list");
  }
}

// Keeps the raw text of an attribute we do not interpret, or drops it if it is metadata-like.
Status ParseUntypedAttribute(Lexer& lx, const std::string& key, Instruction& inst) {
  MK_ASSIGN_OR_RETURN(std::string_view raw, lx.ReadRawValue());
  if (std::find(kDroppedAttributes.begin(), kDroppedAttributes.end(), key) ==
      kDroppedAttributes.end()) {
    inst.extra_attributes[key] = std::string(raw);
  }
  return Status::Ok();
}

GatherDimensions& Gather(Instruction& inst) {
  if (!inst.gather_dims) inst.gather_dims.emplace();
  return *inst.gather_dims;
}
ScatterDimensions& Scatter(Instruction& inst) {
  if (!inst.scatter_dims) inst.scatter_dims.emplace();
  return *inst.scatter_dims;
}
DotDimensions& Dot(Instruction& inst) {
  if (!inst.dot_dims) inst.dot_dims.emplace();
  return *inst.dot_dims;
}

}  // namespace

Status ParseAttribute(Lexer& lx, const std::string& key, size_t key_pos, Instruction& inst,
                      std::vector<CalleeRef>& callees) {
  // Gather and scatter dimension numbers are typed on their own opcode only; on any other
  // instruction they are kept verbatim, so that a gather-only field never has to be printed
  // beside a scatter's fields (both have index_vector_dim).
  const bool is_gather = inst.opcode == Opcode::kGather;
  const bool is_scatter = inst.opcode == Opcode::kScatter;
  const bool gather_key = key == "offset_dims" || key == "collapsed_slice_dims" ||
                          key == "start_index_map" || key == "operand_batching_dims" ||
                          key == "start_indices_batching_dims" || key == "slice_sizes";
  const bool scatter_key = key == "update_window_dims" || key == "inserted_window_dims" ||
                           key == "scatter_dims_to_operand_dims" || key == "input_batching_dims" ||
                           key == "scatter_indices_batching_dims";
  const bool typed_here = (gather_key && is_gather) || (scatter_key && is_scatter) ||
                          (key == "index_vector_dim" && (is_gather || is_scatter)) ||
                          !(gather_key || scatter_key || key == "index_vector_dim");
  if (!typed_here) return ParseUntypedAttribute(lx, key, inst);

  // Integer lists.
  std::vector<int64_t>* int_list = nullptr;
  if (key == "dimensions") int_list = &inst.dimensions;
  else if (key == "lhs_batch_dims") int_list = &Dot(inst).lhs_batch;
  else if (key == "lhs_contracting_dims") int_list = &Dot(inst).lhs_contracting;
  else if (key == "rhs_batch_dims") int_list = &Dot(inst).rhs_batch;
  else if (key == "rhs_contracting_dims") int_list = &Dot(inst).rhs_contracting;
  else if (key == "dynamic_slice_sizes") int_list = &inst.dynamic_slice_sizes;
  else if (key == "slice_sizes") int_list = &inst.gather_slice_sizes;
  else if (key == "offset_dims") int_list = &Gather(inst).offset_dims;
  else if (key == "collapsed_slice_dims") int_list = &Gather(inst).collapsed_slice_dims;
  else if (key == "start_index_map") int_list = &Gather(inst).start_index_map;
  else if (key == "operand_batching_dims") int_list = &Gather(inst).operand_batching_dims;
  else if (key == "start_indices_batching_dims") int_list = &Gather(inst).start_indices_batching_dims;
  else if (key == "update_window_dims") int_list = &Scatter(inst).update_window_dims;
  else if (key == "inserted_window_dims") int_list = &Scatter(inst).inserted_window_dims;
  else if (key == "scatter_dims_to_operand_dims") int_list = &Scatter(inst).scatter_dims_to_operand_dims;
  else if (key == "input_batching_dims") int_list = &Scatter(inst).input_batching_dims;
  else if (key == "scatter_indices_batching_dims") int_list = &Scatter(inst).scatter_indices_batching_dims;
  if (int_list) {
    MK_ASSIGN_OR_RETURN(*int_list, ParseIntList(lx, key));
    return Status::Ok();
  }

  // Single integers.
  int64_t* int_value = nullptr;
  if (key == "feature_group_count") int_value = &inst.feature_group_count;
  else if (key == "batch_group_count") int_value = &inst.batch_group_count;
  else if (key == "iota_dimension") int_value = &inst.iota_dimension;
  else if (key == "index") int_value = &inst.tuple_index;
  else if (key == "exponent_bits") int_value = &inst.exponent_bits;
  else if (key == "mantissa_bits") int_value = &inst.mantissa_bits;
  else if (key == "k") int_value = &inst.k;
  else if (key == "index_vector_dim") {
    int_value = is_scatter ? &Scatter(inst).index_vector_dim : &Gather(inst).index_vector_dim;
  }
  if (int_value) {
    MK_ASSIGN_OR_RETURN(*int_value, lx.ReadInt(key));
    return Status::Ok();
  }

  bool* bool_value = nullptr;
  if (key == "indices_are_sorted") bool_value = &inst.indices_are_sorted;
  else if (key == "unique_indices") bool_value = &inst.unique_indices;
  else if (key == "is_stable") bool_value = &inst.is_stable;
  else if (key == "largest") bool_value = &inst.has_largest;
  if (bool_value) {
    MK_ASSIGN_OR_RETURN(*bool_value, lx.ReadBool(key));
    return Status::Ok();
  }

  // Called computations; the slot orders them as Instruction::called documents.
  if (key == "to_apply" || key == "calls" || key == "condition" || key == "true_computation" ||
      key == "select") {
    lx.SkipTrivia();
    if (key == "calls" && lx.Peek() == '{') return ParseCalleeList(lx, callees);
    return ParseCallee(lx, 0, callees);
  }
  if (key == "body" || key == "false_computation" || key == "scatter") {
    return ParseCallee(lx, 1, callees);
  }
  if (key == "branch_computations" || key == "called_computations") {
    return ParseCalleeList(lx, callees);
  }

  if (key == "window") {
    MK_ASSIGN_OR_RETURN(inst.window, ParseWindow(lx));
    return Status::Ok();
  }
  if (key == "dim_labels") {
    MK_ASSIGN_OR_RETURN(inst.conv_dims, ParseDimLabels(lx));
    return Status::Ok();
  }
  if (key == "slice") {
    MK_ASSIGN_OR_RETURN(inst.slice, ParseSlice(lx));
    return Status::Ok();
  }
  if (key == "padding") {
    MK_ASSIGN_OR_RETURN(inst.padding, ParsePaddingList(lx, "padding", true));
    return Status::Ok();
  }
  if (key == "operand_precision") {
    MK_ASSIGN_OR_RETURN(inst.operand_precision, ParseWordList(lx, "operand_precision"));
    return Status::Ok();
  }
  if (key == "direction") {
    lx.SkipTrivia();
    size_t pos = lx.pos();
    MK_ASSIGN_OR_RETURN(std::string word, lx.ReadWord("comparison direction"));
    inst.direction = ParseComparisonDirection(word);
    if (!inst.direction) return lx.ErrorAt(pos, "unknown comparison direction '" + word + "'");
    return Status::Ok();
  }
  if (key == "type") {
    lx.SkipTrivia();
    size_t pos = lx.pos();
    MK_ASSIGN_OR_RETURN(std::string word, lx.ReadWord("comparison type"));
    if (word != "FLOAT" && word != "TOTALORDER" && word != "SIGNED" && word != "UNSIGNED") {
      return lx.ErrorAt(pos, "unknown comparison type '" + word + "'");
    }
    inst.comparison_type = word;
    return Status::Ok();
  }
  if (key == "custom_call_target") {
    MK_ASSIGN_OR_RETURN(inst.custom_call_target, lx.ReadQuotedString());
    return Status::Ok();
  }
  if (key == "algorithm") {
    MK_ASSIGN_OR_RETURN(inst.rng_algorithm, lx.ReadWord("rng algorithm"));
    return Status::Ok();
  }
  if (key == "distribution") {
    MK_ASSIGN_OR_RETURN(inst.rng_distribution, lx.ReadWord("rng distribution"));
    return Status::Ok();
  }

  (void)key_pos;
  return ParseUntypedAttribute(lx, key, inst);
}

}  // namespace mk::hlo::parse
