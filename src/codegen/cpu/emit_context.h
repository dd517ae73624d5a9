// Internal to the CPU emitter. The generated code for a kernel is a sequence of value lambdas,
// one per HLO instruction: `v7(i0, i1)` returns instruction 7's element at index (i0, i1) in its
// compute type. Cheap ops (elementwise, broadcast, transpose, slice ...) are lambdas over their
// operands' lambdas, which the C++ compiler inlines into one fused loop; ops that must see whole
// arrays (reduce, dot, convolution, sort, gather ...) are "materialized": a loop nest computes
// them into a buffer, and their lambda loads from it. Kernel outputs are materialized into their
// module buffer slots.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/fusion_plan.h"
#include "analysis/row_reduce_epilogue.h"
#include "analysis/segment_epilogue.h"
#include "codegen/cpu/gemm_epilogue.h"
#include "codegen/cpu/vector_rows.h"
#include "space/schedule.h"
#include "support/status.h"
#include "target/target.h"

namespace mk::codegen::cpu {

// Where a value lives at module level: one slot per array leaf (a tuple value has several).
struct ValueSlots {
  std::vector<int> slots;
};

// State shared by all kernels of one generated translation unit.
class ModuleContext {
 public:
  explicit ModuleContext(const target::Target& target) : target_(target) {}
  const target::Target& target() const { return target_; }

  // Stable short C++ identifier for an instruction ("7"), used in names like v7, p7.
  std::string Id(const hlo::Instruction* inst);
  // Name of a scalar function computing `comp` (emitted once into the prelude): every parameter
  // and the result are scalars (a tuple result returns std::tuple).
  Result<std::string> ScalarFunction(const hlo::Computation* comp);
  // Name of a static array holding constant `inst`'s values (emitted once into the prelude):
  // small ones as initializer lists, large ones as a base64 blob or a fill decoded at load.
  Result<std::string> ConstantArray(const hlo::Instruction* inst);
  // When every element of constant `inst` is the same: that value as a constant expression of
  // its compute type; otherwise nullopt.
  Result<std::optional<std::string>> ConstantSplat(const hlo::Instruction* inst);

  std::ostringstream& prelude() { return prelude_; }
  std::map<const hlo::Instruction*, ValueSlots>& slots() { return slots_; }
  int NewSlot(int64_t bytes) {
    slot_bytes_.push_back(bytes);
    return static_cast<int>(slot_bytes_.size()) - 1;
  }
  const std::vector<int64_t>& slot_bytes() const { return slot_bytes_; }

 private:
  const target::Target& target_;
  std::map<const hlo::Instruction*, std::string> ids_;
  std::map<const hlo::Computation*, std::string> functions_;
  std::map<const hlo::Instruction*, std::string> constants_;
  std::ostringstream prelude_;
  std::map<const hlo::Instruction*, ValueSlots> slots_;
  std::vector<int64_t> slot_bytes_;  // module slots: parameters, outputs, then temporaries
};

struct TileEpilogue;  // gemm_emitter.h

// A contraction kernel's row reductions computed by its GEMM's tiles (gemm_row_reduce.h).
struct RowReduceEmission {
  analysis::RowReduceEpilogue plan;
  // Set where the GEMM is emitted deferred with this epilogue (a blocked GEMM whose tiles split
  // into the plan's rows and N); otherwise the reduces are emitted as usual, over the stored
  // GEMM result.
  bool active = false;
  int64_t threads = 1;                                      // the GEMM's OpenMP threads
  std::map<const hlo::Instruction*, std::string> results;  // reduce -> its result's pointer
};

// A contraction kernel's group norm run in its GEMM's tiles (gemm_segment.h).
struct SegmentEmission {
  analysis::SegmentEpilogue plan;
  std::set<const hlo::Instruction*> program;  // plan.program
  std::string value_ptr;                       // where the tiles store plan.value
  // The GEMM, deferred until the passes' code is complete, and the tile epilogue storing value.
  std::function<Status(const TileEpilogue*)> gemm;
  std::shared_ptr<TileEpilogue> tile;
};

// Emits the body of one function: a kernel (values read from module slots) or a scalar
// computation (values from scalar parameters).
class FunctionEmitter {
 public:
  FunctionEmitter(ModuleContext& module, const space::Schedule& schedule)
      : module_(module), schedule_(schedule) {}

  ModuleContext& module() { return module_; }
  const ModuleContext& module() const { return module_; }
  const space::Schedule& schedule() const { return schedule_; }
  // Declarations and lambdas (and, outside row fusion, the loop nests too).
  std::ostringstream& out() { return out_; }
  // Where loop nests go: out(), or under row fusion the body of the kernel's row loop.
  // (A group norm's passes in a GEMM's tiles: the body of the per-group code.)
  std::ostringstream& loops() {
    return rows_.empty() || (segment_ && !in_program_) ? out_ : loops_;
  }

