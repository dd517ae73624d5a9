#include <gtest/gtest.h>

#include <set>

#include "analysis/fusion_plan.h"
#include "hlo/parser.h"

namespace mk::analysis {
namespace {

std::unique_ptr<hlo::Module> Parse(const std::string& text) {
  auto m = hlo::ParseModule(text, "test.hlo");
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : nullptr;
}

const Kernel* KernelContaining(const FusionPlan& plan, const std::string& name) {
  for (const Kernel& k : plan.kernels) {
    for (const hlo::Instruction* i : k.instructions) {
      if (i->name == name) return &k;
    }
  }
  return nullptr;
}

constexpr const char* kGemmBiasRelu = R"(
HloModule gemm
ENTRY main {
  x = f32[8,16] parameter(0)
  w = f32[16,32] parameter(1)
  b = f32[32] parameter(2)
  dot = f32[8,32] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[8,32] broadcast(b), dimensions={1}
  add = f32[8,32] add(dot, bb)
  zero = f32[] constant(0)
  zb = f32[8,32] broadcast(zero), dimensions={}
  ROOT relu = f32[8,32] maximum(add, zb)
}
)";

TEST(FusionPlannerTest, GemmAbsorbsBiasAndActivation) {
  auto m = Parse(kGemmBiasRelu);
  ASSERT_TRUE(m);
  auto plan = PlanFusion(*m);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->kernels.size(), 1u) << plan->Summary();
  const Kernel& k = plan->kernels[0];
  EXPECT_EQ(k.family, KernelFamily::kContraction);
  EXPECT_EQ(k.hero->name, "dot");
  EXPECT_EQ(k.outputs.size(), 1u);
  EXPECT_EQ(k.outputs[0]->name, "relu");
  EXPECT_EQ(k.flops, 2 * 8 * 32 * 16 + 8 * 32 * 2);
  // Inputs: x, w, b and the constant zero.
  EXPECT_EQ(k.inputs.size(), 4u);
}

// The reason the planner noted for `instruction` in kernel `k` (fused or kept out), or "".
std::string NoteOf(const Kernel& k, const std::string& instruction, bool fused) {
  for (const FusionNote& n : k.notes) {
    if (n.instruction == instruction && n.fused == fused) return n.reason;
  }
  return "";
}

TEST(FusionPlannerTest, NotesSayWhyEachInstructionJoined) {
  auto m = Parse(kGemmBiasRelu);
  auto plan = PlanFusion(*m);
  ASSERT_TRUE(plan.ok());
  const Kernel& k = plan->kernels[0];
  EXPECT_NE(NoteOf(k, "add", true).find("elementwise on %dot's result"), std::string::npos);
  EXPECT_NE(NoteOf(k, "relu", true).find("elementwise on %dot's result"), std::string::npos);
  EXPECT_NE(NoteOf(k, "bb", true).find("broadcast"), std::string::npos);
  EXPECT_EQ(NoteOf(k, "dot", true), "");  // the hero started the kernel: it joined nothing
  for (const FusionNote& n : k.notes) EXPECT_TRUE(n.fused) << n.instruction << ": " << n.reason;

  // Without epilogue fusion nothing says add joined the GEMM.
  FusionOptions options;
  options.fuse_epilogues = false;
  auto apart = PlanFusion(*m, options);
  ASSERT_TRUE(apart.ok());
  EXPECT_EQ(NoteOf(*KernelContaining(*apart, "dot"), "add", true), "");

  // Hand-made decisions carry no notes; notes a changed plan contradicts are dropped.
  FusionDecisions moved = plan->decisions;
  ASSERT_FALSE(moved.notes.empty());
  moved.kernel_of["relu"] = 1;
  auto changed = PlanFromDecisions(*m, moved);
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_EQ(NoteOf(*KernelContaining(*changed, "dot"), "relu", true), "");
  EXPECT_NE(NoteOf(*KernelContaining(*changed, "dot"), "add", true), "");
  EXPECT_TRUE(KernelContaining(*changed, "relu")->notes.empty());
}

