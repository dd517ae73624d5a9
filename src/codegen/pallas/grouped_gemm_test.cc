// Grouped GEMM: the matcher on the suite's two grouped-matmul tasks (11p megablox, 14p ragged
// dot) and on variants it must refuse; the fused pallas_call run in TPU interpret mode against the
// reference interpreter (the suite's 14p on random group sizes, and a module whose per-visit
// indices are raw inputs: out-of-range gathers, dropped scatter windows, tiles visited out of
// order or never, several N and K blocks), and compiled by libtpu for v5e and v6e.
#include "codegen/pallas/grouped_gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "codegen/pallas/pallas_test_util.h"
#include "hlo/call_inliner.h"

namespace mk::codegen::pallas {
namespace {

using testing::EmitAndRun;
using testing::Parse;
using testing::SuiteTask;

std::vector<nlohmann::json> GroupedKernels(const nlohmann::json& map) {
  std::vector<nlohmann::json> out;
  for (const auto& k : map.at("kernels")) {
    if (k.at("family") == "grouped_gemm") out.push_back(k);
  }
  return out;
}

Result<Implementation> EmitFor(const hlo::Module& m, const target::Target& t,
                               const std::map<std::string, int64_t>& blocks = {}) {
  auto plan = analysis::PlanFusion(m);
  if (!plan.ok()) return plan.status();
  return PallasEmitter().Emit(*plan, testing::CandidateFor(*plan, t, blocks), t);
}

nlohmann::json MapOf(const Implementation& impl) { return nlohmann::json::parse(impl.sources.at(1).text); }

// Elementwise within `tol` (relative, at least absolute), NaN only where the reference has NaN.
::testing::AssertionResult NearWithNaN(const hlo::Literal& got, const hlo::Literal& want, double tol) {
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    const double g = got.GetDouble(i), w = want.GetDouble(i);
    if (std::isnan(w) != std::isnan(g) || (!std::isnan(w) && std::fabs(g - w) > tol * std::max(1.0, std::fabs(w)))) {
      return ::testing::AssertionFailure() << "element " << i << ": got " << g << ", want " << w;
    }
  }
  return ::testing::AssertionSuccess();
}

TEST(GroupedGemmTest, MatchesTheSuitesGroupedMatmulTasks) {
  struct Case {
    const char* id;
    int64_t v, t, tm, k, n, g;
  };
  // 11p: M=512 in 32 tiles of 16 rows, 128 groups: 32 + 128 - 1 visits; 14p: M=128, 8 groups.
  for (const Case c : {Case{"11p", 159, 32, 16, 64, 64, 128}, Case{"14p", 15, 8, 16, 128, 256, 8}}) {
    SCOPED_TRACE(c.id);
    auto m = SuiteTask(c.id);
    ASSERT_NE(m, nullptr);
    const hlo::Instruction* scatter = nullptr;
    for (const auto& i : m->entry()->instructions()) {
      if (i->opcode == hlo::Opcode::kScatter) scatter = i.get();
    }
    ASSERT_NE(scatter, nullptr);
    auto g = MatchGroupedGemmAt(scatter);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    EXPECT_EQ(g->v, c.v);
    EXPECT_EQ(g->t, c.t);
    EXPECT_EQ(g->tm, c.tm);
    EXPECT_EQ(g->k, c.k);
    EXPECT_EQ(g->n, c.n);
    EXPECT_EQ(g->g, c.g);
    EXPECT_FALSE(g->rhs_transposed);
    EXPECT_EQ(g->rhs->opcode, hlo::Opcode::kParameter);
    EXPECT_EQ(g->lhs->opcode, hlo::Opcode::kReshape);  // lhs as [T, tm, K]
    // jnp.take's in-range predicates and the [V, tm] row mask are read as the module computes them.
    ASSERT_NE(g->lhs_ok.value, nullptr);
    ASSERT_NE(g->rhs_ok.value, nullptr);
    ASSERT_NE(g->mask.value, nullptr);
    EXPECT_EQ(g->mask.value->shape.dims(), (std::vector<int64_t>{c.v, c.tm}));

    auto impl = EmitFor(*m, testing::TpuV5e());
    ASSERT_TRUE(impl.ok()) << impl.status().ToString();
    const auto map = MapOf(*impl);
    auto gk = GroupedKernels(map);
    ASSERT_EQ(gk.size(), 1u) << map.dump(1);
    // Grid (N blocks, visits + one entry per tile, K blocks): each weight read in place.
    EXPECT_EQ(gk[0].at("grid"), nlohmann::json({1, c.v + c.t, 1}));
    EXPECT_EQ(gk[0].at("runs"), "pallas");
    EXPECT_EQ(gk[0].at("skipped_blocks"), c.t);
    // The gathers, the batched dot, the mask and the scatter are fused into it.
    int fused = 0;
    for (const auto& k : map.at("kernels")) fused += k.at("runs") == "fused" ? 1 : 0;
    EXPECT_GE(fused, 5);
    const std::string py = impl->sources[0].text;
    EXPECT_NE(py.find("pltpu.PrefetchScalarGridSpec("), std::string::npos);
    EXPECT_NE(py.find(": (group[e], kk, n))"), std::string::npos) << py;
  }
}

// Per-visit indices as raw inputs: 4 output tiles of 16 rows, 3 weights [256, 256], 6 visits.
// The row tiles are read through jnp.take's NaN fill, the weights through a plain (clamping)
// gather; the scatter starts from 0.5 and drops windows whose tile is out of range.
constexpr char kRaw[] = R"(
HloModule grouped_raw
add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
and_pred {
  a = pred[] parameter(0)
  b = pred[] parameter(1)
  ROOT s = pred[] and(a, b)
}
ENTRY main {
  x = bf16[64,256] parameter(0)
  w = bf16[3,256,256] parameter(1)
  ti = s32[6,1] parameter(2)
  gi = s32[6,1] parameter(3)
  si = s32[6,1] parameter(4)
  mask = pred[6,16] parameter(5)
  tiles = bf16[4,16,256] reshape(x)
  a = bf16[6,16,256] gather(tiles, ti), offset_dims={1,2}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,16,256}
  zero_i = s32[] constant(0)
  zb = s32[6,1] broadcast(zero_i), dimensions={}
  three = s32[] constant(3)
  tb = s32[6,1] broadcast(three), dimensions={}
  ge = pred[6,1] compare(ti, zb), direction=GE
  le = pred[6,1] compare(ti, tb), direction=LE
  inr = pred[6,1] and(ge, le)
  t = pred[] constant(true)
  oka = pred[6] reduce(inr, t), dimensions={1}, to_apply=and_pred
  okab = pred[6,16,256] broadcast(oka), dimensions={0}
  nan = bf16[] constant(nan)
  nanb = bf16[6,16,256] broadcast(nan), dimensions={}
  at = bf16[6,16,256] select(okab, a, nanb)
  b = bf16[6,256,256] gather(w, gi), offset_dims={1,2}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,256,256}
  d = f32[6,16,256] dot(at, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  mb = pred[6,16,256] broadcast(mask), dimensions={0,1}
  z = f32[] constant(0)
  zb2 = f32[6,16,256] broadcast(z), dimensions={}
  p = f32[6,16,256] select(mb, d, zb2)
  half = f32[] constant(0.5)
  init = f32[4,16,256] broadcast(half), dimensions={}
  o = f32[4,16,256] scatter(init, si, p), update_window_dims={1,2}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add_f32
  ROOT r = f32[64,256] reshape(o)
}
)";

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