  // Called before a kernel's instructions are emitted: under the schedule's `row_fuse`, a
  // reduction kernel whose passes work row by row (vector_rows.h) gets one loop over its rows,
  // and every loop nest after this call runs inside it for one row.
  void BeginKernel(const analysis::Kernel& kernel);
  // The leading row dims bound by the row loop (empty without row fusion).
  const std::vector<int64_t>& row_dims() const { return rows_; }
  // Called after the kernel's instructions: emits a GEMM that waited for its group norm's
  // passes (gemm_segment.h).
  Status EndKernel();
  // The function body: out(), then the row loop around loops() under row fusion.
  std::string Finish();

  // The lambda name of `inst`'s value (for a tuple value: of its leaf `leaf`).
  std::string Fn(const hlo::Instruction* inst, int leaf = -1) const;
  bool HasValue(const hlo::Instruction* inst) const { return fns_.count(inst) > 0; }
  void SetFn(const hlo::Instruction* inst, std::string fn) { fns_[inst] = {std::move(fn)}; }
  void SetTupleFns(const hlo::Instruction* inst, std::vector<std::string> fns) {
    fns_[inst] = std::move(fns);
  }
  std::string NewName(const std::string& prefix) { return prefix + std::to_string(counter_++); }

  // Defines a lambda named `name` returning element `shape.dtype()` of a value of `shape`
  // computed by the statements in `body` (which may use i0..i{rank-1}).
  Status DefineLambda(const std::string& name, const hlo::Shape& shape, const std::string& body);
  // Defines the lambda of an array stored at typed pointer `ptr` (row-major, `shape`).
  Status DefineLoadLambda(const std::string& name, const hlo::Shape& shape, const std::string& ptr);
  // The typed pointer behind lambda `fn` when it loads a dense row-major array (a
  // DefineLoadLambda, or a reshape of one), else null. A reshape of such a value loads by the
  // linear index instead of re-deriving the operand's multi-index with a div/mod per dim, which
  // kept the loops reading it from vectorizing.
  const std::string* DensePointer(const std::string& fn) const {
    auto it = dense_loads_.find(fn);
    return it == dense_loads_.end() ? nullptr : &it->second;
  }
  // Whether lambda `fn` loads a row-cached value (EmitRowCached): by the linear index of its
  // dims after the rows, so flat over any two adjacent ones of those.
  bool RowCached(const std::string& fn) const { return row_cached_fns_.count(fn) > 0; }
  // Emits a loop nest over `shape` storing `fn`'s values (exact in the shape's type, as every
  // instruction's are: cpu_types.h's StoreExactExpr) into typed pointer `ptr`.
  Status EmitMaterializeLoop(const hlo::Shape& shape, const std::string& fn,
                             const std::string& ptr);
  // The same for a value's element computed by `statements` (element_chain.h) as `value`.
  Status EmitStoreLoop(const hlo::Shape& shape, const std::string& statements,
                       const std::string& value, const std::string& ptr);
  // Declares scratch storage for an array of `shape`; returns the typed pointer's name.
  Result<std::string> DeclareScratch(const hlo::Shape& shape, const std::string& prefix);

  // Emits `inst`: defines its lambda (and computes it first when it must be materialized).
  Status EmitInstruction(const hlo::Instruction* inst);

  // Where `inst` is an elemental lambda of this function: its place in emission order (an
  // order of its operands before it), else -1.
  int ElementalOrder(const hlo::Instruction* inst) const {
    auto it = elemental_order_.find(inst);
    return it == elemental_order_.end() ? -1 : it->second;
  }
  // Locals (element_chain.h): while set, an elemental body reads these values at its own index
  // from the named local instead of calling their lambdas.
  const std::string* Local(const hlo::Instruction* inst) const {
    auto it = locals_.find(inst);
    return it == locals_.end() ? nullptr : &it->second;
  }
  void SetLocals(std::map<const hlo::Instruction*, std::string> locals) {
    locals_ = std::move(locals);
  }
  void AddLocal(const hlo::Instruction* inst, std::string name) { locals_[inst] = std::move(name); }

  // The kernel's GEMM epilogue when the schedule fuses it (fuse_epilogue, gemm_epilogue.h).
  const GemmEpilogue* gemm_epilogue() const { return epilogue_ ? &*epilogue_ : nullptr; }
  // The GEMM of that epilogue waits for its root: EmitDot leaves `emit` here, and the root's
  // EmitInstruction calls it with the tile epilogue that stores the root.
  void DeferGemm(std::function<Status(const TileEpilogue*)> emit) { deferred_gemm_ = std::move(emit); }
  bool HasDeferredGemm() const { return static_cast<bool>(deferred_gemm_); }
  // Takes the deferred GEMM (for its row-reduction epilogue, gemm_row_reduce.h).
  std::function<Status(const TileEpilogue*)> TakeDeferredGemm() {
    auto emit = std::move(deferred_gemm_);
    deferred_gemm_ = nullptr;
    return emit;
  }
  // The kernel's row reductions when the schedule fuses them (fuse_epilogue), else null.
  RowReduceEmission* row_reduce() { return row_reduce_ ? &*row_reduce_ : nullptr; }
  // The kernel's group norm run in its GEMM's tiles when the schedule fuses it, else null.
  const SegmentEmission* segment() const { return segment_ ? &*segment_ : nullptr; }

