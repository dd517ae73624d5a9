// The Pallas emitter end to end: small modules of each family emitted, run in TPU interpret
// mode (with race detection on two cores) through the Python bridge, and compared with the
// reference interpreter; plus what goes to glue and why, and the errors it must give.
#include "codegen/pallas/pallas_emitter.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "codegen/pallas/pallas_test_util.h"
#include "hlo/call_inliner.h"

namespace mk::codegen::pallas {
namespace {

using testing::EmitAndRun;
using testing::KernelsRunning;
using testing::Parse;

// bf16 operands accumulated in f32, a bias and tanh-GELU epilogue, back to bf16.
constexpr char kDotGelu[] = R"(
HloModule dot_gelu
ENTRY main {
  x = bf16[64,256] parameter(0)
  w = bf16[256,256] parameter(1)
  bias = f32[256] parameter(2)
  d = f32[64,256] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[64,256] broadcast(bias), dimensions={1}
  s = f32[64,256] add(d, bb)
  c = f32[] constant(0.7978846)
  cb = f32[64,256] broadcast(c), dimensions={}
  k = f32[] constant(0.044715)
  kb = f32[64,256] broadcast(k), dimensions={}
  s2 = f32[64,256] multiply(s, s)
  s3 = f32[64,256] multiply(s2, s)
  ks3 = f32[64,256] multiply(s3, kb)
  inner = f32[64,256] add(s, ks3)
  arg = f32[64,256] multiply(inner, cb)
  th = f32[64,256] tanh(arg)
  one = f32[] constant(1)
  ob = f32[64,256] broadcast(one), dimensions={}
  t1 = f32[64,256] add(th, ob)
  half = f32[] constant(0.5)
  hb = f32[64,256] broadcast(half), dimensions={}
  hs = f32[64,256] multiply(s, hb)
  g = f32[64,256] multiply(hs, t1)
  ROOT out = bf16[64,256] convert(g)
}
)";

TEST(PallasEmitterTest, DotWithBiasGeluEpilogueMatchesTheInterpreter) {
  MK_SKIP_WITHOUT_JAX();
  auto m = Parse(kDotGelu);
  ASSERT_NE(m, nullptr);
  // Blocks of 128 along N and K: two output blocks, two K steps each (accumulation and the
  // epilogue at the last step both exercised).
  auto run = EmitAndRun(*m, 7, {{"bn", 128}, {"bk", 128}});
  ASSERT_TRUE(run.report.value("ok", false)) << run.report.dump() << "\n" << run.source;
  EXPECT_TRUE(run.report.at("races").empty());
  EXPECT_TRUE(cpu::testing::OutputsNear(run.outputs, run.expected, 2e-2));
  auto pallas = KernelsRunning(run.kernel_map, "pallas");
  ASSERT_EQ(pallas.size(), 1u) << run.kernel_map.dump(2);
  EXPECT_EQ(pallas[0].at("grid"), nlohmann::json({1, 2, 2}));
  EXPECT_EQ(pallas[0].at("dimension_semantics"),
            nlohmann::json({"parallel", "parallel", "arbitrary"}));
  EXPECT_EQ(pallas[0].at("tpu_kernel_shape").at("mxu").at("k"), 128);
  EXPECT_TRUE(pallas[0].at("tpu_kernel_shape").at("mxu").at("bf16").get<bool>());
  // Per step: a bf16 64x128 lhs and 128x128 rhs block (16384 + 32768 bytes), plus the f32 bias
  // block of 128, copied once per output column block (2 copies over 4 steps: 256); the bf16
  // 64x128 output block is written once per output block (2 x 16384 over 4 steps).
  EXPECT_EQ(pallas[0].at("tpu_kernel_shape").at("in_bytes_per_step"), 16384 + 32768 + 256);
  EXPECT_EQ(pallas[0].at("tpu_kernel_shape").at("out_bytes_per_step"), 8192);
  EXPECT_EQ(pallas[0].at("tpu_kernel_shape").at("grid_steps"), 4);
  EXPECT_NE(run.source.find("pltpu.VMEM((64, 128), jnp.float32)"), std::string::npos);
}

// The kernel map of an implementation, and its kernel.py.
std::pair<nlohmann::json, std::string> MapAndSource(const Implementation& impl) {
  std::pair<nlohmann::json, std::string> out;
  for (const auto& s : impl.sources) {
    if (s.name == "kernel_map.json") out.first = nlohmann::json::parse(s.text);
    if (s.name == "kernel.py") out.second = s.text;
  }
  return out;
}

TEST(PallasEmitterTest, AKernelTheCompilerRefusedIsEmittedAsGlueSayingWhy) {
  auto m = Parse(kDotGelu);
  ASSERT_NE(m, nullptr);
  auto plan = analysis::PlanFusion(*m);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  const target::Target t = testing::TpuV5e();
  PallasEmitter e({{0, "mosaic: unsupported shape cast"}});
  auto plain = e.Emit(*plan, testing::CandidateFor(*plan, t), t);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  ASSERT_EQ(MapAndSource(*plain).first.at("kernels")[0].at("runs"), "pallas");

  space::Candidate c = testing::CandidateFor(*plan, t);
  c.kernels[0].values[kGlueFallbackKey] = 1;
  auto impl = e.Emit(*plan, c, t);
  ASSERT_TRUE(impl.ok()) << impl.status().ToString();
  const auto [map, source] = MapAndSource(*impl);
  const auto& k = map.at("kernels")[0];
  EXPECT_EQ(k.at("runs"), "glue");
  EXPECT_TRUE(k.at("fallback").get<bool>());
  EXPECT_NE(k.at("reason").get<std::string>().find("refused its pallas_call (mosaic: unsupported shape cast)"),
            std::string::npos) << k.dump();
  EXPECT_EQ(map.at("pallas_kernels"), MapAndSource(*plain).first.at("pallas_kernels").get<int>() - 1);
  EXPECT_NE(source.find("jnp glue (fallback: the TPU compiler refused"), std::string::npos) << source;
  EXPECT_NE(plain->hash, impl->hash);
}

TEST(PallasEmitterTest, AFallenBackKernelMatchesTheInterpreter) {
  MK_SKIP_WITHOUT_JAX();
  auto m = Parse(kDotGelu);
  ASSERT_NE(m, nullptr);
  auto run = EmitAndRun(*m, 8, {}, {{0, 1}});
  ASSERT_TRUE(run.report.value("ok", false)) << run.report.dump() << "\n" << run.source;
  EXPECT_TRUE(cpu::testing::OutputsNear(run.outputs, run.expected, 2e-2));
  EXPECT_EQ(KernelsRunning(run.kernel_map, "glue").size(), 1u) << run.kernel_map.dump(2);
}

// Grouped-query attention as JAX writes it: scores k.q with the query heads split into
// (kv head, group), so the rhs has two free dims (t, g) merged into one N; and the context
// v.p whose rhs has (g, t). Scaled scores and the context both run in a pallas_call.
constexpr char kGqaDots[] = R"(
HloModule gqa
ENTRY main {
  k = bf16[1,128,2,32] parameter(0)
  q = bf16[1,128,2,4,32] parameter(1)
  v = bf16[1,128,2,32] parameter(2)
  p = bf16[1,2,4,128,128] parameter(3)
  s = f32[1,2,128,128,4] dot(k, q), lhs_batch_dims={0,2}, lhs_contracting_dims={3}, rhs_batch_dims={0,2}, rhs_contracting_dims={4}
  c = f32[] constant(0.125)
  cb = f32[1,2,128,128,4] broadcast(c), dimensions={}
  scaled = f32[1,2,128,128,4] multiply(s, cb)
  ctx = f32[1,2,32,4,128] dot(v, p), lhs_batch_dims={0,2}, lhs_contracting_dims={1}, rhs_batch_dims={0,1}, rhs_contracting_dims={4}
  ROOT out = (f32[1,2,128,128,4], f32[1,2,32,4,128]) tuple(scaled, ctx)
}
)";

