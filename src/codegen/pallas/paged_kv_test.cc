// Paged K/V in flash attention: the matcher on the suite's paged tasks (6p decode, 7p ragged
// with its per-slot counts recomputed in glue), its refusals (a gather of part of a page; a
// gathered cache used outside the attention), and a paged causal attention run in TPU interpret
// mode against the reference interpreter and compiled by libtpu.
#include "codegen/pallas/paged_kv.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "codegen/pallas/flash_attention.h"
#include "codegen/pallas/pallas_test_util.h"
#include "hlo/call_inliner.h"

namespace mk::codegen::pallas {
namespace {

using testing::EmitAndRun;
using testing::Parse;
using testing::SuiteTask;

nlohmann::json EmitMap(const analysis::FusionPlan& plan, const std::map<std::string, int64_t>& blocks = {}) {
  const target::Target t = testing::TpuV5e();
  auto impl = PallasEmitter().Emit(plan, testing::CandidateFor(plan, t, blocks), t);
  EXPECT_TRUE(impl.ok()) << impl.status().ToString();
  if (!impl.ok()) return nlohmann::json::object();
  return nlohmann::json::parse(impl->sources[1].text);
}

const nlohmann::json* AttentionEntry(const nlohmann::json& map) {
  for (const auto& k : map.at("kernels")) {
    if (k.at("family") == "attention") return &k;
  }
  return nullptr;
}

// Every op some kernel computes in glue (a glue kernel's, or a call's ops_in_glue).
std::vector<std::string> GlueOps(const nlohmann::json& map) {
  std::vector<std::string> out;
  for (const auto& k : map.at("kernels")) {
    if (k.at("runs") == "glue") {
      for (const auto& o : k.at("ops_in_pallas")) out.push_back(o);
    }
    for (const auto& o : k.at("ops_in_glue")) out.push_back(o);
  }
  return out;
}

bool AnyContains(const std::vector<std::string>& v, const std::string& s) {
  return std::any_of(v.begin(), v.end(), [&](const std::string& x) { return x.find(s) != std::string::npos; });
}

TEST(PagedKvTest, SixPReadsKAndVPagesThroughThePageTable) {
  // 6p: k/v = jnp.take(pool, page_table, axis=1) ([Hkv, pages, 16, 128], 16 pages a sequence),
  // each in jnp.take's fill mode (a select on the page index being in range).
  auto m = SuiteTask("6p");
  ASSERT_NE(m, nullptr);
  auto plan = analysis::PlanFusion(*m);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  AttentionScan scan = FindAttention(*plan);
  ASSERT_EQ(scan.found.size(), 1u) << ::testing::PrintToString(scan.refused);
  const AttentionMatch& a = scan.found[0].match;
  ASSERT_TRUE(a.k_paged.has_value()) << ::testing::PrintToString(a.paged_refused);
  ASSERT_TRUE(a.v_paged.has_value());
  for (const PagedKv* p : {&*a.k_paged, &*a.v_paged}) {
    EXPECT_EQ(p->page, 16);
    EXPECT_EQ(p->slots, 16);
    EXPECT_EQ(p->pool_pages, 128);
    EXPECT_EQ(p->heads, 2);
    EXPECT_EQ(p->seqs, 8);
    EXPECT_EQ(p->pool_perm, (std::vector<int64_t>{0, 1, 2, 3}));
    EXPECT_EQ(p->batch_is_seq, (std::vector<bool>{true, false}));  // batch (sequence, kv head)
    ASSERT_NE(p->valid, nullptr);
    EXPECT_EQ(p->index->shape.dtype(), hlo::DType::kS32);
  }
  EXPECT_EQ(a.k_paged->pool->name, "k_pages.1");
  EXPECT_EQ(a.v_paged->pool->name, "v_pages.1");
  EXPECT_EQ(PagedSeqExpr(*a.k_paged, a.batch_sizes, "n"), "(n // 2)");
  EXPECT_EQ(PagedHeadExpr(*a.k_paged, a.batch_sizes, "n"), "(n % 2)");

  const nlohmann::json map = EmitMap(*plan);
  const nlohmann::json* att = AttentionEntry(map);
  ASSERT_NE(att, nullptr) << map.dump(2);
  EXPECT_EQ(att->at("paged_kv").at("k").at("pool"), "k_pages.1");
  EXPECT_EQ(att->at("paged_kv").at("v").at("page"), 16);
  // The gathers are computed by the call (read in place), not in glue.
  EXPECT_FALSE(AnyContains(GlueOps(map), "gather")) << map.dump(2);
  EXPECT_TRUE(AnyContains(att->at("ops_in_pallas").get<std::vector<std::string>>(), "gather.1"));
}

TEST(PagedKvTest, SevenPsRaggedMaskReadsPerSlotCountsRecomputedInGlue) {
  // 7p's mask reads kv_lens - (cu_q_lens[1:] - cu_q_lens[:-1]) per slot; the two slices are
  // internal to a loop kernel, so the call recomputes them from the cu_q_lens parameter.
  auto m = SuiteTask("7p");
  ASSERT_NE(m, nullptr);
  auto plan = analysis::PlanFusion(*m);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  AttentionScan scan = FindAttention(*plan);
  ASSERT_EQ(scan.found.size(), 1u) << ::testing::PrintToString(scan.refused);
  EXPECT_TRUE(scan.refused.empty()) << ::testing::PrintToString(scan.refused);
  const PlannedAttention& pa = scan.found[0];
  EXPECT_TRUE(pa.match.k_paged.has_value());
  EXPECT_TRUE(pa.match.v_paged.has_value());
  EXPECT_FALSE(pa.match.causal.has_value());  // the offset differs per slot: no block skipped
  std::vector<std::string> recomputed, prefetched;
  for (const auto* i : pa.recomputed) recomputed.push_back(i->name);
  for (const auto* i : pa.match.prefetch) prefetched.push_back(i->name);
  EXPECT_EQ(recomputed, (std::vector<std::string>{"slice.4", "slice.5"}));
  EXPECT_TRUE(AnyContains(prefetched, "kv_lens.1")) << ::testing::PrintToString(prefetched);
  EXPECT_TRUE(std::any_of(pa.inputs.begin(), pa.inputs.end(),
                          [](const hlo::Instruction* i) { return i->name == "cu_q_lens.1"; }));
}

// A paged causal prefill: pool [pages=6, page=16, heads=2, d=64] (heads after the page rows, so
// the pool is transposed for the call), a page table [2 sequences, 16 slots]; k's pages in
// jnp.take's fill form with a zero fill where the page index is >= 4, v's plain (the gather
// clamps the index into the pool). Random s32 inputs are in [-3, 5]: clamped and masked pages
// both occur.
constexpr char kPagedCausal[] = R"(
HloModule paged_causal
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
  q = bf16[2,2,256,64] parameter(0)
  kp = bf16[6,16,2,64] parameter(1)
  vp = bf16[6,16,2,64] parameter(2)
  pt = s32[2,16] parameter(3)
  ptc = s32[2,16,1] reshape(pt)
  kg = bf16[2,16,16,2,64] gather(kp, ptc), offset_dims={2,3,4}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=2, slice_sizes={1,16,2,64}
  four = s32[] constant(4)
  fourb = s32[2,16] broadcast(four), dimensions={}
  ok = pred[2,16] compare(pt, fourb), direction=LT
  okb = pred[2,16,16,2,64] broadcast(ok), dimensions={0,1}
  z = bf16[] constant(0)
  zb = bf16[2,16,16,2,64] broadcast(z), dimensions={}
  kgs = bf16[2,16,16,2,64] select(okb, kg, zb)
  k = bf16[2,256,2,64] reshape(kgs)
  vg = bf16[2,16,16,2,64] gather(vp, ptc), offset_dims={2,3,4}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=2, slice_sizes={1,16,2,64}
  v = bf16[2,256,2,64] reshape(vg)
  s0 = f32[2,2,256,256] dot(q, k), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,2}, rhs_contracting_dims={3}
  c = f32[] constant(0.125)
  cb = f32[2,2,256,256] broadcast(c), dimensions={}
  s1 = f32[2,2,256,256] multiply(s0, cb)
  ik = s32[2,2,256,256] iota(), iota_dimension=3
  iq = s32[2,2,256,256] iota(), iota_dimension=2
  le = pred[2,2,256,256] compare(ik, iq), direction=LE
  fill = f32[] constant(-1e+30)
  fb = f32[2,2,256,256] broadcast(fill), dimensions={}
  s = f32[2,2,256,256] select(le, s1, fb)
  ninf = f32[] constant(-inf)
  mx = f32[2,2,256] reduce(s, ninf), dimensions={3}, to_apply=max_f32
  mxb = f32[2,2,256,256] broadcast(mx), dimensions={0,1,2}
  x = f32[2,2,256,256] subtract(s, mxb)
  e = f32[2,2,256,256] exponential(x)
  zero = f32[] constant(0)
  sm = f32[2,2,256] reduce(e, zero), dimensions={3}, to_apply=add_f32
  smb = f32[2,2,256,256] broadcast(sm), dimensions={0,1,2}
  p = f32[2,2,256,256] divide(e, smb)
  pb = bf16[2,2,256,256] convert(p)
  o = f32[2,2,256,64] dot(pb, v), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,2}, rhs_contracting_dims={1}
  ROOT out = bf16[2,2,256,64] convert(o)
}
)";

