// Flash attention: the matcher on the suite's attention tasks (1p MHA causal, 2p/4p GQA causal,
// 5p causal with a per-head bias) and on chains it must refuse; the emitted pallas_call run in TPU
// interpret mode against the reference interpreter (non-causal, causal over several kv blocks,
// GQA), and what the kernel map and the performance model see.
#include "codegen/pallas/flash_attention.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "codegen/pallas/pallas_test_util.h"
#include "hlo/call_inliner.h"
#include "target/tpu_perf_model.h"

namespace mk::codegen::pallas {
namespace {

using testing::EmitAndRun;
using testing::KernelsRunning;
using testing::Parse;
using testing::SuiteTask;

// The kernel map's flash-attention entries.
std::vector<nlohmann::json> AttentionKernels(const nlohmann::json& map) {
  std::vector<nlohmann::json> out;
  for (const auto& k : map.at("kernels")) {
    if (k.at("family") == "attention") out.push_back(k);
  }
  return out;
}

struct SuiteCase {
  const char* id;
  int64_t nb, g, sq, sk, d, dv;
  bool bias;
  const char *q, *k, *v;  // the dots' operands
};

TEST(FlashAttentionTest, MatchesTheSuitesAttentionTasks) {
  // 1p: MHA (B=1, H=4) causal; 2p: GQA 16 query heads on 1 kv head; 4p: GQA 8 on 1; 5p: MHA
  // causal with a per-head bias added to the scores; 3p: DeepSeek MLA (q/k of 48 = nope + rope
  // built in glue, v of 32).
  const SuiteCase cases[] = {{"1p", 4, 1, 128, 128, 64, 64, false, "q.1", "k.1", "v.1"},
                             {"2p", 1, 16, 128, 128, 32, 32, false, "reshape.2", "k.1", "v.1"},
                             {"4p", 1, 8, 128, 128, 64, 64, false, "reshape.2", "k.1", "v.1"},
                             {"5p", 4, 1, 128, 128, 64, 64, true, "q.1", "k.1", "v.1"},
                             {"3p", 4, 1, 64, 64, 48, 32, false, "concatenate.5", "concatenate.7", "slice.19"}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.id);
    auto m = SuiteTask(c.id);
    ASSERT_NE(m, nullptr);
    auto plan = analysis::PlanFusion(*m);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    AttentionScan scan = FindAttention(*plan);
    ASSERT_EQ(scan.found.size(), 1u) << ::testing::PrintToString(scan.refused) << "\n" << plan->Summary();
    const AttentionMatch& a = scan.found[0].match;
    EXPECT_EQ(a.nb, c.nb);
    EXPECT_EQ(a.g, c.g);
    EXPECT_EQ(a.sq, c.sq);
    EXPECT_EQ(a.sk, c.sk);
    EXPECT_EQ(a.d, c.d);
    EXPECT_EQ(a.dv, c.dv);
    ASSERT_TRUE(a.causal.has_value());  // jnp.tril-style `k <= q`
    EXPECT_EQ(a.causal->offset, 0);
    EXPECT_EQ(a.q->name, c.q);
    EXPECT_EQ(a.k->name, c.k);
    EXPECT_EQ(a.v->name, c.v);
    int arrays = 0, masks = 0;
    for (const auto& st : a.score) {
      for (auto s : st.sides) {
        arrays += s == ScoreStep::Side::kArray;
        masks += s == ScoreStep::Side::kMask;
      }
    }
    EXPECT_EQ(arrays, c.bias ? 1 : 0);
    EXPECT_EQ(masks, 1);
    // It replaces at least the q.k and p.v kernels and the softmax between them.
    EXPECT_GE(scan.found[0].kernels.size(), 2u) << plan->Summary();
    ASSERT_EQ(scan.found[0].outputs.size(), 1u);
    // The kernel map: one attention call in Pallas, the kernels it replaced marked fused.
    const auto t = testing::TpuV5e();
    auto impl = PallasEmitter().Emit(*plan, testing::CandidateFor(*plan, t), t);
    ASSERT_TRUE(impl.ok()) << impl.status().ToString();
    const auto map = nlohmann::json::parse(impl->sources[1].text);
    auto att = AttentionKernels(map);
    ASSERT_EQ(att.size(), 1u) << map.dump(2);
    EXPECT_EQ(att[0].at("runs"), "pallas");
    EXPECT_EQ(att[0].at("grid").at(0), c.nb * c.g);
    EXPECT_EQ(KernelsRunning(map, "fused").size(), scan.found[0].kernels.size() - 1);
  }
}

TEST(FlashAttentionTest, MatchesAPerSequenceLengthMaskAsAPrefetchedScalar) {
  // 6p (paged decode) masks keys past each sequence's length, a parameter indexed by the batch
  // dim: the mask reads it per grid step from SMEM (scalar prefetch). Its K/V pages are read
  // through the page table (paged_kv_test.cc).
  auto m = SuiteTask("6p");
  ASSERT_NE(m, nullptr);
  auto plan = analysis::PlanFusion(*m);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  AttentionScan scan = FindAttention(*plan);
  ASSERT_EQ(scan.found.size(), 1u) << ::testing::PrintToString(scan.refused);
  const AttentionMatch& a = scan.found[0].match;
  ASSERT_EQ(a.prefetch.size(), 1u);
  EXPECT_EQ(a.prefetch[0]->name, "lengths.1");
  EXPECT_FALSE(a.causal.has_value());
  EXPECT_EQ(a.nb, 16);  // 8 sequences x 2 kv heads
  EXPECT_EQ(a.sq, 8);   // one token: the 8 query heads of a kv head are the rows
  EXPECT_EQ(a.sk, 256);
}

// The softmax reduces over the query dim (2), not the key dim the p.v dot contracts (3).
constexpr char kWrongAxis[] = R"(
HloModule wrong_axis
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
  q = bf16[1,2,128,64] parameter(0)
  k = bf16[1,2,128,64] parameter(1)
  v = bf16[1,2,128,64] parameter(2)
  s = f32[1,2,128,128] dot(q, k), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={3}
  ninf = f32[] constant(-inf)
  mx = f32[1,2,128] reduce(s, ninf), dimensions={2}, to_apply=max_f32
  mxb = f32[1,2,128,128] broadcast(mx), dimensions={0,1,3}
  x = f32[1,2,128,128] subtract(s, mxb)
  e = f32[1,2,128,128] exponential(x)
  zero = f32[] constant(0)
  sm = f32[1,2,128] reduce(e, zero), dimensions={2}, to_apply=add_f32
  smb = f32[1,2,128,128] broadcast(sm), dimensions={0,1,3}
  p = f32[1,2,128,128] divide(e, smb)
  pb = bf16[1,2,128,128] convert(p)
  ROOT o = f32[1,2,128,64] dot(pb, v), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}
}
)";