TEST(PallasEmitterTest, DotsWithSeveralNSideDimsMatchTheInterpreter) {
  MK_SKIP_WITHOUT_JAX();
  auto m = Parse(kGqaDots);
  ASSERT_NE(m, nullptr);
  auto run = EmitAndRun(*m, 31);
  ASSERT_TRUE(run.report.value("ok", false)) << run.report.dump() << "\n" << run.source;
  EXPECT_TRUE(cpu::testing::OutputsNear(run.outputs, run.expected, 1e-3));
  EXPECT_TRUE(KernelsRunning(run.kernel_map, "glue").empty()) << run.kernel_map.dump(2);
  auto pallas = KernelsRunning(run.kernel_map, "pallas");
  ASSERT_EQ(pallas.size(), 2u) << run.kernel_map.dump(2);
  // Scores: batch (1, 2), M = s = 128, N = t x g = 512 whole, K = 32.
  EXPECT_EQ(pallas[0].at("grid"), nlohmann::json({1, 2, 1, 1, 1})) << pallas[0].dump(2);
  EXPECT_EQ(pallas[0].at("tpu_kernel_shape").at("mxu").at("n"), 512);
  // Context: M = d = 32 whole, N = g x t = 512, K = s = 128.
  EXPECT_EQ(pallas[1].at("grid"), nlohmann::json({1, 2, 1, 1, 1})) << pallas[1].dump(2);
  EXPECT_EQ(pallas[1].at("tpu_kernel_shape").at("mxu").at("k"), 128);
}