TEST(GroupedGemmTest, RefusesWhatItDoesNotComputeWithTheReason) {
  struct Case {
    std::string hlo;
    const char* reason;
  };
  const std::string mul_reducer = Replace(kRaw, "ROOT s = f32[] add(a, b)", "ROOT s = f32[] multiply(a, b)");
  const Case cases[] = {
      {mul_reducer, "does not add"},
      {Replace(kRaw, "z = f32[] constant(0)", "z = f32[] constant(1)"), "not 0"},
      {Replace(kRaw, "nan = bf16[] constant(nan)", "nan = bf16[] constant(0)"), "NaN fill"},
      // A mask that varies along N (a mask broadcast along N, per visit, is matched: see 11p).
      {Replace(kRaw, "mb = pred[6,16,256] broadcast(mask), dimensions={0,1}",
               "mn = pred[6,256] parameter(6)\n  mb = pred[6,16,256] broadcast(mn), dimensions={0,2}"),
       "varies along a dim other than the visit and the row"},
      // Added into an input rather than a constant.
      {Replace(kRaw, "init = f32[4,16,256] broadcast(half), dimensions={}", "init = f32[4,16,256] parameter(6)"),
       "not a broadcast constant"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.reason);
    auto m = Parse(c.hlo);
    ASSERT_NE(m, nullptr);
    auto impl = EmitFor(*m, testing::TpuV5e());
    ASSERT_TRUE(impl.ok()) << impl.status().ToString();  // emitted unfused
    const auto map = MapOf(*impl);
    EXPECT_TRUE(GroupedKernels(map).empty()) << map.dump(1);
    ASSERT_TRUE(map.contains("grouped_gemm_refused")) << map.dump(1);
    EXPECT_NE(map.at("grouped_gemm_refused").dump().find(c.reason), std::string::npos)
        << map.at("grouped_gemm_refused").dump();
  }
}