TEST(FusionPlannerTest, EpilogueFusionCanBeTurnedOff) {
  auto m = Parse(kGemmBiasRelu);
  FusionOptions options;
  options.fuse_epilogues = false;
  auto plan = PlanFusion(*m, options);
  ASSERT_TRUE(plan.ok());
  EXPECT_GT(plan->kernels.size(), 1u);
  EXPECT_NE(KernelContaining(*plan, "dot"), KernelContaining(*plan, "relu"));
}

// The logits feed a row max (not an epilogue op) and a one-hot select that is only summed:
// absorbing the select would make the GEMM write a second full array, so the select stays out
// and the row sum computes it on the fly. `scaled` is a module output: stored either way, so the
// GEMM's tile computes it. Swish's two users of `dot2` are both epilogue ops: both absorbed.
constexpr const char* kLogitsConsumers = R"(
HloModule logits
add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
max_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
ENTRY main {
  x = f32[8,16] parameter(0)
  w = f32[16,32] parameter(1)
  hot = pred[8,32] parameter(2)
  dot = f32[8,32] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  zero = f32[] constant(0)
  zb = f32[8,32] broadcast(zero), dimensions={}
  picked = f32[8,32] select(hot, dot, zb)
  sum = f32[8] reduce(picked, zero), dimensions={1}, to_apply=add_f32
  ninf = f32[] constant(-inf)
  mx = f32[8] reduce(dot, ninf), dimensions={1}, to_apply=max_f32
  two = f32[] constant(2)
  twob = f32[8,32] broadcast(two), dimensions={}
  scaled = f32[8,32] multiply(dot, twob)
  dot2 = f32[8,32] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  sig = f32[8,32] logistic(dot2)
  swish = f32[8,32] multiply(dot2, sig)
  ROOT out = (f32[8], f32[8], f32[8,32], f32[8,32]) tuple(sum, mx, scaled, swish)
}
)";

TEST(FusionPlannerTest, EpilogueOpsThatWouldAddAnOutputStayOut) {
  auto m = Parse(kLogitsConsumers);
  ASSERT_TRUE(m);
  auto plan = PlanFusion(*m);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  const Kernel* gemm = KernelContaining(*plan, "dot");
  ASSERT_NE(gemm, nullptr);
  EXPECT_NE(gemm, KernelContaining(*plan, "picked")) << plan->Summary();
  EXPECT_EQ(KernelContaining(*plan, "picked"), KernelContaining(*plan, "sum")) << plan->Summary();
  EXPECT_EQ(gemm, KernelContaining(*plan, "scaled")) << plan->Summary();
  // The GEMM's kernel says why `picked` is not its epilogue.
  EXPECT_NE(NoteOf(*gemm, "picked", false).find("second full-size array"), std::string::npos);
  const Kernel* swish = KernelContaining(*plan, "dot2");
  EXPECT_EQ(swish, KernelContaining(*plan, "sig")) << plan->Summary();
  EXPECT_EQ(swish, KernelContaining(*plan, "swish")) << plan->Summary();
  ASSERT_NE(swish, nullptr);
  EXPECT_EQ(swish->outputs.size(), 1u) << plan->Summary();
}

// Cross entropy per row: logsumexp(x) - the one-hot pick of x. The pick's row sum and the
// logsumexp's reduces cover the same rows, and one feeds the other (the subtraction): one kernel,
// one loop over the rows.
constexpr const char* kCrossEntropy = R"(
HloModule xent
add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
max_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
ENTRY main {
  x = f32[8,32] parameter(0)
  hot = pred[8,32] parameter(1)
  zero = f32[] constant(0)
  zb = f32[8,32] broadcast(zero), dimensions={}
  picked = f32[8,32] select(hot, x, zb)
  pick = f32[8] reduce(picked, zero), dimensions={1}, to_apply=add_f32
  ninf = f32[] constant(-inf)
  mx = f32[8] reduce(x, ninf), dimensions={1}, to_apply=max_f32
  mxb = f32[8,32] broadcast(mx), dimensions={0}
  sub = f32[8,32] subtract(x, mxb)
  e = f32[8,32] exponential(sub)
  se = f32[8] reduce(e, zero), dimensions={1}, to_apply=add_f32
  lg = f32[8] log(se)
  lse = f32[8] add(lg, mx)
  ROOT loss = f32[8] subtract(lse, pick)
}
)";

