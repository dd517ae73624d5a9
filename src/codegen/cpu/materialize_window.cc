// reduce-window (any number of operands) and select-and-scatter. Both walk, per output
// position, the window positions in row-major order and skip those that fall into padding or
// base-dilation holes, as the interpreter does (src/interp/reduction.cc); every step goes
// through the called computation's scalar function, which rounds as the interpreter does.
#include <sstream>

#include "codegen/cpu/cpu_types.h"
#include "codegen/cpu/materialize_ops.h"

namespace mk::codegen::cpu {

using hlo::Instruction;

namespace {

// Opens one loop per window dimension of `win` (one `{` each) inside loops over output
// positions `out_vars`; returns, per input dimension, the input index expression.
Result<std::vector<std::string>> OpenWindowLoops(FunctionEmitter& f, const Instruction& inst,
                                                 const std::vector<int64_t>& in_dims,
                                                 const std::vector<std::string>& out_vars) {
  if (!inst.window || inst.window->size() != in_dims.size() || out_vars.size() != in_dims.size()) {
    return CannotLower(inst, "window must have one entry per input dimension");
  }
  std::vector<std::string> idx;
  auto& o = f.out();
  for (size_t d = 0; d < in_dims.size(); ++d) {
    const hlo::WindowDimension& w = (*inst.window)[d];
    if (w.reversal) return CannotLower(inst, "window reversal outside convolution");
    if (w.size < 1 || w.stride < 1 || w.lhs_dilation < 1 || w.rhs_dilation < 1) {
      return CannotLower(inst, "bad window");
    }
    const int64_t dilated_in = in_dims[d] == 0 ? 0 : (in_dims[d] - 1) * w.lhs_dilation + 1;
    const std::string ws = "w" + std::to_string(d), qs = "q" + std::to_string(d);
    o << "    for (int64_t " << ws << " = 0; " << ws << " < " << w.size << "; ++" << ws << ") {\n"
      << "      const int64_t " << qs << " = " << out_vars[d] << " * " << w.stride << " + " << ws
      << " * " << w.rhs_dilation << " - (" << w.pad_low << ");\n"
      << "      if (" << qs << " < 0 || " << qs << " >= " << dilated_in;
    if (w.lhs_dilation != 1) o << " || " << qs << " % " << w.lhs_dilation << " != 0";
    o << ") continue;\n";
    idx.push_back(w.lhs_dilation == 1 ? qs : "(" + qs + " / " + std::to_string(w.lhs_dilation) + ")");
  }
  return idx;
}

// The windowed output dims of `inst` over an input of `in_dims`.
std::vector<int64_t> WindowedDims(const Instruction& inst, const std::vector<int64_t>& in_dims) {
  std::vector<int64_t> out;
  for (size_t d = 0; d < in_dims.size() && inst.window && d < inst.window->size(); ++d) {
    const hlo::WindowDimension& w = (*inst.window)[d];
    const int64_t dilated_in = in_dims[d] == 0 ? 0 : (in_dims[d] - 1) * w.lhs_dilation + 1;
    const int64_t padded = dilated_in + w.pad_low + w.pad_high;
    const int64_t dilated_window = (w.size - 1) * w.rhs_dilation + 1;
    out.push_back(padded < dilated_window || w.stride < 1 ? 0 : (padded - dilated_window) / w.stride + 1);
  }
  return out;
}

}  // namespace

Status EmitReduceWindow(FunctionEmitter& f, const Instruction& inst) {
  const size_t n = inst.operands.size() / 2;
  if (n == 0 || inst.operands.size() != 2 * n || inst.called.empty()) {
    return CannotLower(inst, "reduce-window needs N inputs, N init values and to_apply");
  }
  MK_ASSIGN_OR_RETURN(auto out_shapes, ArrayLeaves(inst));
  if (out_shapes.size() != n) return CannotLower(inst, "result must have one array per input");
  const std::vector<int64_t>& in_dims = inst.operands[0]->shape.dims();
  if (WindowedDims(inst, in_dims) != out_shapes[0].dims()) {
    return CannotLower(inst, "result dims do not match the window");
  }
  MK_ASSIGN_OR_RETURN(std::string fn, f.module().ScalarFunction(inst.called[0]));
  std::vector<std::string> ptrs;
  for (size_t k = 0; k < n; ++k) {
    MK_ASSIGN_OR_RETURN(std::string p, f.StorageFor(&inst, static_cast<int>(k), out_shapes[k]));
    ptrs.push_back(p);
  }
  const hlo::Shape& out0 = out_shapes[0];
  auto& o = f.out();
  int64_t window = 1;
  for (const auto& w : *inst.window) window *= w.size;
  o << "  {\n";
  OpenLoops(f, IndexVars(out0.rank()), out0.dims(), true, out0.num_elements() * window);
  o << "  {\n";
  for (size_t k = 0; k < n; ++k) {
    MK_ASSIGN_OR_RETURN(std::string ct, ComputeType(out_shapes[k].dtype()));
    o << "    " << ct << " acc" << k << " = " << CallExpr(f.Fn(inst.operands[n + k]), {}) << ";\n";
  }
  MK_ASSIGN_OR_RETURN(auto idx, OpenWindowLoops(f, inst, in_dims, IndexVars(out0.rank())));
  if (n == 1) {
    o << "      acc0 = " << fn << "(acc0, " << CallExpr(f.Fn(inst.operands[0]), idx) << ");\n";
  } else {
    o << "      std::tie(";
    for (size_t k = 0; k < n; ++k) o << (k ? ", " : "") << "acc" << k;
    o << ") = " << fn << "(";
    for (size_t k = 0; k < n; ++k) o << "acc" << k << ", ";
    for (size_t k = 0; k < n; ++k) o << (k ? ", " : "") << CallExpr(f.Fn(inst.operands[k]), idx);
    o << ");\n";
  }
  for (size_t d = 0; d < in_dims.size(); ++d) o << "    }\n";
  std::string lin = LinearIndexExpr(IndexVars(out0.rank()), out0.dims());
  for (size_t k = 0; k < n; ++k) {
    o << "    " << ptrs[k] << "[" << lin << "] = "
      << StoreExpr(out_shapes[k].dtype(), "acc" + std::to_string(k)) << ";\n";
  }
  o << "  }\n  }\n";
  return DefineStoredValue(f, inst, ptrs);
}

Status EmitSelectAndScatter(FunctionEmitter& f, const Instruction& inst) {
  if (inst.operands.size() != 3 || inst.called.size() != 2 || !inst.shape.is_array()) {
    return CannotLower(inst, "select-and-scatter needs operand, source, init, select, scatter");
  }
  const Instruction* operand = inst.operands[0];
  const Instruction* source = inst.operands[1];
  const std::vector<int64_t>& in_dims = operand->shape.dims();
  if (WindowedDims(inst, in_dims) != source->shape.dims() || inst.shape.dims() != in_dims) {
    return CannotLower(inst, "source dims must be the operand's windowed dims");
  }
  MK_ASSIGN_OR_RETURN(std::string sel, f.module().ScalarFunction(inst.called[0]));
  MK_ASSIGN_OR_RETURN(std::string scat, f.module().ScalarFunction(inst.called[1]));
  // The selection compares operand elements at linear offsets: store the operand first.
  MK_ASSIGN_OR_RETURN(std::string x, MaterializeToScratch(f, *operand));
  MK_ASSIGN_OR_RETURN(std::string ptr, f.StorageFor(&inst, 0, inst.shape));
  const hlo::DType xt = operand->shape.dtype(), yt = inst.shape.dtype();
  auto& o = f.out();
  // Source positions in row-major order, each combined into its selected element: the
  // interpreter's two phases (select all, then scatter in source order) give the same result.
  o << "  {\n  for (int64_t l = 0; l < " << inst.shape.num_elements() << "; ++l) " << ptr
    << "[l] = " << StoreExpr(yt, CallExpr(f.Fn(inst.operands[2]), {})) << ";\n";
  const int64_t rank = source->shape.rank();
  OpenLoops(f, IndexVars(rank), source->shape.dims(), false, 0);
  o << "  {\n    int64_t cur = -1;\n";
  MK_ASSIGN_OR_RETURN(auto idx, OpenWindowLoops(f, inst, in_dims, IndexVars(rank)));
  o << "      const int64_t off = " << LinearIndexExpr(idx, in_dims) << ";\n"
    << "      if (cur < 0 || !" << sel << "(" << LoadExpr(xt, x + "[cur]") << ", "
    << LoadExpr(xt, x + "[off]") << ")) cur = off;\n";
  for (size_t d = 0; d < in_dims.size(); ++d) o << "    }\n";
  o << "    if (cur >= 0) " << ptr << "[cur] = "
    << StoreExpr(yt, scat + "(" + LoadExpr(yt, ptr + "[cur]") + ", " +
                         CallExpr(f.Fn(source), IndexVars(rank)) + ")")
    << ";\n  }\n  }\n";
  return DefineStoredValue(f, inst, {ptr});
}

}  // namespace mk::codegen::cpu