TEST(FlashAttentionTest, RefusesASoftmaxOverTheWrongAxisWithTheReason) {
  auto m = Parse(kWrongAxis);
  ASSERT_NE(m, nullptr);
  auto plan = analysis::PlanFusion(*m);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  AttentionScan scan = FindAttention(*plan);
  EXPECT_TRUE(scan.found.empty());
  ASSERT_EQ(scan.refused.size(), 1u);
  EXPECT_NE(scan.refused[0].find("%o: "), std::string::npos) << scan.refused[0];
  EXPECT_NE(scan.refused[0].find("key dim"), std::string::npos) << scan.refused[0];
  // And the emitter still emits it, unfused, saying why in the kernel map.
  const auto t = testing::TpuV5e();
  auto impl = PallasEmitter().Emit(*plan, testing::CandidateFor(*plan, t), t);
  ASSERT_TRUE(impl.ok()) << impl.status().ToString();
  const auto map = nlohmann::json::parse(impl->sources[1].text);
  EXPECT_EQ(map.at("attention_refused").size(), 1u);
  for (const auto& k : map.at("kernels")) EXPECT_NE(k.at("family"), "attention");
}

// Non-causal attention, B=1, H=2, Sq=128, Sk=256 (two kv blocks of 128), scaled scores.
constexpr char kPlain[] = R"(
HloModule plain_attention
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
  q = bf16[1,128,2,64] parameter(0)
  k = bf16[1,256,2,64] parameter(1)
  v = bf16[1,256,2,64] parameter(2)
  s0 = f32[1,2,128,256] dot(q, k), lhs_batch_dims={0,2}, lhs_contracting_dims={3}, rhs_batch_dims={0,2}, rhs_contracting_dims={3}
  c = f32[] constant(0.125)
  cb = f32[1,2,128,256] broadcast(c), dimensions={}
  s = f32[1,2,128,256] multiply(s0, cb)
  ninf = f32[] constant(-inf)
  mx = f32[1,2,128] reduce(s, ninf), dimensions={3}, to_apply=max_f32
  mxb = f32[1,2,128,256] broadcast(mx), dimensions={0,1,2}
  x = f32[1,2,128,256] subtract(s, mxb)
  e = f32[1,2,128,256] exponential(x)
  zero = f32[] constant(0)
  sm = f32[1,2,128] reduce(e, zero), dimensions={3}, to_apply=add_f32
  smb = f32[1,2,128,256] broadcast(sm), dimensions={0,1,2}
  p = f32[1,2,128,256] divide(e, smb)
  pb = bf16[1,2,128,256] convert(p)
  o = f32[1,2,128,64] dot(pb, v), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,2}, rhs_contracting_dims={1}
  t = f32[1,128,2,64] transpose(o), dimensions={0,2,1,3}
  ROOT out = bf16[1,128,2,64] convert(t)
}
)";

