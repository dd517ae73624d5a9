// Whole-array ops: each is computed by a loop nest into storage (the kernel's output slot, or
// scratch), after which its lambda loads from there. These are the generic, always-correct
// lowerings; the fast families (GEMM, vectorized reductions) replace them per kernel.
#include <algorithm>
#include <sstream>

#include "codegen/cpu/cpu_types.h"
#include "codegen/cpu/emit_context.h"
#include "codegen/cpu/gemm_emitter.h"
#include "codegen/cpu/materialize_ops.h"
#include "codegen/cpu/reduce_emit.h"
#include "codegen/cpu/vector_loops.h"

namespace mk::codegen::cpu {

using hlo::DType;
using hlo::Instruction;
using hlo::Opcode;

void OpenLoops(FunctionEmitter& f, const std::vector<std::string>& vars,
               const std::vector<int64_t>& dims, bool parallel, int64_t work) {
  auto& out = f.loops();
  if (parallel && !vars.empty()) {
    const LoopSchedule s = LoopScheduleOf(f);
    out << ParallelPragma(s, CollapseCount(dims, s.threads), work);
  }
  for (size_t d = 0; d < vars.size(); ++d) {
    out << "  for (int64_t " << vars[d] << " = 0; " << vars[d] << " < " << dims[d] << "; ++"
        << vars[d] << ")\n";
  }
}

Result<std::vector<hlo::Shape>> ArrayLeaves(const Instruction& inst) {
  if (inst.shape.is_array()) return std::vector<hlo::Shape>{inst.shape};
  if (!inst.shape.is_tuple()) return CannotLower(inst, "token values");
  for (const auto& s : inst.shape.tuple_shapes()) {
    if (!s.is_array()) return CannotLower(inst, "nested tuple values");
  }
  return inst.shape.tuple_shapes();
}

Status DefineStoredValue(FunctionEmitter& f, const Instruction& inst,
                         const std::vector<std::string>& ptrs) {
  MK_ASSIGN_OR_RETURN(auto leaves, ArrayLeaves(inst));
  if (leaves.size() != ptrs.size()) return CannotLower(inst, "internal: leaf count mismatch");
  std::vector<std::string> names;
  for (size_t k = 0; k < leaves.size(); ++k) {
    std::string name = f.NewName("v" + f.module().Id(&inst) + "_");
    MK_RETURN_IF_ERROR(f.DefineLoadLambda(name, leaves[k], ptrs[k]));
    names.push_back(name);
  }
  if (inst.shape.is_array()) f.SetFn(&inst, names[0]);
  else f.SetTupleFns(&inst, names);
  return Status::Ok();
}

Result<std::string> MaterializeToScratch(FunctionEmitter& f, const Instruction& op, int leaf) {
  hlo::Shape shape = op.shape;
  if (leaf >= 0) {
    if (!op.shape.is_tuple() || leaf >= static_cast<int>(op.shape.tuple_shapes().size())) {
      return CannotLower(op, "internal: bad tuple leaf");
    }
    shape = op.shape.tuple_shape(leaf);
  }
  if (!shape.is_array()) return CannotLower(op, "expected an array value");
  MK_ASSIGN_OR_RETURN(std::string ptr, f.DeclareScratch(shape, "m"));
  MK_RETURN_IF_ERROR(f.EmitMaterializeLoop(shape, f.Fn(&op, leaf), ptr));
  return ptr;
}

std::string ClampedIndexExpr(const std::string& value, int64_t lo, int64_t hi) {
  return "std::min<int64_t>(std::max<int64_t>(mkrt::index_of(" + value + "), " +
         std::to_string(lo) + "), " + std::to_string(std::max(lo, hi)) + ")";
}

namespace {

Status EmitReduce(FunctionEmitter& f, const Instruction& inst) {
  size_t n = inst.operands.size() / 2;
  if (n == 0 || inst.operands.size() != 2 * n || inst.called.empty()) {
    return CannotLower(inst, "reduce needs N inputs, N init values and to_apply");
  }
  const hlo::Shape& in_shape = inst.operands[0]->shape;
  std::vector<bool> reduced(static_cast<size_t>(in_shape.rank()), false);
  for (int64_t d : inst.dimensions) {
    if (d < 0 || d >= in_shape.rank()) return CannotLower(inst, "reduce dimension out of range");
    reduced[static_cast<size_t>(d)] = true;
  }
  std::vector<hlo::Shape> out_shapes;
  if (n == 1) out_shapes.push_back(inst.shape);
  else out_shapes = inst.shape.tuple_shapes();
  if (out_shapes.size() != n) return CannotLower(inst, "reduce result shape");
  MK_ASSIGN_OR_RETURN(std::string fn, f.module().ScalarFunction(inst.called[0]));

  std::vector<std::string> ptrs, fns;
  for (size_t k = 0; k < n; ++k) {
    MK_ASSIGN_OR_RETURN(std::string p, f.StorageFor(&inst, static_cast<int>(k), out_shapes[k]));
    ptrs.push_back(p);
  }
  if (n == 1) {
    MK_ASSIGN_OR_RETURN(bool vectorized, EmitVectorReduce(f, inst, fn, ptrs[0]));
    if (vectorized) {
      const std::string name = "v" + f.module().Id(&inst);
      MK_RETURN_IF_ERROR(f.DefineLoadLambda(name, out_shapes[0], ptrs[0]));
      f.SetFn(&inst, name);
      return Status::Ok();
    }
  }
  // The serial form. Loop variables: result dims i*, reduced dims r<d>; the input index mixes
  // both.
  std::vector<std::string> in_idx, red_vars;
  std::vector<int64_t> red_dims;
  int64_t kept = 0;
  for (int64_t d = 0; d < in_shape.rank(); ++d) {
    if (reduced[static_cast<size_t>(d)]) {
      in_idx.push_back("r" + std::to_string(d));
      red_vars.push_back(in_idx.back());
      red_dims.push_back(in_shape.dim(d));
    } else {
      in_idx.push_back("i" + std::to_string(kept++));
    }
  }
  const hlo::Shape& out0 = out_shapes[0];
  auto& out = f.loops();
  out << "  {\n";
  OpenResultLoops(f, out0.dims(), in_shape.num_elements());
  out << "  {\n";
  for (size_t k = 0; k < n; ++k) {
    MK_ASSIGN_OR_RETURN(std::string ct, ComputeType(out_shapes[k].dtype()));
    out << "    " << ct << " acc" << k << " = " << CallExpr(f.Fn(inst.operands[n + k]), {}) << ";\n";
  }
  OpenLoops(f, red_vars, red_dims, false, 0);
  if (n == 1) {
    out << "      acc0 = " << fn << "(acc0, " << CallExpr(f.Fn(inst.operands[0]), in_idx) << ");\n";
  } else {
    out << "    {\n      std::tie(";
    for (size_t k = 0; k < n; ++k) out << (k ? ", " : "") << "acc" << k;
    out << ") = " << fn << "(";
    for (size_t k = 0; k < n; ++k) out << "acc" << k << ", ";
    for (size_t k = 0; k < n; ++k) {
      out << (k ? ", " : "") << CallExpr(f.Fn(inst.operands[k]), in_idx);
    }
    out << ");\n    }\n";
  }
  std::string lin = LinearIndexExpr(IndexVars(out0.rank()), out0.dims());
  for (size_t k = 0; k < n; ++k) {
    out << "    " << ptrs[k] << "[" << lin << "] = "
        << StoreExpr(out_shapes[k].dtype(), "acc" + std::to_string(k)) << ";\n";
  }
  out << "  }\n  }\n";
  std::vector<std::string> lambdas;
  for (size_t k = 0; k < n; ++k) {
    std::string name = "v" + f.module().Id(&inst) + (n > 1 ? "_" + std::to_string(k) : "");
    MK_RETURN_IF_ERROR(f.DefineLoadLambda(name, out_shapes[k], ptrs[k]));
    lambdas.push_back(name);
  }
  f.SetTupleFns(&inst, lambdas);
  return Status::Ok();
}

Status EmitDot(FunctionEmitter& f, const Instruction& inst) {
  if (inst.operands.size() != 2 || !inst.dot_dims) return CannotLower(inst, "dot needs 2 operands");
  // Float dots become a blocked GEMM (gemm_emitter.h) unless the schedule says gemm_blocked=0;
  // integer and f64 dots, and malformed ones, take the generic loop nest below.
  auto geometry = AnalyzeDot(inst, f.module().target());
  if (geometry.ok() && geometry->blockable) {
    MK_ASSIGN_OR_RETURN(GemmParams params,
                        ResolveGemmParams(f.schedule(), *geometry, f.module().target()));
    if (params.blocked) {
      return EmitGemmValue(f, inst, *geometry, params, DotLhsSource(f, inst, *geometry),
                           DotRhsSource(f, inst, *geometry));
    }
  }
  const auto& dd = *inst.dot_dims;
  const hlo::Shape& lhs = inst.operands[0]->shape;
  const hlo::Shape& rhs = inst.operands[1]->shape;
  size_t nb = dd.lhs_batch.size();
  if (dd.rhs_batch.size() != nb || dd.lhs_contracting.size() != dd.rhs_contracting.size()) {
    return CannotLower(inst, "dot dimension numbers do not pair up");
  }
  auto role_index = [&](const hlo::Shape& s, const std::vector<int64_t>& batch,
                        const std::vector<int64_t>& contracting,
                        int64_t free_offset) -> Result<std::vector<std::string>> {
    std::vector<std::string> idx(static_cast<size_t>(s.rank()));
    for (size_t j = 0; j < batch.size(); ++j) {
      if (batch[j] < 0 || batch[j] >= s.rank()) return CannotLower(inst, "bad batch dim");
      idx[static_cast<size_t>(batch[j])] = "i" + std::to_string(j);
    }
    for (size_t c = 0; c < contracting.size(); ++c) {
      if (contracting[c] < 0 || contracting[c] >= s.rank()) return CannotLower(inst, "bad contracting dim");
      idx[static_cast<size_t>(contracting[c])] = "c" + std::to_string(c);
    }
    int64_t fpos = free_offset;
    for (auto& e : idx) {
      if (e.empty()) e = "i" + std::to_string(fpos++);
    }
    return idx;
  };
  int64_t lhs_free = lhs.rank() - static_cast<int64_t>(nb + dd.lhs_contracting.size());
  MK_ASSIGN_OR_RETURN(auto lhs_idx, role_index(lhs, dd.lhs_batch, dd.lhs_contracting,
                                               static_cast<int64_t>(nb)));
  MK_ASSIGN_OR_RETURN(auto rhs_idx, role_index(rhs, dd.rhs_batch, dd.rhs_contracting,
                                               static_cast<int64_t>(nb) + lhs_free));
  std::vector<std::string> cvars;
  std::vector<int64_t> cdims;
  int64_t k = 1;
  for (size_t c = 0; c < dd.lhs_contracting.size(); ++c) {
    cvars.push_back("c" + std::to_string(c));
    cdims.push_back(lhs.dim(dd.lhs_contracting[c]));
    k *= cdims.back();
  }
  DType out_t = inst.shape.dtype();
  std::string acc_t;
  if (out_t == DType::kF64) acc_t = "double";
  else if (IsFloatCompute(out_t)) acc_t = "float";
  else {
    MK_ASSIGN_OR_RETURN(acc_t, ComputeType(out_t));
  }
  MK_ASSIGN_OR_RETURN(std::string ptr, f.StorageFor(&inst, 0, inst.shape));
  auto& out = f.out();
  out << "  {\n";
  OpenLoops(f, IndexVars(inst.shape.rank()), inst.shape.dims(), true,
            inst.shape.num_elements() * k);
  out << "  {\n    " << acc_t << " acc = 0;\n";
  OpenLoops(f, cvars, cdims, false, 0);
  std::string a = "static_cast<" + acc_t + ">(" + CallExpr(f.Fn(inst.operands[0]), lhs_idx) + ")";
  std::string b = "static_cast<" + acc_t + ">(" + CallExpr(f.Fn(inst.operands[1]), rhs_idx) + ")";
  if (IsFloatCompute(out_t)) {
    out << "      acc += " << a << " * " << b << ";\n";
  } else {
    out << "      acc = mkrt::wadd(acc, mkrt::wmul(" << a << ", " << b << "));\n";
  }
  std::string lin = LinearIndexExpr(IndexVars(inst.shape.rank()), inst.shape.dims());
  out << "    " << ptr << "[" << lin << "] = " << StoreExpr(out_t, RoundExpr(out_t, "acc"))
      << ";\n  }\n  }\n";
  std::string name = "v" + f.module().Id(&inst);
  MK_RETURN_IF_ERROR(f.DefineLoadLambda(name, inst.shape, ptr));
  f.SetFn(&inst, name);
  return Status::Ok();
}

}  // namespace

Status EmitMaterialized(FunctionEmitter& f, const Instruction& inst) {
  switch (inst.opcode) {
    case Opcode::kReduce:
      return EmitReduce(f, inst);
    case Opcode::kDot:
      return EmitDot(f, inst);
    case Opcode::kTuple: {
      std::vector<std::string> fns;
      for (const Instruction* op : inst.operands) {
        if (!op->shape.is_array()) return CannotLower(inst, "nested tuples");
        fns.push_back(f.Fn(op));
      }
      f.SetTupleFns(&inst, fns);
      if (f.IsOutput(&inst)) {
        for (size_t i = 0; i < inst.operands.size(); ++i) {
          MK_ASSIGN_OR_RETURN(std::string ptr, f.StorageFor(&inst, static_cast<int>(i),
                                                            inst.operands[i]->shape));
          MK_RETURN_IF_ERROR(f.EmitMaterializeLoop(inst.operands[i]->shape, fns[i], ptr));
        }
      }
      return Status::Ok();
    }
    case Opcode::kOptimizationBarrier:
    case Opcode::kCopy:
    case Opcode::kGetTupleElement: {
      // Tuple-valued pass-throughs (array ones are elemental): forward the leaves.
      if (inst.operands.size() != 1) return CannotLower(inst, "expected one operand");
      MK_ASSIGN_OR_RETURN(auto leaves, ArrayLeaves(inst));
      (void)leaves;
      if (inst.opcode == Opcode::kGetTupleElement) {
        return CannotLower(inst, "nested tuple values");
      }
      std::vector<std::string> fns;
      for (size_t k = 0; k < inst.shape.tuple_shapes().size(); ++k) {
        fns.push_back(f.Fn(inst.operands[0], static_cast<int>(k)));
      }
      f.SetTupleFns(&inst, fns);
      if (f.IsOutput(&inst)) {
        for (size_t k = 0; k < fns.size(); ++k) {
          MK_ASSIGN_OR_RETURN(std::string ptr, f.StorageFor(&inst, static_cast<int>(k),
                                                            inst.shape.tuple_shape(k)));
          MK_RETURN_IF_ERROR(f.EmitMaterializeLoop(inst.shape.tuple_shape(k), fns[k], ptr));
        }
      }
      return Status::Ok();
    }
    case Opcode::kConvolution: return EmitConvolution(f, inst);
    case Opcode::kReduceWindow: return EmitReduceWindow(f, inst);
    case Opcode::kSelectAndScatter: return EmitSelectAndScatter(f, inst);
    case Opcode::kGather: return EmitGather(f, inst);
    case Opcode::kScatter: return EmitScatter(f, inst);
    case Opcode::kDynamicUpdateSlice: return EmitDynamicUpdateSlice(f, inst);
    case Opcode::kSort: return EmitSort(f, inst);
    case Opcode::kTopK: return EmitTopK(f, inst);
    case Opcode::kWhile: return EmitWhile(f, inst);
    case Opcode::kConditional: return EmitConditional(f, inst);
    case Opcode::kCall: return EmitCall(f, inst);
    case Opcode::kRngBitGenerator: return EmitRngBitGenerator(f, inst);
    case Opcode::kRng: return EmitRng(f, inst);
    case Opcode::kCustomCall:
      return CannotLower(inst, "custom-call target \"" + inst.custom_call_target +
                                   "\" has no CPU lowering");
    default:
      return CannotLower(inst, "no CPU lowering for this op yet");
  }
}

}  // namespace mk::codegen::cpu