TEST(FusionPlannerTest, ReductionsOverTheSameRowsThatFeedEachOtherShareAKernel) {
  auto m = Parse(kCrossEntropy);
  ASSERT_TRUE(m);
  auto plan = PlanFusion(*m);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->kernels.size(), 1u) << plan->Summary();
  EXPECT_EQ(plan->kernels[0].family, KernelFamily::kReduction);
  // One of the two reductions' kernels joined the other because they walk the same rows.
  bool same_rows = false;
  for (const FusionNote& n : plan->kernels[0].notes) {
    same_rows |= n.reason.find("reduces the same rows as") != std::string::npos;
  }
  EXPECT_TRUE(same_rows);
}

constexpr const char* kSoftmax = R"(
HloModule softmax
max_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[4,64] parameter(0)
  ninf = f32[] constant(-inf)
  mx = f32[4] reduce(x, ninf), dimensions={1}, to_apply=max_f32
  mxb = f32[4,64] broadcast(mx), dimensions={0}
  sub = f32[4,64] subtract(x, mxb)
  e = f32[4,64] exponential(sub)
  zero = f32[] constant(0)
  sum = f32[4] reduce(e, zero), dimensions={1}, to_apply=add_f32
  sumb = f32[4,64] broadcast(sum), dimensions={0}
  ROOT out = f32[4,64] divide(e, sumb)
}
)";

TEST(FusionPlannerTest, SoftmaxIsOneReductionKernel) {
  auto m = Parse(kSoftmax);
  ASSERT_TRUE(m);
  auto plan = PlanFusion(*m);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->kernels.size(), 1u) << plan->Summary();
  EXPECT_EQ(plan->kernels[0].family, KernelFamily::kReduction);
  EXPECT_EQ(plan->kernels[0].instructions.size(), 7u);  // constants are inputs
}

// A group norm as 25k writes it: the channels reshaped into groups (merging the minor dims),
// per-group statistics, and the normalized values reshaped back.
constexpr const char* kGroupNorm = R"(
HloModule group_norm
add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[2,24,14,14] parameter(0)
  g = f32[2,8,588] reshape(x)
  zero = f32[] constant(0)
  sum = f32[2,8] reduce(g, zero), dimensions={2}, to_apply=add_f32
  n = f32[] constant(588)
  nb = f32[2,8] broadcast(n), dimensions={}
  mean = f32[2,8] divide(sum, nb)
  mb = f32[2,8,588] broadcast(mean), dimensions={0,1}
  c = f32[2,8,588] subtract(g, mb)
  ROOT y = f32[2,24,14,14] reshape(c)
}
)";

TEST(FusionPlannerTest, LaneReshapesAreTheOnesMovingDataAcrossTheLastDim) {
  auto m = Parse(kGroupNorm);
  ASSERT_TRUE(m);
  auto inst = [&](const std::string& name) { return m->entry()->FindInstruction(name); };
  EXPECT_TRUE(IsLaneReshape(*inst("g")));   // [2,24,14,14] -> [2,8,588]
  EXPECT_TRUE(IsLaneReshape(*inst("y")));   // and back
  EXPECT_FALSE(IsLaneReshape(*inst("mb")));  // a broadcast
  auto row = Parse(R"(
HloModule r
ENTRY main {
  x = f32[2,8] parameter(0)
  a = f32[2,8,1] reshape(x)
  b = f32[16] reshape(a)
  c = f32[4,4,128] parameter(1)
  ROOT d = f32[16,128] reshape(c)
}
)");
  ASSERT_TRUE(row);
  EXPECT_FALSE(IsLaneReshape(*row->entry()->FindInstruction("a")));  // a trailing 1 added
  EXPECT_TRUE(IsLaneReshape(*row->entry()->FindInstruction("b")));   // [2,8,1] -> [16]: 1 -> 16
  EXPECT_FALSE(IsLaneReshape(*row->entry()->FindInstruction("d")));  // the last dim kept
}

