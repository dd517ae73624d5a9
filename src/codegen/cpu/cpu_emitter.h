// The CPU target's emitter: one self-contained C++ translation unit per module (the runtime
// support header pasted in, one static function per kernel, `mk_kernel` calling them in plan
// order over module buffer slots), compiled with OpenMP for multi-threading.
#pragma once

#include <string>
#include <vector>

#include "codegen/emitter.h"

namespace mk::codegen::cpu {

class CpuEmitter : public Emitter {
 public:
  std::string target_name() const override { return "cpu"; }
  space::KernelSpace SpaceFor(const analysis::Kernel& kernel,
                              const target::Target& target) const override;
  // One path for both: the family's space (kernel_spaces.h) as `request` asks.
  space::KernelSpace SpaceFor(const analysis::Kernel& kernel, const target::Target& target,
                              const SpaceRequest& request) const override;
  Result<Implementation> Emit(const analysis::FusionPlan& plan, const space::Candidate& candidate,
                              const target::Target& target) const override;
};

// The flags every generated module is compiled with, after the target's (cpu_emitter.cc says
// why each is there).
const std::vector<std::string>& KernelFlags();

// The text of mk_cpu_rt.h (embedded at build time).
extern const char* const kCpuRuntimeHeader;

}  // namespace mk::codegen::cpu
