// Internal to the CPU emitter: lowerings of the whole-array ops beyond reduce and dot, one file
// per op group (materialize_<group>.cc), dispatched from EmitMaterialized (materialize.cc). Each
// function computes `inst` into storage (its kernel output pointers, or scratch) and defines its
// value lambda(s); index-remapping ops (gather, dynamic-update-slice) only define a lambda.
// Every lowering follows the interpreter's order of operations (src/interp/*.cc), so results
// agree bit for bit wherever the interpreter's order is defined.
#pragma once

#include <string>
#include <vector>

#include "codegen/cpu/emit_context.h"

namespace mk::codegen::cpu {

// ---- shared helpers (materialize.cc) ----------------------------------------------------------
// `#pragma omp parallel for` (when `parallel` and the work is worth it), then one `for` per
// entry of `dims` with loop variables `vars`.
void OpenLoops(FunctionEmitter& f, const std::vector<std::string>& vars,
               const std::vector<int64_t>& dims, bool parallel, int64_t work);
// The array leaves of a value's shape: the shape itself, or a flat tuple's elements.
Result<std::vector<hlo::Shape>> ArrayLeaves(const hlo::Instruction& inst);
// Defines load lambdas "v<id>[_k]" for the leaves stored at `ptrs` and registers them as `inst`'s
// value (a tuple value when `inst` has a tuple shape).
Status DefineStoredValue(FunctionEmitter& f, const hlo::Instruction& inst,
                         const std::vector<std::string>& ptrs);
// Makes sure `op` (an array value) is stored row-major: materializes its lambda into fresh
// scratch and returns the typed pointer.
Result<std::string> MaterializeToScratch(FunctionEmitter& f, const hlo::Instruction& op,
                                         int leaf = -1);
// `std::clamp(v, lo, hi)` for a start index expression of any integer type.
std::string ClampedIndexExpr(const std::string& value, int64_t lo, int64_t hi);

// ---- materialize_conv.cc ----
Status EmitConvolution(FunctionEmitter& f, const hlo::Instruction& inst);
// ---- materialize_window.cc ----
Status EmitReduceWindow(FunctionEmitter& f, const hlo::Instruction& inst);
Status EmitSelectAndScatter(FunctionEmitter& f, const hlo::Instruction& inst);
// ---- materialize_indexing.cc ----
Status EmitGather(FunctionEmitter& f, const hlo::Instruction& inst);
Status EmitScatter(FunctionEmitter& f, const hlo::Instruction& inst);
Status EmitDynamicUpdateSlice(FunctionEmitter& f, const hlo::Instruction& inst);
// ---- materialize_sort.cc ----
Status EmitSort(FunctionEmitter& f, const hlo::Instruction& inst);
Status EmitTopK(FunctionEmitter& f, const hlo::Instruction& inst);
// ---- materialize_control.cc ----
Status EmitWhile(FunctionEmitter& f, const hlo::Instruction& inst);
Status EmitConditional(FunctionEmitter& f, const hlo::Instruction& inst);
Status EmitCall(FunctionEmitter& f, const hlo::Instruction& inst);
// ---- materialize_rng.cc ----
Status EmitRngBitGenerator(FunctionEmitter& f, const hlo::Instruction& inst);
Status EmitRng(FunctionEmitter& f, const hlo::Instruction& inst);

}  // namespace mk::codegen::cpu
