// gather, scatter and dynamic-update-slice, with XLA's full dimension numbers (batching dims
// included) and the interpreter's index rules (src/interp/indexing.cc, data_movement.cc): gather
// and dynamic-update-slice clamp start indices so the window stays in bounds; scatter skips an
// update whose whole window does not fit and applies updates in row-major order of the index
// batch positions, then of the window, through the combiner's scalar function.
#include <algorithm>
#include <sstream>

#include "codegen/cpu/cpu_types.h"
#include "codegen/cpu/materialize_ops.h"

namespace mk::codegen::cpu {

using hlo::Instruction;

namespace {

bool Contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

bool AllInRange(const std::vector<int64_t>& v, int64_t rank) {
  return std::all_of(v.begin(), v.end(), [&](int64_t d) { return d >= 0 && d < rank; });
}

// Index expressions into the indices array for component `k` of the index vector at the batch
// position given by `batch_vars` (one per indices dim other than index_vector_dim, in order).
std::vector<std::string> IndicesIndex(int64_t idx_rank, int64_t index_vector_dim, int64_t k,
                                      const std::vector<std::string>& batch_vars) {
  std::vector<std::string> idx;
  size_t j = 0;
  for (int64_t d = 0; d < idx_rank; ++d) {
    if (d == index_vector_dim) idx.push_back(std::to_string(k));
    else idx.push_back(j < batch_vars.size() ? batch_vars[j++] : "0");
  }
  return idx;
}

// Position among the indices' batch dims of indices dim `d` (which is not index_vector_dim).
int64_t BatchPosition(int64_t d, int64_t index_vector_dim) {
  return d < index_vector_dim ? d : d - 1;
}

}  // namespace

Status EmitGather(FunctionEmitter& f, const Instruction& inst) {
  if (inst.operands.size() != 2 || !inst.gather_dims || !inst.shape.is_array()) {
    return CannotLower(inst, "gather needs operand, start_indices and dimension numbers");
  }
  const hlo::GatherDimensions& g = *inst.gather_dims;
  const hlo::Shape& op = inst.operands[0]->shape;
  const hlo::Shape& ind = inst.operands[1]->shape;
  const int64_t rank = op.rank(), idx_rank = ind.rank(), out_rank = inst.shape.rank();
  const std::vector<int64_t>& ss = inst.gather_slice_sizes;
  if (static_cast<int64_t>(ss.size()) != rank || g.index_vector_dim < 0 ||
      g.index_vector_dim > idx_rank || !AllInRange(g.start_index_map, rank) ||
      !AllInRange(g.collapsed_slice_dims, rank) || !AllInRange(g.operand_batching_dims, rank) ||
      !AllInRange(g.offset_dims, out_rank) ||
      !AllInRange(g.start_indices_batching_dims, idx_rank) ||
      g.operand_batching_dims.size() != g.start_indices_batching_dims.size()) {
    return CannotLower(inst, "gather dimension numbers out of range");
  }
  const int64_t vector_size = g.index_vector_dim == idx_rank ? 1 : ind.dim(g.index_vector_dim);
  if (static_cast<int64_t>(g.start_index_map.size()) != vector_size) {
    return CannotLower(inst, "start_index_map does not match the index vector size");
  }
  std::vector<int64_t> window_dims;
  for (int64_t d = 0; d < rank; ++d) {
    if (!Contains(g.collapsed_slice_dims, d) && !Contains(g.operand_batching_dims, d)) {
      window_dims.push_back(d);
    }
  }
  if (window_dims.size() != g.offset_dims.size()) {
    return CannotLower(inst, "offset_dims do not match the operand's window dims");
  }
  std::vector<std::string> out_vars = IndexVars(out_rank), batch_vars;
  for (int64_t d = 0; d < out_rank; ++d) {
    if (!Contains(g.offset_dims, d)) batch_vars.push_back(out_vars[static_cast<size_t>(d)]);
  }
  if (static_cast<int64_t>(batch_vars.size()) != idx_rank - (g.index_vector_dim < idx_rank ? 1 : 0)) {
    return CannotLower(inst, "result batch dims do not match the indices");
  }
  std::ostringstream body;
  std::vector<std::string> op_idx(static_cast<size_t>(rank), "0");
  for (size_t k = 0; k < g.start_index_map.size(); ++k) {
    const int64_t d = g.start_index_map[k];
    const std::string s = "s" + std::to_string(k);
    body << "const int64_t " << s << " = "
         << ClampedIndexExpr(CallExpr(f.Fn(inst.operands[1]),
                                      IndicesIndex(idx_rank, g.index_vector_dim,
                                                   static_cast<int64_t>(k), batch_vars)),
                             0, op.dim(d) - ss[static_cast<size_t>(d)])
         << "; ";
    op_idx[static_cast<size_t>(d)] = s;
  }
  for (size_t i = 0; i < g.operand_batching_dims.size(); ++i) {
    const int64_t pos = BatchPosition(g.start_indices_batching_dims[i], g.index_vector_dim);
    if (pos < 0 || pos >= static_cast<int64_t>(batch_vars.size())) {
      return CannotLower(inst, "bad start_indices_batching_dims");
    }
    op_idx[static_cast<size_t>(g.operand_batching_dims[i])] = batch_vars[static_cast<size_t>(pos)];
  }
  for (size_t k = 0; k < window_dims.size(); ++k) {
    std::string& e = op_idx[static_cast<size_t>(window_dims[k])];
    e = "(" + e + " + " + out_vars[static_cast<size_t>(g.offset_dims[k])] + ")";
  }
  body << "return " << CallExpr(f.Fn(inst.operands[0]), op_idx) << ";";
  const std::string name = "v" + f.module().Id(&inst);
  MK_RETURN_IF_ERROR(f.DefineLambda(name, inst.shape, body.str()));
  f.SetFn(&inst, name);
  if (f.IsOutput(&inst)) {
    MK_ASSIGN_OR_RETURN(std::string ptr, f.StorageFor(&inst, 0, inst.shape));
    MK_RETURN_IF_ERROR(f.EmitMaterializeLoop(inst.shape, name, ptr));
  }
  return Status::Ok();
}

Status EmitDynamicUpdateSlice(FunctionEmitter& f, const Instruction& inst) {
  const auto& ops = inst.operands;
  if (ops.size() < 2 || !inst.shape.is_array()) return CannotLower(inst, "bad operands");
  const hlo::Shape& upd = ops[1]->shape;
  const int64_t rank = inst.shape.rank();
  const bool one_vector = ops.size() == 3 && ops[2]->shape.rank() == 1 && rank != 1;
  if (upd.rank() != rank || (!one_vector && static_cast<int64_t>(ops.size()) != rank + 2)) {
    return CannotLower(inst, "expected one start index per dimension");
  }
  // The clamped starts are computed once, where the op is defined.
  const std::string id = f.module().Id(&inst);
  std::ostringstream body;
  std::string cond;
  std::vector<std::string> upd_idx;
  for (int64_t d = 0; d < rank; ++d) {
    if (upd.dim(d) > inst.shape.dim(d)) return CannotLower(inst, "update larger than operand");
    const std::string s = "dus" + id + "_s" + std::to_string(d);
    std::string start = one_vector ? CallExpr(f.Fn(ops[2]), {std::to_string(d)})
                                   : CallExpr(f.Fn(ops[static_cast<size_t>(d) + 2]), {});
    f.out() << "  const int64_t " << s << " = "
            << ClampedIndexExpr(start, 0, inst.shape.dim(d) - upd.dim(d)) << ";\n";
    const std::string r = "r" + std::to_string(d);
    body << "const int64_t " << r << " = i" << d << " - " << s << "; ";
    cond += (cond.empty() ? "" : " && ") + r + " >= 0 && " + r + " < " + std::to_string(upd.dim(d));
    upd_idx.push_back(r);
  }
  if (!cond.empty()) body << "if (" << cond << ") ";
  body << "return " << CallExpr(f.Fn(ops[1]), upd_idx) << "; ";
  if (!cond.empty()) body << "return " << CallExpr(f.Fn(ops[0]), IndexVars(rank)) << ";";
  const std::string name = "v" + id;
  MK_RETURN_IF_ERROR(f.DefineLambda(name, inst.shape, body.str()));
  f.SetFn(&inst, name);
  if (f.IsOutput(&inst)) {
    MK_ASSIGN_OR_RETURN(std::string ptr, f.StorageFor(&inst, 0, inst.shape));
    MK_RETURN_IF_ERROR(f.EmitMaterializeLoop(inst.shape, name, ptr));
  }
  return Status::Ok();
}

Status EmitScatter(FunctionEmitter& f, const Instruction& inst) {
  const auto& ops = inst.operands;
  if (ops.size() < 3 || ops.size() % 2 == 0 || !inst.scatter_dims || inst.called.empty()) {
    return CannotLower(inst, "scatter needs N operands, indices, N updates and to_apply");
  }
  const hlo::ScatterDimensions& s = *inst.scatter_dims;
  const size_t n = (ops.size() - 1) / 2;
  const Instruction* indices = ops[n];
  const hlo::Shape& op = ops[0]->shape;
  const hlo::Shape& upd = ops[n + 1]->shape;
  const int64_t rank = op.rank(), idx_rank = indices->shape.rank(), upd_rank = upd.rank();
  if (s.index_vector_dim < 0 || s.index_vector_dim > idx_rank ||
      !AllInRange(s.update_window_dims, upd_rank) || !AllInRange(s.inserted_window_dims, rank) ||
      !AllInRange(s.input_batching_dims, rank) ||
      !AllInRange(s.scatter_dims_to_operand_dims, rank) ||
      !AllInRange(s.scatter_indices_batching_dims, idx_rank) ||
      s.input_batching_dims.size() != s.scatter_indices_batching_dims.size()) {
    return CannotLower(inst, "scatter dimension numbers out of range");
  }
  const int64_t vector_size = s.index_vector_dim == idx_rank ? 1 : indices->shape.dim(s.index_vector_dim);
  if (static_cast<int64_t>(s.scatter_dims_to_operand_dims.size()) != vector_size) {
    return CannotLower(inst, "scatter_dims_to_operand_dims does not match the index vectors");
  }
  std::vector<int64_t> window_dims;
  for (int64_t d = 0; d < rank; ++d) {
    if (!Contains(s.inserted_window_dims, d) && !Contains(s.input_batching_dims, d)) {
      window_dims.push_back(d);
    }
  }
  if (window_dims.size() != s.update_window_dims.size()) {
    return CannotLower(inst, "update_window_dims do not match the operand's window dims");
  }
  // Batch loops: the indices' dims other than index_vector_dim, in order.
  std::vector<int64_t> batch_sizes;
  for (int64_t d = 0; d < idx_rank; ++d) {
    if (d != s.index_vector_dim) batch_sizes.push_back(indices->shape.dim(d));
  }
  std::vector<std::string> batch_vars, win_vars;
  for (size_t j = 0; j < batch_sizes.size(); ++j) batch_vars.push_back("b" + std::to_string(j));
  std::vector<int64_t> win_sizes, extent(static_cast<size_t>(rank), 1);
  for (size_t k = 0; k < window_dims.size(); ++k) {
    win_vars.push_back("u" + std::to_string(k));
    win_sizes.push_back(upd.dim(s.update_window_dims[k]));
    extent[static_cast<size_t>(window_dims[k])] = win_sizes.back();
  }
  std::vector<std::string> upd_idx;
  size_t j = 0;
  for (int64_t d = 0; d < upd_rank; ++d) {
    auto it = std::find(s.update_window_dims.begin(), s.update_window_dims.end(), d);
    if (it != s.update_window_dims.end()) {
      upd_idx.push_back(win_vars[static_cast<size_t>(it - s.update_window_dims.begin())]);
    } else {
      if (j >= batch_vars.size() || upd.dim(d) != batch_sizes[j]) {
        return CannotLower(inst, "update scatter dims do not match the indices");
      }
      upd_idx.push_back(batch_vars[j++]);
    }
  }
  if (j != batch_vars.size()) return CannotLower(inst, "updates lack scatter dims");
  MK_ASSIGN_OR_RETURN(auto out_shapes, ArrayLeaves(inst));
  if (out_shapes.size() != n) return CannotLower(inst, "result must have one array per operand");
  MK_ASSIGN_OR_RETURN(std::string fn, f.module().ScalarFunction(inst.called[0]));
  std::vector<std::string> ptrs;
  for (size_t k = 0; k < n; ++k) {
    MK_ASSIGN_OR_RETURN(std::string p, f.StorageFor(&inst, static_cast<int>(k), out_shapes[k]));
    MK_RETURN_IF_ERROR(f.EmitMaterializeLoop(out_shapes[k], f.Fn(ops[k]), p));
    ptrs.push_back(p);
  }
  auto& o = f.out();
  o << "  {\n";
  OpenLoops(f, batch_vars, batch_sizes, false, 0);
  o << "  {\n";
  std::vector<std::string> start(static_cast<size_t>(rank), "0");
  for (size_t k = 0; k < s.scatter_dims_to_operand_dims.size(); ++k) {
    const std::string sv = "st" + std::to_string(k);
    o << "    const int64_t " << sv << " = mkrt::index_of("
      << CallExpr(f.Fn(indices), IndicesIndex(idx_rank, s.index_vector_dim,
                                              static_cast<int64_t>(k), batch_vars))
      << ");\n";
    start[static_cast<size_t>(s.scatter_dims_to_operand_dims[k])] = sv;
  }
  for (size_t i = 0; i < s.input_batching_dims.size(); ++i) {
    const int64_t pos = BatchPosition(s.scatter_indices_batching_dims[i], s.index_vector_dim);
    if (pos < 0 || pos >= static_cast<int64_t>(batch_vars.size())) {
      return CannotLower(inst, "bad scatter_indices_batching_dims");
    }
    start[static_cast<size_t>(s.input_batching_dims[i])] = batch_vars[static_cast<size_t>(pos)];
  }
  std::string fits;
  for (int64_t d = 0; d < rank; ++d) {
    const std::string& e = start[static_cast<size_t>(d)];
    if (e == "0" && extent[static_cast<size_t>(d)] <= op.dim(d)) continue;
    fits += (fits.empty() ? "" : " || ") + e + " < 0 || " + e + " > " +
            std::to_string(op.dim(d) - extent[static_cast<size_t>(d)]);
  }
  if (!fits.empty()) o << "    if (" << fits << ") continue;\n";
  std::vector<std::string> op_idx = start;
  for (size_t k = 0; k < window_dims.size(); ++k) {
    std::string& e = op_idx[static_cast<size_t>(window_dims[k])];
    e = "(" + e + " + " + win_vars[k] + ")";
  }
  OpenLoops(f, win_vars, win_sizes, false, 0);
  o << "    {\n      const int64_t a = " << LinearIndexExpr(op_idx, op.dims()) << ";\n";
  std::vector<std::string> args;
  for (size_t k = 0; k < n; ++k) args.push_back(LoadExpr(out_shapes[k].dtype(), ptrs[k] + "[a]"));
  for (size_t k = 0; k < n; ++k) args.push_back(CallExpr(f.Fn(ops[n + 1 + k]), upd_idx));
  if (n == 1) {
    o << "      " << ptrs[0] << "[a] = " << StoreExpr(out_shapes[0].dtype(), CallExpr(fn, args))
      << ";\n";
  } else {
    o << "      const auto c = " << CallExpr(fn, args) << ";\n";
    for (size_t k = 0; k < n; ++k) {
      o << "      " << ptrs[k] << "[a] = "
        << StoreExpr(out_shapes[k].dtype(), "std::get<" + std::to_string(k) + ">(c)") << ";\n";
    }
  }
  o << "    }\n  }\n  }\n";
  return DefineStoredValue(f, inst, ptrs);
}

}  // namespace mk::codegen::cpu
