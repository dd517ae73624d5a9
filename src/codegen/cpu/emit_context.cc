#include "codegen/cpu/emit_context.h"

#include <algorithm>
#include <cstring>
#include <ostream>

#include "codegen/cpu/cpu_types.h"
#include "codegen/cpu/element_chain.h"
#include "codegen/cpu/gemm_emitter.h"
#include "codegen/cpu/gemm_row_reduce.h"
#include "codegen/cpu/gemm_segment.h"
#include "codegen/cpu/hoist_plan.h"
#include "codegen/cpu/vector_loops.h"
#include "codegen/cpu/vector_rows.h"
#include "hlo/literal.h"

namespace mk::codegen::cpu {

using hlo::Instruction;
using hlo::Opcode;

std::string IndexParams(int64_t rank) {
  std::string out;
  for (int64_t i = 0; i < rank; ++i) out += (i ? ", int64_t i" : "int64_t i") + std::to_string(i);
  return out;
}

std::vector<std::string> IndexVars(int64_t rank) {
  std::vector<std::string> v;
  for (int64_t i = 0; i < rank; ++i) {
    std::string name = "i";  // appended, not "i" + ...: GCC 12 warns about that falsely
    name += std::to_string(i);
    v.push_back(std::move(name));
  }
  return v;
}

std::string CallExpr(const std::string& fn, const std::vector<std::string>& args) {
  std::string out = fn + "(";
  for (size_t i = 0; i < args.size(); ++i) out += (i ? ", " : "") + args[i];
  return out + ")";
}

std::string LinearIndexExpr(const std::vector<std::string>& idx, const std::vector<int64_t>& dims) {
  if (idx.empty()) return "0";
  std::string e = idx[0];
  for (size_t d = 1; d < idx.size(); ++d) {
    e = "(" + e + ") * " + std::to_string(dims[d]) + " + " + idx[d];
  }
  return e;
}

Status CannotLower(const Instruction& inst, const std::string& why) {
  return Status(ErrorCode::kUnimplemented,
                "cpu codegen cannot lower " + std::string(hlo::OpcodeName(inst.opcode)) + " %" +
                    inst.name + ": " + why,
                inst.loc);
}

std::string ModuleContext::Id(const Instruction* inst) {
  auto it = ids_.find(inst);
  if (it != ids_.end()) return it->second;
  std::string id = std::to_string(ids_.size());
  ids_[inst] = id;
  return id;
}

namespace {

// Constants above this size are not written as initializer lists: g++ needs minutes and
// gigabytes for millions of list elements (graphsage_tf's embedding tables).
constexpr int64_t kInlineConstantBytes = 4096;

// Element `i` of `lit` as a C++ expression of its storage type that reproduces the bits exactly
// (and is a constant expression, so small constants fold into the code that reads them).
std::string StorageLiteral(const hlo::Literal& lit, int64_t i) {
  switch (lit.dtype()) {
    case hlo::DType::kF32: {
      uint32_t bits;
      std::memcpy(&bits, lit.raw() + i * 4, 4);
      return "mkrt::u2f(" + std::to_string(bits) + "u)";
    }
    case hlo::DType::kF64: {
      uint64_t bits;
      std::memcpy(&bits, lit.raw() + i * 8, 8);
      return "mkrt::u2d(" + std::to_string(bits) + "ULL)";
    }
    case hlo::DType::kBF16:
    case hlo::DType::kF16: {
      uint16_t bits;
      std::memcpy(&bits, lit.raw() + i * 2, 2);
      return std::to_string(bits);
    }
    default:
      if (hlo::IsUnsignedInt(lit.dtype())) return std::to_string(lit.GetUInt64(i)) + "ULL";
      if (lit.dtype() == hlo::DType::kS64) {
        return "static_cast<int64_t>(" + std::to_string(static_cast<uint64_t>(lit.GetInt64(i))) +
               "ULL)";
      }
      return std::to_string(lit.GetInt64(i));
  }
}

// True when every element has the same bits (a broadcast constant written out in full).
bool IsSplat(const hlo::Literal& lit) {
  const int64_t n = lit.num_elements();
  if (n < 1) return false;
  const int64_t w = hlo::DTypeByteSize(lit.dtype());
  if (w <= 0) return false;
  const uint8_t* b = lit.raw();
  for (int64_t i = 1; i < n; ++i) {
    if (std::memcmp(b, b + i * w, static_cast<size_t>(w)) != 0) return false;
  }
  return true;
}

// `bytes` as base64 string-literal pieces, one per line: compact source (4/3 of the data) that
// g++ reads at tens of megabytes per second; mkrt::decode_base64 unpacks it at load time.
void WriteBase64(std::ostream& out, const uint8_t* bytes, int64_t n) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string line;
  line.reserve(4100);
  for (int64_t i = 0; i < n; i += 3) {
    uint32_t v = static_cast<uint32_t>(bytes[i]) << 16;
    if (i + 1 < n) v |= static_cast<uint32_t>(bytes[i + 1]) << 8;
    if (i + 2 < n) v |= bytes[i + 2];
    line += kAlphabet[(v >> 18) & 63];
    line += kAlphabet[(v >> 12) & 63];
    line += i + 1 < n ? kAlphabet[(v >> 6) & 63] : '=';
    line += i + 2 < n ? kAlphabet[v & 63] : '=';
    if (line.size() >= 4096 || i + 3 >= n) {
      out << "  \"" << line << "\"\n";
      line.clear();
    }
  }
}

}  // namespace