TEST(PagedKvTest, MatchesAPoolWithHeadsAfterThePageRows) {
  auto m = Parse(kPagedCausal);
  ASSERT_NE(m, nullptr);
  auto plan = analysis::PlanFusion(*m);
  ASSERT_TRUE(plan.ok());
  AttentionScan scan = FindAttention(*plan);
  ASSERT_EQ(scan.found.size(), 1u) << ::testing::PrintToString(scan.refused);
  const AttentionMatch& a = scan.found[0].match;
  ASSERT_TRUE(a.k_paged.has_value()) << ::testing::PrintToString(a.paged_refused);
  ASSERT_TRUE(a.v_paged.has_value());
  EXPECT_EQ(a.k_paged->pool_perm, (std::vector<int64_t>{2, 0, 1, 3}));  // [heads, pages, rows, d]
  EXPECT_NE(a.k_paged->valid, nullptr);
  EXPECT_EQ(a.v_paged->valid, nullptr);
  EXPECT_EQ(a.k_paged->valid_labels, (std::vector<int>{0, PagedKv::kSlot}));
  ASSERT_TRUE(a.causal.has_value());
}

TEST(PagedKvTest, PagedCausalAttentionMatchesTheInterpreter) {
  MK_SKIP_WITHOUT_JAX();
  auto m = Parse(kPagedCausal);
  ASSERT_NE(m, nullptr);
  auto run = EmitAndRun(*m, 21, {{"bq", 128}, {"bkv", 128}});
  ASSERT_TRUE(run.report.value("ok", false)) << run.report.dump() << "\n" << run.source;
  EXPECT_TRUE(run.report.at("races").empty());
  EXPECT_TRUE(cpu::testing::OutputsNear(run.outputs, run.expected, 2e-2));
  const nlohmann::json* att = AttentionEntry(run.kernel_map);
  ASSERT_NE(att, nullptr) << run.kernel_map.dump(2);
  EXPECT_EQ(att->at("grid"), nlohmann::json({4, 2, 2}));
  EXPECT_EQ(att->at("skipped_blocks"), 4);  // q block 0 never sees kv block 1, per head
  EXPECT_EQ(att->at("paged_kv").at("k").at("pages_per_step"), 8);
  // The gathers (kg, vg) are computed by the call, never in glue.
  const std::vector<std::string> glue = GlueOps(run.kernel_map);
  const auto in_call = att->at("ops_in_pallas").get<std::vector<std::string>>();
  for (const std::string op : {"kg", "vg"}) {
    EXPECT_EQ(std::count(glue.begin(), glue.end(), op), 0) << op << "\n" << run.kernel_map.dump(2);
    EXPECT_EQ(std::count(in_call.begin(), in_call.end(), op), 1) << op;
  }
  // Page t of a step read at page_table[seq, kv block * 8 + t], the kv block held on skipped steps.
  EXPECT_NE(run.source.find("jnp.minimum(jnp.maximum(pf[0][((b // 1) // 2) * 16 + jnp.minimum(j, (i * 128 + 127) // 128) * 8 + 7], 0), 5)"),
            std::string::npos)
      << run.source;
}

