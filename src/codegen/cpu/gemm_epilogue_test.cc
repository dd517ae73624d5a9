// The GEMM epilogue fused into the tile write-back (gemm_epilogue.h): which kernels get one, and
// that the fused kernels compute exactly what the two-pass ones do (the same sums, the same
// epilogue code: bit for bit) and what the interpreter does, on edge tiles, several K slices,
// threads, bf16 results and a root that later ops read.
#include "codegen/cpu/gemm_epilogue.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>

#include "codegen/cpu/cpu_emitter.h"
#include "codegen/cpu/test_harness.h"
#include "hlo/parser.h"
#include "interp/interpreter.h"
#include "runtime/cpu_executor.h"

namespace mk::codegen::cpu {
namespace {

using Params = std::map<std::string, int64_t>;

// Each dot is the hero of its own contraction kernel (the planner fuses its elementwise
// consumers into it):
//   gelu:  f32, bias + tanh-GELU + select, the root (an output) also read by `sq` after it
//   half:  bf16 result of a batched dot, scale + clamp, stored in place as bf16
//   wide:  bf16 dot converted to f32 before exp: the root's type differs (not in place)
//   stats: a dot also reduced: no fused epilogue
//   nh:    f32 dot rounded to bf16 (8p's form): not in place; with one K slice the f32 result
//          has no buffer at all, each tile going from the micro-kernel to the epilogue
//   cv:    a convolution (N = 9x9 output positions, two column dims) + per-channel bias, tanh
constexpr const char* kModule = R"(
HloModule epilogues
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[37,71] parameter(0)
  w = f32[71,53] parameter(1)
  bias = f32[53] parameter(2)
  ha = bf16[3,37,71] parameter(3)
  hb = bf16[71,3,53] parameter(4)
  d = f32[37,53] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[37,53] broadcast(bias), dimensions={1}
  s = f32[37,53] add(d, bb)
  c = f32[] constant(0.7978846)
  cb = f32[37,53] broadcast(c), dimensions={}
  s3 = f32[37,53] multiply(s, s)
  s4 = f32[37,53] multiply(s3, s)
  inner = f32[37,53] add(s, s4)
  arg = f32[37,53] multiply(inner, cb)
  th = f32[37,53] tanh(arg)
  one = f32[] constant(1)
  ob = f32[37,53] broadcast(one), dimensions={}
  t1 = f32[37,53] add(th, ob)
  gl = f32[37,53] multiply(s, t1)
  zero = f32[] constant(0)
  zb = f32[37,53] broadcast(zero), dimensions={}
  pos = pred[37,53] compare(gl, zb), direction=GT
  gelu = f32[37,53] select(pos, gl, s)
  sq = f32[37,53] multiply(gelu, gelu)
  hd = bf16[3,37,53] dot(ha, hb), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={1}, rhs_contracting_dims={0}
  k = bf16[] constant(0.5)
  kb = bf16[3,37,53] broadcast(k), dimensions={}
  hs = bf16[3,37,53] multiply(hd, kb)
  lo = bf16[] constant(-1)
  hi = bf16[] constant(1)
  half = bf16[3,37,53] clamp(lo, hs, hi)
  wd = bf16[3,37,53] dot(ha, hb), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={1}, rhs_contracting_dims={0}
  wf = f32[3,37,53] convert(wd)
  wide = f32[3,37,53] exponential(wf)
  sd = f32[37,53] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  fz = f32[] constant(0)
  rows = f32[37] reduce(sd, fz), dimensions={1}, to_apply=add
  sr = f32[37,53] tanh(sd)
  nd = f32[37,53] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  nh = bf16[37,53] convert(nd)
  img = f32[2,5,9,9] parameter(5)
  ker = f32[6,5,3,3] parameter(6)
  kbias = f32[6] parameter(7)
  cv = f32[2,6,9,9] convolution(img, ker), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01
  kbb = f32[2,6,9,9] broadcast(kbias), dimensions={1}
  cs = f32[2,6,9,9] add(cv, kbb)
  ct = f32[2,6,9,9] tanh(cs)
  ROOT out = (f32[37,53], f32[37,53], bf16[3,37,53], f32[3,37,53], f32[37], f32[37,53], f32[2,6,9,9], bf16[37,53]) tuple(gelu, sq, half, wide, rows, sr, ct, nh)
}
)";