Result<std::optional<std::string>> ModuleContext::ConstantSplat(const Instruction* inst) {
  if (!inst->literal) return std::optional<std::string>();
  const hlo::Literal& lit = *inst->literal;
  MK_ASSIGN_OR_RETURN(std::string st, StorageType(lit.dtype()));
  if (!IsSplat(lit)) return std::optional<std::string>();
  return std::optional<std::string>(
      LoadExpr(lit.dtype(), "static_cast<" + st + ">(" + StorageLiteral(lit, 0) + ")"));
}

Result<std::string> ModuleContext::ConstantArray(const Instruction* inst) {
  auto it = constants_.find(inst);
  if (it != constants_.end()) return it->second;
  if (!inst->literal) {
    return CannotLower(*inst, "constant values are elided ({...}); give them values first");
  }
  const hlo::Literal& lit = *inst->literal;
  MK_ASSIGN_OR_RETURN(std::string st, StorageType(lit.dtype()));
  std::string name = "c" + Id(inst);
  const int64_t n = lit.num_elements();
  const int64_t bytes = lit.shape().byte_size();
  prelude_ << "// constant %" << inst->name << " " << inst->shape.ToString(false) << "\n";
  if (bytes <= kInlineConstantBytes) {
    // Small: an initializer list of exact storage bits, a compile-time constant.
    prelude_ << "alignas(64) static constexpr " << st << " " << name << "["
             << std::max<int64_t>(1, n) << "] = {";
    for (int64_t i = 0; i < n; ++i) {
      if (i) prelude_ << ",";
      if (i % 16 == 0) prelude_ << "\n  ";
      prelude_ << StorageLiteral(lit, i);
    }
    prelude_ << "};\n";
  } else if (IsSplat(lit)) {
    // Every element equal: zero-initialized storage, filled once when the library loads.
    prelude_ << "alignas(64) static " << st << " " << name << "[" << n << "];\n"
             << "[[maybe_unused]] static const bool " << name << "_ready = mkrt::fill_n(" << name
             << ", " << n << ", static_cast<" << st << ">(" << StorageLiteral(lit, 0) << "));\n";
  } else {
    // Large: the bytes as a base64 string, decoded into aligned storage when the library loads.
    prelude_ << "alignas(64) static " << st << " " << name << "[" << n << "];\n"
             << "[[maybe_unused]] static const bool " << name
             << "_ready = mkrt::decode_base64(reinterpret_cast<unsigned char*>(" << name << "), "
             << bytes << ",\n";
    WriteBase64(prelude_, lit.raw(), bytes);
    prelude_ << ");\n";
  }
  constants_[inst] = name;
  return name;
}

