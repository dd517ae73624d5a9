#include "codegen/cpu/conv_gemm.h"

#include <algorithm>
#include <sstream>

namespace mk::codegen::cpu {

using hlo::DType;

namespace {

std::string S(int64_t v) { return std::to_string(v); }

bool IsGemmFloat(DType t) { return t == DType::kF32 || t == DType::kBF16 || t == DType::kF16; }

// The window dims of `conv` (one per spatial dim; empty attribute = none).
std::vector<hlo::WindowDimension> Windows(const hlo::Instruction& conv) {
  return conv.window ? *conv.window : std::vector<hlo::WindowDimension>{};
}

// Everything the gathers need about one convolution, decided once.
struct ConvInfo {
  const hlo::ConvDimensionNumbers* cd;
  std::vector<hlo::WindowDimension> win;
  int64_t rank = 0, groups = 1, cg = 1, og = 1;  // Cg/Og: input/output features per group
  std::vector<int64_t> extent;   // per spatial dim: the base-dilated input size
  std::vector<int64_t> out_size;  // per spatial dim: the output size
  std::string input_fn, kernel_fn;
};

ConvInfo Info(FunctionEmitter& f, const hlo::Instruction& conv) {
  ConvInfo c;
  c.cd = &*conv.conv_dims;
  c.win = Windows(conv);
  c.rank = conv.shape.rank();
  c.groups = conv.feature_group_count;
  c.cg = conv.operands[1]->shape.dim(c.cd->kernel_input_feature);
  c.og = conv.shape.dim(c.cd->output_feature) / c.groups;
  for (size_t s = 0; s < c.win.size(); ++s) {
    const int64_t in = conv.operands[0]->shape.dim(c.cd->input_spatial[s]);
    c.extent.push_back(in == 0 ? 0 : (in - 1) * c.win[s].lhs_dilation + 1);
    c.out_size.push_back(conv.shape.dim(c.cd->output_spatial[s]));
  }
  c.input_fn = f.Fn(conv.operands[0]);
  c.kernel_fn = f.Fn(conv.operands[1]);
  return c;
}

// The conv's index variables at one GEMM element, as expressions.
struct ConvIndex {
  std::string batch = "0", group = "0", out_feature = "0", in_feature = "0";
  std::vector<std::string> position, window;  // per spatial dim
};

void Place(ConvIndex& ix, const std::vector<ConvAxisRef>& axes, const IndexExprs& vals) {
  for (size_t i = 0; i < axes.size() && i < vals.size(); ++i) {
    const size_t s = static_cast<size_t>(axes[i].spatial);
    switch (axes[i].axis) {
      case ConvAxis::kBatch: ix.batch = vals[i]; break;
      case ConvAxis::kGroup: ix.group = vals[i]; break;
      case ConvAxis::kOutFeature: ix.out_feature = vals[i]; break;
      case ConvAxis::kInFeature: ix.in_feature = vals[i]; break;
      case ConvAxis::kPosition: ix.position[s] = vals[i]; break;
      case ConvAxis::kWindow: ix.window[s] = vals[i]; break;
    }
  }
}

ConvIndex Bind(const ConvInfo& c, const std::vector<ConvAxisRef>& batch_axes,
               const IndexExprs& b, const std::vector<ConvAxisRef>& lane_axes,
               const IndexExprs& lane, const std::vector<ConvAxisRef>& k_axes,
               const IndexExprs& k) {
  ConvIndex ix;
  ix.position.assign(c.win.size(), "0");
  ix.window.assign(c.win.size(), "0");
  Place(ix, batch_axes, b);
  Place(ix, lane_axes, lane);
  Place(ix, k_axes, k);
  return ix;
}

// "(a * m)" without the multiplication by 1.
std::string Times(const std::string& a, int64_t m) {
  return m == 1 ? a : "(" + a + " * " + S(m) + ")";
}

// `g * per + i` for a grouped feature index (just `i` with one group).
std::string Grouped(const ConvInfo& c, const std::string& g, int64_t per, const std::string& i) {
  return c.groups == 1 ? i : "(" + Times(g, per) + " + " + i + ")";
}

// The position in the padded, base-dilated input that output position `o` and window offset
// `w` read along spatial dim s.
std::string InputPosition(const ConvInfo& c, size_t s, const std::string& o, const std::string& w) {
  const hlo::WindowDimension& d = c.win[s];
  std::string e = "(" + Times(o, d.stride) + " + " + Times(w, d.rhs_dilation);
  if (d.pad_low != 0) e += " - (" + S(d.pad_low) + ")";
  return e + ")";
}

// Which bounds of spatial dim s a position can cross, from the extreme output positions and
// window offsets: padding-free dims need no checks.
bool NeedsLowCheck(const ConvInfo& c, size_t s) { return c.win[s].pad_low > 0; }
bool NeedsHighCheck(const ConvInfo& c, size_t s) {
  const hlo::WindowDimension& d = c.win[s];
  const int64_t max_pos =
      (c.out_size[s] - 1) * d.stride + (d.size - 1) * d.rhs_dilation - d.pad_low;
  return max_pos >= c.extent[s];
}

// The input element at `ix`, position `pos[s]` along spatial dim s; the bounds of spatial dims
// with `checked[s]` false are the caller's business.
PackElement InputElement(const ConvInfo& c, const ConvIndex& ix,
                         const std::vector<std::string>& pos, const std::vector<bool>& checked) {
  const hlo::ConvDimensionNumbers& cd = *c.cd;
  IndexExprs idx(static_cast<size_t>(c.rank), "0");
  idx[static_cast<size_t>(cd.input_batch)] = ix.batch;
  idx[static_cast<size_t>(cd.input_feature)] = Grouped(c, ix.group, c.cg, ix.in_feature);
  std::string valid;
  auto require = [&valid](const std::string& cond) {
    valid += (valid.empty() ? "" : " && ") + cond;
  };
  for (size_t s = 0; s < c.win.size(); ++s) {
    const int64_t ld = c.win[s].lhs_dilation;
    idx[static_cast<size_t>(cd.input_spatial[s])] = ld == 1 ? pos[s] : "(" + pos[s] + " / " + S(ld) + ")";
    if (!checked[s]) continue;
    if (NeedsLowCheck(c, s)) require(pos[s] + " >= 0");
    if (NeedsHighCheck(c, s)) require(pos[s] + " < " + S(c.extent[s]));
    // Base dilation: only every ld-th position holds an input element, the rest are 0.
    if (ld != 1) require(pos[s] + " % " + S(ld) + " == 0");
  }
  return {CallExpr(c.input_fn, idx), valid};
}

// The indices of a run along the last of `lane_sizes` (lanes, or k for a column): the outer dims
// decomposed from cv_q (declared as cv_o*), the last one cv_x.
IndexExprs EmitRunOuter(std::ostream& o, const std::string& in,
                        const std::vector<int64_t>& lane_sizes) {
  IndexExprs lane(lane_sizes.size(), "0");
  int64_t stride = 1;
  for (size_t i = lane_sizes.size() - 1; i-- > 0;) {
    if (lane_sizes[i] == 1) continue;
    lane[i] = "cv_o" + S(static_cast<int64_t>(i));
    o << in << "const int64_t " << lane[i] << " = "
      << (stride == 1 ? "cv_q" : "(cv_q / " + S(stride) + ")");
    if (i > 0) o << " % " << lane_sizes[i];
    o << ";\n";
    stride *= lane_sizes[i];
  }
  lane.back() = "cv_x";
  return lane;
}

// The stores of one run of cv_n lanes: element cv_r reads input position cv_b + cv_r * stride
// along spatial dim `ls`. Without base dilation the positions inside the input form one range,
// found analytically, so the copy loop has no tests (a streaming copy for stride 1). With base
// dilation ld and stride 1 (a transposed convolution's form), the run is zeroed and every ld-th
// position of that range, from the first multiple of ld, is stored (28k's gather tested and
// divided per position, 2/3 of the kernel's time); with another stride each position is tested.
void EmitRunStores(std::ostream& o, const std::string& in, const ConvInfo& c,
                   const ConvIndex& ix, size_t ls, const LaneStore& store) {
  const hlo::WindowDimension& d = c.win[ls];
  std::vector<std::string> pos;
  for (size_t s = 0; s < c.win.size(); ++s) {
    pos.push_back(InputPosition(c, s, ix.position[s], ix.window[s]));
  }
  pos[ls] = d.stride == 1 ? "(cv_b + cv_r)" : "(cv_b + cv_r * " + S(d.stride) + ")";
  std::vector<bool> checked(c.win.size(), true);
  const std::string lane = "cv_l + cv_r";
  if (d.lhs_dilation != 1 && d.stride != 1) {
    PackElement e = InputElement(c, ix, pos, checked);
    o << in << "for (int64_t cv_r = 0; cv_r < cv_n; ++cv_r) "
      << store(lane, "((" + e.valid + ") ? static_cast<float>(" + e.value + ") : 0.0f)") << "\n";
    return;
  }
  checked[ls] = false;
  PackElement e = InputElement(c, ix, pos, checked);
  // [cv_lo, cv_hi): the run's positions inside the input; none if an outer dim is outside.
  std::string hi = "cv_n";
  if (NeedsHighCheck(c, ls)) {
    hi = "cv_b >= " + S(c.extent[ls]) + " ? 0 : (" + S(c.extent[ls] + d.stride - 1) +
         " - cv_b) / " + S(d.stride);
  }
  if (!e.valid.empty()) hi = "(" + e.valid + ") ? (" + hi + ") : 0";
  std::string lo = "0";
  if (NeedsLowCheck(c, ls)) lo = "cv_b >= 0 ? 0 : (" + S(d.stride - 1) + " - cv_b) / " + S(d.stride);
  o << in << "const int64_t cv_hi = std::min<int64_t>(cv_n, " << hi << ");\n"
    << in << "const int64_t cv_lo = std::min<int64_t>(cv_hi, " << lo << ");\n";
  if (d.lhs_dilation != 1) {
    const std::string ld = S(d.lhs_dilation);
    o << in << "for (int64_t cv_r = 0; cv_r < cv_n; ++cv_r) " << store(lane, "0") << "\n"
      << in << "const int64_t cv_m = (cv_b + cv_lo) % " << ld << ";\n"
      << in << "for (int64_t cv_r = cv_lo + (cv_m == 0 ? 0 : " << ld << " - cv_m); cv_r < cv_hi;"
      << " cv_r += " << ld << ") " << store(lane, e.value) << "\n";
    return;
  }
  o << in << "for (int64_t cv_r = 0; cv_r < cv_lo; ++cv_r) " << store(lane, "0") << "\n"
    << in << "for (int64_t cv_r = cv_lo; cv_r < cv_hi; ++cv_r) " << store(lane, e.value) << "\n"
    << in << "for (int64_t cv_r = cv_hi; cv_r < cv_n; ++cv_r) " << store(lane, "0") << "\n";
}

// A k row of the gathered input, lanes [0, count) from linear lane `first`: runs of consecutive
// output positions along the last lane dim (one per output row the sliver crosses), each with
// its outer indices and bounds computed once.
void EmitGatherRow(std::ostream& o, const std::string& in, const ConvInfo& c, const ConvGemm& cg,
                   const std::vector<ConvAxisRef>& lanes, const std::vector<int64_t>& lane_sizes,
                   const IndexExprs& b, const std::string& first, const std::string& count,
                   const IndexExprs& k, const LaneStore& store) {
  const int64_t run = lane_sizes.back();
  const size_t ls = static_cast<size_t>(lanes.back().spatial);
  const std::string body = in + "    ";
  o << in << "{\n"
    << in << "  int64_t cv_q = (" << first << ") / " << run << ", cv_x = (" << first << ") % "
    << run << ";\n"
    << in << "  for (int64_t cv_l = 0; cv_l < " << count << "; cv_x = 0, ++cv_q) {\n"
    << body << "const int64_t cv_n = std::min<int64_t>(" << count << " - cv_l, " << run
    << " - cv_x);\n";
  const IndexExprs lane = EmitRunOuter(o, body, lane_sizes);
  const ConvIndex ix = Bind(c, cg.batch_axes, b, lanes, lane, cg.k_axes, k);
  o << body << "const int64_t cv_b = " << InputPosition(c, ls, "cv_x", ix.window[ls]) << ";\n";
  EmitRunStores(o, body, c, ix, ls, store);
  o << body << "cv_l += cv_n;\n" << in << "  }\n" << in << "}\n";
}

// One lane's k slice [first, first + count) of the gathered input when k ends in the input
// feature: runs over consecutive features (one per window position the slice crosses), each
// with its window offsets and bounds computed once, copied from consecutive input features.
void EmitGatherColumn(std::ostream& o, const std::string& in, const ConvInfo& c,
                      const ConvGemm& cg, const std::vector<ConvAxisRef>& lanes,
                      const IndexExprs& b, const IndexExprs& lane, const std::string& first,
                      const std::string& count, const LaneStore& store) {
  const int64_t run = cg.g.k_dims.back();
  const std::string body = in + "    ";
  o << in << "{\n"
    << in << "  int64_t cv_q = (" << first << ") / " << run << ", cv_x = (" << first << ") % "
    << run << ";\n"
    << in << "  for (int64_t cv_k = 0; cv_k < " << count << "; cv_x = 0, ++cv_q) {\n"
    << body << "const int64_t cv_n = std::min<int64_t>(" << count << " - cv_k, " << run
    << " - cv_x);\n";
  IndexExprs k = EmitRunOuter(o, body, cg.g.k_dims);
  k.back() = "(cv_x + cv_r)";
  const ConvIndex ix = Bind(c, cg.batch_axes, b, lanes, lane, cg.k_axes, k);
  std::vector<std::string> pos;
  for (size_t s = 0; s < c.win.size(); ++s) {
    pos.push_back(InputPosition(c, s, ix.position[s], ix.window[s]));
  }
  // The feature does not enter the bounds: one test per run.
  const PackElement e = InputElement(c, ix, pos, std::vector<bool>(c.win.size(), true));
  const std::string copy =
      "for (int64_t cv_r = 0; cv_r < cv_n; ++cv_r) " + store("cv_k + cv_r", e.value);
  if (e.valid.empty()) {
    o << body << copy << "\n";
  } else {
    o << body << "if (" << e.valid << ") {\n"
      << body << "  " << copy << "\n"
      << body << "} else {\n"
      << body << "  for (int64_t cv_r = 0; cv_r < cv_n; ++cv_r) " << store("cv_k + cv_r", "0")
      << "\n"
      << body << "}\n";
  }
  o << body << "cv_k += cv_n;\n" << in << "  }\n" << in << "}\n";
}

// The input gathered: lanes over output positions (and, for b,spatial…,f, the batch).
PackSource InputSource(FunctionEmitter& f, const hlo::Instruction& conv, const ConvGemm& cg,
                       bool is_a) {
  const ConvInfo c = Info(f, conv);
  const std::vector<ConvAxisRef>& lanes = is_a ? cg.m_axes : cg.n_axes;
  const std::vector<int64_t>& lane_sizes = is_a ? cg.g.m_dims : cg.g.n_dims;
  PackSource src;
  // Lanes stream when they end in the output position along the input's minor-most dim.
  const ConvAxisRef last = lanes.back();
  src.lanes_inner = last.axis == ConvAxis::kPosition &&
                    c.cd->input_spatial[static_cast<size_t>(last.spatial)] == c.rank - 1;
  src.element = [c, cg, lanes](const IndexExprs& b, const IndexExprs& lane, const IndexExprs& k) {
    ConvIndex ix = Bind(c, cg.batch_axes, b, lanes, lane, cg.k_axes, k);
    std::vector<std::string> pos;
    for (size_t s = 0; s < c.win.size(); ++s) {
      pos.push_back(InputPosition(c, s, ix.position[s], ix.window[s]));
    }
    return InputElement(c, ix, pos, std::vector<bool>(c.win.size(), true));
  };
  src.row = [c, cg, lanes, lane_sizes](std::ostream& o, const std::string& in, const IndexExprs& b,
                                       const std::string& first, const std::string& count,
                                       const IndexExprs& k, const LaneStore& store) {
    EmitGatherRow(o, in, c, cg, lanes, lane_sizes, b, first, count, k, store);
  };
  if (cg.k_axes.back().axis == ConvAxis::kInFeature) {
    src.column = [c, cg, lanes](std::ostream& o, const std::string& in, const IndexExprs& b,
                                const IndexExprs& lane, const std::string& first,
                                const std::string& count, const LaneStore& store) {
      EmitGatherColumn(o, in, c, cg, lanes, b, lane, first, count, store);
    };
  }
  return src;
}

// Window offset `w` of a reversed window of `size`: the kernel is read back to front.
std::string Reversed(int64_t size, const std::string& w) {
  const std::string diff = S(size - 1) + " - " + w;
  return "(" + diff + ")";
}

// The kernel: lanes over the output features (of the group), k over its other dims.
PackSource KernelSource(FunctionEmitter& f, const hlo::Instruction& conv, const ConvGemm& cg,
                        bool is_a) {
  const ConvInfo c = Info(f, conv);
  const std::vector<ConvAxisRef>& lanes = is_a ? cg.m_axes : cg.n_axes;
  PackSource src;
  src.lanes_inner = c.cd->kernel_output_feature == c.rank - 1;
  src.element = [c, cg, lanes](const IndexExprs& b, const IndexExprs& lane, const IndexExprs& k) {
    ConvIndex ix = Bind(c, cg.batch_axes, b, lanes, lane, cg.k_axes, k);
    const hlo::ConvDimensionNumbers& cd = *c.cd;
    IndexExprs idx(static_cast<size_t>(c.rank), "0");
    idx[static_cast<size_t>(cd.kernel_output_feature)] = Grouped(c, ix.group, c.og, ix.out_feature);
    idx[static_cast<size_t>(cd.kernel_input_feature)] = ix.in_feature;
    for (size_t s = 0; s < c.win.size(); ++s) {
      idx[static_cast<size_t>(cd.kernel_spatial[s])] =
          c.win[s].reversal ? Reversed(c.win[s].size, ix.window[s]) : ix.window[s];
    }
    return PackElement{CallExpr(c.kernel_fn, idx), ""};
  };
  return src;
}

// Structural checks: ranks, dim numbers and window agree (the generic path reports these too).
Status CheckConvShape(const hlo::Instruction& conv) {
  if (conv.operands.size() != 2 || !conv.conv_dims || !conv.shape.is_array()) {
    return InvalidArgument("convolution %" + conv.name + " needs two operands and dim_labels");
  }
  const hlo::ConvDimensionNumbers& cd = *conv.conv_dims;
  const int64_t rank = conv.shape.rank();
  const size_t spatial = cd.input_spatial.size();
  if (cd.kernel_spatial.size() != spatial || cd.output_spatial.size() != spatial ||
      Windows(conv).size() != spatial || static_cast<int64_t>(spatial) + 2 != rank ||
      conv.operands[0]->shape.rank() != rank || conv.operands[1]->shape.rank() != rank) {
    return InvalidArgument("convolution %" + conv.name + ": window, dim_labels and ranks disagree");
  }
  std::vector<int64_t> all = {cd.input_batch,          cd.input_feature, cd.kernel_input_feature,
                              cd.kernel_output_feature, cd.output_batch, cd.output_feature};
  for (size_t s = 0; s < spatial; ++s) {
    all.insert(all.end(), {cd.input_spatial[s], cd.kernel_spatial[s], cd.output_spatial[s]});
  }
  for (int64_t d : all) {
    if (d < 0 || d >= rank) return InvalidArgument("convolution %" + conv.name + ": bad dim_labels");
  }
  return Status::Ok();
}

// Why `conv` cannot be an implicit GEMM beyond its output layout ("" when it can).
std::string SemanticFallback(const hlo::Instruction& conv) {
  const hlo::ConvDimensionNumbers& cd = *conv.conv_dims;
  const hlo::Shape& lhs = conv.operands[0]->shape;
  const hlo::Shape& rhs = conv.operands[1]->shape;
  const std::vector<hlo::WindowDimension> win = Windows(conv);
  if (win.empty()) return "no spatial dims";
  if (conv.batch_group_count != 1) return "batch_group_count > 1";
  const int64_t G = conv.feature_group_count, C = lhs.dim(cd.input_feature);
  const int64_t O = rhs.dim(cd.kernel_output_feature);
  if (G < 1 || C % G != 0 || C / G != rhs.dim(cd.kernel_input_feature) || O % G != 0 ||
      conv.shape.dim(cd.output_feature) != O ||
      conv.shape.dim(cd.output_batch) != lhs.dim(cd.input_batch)) {
    return "feature group count does not fit the shapes";
  }
  for (size_t s = 0; s < win.size(); ++s) {
    const hlo::WindowDimension& w = win[s];
    if (w.size < 1 || w.stride < 1 || w.lhs_dilation < 1 || w.rhs_dilation < 1 ||
        rhs.dim(cd.kernel_spatial[s]) != w.size) {
      return "unusual window";
    }
  }
  if (!IsGemmFloat(lhs.dtype()) || !IsGemmFloat(rhs.dtype()) || !IsGemmFloat(conv.shape.dtype())) {
    return "not a f32/bf16/f16 convolution";
  }
  if (conv.shape.num_elements() == 0 || lhs.num_elements() == 0 || rhs.num_elements() == 0) {
    return "empty";
  }
  return "";
}

}  // namespace

Result<ConvGemm> AnalyzeConv(const hlo::Instruction& conv, const target::Target& target) {
  MK_RETURN_IF_ERROR(CheckConvShape(conv));
  ConvGemm cg;
  cg.fallback = SemanticFallback(conv);
  if (!cg.fallback.empty()) return cg;
  const hlo::ConvDimensionNumbers& cd = *conv.conv_dims;
  const hlo::Shape& out = conv.shape;
  const hlo::Shape& rhs = conv.operands[1]->shape;
  const int64_t rank = out.rank(), G = conv.feature_group_count;
  const std::vector<hlo::WindowDimension> win = Windows(conv);
  if (cd.output_batch == 0 && cd.output_feature == 1) {
    cg.features_are_m = true;
  } else if (cd.output_batch == 0 && cd.output_feature == rank - 1 && G == 1) {
    cg.features_are_m = false;
  } else {
    cg.fallback = "output layout is neither b,f,spatial nor b,spatial,f (single group)";
    return cg;
  }
  // Output positions in the output's dim order (row-major N or M).
  std::vector<ConvAxisRef> positions;
  std::vector<int64_t> position_sizes;
  for (int64_t d = 0; d < rank; ++d) {
    for (size_t s = 0; s < cd.output_spatial.size(); ++s) {
      if (cd.output_spatial[s] != d) continue;
      positions.push_back({ConvAxis::kPosition, static_cast<int64_t>(s)});
      position_sizes.push_back(out.dim(d));
    }
  }
  DotGeometry& g = cg.g;
  const int64_t batch = out.dim(cd.output_batch), O = out.dim(cd.output_feature);
  if (cg.features_are_m) {
    cg.batch_axes = {{ConvAxis::kBatch}, {ConvAxis::kGroup}};
    g.batch_dims = {batch, G};
    cg.m_axes = {{ConvAxis::kOutFeature}};
    g.m_dims = {O / G};
    cg.n_axes = positions;
    g.n_dims = position_sizes;
  } else {
    cg.m_axes = {{ConvAxis::kBatch}};
    g.m_dims = {batch};
    cg.m_axes.insert(cg.m_axes.end(), positions.begin(), positions.end());
    g.m_dims.insert(g.m_dims.end(), position_sizes.begin(), position_sizes.end());
    cg.n_axes = {{ConvAxis::kOutFeature}};
    g.n_dims = {O};
  }
  // K: the kernel's dims but its output feature, in its dim order (contiguous for OIHW, HWIO).
  for (int64_t d = 0; d < rank; ++d) {
    if (d == cd.kernel_output_feature) continue;
    if (d == cd.kernel_input_feature) {
      cg.k_axes.push_back({ConvAxis::kInFeature});
      g.k_dims.push_back(rhs.dim(d));
      continue;
    }
    for (size_t s = 0; s < win.size(); ++s) {
      if (cd.kernel_spatial[s] != d) continue;
      cg.k_axes.push_back({ConvAxis::kWindow, static_cast<int64_t>(s)});
      g.k_dims.push_back(win[s].size);
    }
  }
  auto product = [](const std::vector<int64_t>& v) {
    int64_t p = 1;
    for (int64_t x : v) p *= x;
    return p;
  };
  g.batch = product(g.batch_dims);
  g.m = product(g.m_dims);
  g.n = product(g.n_dims);
  g.k = product(g.k_dims);
  const DType input_t = conv.operands[0]->shape.dtype(), kernel_t = rhs.dtype();
  g.lhs_type = cg.features_are_m ? kernel_t : input_t;
  g.rhs_type = cg.features_are_m ? input_t : kernel_t;
  g.out_type = out.dtype();
  g.gathered_a = !cg.features_are_m;
  g.blockable = g.batch > 0 && g.m > 0 && g.n > 0 && g.k > 0;
  g.bf16_pairs = g.blockable && input_t == DType::kBF16 && kernel_t == DType::kBF16 &&
                 target.Has("avx512_bf16") && target.Has("avx512f");
  return cg;
}

PackSource ConvSourceA(FunctionEmitter& f, const hlo::Instruction& conv, const ConvGemm& cg) {
  return cg.features_are_m ? KernelSource(f, conv, cg, true) : InputSource(f, conv, cg, true);
}

PackSource ConvSourceB(FunctionEmitter& f, const hlo::Instruction& conv, const ConvGemm& cg) {
  return cg.features_are_m ? InputSource(f, conv, cg, false) : KernelSource(f, conv, cg, false);
}

}  // namespace mk::codegen::cpu
