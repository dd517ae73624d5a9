// The TPU target's emitter: one self-contained Python module, kernel.py, per fusion plan. Each
// plan kernel becomes a function: a pallas_call (grid, BlockSpecs, dimension_semantics, VMEM
// scratch) where its family has a Pallas form (contraction with its epilogue, row reductions and
// norms, elementwise chains), else plain jnp glue, with the reason recorded. `workload(*inputs)`
// runs them in plan order; INTERPRET (None: compile for a TPU) is what a runner sets to run them
// in TPU interpret mode on the CPU. kernel_map.json, the second source, says per kernel where
// it runs, why, its grid and blocks, and its TpuKernelShape for the performance model.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "codegen/emitter.h"
#include "target/tpu_perf_model.h"

namespace mk::codegen::pallas {

// A kernel whose schedule sets this key to 1 is emitted as jnp glue whatever its family: the
// fallback for a pallas_call the TPU compiler refused (agents/tpu_fallback.h). It is not part of
// any declared space; only the fallback sets it.
inline constexpr const char* kGlueFallbackKey = "glue_fallback";

class PallasEmitter : public Emitter {
 public:
  PallasEmitter() = default;
  // `refused`: per kernel id, what the compiler said of its pallas_call, for the glue reason of
  // a kernel the schedule sends to glue.
  explicit PallasEmitter(std::map<int64_t, std::string> refused) : refused_(std::move(refused)) {}
  std::string target_name() const override { return "tpu"; }
  space::KernelSpace SpaceFor(const analysis::Kernel& kernel,
                              const target::Target& target) const override;
  Result<Implementation> Emit(const analysis::FusionPlan& plan, const space::Candidate& candidate,
                              const target::Target& target) const override;

 private:
  std::map<int64_t, std::string> refused_;
};

}  // namespace mk::codegen::pallas
