// Shape inference for contractions (dot, convolution), reductions (reduce, reduce-window,
// select-and-scatter) and the indexing ops (gather, scatter), with XLA's dimension-number rules.
#include "hlo/shape_inference_internal.h"

namespace mk::hlo::shape_inference {
namespace {

std::string Idx(int64_t i) { return std::to_string(i); }

// The reducer of reduce / reduce-window / scatter: (N accumulators, N values) -> N accumulators.
// Accumulators have the init values' types; the values may be the inputs' types (XLA allows the
// input to differ in floating-point precision from the accumulator).
Result<std::vector<DType>> CheckReducer(const Instruction& inst, const Computation& fn,
                                        const std::vector<DType>& acc,
                                        const std::vector<DType>& values,
                                        const std::string& role) {
  size_t n = acc.size();
  const auto& params = fn.parameters();
  if (params.size() != 2 * n) {
    return Err(inst, role + " computation %" + fn.name + " takes " + std::to_string(params.size()) +
                         " parameters, expected " + std::to_string(2 * n));
  }
  for (size_t i = 0; i < 2 * n; ++i) {
    DType a = acc[i % n];
    DType v = values[i % n];
    const Shape& p = params[i]->shape;
    bool ok = p.is_array() && p.rank() == 0 && (p.dtype() == a || (i >= n && p.dtype() == v));
    if (!ok) {
      return Err(inst, role + " computation %" + fn.name + " parameter " + std::to_string(i) +
                           " has shape " + ShapeText(p) + ", expected " +
                           std::string(DTypeName(a)) + "[]");
    }
  }
  if (fn.root() == nullptr) return Err(inst, role + " computation %" + fn.name + " has no root");
  const Shape& root = fn.root()->shape;
  std::vector<Shape> outs = root.is_tuple() ? root.tuple_shapes() : std::vector<Shape>{root};
  bool ok = outs.size() == n;
  for (size_t i = 0; ok && i < n; ++i) ok = outs[i].SameAs(Shape::Scalar(acc[i]));
  if (!ok) {
    return Err(inst, role + " computation %" + fn.name + " returns " + ShapeText(root) +
                         ", expected " + std::to_string(n) + " scalar(s) of the init types");
  }
  return acc;
}

// Splits the 2N operands of reduce / reduce-window into inputs and scalar init values.
Status SplitInputsAndInits(const Instruction& inst, std::vector<const Shape*>* inputs,
                           std::vector<DType>* init_types, std::vector<DType>* input_types) {
  size_t count = inst.operand_count();
  if (count < 2 || count % 2 != 0) {
    return Err(inst, "expects N inputs and N init values, got " + std::to_string(count) +
                         " operands");
  }
  size_t n = count / 2;
  for (size_t i = 0; i < n; ++i) {
    MK_ASSIGN_OR_RETURN(const Shape* in, ArrayOperand(inst, i));
    MK_ASSIGN_OR_RETURN(const Shape* init, ArrayOperand(inst, n + i));
    if (!inputs->empty() && in->dims() != inputs->front()->dims()) {
      return Err(inst, "inputs " + ShapeText(*inputs->front()) + " and " + ShapeText(*in) +
                           " have different dimensions");
    }
    if (init->rank() != 0) {
      return Err(inst, "init value " + std::to_string(i) + " must be a scalar, got " +
                           ShapeText(*init));
    }
    inputs->push_back(in);
    init_types->push_back(init->dtype());
    input_types->push_back(in->dtype());
  }
  return Status::Ok();
}

Shape ArrayOrTuple(const std::vector<DType>& types, const std::vector<int64_t>& dims,
                   bool force_tuple) {
  if (types.size() == 1 && !force_tuple) return Shape(types[0], dims);
  std::vector<Shape> elements;
  for (DType t : types) elements.push_back(Shape(t, dims));
  return Shape::Tuple(std::move(elements));
}

bool RootIsTuple(const Instruction& inst) {
  const Computation* fn = inst.to_apply();
  return fn && fn->root() && fn->root()->shape.is_tuple();
}

// The index space of gather/scatter indices with index_vector_dim == rank meaning an implicit
// trailing dimension of size 1.
Result<std::vector<int64_t>> ExpandedIndices(const Instruction& inst, const Shape& indices,
                                             int64_t index_vector_dim) {
  if (!IsInteger(indices.dtype())) {
    return Err(inst, "indices must be integers, got " + ShapeText(indices));
  }
  if (index_vector_dim < 0 || index_vector_dim > indices.rank()) {
    return Err(inst, "index_vector_dim=" + Idx(index_vector_dim) + " is out of range for " +
                         ShapeText(indices));
  }
  std::vector<int64_t> dims = indices.dims();
  if (index_vector_dim == indices.rank()) dims.push_back(1);
  return dims;
}

// Shared batching-dimension rules of gather and scatter (operand_batching_dims /
// start_indices_batching_dims, resp. input_/scatter_indices_batching_dims).
Status CheckBatchingDims(const Instruction& inst, const Shape& operand,
                         const std::vector<int64_t>& operand_batching,
                         const std::vector<int64_t>& indices_batching, const Shape& indices,
                         const std::vector<int64_t>& expanded, int64_t index_vector_dim,
                         const std::string& operand_name, const std::string& indices_name) {
  MK_RETURN_IF_ERROR(CheckDimList(inst, operand_batching, operand.rank(), operand_name, true));
  MK_RETURN_IF_ERROR(CheckDimList(inst, indices_batching, indices.rank(), indices_name, false));
  if (Contains(indices_batching, index_vector_dim)) {
    return Err(inst, indices_name + " must not contain index_vector_dim");
  }
  if (operand_batching.size() != indices_batching.size()) {
    return Err(inst, operand_name + " and " + indices_name + " must have the same length");
  }
  for (size_t i = 0; i < operand_batching.size(); ++i) {
    int64_t a = operand.dim(operand_batching[i]);
    int64_t b = expanded[static_cast<size_t>(indices_batching[i])];
    if (a != b) {
      return Err(inst, "batching dimension sizes differ: operand dimension " +
                           Idx(operand_batching[i]) + " has " + Idx(a) + ", indices dimension " +
                           Idx(indices_batching[i]) + " has " + Idx(b));
    }
  }
  return Status::Ok();
}

Status CheckDisjoint(const Instruction& inst, const std::vector<int64_t>& a,
                     const std::vector<int64_t>& b, const std::string& a_name,
                     const std::string& b_name) {
  for (int64_t d : a) {
    if (Contains(b, d)) {
      return Err(inst, a_name + " and " + b_name + " both contain dimension " + Idx(d));
    }
  }
  return Status::Ok();
}

}  // namespace

Result<Shape> InferDot(const Instruction& inst) {
  MK_RETURN_IF_ERROR(ExpectOperandCount(inst, 2));
  MK_ASSIGN_OR_RETURN(const Shape* lhs, ArrayOperand(inst, 0));
  MK_ASSIGN_OR_RETURN(const Shape* rhs, ArrayOperand(inst, 1));
  DotDimensions dn = inst.dot_dims.value_or(DotDimensions{});
  MK_RETURN_IF_ERROR(CheckDimList(inst, dn.lhs_batch, lhs->rank(), "lhs_batch_dims", false));
  MK_RETURN_IF_ERROR(CheckDimList(inst, dn.rhs_batch, rhs->rank(), "rhs_batch_dims", false));
  MK_RETURN_IF_ERROR(
      CheckDimList(inst, dn.lhs_contracting, lhs->rank(), "lhs_contracting_dims", false));
  MK_RETURN_IF_ERROR(
      CheckDimList(inst, dn.rhs_contracting, rhs->rank(), "rhs_contracting_dims", false));
  MK_RETURN_IF_ERROR(
      CheckDisjoint(inst, dn.lhs_batch, dn.lhs_contracting, "lhs_batch_dims", "lhs_contracting_dims"));
  MK_RETURN_IF_ERROR(
      CheckDisjoint(inst, dn.rhs_batch, dn.rhs_contracting, "rhs_batch_dims", "rhs_contracting_dims"));
  if (dn.lhs_batch.size() != dn.rhs_batch.size()) {
    return Err(inst, "lhs and rhs must have the same number of batch dimensions");
  }
  if (dn.lhs_contracting.size() != dn.rhs_contracting.size()) {
    return Err(inst, "lhs and rhs must have the same number of contracting dimensions");
  }
  for (size_t i = 0; i < dn.lhs_batch.size(); ++i) {
    if (lhs->dim(dn.lhs_batch[i]) != rhs->dim(dn.rhs_batch[i])) {
      return Err(inst, "batch dimension sizes differ: " + ShapeText(*lhs) + " dimension " +
                           Idx(dn.lhs_batch[i]) + " vs " + ShapeText(*rhs) + " dimension " +
                           Idx(dn.rhs_batch[i]));
    }
  }
  for (size_t i = 0; i < dn.lhs_contracting.size(); ++i) {
    if (lhs->dim(dn.lhs_contracting[i]) != rhs->dim(dn.rhs_contracting[i])) {
      return Err(inst, "contracting dimension sizes differ: " + ShapeText(*lhs) + " dimension " +
                           Idx(dn.lhs_contracting[i]) + " vs " + ShapeText(*rhs) + " dimension " +
                           Idx(dn.rhs_contracting[i]));
    }
  }
  std::vector<int64_t> dims;
  for (int64_t d : dn.lhs_batch) dims.push_back(lhs->dim(d));
  for (int64_t d = 0; d < lhs->rank(); ++d) {
    if (!Contains(dn.lhs_batch, d) && !Contains(dn.lhs_contracting, d)) dims.push_back(lhs->dim(d));
  }
  for (int64_t d = 0; d < rhs->rank(); ++d) {
    if (!Contains(dn.rhs_batch, d) && !Contains(dn.rhs_contracting, d)) dims.push_back(rhs->dim(d));
  }
  MK_ASSIGN_OR_RETURN(DType dtype, ContractionDType(inst, lhs->dtype(), rhs->dtype()));
  return Shape(dtype, dims);
}

Result<Shape> InferConvolution(const Instruction& inst) {
  MK_RETURN_IF_ERROR(ExpectOperandCount(inst, 2));
  MK_ASSIGN_OR_RETURN(const Shape* lhs, ArrayOperand(inst, 0));
  MK_ASSIGN_OR_RETURN(const Shape* rhs, ArrayOperand(inst, 1));
  if (!inst.conv_dims) return Err(inst, "missing dim_labels");
  const ConvDimensionNumbers& dn = *inst.conv_dims;
  size_t spatial = dn.input_spatial.size();
  if (dn.kernel_spatial.size() != spatial || dn.output_spatial.size() != spatial) {
    return Err(inst, "dim_labels give input, kernel and output different spatial ranks");
  }
  int64_t rank = static_cast<int64_t>(spatial) + 2;
  if (lhs->rank() != rank || rhs->rank() != rank) {
    return Err(inst, "dim_labels describe rank-" + Idx(rank) + " operands, got " +
                         ShapeText(*lhs) + " and " + ShapeText(*rhs));
  }
  auto labels = [](int64_t a, int64_t b, const std::vector<int64_t>& s) {
    std::vector<int64_t> all{a, b};
    all.insert(all.end(), s.begin(), s.end());
    return all;
  };
  MK_RETURN_IF_ERROR(CheckDimList(inst, labels(dn.input_batch, dn.input_feature, dn.input_spatial),
                                  rank, "dim_labels (input)", false));
  MK_RETURN_IF_ERROR(CheckDimList(
      inst, labels(dn.kernel_input_feature, dn.kernel_output_feature, dn.kernel_spatial), rank,
      "dim_labels (kernel)", false));
  MK_RETURN_IF_ERROR(CheckDimList(inst,
                                  labels(dn.output_batch, dn.output_feature, dn.output_spatial),
                                  rank, "dim_labels (output)", false));
  std::vector<WindowDimension> window = inst.window.value_or(std::vector<WindowDimension>{});
  if (window.size() != spatial) {
    return Err(inst, "window has " + std::to_string(window.size()) + " dimensions, expected " +
                         std::to_string(spatial));
  }
  int64_t fgc = inst.feature_group_count, bgc = inst.batch_group_count;
  if (fgc < 1 || bgc < 1) return Err(inst, "group counts must be positive");
  if (fgc > 1 && bgc > 1) {
    return Err(inst, "feature_group_count and batch_group_count cannot both exceed 1");
  }
  int64_t batch = lhs->dim(dn.input_batch), in_features = lhs->dim(dn.input_feature);
  int64_t k_in = rhs->dim(dn.kernel_input_feature), k_out = rhs->dim(dn.kernel_output_feature);
  if (in_features % fgc != 0 || in_features / fgc != k_in) {
    return Err(inst, "input features (" + Idx(in_features) + ") must equal kernel input features (" +
                         Idx(k_in) + ") * feature_group_count (" + Idx(fgc) + ")");
  }
  if (k_out % fgc != 0) {
    return Err(inst, "kernel output features (" + Idx(k_out) +
                         ") must be divisible by feature_group_count (" + Idx(fgc) + ")");
  }
  if (k_out % bgc != 0 || batch % bgc != 0) {
    return Err(inst, "kernel output features (" + Idx(k_out) + ") and input batch (" + Idx(batch) +
                         ") must be divisible by batch_group_count (" + Idx(bgc) + ")");
  }
  std::vector<int64_t> dims(static_cast<size_t>(rank), 0);
  dims[static_cast<size_t>(dn.output_batch)] = batch / bgc;
  dims[static_cast<size_t>(dn.output_feature)] = k_out;
  for (size_t i = 0; i < spatial; ++i) {
    int64_t kernel_size = rhs->dim(dn.kernel_spatial[i]);
    if (window[i].size != kernel_size) {
      return Err(inst, "window size " + Idx(window[i].size) + " of spatial dimension " +
                           std::to_string(i) + " does not match kernel size " + Idx(kernel_size));
    }
    MK_ASSIGN_OR_RETURN(int64_t out,
                        WindowOutputSize(inst, lhs->dim(dn.input_spatial[i]), window[i], i));
    dims[static_cast<size_t>(dn.output_spatial[i])] = out;
  }
  MK_ASSIGN_OR_RETURN(DType dtype, ContractionDType(inst, lhs->dtype(), rhs->dtype()));
  return Shape(dtype, dims);
}

Result<Shape> InferReduce(const Instruction& inst) {
  std::vector<const Shape*> inputs;
  std::vector<DType> init_types, input_types;
  MK_RETURN_IF_ERROR(SplitInputsAndInits(inst, &inputs, &init_types, &input_types));
  const Shape& in = *inputs.front();
  MK_RETURN_IF_ERROR(CheckDimList(inst, inst.dimensions, in.rank(), "dimensions", false));
  MK_ASSIGN_OR_RETURN(const Computation* fn, CalledComputation(inst, 0, "to_apply"));
  MK_RETURN_IF_ERROR(CheckReducer(inst, *fn, init_types, input_types, "to_apply").status());
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < in.rank(); ++d) {
    if (!Contains(inst.dimensions, d)) dims.push_back(in.dim(d));
  }
  return ArrayOrTuple(init_types, dims, RootIsTuple(inst));
}