TEST(FlashAttentionTest, PlainAttentionMatchesTheInterpreter) {
  MK_SKIP_WITHOUT_JAX();
  auto m = Parse(kPlain);
  ASSERT_NE(m, nullptr);
  auto run = EmitAndRun(*m, 3, {{"bq", 64}, {"bkv", 128}});
  ASSERT_TRUE(run.report.value("ok", false)) << run.report.dump() << "\n" << run.source;
  EXPECT_TRUE(run.report.at("races").empty());
  EXPECT_TRUE(cpu::testing::OutputsNear(run.outputs, run.expected, 2e-2));
  auto pallas = AttentionKernels(run.kernel_map);
  ASSERT_EQ(pallas.size(), 1u) << run.kernel_map.dump(2);
  EXPECT_EQ(pallas[0].at("runs"), "pallas");
  EXPECT_EQ(pallas[0].at("family"), "attention");
  EXPECT_EQ(pallas[0].at("grid"), nlohmann::json({2, 2, 2}));
  EXPECT_EQ(pallas[0].at("skipped_blocks"), 0);
  EXPECT_TRUE(pallas[0].at("causal").is_null());
  EXPECT_TRUE(KernelsRunning(run.kernel_map, "glue").empty()) << run.kernel_map.dump(2);
  EXPECT_EQ(KernelsRunning(run.kernel_map, "fused").size(), 2u) << run.kernel_map.dump(2);
  EXPECT_EQ(run.source.find("pl.when(j <="), std::string::npos);
}

TEST(FlashAttentionTest, ARefusedAttentionCallFallsBackToItsKernelsThenTheAnchorToGlue) {
  auto m = Parse(kPlain);
  ASSERT_NE(m, nullptr);
  auto plan = analysis::PlanFusion(*m);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  const AttentionScan scan = FindAttention(*plan);
  ASSERT_EQ(scan.found.size(), 1u);
  const size_t anchor = scan.found[0].anchor;
  const target::Target t = testing::TpuV5e();
  PallasEmitter e;
  auto map_of = [&](int64_t level) {
    space::Candidate c = testing::CandidateFor(*plan, t);
    c.kernels[anchor].values[kGlueFallbackKey] = level;
    auto impl = e.Emit(*plan, c, t);
    EXPECT_TRUE(impl.ok()) << impl.status().ToString();
    for (const auto& s : impl->sources) {
      if (s.name == "kernel_map.json") return nlohmann::json::parse(s.text);
    }
    return nlohmann::json();
  };
  // 1: no flash-attention call; the chain's kernels are emitted one by one, the anchor (the p.v
  // dot) in a pallas_call of its own.
  const nlohmann::json split = map_of(1);
  EXPECT_TRUE(AttentionKernels(split).empty()) << split.dump(2);
  EXPECT_TRUE(KernelsRunning(split, "fused").empty()) << split.dump(2);
  EXPECT_EQ(split.at("kernels")[anchor].at("runs"), "pallas") << split.dump(2);
  // 2: refused again alone, the anchor runs in glue.
  const nlohmann::json glue = map_of(2);
  EXPECT_EQ(glue.at("kernels")[anchor].at("runs"), "glue") << glue.dump(2);
  EXPECT_TRUE(glue.at("kernels")[anchor].at("fallback").get<bool>());
}