// A batched matmul masked per (batch, row): the mask's batch dim, a grid axis of block 1, is
// its second-to-last, so it is passed as [15, 1, 16] (a block of (1, 1, bm) is tile-legal).
constexpr char kMaskedBmm[] = R"(
HloModule masked_bmm
ENTRY main {
  a = f32[15,16,128] parameter(0)
  b = f32[15,128,256] parameter(1)
  m = pred[15,16] parameter(2)
  d = f32[15,16,256] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  mb = pred[15,16,256] broadcast(m), dimensions={0,1}
  z = f32[] constant(0)
  zb = f32[15,16,256] broadcast(z), dimensions={}
  ROOT out = f32[15,16,256] select(mb, d, zb)
}
)";

TEST(PallasEmitterTest, ABatchBlockOfOneInAnInputsLastTwoDimsIsMovedOutOfThem) {
  MK_SKIP_WITHOUT_JAX();
  auto m = Parse(kMaskedBmm);
  ASSERT_NE(m, nullptr);
  auto run = EmitAndRun(*m, 37, {{"bn", 256}});
  ASSERT_TRUE(run.report.value("ok", false)) << run.report.dump() << "\n" << run.source;
  EXPECT_TRUE(cpu::testing::OutputsNear(run.outputs, run.expected, 1e-4));
  auto pallas = KernelsRunning(run.kernel_map, "pallas");
  ASSERT_EQ(pallas.size(), 1u) << run.kernel_map.dump(2);
  EXPECT_EQ(pallas[0].at("grid"), nlohmann::json({15, 1, 1, 1}));
  EXPECT_NE(run.source.find(", (15, 1, 16))"), std::string::npos) << run.source;
  EXPECT_NE(run.source.find("pl.BlockSpec((1, 1, 16), lambda g0, g1, g2, g3: (g0, 0, g1))"), std::string::npos)
      << run.source;
}

