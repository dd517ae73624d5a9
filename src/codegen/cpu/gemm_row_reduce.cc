#include "codegen/cpu/gemm_row_reduce.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "codegen/cpu/element_chain.h"
#include "codegen/cpu/gemm_emitter.h"
#include "codegen/cpu/reduce_emit.h"

namespace mk::codegen::cpu {

using analysis::RowReduce;
using hlo::Instruction;

namespace {

// Partial values per row: one AVX-512 vector of f32 (two AVX2 ones).
constexpr int kLanes = 16;

std::string S(int64_t v) { return std::to_string(v); }

// One reduce's names in the generated code.
struct Names {
  const RowReduce* r = nullptr;
  std::string fn;        // the combiner's scalar function
  std::string identity;
  std::string init;      // the reduce's init value, combined once with the row's result
  std::string partial;   // [threads][rows][kLanes] partial values
  std::string lane;      // the lane's running value in the tile row's simd loop
  std::string statements, value;  // its input's element at (row, gm_col)
  int rescale = -1;      // the maximum reduce a softmax sum is relative to (index in names)
  bool target = false;   // a softmax sum is relative to this maximum
};

// The loop over the 16 lanes of the row's partial values of the reduces `ks`: lane q takes the
// tile row's columns q, q + 16, ..., so the partials stay in registers and the columns need no
// horizontal reduction. For a full tile (NR a multiple of 16) it is a simd loop with the NR / 16
// columns of a lane written out: as an inner loop (even under `#pragma GCC unroll`), or with
// the edge tiles' bounds checks in it, the lane loop stayed scalar. Edge tiles take the same
// loop, checked and scalar. Every access to the partials is in a simdlen(16) loop: one vector
// width everywhere, where a 16-float copy became two 32-byte stores that a 64-byte load then
// waited on (store forwarding fails).
void EmitLaneLoop(std::ostream& o, const std::vector<Names>& names, const std::vector<int>& ks,
                  const std::vector<int64_t>& dims, int64_t row_dims, int64_t nr,
                  const std::string& before, const std::string& element,
                  const std::string& after, const std::string& clauses) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  auto loop = [&](bool checked) {
    o << "for (int gm_q = 0; gm_q < " << kLanes << "; ++gm_q) {\n" << before;
    for (int k : ks) {
      const Names& n = names[static_cast<size_t>(k)];
      o << "float " << n.lane << " = " << n.partial << "[gm_pi + gm_q];\n";
    }
    for (int64_t cc = 0; cc < (nr + kLanes - 1) / kLanes; ++cc) {
      o << "{\nconst int64_t gm_c = " << cc * kLanes << " + gm_q;\n"
        << (checked ? "if (gm_c < gm_nv) {\n" : "{\n")
        << "const int64_t gm_col = gm_j + gm_c;\n";
      if (rank - row_dims == 1) o << "const int64_t i" << rank - 1 << " = gm_col;\n";
      else EmitIndexVars(o, "", "gm_col", dims, static_cast<size_t>(row_dims), dims.size());
      o << "const float gm_dv = gm_rowp[gm_c];\n" << element;
      for (int k : ks) {
        const Names& n = names[static_cast<size_t>(k)];
        o << "{ " << n.statements << n.lane << " = " << n.fn << "(" << n.lane << ", " << n.value
          << "); }\n";
      }
      o << "}\n}\n";
    }
    o << after;
    for (int k : ks) {
      const Names& n = names[static_cast<size_t>(k)];
      o << n.partial << "[gm_pi + gm_q] = " << n.lane << ";\n";
    }
    o << "}\n";
  };
  if (nr % kLanes == 0) {
    o << "if (gm_nv == " << nr << ") {\n#pragma omp simd simdlen(" << kLanes << ")" << clauses
      << "\n";
    loop(false);
    o << "} else {\n";
    loop(true);
    o << "}\n";
  } else {
    loop(true);
  }
}

// The statements run per tile row (TileEpilogue::row). Each lane of a row keeps its own
// partial value; a softmax sum's lane is relative to the same lane's running maximum, so no
// tile row needs a horizontal reduction: the lanes are folded once, after the GEMM.
std::string RowCode(const std::vector<Names>& names, const std::vector<int64_t>& dims,
                    int64_t row_dims, int64_t rows, int64_t nr) {
  std::vector<int> targets, rest;
  for (size_t k = 0; k < names.size(); ++k) {
    (names[k].target ? targets : rest).push_back(static_cast<int>(k));
  }
  std::ostringstream o;
  o << "{\nconst int64_t gm_pi = (gm_tid * " << rows << " + gm_row) * " << kLanes << ";\n";
  if (!targets.empty()) {
    // The maxima first: the softmax sums below are taken relative to the raised maxima. Each
    // lane's old maximum is kept (per thread, gm_*_old) for the rescaling.
    std::string before;
    for (int k : targets) {
      const Names& n = names[static_cast<size_t>(k)];
      before += n.lane + "_old[gm_q] = " + n.partial + "[gm_pi + gm_q];\n";
    }
    EmitLaneLoop(o, names, targets, dims, row_dims, nr, before, "", "", "");
    // Whether a lane's maximum rose (rare after a row's first tiles).
    o << "int gm_rose = 0;\n";
    for (int k : targets) {
      const Names& n = names[static_cast<size_t>(k)];
      o << "#pragma omp simd simdlen(" << kLanes << ") reduction(|:gm_rose)\n"
        << "for (int gm_q = 0; gm_q < " << kLanes << "; ++gm_q) gm_rose |= " << n.lane
        << "_old[gm_q] != " << n.partial << "[gm_pi + gm_q];\n";
    }
  }
  if (!rest.empty()) {
    std::set<int> maxima;
    for (int k : rest) {
      const Names& n = names[static_cast<size_t>(k)];
      if (n.rescale < 0) continue;
      maxima.insert(n.rescale);
      // A lane whose maximum rose: its sum so far was relative to the old one. Rare after the
      // first tiles of a row, so the exp is skipped when no lane rose.
      const Names& m = names[static_cast<size_t>(n.rescale)];
      o << "if (gm_rose) {\n#pragma omp simd simdlen(" << kLanes << ")\n"
        << "for (int gm_q = 0; gm_q < " << kLanes << "; ++gm_q) {\n"
        << "const float gm_o = " << m.lane << "_old[gm_q], gm_n = " << m.partial
        << "[gm_pi + gm_q];\n"
        << "if (gm_o != gm_n) " << n.partial << "[gm_pi + gm_q] *= mkrt::vexp(gm_o - gm_n);\n"
        << "}\n}\n";
    }
    // The element statements read the maximum from a copy in the column's own block: the
    // lambdas capture what they read by reference, and a captured variable of the lane loop's
    // body kept that loop from vectorizing.
    std::string before, element;
    for (int k : maxima) {
      const Names& m = names[static_cast<size_t>(k)];
      before += "const float " + m.lane + " = " + m.partial + "[gm_pi + gm_q];\n";
      element += "const float " + m.lane + "_c = " + m.lane + ";\n";
    }
    EmitLaneLoop(o, names, rest, dims, row_dims, nr, before, element, "", "");
  }
  o << "}\n";
  return o.str();
}

// After the GEMM: each row's lanes of every thread, and the init value, into the results.
void EmitCombine(std::ostream& o, const std::vector<Names>& names, const RowReduceEmission& rr,
                 int64_t rows) {
  const std::string row = S(rows * kLanes), lanes = S(kLanes);
  o << "  for (int64_t gm_i = 0; gm_i < " << rows << "; ++gm_i) {\n";
  // Maxima before the sums relative to them.
  std::vector<size_t> order;
  for (size_t k = 0; k < names.size(); ++k) if (names[k].target) order.push_back(k);
  for (size_t k = 0; k < names.size(); ++k) if (!names[k].target) order.push_back(k);
  for (size_t k : order) {
    const Names& n = names[k];
    o << "    {\n      float gm_v = " << n.identity << ";\n"
      << "      for (int64_t gm_t = 0; gm_t < " << rr.threads << "; ++gm_t) {\n"
      << "        const int64_t gm_at = gm_t * " << row << " + gm_i * " << lanes << ";\n";
    if (n.rescale >= 0) {
      const Names& m = names[static_cast<size_t>(n.rescale)];
      o << "        const float gm_m = " << rr.results.at(m.r->reduce) << "[gm_i];\n"
        << "        for (int gm_q = 0; gm_q < " << lanes << "; ++gm_q) {\n"
        << "          const float gm_pm = " << m.partial << "[gm_at + gm_q];\n"
        << "          gm_v = " << n.fn << "(gm_v, " << n.partial
        << "[gm_at + gm_q] * (gm_pm == gm_m ? 1.0f : std::exp(gm_pm - gm_m)));\n"
        << "        }\n";
    } else {
      o << "        for (int gm_q = 0; gm_q < " << lanes << "; ++gm_q) gm_v = " << n.fn
        << "(gm_v, " << n.partial << "[gm_at + gm_q]);\n";
    }
    o << "      }\n      " << rr.results.at(n.r->reduce) << "[gm_i] = " << n.fn << "(" << n.init
      << ", gm_v);\n    }\n";
  }
  o << "  }\n";
}

}  // namespace

