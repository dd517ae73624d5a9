#include "analysis/segment_epilogue.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "analysis/fusion_plan.h"
#include "analysis/test_modules.h"

namespace mk::analysis {
namespace {

using testing::Entry;
using testing::Named;
using testing::Parse;

// A GEMM [8,64] with a bias, then a group norm over `groups` groups of 64 / groups columns
// (29k's form: mean, the variance about it, the normalized value), then `tail`.
std::string GroupNorm(int groups, const std::string& tail = "") {
  const std::string g = std::to_string(groups), s = std::to_string(64 / groups);
  const std::string gs = "f32[8," + g + "," + s + "]", rows = "f32[8," + g + "]";
  return "HloModule m\n"
         "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT r = f32[] add(a, b)\n}\n"
         "ENTRY e {\n"
         "  x = f32[8,16] parameter(0)\n"
         "  w = f32[16,64] parameter(1)\n"
         "  bias = f32[64] parameter(2)\n"
         "  zero = f32[] constant(0)\n"
         "  n = f32[] constant(" + s + ")\n"
         "  dot = f32[8,64] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
         "  bb = f32[8,64] broadcast(bias), dimensions={1}\n"
         "  y = f32[8,64] add(dot, bb)\n"
         "  r = " + gs + " reshape(y)\n"
         "  sum = " + rows + " reduce(r, zero), dimensions={2}, to_apply=add\n"
         "  nb = " + rows + " broadcast(n), dimensions={}\n"
         "  mean = " + rows + " divide(sum, nb)\n"
         "  mb = " + gs + " broadcast(mean), dimensions={0,1}\n"
         "  d = " + gs + " subtract(r, mb)\n"
         "  sq = " + gs + " multiply(d, d)\n"
         "  ss = " + rows + " reduce(sq, zero), dimensions={2}, to_apply=add\n"
         "  var = " + rows + " divide(ss, nb)\n"
         "  inv = " + rows + " rsqrt(var)\n"
         "  ib = " + gs + " broadcast(inv), dimensions={0,1}\n"
         "  out = " + gs + " multiply(d, ib)\n" +
         (tail.empty() ? "  ROOT o = " + gs + " copy(out)\n" : tail) + "}\n";
}

TEST(SegmentEpilogueTest, GroupNormAfterAGemmRunsPerGroup) {
  for (int groups : {1, 2, 4, 16}) {
    auto m = Parse(GroupNorm(groups));
    ASSERT_TRUE(m);
    const hlo::Instruction* root = m->entry()->root();
    auto e = PlanSegmentEpilogue(Named(*m, "dot"), Entry(*m),
                                 [root](const hlo::Instruction* i) { return i == root; });
    ASSERT_TRUE(e) << groups;
    EXPECT_EQ(e->value, Named(*m, "y"));
    EXPECT_EQ(e->row_dims, 1);
    EXPECT_EQ(e->rows, (std::vector<int64_t>{8, groups}));
    EXPECT_EQ(e->groups, groups);
    EXPECT_EQ(e->segment, 64 / groups);
    EXPECT_EQ(e->tile_ops, (std::set<const hlo::Instruction*>{Named(*m, "y")}));
    EXPECT_EQ(e->seeds, (std::set<const hlo::Instruction*>{Named(*m, "r")}));
    EXPECT_EQ(e->outputs, (std::vector<const hlo::Instruction*>{root}));
    EXPECT_EQ(std::count_if(e->program.begin(), e->program.end(),
                            [](const hlo::Instruction* i) {
                              return i->opcode == hlo::Opcode::kReduce;
                            }),
              2);
  }
}

TEST(SegmentEpilogueTest, RejectsWhatTheTilesCannotRun) {
  struct Case {
    const char* why;
    std::string text;
  };
  const std::vector<Case> cases = {
      {"a transpose of the GEMM's rows reads other rows",
       GroupNorm(4, "  t = f32[64,8] transpose(y), dimensions={1,0}\n"
                    "  ROOT o = (f32[8,4,16], f32[64,8]) tuple(out, t)\n")},
      {"the group passes read two values of the tile chain",
       GroupNorm(4, "  r2 = f32[8,4,16] reshape(dot)\n"
                    "  o2 = f32[8,4,16] add(out, r2)\n"
                    "  ROOT o = f32[8,4,16] copy(o2)\n")},
      {"an output of the group passes is not row-shaped",
       GroupNorm(4, "  ob = f32[8,64] reshape(out)\n"
                    "  ROOT o = f32[8,64] copy(ob)\n")},
  };
  for (const Case& c : cases) {
    auto m = Parse(c.text);
    ASSERT_TRUE(m) << c.why;
    auto is_output = [&m](const hlo::Instruction* i) { return testing::IsEntryOutput(*m, i); };
    EXPECT_FALSE(PlanSegmentEpilogue(Named(*m, "dot"), Entry(*m), is_output)) << c.why;
  }
  // No reduce after the GEMM: nothing to run per group.
  auto m = Parse(
      "HloModule m\nENTRY e {\n  x = f32[8,16] parameter(0)\n  w = f32[16,64] parameter(1)\n"
      "  dot = f32[8,64] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
      "  r = f32[8,4,16] reshape(dot)\n  ROOT o = f32[8,4,16] negate(r)\n}\n");
  ASSERT_TRUE(m);
  const hlo::Instruction* root = m->entry()->root();
  EXPECT_FALSE(PlanSegmentEpilogue(Named(*m, "dot"), Entry(*m),
                                   [root](const hlo::Instruction* i) { return i == root; }));
}

TEST(SegmentEpilogueTest, PlannerMergesGroupsOfTheOptionsWidths) {
  // By default groups of 64 columns (one group per row here) merge into the GEMM's kernel and
  // shorter ones stay a reduction kernel; with the range widened to 16, 4 groups of 16 and 2 of
  // 32 merge too, and 16 groups of 4 do not. Off: never.
  auto merged = [](int groups, const FusionOptions& o) {
    auto m = Parse(GroupNorm(groups));
    auto plan = PlanFusion(*m, o);
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    if (plan->kernels.size() == 1) {
      EXPECT_EQ(plan->kernels[0].family, KernelFamily::kContraction);
    }
    return plan->kernels.size() == 1;
  };
  EXPECT_TRUE(merged(1, {}));
  EXPECT_FALSE(merged(2, {}));
  EXPECT_FALSE(merged(4, {}));
  FusionOptions wide;
  wide.segment_min = 16;
  EXPECT_TRUE(merged(2, wide));
  EXPECT_TRUE(merged(4, wide));
  EXPECT_FALSE(merged(16, wide));
  FusionOptions off;
  off.fuse_segment_epilogues = false;
  EXPECT_FALSE(merged(1, off));
}

}  // namespace
}  // namespace mk::analysis