TEST(PagedKvTest, PagedCausalAttentionCompilesForV5eAndV6e) {
  MK_SKIP_WITHOUT_JAX();
  for (const char* gen : {"v5e", "v6e"}) {
    SCOPED_TRACE(gen);
    auto m = Parse(kPagedCausal);
    ASSERT_NE(m, nullptr);
    auto plan = analysis::PlanFusion(*m);
    ASSERT_TRUE(plan.ok());
    const auto t = target::TargetByName(std::string("tpu-") + gen);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    auto impl = PallasEmitter().Emit(*plan, testing::CandidateFor(*plan, *t, {{"bq", 128}}), *t);
    ASSERT_TRUE(impl.ok()) << impl.status().ToString();
    EXPECT_NE(impl->sources[1].text.find("\"paged_kv\": {"), std::string::npos);
    const std::string dir = cpu::testing::MakeTempDir("mk-paged-compile");
    std::ofstream(dir + "/kernel.py") << impl->sources[0].text;
    auto r = task::RunBridge({"pallas-compile", "--module", dir + "/kernel.py", "--generation", gen, "--json"}, 300);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    std::filesystem::remove_all(dir);
    if (r->exit_code != 0 && r->err.find("libtpu is not installed") != std::string::npos) GTEST_SKIP() << r->err;
    ASSERT_EQ(r->exit_code, 0) << r->err;
    const auto j = nlohmann::json::parse(r->out);
    EXPECT_TRUE(j.value("ok", false)) << j.dump() << "\n" << impl->sources[0].text;
  }
}

