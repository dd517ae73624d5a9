#include "codegen/pallas/conv_call.h"

#include "codegen/pallas/conv_plan.h"
#include "codegen/pallas/jnp_ops.h"

namespace mk::codegen::pallas {

namespace {

std::vector<int64_t> Identity(size_t n) {
  std::vector<int64_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<int64_t>(i);
  return v;
}

std::string Ints(const std::vector<int64_t>& v) {
  std::vector<std::string> s;
  for (int64_t x : v) s.push_back(std::to_string(x));
  return TupleOf(s);
}

}  // namespace

void EmitConvOperands(std::ostringstream& fn, int indent, const BlockPlan& plan,
                      const std::vector<int64_t>& blocks, int64_t tap_group, const Names& names) {
  const ConvGeometry& g = plan.geom;
  const size_t ns = g.q.size();
  // Padded further (past the output) to whole blocks of rows and the computed width.
  const std::vector<int64_t> q = ConvImageQ(plan, blocks[static_cast<size_t>(plan.axis_m)]);
  // Input: [batch, spatial.., C_in], padded (interior padding: an lhs dilation), each spatial
  // dim made Q*stride long and split into (Q, stride), the stride phases moved in front.
  std::string x = names.Of(plan.lhs_source);
  if (g.in_perm != Identity(g.in_perm.size())) x = "jax.lax.transpose(" + x + ", " + Ints(g.in_perm) + ")";
  std::vector<std::string> pads = {"(0, 0, 0)"};
  for (size_t i = 0; i < ns; ++i) {
    const int64_t high = g.pad_high[i] + (q[i] - g.q[i]) * g.stride[i];
    pads.push_back("(" + std::to_string(g.pad_low[i]) + ", " + std::to_string(high) + ", " +
                   std::to_string(g.interior[i]) + ")");
  }
  pads.push_back("(0, 0, 0)");
  Line(fn, indent, "lhs = " + x);
  Line(fn, indent, "lhs = jax.lax.pad(lhs, jnp.zeros((), lhs.dtype), " + TupleOf(pads) + ")");
  std::vector<int64_t> split = {g.batch}, phase_first = {0}, canon = {g.batch, g.phases};
  for (size_t i = 0; i < ns; ++i) {
    split.push_back(q[i]);
    split.push_back(g.stride[i]);
    phase_first.push_back(static_cast<int64_t>(2 + 2 * i));
  }
  for (size_t i = 0; i < ns; ++i) {
    phase_first.push_back(static_cast<int64_t>(1 + 2 * i));
    canon.push_back(q[i]);
  }
  split.push_back(g.in_features);
  phase_first.push_back(static_cast<int64_t>(1 + 2 * ns));
  canon.push_back(g.in_features);
  Line(fn, indent, "lhs = jnp.reshape(jax.lax.transpose(jnp.reshape(lhs, " + PyTuple(split) + "), " +
                       Ints(phase_first) + "), " + PyTuple(canon) + ")");
  // Kernel: [spatial.., C_in, C_out], the window taps merged.
  std::string w = names.Of(plan.rhs_source);
  if (g.kernel_perm != Identity(g.kernel_perm.size())) w = "jax.lax.transpose(" + w + ", " + Ints(g.kernel_perm) + ")";
  const std::vector<int64_t> rdims = tap_group > 1 ? std::vector<int64_t>{g.taps * g.in_features, g.out_features}
                                                   : std::vector<int64_t>{g.taps, g.in_features, g.out_features};
  Line(fn, indent, "rhs = jnp.reshape(" + w + ", " + PyTuple(rdims) + ")");
}

std::vector<std::string> ConvOperandSpecs(const BlockPlan& plan, const std::vector<int64_t>& blocks,
                                          int64_t tap_group, size_t num_axes) {
  const ConvGeometry& g = plan.geom;
  std::vector<std::string> grid, lblock = {"None", std::to_string(g.phases)}, lidx = {"g0", "0"};
  for (size_t a = 0; a < num_axes; ++a) grid.push_back("g" + std::to_string(a));
  for (int64_t q : ConvImageQ(plan, blocks[static_cast<size_t>(plan.axis_m)])) {
    lblock.push_back(std::to_string(q));
    lidx.push_back("0");
  }
  const std::string k = "g" + std::to_string(plan.axis_k), n = "g" + std::to_string(plan.axis_n);
  lblock.push_back(std::to_string(blocks[static_cast<size_t>(plan.axis_k)]));
  lidx.push_back(k);
  const std::vector<std::string> rblock = {std::to_string(g.taps),
                                           std::to_string(blocks[static_cast<size_t>(plan.axis_k)]),
                                           std::to_string(blocks[static_cast<size_t>(plan.axis_n)])};
  const std::string lambda = "lambda " + Join(grid) + ": ";
  if (tap_group > 1) {  // [taps x C_in, C_out], C_in one block
    const std::vector<std::string> merged = {std::to_string(g.taps * blocks[static_cast<size_t>(plan.axis_k)]),
                                             std::to_string(blocks[static_cast<size_t>(plan.axis_n)])};
    return {"pl.BlockSpec(" + TupleOf(lblock) + ", " + lambda + TupleOf(lidx) + ")",
            "pl.BlockSpec(" + TupleOf(merged) + ", " + lambda + TupleOf({k, n}) + ")"};
  }
  return {"pl.BlockSpec(" + TupleOf(lblock) + ", " + lambda + TupleOf(lidx) + ")",
          "pl.BlockSpec(" + TupleOf(rblock) + ", " + lambda + TupleOf({"0", k, n}) + ")"};
}

Status EmitConvSteps(std::ostringstream& body, int indent, const BlockPlan& plan,
                     const std::vector<int64_t>& blocks, int64_t tap_group) {
  const ConvGeometry& g = plan.geom;
  const size_t ns = g.q.size();
  const int64_t rows = blocks[static_cast<size_t>(plan.axis_m)];
  const int64_t bk = blocks[static_cast<size_t>(plan.axis_k)];
  const bool f32 = plan.lhs_source->shape.dtype() == hlo::DType::kF32 ||
                   plan.rhs_source->shape.dtype() == hlo::DType::kF32;
  const std::string kax = std::to_string(plan.axis_k);
  Line(body, indent, "@pl.when(pl.program_id(" + kax + ") == 0)");
  Line(body, indent, "def _zero():");
  Line(body, indent + 4, "acc_ref[...] = jnp.zeros(acc_ref.shape, jnp.float32)");
  Line(body, indent, "row0 = pl.program_id(" + std::to_string(plan.axis_m) + ") * " + std::to_string(rows));
  Line(body, indent, "acc = acc_ref[...]");
  // Every tap, row-major over the window: its phase and its offset within the phase per dim;
  // its input rows as [M, bk].
  const std::string m = std::to_string(ConvBlockM(plan, blocks));
  const std::string precision = f32 ? "jax.lax.Precision.HIGHEST" : "None";
  std::vector<std::string> rows_of_tap;
  std::vector<int64_t> t(ns, 0);
  for (int64_t tap = 0; tap < g.taps; ++tap) {
    int64_t phase = 0;
    std::vector<std::string> idx;
    for (size_t i = 0; i < ns; ++i) {
      const int64_t at = t[i] * g.dilation[i];
      phase = phase * g.stride[i] + at % g.stride[i];
      const int64_t off = at / g.stride[i];
      const int64_t width = i + 1 == ns ? g.last_computed : g.out_spatial[i];
      idx.push_back(i == 0 ? "pl.ds(row0 + " + std::to_string(off) + ", " + std::to_string(rows) + ")"
                           : std::to_string(off) + ":" + std::to_string(off + width));
    }
    idx.insert(idx.begin(), std::to_string(phase));
    idx.push_back(":");
    rows_of_tap.push_back("jnp.reshape(lhs_ref[" + Join(idx) + "], (" + m + ", " + std::to_string(bk) + "))");
    for (size_t i = ns; i-- > 0;) {  // next tap
      if (++t[i] < g.window[i]) break;
      t[i] = 0;
    }
  }
  if (tap_group <= 1) {
    for (int64_t tap = 0; tap < g.taps; ++tap) {
      Line(body, indent, "x = " + rows_of_tap[static_cast<size_t>(tap)]);
      Line(body, indent, "acc = acc + jax.lax.dot_general(x, rhs_ref[" + std::to_string(tap) +
                             "], (((1,), (0,)), ((), ())), precision=" + precision +
                             ", preferred_element_type=jnp.float32)");
    }
  } else {
    // Groups of taps: their rows side by side along K, against the matching rows of the
    // [taps x C_in, C_out] kernel block.
    for (int64_t t0 = 0; t0 < g.taps; t0 += tap_group) {
      const int64_t t1 = std::min(g.taps, t0 + tap_group);
      std::vector<std::string> parts(rows_of_tap.begin() + t0, rows_of_tap.begin() + t1);
      Line(body, indent, "x = " + (parts.size() == 1 ? parts[0] : "jnp.concatenate([" + Join(parts) + "], axis=1)"));
      Line(body, indent, "acc = acc + jax.lax.dot_general(x, rhs_ref[" + std::to_string(t0 * bk) + ":" +
                             std::to_string(t1 * bk) + ", :], (((1,), (0,)), ((), ())), precision=" +
                             precision + ", preferred_element_type=jnp.float32)");
    }
  }
  Line(body, indent, "acc_ref[...] = acc");
  return Status::Ok();
}

std::string ConvResultBlock(const BlockPlan& plan, const std::vector<int64_t>& blocks,
                            const std::string& dtype) {
  const ConvGeometry& g = plan.geom;
  const size_t ns = g.out_spatial.size();
  std::vector<int64_t> canon = {1, blocks[static_cast<size_t>(plan.axis_m)]};
  for (size_t i = 1; i < ns; ++i) canon.push_back(i + 1 == ns ? g.last_computed : g.out_spatial[i]);
  canon.push_back(blocks[static_cast<size_t>(plan.axis_n)]);
  std::string e = "jnp.reshape(acc_ref[...].astype(" + dtype + "), " + PyTuple(canon) + ")";
  if (ns >= 2 && g.last_computed != g.out_spatial.back()) {
    // Drop the positions computed past the last spatial dim (they read padding).
    std::vector<std::string> idx(canon.size(), ":");
    idx[ns] = ":" + std::to_string(g.out_spatial.back());
    e += "[" + Join(idx) + "]";
  }
  if (g.out_perm != Identity(g.out_perm.size())) e = "jax.lax.transpose(" + e + ", " + Ints(g.out_perm) + ")";
  return e;
}

}  // namespace mk::codegen::pallas