std::optional<analysis::RowReduceEpilogue> KernelRowReduceEpilogue(
    const analysis::Kernel& kernel) {
  if (kernel.family != analysis::KernelFamily::kContraction || !kernel.hero) return std::nullopt;
  auto is_output = [&kernel](const Instruction* i) {
    return std::find(kernel.outputs.begin(), kernel.outputs.end(), i) != kernel.outputs.end();
  };
  auto plan = analysis::PlanRowReduceEpilogue(kernel.hero, kernel.instructions, is_output);
  if (!plan) return std::nullopt;
  // Every op on the tile's elements joins the statement chains (element_chain.h), where the
  // dot is the tile's value; one read through its lambda would call the dot's, which is not
  // stored.
  for (const Instruction* op : plan->ops) {
    if (!ReadsOperandsAtSameIndex(*op)) return std::nullopt;
  }
  return plan;
}

bool IsRowReduce(const analysis::RowReduceEpilogue& plan, const Instruction* inst) {
  return std::any_of(plan.reduces.begin(), plan.reduces.end(),
                     [inst](const RowReduce& r) { return r.reduce == inst; });
}

std::vector<const Instruction*> RowReduceEmissionOrder(const analysis::Kernel& kernel,
                                                      const analysis::RowReduceEpilogue& plan) {
  // Computed by the tiles or on the way to them: the reduces, the ops on the tile's elements
  // and the row broadcasts of the maxima that softmax sums are relative to.
  std::set<const Instruction*> tiles(plan.ops.begin(), plan.ops.end());
  std::set<const Instruction*> results;
  for (const RowReduce& r : plan.reduces) {
    tiles.insert(r.reduce);
    results.insert(r.reduce);
    for (const Instruction* b = r.row_max; b && b != r.rescale_by; b = b->operands[0]) {
      tiles.insert(b);
    }
  }
  std::vector<const Instruction*> before, after;
  std::set<const Instruction*> late;  // reads a reduce's result outside the tiles
  for (const Instruction* i : kernel.instructions) {
    bool reads = false;
    for (const Instruction* op : i->operands) reads = reads || results.count(op) || late.count(op);
    if (reads && !tiles.count(i)) late.insert(i);
    (late.count(i) ? after : before).push_back(i);
  }
  before.insert(before.end(), after.begin(), after.end());
  return before;
}

