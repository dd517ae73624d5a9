#include "modes/auto/neighbourhood_search.h"

#include <gtest/gtest.h>

#include <set>

namespace mk::modes {
namespace {

space::KernelSpace Space(std::vector<std::pair<std::string, std::vector<int64_t>>> params) {
  space::KernelSpace s;
  for (auto& [name, values] : params) {
    space::ParamDomain p;
    p.name = name;
    p.values = values;
    p.initial = values.front();
    s.params.push_back(p);
  }
  return s;
}

space::Candidate Initial(const std::vector<space::KernelSpace>& spaces) {
  space::Candidate c;
  for (const auto& s : spaces) c.kernels.push_back(s.Initial());
  return c;
}

TEST(NeighbourhoodSearch, StartsAtTheInitialPointAndVisitsEveryPointOnce) {
  std::vector<space::KernelSpace> spaces = {Space({{"a", {1, 2, 3}}, {"b", {0, 1}}}),
                                            Space({{"a", {1, 2}}})};
  NeighbourhoodSearch search(spaces, Initial(spaces), {1.0, 0.5}, 7);
  EXPECT_EQ(search.SpaceSize(), 12u);
  std::set<std::string> seen;
  auto first = search.Next();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->kernels, Initial(spaces).kernels);
  std::optional<space::Candidate> c = first;
  int steps = 0;
  while (c) {
    std::string key = space::ToJson(*c).dump();
    EXPECT_TRUE(seen.insert(key).second) << "proposed twice: " << key;
    // A made-up cost: larger values are faster, so the search keeps moving.
    double t = 10;
    for (const auto& k : c->kernels) {
      for (const auto& [n, v] : k.values) t -= static_cast<double>(v);
    }
    search.Record(*c, t);
    c = search.Next();
    ASSERT_LT(++steps, 100);
  }
  // Local moves and perturbations reach the whole (small) space before it reports exhaustion.
  EXPECT_EQ(seen.size(), 12u);
}

TEST(NeighbourhoodSearch, LocalMovesLeaveTheBestByOneStep) {
  std::vector<space::KernelSpace> spaces = {Space({{"a", {1, 2, 4, 8, 16}}, {"b", {1, 2, 4, 8}}})};
  NeighbourhoodSearch search(spaces, Initial(spaces), {}, 1, /*random_fraction=*/0.0);
  auto c0 = search.Next();
  ASSERT_TRUE(c0);
  search.Record(*c0, 1.0);
  for (int i = 0; i < 2; ++i) {
    auto c = search.Next();
    ASSERT_TRUE(c);
    int changed = 0;
    for (const auto& [name, v] : c->kernels[0].values) changed += v != c0->kernels[0].values.at(name);
    EXPECT_EQ(changed, 1);
    search.Record(*c, 2.0);  // worse: the best stays c0
  }
}

TEST(NeighbourhoodSearch, AFailedCandidateNeverBecomesTheCentre) {
  std::vector<space::KernelSpace> spaces = {Space({{"a", {1, 2, 3, 4, 5, 6, 7, 8}}})};
  NeighbourhoodSearch search(spaces, Initial(spaces), {}, 3, 0.0);
  auto c0 = search.Next();
  search.Record(*c0, 1.0);  // a=1 works
  auto c1 = search.Next();  // a=2 (the only neighbour)
  ASSERT_TRUE(c1);
  EXPECT_EQ(c1->kernels[0].values.at("a"), 2);
  search.Record(*c1, std::nullopt);  // fails
  // All neighbours of a=1 are tried, so the next one comes from a random perturbation — but
  // never a=2 again.
  auto c2 = search.Next();
  ASSERT_TRUE(c2);
  EXPECT_NE(c2->kernels[0].values.at("a"), 2);
  EXPECT_NE(c2->kernels[0].values.at("a"), 1);
}

TEST(NeighbourhoodSearch, SameSeedSameProposals) {
  std::vector<space::KernelSpace> spaces = {Space({{"a", {1, 2, 3, 4}}, {"b", {1, 2, 3}}}),
                                            Space({{"c", {1, 2, 3, 4, 5}}})};
  auto run = [&](uint64_t seed) {
    NeighbourhoodSearch s(spaces, Initial(spaces), {2, 1}, seed);
    std::vector<std::string> keys;
    for (int i = 0; i < 10; ++i) {
      auto c = s.Next();
      if (!c) break;
      keys.push_back(space::ToJson(*c).dump());
      s.Record(*c, 1.0 + i % 3);
    }
    return keys;
  };
  EXPECT_EQ(run(5), run(5));
}

TEST(NeighbourhoodSearch, ReplayedHistoryIsNotProposedAgain) {
  std::vector<space::KernelSpace> spaces = {Space({{"a", {1, 2}}})};
  NeighbourhoodSearch search(spaces, Initial(spaces), {}, 0);
  space::Candidate two = Initial(spaces);
  two.kernels[0].values["a"] = 2;
  search.Record(Initial(spaces), 1.0);
  search.Record(two, 0.5);
  EXPECT_FALSE(search.Next().has_value());
}

}  // namespace
}  // namespace mk::modes

namespace mk::modes {
namespace {

TEST(NeighbourhoodSearch, NeverProposesAPointThatViolatesAJointConstraint) {
  std::vector<space::KernelSpace> spaces = {Space({{"a", {1, 2, 4, 8}}, {"b", {1, 2, 4, 8}}}),
                                            Space({{"c", {0, 1}}})};
  space::Constraint c;
  c.name = "product";
  c.check = [](const space::Schedule& s) {
    auto a = s.values.find("a"), b = s.values.find("b");
    if (a == s.values.end() || b == s.values.end()) return space::Verdict::kUnknown;
    return a->second * b->second <= 8 ? space::Verdict::kOk : space::Verdict::kViolated;
  };
  spaces[0].constraints.push_back(c);
  // 4 x 4 x 2 = 32 points; a * b <= 8 holds for 10 of the 16 (a, b) pairs: 20 legal points.
  for (uint64_t seed : {1u, 2u, 3u}) {
    NeighbourhoodSearch search(spaces, Initial(spaces), {1.0, 1.0}, seed);
    std::set<std::string> seen;
    while (auto next = search.Next()) {
      EXPECT_LE(next->For(0).Get("a", 0) * next->For(0).Get("b", 0), 8)
          << space::ToJson(*next).dump();
      ASSERT_TRUE(seen.insert(space::ToJson(*next).dump()).second);
      // Times that pull the walk towards the illegal corner (large a and b).
      search.Record(*next, 1.0 / static_cast<double>(next->For(0).Get("a", 0) *
                                                     next->For(0).Get("b", 0)));
    }
    EXPECT_EQ(seen.size(), 20u) << seed;
  }
}

}  // namespace
}  // namespace mk::modes
