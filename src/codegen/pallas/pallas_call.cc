#include "codegen/pallas/pallas_call.h"

#include "target/tpu_perf_model.h"

#include <algorithm>
#include <sstream>

#include "codegen/pallas/conv_call.h"
#include "codegen/pallas/conv_plan.h"
#include "codegen/pallas/jnp_ops.h"
#include "codegen/pallas/pallas_emitter.h"
#include "codegen/pallas/pallas_space.h"
#include "support/text_escape.h"

namespace mk::codegen::pallas {

using hlo::Instruction;
using hlo::Opcode;

namespace {

bool Transcendental(Opcode op) {
  switch (op) {
    case Opcode::kExp: case Opcode::kExpm1: case Opcode::kLog: case Opcode::kLog1p:
    case Opcode::kTanh: case Opcode::kLogistic: case Opcode::kSqrt: case Opcode::kRsqrt:
    case Opcode::kCbrt: case Opcode::kSin: case Opcode::kCos: case Opcode::kTan:
    case Opcode::kErf: case Opcode::kPower: case Opcode::kAtan2:
      return true;
    default:
      return false;
  }
}

int64_t Product(const std::vector<int64_t>& v) {
  int64_t n = 1;
  for (int64_t x : v) n *= x;
  return n;
}

// `insts` computed on whole arrays (glue), one assignment per line into `out`.
Status EmitGlueOps(std::ostringstream& out, int indent, const std::vector<const Instruction*>& insts,
                   const Names& names) {
  for (const Instruction* inst : insts) {
    std::vector<std::string> args;
    for (const Instruction* o : inst->operands) args.push_back(names.Of(o));
    OpSite site;
    if (inst->shape.is_array()) site.block_dims = inst->shape.dims();
    MK_ASSIGN_OR_RETURN(std::string e, TranslateOp(*inst, args, site));
    Line(out, indent, names.Of(inst) + " = " + e);
  }
  return Status::Ok();
}

}  // namespace

Result<KernelText> EmitGlueKernel(const analysis::Kernel& k, const std::string& reason,
                                  const Names& names) {
  std::ostringstream out;
  std::vector<std::string> params;
  for (const Instruction* i : k.inputs) params.push_back(names.Of(i));
  Line(out, 0, "def kernel_" + std::to_string(k.id) + "(" + Join(params) + "):");
  Line(out, 4, "# " + OneLineText(k.name) + ": jnp glue (" + OneLineText(reason) + ")");
  MK_RETURN_IF_ERROR(EmitGlueOps(out, 4, k.instructions, names));
  std::vector<std::string> outs;
  for (const Instruction* o : k.outputs) outs.push_back(names.Of(o));
  Line(out, 4, "return " + TupleOf(outs));
  KernelText t;
  t.text = out.str();
  std::vector<std::string> ops;
  for (const Instruction* i : k.instructions) ops.push_back(i->name);
  t.map = {{"name", k.name},
           {"family", analysis::KernelFamilyName(k.family)},
           {"runs", "glue"},
           {"reason", reason},
           {"flops", k.flops},
           {"bytes", k.bytes},
           {"ops_in_pallas", nlohmann::json::array()},
           {"ops_in_glue", ops}};
  return t;
}


namespace {

// The grid axes' index variables "g0, g1, ...".
std::string GridArgs(size_t n) {
  std::vector<std::string> g;
  for (size_t a = 0; a < n; ++a) g.push_back("g" + std::to_string(a));
  return Join(g);
}

// The BlockSpec of a blocked array (rank 0: a whole scalar in SMEM, passed as shape (1,)).
std::string BlockSpecFor(const std::vector<int64_t>& dims, const Assignment& assign,
                         const std::vector<int64_t>& blocks, size_t num_axes) {
  if (dims.empty()) return "pl.BlockSpec(memory_space=pltpu.SMEM)";
  std::vector<std::string> idx;
  for (size_t d = 0; d < dims.size(); ++d) {
    idx.push_back(assign[d] >= 0 ? "g" + std::to_string(assign[d]) : "0");
  }
  return "pl.BlockSpec(" + PyTuple(BlockDims(dims, assign, blocks)) + ", lambda " +
         GridArgs(num_axes) + ": " + TupleOf(idx) + ")";
}

// How many times the pipeline copies a block that depends on the axes in `assign` (grid order,
// last axis fastest): it is copied again whenever its index changes, i.e. once per step of the
// axes up to the innermost one it depends on.
int64_t Copies(const Assignment& assign, const std::vector<int64_t>& steps) {
  int inner = -1;
  for (int a : assign) inner = std::max(inner, a);
  int64_t n = 1;
  for (int a = 0; a <= inner; ++a) n *= steps[static_cast<size_t>(a)];
  return n;
}


}  // namespace

Result<KernelText> EmitPallasKernel(const analysis::Kernel& k, const BlockPlan& plan,
                                    const space::Schedule& schedule,
                                    const target::Target& target, const Names& names) {
  MK_ASSIGN_OR_RETURN(std::vector<int64_t> blocks, AxisBlocks(plan, schedule));
  const int64_t vmem = VmemBytes(plan, blocks);
  if (vmem > VmemBudget(target)) {
    return InvalidArgument(k.name + ": its blocks need " + std::to_string(vmem) +
                           " bytes of VMEM, over the " + std::to_string(VmemBudget(target)) +
                           " of " + target.name);
  }
  std::vector<int64_t> steps;
  for (size_t a = 0; a < plan.axes.size(); ++a) steps.push_back(AxisSteps(plan.axes[a], blocks[a]));
  const size_t na = plan.axes.size();
  const std::string kid = std::to_string(k.id);

  // Scalar constants from outside are written into the body instead of passed.
  std::vector<const Instruction*> passed, inlined;
  for (const Instruction* v : plan.call_inputs) {
    if (v->opcode == Opcode::kConstant && v->shape.rank() == 0) inlined.push_back(v);
    else passed.push_back(v);
  }

  std::ostringstream body;
  std::vector<std::string> refs;
  const bool mxu = plan.dot || plan.conv;  // a contraction: two operands and an accumulator
  if (mxu) refs = {"lhs_ref", "rhs_ref"};
  for (size_t i = 0; i < passed.size(); ++i) refs.push_back("in" + std::to_string(i) + "_ref");
  for (size_t i = 0; i < plan.call_outputs.size(); ++i) refs.push_back("out" + std::to_string(i) + "_ref");
  if (mxu) refs.push_back("acc_ref");
  Line(body, 0, "def _kernel_" + kid + "_body(" + Join(refs) + "):");
  int ind = 4;
  std::string dot_dtype;
  if (plan.dot) {
    MK_ASSIGN_OR_RETURN(dot_dtype, JnpDType(plan.dot->shape.dtype()));
    const std::string kax = std::to_string(plan.axis_k);
    const bool f32 = plan.dot->operands[0]->shape.dtype() == hlo::DType::kF32 ||
                     plan.dot->operands[1]->shape.dtype() == hlo::DType::kF32;
    Line(body, 4, "@pl.when(pl.program_id(" + kax + ") == 0)");
    Line(body, 4, "def _zero():");
    Line(body, 8, "acc_ref[...] = jnp.zeros(acc_ref.shape, jnp.float32)");
    // The fused operand converts, applied to each block as it arrives.
    auto operand = [&](const std::string& ref, const std::vector<const Instruction*>& chain) -> Result<std::string> {
      std::string e = ref + "[...]";
      for (const Instruction* c : chain) {
        MK_ASSIGN_OR_RETURN(std::string t, JnpDType(c->shape.dtype()));
        e = "jax.lax.convert_element_type(" + e + ", " + t + ")";
      }
      return e;
    };
    MK_ASSIGN_OR_RETURN(std::string lhs_block, operand("lhs_ref", plan.lhs_chain));
    MK_ASSIGN_OR_RETURN(std::string rhs_block, operand("rhs_ref", plan.rhs_chain));
    Line(body, 4, "acc_ref[...] += jax.lax.dot_general(" + lhs_block + ", " + rhs_block + ", (((1,), (0,)), ((), ())), "
                  "precision=" + std::string(f32 ? "jax.lax.Precision.HIGHEST" : "None") +
                  ", preferred_element_type=jnp.float32)");
    Line(body, 4, "@pl.when(pl.program_id(" + kax + ") == " + std::to_string(steps[static_cast<size_t>(plan.axis_k)] - 1) + ")");
    Line(body, 4, "def _epilogue():");
    ind = 8;
  }
  if (plan.conv) {
    MK_ASSIGN_OR_RETURN(dot_dtype, JnpDType(plan.conv->shape.dtype()));
    MK_RETURN_IF_ERROR(EmitConvSteps(body, 4, plan, blocks, ConvTapGroup(plan, blocks, target.mxu_dim)));
    Line(body, 4, "@pl.when(pl.program_id(" + std::to_string(plan.axis_k) + ") == " +
                      std::to_string(steps[static_cast<size_t>(plan.axis_k)] - 1) + ")");
    Line(body, 4, "def _epilogue():");
    ind = 8;
  }
  for (const Instruction* v : inlined) {
    MK_ASSIGN_OR_RETURN(std::string e, ScalarConstantExpr(*v));
    Line(body, ind, names.Of(v) + " = " + e);
  }
  for (size_t i = 0; i < passed.size(); ++i) {
    const std::string ref = "in" + std::to_string(i) + "_ref";
    std::string e = ref + (passed[i]->shape.rank() == 0 ? "[0]" : "[...]");
    if (plan.call_layout.count(passed[i])) {  // passed with unit dims inserted: back to its block
      e = "jnp.reshape(" + e + ", " + PyTuple(BlockDims(passed[i]->shape.dims(), plan.assign.at(passed[i]), blocks)) + ")";
    }
    Line(body, ind, names.Of(passed[i]) + " = " + e);
  }
  int64_t vpu_flops = 0, transcendentals = 0;
  std::vector<std::string> ops_in_pallas;
  for (const Instruction* inst : plan.body) {
    auto it = plan.assign.find(inst);
    if (it == plan.assign.end()) continue;  // needed by no output
    ops_in_pallas.push_back(inst->name);
    const std::vector<int64_t> bd = BlockDims(inst->shape.dims(), it->second, blocks);
    if (inst == plan.dot) {
      Line(body, ind, names.Of(inst) + " = jnp.reshape(acc_ref[...].astype(" + dot_dtype + "), " + PyTuple(bd) + ")");
      continue;
    }
    if (inst == plan.conv) {
      Line(body, ind, names.Of(inst) + " = " + ConvResultBlock(plan, blocks, dot_dtype));
      continue;
    }
    std::vector<std::string> args;
    for (const Instruction* o : inst->operands) args.push_back(names.Of(o));
    OpSite site;
    site.block_dims = bd;
    site.in_kernel = true;
    if (inst->opcode == Opcode::kIota) {
      const int a = it->second[static_cast<size_t>(inst->iota_dimension)];
      if (a >= 0) site.iota_offset = "pl.program_id(" + std::to_string(a) + ") * " + std::to_string(blocks[static_cast<size_t>(a)]);
    }
    MK_ASSIGN_OR_RETURN(std::string e, TranslateOp(*inst, args, site));
    Line(body, ind, names.Of(inst) + " = " + e);
    if (hlo::IsElementwise(inst->opcode) || inst->opcode == Opcode::kReduce) {
      const int64_t n = inst->opcode == Opcode::kReduce
                            ? Product(BlockDims(inst->operands[0]->shape.dims(), plan.assign.at(inst->operands[0]), blocks))
                            : Product(bd);
      vpu_flops += n;
      if (Transcendental(inst->opcode)) transcendentals += n;
    }
  }
  for (size_t i = 0; i < plan.call_outputs.size(); ++i) {
    const Instruction* o = plan.call_outputs[i];
    std::string v = names.Of(o);
    if (plan.call_layout.count(o)) v = "jnp.reshape(" + v + ", " + PyTuple(BlockDims(CallDims(plan, o), CallAssign(plan, o), blocks)) + ")";
    Line(body, ind, "out" + std::to_string(i) + "_ref[...] = " +
                        (o->shape.rank() == 0 ? "jnp.reshape(" + v + ", (1, 1))" : v));
  }

  // The kernel's function: glue before the call, the call, outputs back in kernel order.
  std::ostringstream fn;
  std::vector<std::string> params;
  for (const Instruction* i : k.inputs) params.push_back(names.Of(i));
  Line(fn, 0, "def kernel_" + kid + "(" + Join(params) + "):");
  Line(fn, 4, "# " + OneLineText(k.name) + ": pallas_call");
  MK_RETURN_IF_ERROR(EmitGlueOps(fn, 4, plan.glue_before, names));
  std::vector<std::string> call_args, in_specs;
  target::TpuKernelShape shape;
  shape.name = k.name;
  shape.grid_steps = Product(steps);
  int64_t in_bytes = 0, out_bytes = 0;
  auto account = [&](const std::vector<int64_t>& block, int64_t elem, const Assignment& a, bool out) {
    const int64_t bytes = Product(block) * elem;
    const int64_t copies = Copies(a, steps);
    if (copies == 1 && shape.grid_steps > 1) {
      (out ? shape.epilogue_bytes : shape.prologue_bytes) += bytes;
    } else {
      (out ? out_bytes : in_bytes) += bytes * copies;
    }
  };
  if (plan.dot) {
    const Instruction* lhs = plan.lhs_source;
    const Instruction* rhs = plan.rhs_source;
    for (const Instruction* c : plan.lhs_chain) ops_in_pallas.push_back(c->name);
    for (const Instruction* c : plan.rhs_chain) ops_in_pallas.push_back(c->name);
    auto canon = [&](const Instruction* v, const std::vector<int64_t>& perm,
                     const std::vector<int64_t>& dims, const std::string& name) {
      std::string e = names.Of(v);
      std::vector<int64_t> ident(perm.size());
      for (size_t i = 0; i < ident.size(); ++i) ident[i] = static_cast<int64_t>(i);
      if (perm != ident) e = "jax.lax.transpose(" + e + ", " + PyTuple(perm) + ")";
      if (dims != v->shape.dims()) e = "jnp.reshape(" + e + ", " + PyTuple(dims) + ")";
      Line(fn, 4, name + " = " + e);
    };
    canon(lhs, plan.lhs_perm, plan.lhs_canon, "lhs");
    canon(rhs, plan.rhs_perm, plan.rhs_canon, "rhs");
    call_args = {"lhs", "rhs"};
    const int64_t bm = blocks[static_cast<size_t>(plan.axis_m)];
    const int64_t bn = blocks[static_cast<size_t>(plan.axis_n)];
    const int64_t bk = blocks[static_cast<size_t>(plan.axis_k)];
    std::vector<std::string> lblock, lidx, rblock, ridx;
    for (int64_t j = 0; j < plan.lhs_squeezed; ++j) {
      lblock.push_back("None");
      lidx.push_back("g" + std::to_string(j));
    }
    lblock.push_back(std::to_string(bm));
    lblock.push_back(std::to_string(bk));
    lidx.push_back("g" + std::to_string(plan.axis_m));
    lidx.push_back("g" + std::to_string(plan.axis_k));
    for (int64_t j = 0; j < plan.rhs_squeezed; ++j) {
      rblock.push_back("None");
      ridx.push_back("g" + std::to_string(j));
    }
    rblock.push_back(std::to_string(bk));
    rblock.push_back(std::to_string(bn));
    ridx.push_back("g" + std::to_string(plan.axis_k));
    ridx.push_back("g" + std::to_string(plan.axis_n));
    in_specs.push_back("pl.BlockSpec(" + TupleOf(lblock) + ", lambda " + GridArgs(na) + ": " + TupleOf(lidx) + ")");
    in_specs.push_back("pl.BlockSpec(" + TupleOf(rblock) + ", lambda " + GridArgs(na) + ": " + TupleOf(ridx) + ")");
    shape.mxu_m = bm;
    shape.mxu_n = bn;
    shape.mxu_k = bk;
    shape.mxu_bf16 = plan.dot->operands[0]->shape.dtype() == hlo::DType::kBF16 &&
                     plan.dot->operands[1]->shape.dtype() == hlo::DType::kBF16;
    // Every step reads new lhs/rhs blocks (K is the innermost axis).
    in_bytes += shape.grid_steps * (bm * bk * hlo::DTypeByteSize(lhs->shape.dtype()) +
                                    bk * bn * hlo::DTypeByteSize(rhs->shape.dtype()));
  }
  if (plan.conv) {
    const int64_t tap_group = ConvTapGroup(plan, blocks, target.mxu_dim);
    EmitConvOperands(fn, 4, plan, blocks, tap_group, names);
    call_args = {"lhs", "rhs"};
    in_specs = ConvOperandSpecs(plan, blocks, tap_group, na);
    const int64_t bn = blocks[static_cast<size_t>(plan.axis_n)];
    const int64_t bk = blocks[static_cast<size_t>(plan.axis_k)];
    // One [M, bk] x [bk, bn] matmul per window tap (or per group of taps merged along K): as
    // one of the summed depths, each matmul's padded to the MXU side on its own (the model pads
    // the whole depth once: 9 unmerged taps of 8 channels are 9 MXU passes, not one).
    shape.mxu_m = ConvBlockM(plan, blocks);
    shape.mxu_n = bn;
    shape.mxu_k = ConvPaddedDepth(plan, blocks, target.mxu_dim);
    shape.mxu_bf16 = plan.lhs_source->shape.dtype() == hlo::DType::kBF16 &&
                     plan.rhs_source->shape.dtype() == hlo::DType::kBF16;
    // The input image of one batch element and bk channels, copied when the batch or the
    // channel block changes; the kernel's [taps, bk, bn] block when bk or bn does.
    Assignment image(plan.geom.q.size() + 3, -1);
    image.front() = 0;
    image.back() = plan.axis_k;
    const std::vector<int64_t> q = ConvImageQ(plan, blocks[static_cast<size_t>(plan.axis_m)]);
    std::vector<int64_t> image_block = {1, plan.geom.phases};
    image_block.insert(image_block.end(), q.begin(), q.end());
    image_block.push_back(bk);
    account(image_block, hlo::DTypeByteSize(plan.lhs_source->shape.dtype()), image, false);
    account({plan.geom.taps, bk, bn}, hlo::DTypeByteSize(plan.rhs_source->shape.dtype()),
            {-1, plan.axis_k, plan.axis_n}, false);
  }
  for (const Instruction* v : passed) {
    std::string arg = names.Of(v);
    if (v->opcode == Opcode::kConstant) {
      MK_ASSIGN_OR_RETURN(arg, ArrayConstantExpr(*v));
    }
    if (v->shape.rank() == 0) arg = "jnp.reshape(" + arg + ", (1,))";
    if (plan.call_layout.count(v)) arg = "jnp.reshape(" + arg + ", " + PyTuple(CallDims(plan, v)) + ")";
    call_args.push_back(arg);
    const Assignment& a = CallAssign(plan, v);
    in_specs.push_back(BlockSpecFor(CallDims(plan, v), a, blocks, na));
    account(BlockDims(CallDims(plan, v), a, blocks), hlo::DTypeByteSize(v->shape.dtype()), a, false);
  }
  std::vector<std::string> out_specs, out_shapes;
  for (const Instruction* o : plan.call_outputs) {
    MK_ASSIGN_OR_RETURN(std::string t, JnpDType(o->shape.dtype()));
    const Assignment& a = CallAssign(plan, o);
    const std::vector<int64_t>& dims = CallDims(plan, o);
    if (o->shape.rank() == 0) {
      out_specs.push_back("pl.BlockSpec((1, 1), lambda " + GridArgs(na) + ": (0, 0))");
      out_shapes.push_back("jax.ShapeDtypeStruct((1, 1), " + t + ")");
    } else {
      out_specs.push_back(BlockSpecFor(dims, a, blocks, na));
      out_shapes.push_back("jax.ShapeDtypeStruct(" + PyTuple(dims) + ", " + t + ")");
    }
    account(BlockDims(dims, a, blocks), hlo::DTypeByteSize(o->shape.dtype()), a, true);
  }
  std::vector<std::string> sem;
  for (const auto& ax : plan.axes) sem.push_back(ax.arbitrary ? "\"arbitrary\"" : "\"parallel\"");
  const int64_t limit = ScopedVmemLimit(target, vmem);
  std::vector<std::string> grid;
  for (int64_t s : steps) grid.push_back(std::to_string(s));
  Line(fn, 4, "outs = pl.pallas_call(");
  Line(fn, 8, "_kernel_" + kid + "_body,");
  Line(fn, 8, "grid=" + TupleOf(grid) + ",");
  Line(fn, 8, "in_specs=[" + Join(in_specs) + "],");
  Line(fn, 8, "out_specs=[" + Join(out_specs) + "],");
  Line(fn, 8, "out_shape=[" + Join(out_shapes) + "],");
  if (plan.conv) {
    Line(fn, 8, "scratch_shapes=[pltpu.VMEM((" + std::to_string(ConvBlockM(plan, blocks)) + ", " +
                    std::to_string(blocks[static_cast<size_t>(plan.axis_n)]) + "), jnp.float32)],");
  }
  if (plan.dot) {
    Line(fn, 8, "scratch_shapes=[pltpu.VMEM((" + std::to_string(blocks[static_cast<size_t>(plan.axis_m)]) + ", " +
                    std::to_string(blocks[static_cast<size_t>(plan.axis_n)]) + "), jnp.float32)],");
  }
  Line(fn, 8, "compiler_params=pltpu.CompilerParams(dimension_semantics=" + TupleOf(sem) +
                  ", vmem_limit_bytes=" + std::to_string(limit) + "),");
  Line(fn, 8, "interpret=_interpret(),");
  Line(fn, 4, ")(" + Join(call_args) + ")");
  for (size_t i = 0; i < plan.call_outputs.size(); ++i) {
    const Instruction* o = plan.call_outputs[i];
    std::string e = "outs[" + std::to_string(i) + "]";
    if (o->shape.rank() == 0) e = "jnp.reshape(" + e + ", ())";
    if (plan.call_layout.count(o)) e = "jnp.reshape(" + e + ", " + PyTuple(o->shape.dims()) + ")";
    Line(fn, 4, names.Of(o) + " = " + e);
  }
  std::vector<std::string> outs;
  for (const Instruction* o : k.outputs) outs.push_back(names.Of(o));
  Line(fn, 4, "return " + TupleOf(outs));

  const int64_t nk = mxu ? steps[static_cast<size_t>(plan.axis_k)] : 1;
  shape.vpu_flops_per_step = vpu_flops / nk;
  shape.transcendentals_per_step = transcendentals / nk;
  shape.in_bytes_per_step = in_bytes / std::max<int64_t>(1, shape.grid_steps);
  shape.out_bytes_per_step = out_bytes / std::max<int64_t>(1, shape.grid_steps);
  shape.vmem_bytes = vmem;

  KernelText t;
  t.text = body.str() + "\n\n" + fn.str();
  std::vector<std::string> glue_ops;
  for (const Instruction* i : plan.glue_before) glue_ops.push_back(i->name);
  nlohmann::json blocks_json = nlohmann::json::object();
  for (size_t a = 0; a < na; ++a) {
    if (!plan.axes[a].param.empty()) blocks_json[plan.axes[a].param] = blocks[a];
  }
  std::vector<std::string> sem_plain;
  for (const auto& ax : plan.axes) sem_plain.push_back(ax.arbitrary ? "arbitrary" : "parallel");
  t.map = {{"name", k.name},
           {"family", analysis::KernelFamilyName(k.family)},
           {"runs", "pallas"},
           {"flops", k.flops},
           {"bytes", k.bytes},
           {"grid", steps},
           {"blocks", blocks_json},
           {"dimension_semantics", sem_plain},
           {"ops_in_pallas", ops_in_pallas},
           {"ops_in_glue", glue_ops},
           {"tpu_kernel_shape", target::ToJson(shape)}};
  if (!glue_ops.empty()) {
    t.map["glue_reason"] = std::string("operand producers of the ") + (plan.conv ? "convolution" : "dot") +
                           ", computed before the call";
  }
  return t;
}


}  // namespace mk::codegen::pallas