TEST(GroupedGemmTest, ARefusedCallFallsBackToItsKernels) {
  // The glue fallback (agents/tpu_fallback.h) marks the call's function, kernel_<anchor>: the
  // grouped GEMM is then emitted as its plan kernels (the dot in a pallas_call of its own, the
  // gathers and the scatter in glue), as before this family existed.
  auto m = Parse(kRaw);
  ASSERT_NE(m, nullptr);
  auto plan = analysis::PlanFusion(*m);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  const GroupedGemmScan scan = FindGroupedGemm(*plan, {});
  ASSERT_EQ(scan.found.size(), 1u);
  const size_t anchor = scan.found[0].anchor;
  const target::Target t = testing::TpuV5e();
  space::Candidate c = testing::CandidateFor(*plan, t);
  c.kernels[anchor].values[kGlueFallbackKey] = 1;
  auto impl = PallasEmitter().Emit(*plan, c, t);
  ASSERT_TRUE(impl.ok()) << impl.status().ToString();
  const auto map = MapOf(*impl);
  EXPECT_TRUE(GroupedKernels(map).empty()) << map.dump(1);
  EXPECT_TRUE(testing::KernelsRunning(map, "fused").empty()) << map.dump(1);
  EXPECT_EQ(map.at("kernels")[anchor].at("runs"), "glue");
  bool dot_in_pallas = false;
  for (const auto& k : testing::KernelsRunning(map, "pallas")) {
    for (const auto& op : k.at("ops_in_pallas")) dot_in_pallas = dot_in_pallas || op == "d";
  }
  EXPECT_TRUE(dot_in_pallas) << map.dump(1);
}

TEST(GroupedGemmTest, ACallThatCannotFitVmemIsLeftToItsKernelsWithTheReason) {
  // Its smallest blocks (16 x 128 rows, a 128 x 128 weight, the mask, output and f32 accumulator)
  // need about 120 KiB; with 64 KiB the grouped GEMM is refused and emitted as its kernels.
  auto m = Parse(kRaw);
  ASSERT_NE(m, nullptr);
  auto small = EmitFor(*m, testing::TpuV5e(int64_t{64} << 10));
  ASSERT_TRUE(small.ok()) << small.status().ToString();
  const auto map = MapOf(*small);
  EXPECT_TRUE(GroupedKernels(map).empty()) << map.dump(1);
  ASSERT_TRUE(map.contains("grouped_gemm_refused")) << map.dump(1);
  EXPECT_NE(map.at("grouped_gemm_refused").dump().find("bytes of VMEM, over 65536"), std::string::npos)
      << map.at("grouped_gemm_refused").dump();
  // And every point of the space declared at 1 MiB fits it.
  auto plan = analysis::PlanFusion(*m);
  ASSERT_TRUE(plan.ok());
  const auto t = testing::TpuV5e(int64_t{1} << 20);
  const GroupedGemmScan scan = FindGroupedGemm(*plan, {});
  ASSERT_EQ(scan.found.size(), 1u);
  const auto space = PallasEmitter().SpaceFor(plan->kernels[scan.found[0].anchor], t);
  std::vector<int64_t> bns, bks;
  for (const auto& p : space.params) {
    if (p.name == "gmm_bn") bns = p.values;
    if (p.name == "gmm_bk") bks = p.values;
  }
  ASSERT_FALSE(bns.empty());
  ASSERT_FALSE(bks.empty());
  for (int64_t bn : bns) {
    for (int64_t bk : bks) {
      space::Candidate c = testing::CandidateFor(*plan, t, {{"gmm_bn", bn}, {"gmm_bk", bk}});
      auto impl = PallasEmitter().Emit(*plan, c, t);
      ASSERT_TRUE(impl.ok()) << bn << " x " << bk << ": " << impl.status().ToString();
      const auto gk = GroupedKernels(MapOf(*impl));
      ASSERT_EQ(gk.size(), 1u);
      EXPECT_LE(gk[0].at("tpu_kernel_shape").at("vmem_bytes").get<int64_t>(), int64_t{1} << 20);
    }
  }
}

