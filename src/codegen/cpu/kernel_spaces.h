// The declared design space of each CPU kernel family. CpuEmitter::SpaceFor dispatches on the
// kernel's family; each family's parameters live beside the emitter that reads them, so a family
// grows its space without touching the others:
//   loop_space.cc  — loop and reduction kernels (vectorization, unrolling, threading)
//   gemm_space.cc  — contraction kernels (register and cache blocking, and the joint constraint
//                    on the register tile)
#pragma once

#include <optional>

#include "analysis/fusion_plan.h"
#include "space/schedule.h"
#include "target/target.h"

namespace mk::codegen::cpu {

// "threads": OpenMP threads over a kernel's outer loops; shared by every family.
space::ParamDomain ThreadsParam(const analysis::Kernel& kernel, const target::Target& target);

// "vector_bits": GCC's preferred vector width for the kernel's function (AVX-512 targets only).
std::optional<space::ParamDomain> VectorBitsParam(const analysis::Kernel& kernel,
                                                 const target::Target& target);

space::KernelSpace LoopKernelSpace(const analysis::Kernel& kernel, const target::Target& target);
space::KernelSpace ReductionKernelSpace(const analysis::Kernel& kernel,
                                        const target::Target& target);
// `analytical` false: the domains are fixed grids (kernel_spaces.h's SpaceRequest), without the
// model's values; the cache blocks stop at the first value that covers the dim. The register-
// tile constraint is declared either way.
space::KernelSpace ContractionKernelSpace(const analysis::Kernel& kernel,
                                          const target::Target& target, bool analytical = true);
space::KernelSpace StandaloneKernelSpace(const analysis::Kernel& kernel,
                                         const target::Target& target);

}  // namespace mk::codegen::cpu
