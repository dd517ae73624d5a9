// The evolutionary search (evolutionary.h, graph_search_evolutionary.cc) on synthetic spaces
// whose times are a formula: its operators, that it never proposes a point twice or an illegal
// one, that a seed fixes its proposals, and that it finds the best sooner than random search.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <set>

#include "modes/search/evolutionary.h"
#include "modes/search/graph_search.h"

namespace mk::modes::search {
namespace {

space::ParamDomain Domain(const char* name, std::vector<int64_t> values, int64_t initial) {
  space::ParamDomain d;
  d.name = name;
  d.values = std::move(values);
  d.initial = initial;
  return d;
}

space::Candidate Initial(const std::vector<space::KernelSpace>& spaces) {
  space::Candidate c;
  for (const auto& s : spaces) c.kernels.push_back(s.Initial());
  return c;
}

// Two kernels, two parameters of 8 values each: 8^4 = 4096 points. The start is every domain's
// first value; the best is far from it.
std::vector<space::KernelSpace> WideSpaces() {
  const std::vector<int64_t> v = {1, 2, 3, 4, 5, 6, 7, 8};
  space::KernelSpace a, b;
  a.params = {Domain("mc", v, 1), Domain("nc", v, 1)};
  b.params = {Domain("unroll", v, 1), Domain("lanes", v, 1)};
  return {a, b};
}

// A bound far below every time: it prunes nothing, so the search alone is compared.
LowerBound FlatBound() {
  return LowerBound({{1, 1, false}, {1, 1, false}}, MachineRates{1e15, 0, 1e15, 1});
}

// Best at mc 6, nc 3, unroll 7, lanes 5 (1 s); every step away costs a little, and the four
// parameters' costs add up (the table's one optimum is the only point at 1 s).
double WideTime(const space::Candidate& c) {
  auto off = [](int64_t v, int64_t best) { return static_cast<double>((v - best) * (v - best)); };
  return 1.0 + 0.02 * off(c.For(0).Get("mc", 0), 6) + 0.03 * off(c.For(0).Get("nc", 0), 3) +
         0.01 * off(c.For(1).Get("unroll", 0), 7) + 0.02 * off(c.For(1).Get("lanes", 0), 5);
}

GraphSearch MakeWide(Algorithm a, uint64_t seed) {
  auto spaces = WideSpaces();
  SearchOptions o;
  o.algorithm = a;
  o.use_model = false;
  return GraphSearch(DecisionGraph(spaces, {1.0, 0.5}, Initial(spaces)), FlatBound(), o, seed);
}

// Measurements until the best point (1 s) is measured; 4097 if never.
int MeasurementsToTheBest(GraphSearch& s) {
  int n = 0;
  while (auto c = s.Next()) {
    ++n;
    const double t = WideTime(*c);
    s.Record(*c, t);
    if (t <= 1.0) return n;
  }
  return 4097;
}

TEST(EvolutionTest, AMutationSetsOneDecisionToAnotherValueOfItsDomain) {
  auto spaces = WideSpaces();
  DecisionGraph g(spaces, {}, Initial(spaces));
  Evolution e(g);
  std::mt19937_64 rng(3);
  std::set<std::pair<size_t, int>> reached;  // (decision, value) pairs a mutation set
  for (int i = 0; i < 2000; ++i) {
    const Node parent = e.Random(rng);
    ASSERT_EQ(parent.size(), 4u);
    const Node child = e.Mutate(parent, rng);
    int changed = 0;
    for (size_t d = 0; d < 4; ++d) {
      ASSERT_GE(child[d], 0);
      ASSERT_LT(child[d], 8);
      if (child[d] != parent[d]) {
        ++changed;
        reached.insert({d, child[d]});
      }
    }
    EXPECT_EQ(changed, 1);
  }
  EXPECT_EQ(reached.size(), 32u);  // every value of every decision is reachable
}

TEST(EvolutionTest, ACrossoverTakesEachDecisionFromOneParentAndSometimesAWholeKernel) {
  auto spaces = WideSpaces();
  DecisionGraph g(spaces, {1.0, 0.5}, Initial(spaces));
  ASSERT_EQ(g.decision(0).kernel, 0);
  ASSERT_EQ(g.decision(2).kernel, 1);
  Evolution e(g);
  std::mt19937_64 rng(11);
  const Node a = {0, 0, 0, 0}, b = {7, 7, 7, 7};
  int mixed_within_a_kernel = 0, whole_kernels = 0;
  for (int i = 0; i < 400; ++i) {
    const Node c = e.Crossover(a, b, rng);
    for (int v : c) ASSERT_TRUE(v == 0 || v == 7);
    const bool k0_mixed = c[0] != c[1], k1_mixed = c[2] != c[3];
    if (k0_mixed || k1_mixed) ++mixed_within_a_kernel;
    else ++whole_kernels;
  }
  // Per decision (half the crossovers) mixes a kernel's two decisions half the time; per kernel
  // never does.
  EXPECT_GT(mixed_within_a_kernel, 100);
  EXPECT_GT(whole_kernels, 100);
  // Children of a population: every one a legal index vector, mostly not a parent.
  std::vector<Individual> pop = {{{1, 2, 3, 4}, 1.0}, {{5, 6, 7, 0}, 2.0}};
  auto kids = e.Children(pop, 64, rng);
  ASSERT_EQ(kids.size(), 64u);
  int parents = 0;
  for (const Node& k : kids) parents += k == pop[0].node || k == pop[1].node;
  EXPECT_LT(parents, 8);
}

TEST(EvolutionarySearchTest, FindsTheBestSoonerThanRandomOnAverageOverSeeds) {
  double evo = 0, random = 0;
  constexpr int kSeeds = 8;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    GraphSearch e = MakeWide(Algorithm::kEvolutionary, seed);
    GraphSearch r = MakeWide(Algorithm::kRandom, seed);
    const int ne = MeasurementsToTheBest(e), nr = MeasurementsToTheBest(r);
    EXPECT_LE(ne, 4096) << "seed " << seed;
    evo += ne;
    random += nr;
  }
  evo /= kSeeds;
  random /= kSeeds;
  std::printf("measurements to the best of 4096 points: evolutionary %.1f, random %.1f (mean of %d seeds)\n",
              evo, random, kSeeds);
  // Random needs about half the space (2048) on average; the evolution walks downhill.
  EXPECT_LT(4 * evo, random);
}

TEST(EvolutionarySearchTest, TheSameSeedProposesTheSamePointsAndAnotherSeedOthers) {
  auto run = [](uint64_t seed) {
    GraphSearch s = MakeWide(Algorithm::kEvolutionary, seed);
    std::vector<std::string> keys;
    for (int i = 0; i < 40; ++i) {
      auto c = s.Next();
      if (!c) break;
      keys.push_back(CandidateKey(*c));
      s.Record(*c, WideTime(*c));
    }
    return keys;
  };
  const auto a = run(5), b = run(5), c = run(6);
  ASSERT_EQ(a.size(), 40u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(a[0], c[0]);  // both start at the start point
}

// Kernel 0: threads {1, 2}, tile {8 .. 64}; kernel 1: threads {1, 2}, unroll {1, 2, 4}: 48 points,
// the 6 with kernel 0 at threads 2 and tile 64 illegal (tile * threads <= 64). 2 cores at 1
// GFLOP/s each; kernel 0 does 2e9 FLOPs, kernel 1 moves 1e8 bytes at 1 GB/s.
std::vector<space::KernelSpace> ConstrainedSpaces() {
  space::KernelSpace a, b;
  a.params = {Domain("threads", {1, 2}, 2), Domain("tile", {8, 16, 32, 64}, 32)};
  b.params = {Domain("threads", {1, 2}, 2), Domain("unroll", {1, 2, 4}, 2)};
  space::Constraint c;
  c.name = "tile_budget";
  c.reason = "tile * threads <= 64";
  c.check = [](const space::Schedule& s) {
    auto tile = s.values.find("tile"), threads = s.values.find("threads");
    if (tile == s.values.end() || threads == s.values.end()) return space::Verdict::kUnknown;
    return tile->second * threads->second <= 64 ? space::Verdict::kOk : space::Verdict::kViolated;
  };
  a.constraints.push_back(c);
  return {a, b};
}

LowerBound TwoCoreBound() {
  return LowerBound({{2'000'000'000, 0, false}, {0, 100'000'000, false}}, MachineRates{2e9, 0, 1e9, 2});
}

TEST(EvolutionarySearchTest, NeverProposesADuplicateOrAnIllegalPointAndAccountsForEveryPoint) {
  for (uint64_t seed : {1, 2, 3, 4}) {
    auto spaces = ConstrainedSpaces();
    SearchOptions o;
    o.algorithm = Algorithm::kEvolutionary;
    o.use_model = false;
    GraphSearch s(DecisionGraph(spaces, {1.0, 0.1}, Initial(spaces)), TwoCoreBound(), o, seed);
    const LowerBound bound = TwoCoreBound();
    std::set<std::string> seen;
    while (auto c = s.Next()) {
      EXPECT_LE(c->For(0).Get("tile", 0) * c->For(0).Get("threads", 0), 64) << CandidateKey(*c);
      ASSERT_TRUE(seen.insert(CandidateKey(*c)).second) << "proposed twice: " << CandidateKey(*c);
      // 20% over the bound: kernel 0 on one thread (bound 1.6 s) cannot beat the start (1.32 s).
      std::vector<std::map<std::string, int64_t>> fixed;
      for (const auto& k : c->kernels) fixed.push_back(k.values);
      const double t = 1.2 * bound.Of(fixed) + 0.001 * static_cast<double>(c->For(1).Get("unroll", 0));
      s.Record(*c, t);
      EXPECT_EQ(c->For(0).Get("threads", 0), 2) << "a point the bound rules out was proposed";
    }
    const nlohmann::json st = s.Stats();
    // Every point is measured, illegal or pruned by the bound, and each is counted once: the 24
    // with kernel 0 on one thread and the 6 illegal ones.
    EXPECT_EQ(seen.size(), 18u) << "seed " << seed;
    EXPECT_EQ(st["pruned_points"], 30) << st.dump();
    EXPECT_EQ(st["proposed"], 18);
    std::map<std::string, int> by;
    for (const auto& p : st["pruned_by"]) by[p["decision"].get<std::string>()] = p["points"].get<int>();
    EXPECT_EQ(by["constraint tile_budget"], 6) << st.dump();
    EXPECT_EQ(by["kernel 0 threads=1"], 24) << st.dump();
    EXPECT_GT(st["generations"].get<int>(), 0);
    EXPECT_EQ(st["algorithm"], "evolutionary");
  }
}

TEST(EvolutionarySearchTest, ARebuiltSearchFedTheHistoryContinuesWithoutRepeating) {
  // The loop's resume: a new proposer (same seed) is told every stored candidate through Record.
  GraphSearch first = MakeWide(Algorithm::kEvolutionary, 9);
  std::set<std::string> seen;
  std::vector<std::pair<space::Candidate, double>> history;
  for (int i = 0; i < 30; ++i) {
    auto c = first.Next();
    ASSERT_TRUE(c.has_value());
    seen.insert(CandidateKey(*c));
    history.push_back({*c, WideTime(*c)});
    first.Record(*c, WideTime(*c));
  }
  GraphSearch resumed = MakeWide(Algorithm::kEvolutionary, 9);
  for (const auto& [c, t] : history) resumed.Record(c, t);
  bool found = false;
  for (int i = 0; i < 4000 && !found; ++i) {
    auto c = resumed.Next();
    ASSERT_TRUE(c.has_value());
    ASSERT_TRUE(seen.insert(CandidateKey(*c)).second) << "proposed again after the resume";
    resumed.Record(*c, WideTime(*c));
    found = WideTime(*c) <= 1.0;
  }
  EXPECT_TRUE(found);
  // The resumed population is the measured history: it breeds at once (no random restart).
  EXPECT_LT(seen.size(), 600u);
}

TEST(EvolutionarySearchTest, TheCostModelRanksEachGeneration) {
  GraphSearch s = MakeWide(Algorithm::kEvolutionary, 4);
  s.UseModel(
      [](const space::Candidate& c) {
        return std::vector<float>{static_cast<float>(c.For(0).Get("mc", 0)),
                                  static_cast<float>(c.For(0).Get("nc", 0)),
                                  static_cast<float>(c.For(1).Get("unroll", 0)),
                                  static_cast<float>(c.For(1).Get("lanes", 0))};
      },
      4);
  const int n = MeasurementsToTheBest(s);
  const nlohmann::json st = s.Stats();
  EXPECT_LE(n, 4096);
  EXPECT_GT(st["predicted"].get<int>(), 0) << st.dump();
  EXPECT_GE(st["model"]["retrained"].get<int>(), 1) << st["model"].dump();
  EXPECT_TRUE(st["model"]["error"].is_null()) << st["model"].dump();
  std::printf("evolutionary with the model: the best after %d measurements\n", n);
}

}  // namespace
}  // namespace mk::modes::search

namespace mk::modes::search {
namespace {

// With a prior model (a stored run's, or --model), astar and beam still measure the start first:
// the result's "vs first" compares the best with the planner's candidate. The prior here prefers
// the far corner (every value at its largest), which its ordering would otherwise go to first.
TEST(GraphSearchPriorTest, AstarAndBeamWithAPriorProposeTheStartFirst) {
  RankingData d;
  for (int i = 0; i < 8; ++i) d.Add({static_cast<float>(i), static_cast<float>(i)}, static_cast<float>(i));
  for (Algorithm a : {Algorithm::kAstar, Algorithm::kBeam}) {
    Result<CostModel> prior = CostModel::Train(d);
    ASSERT_TRUE(prior.ok()) << prior.status().ToString();
    GraphSearch s = MakeWide(a, 1);
    s.UseModel(
        [](const space::Candidate& c) {
          return std::vector<float>{static_cast<float>(c.For(0).Get("mc", 0)),
                                    static_cast<float>(c.For(1).Get("unroll", 0))};
        },
        2, std::move(*prior));
    auto first = s.Next();
    ASSERT_TRUE(first.has_value());
    EXPECT_EQ(CandidateKey(*first), CandidateKey(Initial(WideSpaces()))) << AlgorithmName(a);
    s.Record(*first, WideTime(*first));
    auto second = s.Next();
    ASSERT_TRUE(second.has_value());
    EXPECT_NE(CandidateKey(*second), CandidateKey(*first)) << AlgorithmName(a);
    EXPECT_GT(s.Stats()["predicted"].get<int>(), 0) << AlgorithmName(a);
    EXPECT_TRUE(s.Stats()["model"]["prior"].get<bool>());
  }
}

}  // namespace
}  // namespace mk::modes::search
