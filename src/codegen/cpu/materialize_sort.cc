// sort (N operands, any comparator) and topk. Each row is ordered as a permutation of positions
// with std::stable_sort, exactly like the interpreter (src/interp/sort.cc, topk.cc), so ties
// and even inconsistent comparators (NaN under LT) give the same result; then every operand is
// permuted. The operands are stored first so the comparator reads them at linear offsets.
#include <sstream>

#include "codegen/cpu/cpu_types.h"
#include "codegen/cpu/materialize_ops.h"

namespace mk::codegen::cpu {

using hlo::DType;
using hlo::Instruction;

Status EmitSort(FunctionEmitter& f, const Instruction& inst) {
  const auto& ops = inst.operands;
  const size_t n_ops = ops.size();
  if (n_ops == 0 || inst.called.empty() || inst.dimensions.size() != 1) {
    return CannotLower(inst, "sort needs operands, one dimension and a comparator");
  }
  const hlo::Shape& shape0 = ops[0]->shape;
  const int64_t dim = inst.dimensions[0];
  if (dim < 0 || dim >= shape0.rank()) return CannotLower(inst, "sort dimension out of range");
  for (const Instruction* op : ops) {
    if (!op->shape.is_array() || op->shape.dims() != shape0.dims()) {
      return CannotLower(inst, "operands must be arrays of equal dimensions");
    }
  }
  MK_ASSIGN_OR_RETURN(auto out_shapes, ArrayLeaves(inst));
  if (out_shapes.size() != n_ops) return CannotLower(inst, "result must have one array per operand");
  MK_ASSIGN_OR_RETURN(std::string cmp, f.module().ScalarFunction(inst.called[0]));
  std::vector<std::string> xs, ptrs;
  for (const Instruction* op : ops) {
    MK_ASSIGN_OR_RETURN(std::string x, MaterializeToScratch(f, *op));
    xs.push_back(x);
  }
  for (size_t k = 0; k < n_ops; ++k) {
    MK_ASSIGN_OR_RETURN(std::string p, f.StorageFor(&inst, static_cast<int>(k), out_shapes[k]));
    ptrs.push_back(p);
  }
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= shape0.dim(d);
  for (int64_t d = dim + 1; d < shape0.rank(); ++d) inner *= shape0.dim(d);
  const int64_t n = shape0.dim(dim);
  const std::string in_s = std::to_string(inner);
  auto& o = f.out();
  o << "  {\n  mkrt::Scratch perm_mem(" << std::max<int64_t>(1, n) * 8
    << ");\n  int64_t* const perm = static_cast<int64_t*>(perm_mem.p);\n"
    << "  for (int64_t ou = 0; ou < " << outer << "; ++ou)\n"
    << "  for (int64_t in = 0; in < " << inner << "; ++in) {\n"
    << "    const int64_t base = ou * " << n * inner << " + in;\n"
    << "    for (int64_t i = 0; i < " << n << "; ++i) perm[i] = i;\n"
    << "    std::stable_sort(perm, perm + " << n << ", [&](int64_t a, int64_t b) { return "
    << cmp << "(";
  for (size_t k = 0; k < n_ops; ++k) {
    DType t = ops[k]->shape.dtype();
    o << (k ? ", " : "") << LoadExpr(t, xs[k] + "[base + a * " + in_s + "]") << ", "
      << LoadExpr(t, xs[k] + "[base + b * " + in_s + "]");
  }
  o << "); });\n";
  for (size_t k = 0; k < n_ops; ++k) {
    o << "    for (int64_t i = 0; i < " << n << "; ++i) " << ptrs[k] << "[base + i * " << in_s
      << "] = " << xs[k] << "[base + perm[i] * " << in_s << "];\n";
  }
  o << "  }\n  }\n";
  return DefineStoredValue(f, inst, ptrs);
}

Status EmitTopK(FunctionEmitter& f, const Instruction& inst) {
  if (inst.operands.size() != 1 || !inst.shape.is_tuple() ||
      inst.shape.tuple_shapes().size() != 2) {
    return CannotLower(inst, "topk needs one operand and a (values, indices) result");
  }
  const Instruction* op = inst.operands[0];
  const hlo::Shape& in = op->shape;
  MK_ASSIGN_OR_RETURN(auto out_shapes, ArrayLeaves(inst));
  if (in.rank() < 1 || inst.k < 0 || inst.k > in.dim(in.rank() - 1) ||
      out_shapes[0].dims().empty() || out_shapes[0].dims().back() != inst.k ||
      out_shapes[1].dtype() != DType::kS32 || out_shapes[0].dtype() != in.dtype()) {
    return CannotLower(inst, "topk shapes do not match k");
  }
  const int64_t n = in.dim(in.rank() - 1), k = inst.k, rows = in.num_elements() / std::max<int64_t>(1, n);
  MK_ASSIGN_OR_RETURN(std::string x, MaterializeToScratch(f, *op));
  MK_ASSIGN_OR_RETURN(std::string vals, f.StorageFor(&inst, 0, out_shapes[0]));
  MK_ASSIGN_OR_RETURN(std::string idx, f.StorageFor(&inst, 1, out_shapes[1]));
  // Floats order by XLA's total order (NaN largest); ties keep the lower index first.
  std::string key_a = LoadExpr(in.dtype(), x + "[base + a]");
  std::string key_b = LoadExpr(in.dtype(), x + "[base + b]");
  if (IsFloatCompute(in.dtype())) {
    key_a = "mkrt::total_key(" + key_a + ")";
    key_b = "mkrt::total_key(" + key_b + ")";
  }
  auto& o = f.out();
  o << "  {\n  mkrt::Scratch perm_mem(" << std::max<int64_t>(1, n) * 8
    << ");\n  int64_t* const perm = static_cast<int64_t*>(perm_mem.p);\n"
    << "  for (int64_t r = 0; r < " << rows << "; ++r) {\n"
    << "    const int64_t base = r * " << n << ";\n"
    << "    for (int64_t i = 0; i < " << n << "; ++i) perm[i] = i;\n"
    << "    std::stable_sort(perm, perm + " << n << ", [&](int64_t a, int64_t b) { return "
    << key_a << (inst.has_largest ? " > " : " < ") << key_b << "; });\n"
    << "    for (int64_t i = 0; i < " << k << "; ++i) {\n"
    << "      " << vals << "[r * " << k << " + i] = " << x << "[base + perm[i]];\n"
    << "      " << idx << "[r * " << k << " + i] = static_cast<int32_t>(perm[i]);\n"
    << "    }\n  }\n  }\n";
  return DefineStoredValue(f, inst, {vals, idx});
}

}  // namespace mk::codegen::cpu