// A matmul whose epilogue centres each group of 64 columns (a group norm's first half): the
// output is the dot's result reshaped to [rows, groups, 64], blocked by rows with N whole.
constexpr char kGemmGroupCentre[] = R"(
HloModule gemm_group_centre
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[64,256] parameter(0)
  w = f32[256,512] parameter(1)
  d = f32[64,512] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  r = f32[64,8,64] reshape(d)
  z = f32[] constant(0)
  s = f32[64,8] reduce(r, z), dimensions={2}, to_apply=add
  n = f32[] constant(0.015625)
  nb = f32[64,8] broadcast(n), dimensions={}
  mean = f32[64,8] multiply(s, nb)
  mb = f32[64,8,64] broadcast(mean), dimensions={0,1}
  ROOT out = f32[64,8,64] subtract(r, mb)
}
)";

TEST(PallasEmitterTest, AContractionOutputReshapedByRowsMatchesTheInterpreter) {
  MK_SKIP_WITHOUT_JAX();
  auto m = Parse(kGemmGroupCentre);
  ASSERT_NE(m, nullptr);
  auto run = EmitAndRun(*m, 41, {{"bm", 32}, {"bk", 128}});
  ASSERT_TRUE(run.report.value("ok", false)) << run.report.dump() << "\n" << run.source;
  EXPECT_TRUE(cpu::testing::OutputsNear(run.outputs, run.expected, 1e-4));
  auto pallas = KernelsRunning(run.kernel_map, "pallas");
  ASSERT_EQ(pallas.size(), 1u) << run.kernel_map.dump(2);
  EXPECT_EQ(pallas[0].at("grid"), nlohmann::json({2, 1, 2}));
  EXPECT_EQ(pallas[0].at("blocks").at("bn"), 512);
  bool reduce_inside = false;
  for (const auto& op : pallas[0].at("ops_in_pallas")) reduce_inside |= op == "s";
  EXPECT_TRUE(reduce_inside) << pallas[0].dump(2);
}

constexpr char kSoftmax[] = R"(
HloModule softmax
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[16,256] parameter(0)
  ninf = f32[] constant(-inf)
  mx = f32[16] reduce(x, ninf), dimensions={1}, to_apply=max
  mb = f32[16,256] broadcast(mx), dimensions={0}
  sh = f32[16,256] subtract(x, mb)
  e = f32[16,256] exponential(sh)
  zero = f32[] constant(0)
  sum = f32[16] reduce(e, zero), dimensions={1}, to_apply=add
  sb = f32[16,256] broadcast(sum), dimensions={0}
  ROOT out = f32[16,256] divide(e, sb)
}
)";

TEST(PallasEmitterTest, SoftmaxRowsMatchTheInterpreter) {
  MK_SKIP_WITHOUT_JAX();
  auto m = Parse(kSoftmax);
  ASSERT_NE(m, nullptr);
  auto run = EmitAndRun(*m, 3, {{"block_rows", 8}});
  ASSERT_TRUE(run.report.value("ok", false)) << run.report.dump() << "\n" << run.source;
  EXPECT_TRUE(cpu::testing::OutputsNear(run.outputs, run.expected, 1e-5));
  auto pallas = KernelsRunning(run.kernel_map, "pallas");
  ASSERT_EQ(pallas.size(), 1u) << run.kernel_map.dump(2);
  EXPECT_EQ(pallas[0].at("grid"), nlohmann::json({2}));
  EXPECT_EQ(pallas[0].at("blocks").at("block_rows"), 8);
}

constexpr char kRmsNorm[] = R"(
HloModule rmsnorm
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = bf16[32,256] parameter(0)
  w = bf16[256] parameter(1)
  xf = f32[32,256] convert(x)
  sq = f32[32,256] multiply(xf, xf)
  zero = f32[] constant(0)
  ss = f32[32] reduce(sq, zero), dimensions={1}, to_apply=add
  n = f32[] constant(0.00390625)
  nb = f32[32] broadcast(n), dimensions={}
  mean = f32[32] multiply(ss, nb)
  eps = f32[] constant(1e-6)
  eb = f32[32] broadcast(eps), dimensions={}
  me = f32[32] add(mean, eb)
  r = f32[32] rsqrt(me)
  rb = f32[32,256] broadcast(r), dimensions={0}
  y = f32[32,256] multiply(xf, rb)
  wf = f32[256] convert(w)
  wb = f32[32,256] broadcast(wf), dimensions={1}
  yw = f32[32,256] multiply(y, wb)
  ROOT out = bf16[32,256] convert(yw)
}
)";