TEST(FusionPlannerTest, LaneReshapesStayApartWhenTheTargetAsks) {
  auto m = Parse(kGroupNorm);
  ASSERT_TRUE(m);
  auto fused = PlanFusion(*m);
  ASSERT_TRUE(fused.ok()) << fused.status().ToString();
  EXPECT_EQ(KernelContaining(*fused, "g"), KernelContaining(*fused, "sum")) << fused->Summary();
  FusionOptions tpu;
  tpu.fuse_lane_reshapes = false;
  auto apart = PlanFusion(*m, tpu);
  ASSERT_TRUE(apart.ok()) << apart.status().ToString();
  const Kernel* g = KernelContaining(*apart, "g");
  const Kernel* y = KernelContaining(*apart, "y");
  ASSERT_TRUE(g && y);
  EXPECT_EQ(g->instructions.size(), 1u) << apart->Summary();
  EXPECT_EQ(y->instructions.size(), 1u) << apart->Summary();
  // The statistics and the centring are still one reduction kernel.
  EXPECT_EQ(KernelContaining(*apart, "sum"), KernelContaining(*apart, "c")) << apart->Summary();
  bool noted = false;
  for (const Kernel& k : apart->kernels) {
    for (const auto& n : k.notes) noted |= !n.fused && n.reason.find("minor (lane) dim") != std::string::npos;
  }
  EXPECT_TRUE(noted);
}

TEST(FusionPlannerTest, KernelPrintsAsParsableHlo) {
  auto m = Parse(kSoftmax);
  auto plan = PlanFusion(*m);
  ASSERT_TRUE(plan.ok());
  std::string text = plan->kernels[0].ToHloText();
  auto reparsed = hlo::ParseModule(text, "kernel.hlo");
  EXPECT_TRUE(reparsed.ok()) << reparsed.status().ToString() << "\n" << text;
}

TEST(FusionPlannerTest, StandaloneOpsStayAlone) {
  auto m = Parse(R"(
HloModule sortmod
lt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=LT
}
ENTRY main {
  x = f32[16] parameter(0)
  y = f32[16] negate(x)
  s = f32[16] sort(y), dimensions={0}, to_apply=lt
  ROOT z = f32[16] exponential(s)
}
)");
  ASSERT_TRUE(m);
  auto plan = PlanFusion(*m);
  ASSERT_TRUE(plan.ok());
  const Kernel* sort_kernel = KernelContaining(*plan, "s");
  ASSERT_NE(sort_kernel, nullptr);
  EXPECT_EQ(sort_kernel->family, KernelFamily::kStandalone);
  EXPECT_EQ(sort_kernel->instructions.size(), 1u);
  EXPECT_NE(KernelContaining(*plan, "y"), sort_kernel);
  EXPECT_NE(KernelContaining(*plan, "z"), sort_kernel);
}