Result<Shape> InferReduceWindow(const Instruction& inst) {
  std::vector<const Shape*> inputs;
  std::vector<DType> init_types, input_types;
  MK_RETURN_IF_ERROR(SplitInputsAndInits(inst, &inputs, &init_types, &input_types));
  const Shape& in = *inputs.front();
  std::vector<WindowDimension> window = inst.window.value_or(std::vector<WindowDimension>{});
  if (static_cast<int64_t>(window.size()) != in.rank()) {
    return Err(inst, "window has " + std::to_string(window.size()) +
                         " dimensions, operand rank is " + Idx(in.rank()));
  }
  MK_ASSIGN_OR_RETURN(const Computation* fn, CalledComputation(inst, 0, "to_apply"));
  MK_RETURN_IF_ERROR(CheckReducer(inst, *fn, init_types, input_types, "to_apply").status());
  std::vector<int64_t> dims;
  for (size_t i = 0; i < window.size(); ++i) {
    MK_ASSIGN_OR_RETURN(int64_t out,
                        WindowOutputSize(inst, in.dim(static_cast<int64_t>(i)), window[i], i));
    dims.push_back(out);
  }
  return ArrayOrTuple(init_types, dims, RootIsTuple(inst));
}

Result<Shape> InferSelectAndScatter(const Instruction& inst) {
  MK_RETURN_IF_ERROR(ExpectOperandCount(inst, 3));
  MK_ASSIGN_OR_RETURN(const Shape* operand, ArrayOperand(inst, 0));
  MK_ASSIGN_OR_RETURN(const Shape* source, ArrayOperand(inst, 1));
  MK_ASSIGN_OR_RETURN(const Shape* init, ArrayOperand(inst, 2));
  if (!init->SameAs(Shape::Scalar(source->dtype()))) {
    return Err(inst, "init value must be a " + std::string(DTypeName(source->dtype())) +
                         " scalar, got " + ShapeText(*init));
  }
  MK_ASSIGN_OR_RETURN(const Computation* select, CalledComputation(inst, 0, "select"));
  MK_ASSIGN_OR_RETURN(const Computation* scatter, CalledComputation(inst, 1, "scatter"));
  Shape elem = Shape::Scalar(operand->dtype());
  MK_ASSIGN_OR_RETURN(Shape select_root, CheckSignature(inst, *select, {elem, elem}, "select"));
  if (!select_root.SameAs(Shape::Scalar(DType::kPred))) {
    return Err(inst, "select must return pred[], returns " + ShapeText(select_root));
  }
  MK_RETURN_IF_ERROR(CheckReducer(inst, *scatter, {source->dtype()}, {source->dtype()}, "scatter")
                         .status());
  std::vector<WindowDimension> window = inst.window.value_or(std::vector<WindowDimension>{});
  if (static_cast<int64_t>(window.size()) != operand->rank()) {
    return Err(inst, "window has " + std::to_string(window.size()) +
                         " dimensions, operand rank is " + Idx(operand->rank()));
  }
  std::vector<int64_t> windowed;
  for (size_t i = 0; i < window.size(); ++i) {
    MK_ASSIGN_OR_RETURN(int64_t out, WindowOutputSize(inst, operand->dim(static_cast<int64_t>(i)),
                                                      window[i], i));
    windowed.push_back(out);
  }
  if (source->dims() != windowed) {
    return Err(inst, "source " + ShapeText(*source) + " must have the windowed operand dims " +
                         DimsToString(windowed));
  }
  return *operand;
}

