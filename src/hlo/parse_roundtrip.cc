#include "hlo/parse_roundtrip.h"

#include "hlo/printer.h"

namespace mk::hlo {
namespace {

std::string Names(const std::vector<Instruction*>& v) {
  std::string out;
  for (const Instruction* i : v) out += (i ? i->name : "<null>") + ",";
  return out;
}
std::string Names(const std::vector<Computation*>& v) {
  std::string out;
  for (const Computation* c : v) out += (c ? c->name : "<null>") + ",";
  return out;
}

// Every attribute field; a difference is reported by name.
std::string AttributeDifference(const Instruction& a, const Instruction& b) {
#define MK_COMPARE(field) \
  if (!(a.field == b.field)) return #field;
  MK_COMPARE(parameter_number)
  MK_COMPARE(dimensions)
  MK_COMPARE(dot_dims)
  MK_COMPARE(operand_precision)
  MK_COMPARE(window)
  MK_COMPARE(conv_dims)
  MK_COMPARE(feature_group_count)
  MK_COMPARE(batch_group_count)
  MK_COMPARE(slice)
  MK_COMPARE(padding)
  MK_COMPARE(direction)
  MK_COMPARE(comparison_type)
  MK_COMPARE(iota_dimension)
  MK_COMPARE(dynamic_slice_sizes)
  MK_COMPARE(gather_dims)
  MK_COMPARE(gather_slice_sizes)
  MK_COMPARE(scatter_dims)
  MK_COMPARE(indices_are_sorted)
  MK_COMPARE(unique_indices)
  MK_COMPARE(is_stable)
  MK_COMPARE(tuple_index)
  MK_COMPARE(custom_call_target)
  MK_COMPARE(exponent_bits)
  MK_COMPARE(mantissa_bits)
  MK_COMPARE(rng_algorithm)
  MK_COMPARE(rng_distribution)
  MK_COMPARE(has_largest)
  MK_COMPARE(k)
  MK_COMPARE(extra_attributes)
#undef MK_COMPARE
  if (a.literal.has_value() != b.literal.has_value()) return "literal (set vs unset)";
  if (a.literal && !(*a.literal == *b.literal)) return "literal values";
  return "";
}

}  // namespace

std::string DescribeModuleDifference(const Module& a, const Module& b) {
  if (a.name != b.name) return "module name '" + a.name + "' vs '" + b.name + "'";
  if (a.header_attributes != b.header_attributes) return "header attributes";
  if (a.computations().size() != b.computations().size()) return "number of computations";
  for (size_t c = 0; c < a.computations().size(); ++c) {
    const Computation& ca = *a.computations()[c];
    const Computation& cb = *b.computations()[c];
    std::string where = "computation '" + ca.name + "'";
    if (ca.name != cb.name) return where + ": name vs '" + cb.name + "'";
    if ((&ca == a.entry()) != (&cb == b.entry())) return where + ": entry";
    if (ca.instructions().size() != cb.instructions().size()) return where + ": instruction count";
    if ((ca.root() ? ca.root()->name : "") != (cb.root() ? cb.root()->name : "")) {
      return where + ": root";
    }
    if (Names(ca.parameters()) != Names(cb.parameters())) return where + ": parameters";
    for (size_t i = 0; i < ca.instructions().size(); ++i) {
      const Instruction& ia = *ca.instructions()[i];
      const Instruction& ib = *cb.instructions()[i];
      std::string at = where + ", instruction '" + ia.name + "': ";
      if (ia.name != ib.name) return at + "name vs '" + ib.name + "'";
      if (ia.opcode != ib.opcode) {
        return at + "opcode " + std::string(OpcodeName(ia.opcode)) + " vs " +
               std::string(OpcodeName(ib.opcode));
      }
      if (!(ia.shape == ib.shape)) return at + "shape " + ia.shape.ToString() + " vs " + ib.shape.ToString();
      if (Names(ia.operands) != Names(ib.operands)) return at + "operands";
      if (Names(ia.called) != Names(ib.called)) return at + "called computations";
      std::string attr = AttributeDifference(ia, ib);
      if (!attr.empty()) {
        return at + "attribute " + attr + "\n  " + PrintInstruction(ia) + "\n  " + PrintInstruction(ib);
      }
    }
  }
  return "";
}

}  // namespace mk::hlo