TEST(PallasEmitterTest, RmsNormInBf16MatchesTheInterpreter) {
  MK_SKIP_WITHOUT_JAX();
  auto m = Parse(kRmsNorm);
  ASSERT_NE(m, nullptr);
  auto run = EmitAndRun(*m, 11, {{"block_rows", 16}});
  ASSERT_TRUE(run.report.value("ok", false)) << run.report.dump() << "\n" << run.source;
  EXPECT_TRUE(cpu::testing::OutputsNear(run.outputs, run.expected, 1e-2));
  auto pallas = KernelsRunning(run.kernel_map, "pallas");
  ASSERT_EQ(pallas.size(), 1u) << run.kernel_map.dump(2);
  EXPECT_EQ(pallas[0].at("grid"), nlohmann::json({2}));
}

constexpr char kElementwise[] = R"(
HloModule chain
ENTRY main {
  a = f32[32,256] parameter(0)
  b = f32[32,256] parameter(1)
  e = f32[32,256] exponential(a)
  p = f32[32,256] multiply(e, b)
  one = f32[] constant(1)
  ob = f32[32,256] broadcast(one), dimensions={}
  q = f32[32,256] add(p, ob)
  i = s32[32,256] iota(), iota_dimension=0
  z = s32[] constant(20)
  zb = s32[32,256] broadcast(z), dimensions={}
  low = pred[32,256] compare(i, zb), direction=LT
  t = f32[32,256] tanh(q)
  ROOT out = f32[32,256] select(low, t, q)
}
)";

TEST(PallasEmitterTest, ElementwiseChainWithARowIotaMatchesTheInterpreter) {
  MK_SKIP_WITHOUT_JAX();
  auto m = Parse(kElementwise);
  ASSERT_NE(m, nullptr);
  // Four steps of 8 rows: the iota along the blocked rows must start at each block's row.
  auto run = EmitAndRun(*m, 5, {{"block_rows", 8}});
  ASSERT_TRUE(run.report.value("ok", false)) << run.report.dump() << "\n" << run.source;
  EXPECT_TRUE(cpu::testing::OutputsNear(run.outputs, run.expected, 1e-5));
  auto pallas = KernelsRunning(run.kernel_map, "pallas");
  ASSERT_EQ(pallas.size(), 1u) << run.kernel_map.dump(2);
  EXPECT_EQ(pallas[0].at("grid"), nlohmann::json({4}));
}

// A grouped convolution (glue: not one implicit GEMM) beside a dot of bf16 weights widened to f32 (the
// convert runs on each block in the body) whose rows are then summed.
constexpr char kMixed[] = R"(
HloModule mixed
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  img = f32[1,8,8,4] parameter(0)
  fil = f32[3,3,2,8] parameter(1)
  a = f32[16,128] parameter(2)
  b = bf16[128,128] parameter(3)
  bf = f32[128,128] convert(b)
  conv = f32[1,8,8,8] convolution(img, fil), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=2
  d = f32[16,128] dot(a, bf), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  zero = f32[] constant(0)
  rows = f32[16] reduce(d, zero), dimensions={1}, to_apply=add
  ROOT out = (f32[1,8,8,8], f32[16]) tuple(conv, rows)
}
)";

