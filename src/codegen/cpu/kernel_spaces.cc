#include "codegen/cpu/kernel_spaces.h"

namespace mk::codegen::cpu {

space::ParamDomain ThreadsParam(const analysis::Kernel& kernel, const target::Target& target) {
  space::ParamDomain threads;
  threads.name = "threads";
  threads.doc = "OpenMP threads for the kernel's outer loops (1 = serial)";
  for (int t = 1; t <= target.cores; t *= 2) threads.values.push_back(t);
  if (threads.values.back() != target.cores) threads.values.push_back(target.cores);
  // Small kernels lose more to thread start-up than they gain.
  threads.initial = kernel.bytes + kernel.flops < (1 << 20) ? 1 : target.cores;
  return threads;
}

std::optional<space::ParamDomain> VectorBitsParam(const analysis::Kernel& kernel,
                                                 const target::Target& target) {
  if (!target.Has("avx512f")) return std::nullopt;
  // Measured on a Xeon with AMX (2026-12-04): 512 bits made a GEMM + mish, mish kernel's
  // elementwise pass 1.25x faster, and the convolution kernels of 39k and 46k (im2col packing
  // with GELU or tanh after it) 7-15% slower. The analytical choice follows that; tuning tries
  // the other width.
  bool transcendental = false;
  for (const hlo::Instruction* inst : kernel.instructions) {
    switch (inst->opcode) {
      case hlo::Opcode::kExp: case hlo::Opcode::kExpm1: case hlo::Opcode::kLog:
      case hlo::Opcode::kLog1p: case hlo::Opcode::kTanh: case hlo::Opcode::kErf:
      case hlo::Opcode::kLogistic: case hlo::Opcode::kPower:
        transcendental = true;
        break;
      default:
        break;
    }
  }
  const bool conv = kernel.hero && kernel.hero->opcode == hlo::Opcode::kConvolution;
  space::ParamDomain bits;
  bits.name = "vector_bits";
  bits.doc = "widest vectors the compiler uses in the kernel's loops (GCC prefer-vector-width; "
             "the GEMM micro-kernels are written for their width either way)";
  bits.values = {256, 512};
  bits.initial = transcendental && !conv ? 512 : 256;
  return bits;
}

space::KernelSpace StandaloneKernelSpace(const analysis::Kernel& kernel,
                                         const target::Target& target) {
  space::KernelSpace s;
  s.params.push_back(ThreadsParam(kernel, target));
  return s;
}

}  // namespace mk::codegen::cpu
