#include "analysis/cost.h"

namespace mk::analysis {

using hlo::Opcode;

int64_t ShapeBytes(const hlo::Shape& shape) {
  if (shape.is_tuple()) {
    int64_t total = 0;
    for (const auto& s : shape.tuple_shapes()) total += ShapeBytes(s);
    return total;
  }
  return shape.is_array() ? shape.byte_size() : 0;
}

int64_t InstructionFlops(const hlo::Instruction& inst) {
  const hlo::Shape& out = inst.shape;
  switch (inst.opcode) {
    case Opcode::kDot: {
      if (!inst.dot_dims || inst.operands.empty()) return 0;
      int64_t k = 1;
      const hlo::Shape& lhs = inst.operands[0]->shape;
      for (int64_t d : inst.dot_dims->lhs_contracting) {
        if (d >= 0 && d < lhs.rank()) k *= lhs.dim(d);
      }
      return 2 * out.num_elements() * k;
    }
    case Opcode::kConvolution: {
      if (!inst.conv_dims || inst.operands.size() < 2) return 0;
      const hlo::Shape& kernel = inst.operands[1]->shape;
      const auto& cd = *inst.conv_dims;
      int64_t per_output = 1;
      for (int64_t d : cd.kernel_spatial) {
        if (d >= 0 && d < kernel.rank()) per_output *= kernel.dim(d);
      }
      if (cd.kernel_input_feature < kernel.rank()) per_output *= kernel.dim(cd.kernel_input_feature);
      return 2 * out.num_elements() * per_output;
    }
    case Opcode::kReduce:
    case Opcode::kReduceWindow: {
      int64_t in = 0;
      size_t n = inst.operands.size() / 2;
      for (size_t i = 0; i < n; ++i) in += inst.operands[i]->shape.num_elements();
      if (inst.opcode == Opcode::kReduceWindow && inst.window) {
        int64_t window = 1;
        for (const auto& w : *inst.window) window *= w.size;
        const hlo::Shape& first = out.is_tuple() && !out.tuple_shapes().empty()
                                      ? out.tuple_shape(0) : out;
        return first.num_elements() * window * static_cast<int64_t>(n);
      }
      return in;
    }
    default:
      if (hlo::IsElementwise(inst.opcode) || inst.opcode == Opcode::kMap) {
        return out.is_array() ? out.num_elements() : 0;
      }
      return 0;
  }
}

}  // namespace mk::analysis