TEST(GroupedGemmTest, RawIndicesWithOutOfRangeVisitsMatchTheInterpreter) {
  MK_SKIP_WITHOUT_JAX();
  // RandomArgs draws indices in [-3, 5]: some row tiles out of range (NaN products where the mask
  // keeps them), weights clamped, scatter windows dropped, tiles visited in any order or never.
  // Blocks of 128: 2 N blocks x 2 K steps.
  for (const bool transposed : {false, true}) {
    SCOPED_TRACE(transposed ? "weights [G, N, K]" : "weights [G, K, N]");
    auto m = Parse(transposed ? Replace(kRaw, "rhs_contracting_dims={1}", "rhs_contracting_dims={2}") : std::string(kRaw));
    ASSERT_NE(m, nullptr);
    auto run = EmitAndRun(*m, transposed ? 5 : 3, {{"gmm_bn", 128}, {"gmm_bk", 128}});
    ASSERT_TRUE(run.report.value("ok", false)) << run.report.dump() << "\n" << run.source;
    EXPECT_TRUE(run.report.at("races").empty());
    auto gk = GroupedKernels(run.kernel_map);
    ASSERT_EQ(gk.size(), 1u) << run.kernel_map.dump(1);
    EXPECT_EQ(gk[0].at("grid"), nlohmann::json({2, 10, 2}));
    ASSERT_EQ(run.outputs.size(), 1u);
    EXPECT_TRUE(NearWithNaN(run.outputs[0], run.expected[0], 2e-2));
    // The inputs do exercise the NaN fill and the initial value of unwritten rows.
    bool nan = false, half = false;
    for (int64_t i = 0; i < run.expected[0].num_elements(); ++i) {
      nan = nan || std::isnan(run.expected[0].GetDouble(i));
      half = half || run.expected[0].GetDouble(i) == 0.5;
    }
    EXPECT_TRUE(nan);
    EXPECT_TRUE(half);
  }
}

TEST(GroupedGemmTest, RaggedDotOnRandomGroupSizesMatchesTheInterpreter) {
  MK_SKIP_WITHOUT_JAX();
  // 14p's whole module on random group sizes in [-3, 5] (empty and negative groups; most rows
  // past their sum, so zero).
  auto m = SuiteTask("14p");
  ASSERT_NE(m, nullptr);
  auto run = EmitAndRun(*m, 11, {{"gmm_bn", 128}});
  ASSERT_TRUE(run.report.value("ok", false)) << run.report.dump() << "\n" << run.source;
  EXPECT_TRUE(run.report.at("races").empty());
  ASSERT_EQ(GroupedKernels(run.kernel_map).size(), 1u);
  EXPECT_TRUE(cpu::testing::OutputsNear(run.outputs, run.expected, 2e-2));
}

TEST(GroupedGemmTest, CompilesForV5eAndV6e) {
  MK_SKIP_WITHOUT_JAX();
  struct Case {
    const char* gen;
    std::map<std::string, int64_t> blocks;  // v6e's MXU side is 256
  };
  for (const Case& c : {Case{"v5e", {{"gmm_bn", 128}, {"gmm_bk", 128}}}, Case{"v6e", {{"gmm_bn", 256}, {"gmm_bk", 256}}}}) {
    SCOPED_TRACE(c.gen);
    auto m = Parse(kRaw);
    ASSERT_NE(m, nullptr);
    const auto t = target::TargetByName(std::string("tpu-") + c.gen);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    auto impl = EmitFor(*m, *t, c.blocks);
    ASSERT_TRUE(impl.ok()) << impl.status().ToString();
    ASSERT_EQ(GroupedKernels(MapOf(*impl)).size(), 1u);
    const std::string dir = cpu::testing::MakeTempDir("mk-gmm-compile");
    std::ofstream(dir + "/kernel.py") << impl->sources[0].text;
    auto r = task::RunBridge({"pallas-compile", "--module", dir + "/kernel.py", "--generation", c.gen, "--json"}, 300);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    std::filesystem::remove_all(dir);
    if (r->exit_code != 0 && r->err.find("libtpu is not installed") != std::string::npos) GTEST_SKIP() << r->err;
    ASSERT_EQ(r->exit_code, 0) << r->err;
    const auto j = nlohmann::json::parse(r->out);
    EXPECT_TRUE(j.value("ok", false)) << j.dump() << "\n" << impl->sources[0].text;
  }
}

}  // namespace
}  // namespace mk::codegen::pallas
