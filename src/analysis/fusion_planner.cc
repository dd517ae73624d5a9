// Greedy, rule-based fusion in four passes (contraction operands, contraction epilogues,
// reduction chains and a dot's row reductions, loop fusion), each merge guarded by a cycle
// check on the kernel graph. The rules only decide what is fused; emitters lower any fused
// subgraph correctly, so a rule that misjudges costs speed, never correctness.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "analysis/cost.h"
#include "analysis/fusion_plan.h"
#include "analysis/row_reduce_epilogue.h"
#include "analysis/segment_epilogue.h"

namespace mk::analysis {

using hlo::Instruction;
using hlo::Opcode;

const char* KernelFamilyName(KernelFamily f) {
  switch (f) {
    case KernelFamily::kLoop: return "loop";
    case KernelFamily::kReduction: return "reduction";
    case KernelFamily::kContraction: return "contraction";
    case KernelFamily::kStandalone: return "standalone";
  }
  return "loop";
}

namespace {

bool IsContraction(const Instruction* i) {
  return i->opcode == Opcode::kDot || i->opcode == Opcode::kConvolution;
}
// A reduce the reduction emitters handle: one input, one init.
bool IsSimpleReduce(const Instruction* i) {
  return i->opcode == Opcode::kReduce && i->operands.size() == 2 && i->shape.is_array();
}
bool IsLoopOp(const Instruction* i) {
  switch (i->opcode) {
    case Opcode::kBroadcast: case Opcode::kReshape: case Opcode::kBitcast:
    case Opcode::kTranspose: case Opcode::kSlice: case Opcode::kConcatenate: case Opcode::kPad:
    case Opcode::kIota: case Opcode::kReverse: case Opcode::kCopy: case Opcode::kDynamicSlice:
    case Opcode::kBitcastConvert: case Opcode::kMap:
      return i->shape.is_array();
    case Opcode::kGetTupleElement:
      return i->shape.is_array();
    default:
      return hlo::IsElementwise(i->opcode) && i->shape.is_array();
  }
}
// Producers a contraction may absorb into its operand packing at no extra arithmetic cost.
bool IsCheapOperandProducer(const Instruction* i) {
  switch (i->opcode) {
    case Opcode::kConvert: case Opcode::kBroadcast: case Opcode::kTranspose:
    case Opcode::kReshape: case Opcode::kBitcast: case Opcode::kCopy:
      return true;
    default:
      return false;
  }
}
// Not in any kernel: entry parameters and constants are inputs; the root tuple only names outputs.
bool IsOutsideKernels(const Instruction* i, const hlo::Computation& entry) {
  if (i->opcode == Opcode::kParameter || i->opcode == Opcode::kConstant) return true;
  if (i == entry.root() && i->opcode == Opcode::kTuple) return true;
  return false;
}

}  // namespace

bool IsLaneReshape(const Instruction& i) {
  if (i.opcode != Opcode::kReshape && i.opcode != Opcode::kBitcast) return false;
  if (i.operands.size() != 1 || !i.shape.is_array() || !i.operands[0]->shape.is_array()) return false;
  std::vector<int64_t> in = i.operands[0]->shape.dims(), out = i.shape.dims();
  if (in.empty() || out.empty() || in.back() == out.back()) return false;
  auto without_last = [](std::vector<int64_t> d) {
    d.pop_back();
    return d;
  };
  if (out.back() == 1 && without_last(out) == in) return false;
  if (in.back() == 1 && without_last(in) == out) return false;
  return true;
}

namespace {

class Partition {
 public:
  Partition(const hlo::Computation& entry, bool fuse_lane_reshapes)
      : entry_(entry), fuse_lane_reshapes_(fuse_lane_reshapes) {
    for (const auto& inst : entry.instructions()) {
      const Instruction* i = inst.get();
      for (const Instruction* op : i->operands) users_[op].push_back(i);
      if (!IsOutsideKernels(i, entry)) group_[i] = next_group_++;
    }
  }