Result<Shape> InferGather(const Instruction& inst) {
  MK_RETURN_IF_ERROR(ExpectOperandCount(inst, 2));
  MK_ASSIGN_OR_RETURN(const Shape* operand, ArrayOperand(inst, 0));
  MK_ASSIGN_OR_RETURN(const Shape* indices, ArrayOperand(inst, 1));
  if (!inst.gather_dims) return Err(inst, "missing gather dimension numbers");
  const GatherDimensions& g = *inst.gather_dims;
  MK_ASSIGN_OR_RETURN(std::vector<int64_t> expanded,
                      ExpandedIndices(inst, *indices, g.index_vector_dim));
  int64_t index_vector_size = expanded[static_cast<size_t>(g.index_vector_dim)];
  int64_t batch_rank = static_cast<int64_t>(expanded.size()) - 1;
  int64_t out_rank = batch_rank + static_cast<int64_t>(g.offset_dims.size());
  MK_RETURN_IF_ERROR(CheckDimList(inst, g.offset_dims, out_rank, "offset_dims", true));
  MK_RETURN_IF_ERROR(
      CheckDimList(inst, g.collapsed_slice_dims, operand->rank(), "collapsed_slice_dims", true));
  MK_RETURN_IF_ERROR(CheckBatchingDims(inst, *operand, g.operand_batching_dims,
                                       g.start_indices_batching_dims, *indices, expanded,
                                       g.index_vector_dim, "operand_batching_dims",
                                       "start_indices_batching_dims"));
  MK_RETURN_IF_ERROR(CheckDisjoint(inst, g.collapsed_slice_dims, g.operand_batching_dims,
                                   "collapsed_slice_dims", "operand_batching_dims"));
  MK_RETURN_IF_ERROR(
      CheckDimList(inst, g.start_index_map, operand->rank(), "start_index_map", false));
  MK_RETURN_IF_ERROR(CheckDisjoint(inst, g.start_index_map, g.operand_batching_dims,
                                   "start_index_map", "operand_batching_dims"));
  if (static_cast<int64_t>(g.start_index_map.size()) != index_vector_size) {
    return Err(inst, "start_index_map has " + std::to_string(g.start_index_map.size()) +
                         " entries but the index vector has " + Idx(index_vector_size));
  }
  if (static_cast<int64_t>(g.offset_dims.size() + g.collapsed_slice_dims.size() +
                           g.operand_batching_dims.size()) != operand->rank()) {
    return Err(inst, "offset_dims, collapsed_slice_dims and operand_batching_dims must together "
                     "cover the operand rank " + Idx(operand->rank()));
  }
  const auto& sizes = inst.gather_slice_sizes;
  if (static_cast<int64_t>(sizes.size()) != operand->rank()) {
    return Err(inst, "slice_sizes=" + DimsToString(sizes) + " must have " + Idx(operand->rank()) +
                         " entries");
  }
  std::vector<int64_t> offset_sizes;
  for (int64_t d = 0; d < operand->rank(); ++d) {
    int64_t s = sizes[static_cast<size_t>(d)];
    if (s < 0 || s > operand->dim(d)) {
      return Err(inst, "slice_sizes=" + DimsToString(sizes) + " exceeds operand " +
                           ShapeText(*operand) + " in dimension " + Idx(d));
    }
    bool dropped = Contains(g.collapsed_slice_dims, d) || Contains(g.operand_batching_dims, d);
    if (dropped && s > 1) {
      return Err(inst, "collapsed or batching dimension " + Idx(d) + " must have slice size 1, got " +
                           Idx(s));
    }
    if (!dropped) offset_sizes.push_back(s);
  }
  std::vector<int64_t> batch_sizes;
  for (size_t d = 0; d < expanded.size(); ++d) {
    if (static_cast<int64_t>(d) != g.index_vector_dim) batch_sizes.push_back(expanded[d]);
  }
  std::vector<int64_t> dims;
  size_t next_offset = 0, next_batch = 0;
  for (int64_t i = 0; i < out_rank; ++i) {
    if (Contains(g.offset_dims, i)) {
      dims.push_back(offset_sizes[next_offset++]);
    } else {
      dims.push_back(batch_sizes[next_batch++]);
    }
  }
  return Shape(operand->dtype(), dims);
}