// Replaces `from` by `to` in `text` (once; the test fails if it is not there).
std::string With(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(PagedKvTest, RefusesAGatherOfPartOfAPageAndKeepsItInGlue) {
  // v gathers 8 of a page's 16 rows (slices [1, 8, 2, 64]): not whole pages. The attention still
  // runs as one call, with v gathered in glue before it, and the map says why v is not paged.
  std::string hlo = With(kPagedCausal,
                         "vg = bf16[2,16,16,2,64] gather(vp, ptc), offset_dims={2,3,4}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=2, slice_sizes={1,16,2,64}",
                         "vg = bf16[2,16,8,2,64] gather(vp, ptc), offset_dims={2,3,4}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=2, slice_sizes={1,8,2,64}");
  hlo = With(hlo, "v = bf16[2,256,2,64] reshape(vg)", "v = bf16[2,128,2,64] reshape(vg)");
  hlo = With(hlo, "k = bf16[2,256,2,64] reshape(kgs)", "k = bf16[2,128,2,64] reshape(kgs)");
  hlo = With(hlo, "kg = bf16[2,16,16,2,64] gather(kp, ptc), offset_dims={2,3,4}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=2, slice_sizes={1,16,2,64}",
             "kg = bf16[2,16,8,2,64] gather(kp, ptc), offset_dims={2,3,4}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=2, slice_sizes={1,8,2,64}");
  hlo = With(hlo, "okb = pred[2,16,16,2,64]", "okb = pred[2,16,8,2,64]");
  hlo = With(hlo, "zb = bf16[2,16,16,2,64]", "zb = bf16[2,16,8,2,64]");
  hlo = With(hlo, "kgs = bf16[2,16,16,2,64]", "kgs = bf16[2,16,8,2,64]");
  for (const char* dims : {"s0 = f32[2,2,256,256]", "cb = f32[2,2,256,256]", "s1 = f32[2,2,256,256]",
                           "ik = s32[2,2,256,256]", "iq = s32[2,2,256,256]", "le = pred[2,2,256,256]",
                           "fb = f32[2,2,256,256]", "s = f32[2,2,256,256]", "mxb = f32[2,2,256,256]",
                           "x = f32[2,2,256,256]", "e = f32[2,2,256,256]", "smb = f32[2,2,256,256]",
                           "p = f32[2,2,256,256]", "pb = bf16[2,2,256,256]"}) {
    std::string d = dims;
    hlo = With(hlo, d, d.substr(0, d.size() - 4) + "128]");
  }
  auto m = Parse(hlo);
  ASSERT_NE(m, nullptr);
  auto plan = analysis::PlanFusion(*m);
  ASSERT_TRUE(plan.ok());
  AttentionScan scan = FindAttention(*plan);
  ASSERT_EQ(scan.found.size(), 1u) << ::testing::PrintToString(scan.refused);
  const AttentionMatch& a = scan.found[0].match;
  EXPECT_FALSE(a.k_paged.has_value());
  EXPECT_FALSE(a.v_paged.has_value());
  ASSERT_EQ(a.paged_refused.size(), 2u);
  EXPECT_NE(a.paged_refused[0].find("does not take whole pages"), std::string::npos) << a.paged_refused[0];
  const nlohmann::json map = EmitMap(*plan);
  const nlohmann::json* att = AttentionEntry(map);
  ASSERT_NE(att, nullptr);
  EXPECT_TRUE(att->at("paged_kv").is_null());
  EXPECT_EQ(att->at("paged_kv_refused").size(), 2u);
  const std::vector<std::string> glue = GlueOps(map);
  for (const std::string op : {"kg", "vg"}) EXPECT_EQ(std::count(glue.begin(), glue.end(), op), 1) << op << "\n" << map.dump(2);
}

TEST(PagedKvTest, AGatheredCacheUsedOutsideTheAttentionIsGatheredInGlue) {
  // The gathered v is also an output of the module: the call cannot skip building it, so v is
  // read from the gathered cache (k stays paged), the map says why, and it matches the
  // interpreter.
  std::string hlo = With(kPagedCausal, "ROOT out = bf16[2,2,256,64] convert(o)",
                         "out = bf16[2,2,256,64] convert(o)\n  ROOT t = (bf16[2,2,256,64], bf16[2,256,2,64]) tuple(out, v)");
  auto m = Parse(hlo);
  ASSERT_NE(m, nullptr);
  auto plan = analysis::PlanFusion(*m);
  ASSERT_TRUE(plan.ok());
  AttentionScan scan = FindAttention(*plan);
  ASSERT_EQ(scan.found.size(), 1u) << ::testing::PrintToString(scan.refused);
  const AttentionMatch& a = scan.found[0].match;
  EXPECT_TRUE(a.k_paged.has_value());
  EXPECT_FALSE(a.v_paged.has_value());
  ASSERT_FALSE(a.paged_refused.empty());
  EXPECT_NE(a.paged_refused.back().find("is used outside the attention"), std::string::npos) << a.paged_refused.back();
  MK_SKIP_WITHOUT_JAX();
  auto run = EmitAndRun(*m, 22, {{"bq", 128}, {"bkv", 128}});
  ASSERT_TRUE(run.report.value("ok", false)) << run.report.dump() << "\n" << run.source;
  EXPECT_TRUE(cpu::testing::OutputsNear(run.outputs, run.expected, 2e-2));
  const nlohmann::json* att = AttentionEntry(run.kernel_map);
  ASSERT_NE(att, nullptr);
  EXPECT_TRUE(att->at("paged_kv").contains("k"));
  EXPECT_FALSE(att->at("paged_kv").contains("v"));
}

}  // namespace
}  // namespace mk::codegen::pallas
