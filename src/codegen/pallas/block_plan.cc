#include "codegen/pallas/block_plan.h"

#include <algorithm>
#include <numeric>
#include <optional>

#include "codegen/pallas/conv_plan.h"
#include "codegen/pallas/jnp_ops.h"

namespace mk::codegen::pallas {

using hlo::Instruction;
using hlo::Opcode;

namespace {

bool AllWhole(const Assignment& a) {
  return std::all_of(a.begin(), a.end(), [](int x) { return x < 0; });
}

std::string OpName(const Instruction& i) {
  return std::string(hlo::OpcodeName(i.opcode)) + " %" + i.name;
}

// The assignment operand `i` of `inst` needs for `inst` to be computed as the block `out`, or
// nullopt with `why` set when no block of the operand gives that block.
std::optional<Assignment> OperandAssignment(const Instruction& inst, size_t i, const Assignment& out,
                                            std::string* why) {
  const Instruction& o = *inst.operands[i];
  if (!o.shape.is_array()) {
    *why = OpName(inst) + " reads a tuple";
    return std::nullopt;
  }
  const auto& od = o.shape.dims();
  const auto& d = inst.shape.dims();
  const Assignment whole(od.size(), -1);
  if (AllWhole(out)) return whole;
  Assignment a = whole;
  switch (inst.opcode) {
    case Opcode::kBroadcast:
      for (size_t j = 0; j < od.size(); ++j) a[j] = out[static_cast<size_t>(inst.dimensions[j])];
      return a;
    case Opcode::kTranspose:
      for (size_t j = 0; j < d.size(); ++j) a[static_cast<size_t>(inst.dimensions[j])] = out[j];
      return a;
    case Opcode::kReshape:
    case Opcode::kBitcast: {
      if (od == d) return out;
      // A reshape that only adds or drops dims of 1 ([512] <-> [1,512], JAX's broadcast_in_dim
      // of a bias): its other dims correspond one to one.
      std::vector<size_t> on, dn;
      for (size_t j = 0; j < od.size(); ++j) if (od[j] != 1) on.push_back(j);
      for (size_t j = 0; j < d.size(); ++j) if (d[j] != 1) dn.push_back(j);
      bool unit_only = on.size() == dn.size();
      for (size_t j = 0; unit_only && j < on.size(); ++j) unit_only = od[on[j]] == d[dn[j]];
      if (unit_only) {
        for (size_t j = 0; j < dn.size(); ++j) a[on[j]] = out[dn[j]];
        return a;  // a blocked dim of 1 has one step: the operand need not follow it
      }
      // Else the dims up to a blocked one must be the same on both sides.
      for (size_t j = 0; j < d.size(); ++j) {
        if (out[j] < 0) continue;
        if (j >= od.size() || !std::equal(d.begin(), d.begin() + static_cast<long>(j) + 1, od.begin())) {
          *why = OpName(inst) + " moves a blocked dimension";
          return std::nullopt;
        }
        a[j] = out[j];
      }
      return a;
    }
    case Opcode::kReduce: {
      if (inst.operands.size() != 2) {
        *why = OpName(inst) + " is a variadic reduce";
        return std::nullopt;
      }
      if (i == 1) return Assignment{};
      size_t k = 0;
      for (size_t j = 0; j < od.size(); ++j) {
        if (std::find(inst.dimensions.begin(), inst.dimensions.end(), static_cast<int64_t>(j)) !=
            inst.dimensions.end()) {
          continue;
        }
        a[j] = out[k++];
      }
      return a;
    }
    case Opcode::kSlice:
      for (size_t j = 0; j < d.size(); ++j) {
        const auto& s = inst.slice[j];
        if (out[j] >= 0 && !(s.start == 0 && s.stride == 1 && s.limit == od[j])) {
          *why = OpName(inst) + " slices a blocked dimension";
          return std::nullopt;
        }
      }
      return out;
    case Opcode::kConcatenate:
      if (out[static_cast<size_t>(inst.dimensions.at(0))] >= 0) {
        *why = OpName(inst) + " concatenates along a blocked dimension";
        return std::nullopt;
      }
      return out;
    case Opcode::kPad:
      if (i == 1) return Assignment{};
      for (size_t j = 0; j < d.size(); ++j) {
        const auto& p = inst.padding[j];
        if (out[j] >= 0 && (p.low || p.high || p.interior)) {
          *why = OpName(inst) + " pads a blocked dimension";
          return std::nullopt;
        }
      }
      return out;
    case Opcode::kReverse:
      for (int64_t r : inst.dimensions) {
        if (out[static_cast<size_t>(r)] >= 0) {
          *why = OpName(inst) + " reverses a blocked dimension";
          return std::nullopt;
        }
      }
      return out;
    default:
      break;
  }
  if (hlo::IsElementwise(inst.opcode) || inst.opcode == Opcode::kCopy ||
      inst.opcode == Opcode::kBitcastConvert) {
    if (od.empty()) return Assignment{};
    if (od == d) return out;
  }
  *why = OpName(inst) + " has no blocked form here";
  return std::nullopt;
}

}  // namespace

// Whether the body may compute `inst` (inside a pallas_call): the ops TranslateOp writes for
// blocks. Dots other than the hero, convolutions, reduce-windows, tuples and standalone ops
// are not.
bool BodyOp(const Instruction& inst) {
  switch (inst.opcode) {
    case Opcode::kDot: case Opcode::kConvolution: case Opcode::kReduceWindow:
    case Opcode::kTuple: case Opcode::kGetTupleElement: case Opcode::kGather:
    case Opcode::kScatter:
      return false;
    default:
      return IsTranslatable(inst.opcode) && inst.shape.is_array();
  }
}

bool IsArrayConstant(const Instruction& i) {
  return i.opcode == Opcode::kConstant && i.shape.rank() > 0;
}

// Fills plan.assign backward from the outputs' assignments already in it; the values from
// outside the body become call inputs. Returns the conflict, or empty.
std::string Propagate(BlockPlan& plan, const std::set<const Instruction*>& in_body) {
  for (auto it = plan.body.rbegin(); it != plan.body.rend(); ++it) {
    const Instruction* inst = *it;
    auto found = plan.assign.find(inst);
    if (found == plan.assign.end()) continue;  // not needed by any output
    if (inst == plan.dot || inst == plan.conv) continue;  // its operands are the call's lhs/rhs
    const Assignment out = found->second;
    for (size_t i = 0; i < inst->operands.size(); ++i) {
      const Instruction* o = inst->operands[i];
      std::string why;
      auto a = OperandAssignment(*inst, i, out, &why);
      if (!a) return why;
      auto [pos, inserted] = plan.assign.emplace(o, *a);
      if (!inserted && pos->second != *a) {
        return "%" + o->name + " is needed as two different blocks";
      }
      if (inserted && !in_body.count(o)) plan.call_inputs.push_back(o);
    }
  }
  return "";
}

const std::vector<int64_t>& CallDims(const BlockPlan& plan, const Instruction* v) {
  auto it = plan.call_layout.find(v);
  return it == plan.call_layout.end() ? v->shape.dims() : it->second.dims;
}

const Assignment& CallAssign(const BlockPlan& plan, const Instruction* v) {
  auto it = plan.call_layout.find(v);
  return it == plan.call_layout.end() ? plan.assign.at(v) : it->second.assign;
}

namespace {

// Inserts unit dims after the last of `v`'s dims that a block-1 axis of more than one step
// blocks, when it is one of the last two, so that it no longer is (see BlockPlan::call_layout).
void MoveBlockOfOneOutOfTheTile(BlockPlan& plan, const Instruction* v) {
  const Assignment& a = plan.assign.at(v);
  const auto& dims = v->shape.dims();
  const int r = static_cast<int>(a.size());
  int last = -1;
  for (int p = std::max(0, r - 2); p < r; ++p) {
    if (a[static_cast<size_t>(p)] >= 0) {
      const GridAxis& ax = plan.axes[static_cast<size_t>(a[static_cast<size_t>(p)])];
      if (ax.param.empty() && ax.extent > 1) last = p;
    }
  }
  if (last < 0) return;
  BlockPlan::Layout l;
  for (int p = 0; p < r; ++p) {
    l.dims.push_back(dims[static_cast<size_t>(p)]);
    l.assign.push_back(a[static_cast<size_t>(p)]);
    if (p == last) {
      for (int u = 0; u < 2 - (r - 1 - last); ++u) {
        l.dims.push_back(1);
        l.assign.push_back(-1);
      }
    }
  }
  plan.call_layout[v] = std::move(l);
}

}  // namespace

// Alignment of every axis from the arrays' last two dims; an error text when an axis of block
// 1 lands there.
std::string Align(BlockPlan& plan) {
  auto note = [&](const Instruction* v) {
    MoveBlockOfOneOutOfTheTile(plan, v);
    const Assignment& a = CallAssign(plan, v);
    const size_t r = a.size();
    if (r >= 1 && a[r - 1] >= 0) {
      auto& ax = plan.axes[static_cast<size_t>(a[r - 1])];
      ax.align = std::lcm(ax.align, int64_t{128});
    }
    if (r >= 2 && a[r - 2] >= 0) {
      auto& ax = plan.axes[static_cast<size_t>(a[r - 2])];
      ax.align = std::lcm(ax.align, int64_t{8});
    }
  };
  for (const Instruction* v : plan.call_inputs) note(v);
  for (const Instruction* v : plan.call_outputs) note(v);
  if (plan.conv) {  // C_in and C_out: the last dims of the kernel's [taps, bk, bn] blocks
    plan.axes[static_cast<size_t>(plan.axis_k)].align = std::lcm(plan.axes[static_cast<size_t>(plan.axis_k)].align, int64_t{128});
    plan.axes[static_cast<size_t>(plan.axis_n)].align = std::lcm(plan.axes[static_cast<size_t>(plan.axis_n)].align, int64_t{128});
  }
  if (plan.dot) {
    plan.axes[static_cast<size_t>(plan.axis_m)].align = std::lcm(plan.axes[static_cast<size_t>(plan.axis_m)].align, int64_t{8});
    plan.axes[static_cast<size_t>(plan.axis_k)].align = std::lcm(plan.axes[static_cast<size_t>(plan.axis_k)].align, int64_t{128});
    plan.axes[static_cast<size_t>(plan.axis_n)].align = std::lcm(plan.axes[static_cast<size_t>(plan.axis_n)].align, int64_t{128});
  }
  for (const auto& ax : plan.axes) {
    if (ax.param.empty() && ax.extent > 1 && ax.align > 1) {
      return "a block of 1 along a dimension of " + std::to_string(ax.extent) +
             " would be one of an array's last two (the (8,128) rule)";
    }
  }
  return "";
}

// Every output must be blocked along every parallel axis: otherwise two steps that may run on
// different cores write the same block.
std::string CheckOutputsCoverAxes(const BlockPlan& plan) {
  for (const Instruction* o : plan.call_outputs) {
    const Assignment& a = plan.assign.at(o);
    for (size_t ax = 0; ax < plan.axes.size(); ++ax) {
      if (plan.axes[ax].arbitrary || plan.axes[ax].extent == 1) continue;
      if (!plan.axes[ax].param.empty() && LegalBlocks(plan.axes[ax]).front() == plan.axes[ax].extent) {
        continue;  // one step whatever the schedule
      }
      if (std::find(a.begin(), a.end(), static_cast<int>(ax)) == a.end()) {
        return "output %" + o->name + " is not blocked along every parallel grid axis";
      }
    }
  }
  return "";
}

BlockPlan Glue(const std::string& why) {
  BlockPlan p;
  p.pallas = false;
  p.glue_reason = why;
  return p;
}

// Members of `kernel` that `inst` depends on (itself included).
std::set<const Instruction*> Ancestors(const Instruction* inst, const std::set<const Instruction*>& members) {
  std::set<const Instruction*> seen;
  std::vector<const Instruction*> stack = {inst};
  while (!stack.empty()) {
    const Instruction* i = stack.back();
    stack.pop_back();
    if (!members.count(i) || !seen.insert(i).second) continue;
    for (const Instruction* o : i->operands) stack.push_back(o);
  }
  return seen;
}

namespace {

// The body of a loop or reduction kernel blocked by rows of its outputs (`by_rows`), or as one
// whole block.
BlockPlan RowPlan(const analysis::Kernel& kernel, bool by_rows, std::string* conflict) {
  BlockPlan plan;
  plan.pallas = true;
  std::set<const Instruction*> in_body;
  for (const Instruction* i : kernel.instructions) {
    if (!BodyOp(*i)) {
      *conflict = OpName(*i) + " has no form inside a pallas_call yet";
      return plan;
    }
    if (IsArrayConstant(*i)) continue;  // passed in from glue
    plan.body.push_back(i);
    in_body.insert(i);
  }
  int64_t rows = -1;
  for (const Instruction* o : kernel.outputs) {
    if (!o->shape.is_array()) {
      *conflict = "output %" + o->name + " is a tuple";
      return plan;
    }
    if (o->shape.rank() == 0 || (rows >= 0 && o->shape.dim(0) != rows)) by_rows = false;
    else rows = o->shape.dim(0);
  }
  if (by_rows && rows > 1) {
    plan.axes.push_back({"block_rows", rows, 1, false});
  } else {
    if (by_rows) {
      *conflict = "no rows to block";
      return plan;
    }
    plan.axes.push_back({"", 1, 1, false});
  }
  for (const Instruction* o : kernel.outputs) {
    Assignment a(static_cast<size_t>(o->shape.rank()), -1);
    if (by_rows) a[0] = 0;
    plan.assign[o] = a;
    plan.call_outputs.push_back(o);
    if (!in_body.count(o)) plan.call_inputs.push_back(o);  // an output that is an input
  }
  if (std::string c = Propagate(plan, in_body); !c.empty()) {
    *conflict = c;
    return plan;
  }
  if (std::string c = Align(plan); !c.empty()) {
    *conflict = c;
    return plan;
  }
  if (std::string c = CheckOutputsCoverAxes(plan); !c.empty()) *conflict = c;
  return plan;
}

BlockPlan ContractionPlan(const analysis::Kernel& kernel) {
  const Instruction* dot = kernel.hero;
  if (dot && dot->opcode == Opcode::kConvolution) return ConvolutionPlan(kernel);
  if (!dot || dot->opcode != Opcode::kDot) return Glue("contraction without a dot hero");
  if (!dot->dot_dims) return Glue("dot without dimension numbers");
  const auto& dd = *dot->dot_dims;
  const Instruction* lhs = dot->operands[0];
  const Instruction* rhs = dot->operands[1];
  auto free_dims = [](int64_t rank, const std::vector<int64_t>& batch, const std::vector<int64_t>& contract) {
    std::vector<int64_t> f;
    for (int64_t d = 0; d < rank; ++d) {
      if (std::find(batch.begin(), batch.end(), d) == batch.end() &&
          std::find(contract.begin(), contract.end(), d) == contract.end()) {
        f.push_back(d);
      }
    }
    return f;
  };
  const auto lhs_free = free_dims(lhs->shape.rank(), dd.lhs_batch, dd.lhs_contracting);
  const auto rhs_free = free_dims(rhs->shape.rank(), dd.rhs_batch, dd.rhs_contracting);
  if (lhs_free.empty() || rhs_free.empty() || dd.lhs_contracting.empty()) {
    return Glue("dot %" + dot->name + " has no free dimension on one side or nothing to contract: not an MXU matmul");
  }
  const hlo::DType acc_ok[] = {hlo::DType::kBF16, hlo::DType::kF16, hlo::DType::kF32};
  if (std::find(std::begin(acc_ok), std::end(acc_ok), dot->shape.dtype()) == std::end(acc_ok)) {
    return Glue("dot %" + dot->name + " of " + std::string(hlo::DTypeName(dot->shape.dtype())) +
                ": only bf16/f16/f32 dots run on the MXU here");
  }
  BlockPlan plan;
  plan.pallas = true;
  plan.dot = dot;
  Assignment a_dot;
  int64_t k_extent = 1;
  for (int64_t c : dd.lhs_contracting) k_extent *= lhs->shape.dim(c);
  for (size_t b = 0; b < dd.lhs_batch.size(); ++b) {
    a_dot.push_back(static_cast<int>(plan.axes.size()));
    plan.axes.push_back({"", lhs->shape.dim(dd.lhs_batch[b]), 1, false});
  }
  for (size_t f = 0; f + 1 < lhs_free.size(); ++f) {
    a_dot.push_back(static_cast<int>(plan.axes.size()));
    plan.axes.push_back({"", lhs->shape.dim(lhs_free[f]), 1, false});
  }
  plan.axis_m = static_cast<int>(plan.axes.size());
  a_dot.push_back(plan.axis_m);
  plan.axes.push_back({"bm", lhs->shape.dim(lhs_free.back()), 1, false});
  // Several N-side free dims (q.k of attention with a head-group dim) are merged into one N in
  // the rhs's canonical layout; the result's are then whole in every block (see whole_n).
  int64_t n_extent = 1;
  for (int64_t f : rhs_free) n_extent *= rhs->shape.dim(f);
  plan.axis_n = static_cast<int>(plan.axes.size());
  plan.axes.push_back({"bn", n_extent, 1, false});
  plan.axis_k = static_cast<int>(plan.axes.size());
  plan.axes.push_back({"bk", k_extent, 1, true});

  // Canonical operands: lhs [batch.., free.., K], rhs [batch.., K, N].
  plan.lhs_perm = dd.lhs_batch;
  plan.lhs_perm.insert(plan.lhs_perm.end(), lhs_free.begin(), lhs_free.end());
  plan.lhs_perm.insert(plan.lhs_perm.end(), dd.lhs_contracting.begin(), dd.lhs_contracting.end());
  plan.rhs_perm = dd.rhs_batch;
  plan.rhs_perm.insert(plan.rhs_perm.end(), dd.rhs_contracting.begin(), dd.rhs_contracting.end());
  plan.rhs_perm.insert(plan.rhs_perm.end(), rhs_free.begin(), rhs_free.end());
  for (int64_t b : dd.lhs_batch) plan.lhs_canon.push_back(lhs->shape.dim(b));
  for (int64_t f : lhs_free) plan.lhs_canon.push_back(lhs->shape.dim(f));
  plan.lhs_canon.push_back(k_extent);
  for (int64_t b : dd.rhs_batch) plan.rhs_canon.push_back(rhs->shape.dim(b));
  plan.rhs_canon.push_back(k_extent);
  plan.rhs_canon.push_back(n_extent);
  plan.lhs_squeezed = static_cast<int64_t>(plan.lhs_canon.size()) - 2;
  plan.rhs_squeezed = static_cast<int64_t>(plan.rhs_canon.size()) - 2;

  std::set<const Instruction*> members(kernel.instructions.begin(), kernel.instructions.end());
  // Converts between an input and the dot, used by nothing else, run in the body on the block
  // (bf16 weights widened for an f32 dot stay bf16 in HBM and in the DMA).
  std::map<const Instruction*, int> uses;
  for (const Instruction* i : kernel.instructions) {
    for (const Instruction* o : i->operands) ++uses[o];
  }
  std::set<const Instruction*> outputs(kernel.outputs.begin(), kernel.outputs.end());
  auto chain_of = [&](const Instruction* v, std::vector<const Instruction*>* chain) {
    while (members.count(v) && v->opcode == Opcode::kConvert && uses[v] == 1 && !outputs.count(v) &&
           v->operands[0]->shape.is_array() && v->operands[0]->shape.dims() == v->shape.dims()) {
      chain->insert(chain->begin(), v);
      v = v->operands[0];
    }
    return v;
  };
  plan.lhs_source = chain_of(lhs, &plan.lhs_chain);
  plan.rhs_source = chain_of(rhs, &plan.rhs_chain);  // x . x: used twice, so no chain
  std::set<const Instruction*> before = Ancestors(plan.lhs_source, members);
  for (const Instruction* i : Ancestors(plan.rhs_source, members)) before.insert(i);
  std::set<const Instruction*> in_body;
  std::set<const Instruction*> chains(plan.lhs_chain.begin(), plan.lhs_chain.end());
  chains.insert(plan.rhs_chain.begin(), plan.rhs_chain.end());
  for (const Instruction* i : kernel.instructions) {
    if (chains.count(i)) continue;  // applied to the operand blocks
    if (before.count(i)) {
      plan.glue_before.push_back(i);
      continue;
    }
    if (i != dot && !BodyOp(*i)) return Glue(OpName(*i) + " in the epilogue has no form inside a pallas_call yet");
    if (IsArrayConstant(*i)) continue;
    plan.body.push_back(i);
    in_body.insert(i);
  }
  // N blocked whole ("whole_n": the bn axis has the one legal block N) when the dot has several
  // N-side free dims, or an output is not shaped like the dot's result but keeps its batch and
  // M dims in front (a group norm's reshape of the rows): such an output is blocked along those
  // dims only.
  const size_t prefix = a_dot.size();  // batch and M-side dims of the result
  const auto& dd_dims = dot->shape.dims();
  bool whole_n = rhs_free.size() > 1;
  for (const Instruction* o : kernel.outputs) {
    if (before.count(o) || (o->shape.is_array() && o->shape.dims() == dd_dims)) continue;
    const bool keeps_rows = o->shape.is_array() && o->shape.rank() >= static_cast<int64_t>(prefix) &&
                            std::equal(dd_dims.begin(), dd_dims.begin() + static_cast<long>(prefix),
                                       o->shape.dims().begin());
    if (!keeps_rows) {
      return Glue("output %" + o->name + " of the contraction is neither shaped like its dot's result nor keeps its batch and M dims in front");
    }
    whole_n = true;
  }
  if (whole_n) {
    plan.axes[static_cast<size_t>(plan.axis_n)].align = n_extent;  // one legal block: all of N
    a_dot.insert(a_dot.end(), rhs_free.size(), -1);
  } else {
    a_dot.push_back(plan.axis_n);
  }
  for (const Instruction* o : kernel.outputs) {
    if (before.count(o)) continue;  // returned from the glue before the call
    Assignment a = a_dot;
    if (o->shape.dims() != dd_dims) {
      a.assign(static_cast<size_t>(o->shape.rank()), -1);
      std::copy(a_dot.begin(), a_dot.begin() + static_cast<long>(prefix), a.begin());
    }
    plan.assign[o] = a;
    plan.call_outputs.push_back(o);
  }
  if (std::string c = Propagate(plan, in_body); !c.empty()) return Glue(c);
  auto it = plan.assign.find(dot);
  if (it == plan.assign.end() || it->second != a_dot) {
    return Glue("the epilogue needs the dot's result as a different block");
  }
  if (std::string c = Align(plan); !c.empty()) return Glue(c);
  if (std::string c = CheckOutputsCoverAxes(plan); !c.empty()) return Glue(c);
  return plan;
}

}  // namespace

BlockPlan PlanBlocks(const analysis::Kernel& kernel) {
  switch (kernel.family) {
    case analysis::KernelFamily::kStandalone:
      return Glue(std::string(kernel.hero ? hlo::OpcodeName(kernel.hero->opcode) : "standalone op") +
                  ": no pallas_call form yet");
    case analysis::KernelFamily::kContraction:
      return ContractionPlan(kernel);
    case analysis::KernelFamily::kLoop:
    case analysis::KernelFamily::kReduction:
      break;
  }
  if (!kernel.instructions.empty() &&
      std::all_of(kernel.instructions.begin(), kernel.instructions.end(),
                  [](const Instruction* i) { return analysis::IsLaneReshape(*i); })) {
    return Glue("a reshape across the minor (lane) dim: Mosaic cannot lay it out inside a "
                "pallas_call; XLA copies it");
  }
  std::string conflict;
  BlockPlan rows = RowPlan(kernel, true, &conflict);
  if (conflict.empty()) return rows;
  std::string whole_conflict;
  BlockPlan whole = RowPlan(kernel, false, &whole_conflict);
  if (whole_conflict.empty()) return whole;
  return Glue(whole_conflict);
}

std::vector<int64_t> LegalBlocks(const GridAxis& axis) {
  std::vector<int64_t> out;
  if (axis.param.empty()) return {1};
  for (int64_t b = axis.align; b < axis.extent; b += axis.align) {
    if (axis.ragged || axis.extent % b == 0) out.push_back(b);
  }
  out.push_back(axis.extent);
  return out;
}

std::vector<int64_t> BlockDims(const std::vector<int64_t>& dims, const Assignment& assign,
                               const std::vector<int64_t>& blocks) {
  std::vector<int64_t> out = dims;
  for (size_t d = 0; d < out.size() && d < assign.size(); ++d) {
    if (assign[d] >= 0) out[d] = blocks[static_cast<size_t>(assign[d])];
  }
  return out;
}

// A scalar lives in SMEM (no VMEM).
int64_t TiledBytes(std::vector<int64_t> block, int64_t elem_bytes) {
  if (block.empty()) return 0;
  auto up = [](int64_t v, int64_t m) { return (v + m - 1) / m * m; };
  block.back() = up(block.back(), 128);
  if (block.size() >= 2) block[block.size() - 2] = up(block[block.size() - 2], 8);
  int64_t n = elem_bytes;
  for (int64_t d : block) n *= d;
  return n;
}

// The most VMEM the body's own values hold at once. Mosaic keeps a block-sized value that does
// not fit the vector registers in VMEM, outside the scoped buffers the BlockSpecs declare: at
// bench scale a norm's [rows, 8192] f32 intermediates took libtpu past the chip's VMEM where the
// blocks alone fit (46k's group norms; 2p, 4p, 7p, 17p). Walked in body order, each value lives
// from its definition to its last use (a call output to the end, when it is stored), at its
// block's tiled size and at least 4 bytes an element (narrow floats are computed in f32).
static int64_t BodyValuesVmemBytes(const BlockPlan& plan, const std::vector<int64_t>& blocks) {
  const size_t end = plan.body.size();
  std::map<const Instruction*, size_t> last_use;
  for (size_t i = 0; i < end; ++i) {
    for (const Instruction* op : plan.body[i]->operands) last_use[op] = i;
  }
  for (const Instruction* o : plan.call_outputs) last_use[o] = end;
  std::multimap<size_t, int64_t> frees;  // body index after which the bytes are released
  int64_t live = 0, peak = 0;
  for (size_t i = 0; i < end; ++i) {
    const Instruction* v = plan.body[i];
    auto a = plan.assign.find(v);
    if (a != plan.assign.end() && !v->shape.is_tuple() && v->shape.rank() > 0) {
      const int64_t bytes =
          TiledBytes(BlockDims(v->shape.dims(), a->second, blocks),
                     std::max<int64_t>(4, hlo::DTypeByteSize(v->shape.dtype())));
      live += bytes;
      peak = std::max(peak, live);
      auto u = last_use.find(v);
      frees.emplace(u == last_use.end() ? i : u->second, bytes);
    }
    for (auto f = frees.begin(); f != frees.end() && f->first <= i;) {
      live -= f->second;
      f = frees.erase(f);
    }
  }
  return peak;
}

int64_t VmemBytes(const BlockPlan& plan, const std::vector<int64_t>& blocks) {
  int64_t total = BodyValuesVmemBytes(plan, blocks);
  auto add = [&](const Instruction* v) {
    total += 2 * TiledBytes(BlockDims(CallDims(plan, v), CallAssign(plan, v), blocks),
                            hlo::DTypeByteSize(v->shape.dtype()));
  };
  for (const Instruction* v : plan.call_inputs) add(v);
  for (const Instruction* v : plan.call_outputs) add(v);
  if (plan.dot) {
    const int64_t bm = blocks[static_cast<size_t>(plan.axis_m)];
    const int64_t bn = blocks[static_cast<size_t>(plan.axis_n)];
    const int64_t bk = blocks[static_cast<size_t>(plan.axis_k)];
    total += 2 * TiledBytes({bm, bk}, hlo::DTypeByteSize(plan.lhs_source->shape.dtype()));
    total += 2 * TiledBytes({bk, bn}, hlo::DTypeByteSize(plan.rhs_source->shape.dtype()));
    total += TiledBytes({bm, bn}, 4);  // the f32 accumulator (scratch: not double-buffered)
  }
  if (plan.conv) total += ConvVmemBytes(plan, blocks);
  return total;
}

int64_t AxisSteps(const GridAxis& axis, int64_t block) {
  return block > 0 ? (axis.extent + block - 1) / block : 1;
}

Result<std::vector<int64_t>> AxisBlocks(const BlockPlan& plan, const space::Schedule& schedule) {
  std::vector<int64_t> blocks;
  for (const auto& ax : plan.axes) {
    const auto legal = LegalBlocks(ax);
    if (ax.param.empty()) {
      blocks.push_back(1);
      continue;
    }
    const int64_t b = schedule.Get(ax.param, legal.front());
    if (std::find(legal.begin(), legal.end(), b) == legal.end()) {
      return InvalidArgument("block " + ax.param + "=" + std::to_string(b) +
                             " is not legal: it must " + std::string(ax.ragged ? "be below " : "divide ") +
                             std::to_string(ax.extent) + " and be a multiple of " + std::to_string(ax.align) +
                             " (or the whole dimension)");
    }
    blocks.push_back(b);
  }
  return blocks;
}

}  // namespace mk::codegen::pallas
