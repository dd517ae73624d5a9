#include "codegen/emitter.h"

#include "codegen/cpu/cpu_emitter.h"

namespace mk::codegen {

Result<std::unique_ptr<Emitter>> EmitterFor(const target::Target& target) {
  if (target.kind == target::TargetKind::kCpu) {
    return std::unique_ptr<Emitter>(std::make_unique<cpu::CpuEmitter>());
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
                       {"dtype", std::string(hlo::DTypeName(b.shape.dtype()))},
                       {"dims", b.shape.dims()},
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
    impl.target = j.at("target").get<std::string>();
    impl.hash = j.at("hash").get<std::string>();
    impl.entry_symbol = j.value("entry_symbol", std::string("mk_kernel"));
    impl.flags = j.at("flags").get<std::vector<std::string>>();
    for (const auto& s : j.at("sources")) {
      impl.sources.push_back({s.at("name").get<std::string>(), s.at("text").get<std::string>()});
    }
    for (const auto& b : j.at("buffers")) {
      BufferSlot slot;
      std::string role = b.at("role").get<std::string>();
      if (role != "parameter" && role != "output") return bad("buffer role '" + role + "'");
      slot.role = role == "parameter" ? BufferSlot::Role::kParameter : BufferSlot::Role::kOutput;
      slot.index = b.at("index").get<int>();
      auto dtype = hlo::ParseDType(b.at("dtype").get<std::string>());
      if (!dtype) return bad("unknown dtype '" + b.at("dtype").get<std::string>() + "'");
      slot.shape = hlo::Shape(*dtype, b.at("dims").get<std::vector<int64_t>>());
      slot.bytes = b.at("bytes").get<int64_t>();
      if (slot.bytes != slot.shape.byte_size()) return bad("buffer bytes do not match its shape");
      impl.buffers.push_back(std::move(slot));
    }
    return impl;
  } catch (const nlohmann::json::exception& e) {
    return bad(e.what());
  }
}

}  // namespace mk::codegen