// A module, its fusion plan (which points into it) and the plan's contraction kernels by hero.
struct Planned {
  std::unique_ptr<hlo::Module> module;
  analysis::FusionPlan plan;
  std::map<std::string, const analysis::Kernel*> by_hero;
};

std::optional<Planned> PlanText(const char* text, const char* name) {
  auto module = hlo::ParseModule(text, name);
  if (!module.ok()) {
    ADD_FAILURE() << module.status().ToString();
    return std::nullopt;
  }
  auto plan = analysis::PlanFusion(**module);
  if (!plan.ok()) {
    ADD_FAILURE() << plan.status().ToString();
    return std::nullopt;
  }
  Planned p{std::move(*module), std::move(*plan), {}};
  for (const auto& k : p.plan.kernels) {
    if (k.family == analysis::KernelFamily::kContraction && k.hero) p.by_hero[k.hero->name] = &k;
  }
  return p;
}

TEST(GemmEpiloguePlanTest, FindsTheChainToOneOutputAndNothingElse) {
  const auto planned = PlanText(kModule, "epilogues.hlo");
  ASSERT_TRUE(planned.has_value());
  const auto& by = planned->by_hero;
  ASSERT_EQ(by.size(), 6u) << planned->plan.Summary();

  auto d = PlanGemmEpilogue(*by.at("d"));
  ASSERT_TRUE(d.has_value()) << by.at("d")->ToHloText();
  EXPECT_EQ(d->root->name, "gelu");
  EXPECT_TRUE(d->in_place);
  std::set<std::string> ops;
  for (const auto* op : d->ops) ops.insert(op->name);
  // sq reads the stored root: after the epilogue, not in it; bb is a side input.
  EXPECT_EQ(ops, (std::set<std::string>{"s", "s3", "s4", "inner", "arg", "th", "t1", "gl", "pos",
                                        "gelu"}));

  auto h = PlanGemmEpilogue(*by.at("hd"));
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->root->name, "half");
  EXPECT_TRUE(h->in_place);

  auto wd = PlanGemmEpilogue(*by.at("wd"));
  ASSERT_TRUE(wd.has_value());
  EXPECT_EQ(wd->root->name, "wide");
  EXPECT_FALSE(wd->in_place);  // bf16 GEMM, f32 root

  EXPECT_FALSE(PlanGemmEpilogue(*by.at("sd")).has_value());  // also reduced

  auto nd = PlanGemmEpilogue(*by.at("nd"));
  ASSERT_TRUE(nd.has_value());
  EXPECT_EQ(nd->root->name, "nh");
  EXPECT_FALSE(nd->in_place);  // f32 GEMM, bf16 root

  auto cv = PlanGemmEpilogue(*by.at("cv"));
  ASSERT_TRUE(cv.has_value());
  EXPECT_EQ(cv->root->name, "ct");
  EXPECT_TRUE(cv->in_place);
}

// The tile epilogue starts on (fuse_epilogue 1) unless it reads an input as large as the
// result while K is short: tile by tile that input comes from memory one row piece at a time,
// which a short multiply cannot hide (gemm_space.cc).
constexpr const char* kFuseChoices = R"(
HloModule choices
ENTRY main {
  a = f32[64,128] parameter(0)
  b = f32[128,96] parameter(1)
  big = f32[64,96] parameter(2)
  bias = f32[96] parameter(3)
  a2 = f32[64,1024] parameter(4)
  b2 = f32[1024,96] parameter(5)
  short = f32[64,96] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  scaled = f32[64,96] multiply(short, big)
  sb = f32[64,96] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[64,96] broadcast(bias), dimensions={1}
  biased = f32[64,96] add(sb, bb)
  long = f32[64,96] dot(a2, b2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  residual = f32[64,96] add(long, big)
  ROOT out = (f32[64,96], f32[64,96], f32[64,96]) tuple(scaled, biased, residual)
}
)";