TEST(PallasEmitterTest, ModuleMixingPallasKernelsAndGlueMatchesTheInterpreter) {
  MK_SKIP_WITHOUT_JAX();
  auto m = Parse(kMixed);
  ASSERT_NE(m, nullptr);
  auto run = EmitAndRun(*m, 13);
  ASSERT_TRUE(run.report.value("ok", false)) << run.report.dump() << "\n" << run.source;
  EXPECT_TRUE(cpu::testing::OutputsNear(run.outputs, run.expected, 1e-4));
  auto glue = KernelsRunning(run.kernel_map, "glue");
  ASSERT_EQ(glue.size(), 1u) << run.kernel_map.dump(2);
  EXPECT_NE(glue[0].at("reason").get<std::string>().find("feature_group_count=2"), std::string::npos)
      << glue[0].dump();
  bool convert_fused = false;
  for (const auto& k : KernelsRunning(run.kernel_map, "pallas")) {
    for (const auto& op : k.at("ops_in_pallas")) convert_fused |= op == "bf";
    EXPECT_TRUE(k.at("ops_in_glue").empty()) << k.dump();
  }
  EXPECT_TRUE(convert_fused) << run.kernel_map.dump(2);
  EXPECT_NE(run.source.find("jax.lax.convert_element_type(rhs_ref[...], jnp.float32)"), std::string::npos)
      << run.source;
}

// Rows gathered by index (out-of-range starts clamped) and scatter-added back (out-of-range
// updates dropped): glue, whose index handling must match HLO's.
constexpr char kGatherScatter[] = R"(
HloModule take
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[16,128] parameter(0)
  idx = s32[6] parameter(1)
  rows = f32[6,128] gather(x, idx), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,128}
  z = f32[] constant(0)
  zb = f32[16,128] broadcast(z), dimensions={}
  back = f32[16,128] scatter(zb, idx, rows), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
  ROOT out = (f32[6,128], f32[16,128]) tuple(rows, back)
}
)";

TEST(PallasEmitterTest, GatherAndScatterGlueMatchTheInterpreter) {
  MK_SKIP_WITHOUT_JAX();
  auto m = Parse(kGatherScatter);
  ASSERT_NE(m, nullptr);
  auto run = EmitAndRun(*m, 17);  // indices in [-3, 5]: some clamp, some drop
  ASSERT_TRUE(run.report.value("ok", false)) << run.report.dump() << "\n" << run.source;
  EXPECT_TRUE(cpu::testing::OutputsNear(run.outputs, run.expected, 1e-6));
  EXPECT_GE(KernelsRunning(run.kernel_map, "glue").size(), 2u) << run.kernel_map.dump(2);
}

TEST(PallasEmitterTest, AnOpWithNoTranslationIsAnErrorNamingItAndItsPosition) {
  auto m = Parse(R"(
HloModule sorted
lt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=LT
}
ENTRY main {
  x = f32[16] parameter(0)
  ROOT s = f32[16] sort(x), dimensions={0}, to_apply=lt
}
)");
  ASSERT_NE(m, nullptr);
  auto plan = analysis::PlanFusion(*m);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  const auto t = testing::TpuV5e();
  auto impl = PallasEmitter().Emit(*plan, testing::CandidateFor(*plan, t), t);
  ASSERT_FALSE(impl.ok());
  EXPECT_EQ(impl.status().code(), ErrorCode::kUnimplemented);
  EXPECT_NE(impl.status().message().find("sort %s"), std::string::npos) << impl.status().ToString();
  EXPECT_EQ(impl.status().loc().line, 10) << impl.status().ToString();
}

