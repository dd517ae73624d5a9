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

}  // namespace mk::codegen
