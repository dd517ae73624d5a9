#include "codegen/cpu/emit_context.h"

#include "codegen/cpu/cpu_types.h"
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
  for (int64_t i = 0; i < rank; ++i) v.push_back("i" + std::to_string(i));
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

Result<std::string> ModuleContext::ConstantArray(const Instruction* inst) {
  auto it = constants_.find(inst);
  if (it != constants_.end()) return it->second;
  if (!inst->literal) {
    return CannotLower(*inst, "constant values are elided ({...}); give them values first");
  }
  const hlo::Literal& lit = *inst->literal;
  MK_ASSIGN_OR_RETURN(std::string st, StorageType(lit.dtype()));
  std::string name = "c" + Id(inst);
  prelude_ << "// constant %" << inst->name << " " << inst->shape.ToString(false) << "\n";
  prelude_ << "alignas(64) static const " << st << " " << name << "["
           << std::max<int64_t>(1, lit.num_elements()) << "] = {";
  // Emit the storage bits exactly (floats as their bit patterns via unions would be unreadable;
  // integers of the storage type reproduce the bytes exactly for every type).
  for (int64_t i = 0; i < lit.num_elements(); ++i) {
    if (i) prelude_ << ",";
    if (i % 16 == 0) prelude_ << "\n  ";
    switch (lit.dtype()) {
      case hlo::DType::kF32: {
        uint32_t bits;
        std::memcpy(&bits, lit.raw() + i * 4, 4);
        prelude_ << "mkrt::u2f(" << bits << "u)";
        break;
      }
      case hlo::DType::kF64: {
        double v;
        std::memcpy(&v, lit.raw() + i * 8, 8);
        if (std::isnan(v)) prelude_ << "std::numeric_limits<double>::quiet_NaN()";
        else if (std::isinf(v)) prelude_ << (v < 0 ? "-" : "") << "std::numeric_limits<double>::infinity()";
        else prelude_ << hlo::FormatFloat(v, hlo::DType::kF64);
        break;
      }
      case hlo::DType::kBF16:
      case hlo::DType::kF16: {
        uint16_t bits;
        std::memcpy(&bits, lit.raw() + i * 2, 2);
        prelude_ << bits;
        break;
      }
      default:
        if (hlo::IsUnsignedInt(lit.dtype())) prelude_ << lit.GetUInt64(i) << "ULL";
        else if (lit.dtype() == hlo::DType::kS64) prelude_ << "static_cast<int64_t>(" << static_cast<uint64_t>(lit.GetInt64(i)) << "ULL)";
        else prelude_ << lit.GetInt64(i);
    }
  }
  prelude_ << "};\n";
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
  return DefineLambda(name, shape, "return " + LoadExpr(shape.dtype(), ptr + "[" + lin + "]") + ";");
}

Status FunctionEmitter::EmitMaterializeLoop(const hlo::Shape& shape, const std::string& fn,
                                            const std::string& ptr) {
  int64_t rank = shape.rank();
  if (rank == 0) {
    out_ << "  " << ptr << "[0] = " << StoreExpr(shape.dtype(), fn + "()") << ";\n";
    return Status::Ok();
  }
  int64_t threads = schedule_.Get("threads", 0);
  out_ << "  {\n";
  if (threads != 1 && shape.num_elements() >= 16384) {
    out_ << "#pragma omp parallel for schedule(static)"
         << (threads > 1 ? " num_threads(" + std::to_string(threads) + ")" : "") << "\n";
  }
  for (int64_t d = 0; d < rank; ++d) {
    out_ << "  for (int64_t i" << d << " = 0; i" << d << " < " << shape.dim(d) << "; ++i" << d
         << ")\n";
  }
  std::string lin = LinearIndexExpr(IndexVars(rank), shape.dims());
  out_ << "    " << ptr << "[" << lin << "] = "
       << StoreExpr(shape.dtype(), CallExpr(fn, IndexVars(rank))) << ";\n  }\n";
  return Status::Ok();
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
  return DeclareScratch(shape, "t");
}

Status FunctionEmitter::EmitInstruction(const Instruction* inst) {
  std::string name = "v" + module_.Id(inst);
  out_ << "  // " << hlo::OpcodeName(inst->opcode) << " %" << inst->name << " "
       << inst->shape.ToString(false) << "\n";
  if (inst->opcode == Opcode::kConstant) {
    if (!inst->shape.is_array()) return CannotLower(*inst, "tuple constants");
    MK_ASSIGN_OR_RETURN(std::string arr, module_.ConstantArray(inst));
    MK_RETURN_IF_ERROR(DefineLoadLambda(name, inst->shape, arr));
    SetFn(inst, name);
  } else if (IsElemental(*inst)) {
    MK_ASSIGN_OR_RETURN(std::string body, ElementalBody(*this, *inst));
    MK_RETURN_IF_ERROR(DefineLambda(name, inst->shape, body));
    SetFn(inst, name);
  } else {
    return EmitMaterialized(*this, *inst);
  }
  if (IsOutput(inst)) {
    MK_ASSIGN_OR_RETURN(std::string ptr, StorageFor(inst, 0, inst->shape));
    MK_RETURN_IF_ERROR(EmitMaterializeLoop(inst->shape, name, ptr));
  }
  return Status::Ok();
}

}  // namespace mk::codegen::cpu