TEST(FlashAttentionTest, AttentionSplitByAFallbackMatchesTheInterpreter) {
  MK_SKIP_WITHOUT_JAX();
  auto m = Parse(kPlain);
  ASSERT_NE(m, nullptr);
  auto plan = analysis::PlanFusion(*m);
  ASSERT_TRUE(plan.ok());
  const AttentionScan scan = FindAttention(*plan);
  ASSERT_EQ(scan.found.size(), 1u);
  auto run = EmitAndRun(*m, 4, {}, {{scan.found[0].anchor, 1}});
  ASSERT_TRUE(run.report.value("ok", false)) << run.report.dump() << "\n" << run.source;
  EXPECT_TRUE(cpu::testing::OutputsNear(run.outputs, run.expected, 2e-2));
  EXPECT_TRUE(AttentionKernels(run.kernel_map).empty()) << run.kernel_map.dump(2);
}

// Causal attention as jax writes it (iota compare, select with -1e30), Sq=Sk=256 with blocks
// bq=64, bkv=128: of each q block row's 2 kv blocks, the first q rows skip the second.
constexpr char kCausal[] = R"(
HloModule causal_attention
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
  q = bf16[1,256,2,64] parameter(0)
  k = bf16[1,256,2,64] parameter(1)
  v = bf16[1,256,2,64] parameter(2)
  ik = s32[256] iota(), iota_dimension=0
  ikb = s32[256,256] broadcast(ik), dimensions={1}
  iq = s32[256,256] iota(), iota_dimension=0
  le = pred[256,256] compare(ikb, iq), direction=LE
  leb = pred[1,2,256,256] broadcast(le), dimensions={2,3}
  s0 = f32[1,2,256,256] dot(q, k), lhs_batch_dims={0,2}, lhs_contracting_dims={3}, rhs_batch_dims={0,2}, rhs_contracting_dims={3}
  c = f32[] constant(0.125)
  cb = f32[1,2,256,256] broadcast(c), dimensions={}
  s1 = f32[1,2,256,256] multiply(s0, cb)
  fill = f32[] constant(-1e+30)
  fb = f32[1,2,256,256] broadcast(fill), dimensions={}
  s = f32[1,2,256,256] select(leb, s1, fb)
  ninf = f32[] constant(-inf)
  mx = f32[1,2,256] reduce(s, ninf), dimensions={3}, to_apply=max_f32
  mxr = f32[1,2,256,1] reshape(mx)
  mxr1 = f32[1,2,256,1] broadcast(mxr), dimensions={0,1,2,3}
  mxr2 = f32[1,2,256] reshape(mxr1)
  mxb = f32[1,2,256,256] broadcast(mxr2), dimensions={0,1,2}
  x = f32[1,2,256,256] subtract(s, mxb)
  e = f32[1,2,256,256] exponential(x)
  zero = f32[] constant(0)
  sm = f32[1,2,256] reduce(e, zero), dimensions={3}, to_apply=add_f32
  smb = f32[1,2,256,256] broadcast(sm), dimensions={0,1,2}
  p = f32[1,2,256,256] divide(e, smb)
  pb = bf16[1,2,256,256] convert(p)
  o = f32[1,2,64,256] dot(v, pb), lhs_batch_dims={0,2}, lhs_contracting_dims={1}, rhs_batch_dims={0,1}, rhs_contracting_dims={3}
  t = f32[1,256,2,64] transpose(o), dimensions={0,3,1,2}
  ROOT out = bf16[1,256,2,64] convert(t)
}
)";

TEST(FlashAttentionTest, CausalAttentionSkipsBlocksAboveTheDiagonalAndMatchesTheInterpreter) {
  MK_SKIP_WITHOUT_JAX();
  auto m = Parse(kCausal);
  ASSERT_NE(m, nullptr);
  auto run = EmitAndRun(*m, 5, {{"bq", 64}, {"bkv", 128}});
  ASSERT_TRUE(run.report.value("ok", false)) << run.report.dump() << "\n" << run.source;
  EXPECT_TRUE(run.report.at("races").empty());
  EXPECT_TRUE(cpu::testing::OutputsNear(run.outputs, run.expected, 2e-2));
  auto pallas = AttentionKernels(run.kernel_map);
  ASSERT_EQ(pallas.size(), 1u) << run.kernel_map.dump(2);
  EXPECT_EQ(pallas[0].at("runs"), "pallas");
  EXPECT_EQ(pallas[0].at("family"), "attention");
  EXPECT_EQ(pallas[0].at("grid"), nlohmann::json({2, 4, 2}));
  EXPECT_EQ(pallas[0].at("causal"), 0);
  // q blocks 0 and 1 (rows 0..127) never see keys 128..255: 2 of 8 blocks per head skipped.
  EXPECT_EQ(pallas[0].at("skipped_blocks"), 4);
  EXPECT_EQ(pallas[0].at("tpu_kernel_shape").at("skipped_steps"), 4);
  EXPECT_NE(run.source.find("@pl.when(j <= (i * 64 + 63) // 128)"), std::string::npos) << run.source;
  EXPECT_NE(run.source.find("jnp.minimum(j, (i * 64 + 63) // 128)"), std::string::npos);
}

