// The fusion plan: the entry computation partitioned into kernels, XLA-style. The planner's
// decisions are explicit data (FusionDecisions: which kernel each instruction belongs to), so a
// search can change them and ask for the plan they imply (PlanFromDecisions), which re-checks them.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "hlo/module.h"
#include "support/status.h"

namespace mk::analysis {

enum class KernelFamily {
  kLoop,         // elementwise / broadcast / reshape / transpose / slice / concat / pad / iota ...
  kReduction,    // one or more row-compatible reduces with producers and broadcast-back consumers
  kContraction,  // a dot or convolution with absorbed operand producers and an elementwise epilogue
  kStandalone,   // gather, scatter, sort, while, conditional, call, reduce-window, custom-call ...
};
const char* KernelFamilyName(KernelFamily f);

// Why the planner merged an instruction into a kernel, or why it kept one out (the report's
// "why these kernels"). `kernel_member` names any instruction of the kernel the note is about:
// the one that absorbed `instruction`, or the one that declined it.
struct FusionNote {
  std::string instruction;
  std::string kernel_member;
  bool fused = true;   // false: the planner kept `instruction` out of that kernel
  std::string reason;  // one sentence for people
};

struct Kernel {
  int id = 0;
  std::string name;  // "kernel.3.reduction"
  // A name that survives other fusion choices (a position does not: fusing or splitting one
  // kernel renumbers the rest): the hero's instruction name, or for a kernel without one the
  // name of its last instruction. Unique within a plan.
  std::string key;
  KernelFamily family = KernelFamily::kLoop;
  const hlo::Instruction* hero = nullptr;  // the dot/conv/reduce/standalone op; null for loops
  std::vector<const hlo::Instruction*> instructions;  // topological order
  std::vector<const hlo::Instruction*> inputs;   // values from outside (parameters, constants, other kernels)
  std::vector<const hlo::Instruction*> outputs;  // values used outside the kernel (or the root)
  // The planner's notes on this kernel, in the order it decided: the latest reason each member
  // joined (members without one never joined anything: they started the kernel), then the
  // merges it declined. Empty for a plan made from hand-made decisions.
  std::vector<FusionNote> notes;
  int64_t flops = 0;
  int64_t bytes = 0;  // inputs read + outputs written, once each

  // The fused subgraph as a standalone HLO module (inputs become parameters, outputs a tuple
  // root): what the debugger shows and what a minimized repro runs.
  std::string ToHloText() const;
};

// Instruction name -> kernel id, for every instruction that belongs to a kernel. Parameters,
// get-tuple-element of parameters and the root tuple are not in any kernel.
struct FusionDecisions {
  std::map<std::string, int> kernel_of;
  // The planner's reasons, in decision order (PlanFusion writes them; a search that changes
  // kernel_of may keep them: PlanFromDecisions drops each note the new kernels contradict).
  std::vector<FusionNote> notes;
};

struct FusionPlan {
  const hlo::Module* module = nullptr;
  std::vector<Kernel> kernels;  // in an order that respects data dependencies
  FusionDecisions decisions;
  std::string Summary() const;  // one line per kernel: name, family, #ops, flops, bytes
};

struct FusionOptions {
  bool fuse_epilogues = true;         // elementwise consumers into contraction kernels
  bool fuse_reduction_chains = true;  // softmax / norm chains into one reduction kernel
  bool fuse_operand_producers = true; // convert/broadcast/transpose into contraction operands
  bool fuse_row_reductions = true;    // a dot's row reductions into its kernel (by its tiles)
  // ... where the dot's result has at least this many bytes. Callers pass the target's last
  // cache level: a result that fits comes back from it for a separate reduction kernel about as
  // fast as the tiles reduce it (13p at 8 MiB: no gain), one that does not is written to memory
  // and read back (13p at full scale, 4 GiB of logits: 6 calls 44 -> 28 s, 4 GiB less memory).
  int64_t row_reduction_min_bytes = int64_t{32} << 20;
  // A dot's group norm into its kernel, computed group by group in its tiles
  // (segment_epilogue.h), for groups of segment_min..segment_max columns: the widest register
  // tile holds 64. Shorter groups pay the per-group loop's overhead on fewer elements: `bench
  // --suite jaxbench --scale ci`, old/new binaries alternating (a loaded machine), 40k (16
  // columns) 127 -> 192-205 us, 45k (32) 177-188 -> 183-202 us; 29k (64) about even, at ci and
  // at bench scale.
  bool fuse_segment_epilogues = true;
  int64_t segment_min = 64;
  int64_t segment_max = 64;
  // false (TPU targets): a lane reshape (IsLaneReshape) stays a kernel of its own. Mosaic cannot
  // lay one out inside a pallas_call ("unsupported shape cast": 25k's and 46k's group norms
  // reshape [2,24,6,14,14] to [2,8,3528]); apart, XLA copies it between the kernels.
  bool fuse_lane_reshapes = true;
  // Per-choice overrides of the planner's rules (FusionChoice::key -> fuse or not): how a search
  // tries a plan without one merge, or with one the rules decline (issue 35: the fusion
  // decisions are decisions of the search graph). A key that names no choice of the module
  // changes nothing.
  std::map<std::string, bool> overrides;
};

// One fusion decision the planner takes for a module, as a choice a search can flip. Keys:
//   "operands:<contraction>"   its cheap operand producers (convert, broadcast ...) fused in
//   "epilogue:<contraction>"   its elementwise consumers applied to the tiles in registers
//   "chain:<reduce>"           the softmax / norm chain around a reduce as one kernel
//   "row_reductions:<dot>"     the row reductions of its result computed by the GEMM's tiles
//   "segment:<dot>"            its group norm computed group by group in the GEMM's tiles
//   "loop"                     loop ops joining their consumers' kernel (the whole module)
struct FusionChoice {
  std::string key;
  bool planner_fuses = true;  // the planner's own choice
  std::string description;    // one line for people
};

// The choices of `module` that change its plan: flipping one alone gives other kernels.
Result<std::vector<FusionChoice>> FusionChoicesOf(const hlo::Module& module,
                                                  const FusionOptions& options = {});

// The plan's partition in a form that compares: one line per kernel, its instruction names.
std::string PartitionKey(const FusionPlan& plan);

// A reshape or bitcast that moves elements across the minor (lane) dim: its last dim changes,
// other than by adding or dropping a trailing 1.
bool IsLaneReshape(const hlo::Instruction& i);

// Partitions the entry computation. Called computations (to_apply, while bodies ...) stay with
// the instruction that calls them.
Result<FusionPlan> PlanFusion(const hlo::Module& module, const FusionOptions& options = {});

// The plan implied by `decisions`; an error if they leave an instruction out, name an unknown
// instruction, or create a cycle between kernels.
Result<FusionPlan> PlanFromDecisions(const hlo::Module& module, const FusionDecisions& decisions);

}  // namespace mk::analysis