Result<std::string> ModuleContext::ScalarFunction(const hlo::Computation* comp) {
  auto it = functions_.find(comp);
  if (it != functions_.end()) return it->second;
  std::string name = "fn" + std::to_string(functions_.size());
  functions_[comp] = name;  // set before emitting: a recursive call would find it
  space::Schedule none;
  FunctionEmitter f(*this, none);
  std::string params;
  for (const Instruction* p : comp->parameters()) {
    if (!p->shape.is_array() || p->shape.rank() != 0) {
      return CannotLower(*p, "called computation " + comp->name + " has a non-scalar parameter");
    }
    MK_ASSIGN_OR_RETURN(std::string ct, ComputeType(p->shape.dtype()));
    std::string arg = "a" + std::to_string(p->parameter_number);
    params += std::string(params.empty() ? "" : ", ") + ct + " " + arg;
    MK_RETURN_IF_ERROR(f.DefineLambda("v" + Id(p), p->shape, "return " + arg + ";"));
    f.SetFn(p, "v" + Id(p));
  }
  for (const auto& inst : comp->instructions()) {
    if (inst->opcode == Opcode::kParameter) continue;
    if (inst->opcode == Opcode::kTuple) {
      std::vector<std::string> fns;
      for (const Instruction* op : inst->operands) fns.push_back(f.Fn(op));
      f.SetTupleFns(inst.get(), fns);
      continue;
    }
    if (inst->shape.is_array() && inst->shape.rank() != 0) {
      return CannotLower(*inst, "called computation " + comp->name + " has a non-scalar value");
    }
    MK_RETURN_IF_ERROR(f.EmitInstruction(inst.get()));
  }
  const Instruction* root = comp->root();
  std::string ret_type, ret_expr;
  if (root->opcode == Opcode::kTuple) {
    ret_type = "std::tuple<";
    ret_expr = "std::make_tuple(";
    for (size_t i = 0; i < root->operands.size(); ++i) {
      MK_ASSIGN_OR_RETURN(std::string ct, ComputeType(root->operands[i]->shape.dtype()));
      ret_type += (i ? ", " : "") + ct;
      ret_expr += (i ? ", " : "") + f.Fn(root->operands[i]) + "()";
    }
    ret_type += ">";
    ret_expr += ")";
  } else {
    MK_ASSIGN_OR_RETURN(ret_type, ComputeType(root->shape.dtype()));
    ret_expr = f.Fn(root) + "()";
  }
  prelude_ << "// computation " << comp->name << "\nstatic inline " << ret_type << " " << name
           << "(" << params << ") {\n"
           << f.out().str() << "  return " << ret_expr << ";\n}\n";
  return name;
}

std::string FunctionEmitter::Fn(const Instruction* inst, int leaf) const {
  auto it = fns_.find(inst);
  if (it == fns_.end()) return "/*missing %" + inst->name + "*/missing";
  if (leaf < 0) return it->second.empty() ? "missing" : it->second[0];
  return static_cast<size_t>(leaf) < it->second.size() ? it->second[static_cast<size_t>(leaf)]
                                                        : "missing";
}

Status FunctionEmitter::DefineLambda(const std::string& name, const hlo::Shape& shape,
                                     const std::string& body) {
  MK_ASSIGN_OR_RETURN(std::string ct, ComputeType(shape.dtype()));
  out_ << "  auto " << name << " = [&](" << IndexParams(shape.rank()) << ") -> " << ct
       << " { " << body << " };\n";
  return Status::Ok();
}