Status EmitFusedRowReduce(FunctionEmitter& f, const Instruction& reduce) {
  RowReduceEmission& rr = *f.row_reduce();
  MK_ASSIGN_OR_RETURN(std::string ptr, f.StorageFor(&reduce, 0, reduce.shape));
  rr.results[&reduce] = ptr;
  const std::string name = "v" + f.module().Id(&reduce);
  MK_RETURN_IF_ERROR(f.DefineLoadLambda(name, reduce.shape, ptr));
  f.SetFn(&reduce, name);
  if (&reduce != rr.plan.reduces.back().reduce) return Status::Ok();

  // The last reduce: every input chain is defined. Partials, the GEMM, the combination.
  const analysis::RowReduceEpilogue& plan = rr.plan;
  const int64_t rows = reduce.shape.num_elements();
  std::vector<Names> names(plan.reduces.size());
  std::map<const Instruction*, int> index;
  for (size_t k = 0; k < plan.reduces.size(); ++k) {
    index[plan.reduces[k].reduce] = static_cast<int>(k);
  }
  auto& o = f.out();
  for (size_t k = 0; k < plan.reduces.size(); ++k) {
    const RowReduce& r = plan.reduces[k];
    Names& n = names[k];
    n.r = &r;
    MK_ASSIGN_OR_RETURN(n.fn, f.module().ScalarFunction(r.reduce->called[0]));
    n.identity = *CombinerIdentity(Combiner{r.combiner, hlo::DType::kF32});  // add, max, min
    n.init = CallExpr(f.Fn(r.reduce->operands[1]), {});
    n.partial = f.NewName("gm_rp");
    n.lane = n.partial + "_lane";
    std::map<const Instruction*, std::string> given{{plan.dot, "gm_dv"}};
    if (r.rescale_by) {
      n.rescale = index.at(r.rescale_by);
      names[static_cast<size_t>(n.rescale)].target = true;
      given[r.row_max] = names[static_cast<size_t>(n.rescale)].lane + "_c";
    }
    MK_ASSIGN_OR_RETURN(n.statements,
                        ElementStatements(f, r.reduce->operands[0], given, &n.value));
    const int64_t count = rr.threads * rows * kLanes;
    o << "  mkrt::Scratch " << n.partial << "_mem(" << count * 4 << ");\n"
      << "  float* const " << n.partial << " = static_cast<float*>(" << n.partial << "_mem.p);\n"
      << "  for (int64_t gm_q = 0; gm_q < " << count << "; ++gm_q) " << n.partial
      << "[gm_q] = " << n.identity << ";\n";
  }
  TileEpilogue tile;
  tile.dims = plan.dot->shape.dims();
  tile.region = "      const int64_t gm_tid = omp_get_thread_num();\n";
  for (const Names& n : names) {
    if (n.target) tile.region += "      alignas(64) float " + n.lane + "_old[" + S(kLanes) + "];\n";
  }
  tile.row = [names, dims = tile.dims, row_dims = plan.row_dims, rows](int64_t nr) {
    return RowCode(names, dims, row_dims, rows, nr);
  };
  auto emit = f.TakeDeferredGemm();
  if (!emit) return CannotLower(reduce, "internal: a row reduction without its GEMM");
  MK_RETURN_IF_ERROR(emit(&tile));
  EmitCombine(o, names, rr, rows);
  return Status::Ok();
}

}  // namespace mk::codegen::cpu