Result<Shape> InferScatter(const Instruction& inst) {
  size_t count = inst.operand_count();
  if (count < 3 || count % 2 == 0) {
    return Err(inst, "expects N operands, indices and N updates, got " + std::to_string(count) +
                         " operands");
  }
  size_t n = (count - 1) / 2;
  MK_ASSIGN_OR_RETURN(const Shape* operand, ArrayOperand(inst, 0));
  MK_ASSIGN_OR_RETURN(const Shape* indices, ArrayOperand(inst, n));
  if (!inst.scatter_dims) return Err(inst, "missing scatter dimension numbers");
  const ScatterDimensions& s = *inst.scatter_dims;
  std::vector<DType> operand_types, update_types;
  std::vector<Shape> results;
  const Shape* updates = nullptr;
  for (size_t i = 0; i < n; ++i) {
    MK_ASSIGN_OR_RETURN(const Shape* op, ArrayOperand(inst, i));
    MK_ASSIGN_OR_RETURN(const Shape* up, ArrayOperand(inst, n + 1 + i));
    if (op->dims() != operand->dims()) {
      return Err(inst, "operands " + ShapeText(*operand) + " and " + ShapeText(*op) +
                           " have different dimensions");
    }
    if (updates && up->dims() != updates->dims()) {
      return Err(inst, "updates " + ShapeText(*updates) + " and " + ShapeText(*up) +
                           " have different dimensions");
    }
    updates = up;
    operand_types.push_back(op->dtype());
    update_types.push_back(up->dtype());
    results.push_back(*op);
  }
  MK_ASSIGN_OR_RETURN(std::vector<int64_t> expanded,
                      ExpandedIndices(inst, *indices, s.index_vector_dim));
  int64_t index_vector_size = expanded[static_cast<size_t>(s.index_vector_dim)];
  int64_t scatter_rank = static_cast<int64_t>(expanded.size()) - 1;
  MK_RETURN_IF_ERROR(
      CheckDimList(inst, s.update_window_dims, updates->rank(), "update_window_dims", true));
  MK_RETURN_IF_ERROR(
      CheckDimList(inst, s.inserted_window_dims, operand->rank(), "inserted_window_dims", true));
  MK_RETURN_IF_ERROR(CheckBatchingDims(inst, *operand, s.input_batching_dims,
                                       s.scatter_indices_batching_dims, *indices, expanded,
                                       s.index_vector_dim, "input_batching_dims",
                                       "scatter_indices_batching_dims"));
  MK_RETURN_IF_ERROR(CheckDisjoint(inst, s.inserted_window_dims, s.input_batching_dims,
                                   "inserted_window_dims", "input_batching_dims"));
  MK_RETURN_IF_ERROR(CheckDimList(inst, s.scatter_dims_to_operand_dims, operand->rank(),
                                  "scatter_dims_to_operand_dims", false));
  MK_RETURN_IF_ERROR(CheckDisjoint(inst, s.scatter_dims_to_operand_dims, s.input_batching_dims,
                                   "scatter_dims_to_operand_dims", "input_batching_dims"));
  if (static_cast<int64_t>(s.scatter_dims_to_operand_dims.size()) != index_vector_size) {
    return Err(inst, "scatter_dims_to_operand_dims has " +
                         std::to_string(s.scatter_dims_to_operand_dims.size()) +
                         " entries but the index vector has " + Idx(index_vector_size));
  }
  if (static_cast<int64_t>(s.update_window_dims.size() + s.inserted_window_dims.size() +
                           s.input_batching_dims.size()) != operand->rank()) {
    return Err(inst, "update_window_dims, inserted_window_dims and input_batching_dims must "
                     "together cover the operand rank " + Idx(operand->rank()));
  }
  if (updates->rank() != static_cast<int64_t>(s.update_window_dims.size()) + scatter_rank) {
    return Err(inst, "updates " + ShapeText(*updates) + " must have rank " +
                         Idx(static_cast<int64_t>(s.update_window_dims.size()) + scatter_rank));
  }
  // Window dims of the updates map, in order, to the operand dims that are neither inserted nor
  // batching; the remaining (scatter) dims must equal the index dims other than the index vector.
  std::vector<int64_t> window_bounds;
  for (int64_t d = 0; d < operand->rank(); ++d) {
    if (!Contains(s.inserted_window_dims, d) && !Contains(s.input_batching_dims, d)) {
      window_bounds.push_back(operand->dim(d));
    }
  }
  std::vector<int64_t> scatter_sizes;
  for (size_t d = 0; d < expanded.size(); ++d) {
    if (static_cast<int64_t>(d) != s.index_vector_dim) scatter_sizes.push_back(expanded[d]);
  }
  size_t next_window = 0, next_scatter = 0;
  for (int64_t d = 0; d < updates->rank(); ++d) {
    if (Contains(s.update_window_dims, d)) {
      int64_t bound = window_bounds[next_window++];
      if (updates->dim(d) > bound) {
        return Err(inst, "updates dimension " + Idx(d) + " (" + Idx(updates->dim(d)) +
                             ") exceeds the operand window bound " + Idx(bound));
      }
    } else if (updates->dim(d) != scatter_sizes[next_scatter++]) {
      return Err(inst, "updates dimension " + Idx(d) + " (" + Idx(updates->dim(d)) +
                           ") must match indices " + ShapeText(*indices));
    }
  }
  MK_ASSIGN_OR_RETURN(const Computation* fn, CalledComputation(inst, 0, "to_apply"));
  MK_RETURN_IF_ERROR(CheckReducer(inst, *fn, operand_types, update_types, "to_apply").status());
  if (results.size() == 1) return results[0];
  return Shape::Tuple(std::move(results));
}

}  // namespace mk::hlo::shape_inference
