#include "analysis/row_reduce_epilogue.h"

#include <gtest/gtest.h>


#include "analysis/fusion_plan.h"
#include "analysis/test_modules.h"

namespace mk::analysis {
namespace {

using testing::Entry;
using testing::Named;
using testing::Parse;

// `body` goes into an entry computation after x (f32[8,16]), w (f32[16,32]) and
// dot = x . w (f32[8,32]); the regions max/add/min are declared.
std::string Module(const std::string& body) {
  return R"(
HloModule m
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] maximum(a, b)
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
mul {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] multiply(a, b)
}
ENTRY main {
  x = f32[8,16] parameter(0)
  w = f32[16,32] parameter(1)
  dot = f32[8,32] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ninf = f32[] constant(-inf)
  zero = f32[] constant(0)
)" + body + "}\n";
}

// The cross-entropy shape of 13p: a logsumexp of each row and the row's picked logit.
constexpr const char* kLogsumexpAndPick = R"(
  m = f32[8] reduce(dot, ninf), dimensions={1}, to_apply=max
  m1 = f32[8,1] reshape(m)
  m2 = f32[8,1] broadcast(m1), dimensions={0,1}
  m3 = f32[8] reshape(m2)
  mb = f32[8,32] broadcast(m3), dimensions={0}
  d = f32[8,32] subtract(dot, mb)
  e = f32[8,32] exponential(d)
  s = f32[8] reduce(e, zero), dimensions={1}, to_apply=add
  l = f32[8] log(s)
  lse = f32[8] add(l, m)
  labels = s32[8] parameter(2)
  iota = s32[8,32] iota(), iota_dimension=1
  lb = s32[8,32] broadcast(labels), dimensions={0}
  hit = pred[8,32] compare(iota, lb), direction=EQ
  zb = f32[8,32] broadcast(zero), dimensions={}
  pick = f32[8,32] select(hit, dot, zb)
  p = f32[8] reduce(pick, zero), dimensions={1}, to_apply=add
  ROOT loss = f32[8] subtract(lse, p)
)";

std::optional<RowReduceEpilogue> Plan(const hlo::Module& m) {
  const hlo::Instruction* root = m.entry()->root();
  return PlanRowReduceEpilogue(Named(m, "dot"), Entry(m),
                               [root](const hlo::Instruction* i) { return i == root; });
}

TEST(RowReduceEpilogueTest, LogsumexpAndPickedLogitAreComputedByTheTiles) {
  auto m = Parse(Module(kLogsumexpAndPick));
  ASSERT_TRUE(m);
  auto e = Plan(*m);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->row_dims, 1);
  ASSERT_EQ(e->reduces.size(), 3u);
  EXPECT_EQ(e->reduces[0].reduce->name, "m");
  EXPECT_EQ(e->reduces[0].combiner, hlo::Opcode::kMaximum);
  EXPECT_EQ(e->reduces[0].rescale_by, nullptr);
  // The softmax sum is kept relative to the running maximum, through its row broadcast.
  EXPECT_EQ(e->reduces[1].reduce->name, "s");
  ASSERT_NE(e->reduces[1].rescale_by, nullptr);
  EXPECT_EQ(e->reduces[1].rescale_by->name, "m");
  EXPECT_EQ(e->reduces[1].row_max->name, "mb");
  EXPECT_EQ(e->reduces[2].reduce->name, "p");
  EXPECT_EQ(e->reduces[2].rescale_by, nullptr);
  // The per-element ops; the row ops after the reduces (log, add, subtract) are not.
  for (const char* op : {"d", "e", "pick"}) EXPECT_TRUE(e->ops.count(Named(*m, op))) << op;
  // Not: what does not read the GEMM (the label compare, computed per element where it is
  // read), the row broadcast of the maximum and the row ops after the reduces.
  for (const char* op : {"hit", "mb", "l", "lse", "loss"}) {
    EXPECT_FALSE(e->ops.count(Named(*m, op))) << op;
  }
}

