#include "codegen/cpu/kernel_spaces.h"

namespace mk::codegen::cpu {

space::KernelSpace LoopKernelSpace(const analysis::Kernel& kernel, const target::Target& target) {
  space::KernelSpace s;
  s.params.push_back(ThreadsParam(kernel, target));
  return s;
}

space::KernelSpace ReductionKernelSpace(const analysis::Kernel& kernel,
                                        const target::Target& target) {
  space::KernelSpace s;
  s.params.push_back(ThreadsParam(kernel, target));
  return s;
}

}  // namespace mk::codegen::cpu