Status FunctionEmitter::DefineLoadLambda(const std::string& name, const hlo::Shape& shape,
                                         const std::string& ptr) {
  std::string lin = LinearIndexExpr(IndexVars(shape.rank()), shape.dims());
  dense_loads_[name] = ptr;
  return DefineLambda(name, shape, "return " + LoadExpr(shape.dtype(), ptr + "[" + lin + "]") + ";");
}

Status FunctionEmitter::EmitMaterializeLoop(const hlo::Shape& shape, const std::string& fn,
                                            const std::string& ptr) {
  return EmitStoreLoop(shape, "", CallExpr(fn, IndexVars(shape.rank())), ptr);
}

Status FunctionEmitter::EmitStoreLoop(const hlo::Shape& shape, const std::string& statements,
                                      const std::string& value, const std::string& ptr) {
  int64_t rank = shape.rank();
  const int64_t bound = static_cast<int64_t>(rows_.size());
  if (bound > rank) return Internal("row-fused kernel stores a value without its row dims");
  const std::string lin = rank == 0 ? "0" : LinearIndexExpr(IndexVars(rank), shape.dims());
  std::string store = ptr + "[" + lin + "] = " + StoreExactExpr(shape.dtype(), value) + ";";
  if (!statements.empty()) store = "{ " + statements + store + " }";
  if (rank == 0) {
    loops() << "  " << store << "\n";
    return Status::Ok();
  }
  EmitVectorLoopNest(loops(), LoopScheduleOf(*this), shape.dims(), shape.num_elements(), store,
                     bound);
  return Status::Ok();
}

void FunctionEmitter::BeginKernel(const analysis::Kernel& kernel) {
  hoisted_ = PlanHoisted(kernel);
  if (kernel.family == analysis::KernelFamily::kContraction &&
      schedule_.Get("fuse_epilogue", 0) == 1) {
    epilogue_ = PlanGemmEpilogue(kernel);
    if (!epilogue_) {
      if (auto seg = KernelSegmentEpilogue(kernel)) {
        BeginSegments(kernel, std::move(*seg));
        return;
      }
      if (auto plan = KernelRowReduceEpilogue(kernel)) {
        row_reduce_.emplace();
        row_reduce_->plan = std::move(*plan);
      }
    }
  }
  if (schedule_.Get("row_fuse", 0) == 0) return;
  RowFusion fusion = PlanRowFusion(kernel);
  AdoptRowFusion(std::move(fusion), kernel.instructions);
}

void FunctionEmitter::AdoptRowFusion(RowFusion fusion,
                                     const std::vector<const Instruction*>& passes) {
  rows_ = std::move(fusion.rows);
  row_order_ = std::move(fusion.order);
  if (row_order_.size() != rows_.size()) {  // no order planned: the natural one
    row_order_.clear();
    for (size_t d = 0; d < rows_.size(); ++d) row_order_.push_back(d);
  }
  row_cached_.clear();
  for (const Instruction* inst : fusion.row_cached) {  // a hoisted value is computed already
    if (std::find(hoisted_.begin(), hoisted_.end(), inst) == hoisted_.end()) {
      row_cached_.push_back(inst);
    }
  }
  row_work_ = 0;
  for (const Instruction* inst : passes) {
    if (inst->opcode == Opcode::kReduce && inst->operands[0]->shape.is_array()) {
      row_work_ = std::max(row_work_, inst->operands[0]->shape.num_elements());
    }
  }
}

void FunctionEmitter::BeginSegments(const analysis::Kernel& kernel,
                                    analysis::SegmentEpilogue plan) {
  // The passes are a row program over (GEMM row, group): row fusion's emission, whatever the
  // schedule's row_fuse (a contraction kernel has none).
  RowFusion fusion = PlanRowFusion(plan.program, plan.outputs, plan.seeds);
  if (fusion.rows.empty()) return;  // accepted by the analysis: cannot happen
  if (plan.value != plan.dot) epilogue_ = PlanGemmEpilogue(kernel, plan.value);
  AdoptRowFusion(std::move(fusion), plan.program);
  segment_.emplace();
  segment_->program.insert(plan.program.begin(), plan.program.end());
  segment_->plan = std::move(plan);
}

