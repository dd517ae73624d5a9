// One plan kernel as Python: a pallas_call (the body function over blocks and the kernel function
// that canonicalizes a dot's operands in glue, makes the call and returns the kernel's outputs),
// or plain jnp glue; with the kernel map entry that says which, why, and its TpuKernelShape.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "analysis/fusion_plan.h"
#include "codegen/pallas/block_plan.h"
#include "codegen/pallas/py_text.h"
#include "space/schedule.h"
#include "support/status.h"
#include "target/target.h"

namespace mk::codegen::pallas {

// One kernel's emission: its Python text and its map entry.
struct KernelText {
  std::string text;
  nlohmann::json map;
};


// `kernel_<id>(inputs...)` as a pallas_call following `plan` with the blocks `schedule` gives
// (an InvalidArgument when they are not legal or overflow the target's VMEM).
Result<KernelText> EmitPallasKernel(const analysis::Kernel& k, const BlockPlan& plan,
                                    const space::Schedule& schedule,
                                    const target::Target& target, const Names& names);

// `kernel_<id>(inputs...)` as jnp glue on whole arrays, for `reason`.
Result<KernelText> EmitGlueKernel(const analysis::Kernel& k, const std::string& reason,
                                  const Names& names);

}  // namespace mk::codegen::pallas
