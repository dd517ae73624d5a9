// The decision graph, the lower bound and the search algorithms on small synthetic spaces, with
// a made-up "machine" whose times are known, so every expectation is computed by hand.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "modes/search/decision_graph.h"
#include "modes/search/graph_search.h"
#include "modes/search/lower_bound.h"
#include "modes/search/plan_search.h"
#include "modes/search/search_options.h"

#include <cmath>
#include <cstdio>

namespace mk::modes::search {
namespace {

space::ParamDomain Domain(const char* name, std::vector<int64_t> values, int64_t initial) {
  space::ParamDomain d;
  d.name = name;
  d.values = std::move(values);
  d.initial = initial;
  return d;
}

// Kernel 0: threads {1, 2}, tile {8, 16, 32, 64}, one fixed parameter. Kernel 1: threads {1, 2},
// unroll {1, 2, 4}. 2 * 4 * 2 * 3 = 48 points.
std::vector<space::KernelSpace> Spaces() {
  space::KernelSpace a, b;
  a.params = {Domain("threads", {1, 2}, 2), Domain("tile", {8, 16, 32, 64}, 32),
              Domain("fixed", {7}, 7)};
  b.params = {Domain("threads", {1, 2}, 2), Domain("unroll", {1, 2, 4}, 2)};
  return {a, b};
}

space::Candidate Initial(const std::vector<space::KernelSpace>& spaces) {
  space::Candidate c;
  for (const auto& s : spaces) c.kernels.push_back(s.Initial());
  return c;
}

// 2 cores at 1 GFLOP/s each (2e9 together), 1 GB/s. Kernel 0: 2e9 FLOPs (1 s at full rate),
// kernel 1: 1e8 bytes (0.1 s of memory).
LowerBound Bound() {
  return LowerBound({{2'000'000'000, 0, false}, {0, 100'000'000, false}},
                    MachineRates{2e9, 0, 1e9, 2});
}

TEST(DecisionGraphTest, SingleValuedParametersAreNotDecisionsAndHeavierKernelsComeFirst) {
  auto spaces = Spaces();
  DecisionGraph g(spaces, {0.1, 5.0}, Initial(spaces));  // kernel 1 weighs more
  ASSERT_EQ(g.depth(), 4u);
  EXPECT_EQ(g.decision(0).kernel, 1);
  EXPECT_EQ(g.decision(2).kernel, 0);
  EXPECT_EQ(g.domain(g.decision(3)).name, "tile");
  EXPECT_EQ(g.SpaceSize(), 48u);
  EXPECT_EQ(g.Completions({1, 0}), 8u);  // kernel 0's threads x tile remain
  // Children start at the start's value, then by distance: tile 32 first, then 16 and 64, then 8.
  EXPECT_EQ(g.ChildOrder(3), (std::vector<int>{2, 1, 3, 0}));
}

TEST(DecisionGraphTest, CandidatesRoundTripThroughNodes) {
  auto spaces = Spaces();
  DecisionGraph g(spaces, {}, Initial(spaces));
  Node n = {0, 3, 1, 2};  // k0 threads=1 tile=64, k1 threads=2 unroll=4
  space::Candidate c = g.ToCandidate(n);
  EXPECT_EQ(c.For(0).Get("threads", 0), 1);
  EXPECT_EQ(c.For(0).Get("tile", 0), 64);
  EXPECT_EQ(c.For(0).Get("fixed", 0), 7);
  EXPECT_EQ(c.For(1).Get("unroll", 0), 4);
  EXPECT_EQ(g.NodeOf(c), n);
  c.kernels[0].values["tile"] = 48;  // not in the domain
  EXPECT_FALSE(g.NodeOf(c).has_value());
  EXPECT_NE(g.ToDot({{{}, "root"}, {{0}, "f 1 s"}}).find("kernel 0 threads=1"), std::string::npos);
}

TEST(LowerBoundTest, ThreadsCapTheComputeRateNotTheBandwidth) {
  LowerBound b = Bound();
  EXPECT_DOUBLE_EQ(b.Kernel(0, {}), 1.0);
  // One thread of two, with the turbo headroom: 2e9 * 0.5 * 1.25 = 1.25e9 FLOP/s.
  EXPECT_DOUBLE_EQ(b.Kernel(0, {{"threads", 1}}), 2e9 / 1.25e9);
  EXPECT_DOUBLE_EQ(b.Kernel(1, {}), 0.1);
  EXPECT_DOUBLE_EQ(b.Kernel(1, {{"threads", 1}}), 0.1);
  EXPECT_DOUBLE_EQ(b.Of({{{"threads", 1}}, {}}), 1.6 + 0.1);
  // bf16 kernels take the faster of the two rates.
  LowerBound bf(std::vector<KernelCost>{{4'000'000'000, 0, true}}, MachineRates{2e9, 4e9, 1e9, 2});
  EXPECT_DOUBLE_EQ(bf.Kernel(0, {}), 1.0);
}

GraphSearch Make(Algorithm a, uint64_t seed = 1) {
  auto spaces = Spaces();
  SearchOptions o;
  o.algorithm = a;
  return GraphSearch(DecisionGraph(spaces, {1.0, 0.1}, Initial(spaces)), Bound(), o, seed);
}

// The "machine": 20% over the bound, plus a penalty that grows with |tile - 32| and unroll 1.
double TimeOf(const space::Candidate& c, const LowerBound& b) {
  std::vector<std::map<std::string, int64_t>> fixed;
  for (const auto& s : c.kernels) fixed.push_back(s.values);
  double t = 1.2 * b.Of(fixed);
  t += 0.001 * std::abs(c.For(0).Get("tile", 0) - 32);
  if (c.For(1).Get("unroll", 0) == 1) t += 0.01;
  return t;
}

TEST(GraphSearchTest, AstarProposesTheStartFirstAndPrunesWhatCannotBeatTheBest) {
  GraphSearch s = Make(Algorithm::kAstar);
  std::set<std::string> seen;
  auto first = s.Next();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(CandidateKey(*first), CandidateKey(Initial(Spaces())));
  const LowerBound bound = Bound();
  s.Record(*first, TimeOf(*first, bound));  // 1.2 * 1.1 = 1.32 s: below every threads=1 bound
  seen.insert(CandidateKey(*first));
  int proposed = 1;
  while (auto c = s.Next()) {
    ASSERT_TRUE(seen.insert(CandidateKey(*c)).second) << "proposed twice";
    // Kernel 0 on one thread is bounded at 1.6 s > 1.32 s: never measured.
    EXPECT_EQ(c->For(0).Get("threads", 0), 2);
    s.Record(*c, TimeOf(*c, bound));
    ++proposed;
  }
  // threads=2 for kernel 0 leaves 4 tiles x 2 x 3 = 24 points; kernel 1 on one thread costs
  // 0.1 s either way (memory bound), so none of those 24 is pruned.
  EXPECT_EQ(proposed, 24);
  nlohmann::json st = s.Stats();
  EXPECT_EQ(st["pruned_points"], 24);
  EXPECT_DOUBLE_EQ(st["pruned_share"].get<double>(), 0.5);
  EXPECT_EQ(st["pruned_by"][0]["decision"], "kernel 0 threads=1");
  EXPECT_TRUE(st["admissibility"]["ok"].get<bool>());
  EXPECT_EQ(st["admissibility"]["checked"], 24);
}

TEST(GraphSearchTest, WeightedAstarPrunesMore) {
  auto spaces = Spaces();
  SearchOptions o;
  o.epsilon = 1.2;  // keep only what could beat the best by 20%
  GraphSearch s(DecisionGraph(spaces, {1.0, 0.1}, Initial(spaces)), Bound(), o, 1);
  auto first = s.Next();
  ASSERT_TRUE(first.has_value());
  // Plain A* would keep every threads=2 point (bound 1.1 s < 1.25 s); ε = 1.2 asks for 1.04 s.
  s.Record(*first, 1.25);
  EXPECT_FALSE(s.Next().has_value());
  EXPECT_EQ(s.Stats()["pruned_points"], 47);  // all but the start
}

TEST(GraphSearchTest, AMeasurementBelowTheBoundIsAnAdmissibilityViolation) {
  GraphSearch s = Make(Algorithm::kAstar);
  auto c = s.Next();
  ASSERT_TRUE(c.has_value());
  s.Record(*c, 0.5);  // the bound says 1.1 s
  nlohmann::json a = s.Stats()["admissibility"];
  EXPECT_FALSE(a["ok"].get<bool>());
  ASSERT_EQ(a["violations"].size(), 1u);
  EXPECT_DOUBLE_EQ(a["violations"][0]["bound_s"].get<double>(), 1.1);
  EXPECT_DOUBLE_EQ(a["bound_scale"].get<double>(), 0.5 / 1.1);
}

// Peaks that are wrong for the machine (a probe taken under load) put every bound above what
// is measured. The search must not then prune the space on them: it scales the bound down to
// the measurements, so the walk goes on where it would with a bound that fits the machine.
TEST(GraphSearchTest, AfterAViolationTheBoundIsScaledToTheMeasurementsAndKeepsPruningSound) {
  GraphSearch s = Make(Algorithm::kAstar);
  const LowerBound bound = Bound();
  int proposed = 0;
  while (auto c = s.Next()) {
    ++proposed;
    s.Record(*c, TimeOf(*c, bound) / 3);  // every point 3x faster than the model allows
  }
  // As with a bound that fits (AstarProposesTheStartFirst...): kernel 0 on one thread is
  // still ruled out, the other 24 points are measured, not pruned by the wrong peaks.
  EXPECT_EQ(proposed, 24);
  const nlohmann::json st = s.Stats();
  EXPECT_FALSE(st["admissibility"]["ok"].get<bool>());
  EXPECT_NEAR(st["admissibility"]["bound_scale"].get<double>(), 1.2 / 3, 1e-9);  // TimeOf: 1.2 x bound
  EXPECT_LE(st["pruned_share"].get<double>(), 1.0);
}

TEST(GraphSearchTest, EveryAlgorithmCoversASmallSpaceOnceAndSkipsWhatWasRecorded) {
  for (Algorithm a : {Algorithm::kExhaustive, Algorithm::kRandom, Algorithm::kBeam, Algorithm::kAstar,
                      Algorithm::kEvolutionary}) {
    GraphSearch s = Make(a, 7);
    // A resumed run's history: these two are never proposed again.
    space::Candidate done = Initial(Spaces());
    space::Candidate failed = done;
    failed.kernels[0].values["tile"] = 8;
    s.Record(done, std::nullopt);
    s.Record(failed, std::nullopt);
    std::set<std::string> seen;
    while (auto c = s.Next()) {
      ASSERT_TRUE(seen.insert(CandidateKey(*c)).second) << AlgorithmName(a);
      s.Record(*c, std::nullopt);  // nothing measured: nothing is pruned
    }
    EXPECT_EQ(seen.size(), 46u) << AlgorithmName(a);
    EXPECT_FALSE(seen.count(CandidateKey(done))) << AlgorithmName(a);
    EXPECT_TRUE(s.Tried(failed));
  }
}

TEST(SearchOptionsTest, RoundTripsAndRefusesNonsense) {
  SearchOptions o;
  o.algorithm = Algorithm::kBeam;
  o.beam_width = 3;
  o.analytical_init = false;
  auto back = SearchOptionsFromJson(ToJson(o));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->algorithm, Algorithm::kBeam);
  EXPECT_EQ(back->beam_width, 3);
  EXPECT_FALSE(back->analytical_init);
  EXPECT_FALSE(ParseAlgorithm("annealing").ok());
  ASSERT_TRUE(ParseAlgorithm("evolutionary").ok());
  EXPECT_EQ(*ParseAlgorithm("evolutionary"), Algorithm::kEvolutionary);
  EXPECT_FALSE(SearchOptionsFromJson({{"epsilon", 0.5}}).ok());
  EXPECT_FALSE(SearchOptionsFromJson({{"beam_width", 0}}).ok());
  EXPECT_FALSE(SearchOptionsFromJson({{"algorithm", 3}}).ok());
}

}  // namespace
}  // namespace mk::modes::search

namespace mk::modes::search {
namespace {

// A plan by hand: a GEMM-like kernel (threads, mc) and a loop kernel (threads, unroll), with
// parameter names the feature map knows.
agents::Plan TwoKernelPlan() {
  agents::Plan plan;
  plan.target.cores = 2;
  plan.target.peak_flops_f32 = 2e9;
  plan.target.bandwidth_bytes_per_s = 1e9;
  agents::KernelRoofline gemm, loop;
  gemm.family = "contraction";
  gemm.flops = 2'000'000'000;
  gemm.lower_bound_s = 1.0;
  loop.family = "loop";
  loop.bytes = 100'000'000;
  loop.lower_bound_s = 0.1;
  plan.kernels = {gemm, loop};
  space::KernelSpace a, b;
  a.params = {Domain("threads", {1, 2}, 2), Domain("mc", {16, 32, 64, 128, 256, 512}, 512)};
  b.params = {Domain("threads", {1, 2}, 2), Domain("unroll", {1, 2, 4, 8}, 1)};
  plan.spaces = {a, b};
  plan.initial = Initial(plan.spaces);
  return plan;
}

// Best at mc = 64 and unroll = 4, far from the start (512, 1): 1.0 s + penalties.
double PlanTime(const space::Candidate& c) {
  double t = 1.2 + 0.05 * std::abs(std::log2(c.For(0).Get("mc", 1)) - 6);
  t += 0.01 * std::abs(std::log2(c.For(1).Get("unroll", 1)) - 2);
  if (c.For(0).Get("threads", 2) == 1) t *= 1.7;
  return t;
}

int MeasurementsToFindTheBest(bool use_model) {
  agents::Plan plan = TwoKernelPlan();
  SearchOptions o;
  o.use_model = use_model;
  auto searched = SearchPlan(plan, o, 5);
  EXPECT_TRUE(searched.ok());
  if (!searched.ok()) return 1000;
  auto& s = *searched;
  int n = 0;
  while (auto c = s->Next()) {
    ++n;
    const double t = PlanTime(*c);
    s->Record(*c, t);
    if (c->For(0).Get("mc", 0) == 64 && c->For(1).Get("unroll", 0) == 4) {
      nlohmann::json st = s->Stats();
      if (use_model) {
        EXPECT_GT(st["predicted"].get<int>(), 0);
        EXPECT_GE(st["model"]["retrained"].get<int>(), 1) << st["model"].dump();
        EXPECT_TRUE(st["model"]["error"].is_null()) << st["model"].dump();
      } else {
        EXPECT_TRUE(st["model"].is_null());
      }
      return n;
    }
  }
  return 1000;
}

TEST(GraphSearchTest, TheRetrainedModelFindsTheBestSoonerThanTheDistanceOrder) {
  const int with = MeasurementsToFindTheBest(true);
  const int without = MeasurementsToFindTheBest(false);
  EXPECT_LT(with, without) << "with the model " << with << ", without " << without;
  std::printf("measurements to the best: %d with the model, %d without\n", with, without);
  EXPECT_LE(with, 24);  // of 24 points with threads=2 (the rest are pruned by the bound)
}

// The search benchmark replays tables whose feature rows were stored when they were measured:
// UseModel takes any feature function. The model learns "tile 64 is fastest" from the rows alone.
TEST(GraphSearchTest, AFeatureFunctionDrivesTheModelLikeAFeatureMap) {
  auto spaces = Spaces();
  SearchOptions o;
  o.algorithm = Algorithm::kAstar;
  GraphSearch s(DecisionGraph(spaces, {}, Initial(spaces)), Bound(), o, 1);
  int calls = 0;
  s.UseModel(
      [&calls](const space::Candidate& c) {
        ++calls;
        return std::vector<float>{static_cast<float>(c.For(0).Get("tile", 0)),
                                  static_cast<float>(c.For(1).Get("unroll", 0))};
      },
      2);
  int n = 0;
  while (auto c = s.Next()) {
    ++n;
    // Kernel 0 dominates; its time falls with the tile; the best point is tile 64, unroll 4.
    const double t = 2.0 + 1.0 / static_cast<double>(c->For(0).Get("tile", 1)) +
                     0.01 / static_cast<double>(c->For(1).Get("unroll", 1)) +
                     (c->For(0).Get("threads", 2) == 1 ? 1.0 : 0.0);
    s.Record(*c, t);
    if (c->For(0).Get("tile", 0) == 64 && c->For(1).Get("unroll", 0) == 4) break;
  }
  const nlohmann::json st = s.Stats();
  EXPECT_GT(calls, 0);
  EXPECT_GT(st["predicted"].get<int>(), 0);
  EXPECT_EQ(st["model"]["features"], 2);
  EXPECT_GE(st["model"]["retrained"].get<int>(), 1) << st["model"].dump();
  EXPECT_TRUE(st["model"]["error"].is_null()) << st["model"].dump();
  EXPECT_LE(n, 24);
}

}  // namespace
}  // namespace mk::modes::search

namespace mk::modes::search {
namespace {

// Spaces() with a joint constraint on kernel 0: tile * threads <= 64. threads=2 with tile 64 is
// illegal, whatever kernel 1 takes: 2 x 3 = 6 of the 48 points.
std::vector<space::KernelSpace> ConstrainedSpaces() {
  auto spaces = Spaces();
  space::Constraint c;
  c.name = "tile_budget";
  c.reason = "tile * threads <= 64";
  c.check = [](const space::Schedule& s) {
    auto tile = s.values.find("tile"), threads = s.values.find("threads");
    if (tile == s.values.end() || threads == s.values.end()) return space::Verdict::kUnknown;
    return tile->second * threads->second <= 64 ? space::Verdict::kOk : space::Verdict::kViolated;
  };
  spaces[0].constraints.push_back(c);
  return spaces;
}

bool Illegal(const space::Candidate& c) {
  return c.For(0).Get("tile", 0) * c.For(0).Get("threads", 0) > 64;
}

TEST(GraphSearchTest, NoAlgorithmProposesAPointThatViolatesAConstraint) {
  for (Algorithm a : {Algorithm::kExhaustive, Algorithm::kRandom, Algorithm::kBeam, Algorithm::kAstar,
                      Algorithm::kEvolutionary}) {
    auto spaces = ConstrainedSpaces();
    SearchOptions o;
    o.algorithm = a;
    o.use_model = false;
    GraphSearch s(DecisionGraph(spaces, {1.0, 0.1}, Initial(spaces)), Bound(), o, 3);
    std::set<std::string> seen;
    while (auto c = s.Next()) {
      EXPECT_FALSE(Illegal(*c)) << AlgorithmName(a) << " " << CandidateKey(*c);
      ASSERT_TRUE(seen.insert(CandidateKey(*c)).second) << AlgorithmName(a);
      s.Record(*c, std::nullopt);  // nothing measured: only the constraint prunes
    }
    // 48 points, 6 of them (threads 2, tile 64, kernel 1 free) illegal: the rest all proposed.
    EXPECT_EQ(seen.size(), 42u) << AlgorithmName(a);
    nlohmann::json st = s.Stats();
    EXPECT_EQ(st["pruned_points"], 6) << AlgorithmName(a) << st.dump();
    ASSERT_EQ(st["pruned_by"].size(), 1u) << AlgorithmName(a);
    EXPECT_EQ(st["pruned_by"][0]["decision"], "constraint tile_budget") << AlgorithmName(a);
  }
}

TEST(GraphSearchTest, ANodeIsPrunedAsSoonAsItsValuesViolateAConstraint) {
  auto spaces = ConstrainedSpaces();
  // Kernel 0 first: threads, then tile; the node (threads=2, tile=64) is decided-violated
  // before kernel 1's decisions, and the edge check names the constraint.
  DecisionGraph g(spaces, {1.0, 0.1}, Initial(spaces));
  ASSERT_EQ(g.domain(g.decision(1)).name, "tile");
  EXPECT_EQ(g.Violated(Node{1}), nullptr);  // threads=2, tile undecided: unknown
  EXPECT_EQ(g.Violated(Node{1, 2}), nullptr);  // tile 32
  const space::Constraint* v = g.Violated(Node{1, 3});  // tile 64
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->name, "tile_budget");
  EXPECT_EQ(g.ToJson()["constraints"][0]["name"], "tile_budget");
  // A* never expands it: the whole subtree (kernel 1's 6 points) is counted at once, before
  // anything is measured.
  SearchOptions o;
  o.use_model = false;
  GraphSearch s(std::move(g), Bound(), o, 1);
  auto first = s.Next();
  ASSERT_TRUE(first.has_value());
  nlohmann::json st = s.Stats();
  EXPECT_EQ(st["pruned_points"], 6) << st.dump();
  EXPECT_EQ(st["pruned_by"][0]["decision"], "constraint tile_budget");
}

TEST(PlanSearchTest, WithoutAnalyticalInitTheStartIsEachDomainsMedian) {
  agents::Plan plan;
  plan.spaces = ConstrainedSpaces();
  plan.initial = Initial(plan.spaces);
  // threads {1, 2}: median 1; tile {8, 16, 32, 64}: median 16; unroll {1, 2, 4}: 2.
  space::Candidate start = StartPoint(plan, false);
  EXPECT_EQ(start.For(0).Get("threads", 0), 1);
  EXPECT_EQ(start.For(0).Get("tile", 0), 16);
  EXPECT_EQ(start.For(1).Get("unroll", 0), 2);
  EXPECT_EQ(CandidateKey(StartPoint(plan, true)), CandidateKey(plan.initial));
}

}  // namespace
}  // namespace mk::modes::search
