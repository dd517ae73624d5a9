#include "agents/planner.h"

#include <gtest/gtest.h>

#include "agents/engine.h"
#include "agents/implementer.h"
#include "codegen/cpu/cpu_emitter.h"
#include "hlo/parser.h"
#include "hlo/verifier.h"

namespace mk::agents {
namespace {

// A contraction (dot + bias epilogue) followed by a softmax-like reduction chain.
constexpr const char* kModule = R"(HloModule plan_me

max_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}

ENTRY main {
  x = f32[64,32] parameter(0)
  w = f32[32,48] parameter(1)
  d = f32[64,48] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  one = f32[] constant(1)
  ob = f32[64,48] broadcast(one), dimensions={}
  e = f32[64,48] add(d, ob)
  ninf = f32[] constant(-inf)
  mx = f32[64] reduce(e, ninf), dimensions={1}, to_apply=max_f32
  mb = f32[64,48] broadcast(mx), dimensions={0}
  ROOT s = f32[64,48] subtract(e, mb)
}
)";

class PlannerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = hlo::ParseModule(kModule);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    module_ = std::move(*m);
    ASSERT_TRUE(hlo::VerifyModule(*module_).ok());
    target_.name = "cpu";
    target_.model = "test cpu";
    target_.cores = 2;
    target_.peak_flops_f32 = 100e9;
    target_.bandwidth_bytes_per_s = 10e9;
  }
  std::unique_ptr<hlo::Module> module_;
  target::Target target_;
  codegen::cpu::CpuEmitter emitter_;
};

TEST_F(PlannerTest, RooflineOfEveryKernelIsTheLargerOfComputeAndMemoryTime) {
  PlanRequest req{module_.get(), target_, {}, {}};
  auto plan = RunPlanner(req, emitter_);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_FALSE(plan->kernels.empty());
  ASSERT_EQ(plan->kernels.size(), plan->fusion.kernels.size());
  ASSERT_EQ(plan->spaces.size(), plan->kernels.size());
  double sum = 0;
  bool saw_contraction = false;
  for (const KernelRoofline& k : plan->kernels) {
    EXPECT_DOUBLE_EQ(k.compute_s, static_cast<double>(k.flops) / 100e9);
    EXPECT_DOUBLE_EQ(k.memory_s, static_cast<double>(k.bytes) / 10e9);
    EXPECT_DOUBLE_EQ(k.lower_bound_s, std::max(k.compute_s, k.memory_s));
    EXPECT_EQ(k.bound, k.compute_s >= k.memory_s ? "compute" : "memory");
    if (k.bytes > 0) {
      EXPECT_DOUBLE_EQ(k.intensity, static_cast<double>(k.flops) / k.bytes);
    }
    saw_contraction |= k.family == "contraction";
    sum += k.lower_bound_s;
  }
  EXPECT_TRUE(saw_contraction);
  EXPECT_DOUBLE_EQ(plan->lower_bound_s, sum);
  // The dot's 2*M*N*K flops are in the plan.
  int64_t flops = 0;
  for (const auto& k : plan->kernels) flops += k.flops;
  EXPECT_GE(flops, 2 * 64 * 48 * 32);
}

TEST_F(PlannerTest, InitialCandidateIsEachSpacesAnalyticalPointAndImplements) {
  auto plan = RunPlanner({module_.get(), target_, {}, {}}, emitter_);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->initial.kernels.size(), plan->spaces.size());
  for (size_t k = 0; k < plan->spaces.size(); ++k) {
    EXPECT_EQ(plan->initial.kernels[k], plan->spaces[k].Initial());
  }
  auto impl = RunImplementer(*plan, plan->initial, emitter_);
  ASSERT_TRUE(impl.ok()) << impl.status().ToString();
  EXPECT_FALSE(impl->implementation.hash.empty());
}

TEST_F(PlannerTest, RationaleNamesTheKernelsAndJsonCarriesTheSpaces) {
  auto plan = RunPlanner({module_.get(), target_, {}, {}}, emitter_);
  ASSERT_TRUE(plan.ok());
  for (const auto& k : plan->kernels) {
    EXPECT_NE(plan->rationale_markdown.find(k.name), std::string::npos) << k.name;
  }
  EXPECT_NE(plan->rationale_markdown.find("nominal model"), std::string::npos);
  nlohmann::json j = ToJson(*plan);
  ASSERT_EQ(j["kernels"].size(), plan->kernels.size());
  EXPECT_TRUE(j["kernels"][0]["space"].is_array());
  EXPECT_FALSE(j["kernels"][0]["space"].empty());
  EXPECT_EQ(j["initial"], space::ToJson(plan->initial));
}

