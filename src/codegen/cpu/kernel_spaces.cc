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

space::KernelSpace StandaloneKernelSpace(const analysis::Kernel& kernel,
                                         const target::Target& target) {
  space::KernelSpace s;
  s.params.push_back(ThreadsParam(kernel, target));
  return s;
}

}  // namespace mk::codegen::cpu