TEST(PallasEmitterTest, NamesFromTheModuleAreEscapedInThePython) {
  // A module name with a newline and a quote, and instruction names that are Python keywords.
  auto m = Parse(R"(
HloModule evil
ENTRY main {
  in = f32[8,128] parameter(0)
  lambda = f32[8,128] exponential(in)
  ROOT def = f32[8,128] negate(lambda)
}
)");
  ASSERT_NE(m, nullptr);
  m->name = "evil\nimport os; os.system(\"x\")  # \"\"\"";
  auto plan = analysis::PlanFusion(*m);
  ASSERT_TRUE(plan.ok());
  const auto t = testing::TpuV5e();
  auto impl = PallasEmitter().Emit(*plan, testing::CandidateFor(*plan, t), t);
  ASSERT_TRUE(impl.ok()) << impl.status().ToString();
  const std::string& py = impl->sources.at(0).text;
  EXPECT_EQ(py.find("\nimport os"), std::string::npos) << py;
  EXPECT_NE(py.find("MODULE = \"evil\\nimport os; os.system(\\\"x\\\")"), std::string::npos) << py;
  // Names are numbered, prefixed identifiers: never a bare keyword.
  EXPECT_EQ(py.find(" lambda = "), std::string::npos) << py;
  EXPECT_EQ(py.find(" def = "), std::string::npos) << py;
  EXPECT_EQ(py.find(" in = "), std::string::npos) << py;
  EXPECT_NE(py.find("_def = "), std::string::npos) << py;
  EXPECT_EQ(impl->entry_symbol, "workload");
  EXPECT_EQ(impl->target, "tpu-v5e");
}

// Every ci task of the suite emits (calls inlined first, as the engine does): each kernel runs
// in a pallas_call or in glue with its reason, and the suite's contractions and reductions mostly
// land in pallas_calls. No Python needed.
TEST(PallasEmitterTest, EveryCiTaskOfTheSuiteEmits) {
  namespace fs = std::filesystem;
  const fs::path suite = fs::path(MK_SOURCE_DIR) / "bench" / "jaxbench";
  int tasks = 0, pallas = 0, glue = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(suite, ec)) {
    const fs::path hlo = entry.path() / "ci" / "module.hlo";
    if (!fs::exists(hlo)) continue;
    ++tasks;
    auto parsed = hlo::ParseModuleFile(hlo.string());
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    auto m = hlo::InlineCalls(**parsed);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    auto plan = analysis::PlanFusion(**m);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    const auto t = testing::TpuV5e();
    auto impl = PallasEmitter().Emit(*plan, testing::CandidateFor(*plan, t), t);
    ASSERT_TRUE(impl.ok()) << hlo.string() << ": " << impl.status().ToString();
    ASSERT_EQ(impl->sources.size(), 2u);
    EXPECT_NE(impl->sources[0].text.find("\ndef workload("), std::string::npos);
    const auto map = nlohmann::json::parse(impl->sources[1].text);
    ASSERT_EQ(map.at("kernels").size(), plan->kernels.size());
    for (const auto& k : map.at("kernels")) {
      if (k.at("runs") == "fused") {  // into a flash-attention call: its entry names it
        EXPECT_FALSE(k.at("fused_into").get<std::string>().empty()) << k.dump();
        continue;
      }
      if (k.at("runs") == "glue") {
        ++glue;
        EXPECT_FALSE(k.at("reason").get<std::string>().empty()) << k.dump();
      } else {
        ++pallas;
        EXPECT_EQ(k.at("runs"), "pallas");
        EXPECT_GE(k.at("tpu_kernel_shape").at("grid_steps").get<int64_t>(), 1);
        EXPECT_LE(k.at("tpu_kernel_shape").at("vmem_bytes").get<int64_t>(), t.vmem_bytes);
      }
    }
  }
  if (tasks == 0) GTEST_SKIP() << "no ci tasks under " << suite;
  EXPECT_EQ(tasks, 50);
  EXPECT_GT(pallas, 4 * glue) << pallas << " pallas kernels, " << glue << " glue";
}

TEST(PallasEmitterTest, EmitterForATpuTargetIsThePallasEmitter) {
  auto e = EmitterFor(testing::TpuV5e());
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ((*e)->target_name(), "tpu");
}

}  // namespace
}  // namespace mk::codegen::pallas