  bool InKernel(const Instruction* i) const { return group_.count(i) > 0; }
  int GroupOf(const Instruction* i) const { return group_.at(i); }
  const std::vector<const Instruction*>& Users(const Instruction* i) const {
    static const std::vector<const Instruction*> kNone;
    auto it = users_.find(i);
    return it == users_.end() ? kNone : it->second;
  }
  std::vector<const Instruction*> Members(int g) const {
    std::vector<const Instruction*> out;
    for (const auto& inst : entry_.instructions()) {
      auto it = group_.find(inst.get());
      if (it != group_.end() && it->second == g) out.push_back(inst.get());
    }
    return out;
  }
  bool AllUsersIn(const Instruction* i, int g) const {
    if (i == entry_.root()) return false;  // the root value is an output
    for (const Instruction* u : Users(i)) {
      if (!InKernel(u) || GroupOf(u) != g) return false;
    }
    return !Users(i).empty();
  }
  const Instruction* Hero(int g) const {
    for (const Instruction* m : Members(g)) {
      if (IsContraction(m)) return m;
    }
    for (const Instruction* m : Members(g)) {
      if (!IsLoopOp(m)) return m;
    }
    return nullptr;
  }
  bool IsStandaloneGroup(int g) const {
    const Instruction* h = Hero(g);
    return h && !IsContraction(h) && !IsSimpleReduce(h);
  }

  // Merges group `from` into `into` unless that would make the kernel graph cyclic (a path
  // from one group to the other through a third group). Notes `reason` for what joined: the
  // one member of `from`, or the hero that leads it; a refusal is noted too.
  bool TryMerge(int from, int into, const std::string& reason) {
    if (from == into) return true;
    const std::vector<const Instruction*> joining = Members(from);
    const Instruction* joiner = joining.size() == 1 ? joining[0] : Hero(from);
    if (!joiner) joiner = joining.front();
    const std::string member = Members(into).front()->name;
    // (A contraction computes its operand producers before its tiles, outside the kernel body
    // a target lays out: a lane reshape may join it there.)
    const Instruction* into_hero = Hero(into);
    if (!fuse_lane_reshapes_ && !(into_hero && IsContraction(into_hero))) {
      for (const Instruction* i : joining) {
        if (!IsLaneReshape(*i)) continue;
        Decline(i, into, "a reshape across the minor (lane) dim: the target cannot lay it out "
                         "inside a kernel, so it is a copy of its own");
        return false;
      }
      for (const Instruction* i : Members(into)) {
        if (!IsLaneReshape(*i)) continue;
        Decline(joiner, into, "the kernel is a reshape across the minor (lane) dim, kept apart");
        return false;
      }
    }
    if (ReachesThroughOther(from, into) || ReachesThroughOther(into, from)) {
      Decline(joiner, into, "joining would put another kernel both before and after it (a "
                            "cycle between kernels)");
      return false;
    }
    for (auto& [inst, g] : group_) {
      if (g == from) g = into;
    }
    notes_.push_back({joiner->name, member, true, reason});
    return true;
  }

  // Notes that `i` was kept out of group `g`, and why (once: the growing passes ask again on
  // every round).
  void Decline(const Instruction* i, int g, const std::string& reason) {
    if (!declined_.emplace(i, g, reason).second) return;
    notes_.push_back({i->name, Members(g).front()->name, false, reason});
  }

  FusionDecisions Decisions() const {
    FusionDecisions d;
    d.notes = notes_;
    // Renumber groups densely in topological order of first appearance.
    std::unordered_map<int, int> dense;
    for (const auto& inst : entry_.instructions()) {
      auto it = group_.find(inst.get());
      if (it == group_.end()) continue;
      if (!dense.count(it->second)) dense[it->second] = static_cast<int>(dense.size());
      d.kernel_of[inst->name] = dense[it->second];
    }
    return d;
  }

 private:
  // Whether some group other than `a` and `b` lies on a path from `a` to `b`: then merging them
  // would put that group both before and after the merged kernel.
  bool ReachesThroughOther(int a, int b) const {
    auto group_or = [&](const Instruction* i) { return InKernel(i) ? GroupOf(i) : -1; };
    std::vector<const Instruction*> stack;
    for (const auto& [inst, g] : group_) {
      if (g != a) continue;
      for (const Instruction* u : Users(inst)) {
        int gu = group_or(u);
        if (gu != a && gu != b) stack.push_back(u);
      }
    }
    std::unordered_set<const Instruction*> visited;
    while (!stack.empty()) {
      const Instruction* i = stack.back();
      stack.pop_back();
      if (!visited.insert(i).second) continue;
      int g = group_or(i);
      if (g == b) return true;
      if (g == a) continue;
      for (const Instruction* u : Users(i)) stack.push_back(u);
    }
    return false;
  }