Status FunctionEmitter::DeferSegmentGemm(const Instruction* value) {
  auto tile = std::make_shared<TileEpilogue>();
  tile->dims = value->shape.dims();
  if (value != segment_->plan.dot) {
    std::string ptr;
    MK_RETURN_IF_ERROR(StoreRootBody(value, segment_->plan.dot, tile.get(), &ptr));
    // The passes read value where the tiles stored it.
    MK_RETURN_IF_ERROR(LoadStoredRoot(value, ptr));
  }
  segment_->tile = std::move(tile);
  segment_->gemm = std::move(deferred_gemm_);
  deferred_gemm_ = nullptr;
  return Status::Ok();
}

Status FunctionEmitter::EndKernel() {
  if (!segment_ || !segment_->gemm) return Status::Ok();
  TileEpilogue tile = *segment_->tile;
  bool done = false;
  tile.segment = segment_->plan.segment;
  tile.segment_groups = segment_->plan.groups;
  tile.segment_rows = rows_;
  tile.segment_code = loops_.str();
  tile.segment_done = &done;
  auto emit = std::move(segment_->gemm);
  segment_->gemm = nullptr;
  MK_RETURN_IF_ERROR(emit(&tile));
  if (done) {  // else Finish runs the passes after the GEMM, in the row loop
    rows_.clear();
    loops_.str("");
  }
  return Status::Ok();
}

Status FunctionEmitter::EmitRowCached(const Instruction* inst, const std::string& name,
                                      const std::string& body) {
  const hlo::Shape& shape = inst->shape;
  const size_t r = rows_.size();
  MK_ASSIGN_OR_RETURN(std::string ct, ComputeType(shape.dtype()));
  std::vector<std::string> tail_vars;
  std::vector<int64_t> tail_dims;
  int64_t row_len = 1;
  for (size_t d = r; d < static_cast<size_t>(shape.rank()); ++d) {
    tail_vars.push_back("i" + std::to_string(d));
    tail_dims.push_back(shape.dim(static_cast<int64_t>(d)));
    row_len *= tail_dims.back();
  }
  const LoopSchedule s = LoopScheduleOf(*this);
  const std::string compute = name + "c", buf = NewName("row");
  MK_RETURN_IF_ERROR(DefineLambda(compute, shape, body));
  out_ << "  mkrt::Scratch " << buf << "_mem(mkrt::thread_slots(" << s.threads << ") * "
       << row_len << " * sizeof(" << ct << "));\n  " << ct << "* const " << buf << " = static_cast<"
       << ct << "*>(" << buf << "_mem.p);\n";
  const std::string at = buf + "[mkrt::thread_index() * " + std::to_string(row_len) + " + " +
                         LinearIndexExpr(tail_vars, tail_dims) + "]";
  MK_RETURN_IF_ERROR(DefineLambda(name, shape, "return " + at + ";"));
  row_cached_fns_.insert(name);
  EmitVectorLoopNest(loops_, s, shape.dims(), shape.num_elements(),
                     at + " = " + CallExpr(compute, IndexVars(shape.rank())) + ";",
                     static_cast<int64_t>(r));
  return Status::Ok();
}

