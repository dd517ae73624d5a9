// The code generator interface every target implements (codegen/cpu, and later codegen/pallas
// and codegen/cuda): from a fusion plan and a candidate schedule to source files, build flags and
// the buffer ABI of the entry point. Emitters never guess: an op they cannot lower is an error
// naming the op and its source position.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "analysis/fusion_plan.h"
#include "space/schedule.h"
#include "target/target.h"

namespace mk::codegen {

struct SourceFile {
  std::string name;  // "module.cc", "kernel.py", "module.cu"
  std::string text;
};

// One slot of the entry point's `void** buffers`, in order: entry parameters, then outputs (the
// root, or each element of a tuple root), dense row-major in the shapes' element types.
struct BufferSlot {
  enum class Role { kParameter, kOutput } role = Role::kParameter;
  int index = 0;     // parameter number, or output number
  hlo::Shape shape;  // array shape
  int64_t bytes = 0;
};

struct Implementation {
  std::string target;  // "cpu"
  std::vector<SourceFile> sources;
  std::vector<std::string> flags;  // compiler flags the sources need (beyond the driver's)
  std::vector<BufferSlot> buffers;
  std::string hash;  // sha256 over sources and flags: the implementation's identity
  std::string entry_symbol = "mk_kernel";
};

// How SpaceFor declares a kernel's space.
struct SpaceRequest {
  // true: the analytical model of the target shapes the space: each domain holds the model's
  // choice, which is the initial value. false (`search --no-analytical-init`): each domain is a
  // grid that does not depend on the model (only on what is legal: the ISA's vector width, the
  // core count, the problem's dims), and the initial value is each domain's median, moved to the
  // nearest point the space's constraints allow (space::CenterOnMedians).
  bool analytical = true;
};

class Emitter {
 public:
  virtual ~Emitter() = default;
  virtual std::string target_name() const = 0;
  // The declared parameters of `kernel` on `target`, with analytical initial values.
  virtual space::KernelSpace SpaceFor(const analysis::Kernel& kernel,
                                      const target::Target& target) const = 0;
  // The same as `request` asks. An emitter whose domains hold model-chosen values overrides it;
  // this default keeps SpaceFor's domains and centres the initial values on their medians.
  virtual space::KernelSpace SpaceFor(const analysis::Kernel& kernel,
                                      const target::Target& target,
                                      const SpaceRequest& request) const;
  virtual Result<Implementation> Emit(const analysis::FusionPlan& plan,
                                      const space::Candidate& candidate,
                                      const target::Target& target) const = 0;
};

Result<std::unique_ptr<Emitter>> EmitterFor(const target::Target& target);

// The JSON form of an implementation (stored as an artifact beside its sources and binary, so an
// exported or resumed run needs nothing but the store):
//   {"target", "hash", "entry_symbol", "flags": [...], "sources": [{"name", "text"}],
//    "buffers": [{"role": "parameter"|"output", "index", "shape": {"dtype", "dims": [...]},
//                 "bytes"}]}
// Readers reject a damaged document (wrong types, unknown dtype, bytes that disagree with the
// shape) as InvalidArgument; absent optional fields take their defaults.
nlohmann::json ImplementationToJson(const Implementation& impl);
Result<Implementation> ImplementationFromJson(const nlohmann::json& j);

// The buffer ABI of a module's entry computation (parameters, then outputs).
Result<std::vector<BufferSlot>> EntryBuffers(const hlo::Module& module);

}  // namespace mk::codegen