// GQA as jax writes it (2p's form): q reshaped to [B, S, Hkv, group, D], the kv head a batch dim
// of both dots; 2 kv heads, 2 query heads each; causal over two kv blocks.
constexpr char kGqa[] = R"(
HloModule gqa_attention
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
  q = bf16[1,256,4,32] parameter(0)
  k = bf16[1,256,2,32] parameter(1)
  v = bf16[1,256,2,32] parameter(2)
  ik = s32[256] iota(), iota_dimension=0
  ikb = s32[256,256] broadcast(ik), dimensions={1}
  iq = s32[256] iota(), iota_dimension=0
  iqb = s32[256,256] broadcast(iq), dimensions={0}
  le = pred[256,256] compare(ikb, iqb), direction=LE
  leb = pred[1,2,2,256,256] broadcast(le), dimensions={3,4}
  qr = bf16[1,256,2,2,32] reshape(q)
  s0 = f32[1,2,256,256,2] dot(k, qr), lhs_batch_dims={0,2}, lhs_contracting_dims={3}, rhs_batch_dims={0,2}, rhs_contracting_dims={4}
  st = f32[1,2,2,256,256] transpose(s0), dimensions={0,1,4,3,2}
  c = f32[] constant(0.176776692)
  cb = f32[1,2,2,256,256] broadcast(c), dimensions={}
  s1 = f32[1,2,2,256,256] multiply(st, cb)
  fill = f32[] constant(-1e+30)
  fb = f32[1,2,2,256,256] broadcast(fill), dimensions={}
  s = f32[1,2,2,256,256] select(leb, s1, fb)
  ninf = f32[] constant(-inf)
  mx = f32[1,2,2,256] reduce(s, ninf), dimensions={4}, to_apply=max_f32
  mxb = f32[1,2,2,256,256] broadcast(mx), dimensions={0,1,2,3}
  x = f32[1,2,2,256,256] subtract(s, mxb)
  e = f32[1,2,2,256,256] exponential(x)
  zero = f32[] constant(0)
  sm = f32[1,2,2,256] reduce(e, zero), dimensions={4}, to_apply=add_f32
  smb = f32[1,2,2,256,256] broadcast(sm), dimensions={0,1,2,3}
  p = f32[1,2,2,256,256] divide(e, smb)
  pb = bf16[1,2,2,256,256] convert(p)
  o = f32[1,2,32,2,256] dot(v, pb), lhs_batch_dims={0,2}, lhs_contracting_dims={1}, rhs_batch_dims={0,1}, rhs_contracting_dims={4}
  t = f32[1,256,2,2,32] transpose(o), dimensions={0,4,1,3,2}
  r = f32[1,256,4,32] reshape(t)
  ROOT out = bf16[1,256,4,32] convert(r)
}
)";

TEST(FlashAttentionTest, GroupedQueryAttentionReadsEachKvHeadOnceAndMatchesTheInterpreter) {
  MK_SKIP_WITHOUT_JAX();
  auto m = Parse(kGqa);
  ASSERT_NE(m, nullptr);
  auto run = EmitAndRun(*m, 11, {{"bq", 128}, {"bkv", 128}});
  ASSERT_TRUE(run.report.value("ok", false)) << run.report.dump() << "\n" << run.source;
  EXPECT_TRUE(run.report.at("races").empty());
  EXPECT_TRUE(cpu::testing::OutputsNear(run.outputs, run.expected, 2e-2));
  auto pallas = AttentionKernels(run.kernel_map);
  ASSERT_EQ(pallas.size(), 1u) << run.kernel_map.dump(2);
  EXPECT_EQ(pallas[0].at("runs"), "pallas");
  EXPECT_EQ(pallas[0].at("gqa_group"), 2);
  // 2 kv heads x 2 query heads each, 2 q blocks, 2 kv blocks; q block 0 skips kv block 1.
  EXPECT_EQ(pallas[0].at("grid"), nlohmann::json({4, 2, 2}));
  EXPECT_EQ(pallas[0].at("skipped_blocks"), 4);
  // k and v are passed as [kv heads, S, D], indexed by query head // group: no broadcast copy.
  EXPECT_NE(run.source.find("lambda b, i, j: (b // 2, jnp.minimum(j,"), std::string::npos) << run.source;
  EXPECT_EQ(run.source.find("broadcast_in_dim(v"), std::string::npos);
}