Status FunctionEmitter::EmitHoisted(const Instruction* inst, const std::string& name,
                                    const std::string& body) {
  const hlo::Shape& shape = inst->shape;
  const std::string compute = name + "c";
  MK_RETURN_IF_ERROR(DefineLambda(compute, shape, body));
  MK_ASSIGN_OR_RETURN(std::string buf, DeclareScratch(shape, "hoist"));
  // A serial nest in the declarations, ahead of every loop (and of the row loop).
  out_ << "  // %" << inst->name << " once per call, not per element of its readers\n";
  const std::vector<std::string> vars = IndexVars(shape.rank());
  const std::string lin = shape.rank() == 0 ? "0" : LinearIndexExpr(vars, shape.dims());
  std::ostringstream store;
  store << buf << "[" << lin << "] = " << StoreExactExpr(shape.dtype(), CallExpr(compute, vars))
        << ";";
  EmitVectorLoopNest(out_, LoopSchedule{}, shape.dims(), shape.num_elements(), store.str(), 0);
  return DefineLoadLambda(name, shape, buf);
}

std::string FunctionEmitter::Finish() {
  if (rows_.empty()) return out_.str();
  const LoopSchedule s = LoopScheduleOf(*this);
  std::ostringstream o;
  o << out_.str() << "  // one loop over the rows: every pass over a row runs while it is in cache\n"
    << "  {\n";
  std::vector<int64_t> trips;
  for (size_t d : row_order_) trips.push_back(rows_[d]);
  o << ParallelPragma(s, CollapseCount(trips, s.threads), row_work_);
  for (size_t d : row_order_) {
    o << "  for (int64_t i" << d << " = 0; i" << d << " < " << rows_[d] << "; ++i" << d << ")\n";
  }
  o << "  {\n" << loops_.str() << "  }\n  }\n";
  return o.str();
}

Result<std::string> FunctionEmitter::DeclareScratch(const hlo::Shape& shape,
                                                    const std::string& prefix) {
  MK_ASSIGN_OR_RETURN(std::string st, StorageType(shape.dtype()));
  std::string name = NewName(prefix);
  out_ << "  mkrt::Scratch " << name << "_mem(" << std::max<int64_t>(1, shape.byte_size())
       << ");\n  " << st << "* const " << name << " = static_cast<" << st << "*>(" << name
       << "_mem.p);\n";
  return name;
}

Result<std::string> FunctionEmitter::StorageFor(const Instruction* inst, int leaf,
                                                const hlo::Shape& shape) {
  auto it = output_ptrs_.find(inst);
  if (it != output_ptrs_.end() && static_cast<size_t>(std::max(leaf, 0)) < it->second.size()) {
    return it->second[static_cast<size_t>(std::max(leaf, 0))];
  }
  // A group norm's input: the GEMM accumulates there (in place) and its tiles store it there.
  const bool value = segment_ && inst == segment_->plan.value;
  if (value && !segment_->value_ptr.empty()) return segment_->value_ptr;
  MK_ASSIGN_OR_RETURN(std::string ptr, DeclareScratch(shape, "t"));
  if (value) segment_->value_ptr = ptr;
  return ptr;
}

