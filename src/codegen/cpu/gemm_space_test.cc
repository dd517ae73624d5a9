// The declared spaces with and without the analytical rules (codegen::SpaceRequest), and the
// register-tile constraint the GEMM space declares. Spaces only: nothing is compiled.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "analysis/fusion_plan.h"
#include "codegen/cpu/cpu_emitter.h"
#include "codegen/cpu/gemm_params.h"
#include "hlo/parser.h"

namespace mk::codegen::cpu {
namespace {

// A large f32 GEMM, a skinny one, a small odd one, and a row reduction.
constexpr const char* kModule = R"(
HloModule spaces
add_f32 {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT r = f32[] add(x, y)
}
ENTRY main {
  a = f32[512,384] parameter(0)
  b = f32[384,1024] parameter(1)
  s = f32[4,384] parameter(2)
  c = f32[37,29] parameter(3)
  d = f32[29,53] parameter(4)
  big = f32[512,1024] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  skinny = f32[4,1024] dot(s, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  small = f32[37,53] dot(c, d), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  zero = f32[] constant(0)
  rows = f32[512] reduce(a, zero), dimensions={1}, to_apply=add_f32
  ROOT t = (f32[512,1024], f32[4,1024], f32[37,53], f32[512]) tuple(big, skinny, small, rows)
}
)";

target::Target Avx2(int64_t l2, int64_t l3, double peak) {
  target::Target t;
  t.name = "cpu";
  t.isa = {"avx2", "fma"};
  t.cores = 8;
  t.vector_bytes = 32;
  t.vector_registers = 16;
  t.l2_bytes = l2;
  t.l3_bytes = l3;
  t.peak_flops_f32 = peak;
  t.bandwidth_bytes_per_s = 5e10;
  return t;
}

target::Target Avx512() {
  target::Target t = Avx2(2 << 20, 32 << 20, 2e12);
  t.isa = {"avx2", "fma", "avx512f"};
  t.vector_bytes = 64;
  t.vector_registers = 32;
  return t;
}

struct Fixture {
  std::unique_ptr<hlo::Module> module;
  analysis::FusionPlan plan;
};

Fixture Plan() {
  Fixture f;
  auto module = hlo::ParseModule(kModule, "spaces.hlo");
  EXPECT_TRUE(module.ok()) << module.status().ToString();
  f.module = std::move(*module);
  auto plan = analysis::PlanFusion(*f.module);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  f.plan = std::move(*plan);
  return f;
}

std::vector<space::KernelSpace> Spaces(const Fixture& f, const target::Target& t,
                                       bool analytical) {
  std::vector<space::KernelSpace> out;
  for (const auto& k : f.plan.kernels) {
    out.push_back(CpuEmitter().SpaceFor(k, t, SpaceRequest{analytical}));
  }
  return out;
}

bool SameDomains(const std::vector<space::KernelSpace>& a,
                 const std::vector<space::KernelSpace>& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k) {
    if (a[k].params.size() != b[k].params.size()) return false;
    for (size_t p = 0; p < a[k].params.size(); ++p) {
      const auto& x = a[k].params[p];
      const auto& y = b[k].params[p];
      if (x.name != y.name || x.values != y.values || x.initial != y.initial) return false;
    }
  }
  return true;
}

const space::ParamDomain* Find(const space::KernelSpace& s, const std::string& name) {
  for (const auto& p : s.params) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

TEST(GemmSpaceTest, WithoutTheAnalyticalRulesTheGridsDoNotDependOnTheModel) {
  const Fixture f = Plan();
  ASSERT_GE(f.plan.kernels.size(), 4u);
  // Same legality (ISA, registers, cores), different caches and peaks: the model blocks for
  // them, so its spaces differ ...
  const target::Target small = Avx2(256 << 10, 8 << 20, 3e11);
  const target::Target large = Avx2(4 << 20, 96 << 20, 1.5e12);
  EXPECT_FALSE(SameDomains(Spaces(f, small, true), Spaces(f, large, true)));
  // ... and the grids do not.
  const auto a = Spaces(f, small, false), b = Spaces(f, large, false);
  EXPECT_TRUE(SameDomains(a, b));
  // The model's own values are not added: the big GEMM's kc grid is the fixed list up to K 384.
  for (size_t k = 0; k < f.plan.kernels.size(); ++k) {
    const analysis::Kernel& kernel = f.plan.kernels[k];
    if (!kernel.hero || kernel.hero->name != "big") continue;
    const space::ParamDomain* kc = Find(a[k], "kc");
    ASSERT_NE(kc, nullptr);
    EXPECT_EQ(kc->values, (std::vector<int64_t>{16, 32, 64, 96, 128, 192, 256, 384}));
    const space::ParamDomain* mr = Find(a[k], "mr");
    ASSERT_NE(mr, nullptr);
    EXPECT_EQ(mr->values.size(), 16u);
  }
}

TEST(GemmSpaceTest, WithoutTheAnalyticalRulesTheInitialIsTheMedianOrItsNearestLegalPoint) {
  const Fixture f = Plan();
  for (const target::Target& t : {Avx2(1 << 20, 32 << 20, 1e12), Avx512()}) {
    for (const space::KernelSpace& s : Spaces(f, t, false)) {
      space::Schedule medians;
      for (const auto& p : s.params) medians.values[p.name] = space::MedianValue(p);
      EXPECT_EQ(s.Violated(s.Initial()), nullptr);
      if (!s.Violated(medians)) {
        EXPECT_EQ(s.Initial(), medians);
      } else {
        EXPECT_EQ(s.Initial(), space::NearestLegal(s, medians));
        // Only the constrained parameters move: the register tile, and the blocked-only ones
        // where the median gemm_blocked (0) is the loop nest.
        const std::set<std::string> constrained = {
            "mr", "nr", "amx", "kc", "mc", "nc", "unroll_k", "prefetch_c", "prefetch_ab",
            "pack_b", "pack_a", "inner", "share_a", "thread_split", "loop_order"};
        for (const auto& p : s.params) {
          if (!constrained.count(p.name)) {
            EXPECT_EQ(p.initial, space::MedianValue(p)) << p.name;
          }
        }
      }
    }
  }
  // The big GEMM: the median gemm_blocked is 0, the loop nest, which reads no blocked-GEMM
  // parameter, so those start at their first values (loop_nest) rather than at medians that
  // would differ only in name.
  for (size_t k = 0; k < f.plan.kernels.size(); ++k) {
    if (!f.plan.kernels[k].hero || f.plan.kernels[k].hero->name != "big") continue;
    const space::KernelSpace s = Spaces(f, Avx512(), false)[k];
    EXPECT_EQ(s.Initial().Get("gemm_blocked", -1), 0);
    EXPECT_EQ(s.Initial().Get("mr", 0), 1);
    EXPECT_EQ(s.Initial().Get("kc", 0), 16);
    // Blocked, the medians are legal with 32 registers (MR 8, NR 32) and not with 16.
    space::Schedule blocked = s.Initial();
    blocked.values["gemm_blocked"] = 1;
    blocked.values["mr"] = 8;
    blocked.values["nr"] = 32;
    EXPECT_EQ(s.Violated(blocked), nullptr);
    const space::KernelSpace narrow = Spaces(f, Avx2(1 << 20, 32 << 20, 1e12), false)[k];
    const space::Constraint* v = narrow.Violated(blocked);
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(v->name, "register_tile");
    // And under the loop nest a blocked-only value other than the first is a duplicate.
    space::Schedule dead = s.Initial();
    dead.values["kc"] = 64;
    v = s.Violated(dead);
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(v->name, "loop_nest");
  }
}

TEST(GemmSpaceTest, EveryBlockedGemmDeclaresTheRegisterTileAndItsInitialPointSatisfiesIt) {
  const Fixture f = Plan();
  for (const target::Target& t : {Avx2(1 << 20, 32 << 20, 1e12), Avx512()}) {
    for (bool analytical : {true, false}) {
      const auto spaces = Spaces(f, t, analytical);
      for (size_t k = 0; k < spaces.size(); ++k) {
        const space::KernelSpace& s = spaces[k];
        const bool gemm = Find(s, "mr") != nullptr;
        // register_tile always; loop_nest on the grids.
        ASSERT_EQ(s.constraints.size(), gemm ? (analytical ? 1u : 2u) : 0u) << k;
        EXPECT_EQ(s.Violated(s.Initial()), nullptr) << k << (analytical ? " analytical" : "");
        if (!gemm) continue;
        EXPECT_EQ(s.constraints[0].name, "register_tile");
        // Over the whole mr x nr grid the constraint is the register budget, decided once both
        // are set.
        const space::Constraint& c = s.constraints[0];
        for (int64_t mr : Find(s, "mr")->values) {
          EXPECT_EQ(c.check(space::Schedule{{{"mr", mr}}}), space::Verdict::kUnknown);
          for (int64_t nr : Find(s, "nr")->values) {
            const int64_t nv = (nr + t.vector_bytes / 4 - 1) / (t.vector_bytes / 4);
            const bool fits = mr * nv + nv + 1 <= t.vector_registers;
            EXPECT_EQ(c.check(space::Schedule{{{"mr", mr}, {"nr", nr}}}),
                      fits ? space::Verdict::kOk : space::Verdict::kViolated)
                << mr << "x" << nr;
          }
        }
      }
    }
  }
}

TEST(GemmSpaceTest, TheAnalyticalSpaceIsUnchangedByTheRequestsDefault) {
  const Fixture f = Plan();
  const target::Target t = Avx512();
  for (const auto& k : f.plan.kernels) {
    const space::KernelSpace a = CpuEmitter().SpaceFor(k, t);
    const space::KernelSpace b = CpuEmitter().SpaceFor(k, t, SpaceRequest{});
    EXPECT_TRUE(SameDomains({a}, {b}));
  }
}

}  // namespace
}  // namespace mk::codegen::cpu