// GQA written as jnp.repeat of k and v over the query heads (4 query heads, 2 kv heads): the
// call reads the unrepeated k and v, query head h from kv head h // 2.
constexpr char kRepeatGqa[] = R"(
HloModule repeat_gqa
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
  q = bf16[1,128,4,64] parameter(0)
  k = bf16[1,256,2,64] parameter(1)
  v = bf16[1,256,2,64] parameter(2)
  kb = bf16[1,256,2,2,64] broadcast(k), dimensions={0,1,2,4}
  kr = bf16[1,256,4,64] reshape(kb)
  vb = bf16[1,256,2,2,64] broadcast(v), dimensions={0,1,2,4}
  vr = bf16[1,256,4,64] reshape(vb)
  s0 = f32[1,4,128,256] dot(q, kr), lhs_batch_dims={0,2}, lhs_contracting_dims={3}, rhs_batch_dims={0,2}, rhs_contracting_dims={3}
  c = f32[] constant(0.125)
  cb = f32[1,4,128,256] broadcast(c), dimensions={}
  s = f32[1,4,128,256] multiply(s0, cb)
  ninf = f32[] constant(-inf)
  mx = f32[1,4,128] reduce(s, ninf), dimensions={3}, to_apply=max_f32
  mxb = f32[1,4,128,256] broadcast(mx), dimensions={0,1,2}
  x = f32[1,4,128,256] subtract(s, mxb)
  e = f32[1,4,128,256] exponential(x)
  zero = f32[] constant(0)
  sm = f32[1,4,128] reduce(e, zero), dimensions={3}, to_apply=add_f32
  smb = f32[1,4,128,256] broadcast(sm), dimensions={0,1,2}
  p = f32[1,4,128,256] divide(e, smb)
  pb = bf16[1,4,128,256] convert(p)
  o = f32[1,4,128,64] dot(pb, vr), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,2}, rhs_contracting_dims={1}
  t = f32[1,128,4,64] transpose(o), dimensions={0,2,1,3}
  ROOT out = bf16[1,128,4,64] convert(t)
}
)";

TEST(FlashAttentionTest, GqaWrittenAsARepeatOfKvReadsTheUnrepeatedValuesAndMatchesTheInterpreter) {
  MK_SKIP_WITHOUT_JAX();
  auto m = Parse(kRepeatGqa);
  ASSERT_NE(m, nullptr);
  auto run = EmitAndRun(*m, 17, {{"bq", 128}, {"bkv", 128}});
  ASSERT_TRUE(run.report.value("ok", false)) << run.report.dump() << "\n" << run.source;
  EXPECT_TRUE(run.report.at("races").empty());
  EXPECT_TRUE(cpu::testing::OutputsNear(run.outputs, run.expected, 2e-2));
  auto pallas = AttentionKernels(run.kernel_map);
  ASSERT_EQ(pallas.size(), 1u) << run.kernel_map.dump(2);
  EXPECT_EQ(pallas[0].at("gqa_group"), 2);
  EXPECT_EQ(pallas[0].at("grid"), nlohmann::json({4, 1, 2}));
  // k and v go in as [2 kv heads, 256, 64]; no repeated copy is built.
  EXPECT_NE(run.source.find("(2, 256, 64))"), std::string::npos) << run.source;
  EXPECT_NE(run.source.find("lambda b, i, j: (b // 2, j, 0)"), std::string::npos) << run.source;
  EXPECT_EQ(run.source.find("broadcast_in_dim(v"), std::string::npos) << run.source;
}