Status FunctionEmitter::EmitInstruction(const Instruction* inst) {
  in_program_ = segment_ && segment_->program.count(inst) > 0;
  std::string name = "v" + module_.Id(inst);
  out_ << "  // " << hlo::OpcodeName(inst->opcode) << " %" << inst->name << " "
       << inst->shape.ToString(false) << "\n";
  if (inst->opcode == Opcode::kConstant) {
    if (!inst->shape.is_array()) return CannotLower(*inst, "tuple constants");
    // A constant whose elements are all equal is that value at every index: the lambda returns
    // it directly, so it folds into the loops that read it and needs no storage.
    MK_ASSIGN_OR_RETURN(std::optional<std::string> splat, module_.ConstantSplat(inst));
    if (splat) {
      MK_RETURN_IF_ERROR(DefineLambda(name, inst->shape, "return " + *splat + ";"));
    } else {
      MK_ASSIGN_OR_RETURN(std::string arr, module_.ConstantArray(inst));
      MK_RETURN_IF_ERROR(DefineLoadLambda(name, inst->shape, arr));
    }
    SetFn(inst, name);
  } else if (IsElemental(*inst)) {
    MK_ASSIGN_OR_RETURN(std::string body, ElementalBody(*this, *inst));
    if (std::find(hoisted_.begin(), hoisted_.end(), inst) != hoisted_.end()) {
      MK_RETURN_IF_ERROR(EmitHoisted(inst, name, body));
    } else if (std::find(row_cached_.begin(), row_cached_.end(), inst) != row_cached_.end()) {
      MK_RETURN_IF_ERROR(EmitRowCached(inst, name, body));
    } else {
      MK_RETURN_IF_ERROR(DefineLambda(name, inst->shape, body));
      elemental_order_[inst] = static_cast<int>(elemental_order_.size());
      // A reshape of a dense load is a dense load of the same array (elemental.cc).
      const bool reshape = inst->opcode == Opcode::kReshape || inst->opcode == Opcode::kBitcast;
      if (reshape && !inst->operands.empty() && HasValue(inst->operands[0])) {
        if (const std::string* p = DensePointer(Fn(inst->operands[0]))) dense_loads_[name] = *p;
      }
    }
    SetFn(inst, name);
  } else if (row_reduce_ && row_reduce_->active && IsRowReduce(row_reduce_->plan, inst)) {
    return EmitFusedRowReduce(*this, *inst);  // into its storage (an output's slot included)
  } else {
    MK_RETURN_IF_ERROR(EmitMaterialized(*this, *inst));
    // The dot itself is the group norm's input (no epilogue chain).
    if (WaitsForSegments(inst)) return DeferSegmentGemm(inst);
    return Status::Ok();
  }
  if (WaitsForSegments(inst)) return DeferSegmentGemm(inst);  // stored by the tiles
  if (IsOutput(inst)) {
    if (deferred_gemm_ && epilogue_ && epilogue_->root == inst) return EmitDeferredGemm(inst);
    MK_ASSIGN_OR_RETURN(std::string ptr, StorageFor(inst, 0, inst->shape));
    std::string value;
    MK_ASSIGN_OR_RETURN(std::string statements, ElementStatements(*this, inst, {}, &value));
    MK_RETURN_IF_ERROR(EmitStoreLoop(inst->shape, statements, value, ptr));
  }
  return Status::Ok();
}

Status FunctionEmitter::StoreRootBody(const Instruction* root, const Instruction* dot,
                                      TileEpilogue* tile, std::string* ptr) {
  MK_ASSIGN_OR_RETURN(*ptr, StorageFor(root, 0, root->shape));
  std::string value;
  ElementSteps steps;
  MK_RETURN_IF_ERROR(
      ElementStatements(*this, root, {{dot, "gm_dv"}}, &value, &steps).status());
  tile->steps = std::move(steps.statements);
  tile->steps.push_back(*ptr + "[gm_e] = " + StoreExactExpr(root->shape.dtype(), value) + ";");
  tile->locals = std::move(steps.locals);
  return Status::Ok();
}

Status FunctionEmitter::LoadStoredRoot(const Instruction* root, const std::string& ptr) {
  // Later readers of root (and nothing else reads the epilogue) load what the tiles stored; in
  // place, the dot's lambda no longer returns the dot, so root must not be recomputed from it
  // by a later chain (it is no longer an elemental lambda).
  const std::string name = NewName("v" + module_.Id(root) + "_");
  MK_RETURN_IF_ERROR(DefineLoadLambda(name, root->shape, ptr));
  SetFn(root, name);
  elemental_order_.erase(root);
  return Status::Ok();
}

Status FunctionEmitter::EmitDeferredGemm(const Instruction* root) {
  TileEpilogue tile;
  tile.dims = root->shape.dims();
  std::string ptr;
  MK_RETURN_IF_ERROR(StoreRootBody(root, epilogue_->dot, &tile, &ptr));
  auto emit = std::move(deferred_gemm_);
  deferred_gemm_ = nullptr;
  MK_RETURN_IF_ERROR(emit(&tile));
  return LoadStoredRoot(root, ptr);
}

}  // namespace mk::codegen::cpu
