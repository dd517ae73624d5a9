// Recognizes a grouped GEMM driven by group sizes (megablox gmm, lax.ragged_dot computed over
// (row tile, group) visits) in a fusion plan, so the Pallas emitter can compute it as one
// pallas_call instead of materializing a copy of the weights per visit. What the module computes:
//
//   A = take(reshape(lhs, [T, tm, K]), ti)   gather of one row tile per visit    [V, tm, K]
//   B = take(rhs, gi)                        gather of one group's weight per visit [V, K, N]
//   D = dot(A, B)                            batched over the visits, f32        [V, tm, N]
//   P = select(mask, D, 0)                   rows outside the visit's group zeroed
//   O = scatter-add(c, si, P)                every visit's rows added into tile si [T, tm, N]
//
// The per-visit indices ti, gi, si (the module's own visit schedule, computed from the group
// sizes), the per-visit "in range" predicates of jnp.take's NaN fill and the [V, tm] mask are
// taken as they are: the fused call reads them (scalar prefetch and a small blocked input), so the
// result is what the module computes for any index values, with no assumption about how the
// schedule was derived. B may also be [V, N, K] (contracted on its last dim).
//
// The match is structural and exact: every shape, gather/scatter dimension number, reducer,
// fill value and dtype is checked, and anything else is refused with the reason.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "analysis/fusion_plan.h"
#include "support/status.h"

namespace mk::codegen::pallas {

// A value the call reads per visit (an index, a predicate) or per (visit, row) (the mask), with
// each of its dims labelled 0 (the visit dim), 1 (the row-in-tile dim) or -1 (size 1).
struct VisitValue {
  const hlo::Instruction* value = nullptr;  // null: absent (always true)
  std::vector<int> labels;
  bool negated = false;  // the module keeps where the value is false
};

struct GroupedGemmMatch {
  const hlo::Instruction* scatter = nullptr;  // O, the anchor
  const hlo::Instruction* dot = nullptr;      // D
  const hlo::Instruction* lhs = nullptr;      // the row tiles, [T, tm, K] (A's gather operand)
  const hlo::Instruction* rhs = nullptr;      // the weights, [G, K, N] or [G, N, K]
  bool rhs_transposed = false;                // rhs is [G, N, K]
  const hlo::Instruction* lhs_index = nullptr;  // ti: A's gather start indices, [V, 1] or [V]
  const hlo::Instruction* rhs_index = nullptr;  // gi
  const hlo::Instruction* out_index = nullptr;  // si: the scatter's indices
  VisitValue lhs_ok, rhs_ok;  // [V] preds: the gathered tile is kept, else it is all NaN
  VisitValue mask;            // [V, tm] pred: the row of the visit's product is kept, else 0
  const hlo::Instruction* init = nullptr;  // O's initial value: a broadcast scalar constant
  // Absorbed by FindGroupedGemm when nothing else uses them (null otherwise):
  //   lhs_rows: `lhs` is reshape(lhs_rows [T*tm, K]); the call reads lhs_rows in place.
  //   out_reshape, out_convert: O's only user is a reshape whose only user is a float convert;
  //   the call writes the convert's type and the convert's value is O reshaped.
  const hlo::Instruction* lhs_rows = nullptr;
  const hlo::Instruction* out_reshape = nullptr;
  const hlo::Instruction* out_convert = nullptr;
  int64_t v = 0, t = 0, tm = 0, k = 0, n = 0, g = 0;
  // Every instruction the call computes; none but `scatter` may be used outside this set.
  std::set<const hlo::Instruction*> core;
};

// The grouped GEMM whose scatter-add is `scatter`, from the HLO graph alone (no users checked),
// or why not. `looks_like` (when given) is set when the scatter adds the products of a batched
// dot, i.e. when a refusal is worth reporting.
Result<GroupedGemmMatch> MatchGroupedGemmAt(const hlo::Instruction* scatter, bool* looks_like = nullptr);

// A match placed in a plan: the kernels it replaces (plan indices, ascending; the last is the
// anchor, the scatter's kernel, where the call runs), the call's inputs and outputs.
struct PlannedGroupedGemm {
  GroupedGemmMatch match;
  std::vector<size_t> kernels;
  size_t anchor = 0;
  std::vector<const hlo::Instruction*> inputs;   // values from outside the replaced kernels
  std::vector<const hlo::Instruction*> outputs;  // values used outside them
  // The replaced kernels' instructions that run in jnp glue (the schedule's values before the
  // call, the scatter's users after it), in plan order.
  std::vector<const hlo::Instruction*> glue;
};

struct GroupedGemmScan {
  std::vector<PlannedGroupedGemm> found;
  std::vector<std::string> refused;  // per scatter that looked like one: "%name: reason"
};

// Every grouped GEMM of the plan whose core values nothing outside uses, in kernels not in
// `taken` (those another fused family already replaces); each kernel in at most one.
GroupedGemmScan FindGroupedGemm(const analysis::FusionPlan& plan, const std::set<size_t>& taken);

}  // namespace mk::codegen::pallas