// Decode attention with a per-sequence length (2 sequences, 2 kv heads x 4 query heads, one
// token, 256 keys in two blocks): the length is scalar-prefetched and read per step.
constexpr char kLengths[] = R"(
HloModule length_masked_decode
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
  q = bf16[2,8,128] parameter(0)
  k = bf16[2,2,256,128] parameter(1)
  v = bf16[2,2,256,128] parameter(2)
  lengths = s32[2] parameter(3)
  ik = s32[256] iota(), iota_dimension=0
  ikb = s32[2,256] broadcast(ik), dimensions={1}
  lb = s32[2,256] broadcast(lengths), dimensions={0}
  lt = pred[2,256] compare(ikb, lb), direction=LT
  ltb = pred[2,2,4,256] broadcast(lt), dimensions={0,3}
  qr = bf16[2,2,4,128] reshape(q)
  s0 = f32[2,2,4,256] dot(qr, k), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={3}
  c = f32[] constant(0.0883883461)
  cb = f32[2,2,4,256] broadcast(c), dimensions={}
  s1 = f32[2,2,4,256] multiply(s0, cb)
  fill = f32[] constant(-1e+30)
  fb = f32[2,2,4,256] broadcast(fill), dimensions={}
  s = f32[2,2,4,256] select(ltb, s1, fb)
  ninf = f32[] constant(-inf)
  mx = f32[2,2,4] reduce(s, ninf), dimensions={3}, to_apply=max_f32
  mxb = f32[2,2,4,256] broadcast(mx), dimensions={0,1,2}
  x = f32[2,2,4,256] subtract(s, mxb)
  e = f32[2,2,4,256] exponential(x)
  zero = f32[] constant(0)
  sm = f32[2,2,4] reduce(e, zero), dimensions={3}, to_apply=add_f32
  smb = f32[2,2,4,256] broadcast(sm), dimensions={0,1,2}
  p = f32[2,2,4,256] divide(e, smb)
  pb = bf16[2,2,4,256] convert(p)
  o = f32[2,2,4,128] dot(pb, v), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}
  r = f32[2,8,128] reshape(o)
  ROOT out = bf16[2,8,128] convert(r)
}
)";

TEST(FlashAttentionTest, LengthMaskedDecodeReadsThePrefetchedLengthAndMatchesTheInterpreter) {
  MK_SKIP_WITHOUT_JAX();
  auto m = Parse(kLengths);
  ASSERT_NE(m, nullptr);
  auto run = EmitAndRun(*m, 13, {{"bkv", 128}});
  ASSERT_TRUE(run.report.value("ok", false)) << run.report.dump() << "\n" << run.source;
  EXPECT_TRUE(run.report.at("races").empty());
  EXPECT_TRUE(cpu::testing::OutputsNear(run.outputs, run.expected, 2e-2));
  auto pallas = AttentionKernels(run.kernel_map);
  ASSERT_EQ(pallas.size(), 1u) << run.kernel_map.dump(2);
  EXPECT_EQ(pallas[0].at("grid"), nlohmann::json({4, 1, 2}));
  EXPECT_NE(run.source.find("pltpu.PrefetchScalarGridSpec("), std::string::npos) << run.source;
  EXPECT_NE(run.source.find("pf0_ref[bn]"), std::string::npos) << run.source;
}

// A length mask whose per-batch value another kernel computes internally from a large
// intermediate (the sum of squares of a [2, 40000] array, plus one): too costly to recompute in
// glue, so the attention is refused with the reason (7p's slices, small and from a parameter,
// are recomputed: paged_kv_test.cc).
TEST(FlashAttentionTest, RefusesAPerBatchValueTooCostlyToRecomputeInGlue) {
  std::string hlo = kLengths;
  const std::string from = "  lengths = s32[2] parameter(3)\n";
  const size_t at = hlo.find(from);
  ASSERT_NE(at, std::string::npos);
  hlo.replace(at, from.size(),
              "  big = s32[2,40000] parameter(3)\n"
              "  sq = s32[2,40000] multiply(big, big)\n"
              "  zs = s32[] constant(0)\n"
              "  tot = s32[2] reduce(sq, zs), dimensions={1}, to_apply=add_s32\n"
              "  one = s32[] constant(1)\n"
              "  oneb = s32[2] broadcast(one), dimensions={}\n"
              "  lengths = s32[2] add(tot, oneb)\n");
  const std::string comp = "ENTRY main {";
  hlo.replace(hlo.find(comp), comp.size(),
              "add_s32 {\n  a = s32[] parameter(0)\n  b = s32[] parameter(1)\n  ROOT s = s32[] add(a, b)\n}\n" + comp);
  auto m = Parse(hlo);
  ASSERT_NE(m, nullptr);
  auto plan = analysis::PlanFusion(*m);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  AttentionScan scan = FindAttention(*plan);
  EXPECT_TRUE(scan.found.empty()) << plan->Summary();
  ASSERT_EQ(scan.refused.size(), 1u) << plan->Summary();
  EXPECT_NE(scan.refused[0].find("cannot be recomputed in glue"), std::string::npos) << scan.refused[0];
}

