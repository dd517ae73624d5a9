#include "codegen/pallas/conv_plan.h"

#include <algorithm>

namespace mk::codegen::pallas {

using hlo::Instruction;
using hlo::Opcode;

namespace {

std::string ConvName(const Instruction& c) { return "convolution %" + c.name; }

}  // namespace

BlockPlan ConvolutionPlan(const analysis::Kernel& kernel) {
  const Instruction* conv = kernel.hero;
  if (!conv->conv_dims || !conv->window) return Glue(ConvName(*conv) + " without dim_labels or window");
  if (conv->feature_group_count != 1) {
    return Glue(ConvName(*conv) + " has feature_group_count=" + std::to_string(conv->feature_group_count) +
                " (grouped or depthwise): not an implicit GEMM here yet");
  }
  if (conv->batch_group_count != 1) {
    return Glue(ConvName(*conv) + " has batch_group_count=" + std::to_string(conv->batch_group_count) +
                " (a weight gradient): not an implicit GEMM here yet");
  }
  const hlo::DType acc_ok[] = {hlo::DType::kBF16, hlo::DType::kF16, hlo::DType::kF32};
  if (std::find(std::begin(acc_ok), std::end(acc_ok), conv->shape.dtype()) == std::end(acc_ok)) {
    return Glue(ConvName(*conv) + " of " + std::string(hlo::DTypeName(conv->shape.dtype())) +
                ": only bf16/f16/f32 convolutions run on the MXU here");
  }
  const auto& cd = *conv->conv_dims;
  const auto& win = *conv->window;
  const size_t ns = cd.input_spatial.size();
  if (ns == 0 || win.size() != ns) return Glue(ConvName(*conv) + " has no spatial dimensions");
  for (const auto& w : win) {
    if (w.reversal) return Glue(ConvName(*conv) + " reverses its window: not emitted yet");
    if (w.stride < 1 || w.lhs_dilation < 1 || w.rhs_dilation < 1 || w.size < 1) {
      return Glue(ConvName(*conv) + " has a window stride, dilation or size below 1");
    }
  }
  const Instruction* in = conv->operands[0];
  const Instruction* ker = conv->operands[1];
  BlockPlan plan;
  plan.pallas = true;
  plan.conv = conv;
  ConvGeometry& g = plan.geom;
  g.batch = in->shape.dim(cd.input_batch);
  g.in_features = in->shape.dim(cd.input_feature);
  g.out_features = conv->shape.dim(cd.output_feature);
  g.in_perm.push_back(cd.input_batch);
  g.in_perm.insert(g.in_perm.end(), cd.input_spatial.begin(), cd.input_spatial.end());
  g.in_perm.push_back(cd.input_feature);
  g.kernel_perm = cd.kernel_spatial;
  g.kernel_perm.push_back(cd.kernel_input_feature);
  g.kernel_perm.push_back(cd.kernel_output_feature);
  for (size_t i = 0; i < ns; ++i) {
    const auto& w = win[i];
    const int64_t o = conv->shape.dim(cd.output_spatial[i]);
    // Output position o, tap t reads padded element o*s + t*d = (o + q)*s + p with
    // p = t*d % s, q = t*d / s: phase p, position o + q. So a phase needs O + q_max positions,
    // and the padded dim is padded (or cut) to exactly that many times the stride.
    const int64_t dilated = (in->shape.dim(cd.input_spatial[i]) - 1) * w.lhs_dilation + 1;
    const int64_t padded = dilated + w.pad_low + w.pad_high;
    const int64_t q = o + (w.size - 1) * w.rhs_dilation / w.stride;
    if (o < 1 || padded < 1) return Glue(ConvName(*conv) + " has an empty spatial dimension");
    g.out_spatial.push_back(o);
    g.q.push_back(q);
    g.stride.push_back(w.stride);
    g.dilation.push_back(w.rhs_dilation);
    g.window.push_back(w.size);
    g.pad_low.push_back(w.pad_low);
    g.pad_high.push_back(w.pad_high + q * w.stride - padded);
    g.interior.push_back(w.lhs_dilation - 1);
    g.phases *= w.stride;
    g.taps *= w.size;
    if (ker->shape.dim(cd.kernel_spatial[i]) != w.size) {
      return Glue(ConvName(*conv) + ": its kernel's spatial dims do not match its window");
    }
  }
  g.last_computed = g.out_spatial.back();
  if (ns >= 2) {
    // A sublane tile holds 8 rows of 32-bit values, 16 of 16-bit ones.
    const int64_t tile = 32 / std::max<int64_t>(1, hlo::DTypeByteSize(in->shape.dtype()));
    g.last_computed = (g.last_computed + tile - 1) / tile * tile;
  }
  // The result block [1, rows, other spatial.., bn] in canonical order, transposed to the
  // result's dim order.
  g.out_perm.assign(static_cast<size_t>(conv->shape.rank()), 0);
  g.out_perm[static_cast<size_t>(cd.output_batch)] = 0;
  for (size_t i = 0; i < ns; ++i) g.out_perm[static_cast<size_t>(cd.output_spatial[i])] = static_cast<int64_t>(1 + i);
  g.out_perm[static_cast<size_t>(cd.output_feature)] = static_cast<int64_t>(1 + ns);

  plan.axes.push_back({"", g.batch, 1, false});
  plan.axis_m = 1;
  // Output rows need not divide evenly: the image is padded in glue to whole blocks of rows,
  // and the last block's extra rows are computed from that padding and never written. A
  // divisor-only domain left an extent like 62 or 126 (no divisor a multiple of 8) one
  // whole-image block per step, whose unrolled body took libtpu minutes to compile.
  plan.axes.push_back({"block_rows", g.out_spatial[0], 1, false, /*ragged=*/true});
  plan.axis_n = 2;
  plan.axes.push_back({"bn", g.out_features, 1, false});
  plan.axis_k = 3;
  plan.axes.push_back({"bk", g.in_features, 1, true});
  Assignment a_conv(static_cast<size_t>(conv->shape.rank()), -1);
  a_conv[static_cast<size_t>(cd.output_batch)] = 0;
  a_conv[static_cast<size_t>(cd.output_spatial[0])] = plan.axis_m;
  a_conv[static_cast<size_t>(cd.output_feature)] = plan.axis_n;

  // The operands' producers the plan fused run in glue before the call; the rest is the
  // epilogue, computed on each output block at the last C_in step.
  std::set<const Instruction*> members(kernel.instructions.begin(), kernel.instructions.end());
  plan.lhs_source = in;
  plan.rhs_source = ker;
  std::set<const Instruction*> before = Ancestors(in, members);
  for (const Instruction* i : Ancestors(ker, members)) before.insert(i);
  std::set<const Instruction*> in_body;
  for (const Instruction* i : kernel.instructions) {
    if (before.count(i)) {
      plan.glue_before.push_back(i);
      continue;
    }
    if (i != conv && !BodyOp(*i)) {
      return Glue("op " + std::string(hlo::OpcodeName(i->opcode)) + " %" + i->name +
                  " in the convolution's epilogue has no form inside a pallas_call yet");
    }
    if (IsArrayConstant(*i)) continue;
    plan.body.push_back(i);
    in_body.insert(i);
  }
  for (const Instruction* o : kernel.outputs) {
    if (before.count(o)) continue;
    if (!o->shape.is_array() || o->shape.dims() != conv->shape.dims()) {
      return Glue("output %" + o->name + " of the convolution is not shaped like its result");
    }
    plan.assign[o] = a_conv;
    plan.call_outputs.push_back(o);
  }
  if (std::string c = Propagate(plan, in_body); !c.empty()) return Glue(c);
  auto it = plan.assign.find(conv);
  if (it == plan.assign.end() || it->second != a_conv) {
    return Glue("the epilogue needs the convolution's result as a different block");
  }
  if (std::string c = Align(plan); !c.empty()) return Glue(c);
  if (std::string c = CheckOutputsCoverAxes(plan); !c.empty()) return Glue(c);
  return plan;
}

int64_t ConvBlockM(const BlockPlan& plan, const std::vector<int64_t>& blocks) {
  return ConvRowsM(plan, blocks[static_cast<size_t>(plan.axis_m)]);
}

int64_t ConvRowsM(const BlockPlan& plan, int64_t rows) {
  const ConvGeometry& g = plan.geom;
  int64_t m = rows;
  for (size_t i = 1; i < g.out_spatial.size(); ++i) {
    m *= i + 1 == g.out_spatial.size() ? g.last_computed : g.out_spatial[i];
  }
  return m;
}

std::vector<int64_t> ConvImageQ(const BlockPlan& plan, int64_t rows) {
  const ConvGeometry& g = plan.geom;
  std::vector<int64_t> q = g.q;
  const size_t ns = q.size();
  if (ns == 0 || rows < 1) return q;
  // q - out_spatial: the furthest a tap reaches past its output position, in phase positions.
  const int64_t blocks = (g.out_spatial[0] + rows - 1) / rows;
  q[0] = blocks * rows + (g.q[0] - g.out_spatial[0]);
  if (ns >= 2) q[ns - 1] = g.last_computed + (g.q[ns - 1] - g.out_spatial[ns - 1]);
  return q;
}

int64_t ConvTapGroup(const BlockPlan& plan, const std::vector<int64_t>& blocks, int64_t mxu_dim) {
  const int64_t bk = blocks[static_cast<size_t>(plan.axis_k)];
  if (bk != plan.geom.in_features || mxu_dim <= 0 || bk >= mxu_dim) return 1;
  return std::max<int64_t>(1, std::min(plan.geom.taps, mxu_dim / bk));
}

int64_t ConvPaddedDepth(const BlockPlan& plan, const std::vector<int64_t>& blocks, int64_t mxu_dim) {
  const int64_t bk = blocks[static_cast<size_t>(plan.axis_k)];
  const int64_t group = ConvTapGroup(plan, blocks, mxu_dim);
  const int64_t side = std::max<int64_t>(1, mxu_dim);
  int64_t depth = 0;
  for (int64_t t = 0; t < plan.geom.taps; t += group) {
    const int64_t k = std::min(group, plan.geom.taps - t) * bk;
    depth += (k + side - 1) / side * side;
  }
  return depth;
}

int64_t InitialConvRows(const BlockPlan& plan, const std::vector<int64_t>& legal, int64_t max_m) {
  int64_t best = legal.empty() ? 1 : legal.front();
  for (int64_t rows : legal) {
    if (ConvRowsM(plan, rows) <= max_m) best = rows;
  }
  return best;
}

int64_t ConvVmemBytes(const BlockPlan& plan, const std::vector<int64_t>& blocks) {
  const ConvGeometry& g = plan.geom;
  const int64_t bn = blocks[static_cast<size_t>(plan.axis_n)];
  const int64_t bk = blocks[static_cast<size_t>(plan.axis_k)];
  const int64_t m = ConvBlockM(plan, blocks);
  const std::vector<int64_t> q = ConvImageQ(plan, blocks[static_cast<size_t>(plan.axis_m)]);
  std::vector<int64_t> image = {g.phases};
  image.insert(image.end(), q.begin(), q.end());
  image.push_back(bk);
  int64_t total = 2 * TiledBytes(image, hlo::DTypeByteSize(plan.lhs_source->shape.dtype()));
  total += 2 * TiledBytes({g.taps, bk, bn}, hlo::DTypeByteSize(plan.rhs_source->shape.dtype()));
  total += TiledBytes({m, bn}, 4);  // the accumulator (scratch)
  // Values of the body: the running sum and one tap's product ([M, bn] f32 each) and one tap's
  // input rows ([M, bk]) live at once. Narrow channels merge taps (ConvTapGroup, up to 256 deep:
  // the widest MXU side): every merged tap's rows (each lane-padded) and their concatenation
  // are live together (25k's 27 taps of 3 channels ran out of scoped VMEM counted as one).
  total += 2 * TiledBytes({m, bn}, 4) + TiledBytes({m, bk}, 4);
  if (bk == g.in_features && bk < 256) {
    const int64_t pieces = std::min<int64_t>(g.taps, 256 / bk);
    total += pieces * TiledBytes({m, bk}, 4) + TiledBytes({m, std::min<int64_t>(256, g.taps * bk)}, 4);
  }
  return total;
}

}  // namespace mk::codegen::pallas
