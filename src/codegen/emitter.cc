#include "codegen/emitter.h"

#include "codegen/cpu/cpu_emitter.h"
#include "codegen/pallas/pallas_emitter.h"

namespace mk::codegen {

space::KernelSpace Emitter::SpaceFor(const analysis::Kernel& kernel, const target::Target& target,
                                     const SpaceRequest& request) const {
  space::KernelSpace s = SpaceFor(kernel, target);
  if (!request.analytical) space::CenterOnMedians(s);
  return s;
}

Result<std::unique_ptr<Emitter>> EmitterFor(const target::Target& target) {
  if (target.kind == target::TargetKind::kCpu) {
    return std::unique_ptr<Emitter>(std::make_unique<cpu::CpuEmitter>());
  }
  if (target.kind == target::TargetKind::kTpu) {
    return std::unique_ptr<Emitter>(std::make_unique<pallas::PallasEmitter>());
  }
  return Unimplemented("no code generator for target " + target.name + " yet");
}

Result<std::vector<BufferSlot>> EntryBuffers(const hlo::Module& module) {
  if (!module.entry()) return InvalidArgument("module has no ENTRY computation");
  const hlo::Computation& entry = *module.entry();
  std::vector<BufferSlot> slots;
  for (const hlo::Instruction* p : entry.parameters()) {
    if (!p->shape.is_array()) {
      return Unimplemented("entry parameter %" + p->name + " is not an array", p->loc);
    }
    slots.push_back({BufferSlot::Role::kParameter, static_cast<int>(p->parameter_number), p->shape,
                     p->shape.byte_size()});
  }
  const hlo::Shape& root = entry.root()->shape;
  std::vector<hlo::Shape> outs;
  if (root.is_tuple()) outs = root.tuple_shapes();
  else outs.push_back(root);
  for (size_t o = 0; o < outs.size(); ++o) {
    if (!outs[o].is_array()) {
      return Unimplemented("entry output " + std::to_string(o) + " is not an array",
                           entry.root()->loc);
    }
    slots.push_back({BufferSlot::Role::kOutput, static_cast<int>(o), outs[o], outs[o].byte_size()});
  }
  return slots;
}

nlohmann::json ImplementationToJson(const Implementation& impl) {
  nlohmann::json sources = nlohmann::json::array();
  for (const auto& s : impl.sources) sources.push_back({{"name", s.name}, {"text", s.text}});
  nlohmann::json buffers = nlohmann::json::array();
  for (const auto& b : impl.buffers) {
    buffers.push_back({{"role", b.role == BufferSlot::Role::kParameter ? "parameter" : "output"},
                       {"index", b.index},
                       {"shape",
                        {{"dtype", std::string(hlo::DTypeName(b.shape.dtype()))},
                         {"dims", b.shape.dims()}}},
                       {"bytes", b.bytes}});
  }
  return {{"target", impl.target}, {"hash", impl.hash},   {"entry_symbol", impl.entry_symbol},
          {"flags", impl.flags},   {"sources", sources},  {"buffers", buffers}};
}

Result<Implementation> ImplementationFromJson(const nlohmann::json& j) {
  auto bad = [](const std::string& what) {
    return InvalidArgument("implementation JSON: " + what);
  };
  if (!j.is_object()) return bad("not an object");
  try {
    Implementation impl;
    impl.target = j.value("target", std::string("cpu"));
    impl.hash = j.value("hash", std::string());
    impl.entry_symbol = j.value("entry_symbol", std::string("mk_kernel"));
    impl.flags = j.value("flags", std::vector<std::string>{});
    for (const auto& s : j.value("sources", nlohmann::json::array())) {
      impl.sources.push_back({s.at("name").get<std::string>(), s.at("text").get<std::string>()});
    }
    for (const auto& b : j.value("buffers", nlohmann::json::array())) {
      BufferSlot slot;
      std::string role = b.at("role").get<std::string>();
      if (role != "parameter" && role != "output") return bad("buffer role '" + role + "'");
      slot.role = role == "parameter" ? BufferSlot::Role::kParameter : BufferSlot::Role::kOutput;
      slot.index = b.at("index").get<int>();
      const auto& shape = b.at("shape");
      std::string dtype_name = shape.at("dtype").get<std::string>();
      auto dtype = hlo::ParseDType(dtype_name);
      if (!dtype) return bad("unknown element type '" + dtype_name + "'");
      auto dims = shape.at("dims").get<std::vector<int64_t>>();
      for (int64_t d : dims) {
        if (d < 0) return bad("negative dimension");
      }
      slot.shape = hlo::Shape(*dtype, std::move(dims));
      slot.bytes = b.value("bytes", slot.shape.byte_size());
      if (slot.bytes != slot.shape.byte_size()) return bad("buffer bytes do not match its shape");
      impl.buffers.push_back(std::move(slot));
    }
    return impl;
  } catch (const nlohmann::json::exception& e) {
    return bad(e.what());
  }
}

}  // namespace mk::codegen
