// convolution: float convolutions in the layouts conv_gemm.h supports are implicit GEMMs through
// the blocked GEMM emitter. The rest (and gemm_blocked=0) take one generic loop nest for any rank, dim_labels, window (stride, negative padding,
// base/window dilation, reversal), feature_group_count and batch_group_count. Each output
// element sums, like the interpreter (src/interp/contraction.cc), over window positions in
// row-major order (positions in padding or dilation holes skipped), then over the group's input
// features, in the accumulator type (f32 for float results, f64 when f64 is involved, wrapping
// 64-bit integers otherwise) and rounds once at the end: the two agree bit for bit.
#include <algorithm>
#include <sstream>

#include "codegen/cpu/conv_gemm.h"
#include "codegen/cpu/cpu_types.h"
#include "codegen/cpu/materialize_ops.h"

namespace mk::codegen::cpu {

using hlo::DType;
using hlo::Instruction;

namespace {

std::string Int(int64_t v) { return std::to_string(v); }

// The generic loop nest, for convolutions the implicit GEMM does not take (`why` says which,
// in a comment of the generated code).
Status EmitGenericConvolution(FunctionEmitter& f, const Instruction& inst, const std::string& why);

}  // namespace

// Float convolutions in a supported layout are implicit GEMMs (conv_gemm.h) unless the schedule
// says gemm_blocked=0; everything else takes the generic loop nest, saying why.
Status EmitConvolution(FunctionEmitter& f, const Instruction& inst) {
  auto cg = AnalyzeConv(inst, f.module().target());
  if (!cg.ok()) {
    // The reason goes into a // comment of the generated source: keep it on one line.
    std::string why = cg.status().message();
    std::replace(why.begin(), why.end(), '\n', ' ');
    return EmitGenericConvolution(f, inst, why);
  }
  if (!cg->fallback.empty()) return EmitGenericConvolution(f, inst, cg->fallback);
  MK_ASSIGN_OR_RETURN(GemmParams params, ResolveGemmParams(f.schedule(), cg->g, f.module().target()));
  if (!params.blocked) return EmitGenericConvolution(f, inst, "gemm_blocked=0");
  f.out() << "  // convolution %" << inst.name << " as an implicit GEMM ("
          << (cg->features_are_m ? "M = output features, N = output positions"
                                 : "M = batch x output positions, N = output features")
          << ")\n";
  return EmitGemmValue(f, inst, cg->g, params, ConvSourceA(f, inst, *cg),
                       ConvSourceB(f, inst, *cg));
}

namespace {

Status EmitGenericConvolution(FunctionEmitter& f, const Instruction& inst, const std::string& why) {
  if (inst.operands.size() != 2 || !inst.conv_dims || !inst.shape.is_array()) {
    return CannotLower(inst, "convolution needs two operands and dim_labels");
  }
  const hlo::ConvDimensionNumbers& cd = *inst.conv_dims;
  const hlo::Shape& lhs = inst.operands[0]->shape;
  const hlo::Shape& rhs = inst.operands[1]->shape;
  const hlo::Shape& out = inst.shape;
  const size_t spatial = cd.input_spatial.size();
  const std::vector<hlo::WindowDimension> win =
      inst.window ? *inst.window : std::vector<hlo::WindowDimension>{};
  const int64_t rank = static_cast<int64_t>(spatial) + 2;
  if (cd.kernel_spatial.size() != spatial || cd.output_spatial.size() != spatial ||
      win.size() != spatial || lhs.rank() != rank || rhs.rank() != rank || out.rank() != rank) {
    return CannotLower(inst, "window, dim_labels and ranks disagree");
  }
  auto in_range = [&](int64_t d) { return d >= 0 && d < rank; };
  for (int64_t d : {cd.input_batch, cd.input_feature, cd.kernel_input_feature,
                    cd.kernel_output_feature, cd.output_batch, cd.output_feature}) {
    if (!in_range(d)) return CannotLower(inst, "dim_labels out of range");
  }
  for (size_t s = 0; s < spatial; ++s) {
    if (!in_range(cd.input_spatial[s]) || !in_range(cd.kernel_spatial[s]) ||
        !in_range(cd.output_spatial[s])) {
      return CannotLower(inst, "dim_labels out of range");
    }
  }
  const int64_t N = lhs.dim(cd.input_batch), C = lhs.dim(cd.input_feature);
  const int64_t Cg = rhs.dim(cd.kernel_input_feature), O = rhs.dim(cd.kernel_output_feature);
  const int64_t G = inst.feature_group_count, BG = inst.batch_group_count;
  if (G < 1 || BG < 1 || C % G != 0 || C / G != Cg || O % G != 0 || O % BG != 0 ||
      N % BG != 0 || out.dim(cd.output_batch) != N / BG || out.dim(cd.output_feature) != O) {
    return CannotLower(inst, "feature/batch group counts do not fit the shapes");
  }
  const DType out_t = out.dtype(), lt = lhs.dtype(), rt = rhs.dtype();
  std::string acc_t;
  bool int_acc = false;
  if (IsFloatCompute(out_t)) {
    acc_t = (out_t == DType::kF64 || lt == DType::kF64 || rt == DType::kF64) ? "double" : "float";
  } else {
    if (IsFloatCompute(lt) || IsFloatCompute(rt)) {
      return CannotLower(inst, "integer convolution of floating-point operands");
    }
    acc_t = "uint64_t";
    int_acc = true;
  }
  MK_ASSIGN_OR_RETURN(std::string ptr, f.StorageFor(&inst, 0, out));
  auto& o = f.out();
  const int64_t per_fg = O / G, per_bg = O / BG, out_batch = N / BG;
  int64_t window_positions = 1;
  for (const auto& w : win) window_positions *= w.size;
  // Output loops (collapsed for OpenMP: the batch dimension is often 1).
  std::vector<std::string> ovars = IndexVars(rank);
  int64_t threads = f.schedule().Get("threads", 0);
  o << "  {  // convolution %" << inst.name << ": generic loop nest (" << why << ")\n";
  if (threads != 1 && out.num_elements() * window_positions * Cg >= 16384 && rank > 0) {
    o << "#pragma omp parallel for collapse(" << rank << ") schedule(static)"
      << (threads > 1 ? " num_threads(" + Int(threads) + ")" : "") << "\n";
  }
  for (int64_t d = 0; d < rank; ++d) {
    o << "  for (int64_t i" << d << " = 0; i" << d << " < " << out.dim(d) << "; ++i" << d << ")\n";
  }
  o << "  {\n";
  o << "    const int64_t ob = i" << cd.output_batch << ", oc = i" << cd.output_feature << ";\n";
  o << "    const int64_t fg = oc / " << per_fg << ", nb = (oc / " << per_bg << ") * "
    << out_batch << " + ob;\n";
  o << "    " << acc_t << " acc = 0;\n";
  std::vector<std::string> lhs_idx(static_cast<size_t>(rank)), rhs_idx(static_cast<size_t>(rank));
  lhs_idx[static_cast<size_t>(cd.input_batch)] = "nb";
  lhs_idx[static_cast<size_t>(cd.input_feature)] = "(fg * " + Int(Cg) + " + ci)";
  rhs_idx[static_cast<size_t>(cd.kernel_input_feature)] = "ci";
  rhs_idx[static_cast<size_t>(cd.kernel_output_feature)] = "oc";
  for (size_t s = 0; s < spatial; ++s) {
    const hlo::WindowDimension& w = win[s];
    const int64_t in_size = lhs.dim(cd.input_spatial[s]);
    if (w.size < 1 || w.stride < 1 || w.lhs_dilation < 1 || w.rhs_dilation < 1 ||
        rhs.dim(cd.kernel_spatial[s]) != w.size) {
      return CannotLower(inst, "bad window");
    }
    const int64_t dilated_in = in_size == 0 ? 0 : (in_size - 1) * w.lhs_dilation + 1;
    const std::string ws = "w" + Int(static_cast<int64_t>(s)), ps = "q" + Int(static_cast<int64_t>(s));
    o << "    for (int64_t " << ws << " = 0; " << ws << " < " << w.size << "; ++" << ws << ") {\n";
    o << "      const int64_t " << ps << " = i" << cd.output_spatial[s] << " * " << w.stride
      << " + " << ws << " * " << w.rhs_dilation << " - (" << w.pad_low << ");\n";
    o << "      if (" << ps << " < 0 || " << ps << " >= " << dilated_in;
    if (w.lhs_dilation != 1) o << " || " << ps << " % " << w.lhs_dilation << " != 0";
    o << ") continue;\n";
    lhs_idx[static_cast<size_t>(cd.input_spatial[s])] =
        w.lhs_dilation == 1 ? ps : "(" + ps + " / " + Int(w.lhs_dilation) + ")";
    rhs_idx[static_cast<size_t>(cd.kernel_spatial[s])] =
        w.reversal ? "(" + Int(w.size - 1) + " - " + ws + ")" : ws;
  }
  std::string a = CallExpr(f.Fn(inst.operands[0]), lhs_idx);
  std::string b = CallExpr(f.Fn(inst.operands[1]), rhs_idx);
  o << "    for (int64_t ci = 0; ci < " << Cg << "; ++ci)\n";
  if (int_acc) {
    o << "      acc += static_cast<uint64_t>(static_cast<int64_t>(" << a
      << ")) * static_cast<uint64_t>(static_cast<int64_t>(" << b << "));\n";
  } else {
    o << "      acc += static_cast<" << acc_t << ">(" << a << ") * static_cast<" << acc_t << ">("
      << b << ");\n";
  }
  for (size_t s = 0; s < spatial; ++s) o << "    }\n";
  std::string result = "acc";
  if (int_acc) {
    MK_ASSIGN_OR_RETURN(std::string ct, ComputeType(out_t));
    result = out_t == DType::kPred ? "(acc != 0)" : "static_cast<" + ct + ">(acc)";
  } else if (acc_t == "double" && out_t != DType::kF64) {
    result = "static_cast<float>(acc)";
  }
  o << "    " << ptr << "[" << LinearIndexExpr(ovars, out.dims())
    << "] = " << StoreExpr(out_t, result) << ";\n  }\n  }\n";
  return DefineStoredValue(f, inst, {ptr});
}

}  // namespace

}  // namespace mk::codegen::cpu