TEST_F(PlannerTest, PlanningLeavesTheCallersModuleAlone) {
  std::string before = module_->name;
  size_t count = module_->entry()->instructions().size();
  auto plan = RunPlanner({module_.get(), target_, {}, {}}, emitter_);
  ASSERT_TRUE(plan.ok());
  EXPECT_NE(plan->module.get(), module_.get());
  EXPECT_EQ(module_->entry()->instructions().size(), count);
  EXPECT_EQ(module_->name, before);
}

TEST(PlannerRequest, NoModuleIsAnError) {
  codegen::cpu::CpuEmitter emitter;
  auto plan = RunPlanner({}, emitter);
  EXPECT_FALSE(plan.ok());
}

// ---- the implementer's check of a candidate ----------------------------------------------------

TEST_F(PlannerTest, ImplementerCompletesAndChecksCandidates) {
  auto plan = RunPlanner({module_.get(), target_, {}, {}}, emitter_);
  ASSERT_TRUE(plan.ok());
  space::Candidate empty;
  empty.kernels.resize(plan->spaces.size());
  auto complete = CompleteCandidate(*plan, empty);
  ASSERT_TRUE(complete.ok()) << complete.status().ToString();
  EXPECT_EQ(complete->kernels, plan->initial.kernels);

  space::Candidate unknown = plan->initial;
  unknown.kernels[0].values["no_such_param"] = 1;
  auto u = CompleteCandidate(*plan, unknown);
  ASSERT_FALSE(u.ok());
  EXPECT_NE(u.status().message().find("no_such_param"), std::string::npos);

  space::Candidate outside = plan->initial;
  outside.kernels[0].values["threads"] = 3;  // domain {1, 2}
  auto o = CompleteCandidate(*plan, outside);
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("threads=3"), std::string::npos);

  space::Candidate short_one;
  EXPECT_FALSE(CompleteCandidate(*plan, short_one).ok());
}

TEST_F(PlannerTest, DifferentSchedulesGiveDifferentImplementations) {
  auto plan = RunPlanner({module_.get(), target_, {}, {}}, emitter_);
  ASSERT_TRUE(plan.ok());
  space::Candidate a = plan->initial, b = plan->initial;
  for (auto& s : a.kernels) s.values["threads"] = 1;
  for (auto& s : b.kernels) s.values["threads"] = 2;
  auto ia = RunImplementer(*plan, a, emitter_);
  auto ib = RunImplementer(*plan, b, emitter_);
  ASSERT_TRUE(ia.ok() && ib.ok());
  EXPECT_NE(ia->implementation.hash, ib->implementation.hash);
}

}  // namespace
}  // namespace mk::agents

namespace mk::agents {
namespace {

// A GEMM whose rows are reduced: the planner moves the reduction into the GEMM's kernel only
// where the result (here 12 KiB) is larger than the target's last cache level.
constexpr const char* kRowSums = R"(HloModule row_sums
add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[64,32] parameter(0)
  w = f32[32,48] parameter(1)
  d = f32[64,48] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  zero = f32[] constant(0)
  ROOT r = f32[64] reduce(d, zero), dimensions={1}, to_apply=add_f32
}
)";

TEST(PlannerFusionTest, RowReductionsJoinTheGemmOnlyPastTheLastCacheLevel) {
  auto m = hlo::ParseModule(kRowSums);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  codegen::cpu::CpuEmitter emitter;
  target::Target t;
  t.name = "cpu";
  for (int64_t l3 : {int64_t{8} << 10, int64_t{32} << 20}) {
    t.l3_bytes = l3;
    EXPECT_EQ(FusionOptionsFor({}, t).row_reduction_min_bytes, l3);
    auto plan = RunPlanner(PlanRequest{m->get(), t, {}, {}}, emitter);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    EXPECT_EQ(plan->fusion.kernels.size(), l3 < 64 * 48 * 4 ? 1u : 2u)
        << "L3 " << l3 << "\n" << plan->fusion.Summary();
  }
}

}  // namespace
}  // namespace mk::agents
