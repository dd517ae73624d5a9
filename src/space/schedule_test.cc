// Joint constraints on a kernel space, the median start and the nearest legal point.
#include "space/schedule.h"

#include <gtest/gtest.h>

namespace mk::space {
namespace {

ParamDomain Domain(const char* name, std::vector<int64_t> values, int64_t initial) {
  ParamDomain d;
  d.name = name;
  d.values = std::move(values);
  d.initial = initial;
  return d;
}

// a * b <= limit, decided once both are set.
Constraint Product(int64_t limit) {
  Constraint c;
  c.name = "product";
  c.reason = "a*b <= " + std::to_string(limit);
  c.check = [limit](const Schedule& s) {
    auto a = s.values.find("a"), b = s.values.find("b");
    if (a == s.values.end() || b == s.values.end()) return Verdict::kUnknown;
    return a->second * b->second <= limit ? Verdict::kOk : Verdict::kViolated;
  };
  return c;
}

TEST(KernelSpaceTest, AConstraintIsViolatedOnlyOnceItIsDecided) {
  KernelSpace s;
  s.params = {Domain("a", {1, 2, 4, 8}, 1), Domain("b", {1, 2, 4, 8}, 1)};
  s.constraints = {Product(8)};
  EXPECT_EQ(s.Violated(Schedule{{{"a", 8}}}), nullptr);  // b undecided: unknown
  EXPECT_EQ(s.Violated(Schedule{{{"a", 8}, {"b", 1}}}), nullptr);
  const Constraint* v = s.Violated(Schedule{{{"a", 8}, {"b", 2}}});
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->name, "product");
}

TEST(KernelSpaceTest, MedianIsTheLowerMiddleValue) {
  EXPECT_EQ(MedianValue(Domain("x", {1, 2, 4, 8}, 8)), 2);
  EXPECT_EQ(MedianValue(Domain("x", {1, 2, 4}, 8)), 2);
  EXPECT_EQ(MedianValue(Domain("x", {5}, 5)), 5);
  EXPECT_EQ(MedianValue(Domain("x", {}, 3)), 3);
}

TEST(KernelSpaceTest, CenterOnMediansKeepsLegalMediansAndMovesIllegalOnesToTheNearestLegal) {
  KernelSpace s;
  s.params = {Domain("a", {1, 2, 4, 8, 16}, 16), Domain("b", {1, 2, 4, 8, 16}, 16),
              Domain("c", {0, 1}, 1)};
  s.constraints = {Product(16)};
  KernelSpace legal = s;
  CenterOnMedians(legal);  // a=4, b=4: 16, legal
  EXPECT_EQ(legal.Initial(), (Schedule{{{"a", 4}, {"b", 4}, {"c", 0}}}));
  s.constraints = {Product(8)};
  CenterOnMedians(s);  // a=4 stays (declared first), b moves to the nearest value that fits: 2
  EXPECT_EQ(s.Initial(), (Schedule{{{"a", 4}, {"b", 2}, {"c", 0}}}));
  EXPECT_EQ(s.Violated(s.Initial()), nullptr);
}

TEST(KernelSpaceTest, NearestLegalBacktracksWhenALaterParameterHasNoLegalValue) {
  KernelSpace s;
  s.params = {Domain("a", {4, 8, 16}, 16), Domain("b", {2, 4}, 4)};
  s.constraints = {Product(8)};
  // a=16 leaves b no value; a=8 neither; a=4 with b=2 (nearest to 4 that fits).
  std::optional<Schedule> p = NearestLegal(s, Schedule{{{"a", 16}, {"b", 4}}});
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(*p, (Schedule{{{"a", 4}, {"b", 2}}}));
  s.constraints = {Product(1)};  // nothing is legal
  EXPECT_FALSE(NearestLegal(s, Schedule{}).has_value());
}

TEST(CandidateTest, JsonKeepsTheFusionChoicesAndKernelIds) {
  Candidate c;
  c.kernels = {Schedule{{{"threads", 2}}}, Schedule{}};
  c.fusion = {{"epilogue:dot.1", false}, {"row_reductions:dot.1", true}};
  c.kernel_ids = {"dot.1", "add.3"};
  const nlohmann::json j = ToJson(c);
  EXPECT_EQ(j["fusion"]["epilogue:dot.1"], false);
  EXPECT_EQ(j["kernel_ids"][1], "add.3");
  Candidate back = CandidateFromJson(j);
  EXPECT_EQ(back.kernels, c.kernels);
  EXPECT_EQ(back.fusion, c.fusion);
  EXPECT_EQ(back.kernel_ids, c.kernel_ids);
  // The planner's own fusion: no "fusion" key, as candidates stored before it existed.
  Candidate plain;
  plain.kernels = c.kernels;
  EXPECT_FALSE(ToJson(plain).contains("fusion"));
  EXPECT_FALSE(ToJson(plain).contains("kernel_ids"));
  // Values of the wrong type are dropped, not guessed.
  Candidate odd = CandidateFromJson(nlohmann::json::parse(
      R"({"kernels": [{}], "fusion": {"loop": "no", "epilogue:d": true}, "kernel_ids": [3, "d"]})"));
  EXPECT_EQ(odd.fusion, (std::map<std::string, bool>{{"epilogue:d", true}}));
  EXPECT_EQ(odd.kernel_ids, (std::vector<std::string>{"d"}));
}

}  // namespace
}  // namespace mk::space