// The skipping paths (pl.when over kv blocks, the clamped K/V index, the kv head // group in
// the index_map) lowered by the real TPU compiler: the suite's ci tasks have one kv block, so
// their compile never reaches them. Skipped when libtpu is not installed.
TEST(FlashAttentionTest, CausalGqaAndLengthMaskedKernelsCompileForV5eAndCausalForV6e) {
  MK_SKIP_WITHOUT_JAX();
  struct Case {
    const char* hlo;
    const char* gen;
    std::map<std::string, int64_t> blocks;  // v6e's MXU side is 256: one kv block of Sk=256
  };
  // (Three compiles: each costs about 4 s.)
  const Case cases[] = {{kGqa, "v5e", {{"bq", 128}, {"bkv", 128}}},
                        {kCausal, "v6e", {{"bq", 64}, {"bkv", 256}}},
                        {kLengths, "v5e", {{"bkv", 128}}}};
  for (const auto& c : cases) {
    auto m = Parse(c.hlo);
    ASSERT_NE(m, nullptr);
    auto plan = analysis::PlanFusion(*m);
    ASSERT_TRUE(plan.ok());
    const std::string gen = c.gen;
    {
      SCOPED_TRACE(std::string(m->name) + " on " + gen);
      const auto t = target::TargetByName("tpu-" + gen);
      ASSERT_TRUE(t.ok()) << t.status().ToString();
      auto impl = PallasEmitter().Emit(*plan, testing::CandidateFor(*plan, *t, c.blocks), *t);
      ASSERT_TRUE(impl.ok()) << impl.status().ToString();
      const std::string dir = cpu::testing::MakeTempDir("mk-flash-compile");
      std::ofstream(dir + "/kernel.py") << impl->sources[0].text;
      auto r = task::RunBridge({"pallas-compile", "--module", dir + "/kernel.py", "--generation", gen, "--json"}, 300);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      std::filesystem::remove_all(dir);
      if (r->exit_code != 0 && r->err.find("libtpu is not installed") != std::string::npos) {
        GTEST_SKIP() << r->err;
      }
      ASSERT_EQ(r->exit_code, 0) << r->err;
      const auto j = nlohmann::json::parse(r->out);
      EXPECT_TRUE(j.value("ok", false)) << j.dump() << "\n" << impl->sources[0].text;
    }
  }
}

TEST(FlashAttentionTest, SkippedCausalBlocksLowerTheModelledTime) {
  auto m = Parse(kCausal);
  ASSERT_NE(m, nullptr);
  auto plan = analysis::PlanFusion(*m);
  ASSERT_TRUE(plan.ok());
  const auto t = target::TargetByName("tpu-v5e");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  auto impl = PallasEmitter().Emit(*plan, testing::CandidateFor(*plan, *t, {{"bq", 64}, {"bkv", 128}}), *t);
  ASSERT_TRUE(impl.ok()) << impl.status().ToString();
  const auto map = nlohmann::json::parse(impl->sources[1].text);
  int attention = 0;
  for (const auto& k : map.at("kernels")) {
    if (k.at("family") != "attention") continue;
    ++attention;
    target::TpuKernelShape shape;
    const auto& j = k.at("tpu_kernel_shape");
    shape.grid_steps = j.at("grid_steps");
    shape.skipped_steps = j.at("skipped_steps");
    shape.mxu_m = j.at("mxu").at("m");
    shape.mxu_n = j.at("mxu").at("n");
    shape.mxu_k = j.at("mxu").at("k");
    shape.mxu2_m = j.at("mxu2").at("m");
    shape.mxu2_n = j.at("mxu2").at("n");
    shape.mxu2_k = j.at("mxu2").at("k");
    shape.vpu_flops_per_step = j.at("vpu_flops_per_step");
    shape.transcendentals_per_step = j.at("transcendentals_per_step");
    shape.in_bytes_per_step = j.at("in_bytes_per_step");
    shape.out_bytes_per_step = j.at("out_bytes_per_step");
    shape.vmem_bytes = j.at("vmem_bytes");
    auto skipped = target::ModelTpuKernel(*t, shape);
    ASSERT_TRUE(skipped.ok()) << skipped.status().ToString();
    shape.skipped_steps = 0;
    auto dense = target::ModelTpuKernel(*t, shape);
    ASSERT_TRUE(dense.ok());
    EXPECT_LT(skipped->compute_s, dense->compute_s);
    EXPECT_LT(skipped->seconds, dense->seconds);
  }
  EXPECT_EQ(attention, 1);
}

}  // namespace
}  // namespace mk::codegen::pallas
