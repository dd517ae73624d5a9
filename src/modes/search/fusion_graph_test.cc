// The fusion decisions of the search graph: a synthetic graph whose variants are known (each
// point counted and proposed once, parameters carried across fusion by kernel id, a variant's
// subtree pruned by its own bound), then a real module planned by the CPU planner, whose
// variants' candidates all implement.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "agents/implementer.h"
#include "agents/planner.h"
#include "codegen/cpu/cpu_emitter.h"
#include "hlo/parser.h"
#include "modes/search/decision_graph.h"
#include "modes/search/graph_search.h"
#include "modes/search/plan_search.h"
#include "target/target.h"

namespace mk::modes::search {
namespace {

space::ParamDomain Domain(const char* name, std::vector<int64_t> values, int64_t initial) {
  space::ParamDomain d;
  d.name = name;
  d.values = std::move(values);
  d.initial = initial;
  return d;
}

PlanVariant Variant(std::map<std::string, bool> fusion, std::vector<std::string> ids,
                    std::vector<space::KernelSpace> spaces) {
  PlanVariant v;
  v.fusion = std::move(fusion);
  v.kernel_ids = std::move(ids);
  v.spaces = std::move(spaces);
  for (const auto& s : v.spaces) v.start.kernels.push_back(s.Initial());
  v.start.fusion = v.fusion;
  v.start.kernel_ids = v.kernel_ids;
  return v;
}

// Two fusion decisions, "epilogue:d" (the planner fuses) and "loop" (the planner fuses).
// Variant 0 (the planner's): one kernel "d", x {1,2} y {1,2,3}: 6 points. Flipping the epilogue
// (mask 1) splits it into "d" x {1,2} and "e" z {4,8}: 4 points. Flipping loop alone (mask 2)
// gives kernel "d" x {1,2}: 2 points. Flipping both (mask 3) gives mask 1's kernels again.
DecisionGraph Graph() {
  space::KernelSpace dxy, dx, ez;
  dxy.params = {Domain("x", {1, 2}, 1), Domain("y", {1, 2, 3}, 2)};
  dx.params = {Domain("x", {1, 2}, 1)};
  ez.params = {Domain("z", {4, 8}, 8)};
  std::vector<FusionDecision> fusion = {{"epilogue:d", true, "the epilogue"}, {"loop", true, "loops"}};
  std::vector<PlanVariant> variants = {
      Variant({}, {"d"}, {dxy}),
      Variant({{"epilogue:d", false}}, {"d", "e"}, {dx, ez}),
      Variant({{"loop", false}}, {"d"}, {dx}),
  };
  return DecisionGraph(std::move(fusion), std::move(variants), {0, 1, 2, 1});
}

TEST(FusionGraphTest, EveryPointOfEveryVariantIsReachedOnce) {
  const DecisionGraph g = Graph();
  EXPECT_EQ(g.fusion_depth(), 2u);
  EXPECT_EQ(g.SpaceSize(), 6u + 4u + 2u);
  // Both flips give the epilogue flip's kernels: not a second way to reach them.
  EXPECT_EQ(g.ChildrenOf({1}), (std::vector<int>{0}));
  EXPECT_EQ(g.ChildrenOf({0}), (std::vector<int>{0, 1}));
  EXPECT_EQ(g.Completions({1}), 4u);
  EXPECT_EQ(g.Completions({1, 1}), 0u);
  std::set<std::string> keys;
  std::map<int, int> per_variant;
  std::optional<Node> n;
  while ((n = g.NextInOrder(n))) {
    ASSERT_TRUE(g.Complete(*n));
    const space::Candidate c = g.ToCandidate(*n);
    EXPECT_TRUE(keys.insert(CandidateKey(c)).second) << CandidateKey(c);
    EXPECT_EQ(g.NodeOf(c), *n);
    ++per_variant[g.VariantOf(*n)];
  }
  EXPECT_EQ(keys.size(), g.SpaceSize());
  EXPECT_EQ(per_variant, (std::map<int, int>{{0, 6}, {1, 4}, {2, 2}}));
  // A candidate names its plan by its fusion choices and its kernels by their ids.
  const space::Candidate split = g.ToCandidate({1, 0, 1, 0});
  EXPECT_EQ(split.fusion, (std::map<std::string, bool>{{"epilogue:d", false}}));
  EXPECT_EQ(split.kernel_ids, (std::vector<std::string>{"d", "e"}));
  EXPECT_EQ(split.For(0).Get("x", 0), 2);
  EXPECT_EQ(split.For(1).Get("z", 0), 4);
  // Both flips, as a person might write them: the same plan, so the same node.
  space::Candidate both = split;
  both.fusion = {{"epilogue:d", false}, {"loop", false}};
  EXPECT_EQ(g.NodeOf(both), (Node{1, 0, 1, 0}));
  // Choices this graph does not make: no node.
  space::Candidate other = split;
  other.fusion = {{"chain:r", false}};
  EXPECT_FALSE(g.NodeOf(other).has_value());
  EXPECT_EQ(g.EdgeLabel({1}), "fusion epilogue:d=apart");
  EXPECT_EQ(g.EdgeLabel({1, 0, 1}), "kernel d x=2");
}

TEST(FusionGraphTest, ParametersFollowTheirKernelAcrossFusion) {
  const DecisionGraph g = Graph();
  // The planner's variant with d.x = 2, y = 3; split the epilogue off: d keeps x = 2, the new
  // kernel e starts at its start value (z = 8).
  const Node planner = {0, 0, 1, 2};
  const Node split = g.WithFusion(planner, {1, 0});
  EXPECT_EQ(split, (Node{1, 0, 1, 1}));
  // Asking for both flips lands on the canonical assignment of their kernels.
  EXPECT_EQ(g.WithFusion(planner, {1, 1}), split);
  std::mt19937_64 rng(3);
  for (int i = 0; i < 50; ++i) {
    const Node r = g.Random(rng);
    ASSERT_TRUE(g.Complete(r));
    EXPECT_EQ(g.NodeOf(g.ToCandidate(r)), r);
  }
}

// Variant 2 (loop apart) does 10x the work: once the planner's variant is measured, A* prunes
// that whole subtree under the fusion decision, and never proposes it.
TEST(FusionGraphTest, AStarPrunesAVariantByItsOwnBound) {
  const MachineRates rates{1e9, 0, 1e9, 1};
  std::vector<LowerBound> bounds = {LowerBound({{1'000'000'000, 0, false}}, rates),
                                    LowerBound({{1'000'000'000, 0, false}, {0, 0, false}}, rates),
                                    LowerBound({{10'000'000'000, 0, false}}, rates)};
  SearchOptions o;
  o.use_model = false;
  GraphSearch s(Graph(), std::move(bounds), o, 1);
  int proposed = 0;
  while (auto c = s.Next()) {
    ++proposed;
    EXPECT_FALSE(c->fusion.count("loop")) << CandidateKey(*c);
    s.Record(*c, 2.0);  // every point 2 s: above the 1 s bounds, under variant 2's 10 s
  }
  EXPECT_EQ(proposed, 10);
  const nlohmann::json st = s.Stats();
  EXPECT_EQ(st["pruned_points"], 2) << st.dump();
  EXPECT_EQ(st["pruned_by"][0]["decision"], "fusion loop=apart") << st.dump();
  EXPECT_EQ(st["fusion_decisions"].size(), 2u);
  EXPECT_EQ(st["fusion_decisions"][1]["key"], "loop");
  ASSERT_EQ(st["variants"].size(), 3u);
  EXPECT_EQ(st["variants"][1]["kernels"], (nlohmann::json{"d", "e"}));
  EXPECT_EQ(st["variants"][1]["space_size"], 4);
  EXPECT_TRUE(st["admissibility"]["ok"].get<bool>());
}

constexpr const char* kGemmBiasRelu = R"(
HloModule gemm
ENTRY main {
  x = f32[64,96] parameter(0)
  w = f32[96,128] parameter(1)
  b = f32[128] parameter(2)
  dot = f32[64,128] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[64,128] broadcast(b), dimensions={1}
  add = f32[64,128] add(dot, bb)
  zero = f32[] constant(0)
  zb = f32[64,128] broadcast(zero), dimensions={}
  ROOT relu = f32[64,128] maximum(add, zb)
}
)";

// The CPU planner's own choices for a GEMM with its epilogue: each variant of the graph is a
// plan the planner makes again from the candidate's fusion choices, and its points implement.
TEST(FusionGraphTest, TheVariantsOfARealModuleImplement) {
  auto module = hlo::ParseModule(kGemmBiasRelu, "gemm.hlo");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  agents::PlanRequest req;
  req.module = module->get();
  req.target = target::HostCpu();
  codegen::cpu::CpuEmitter emitter;
  auto plan = agents::RunPlanner(req, emitter);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  auto fusion = FusionSpaceOf(req, *plan, emitter);
  ASSERT_TRUE(fusion.ok()) << fusion.status().ToString();
  SearchOptions o;
  o.fusion_decisions = 2;
  auto fg = BuildFusionGraph(*plan, *fusion, o);
  ASSERT_TRUE(fg.ok()) << fg.status().ToString();
  const DecisionGraph& g = fg->graph;
  ASSERT_GE(g.fusion_depth(), 1u);
  ASSERT_GE(g.variant_count(), 2u) << g.ToJson().dump();
  bool split_epilogue = false;
  for (size_t v = 0; v < g.variant_count(); ++v) {
    split_epilogue = split_epilogue || g.variant(v).fusion.count("epilogue:dot") > 0;
  }
  EXPECT_TRUE(split_epilogue) << g.ToJson().dump();
  EXPECT_EQ(fg->bounds.size(), g.variant_count());
  // The start is the planner's own candidate.
  const space::Candidate start = g.ToCandidate(g.StartNode());
  EXPECT_TRUE(start.fusion.empty());
  EXPECT_EQ(start.kernels, plan->initial.kernels);
  std::mt19937_64 rng(11);
  std::set<int> variants_seen;
  for (int i = 0; i < 40; ++i) {
    const Node n = g.Random(rng);
    const space::Candidate c = g.ToCandidate(n);
    variants_seen.insert(g.VariantOf(n));
    auto p = fusion->replan(c.fusion);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    EXPECT_EQ(p->kernels.size(), c.kernels.size());
    if (g.Violated(c)) continue;  // a joint constraint: never proposed
    auto impl = agents::RunImplementer(*p, c, emitter);
    EXPECT_TRUE(impl.ok()) << CandidateKey(c) << ": " << impl.status().ToString();
    // The planner's plan refuses a candidate of another plan, with the reason.
    if (!c.fusion.empty()) {
      auto refused = agents::RunImplementer(*plan, c, emitter);
      ASSERT_FALSE(refused.ok());
      EXPECT_NE(refused.status().message().find("fusion choices"), std::string::npos)
          << refused.status().message();
    }
  }
  EXPECT_GE(variants_seen.size(), 2u);
  // What a search proposes first implements, with the fusion decisions or without.
  for (int decisions : {0, 2}) {
    SearchOptions so;
    so.fusion_decisions = decisions;
    so.use_model = false;
    auto search = SearchPlan(*plan, so, 1, std::nullopt, &*fusion);
    ASSERT_TRUE(search.ok()) << search.status().ToString();
    for (int i = 0; i < 3; ++i) {
      std::optional<space::Candidate> c = (*search)->Next();
      ASSERT_TRUE(c.has_value());
      auto p = fusion->replan(c->fusion);
      ASSERT_TRUE(p.ok());
      auto impl = agents::RunImplementer(*p, *c, emitter);
      EXPECT_TRUE(impl.ok()) << decisions << " " << CandidateKey(*c) << ": " << impl.status().ToString();
      (*search)->Record(*c, 1.0);
    }
  }
}

}  // namespace
}  // namespace mk::modes::search