TEST(GemmEpiloguePlanTest, ShortKWithAFullSizeInputStartsAsASecondPass) {
  const auto planned = PlanText(kFuseChoices, "choices.hlo");
  ASSERT_TRUE(planned.has_value());
  const auto& by = planned->by_hero;
  CpuEmitter emitter;
  const target::Target target = target::HostCpu();
  auto initial = [&](const char* hero) {
    return emitter.SpaceFor(*by.at(hero), target).Initial().Get("fuse_epilogue", -1);
  };
  EXPECT_EQ(initial("short"), 0);  // K 128, reads `big`
  EXPECT_EQ(initial("sb"), 1);     // K 128, a bias broadcast
  EXPECT_EQ(initial("long"), 1);   // K 1024 hides `big`
}

// On AMX tiles, a bf16 GEMM whose f32 result the epilogue rounds to bf16 starts with one K slice
// up to K 4096 (its tiles then never go to memory, gemm_space.cc's InitialKc); an in-place root
// or a deeper K keeps the 2048-deep slices. M is 96, past the 64 rows up to which AMX GEMMs
// take L1-sized slices.
constexpr const char* kSliceChoices = R"(
HloModule slices
ENTRY main {
  a = bf16[96,2816] parameter(0)
  b = bf16[2816,96] parameter(1)
  a2 = bf16[96,6144] parameter(2)
  b2 = bf16[6144,96] parameter(3)
  rounded = f32[96,96] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  narrow = bf16[96,96] convert(rounded)
  kept = f32[96,96] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  scaled = f32[96,96] multiply(kept, kept)
  deep = f32[96,96] dot(a2, b2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  deep_narrow = bf16[96,96] convert(deep)
  ROOT out = (bf16[96,96], f32[96,96], bf16[96,96]) tuple(narrow, scaled, deep_narrow)
}
)";

TEST(GemmEpiloguePlanTest, AmxGemmRoundedByItsEpilogueStartsWithOneKSlice) {
  const auto planned = PlanText(kSliceChoices, "slices.hlo");
  ASSERT_TRUE(planned.has_value());
  const auto& by = planned->by_hero;
  CpuEmitter emitter;
  target::Target amx = target::HostCpu();
  for (const char* f : {"avx512f", "avx512bw", "avx512_bf16", "amx_tile", "amx_bf16"}) {
    if (!amx.Has(f)) amx.isa.push_back(f);
  }
  auto initial = [&](const char* hero, const char* param) {
    return emitter.SpaceFor(*by.at(hero), amx).Initial().Get(param, -1);
  };
  ASSERT_EQ(initial("rounded", "amx"), 1);
  EXPECT_EQ(initial("rounded", "kc"), 2816);
  EXPECT_EQ(initial("kept", "kc"), 1408);  // f32 root, in place: two slices
  EXPECT_EQ(initial("deep", "kc"), 2048);  // K 6144: three slices
  target::Target no_amx = target::HostCpu();
  std::erase_if(no_amx.isa, [](const std::string& f) { return f.rfind("amx", 0) == 0; });
  // vdpbf16ps registers: the rule is the tiles' (1024-deep slices balanced over K: 944).
  EXPECT_LT(emitter.SpaceFor(*by.at("rounded"), no_amx).Initial().Get("kc", -1), 2816);
}

class GemmEpilogueRunTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cache_dir_ = testing::MakeTempDir("mk-gemm-epilogue"); }
  static void TearDownTestSuite() { std::filesystem::remove_all(cache_dir_); }

  // The module's outputs on `args` with `params` overriding every contraction kernel's initial
  // schedule; `source` gets the generated text.
  std::vector<hlo::Literal> Run(const hlo::Module& m, const std::vector<hlo::Literal>& args,
                                const Params& params, std::string* source) {
    auto plan = analysis::PlanFusion(m);
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    if (!plan.ok()) return {};
    return testing::RunWithContractionParams(*plan, args, params, cache_dir_, source);
  }

  static std::string cache_dir_;
};
std::string GemmEpilogueRunTest::cache_dir_;