TEST(RowReduceEpilogueTest, RejectsWhatTilesCannotComputeExactly) {
  struct Case {
    const char* why;
    std::string body;
  };
  const std::vector<Case> cases = {
      {"a reduce over the rows (M), not N",
       "  ROOT c = f32[32] reduce(dot, zero), dimensions={0}, to_apply=add\n"},
      {"a combiner other than add, maximum, minimum",
       "  ROOT c = f32[8] reduce(dot, zero), dimensions={1}, to_apply=mul\n"},
      {"a sum of squares about the row maximum (not the softmax form)",
       "  m = f32[8] reduce(dot, ninf), dimensions={1}, to_apply=max\n"
       "  mb = f32[8,32] broadcast(m), dimensions={0}\n"
       "  d = f32[8,32] subtract(dot, mb)\n"
       "  q = f32[8,32] multiply(d, d)\n"
       "  ROOT s = f32[8] reduce(q, zero), dimensions={1}, to_apply=add\n"},
      {"exp(x - max) broadcast along the columns, not the rows",
       "  x2 = f32[32,16] parameter(2)\n"
       "  sq = f32[32,32] dot(x2, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
       "  m = f32[32] reduce(sq, ninf), dimensions={1}, to_apply=max\n"
       "  mb = f32[32,32] broadcast(m), dimensions={1}\n"
       "  d = f32[32,32] subtract(sq, mb)\n"
       "  e = f32[32,32] exponential(d)\n"
       "  ROOT s = f32[32] reduce(e, zero), dimensions={1}, to_apply=add\n"},
      {"a softmax: exp(x - max) / sum is itself a value of the GEMM's dims",
       "  m = f32[8] reduce(dot, ninf), dimensions={1}, to_apply=max\n"
       "  mb = f32[8,32] broadcast(m), dimensions={0}\n"
       "  d = f32[8,32] subtract(dot, mb)\n"
       "  e = f32[8,32] exponential(d)\n"
       "  s = f32[8] reduce(e, zero), dimensions={1}, to_apply=add\n"
       "  sb = f32[8,32] broadcast(s), dimensions={0}\n"
       "  ROOT y = f32[8,32] divide(e, sb)\n"},
      {"the GEMM's result is an output",
       "  c = f32[8] reduce(dot, zero), dimensions={1}, to_apply=add\n"
       "  ROOT t = (f32[8,32], f32[8]) tuple(dot, c)\n"},
  };
  for (const Case& c : cases) {
    auto m = Parse(Module(c.body));
    ASSERT_TRUE(m) << c.why;
    const hlo::Instruction* sq = Named(*m, "sq");
    auto is_output = [&m](const hlo::Instruction* i) { return testing::IsEntryOutput(*m, i); };
    auto e = PlanRowReduceEpilogue(sq ? sq : Named(*m, "dot"), Entry(*m), is_output);
    EXPECT_FALSE(e) << c.why;
  }
  // The column-broadcast case's twin, broadcast along the rows, is the softmax form.
  auto m = Parse(Module(
      "  x2 = f32[32,16] parameter(2)\n"
      "  sq = f32[32,32] dot(x2, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
      "  m = f32[32] reduce(sq, ninf), dimensions={1}, to_apply=max\n"
      "  mb = f32[32,32] broadcast(m), dimensions={0}\n"
      "  d = f32[32,32] subtract(sq, mb)\n"
      "  e = f32[32,32] exponential(d)\n"
      "  ROOT s = f32[32] reduce(e, zero), dimensions={1}, to_apply=add\n"));
  ASSERT_TRUE(m);
  const hlo::Instruction* root = m->entry()->root();
  EXPECT_TRUE(PlanRowReduceEpilogue(Named(*m, "sq"), Entry(*m),
                                    [root](const hlo::Instruction* i) { return i == root; }));
}

TEST(RowReduceEpilogueTest, PlannerMergesTheReductionKernelIntoTheGemm) {
  auto m = Parse(Module(kLogsumexpAndPick));
  ASSERT_TRUE(m);
  FusionOptions any_size;
  any_size.row_reduction_min_bytes = 0;
  auto plan = PlanFusion(*m, any_size);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->kernels.size(), 1u) << plan->Summary();
  EXPECT_EQ(plan->kernels[0].family, KernelFamily::kContraction);
  EXPECT_EQ(plan->kernels[0].hero->name, "dot");
  // Off, or a result (1 KiB) below the size where fusing starts (by default 32 MiB): the GEMM
  // stores its result and a reduction kernel reads it.
  FusionOptions off = any_size;
  off.fuse_row_reductions = false;
  FusionOptions larger;
  larger.row_reduction_min_bytes = 8 * 32 * 4 + 1;
  for (const FusionOptions& o : {off, FusionOptions{}, larger}) {
    auto separate = PlanFusion(*m, o);
    ASSERT_TRUE(separate.ok());
    EXPECT_EQ(separate->kernels.size(), 2u) << separate->Summary();
  }
  any_size.row_reduction_min_bytes = 8 * 32 * 4;  // exactly the result's size: fused
  auto fused = PlanFusion(*m, any_size);
  ASSERT_TRUE(fused.ok());
  EXPECT_EQ(fused->kernels.size(), 1u);

  // The search's choice "row_reductions:dot" (FusionChoicesOf): below the default threshold the
  // rules keep the reduction apart; the choice is listed as declined, and forcing it fuses.
  auto choices = FusionChoicesOf(*m);
  ASSERT_TRUE(choices.ok()) << choices.status().ToString();
  bool listed = false;
  for (const FusionChoice& c : *choices) {
    if (c.key != "row_reductions:dot") continue;
    listed = true;
    EXPECT_FALSE(c.planner_fuses);
  }
  EXPECT_TRUE(listed);
  FusionOptions forced;
  forced.overrides["row_reductions:dot"] = true;
  auto forced_plan = PlanFusion(*m, forced);
  ASSERT_TRUE(forced_plan.ok());
  EXPECT_EQ(forced_plan->kernels.size(), 1u) << forced_plan->Summary();
  FusionOptions refused = any_size;
  refused.overrides["row_reductions:dot"] = false;
  auto refused_plan = PlanFusion(*m, refused);
  ASSERT_TRUE(refused_plan.ok());
  EXPECT_EQ(refused_plan->kernels.size(), 2u) << refused_plan->Summary();

  // The notes say why, both ways: the GEMM's kernel names the size against the threshold.
  auto reasons = [](const Kernel& k, bool joined) {
    std::string all;
    for (const FusionNote& n : k.notes) {
      if (n.fused == joined) all += n.instruction + ": " + n.reason + "\n";
    }
    return all;
  };
  EXPECT_NE(reasons(fused->kernels[0], true).find("reduces the rows of %dot (1 KiB)"),
            std::string::npos) << reasons(fused->kernels[0], true);
  auto small = PlanFusion(*m, larger);
  ASSERT_TRUE(small.ok());
  EXPECT_NE(reasons(small->kernels[0], false).find("%dot's result (1024 B) is under 1025 B"),
            std::string::npos) << reasons(small->kernels[0], false);
}

}  // namespace
}  // namespace mk::analysis