  // Kernel outputs: the typed pointers (one per array leaf) their values must be stored to.
  void SetOutputPtrs(const hlo::Instruction* inst, std::vector<std::string> ptrs) {
    output_ptrs_[inst] = std::move(ptrs);
  }
  bool IsOutput(const hlo::Instruction* inst) const { return output_ptrs_.count(inst) > 0; }
  // Where a materialized value's leaf goes: its output pointer, or fresh scratch.
  Result<std::string> StorageFor(const hlo::Instruction* inst, int leaf, const hlo::Shape& shape);

 private:
  ModuleContext& module_;
  const space::Schedule& schedule_;
  std::ostringstream out_;
  std::map<const hlo::Instruction*, std::vector<std::string>> fns_;
  std::map<const hlo::Instruction*, std::vector<std::string>> output_ptrs_;
  std::map<std::string, std::string> dense_loads_;  // lambda name -> typed pointer
  std::map<const hlo::Instruction*, int> elemental_order_;
  std::map<const hlo::Instruction*, std::string> locals_;
  int counter_ = 0;
  std::optional<GemmEpilogue> epilogue_;
  std::optional<RowReduceEmission> row_reduce_;
  std::function<Status(const TileEpilogue*)> deferred_gemm_;
  std::optional<SegmentEmission> segment_;
  bool in_program_ = false;  // emitting an op of segment_'s passes
  // Keeps the deferred GEMM for EndKernel with the tile epilogue storing `value`, the group
  // norm's input; value's lambda then loads what the tiles stored.
  Status DeferSegmentGemm(const hlo::Instruction* value);
  // Segment mode for `kernel` (BeginKernel): the passes' rows, the epilogue storing value.
  void BeginSegments(const analysis::Kernel& kernel, analysis::SegmentEpilogue plan);
  // Emits the deferred GEMM with `root`'s epilogue; root's lambda then loads its stored value.
  Status EmitDeferredGemm(const hlo::Instruction* root);
  // The tile epilogue's statements storing `root`'s element, computed from the dot's (gm_dv),
  // where root is stored (*ptr): tile->steps and tile->locals.
  Status StoreRootBody(const hlo::Instruction* root, const hlo::Instruction* dot,
                       TileEpilogue* tile, std::string* ptr);
  // root's lambda loads what the tiles stored at `ptr` (no longer an elemental lambda).
  Status LoadStoredRoot(const hlo::Instruction* root, const std::string& ptr);
  // Whether `inst` is the group norm's input and the GEMM computing it waits for the passes.
  bool WaitsForSegments(const hlo::Instruction* inst) const {
    return segment_ && inst == segment_->plan.value && deferred_gemm_;
  }
  // Computes `inst` (row-cached under row fusion) into a per-thread row buffer inside the row
  // loop; its lambda `name` loads from there.
  Status EmitRowCached(const hlo::Instruction* inst, const std::string& name,
                       const std::string& body);

  // Computes small value `inst` (hoist_plan.h) once, before the kernel's loops, into an array
  // its lambda `name` loads.
  Status EmitHoisted(const hlo::Instruction* inst, const std::string& name,
                     const std::string& body);

  // Row fusion's plan for the row loop whose `passes` (a kernel's ops, or a group norm's
  // program) it runs: the row dims, the row-cached values and the work its pragma weighs.
  void AdoptRowFusion(RowFusion fusion, const std::vector<const hlo::Instruction*>& passes);

  std::vector<int64_t> rows_;  // row fusion: the row dims (i0..) the row loop binds
  std::vector<size_t> row_order_;  // the row loop's nesting (RowFusion::order)
  std::vector<const hlo::Instruction*> row_cached_;
  std::vector<const hlo::Instruction*> hoisted_;  // the kernel's PlanHoisted values
  std::set<std::string> row_cached_fns_;  // their lambdas
  int64_t row_work_ = 0;       // elements the row loop's passes read, for its parallel pragma
  std::ostringstream loops_;   // row fusion: the row loop's body
};

// "int64_t i0, int64_t i1" for rank 2; "" for rank 0.
std::string IndexParams(int64_t rank);
// "f(a, b)".
std::string CallExpr(const std::string& fn, const std::vector<std::string>& args);
// {"i0", "i1", ...}.
std::vector<std::string> IndexVars(int64_t rank);
// Row-major linear index of `idx` in `dims` as a C++ expression.
std::string LinearIndexExpr(const std::vector<std::string>& idx, const std::vector<int64_t>& dims);
// Error for an op the CPU emitter cannot lower, naming it and its source position.
Status CannotLower(const hlo::Instruction& inst, const std::string& why);

// elemental.cc: the lambda body for a cheap (inlinable) op, or an error if `inst` is not one.
bool IsElemental(const hlo::Instruction& inst);
Result<std::string> ElementalBody(FunctionEmitter& f, const hlo::Instruction& inst);

// materialize.cc: computes a whole-array op into storage and defines its lambda.
Status EmitMaterialized(FunctionEmitter& f, const hlo::Instruction& inst);

}  // namespace mk::codegen::cpu