TEST_F(GemmEpilogueRunTest, FusedEqualsTwoPassesBitForBitAndAgreesWithTheInterpreter) {
  auto module = hlo::ParseModule(kModule, "epilogues.hlo");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  // The analytical schedule; tiny tiles and K slices (every tile an edge, the bf16 sums in f32
  // partials across 5 slices) over two threads; the register tile for bf16 (amx=0); one K
  // slice (kc >= K = 71) over two threads, where nd's f32 result is not stored; K ranges
  // (the epilogues on the summed tiles) in one slice each, and in slices of 16 over 3 threads.
  const std::vector<Params> schedules = {
      {},
      {{"mr", 5}, {"nr", 16}, {"kc", 16}, {"mc", 10}, {"nc", 32}, {"threads", 2},
       {"thread_split", 0}, {"amx", 0}},
      {{"mr", 3}, {"nr", 24}, {"kc", 64}, {"threads", 2}, {"thread_split", 2}, {"amx", 0}},
      {{"mr", 5}, {"nr", 16}, {"kc", 96}, {"mc", 10}, {"threads", 2}, {"thread_split", 0}},
      {{"mr", 5}, {"nr", 16}, {"kc", 96}, {"mc", 10}, {"threads", 2}, {"thread_split", 3}},
      {{"mr", 3}, {"nr", 24}, {"kc", 16}, {"threads", 3}, {"thread_split", 3}, {"amx", 0}},
  };
  auto args = testing::RandomArgs(**module, 11);
  auto want = interp::Evaluate(**module, args);
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  const std::vector<hlo::Literal> w = want->elements();
  for (size_t s = 0; s < schedules.size(); ++s) {
    SCOPED_TRACE("schedule " + std::to_string(s));
    Params fused = schedules[s], unfused = schedules[s];
    fused["fuse_epilogue"] = 1;
    unfused["fuse_epilogue"] = 0;
    std::string fused_src, unfused_src;
    auto a = Run(**module, args, fused, &fused_src);
    auto b = Run(**module, args, unfused, &unfused_src);
    ASSERT_EQ(a.size(), w.size());
    ASSERT_EQ(b.size(), w.size());
    // Five tile epilogues (gelu, half, wide, ct, nh); none in the two-pass form. nh's reads
    // the tile buffer where K is one slice (kc 64 and 16 split it), and nd has no buffer.
    // All but ct (two column dims, a convolution's positions) also run two rows at a time, the
    // second row's statements interleaved with the first's; the last row of an odd tile runs
    // alone.
    EXPECT_EQ(testing::Occurrences(fused_src, "const float gm_dv = "), 5u + 4u);
    EXPECT_EQ(testing::Occurrences(fused_src, "const float gm_dv_1 = "), 4u);
    EXPECT_EQ(testing::Occurrences(fused_src, "for (; gm_ti + 1 < gm_mv; gm_ti += 2) {"), 4u);
    EXPECT_EQ(testing::Occurrences(fused_src, "for (; gm_ti < gm_mv; ++gm_ti) {"), 5u);
    EXPECT_EQ(unfused_src.find("const float gm_dv"), std::string::npos);
    const bool one_slice = s == 0 || s == 3 || s == 4;
    EXPECT_EQ(fused_src.find("const float gm_dv = gm_tile[") != std::string::npos, one_slice);
    EXPECT_EQ(fused_src.find("__builtin_trap") != std::string::npos, one_slice);
    for (size_t o = 0; o < w.size(); ++o) {
      SCOPED_TRACE("output " + std::to_string(o));
      ASSERT_TRUE(a[o].shape().SameAs(w[o].shape()));
      const bool half = w[o].dtype() == hlo::DType::kBF16;
      for (int64_t i = 0; i < w[o].num_elements(); ++i) {
        const double fa = a[o].GetDouble(i), fb = b[o].GetDouble(i), want_v = w[o].GetDouble(i);
        ASSERT_TRUE(fa == fb || (std::isnan(fa) && std::isnan(fb)))
            << "element " << i << ": fused " << fa << ", two passes " << fb;
        // Reordered sums of 71 products, then tanh/exp (a few ulps); bf16 results may round to
        // the neighbouring value.
        const double tol = (half ? 0x1p-7 : 1e-4) * std::max(1.0, std::fabs(want_v));
        ASSERT_LE(std::fabs(fa - want_v), tol) << "element " << i << ": want " << want_v;
      }
    }
  }
}

}  // namespace
}  // namespace mk::codegen::cpu