TEST(FusionPlannerTest, DecisionsRoundTripAndCyclesAreRejected) {
  auto m = Parse(kGemmBiasRelu);
  auto plan = PlanFusion(*m);
  ASSERT_TRUE(plan.ok());
  auto again = PlanFromDecisions(*m, plan->decisions);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->kernels.size(), plan->kernels.size());

  // dot in kernel 0, add in kernel 1, relu back in kernel 0: 0 -> 1 -> 0 is a cycle.
  FusionDecisions bad;
  bad.kernel_of = {{"dot", 0}, {"bb", 0}, {"add", 1}, {"zb", 0}, {"relu", 0}};
  auto cyclic = PlanFromDecisions(*m, bad);
  ASSERT_FALSE(cyclic.ok());
  EXPECT_NE(cyclic.status().message().find("cycle"), std::string::npos);

  FusionDecisions missing;
  missing.kernel_of = {{"dot", 0}};
  EXPECT_FALSE(PlanFromDecisions(*m, missing).ok());
}

}  // namespace
}  // namespace mk::analysis

namespace mk::analysis {
namespace {

const FusionChoice* ChoiceNamed(const std::vector<FusionChoice>& choices, const std::string& key) {
  for (const FusionChoice& c : choices) {
    if (c.key == key) return &c;
  }
  return nullptr;
}

// The GEMM with its bias and ReLU: the epilogue and the operand broadcast are choices the
// planner takes (fused); flipping the epilogue gives a GEMM kernel and a loop kernel after it.
TEST(FusionChoicesTest, TheEpilogueIsAChoiceAndFlippingItSplitsTheKernel) {
  auto m = Parse(kGemmBiasRelu);
  ASSERT_TRUE(m);
  auto choices = FusionChoicesOf(*m);
  ASSERT_TRUE(choices.ok()) << choices.status().ToString();
  const FusionChoice* epilogue = ChoiceNamed(*choices, "epilogue:dot");
  ASSERT_NE(epilogue, nullptr);
  EXPECT_TRUE(epilogue->planner_fuses);
  EXPECT_NE(epilogue->description.find("%dot"), std::string::npos);
  // Every listed choice changes the plan when flipped alone.
  auto base = PlanFusion(*m);
  ASSERT_TRUE(base.ok());
  for (const FusionChoice& c : *choices) {
    FusionOptions o;
    o.overrides[c.key] = !c.planner_fuses;
    auto flipped = PlanFusion(*m, o);
    ASSERT_TRUE(flipped.ok()) << c.key;
    EXPECT_NE(PartitionKey(*flipped), PartitionKey(*base)) << c.key;
  }
  FusionOptions apart;
  apart.overrides["epilogue:dot"] = false;
  auto plan = PlanFusion(*m, apart);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->kernels.size(), 2u) << plan->Summary();
  EXPECT_NE(KernelContaining(*plan, "dot"), KernelContaining(*plan, "relu"));
  // Stable ids: the GEMM's kernel is named by its hero in both plans.
  EXPECT_EQ(base->kernels[0].key, "dot");
  EXPECT_EQ(KernelContaining(*plan, "dot")->key, "dot");
  EXPECT_EQ(KernelContaining(*plan, "relu")->key, "relu");
  // A key naming nothing of the module changes nothing.
  FusionOptions unknown;
  unknown.overrides["epilogue:no_such_dot"] = false;
  auto same = PlanFusion(*m, unknown);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(PartitionKey(*same), PartitionKey(*base));
}

// Choice keys are unique, and each names an instruction of the module (or "loop").
TEST(FusionChoicesTest, KeysAreUniqueAndNameTheModule) {
  auto m = Parse(kLogitsConsumers);
  ASSERT_TRUE(m);
  auto choices = FusionChoicesOf(*m);
  ASSERT_TRUE(choices.ok()) << choices.status().ToString();
  EXPECT_FALSE(choices->empty());
  std::set<std::string> keys;
  for (const FusionChoice& c : *choices) {
    EXPECT_TRUE(keys.insert(c.key).second) << c.key;
    if (c.key == "loop") continue;
    const std::string name = c.key.substr(c.key.find(':') + 1);
    bool found = false;
    for (const auto& i : m->entry()->instructions()) found = found || i->name == name;
    EXPECT_TRUE(found) << c.key;
  }
}

}  // namespace
}  // namespace mk::analysis