  const hlo::Computation& entry_;
  bool fuse_lane_reshapes_ = true;
  std::unordered_map<const Instruction*, std::vector<const Instruction*>> users_;
  std::unordered_map<const Instruction*, int> group_;
  int next_group_ = 0;
  std::vector<FusionNote> notes_;
  std::set<std::tuple<const Instruction*, int, std::string>> declined_;
};

// "8 MiB", "512 KiB", "96 B": the sizes the notes compare.
std::string Bytes(int64_t n) {
  char buf[32];
  if (n >= (int64_t{1} << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", n / 1048576.0);
  else if (n >= 1024) std::snprintf(buf, sizeof buf, "%.1f KiB", n / 1024.0);
  else return std::to_string(n) + " B";
  std::string s = buf;
  if (auto dot = s.find(".0 "); dot != std::string::npos) s.erase(dot, 2);
  return s;
}

bool SameDims(const Instruction* a, const Instruction* b) {
  return a->shape.is_array() && b->shape.is_array() && a->shape.dims() == b->shape.dims();
}

// The search's override of choice `key` (FusionOptions::overrides), else the rules' verdict.
bool Choose(const FusionOptions& options, const std::string& key, bool rule) {
  auto it = options.overrides.find(key);
  return it == options.overrides.end() ? rule : it->second;
}

// Pulls cheap producers (convert, broadcast, transpose ...) of a contraction's operands into it.

void FuseContractionOperands(Partition& p, const Instruction* hero) {
  std::vector<const Instruction*> work(hero->operands.begin(), hero->operands.end());
  while (!work.empty()) {
    const Instruction* op = work.back();
    work.pop_back();
    if (!p.InKernel(op) || !IsCheapOperandProducer(op)) continue;
    int g = p.GroupOf(hero);
    if (p.GroupOf(op) == g || !p.AllUsersIn(op, g)) continue;
    // An op that already ends another contraction's epilogue stays there: pulling it in would
    // pull that whole GEMM along, and its epilogue would then run inside this GEMM's packing,
    // once per thread that packs (9p's SwiGLU: exp and divide per element of the down
    // projection's A, twice) instead of once on each tile, in cache.
    if (p.Members(p.GroupOf(op)).size() != 1) {
      p.Decline(op, g, "it ends another contraction's epilogue: pulling it in would run that "
                       "epilogue inside this GEMM's operand packing, once per packing thread");
      continue;
    }
    if (p.TryMerge(p.GroupOf(op), g,
                   "a " + std::string(hlo::OpcodeName(op->opcode)) + " of an operand of %" +
                       hero->name + ": applied while the GEMM packs its operand tiles, so it "
                       "costs no pass over memory of its own")) {
      for (const Instruction* o : op->operands) work.push_back(o);
    }
  }
}

// Grows group `g` with consumers accepted by `accept`, and with broadcasts feeding them whose
// users all end up inside, until nothing changes. `reason` says why a consumer joins.
void GrowConsumers(Partition& p, int g, const std::function<bool(const Instruction*)>& accept,
                   const std::string& reason) {
  bool changed = true;
  while (changed) {
    changed = false;
    for (const Instruction* m : p.Members(g)) {
      for (const Instruction* u : p.Users(m)) {
        if (!p.InKernel(u) || p.GroupOf(u) == g || !accept(u)) continue;
        // Only single, not-yet-fused ops join; a hero (another reduce) joins only when
        // `accept` vouches for it (row-compatible reductions).
        if (p.Members(p.GroupOf(u)).size() != 1 || p.IsStandaloneGroup(p.GroupOf(u))) continue;
        if (IsContraction(u)) continue;
        if (p.TryMerge(p.GroupOf(u), g, reason)) {
          changed = true;
          for (const Instruction* o : u->operands) {
            if (p.InKernel(o) && o->opcode == Opcode::kBroadcast && p.GroupOf(o) != g &&
                p.Members(p.GroupOf(o)).size() == 1 && p.AllUsersIn(o, g)) {
              p.TryMerge(p.GroupOf(o), g,
                         "a broadcast read only inside this kernel: computed where it is "
                         "read, never stored");
            }
          }
        }
      }
    }
  }
}

// Whether absorbing elementwise `u` into contraction group `g` adds a full-size output: some
// operand of `u` in `g` stays an output anyway (it has a user that no epilogue absorbs, such as
// a reduce), and `u` is not an output of the module itself. Then the tile would write both
// arrays, where leaving `u` out lets its consumers (a reduction chain, a loop kernel) compute it
// from the one array on the fly: 13p's one-hot select of the logits, summed per row, wrote a
// second 8 MiB array from the GEMM and read it back.
bool AddsEpilogueOutput(const Partition& p, const hlo::Computation& entry, int g,
                        const Instruction* u,
                        const std::function<bool(const Instruction*)>& epilogue_op) {
  if (u == entry.root()) return false;
  for (const Instruction* w : p.Users(u)) {
    if (w == entry.root()) return false;  // a module output: stored either way
  }
  for (const Instruction* o : u->operands) {
    if (!p.InKernel(o) || p.GroupOf(o) != g) continue;
    if (o == entry.root()) return true;
    for (const Instruction* w : p.Users(o)) {
      const bool inside = p.InKernel(w) && p.GroupOf(w) == g;
      if (!inside && w != u && !epilogue_op(w)) return true;
    }
  }
  return false;
}

// Whether reduces `a` and `b` reduce the same dims of same-shaped inputs (the same rows).
bool SameRows(const Instruction* a, const Instruction* b) {
  return a->operands[0]->shape.dims() == b->operands[0]->shape.dims() &&
         a->dimensions == b->dimensions;
}

// Merges reduction kernels whose heroes reduce the same rows when a value of one is used by the
// other (TryMerge keeps the kernel graph acyclic).
void MergeRowReductionKernels(Partition& p, const std::vector<const Instruction*>& order) {
  std::vector<const Instruction*> reduces;
  for (const Instruction* i : order) {
    if (IsSimpleReduce(i) && p.InKernel(i)) reduces.push_back(i);
  }
  // The kernel of reduce `r` if a reduce leads it (groups change as they merge).
  auto reduction_group = [&](const Instruction* r) {
    const int g = p.GroupOf(r);
    const Instruction* hero = p.Hero(g);
    return hero && IsSimpleReduce(hero) ? g : -1;
  };
  auto feeds = [&](int from, int to) {
    for (const Instruction* m : p.Members(from)) {
      for (const Instruction* u : p.Users(m)) {
        if (p.InKernel(u) && p.GroupOf(u) == to) return true;
      }
    }
    return false;
  };
  for (const Instruction* consumer : reduces) {
    for (const Instruction* producer : reduces) {
      const int g = reduction_group(consumer), h = reduction_group(producer);
      if (g < 0 || h < 0 || h == g || !SameRows(producer, consumer)) continue;
      if (feeds(h, g)) {
        p.TryMerge(h, g, "reduces the same rows as %" + consumer->name +
                             ", which uses its result: one loop over the rows reads the input "
                             "once for both");
      }
    }
  }
}

// The kernels other than `c` that read a member of kernel `c`; -1 where an instruction outside
// every kernel reads one.
std::set<int> ReaderKernels(const Partition& p, int c) {
  std::set<int> readers;
  for (const Instruction* m : p.Members(c)) {
    for (const Instruction* u : p.Users(m)) {
      if (!p.InKernel(u)) readers.insert(-1);
      else if (p.GroupOf(u) != c) readers.insert(p.GroupOf(u));
    }
  }
  return readers;
}

// Kernel `c` merged with the kernels `with`, as the epilogue analyses see a candidate: its
// instructions in `order`, how many are reduces, and which the merged kernel outputs (the
// entry's root, or a value read outside it).
struct MergeCandidate {
  std::vector<const Instruction*> members;
  size_t reduces = 0;
  std::function<bool(const Instruction*)> is_output;
};

MergeCandidate CandidateMerge(const Partition& p, const hlo::Computation& entry,
                              const std::vector<const Instruction*>& order, int c,
                              const std::set<int>& with) {
  auto inside = [&p, c, with](const Instruction* i) {
    return p.InKernel(i) && (p.GroupOf(i) == c || with.count(p.GroupOf(i)));
  };
  MergeCandidate m;
  for (const Instruction* i : order) {
    if (!inside(i)) continue;
    m.members.push_back(i);
    if (i->opcode == Opcode::kReduce) ++m.reduces;
  }
  m.is_output = [&p, &entry, inside](const Instruction* i) {
    if (i == entry.root()) return true;
    for (const Instruction* u : p.Users(i)) {
      if (!inside(u)) return true;
    }
    return false;
  };
  return m;
}

// Merges the reduction kernels that read a dot's kernel (and nothing else does) into it where
// the GEMM's tiles can compute their reduces (row_reduce_epilogue.h): the dot's result is then
// never stored and read back. Every reduce of those kernels must be one of them, so that no
// reduce is left to a contraction kernel's plain loops.
void FuseRowReductions(Partition& p, const hlo::Computation& entry,
                       const std::vector<const Instruction*>& order, const FusionOptions& options) {
  const int64_t min_bytes = options.row_reduction_min_bytes;
  for (const Instruction* dot : order) {
    if (dot->opcode != Opcode::kDot || !p.InKernel(dot) || !dot->shape.is_array()) continue;
    const int c = p.GroupOf(dot);
    if (p.Hero(c) != dot) continue;
    const std::set<int> readers = ReaderKernels(p, c);
    const std::vector<const Instruction*>& own = p.Members(c);
    if (readers.empty() || readers.count(-1) ||
        std::find(own.begin(), own.end(), entry.root()) != own.end()) {
      continue;
    }
    bool reductions = true;
    for (int g : readers) {
      const Instruction* hero = p.Hero(g);
      reductions = reductions && hero && IsSimpleReduce(hero);
    }
    if (!reductions) continue;
    const int64_t result_bytes = dot->shape.byte_size();
    const auto chosen = options.overrides.find("row_reductions:" + dot->name);
    if (chosen != options.overrides.end() && !chosen->second) continue;
    if (chosen == options.overrides.end() && !options.fuse_row_reductions) continue;
    if (chosen == options.overrides.end() && result_bytes < min_bytes) {
      std::string size = Bytes(result_bytes), threshold = Bytes(min_bytes);
      if (size == threshold) {
        size = std::to_string(result_bytes) + " B";
        threshold = std::to_string(min_bytes) + " B";
      }
      for (int g : readers) {
        p.Decline(p.Hero(g), c,
                  "%" + dot->name + "'s result (" + size + ") is under " + threshold +
                      ": it comes back from the cache for a separate reduction kernel about as "
                      "fast as the GEMM's tiles would reduce it");
      }
      continue;
    }
    const MergeCandidate m = CandidateMerge(p, entry, order, c, readers);
    const auto plan = PlanRowReduceEpilogue(dot, m.members, m.is_output);
    if (!plan || plan->reduces.size() != m.reduces) continue;
    for (int g : readers) {
      p.TryMerge(g, c,
                 "reduces the rows of %" + dot->name + " (" + Bytes(result_bytes) +
                     "): the GEMM's tiles reduce them as they are computed, so the product is "
                     "never stored and read back");
    }
  }
}

// Merges the reduction kernel that reads a dot's kernel (and nothing else does) into it where
// the GEMM's tiles can run its passes group by group (segment_epilogue.h): 29k's GroupNorm.
// Every reduce of the merge must be one of the passes'.
void FuseSegmentEpilogues(Partition& p, const hlo::Computation& entry,
                          const std::vector<const Instruction*>& order,
                          const FusionOptions& options) {
  for (const Instruction* dot : order) {
    if (dot->opcode != Opcode::kDot || !p.InKernel(dot)) continue;
    const int c = p.GroupOf(dot);
    if (p.Hero(c) != dot) continue;
    const std::set<int> readers = ReaderKernels(p, c);
    if (readers.size() != 1 || readers.count(-1)) continue;
    const int g = *readers.begin();
    if (!p.Hero(g) || !IsSimpleReduce(p.Hero(g))) continue;
    const MergeCandidate m = CandidateMerge(p, entry, order, c, readers);
    const auto plan = PlanSegmentEpilogue(dot, m.members, m.is_output);
    // segment_max is what the register tiles hold; segment_min and the switch are the rules'
    // verdict on speed, which a search's choice overrides.
    if (!plan || plan->segment > options.segment_max) continue;
    const bool rule = options.fuse_segment_epilogues && plan->segment >= options.segment_min;
    if (!Choose(options, "segment:" + dot->name, rule)) continue;
    size_t program_reduces = 0;
    for (const Instruction* i : plan->program) program_reduces += i->opcode == Opcode::kReduce;
    if (program_reduces != m.reduces) continue;
    p.TryMerge(g, c,
               "normalizes %" + dot->name + "'s columns in groups of " +
                   std::to_string(plan->segment) + ": the GEMM's tiles run it group by group, "
                   "so the product is never stored and read back");
  }
}

// Pulls loop-op producers whose users are all in `g` into `g` (transitively), noting `reason`.
void GrowProducers(Partition& p, int g, const std::function<bool(const Instruction*)>& accept,
                   const std::string& reason) {
  bool changed = true;
  while (changed) {
    changed = false;
    for (const Instruction* m : p.Members(g)) {
      for (const Instruction* op : m->operands) {
        if (!p.InKernel(op) || p.GroupOf(op) == g || !accept(op)) continue;
        if (p.Members(p.GroupOf(op)).size() != 1 || !p.AllUsersIn(op, g)) continue;
        if (p.TryMerge(p.GroupOf(op), g, reason)) changed = true;
      }
    }
  }
}

}  // namespace

Result<FusionPlan> PlanFusion(const hlo::Module& module, const FusionOptions& options) {
  if (!module.entry()) return InvalidArgument("module has no ENTRY computation");
  const hlo::Computation& entry = *module.entry();
  Partition p(entry, options.fuse_lane_reshapes);
  std::vector<const Instruction*> order;
  for (const auto& inst : entry.instructions()) order.push_back(inst.get());

  // 1. Contractions absorb cheap operand producers; 2. then their elementwise epilogue.
  for (const Instruction* i : order) {
    if (!IsContraction(i) || !p.InKernel(i)) continue;
    if (Choose(options, "operands:" + i->name, options.fuse_operand_producers)) {
      FuseContractionOperands(p, i);
    }
    if (Choose(options, "epilogue:" + i->name, options.fuse_epilogues)) {
      auto epilogue_op = [&](const Instruction* u) {
        return hlo::IsElementwise(u->opcode) && SameDims(u, i);
      };
      GrowConsumers(
          p, p.GroupOf(i),
          [&](const Instruction* u) {
            if (!epilogue_op(u)) return false;
            if (!AddsEpilogueOutput(p, entry, p.GroupOf(i), u, epilogue_op)) return true;
            p.Decline(u, p.GroupOf(i),
                      "as an epilogue it would make the GEMM write a second full-size array; "
                      "its consumers compute it from the one array instead");
            return false;
          },
          "elementwise on %" + i->name + "'s result: applied to each output tile while it is "
          "in registers, so only the final value is written");
    }
  }
  // 3. Reduction chains: producers of the reduced input, ops on the kept (row) shape, broadcasts
  //    back to the input shape, elementwise ops there, and further reduces of the same rows.
  {
    for (const Instruction* r : order) {
      if (!IsSimpleReduce(r) || !p.InKernel(r)) continue;
      if (!Choose(options, "chain:" + r->name, options.fuse_reduction_chains)) continue;
      int g = p.GroupOf(r);
      if (p.Members(g).size() > 1 && p.Hero(g) != r) continue;  // already part of a chain
      const Instruction* input = r->operands[0];
      auto row_compatible = [&](const Instruction* u) {
        if (IsSimpleReduce(u)) {
          return u->operands[0]->shape.dims() == input->shape.dims() &&
                 u->dimensions == r->dimensions;
        }
        if (!IsLoopOp(u)) return false;
        // Ops on the input (element) shape or on the kept (row) shape; broadcasts and reshapes
        // between the two.
        return u->shape.dims() == input->shape.dims() || u->shape.dims() == r->shape.dims() ||
               u->shape.num_elements() == r->shape.num_elements();
      };
      GrowConsumers(p, g, row_compatible,
                    "works on the rows %" + r->name + " reduces (or their elements): the chain "
                    "runs in one pass over each row");
      GrowProducers(
          p, g,
          [&](const Instruction* op) { return IsLoopOp(op) && op->opcode != Opcode::kConcatenate; },
          "feeds only this reduction: computed as the rows are read, never stored");
    }
  }
  // 3b. Reduction kernels over the same rows where one feeds the other (13p: the one-hot pick
  //     of each row's logit and the row's logsumexp, subtracted) merge, so that one loop over
  //     the rows reads the input once for both.
  if (options.fuse_reduction_chains) MergeRowReductionKernels(p, order);
  // 3c. A dot's row reductions into the dot's kernel, computed by the GEMM's tiles.
  FuseRowReductions(p, entry, order, options);
  // 3d. A dot's group norm into the dot's kernel, run group by group in the GEMM's tiles.
  FuseSegmentEpilogues(p, entry, order, options);
  // 4. Loop fusion: a loop op joins its consumers' kernel when they all share one kernel that is
  //    not a contraction (where it would be recomputed per multiply-add) or a standalone op.
  for (auto it = order.rbegin(); it != order.rend() && Choose(options, "loop", true); ++it) {
    const Instruction* i = *it;
    if (!p.InKernel(i) || !IsLoopOp(i) || p.Members(p.GroupOf(i)).size() != 1) continue;
    const auto& users = p.Users(i);
    if (users.empty() || !p.InKernel(users[0])) continue;
    int g = p.GroupOf(users[0]);
    if (!p.AllUsersIn(i, g) || p.IsStandaloneGroup(g)) continue;
    const Instruction* hero = p.Hero(g);
    if (hero && IsContraction(hero) && !IsCheapOperandProducer(i)) {
      p.Decline(i, g, "inside a GEMM it would be recomputed for every multiply-add that reads "
                      "it; a loop kernel computes it once");
      continue;
    }
    p.TryMerge(p.GroupOf(i), g,
               "all its users are in this kernel: computed where it is used, never stored");
  }
  return PlanFromDecisions(module, p.Decisions());
}


Result<std::vector<FusionChoice>> FusionChoicesOf(const hlo::Module& module,
                                                  const FusionOptions& options) {
  if (!module.entry()) return InvalidArgument("module has no ENTRY computation");
  MK_ASSIGN_OR_RETURN(FusionPlan base, PlanFusion(module, options));
  const std::string base_key = PartitionKey(base);
  struct Key {
    std::string key, description;
  };
  std::vector<Key> keys;
  for (const auto& inst : module.entry()->instructions()) {
    const Instruction* i = inst.get();
    const std::string n = "%" + i->name;
    if (IsContraction(i)) {
      keys.push_back({"operands:" + i->name,
                      "compute " + n + "'s operand producers (converts, broadcasts ...) in its kernel"});
      keys.push_back({"epilogue:" + i->name,
                      "apply the elementwise ops on " + n + "'s result to its tiles in registers "
                      "(else they are a pass of their own)"});
    }
    if (i->opcode == Opcode::kDot) {
      keys.push_back({"row_reductions:" + i->name,
                      "reduce " + n + "'s rows in the GEMM's tiles (else a reduction kernel after it)"});
      keys.push_back({"segment:" + i->name,
                      "normalize " + n + "'s column groups in the GEMM's tiles (else a kernel after it)"});
    }
    if (IsSimpleReduce(i)) {
      keys.push_back({"chain:" + i->name,
                      "run the chain around " + n + " (its producers, the ops on its rows) as one kernel"});
    }
  }
  keys.push_back({"loop", "let loop ops join the kernel of their consumers"});
  std::vector<FusionChoice> out;
  for (const Key& k : keys) {
    if (options.overrides.count(k.key)) continue;  // decided by the caller already
    std::string with[2];
    for (int fuse = 0; fuse < 2; ++fuse) {
      FusionOptions o = options;
      o.overrides[k.key] = fuse == 1;
      Result<FusionPlan> plan = PlanFusion(module, o);
      if (plan.ok()) with[fuse] = PartitionKey(*plan);
    }
    if (with[0].empty() || with[1].empty() || with[0] == with[1]) continue;
    if (with[0] != base_key && with[1] != base_key) continue;
    out.push_back({k.key, with[1] == base_key, k.description});
  }
  return out;
}

}  // namespace mk::analysis
