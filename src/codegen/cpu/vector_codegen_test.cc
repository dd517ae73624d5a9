// The vectorized loop and reduction forms (vector_loops.h, reduce_emit.h), large constants and
// the vectorizable runtime conversions: every value of every loop/reduction parameter against the
// interpreter on random inputs, odd sizes (vector tails), f32 and bf16, reductions over inner and
// outer dimensions.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <regex>
#include <set>

#include "analysis/fusion_plan.h"
#include "codegen/cpu/cpu_emitter.h"
#include "codegen/cpu/kernel_spaces.h"
#include "codegen/cpu/mk_cpu_rt.h"
#include "codegen/cpu/test_harness.h"
#include "codegen/cpu/vector_rows.h"
#include "hlo/parser.h"
#include "interp/elided_constants.h"
#include "interp/interpreter.h"
#include "runtime/cpu_executor.h"
#include "support/float16.h"

namespace mk::codegen::cpu {
namespace {

using Overrides = std::map<std::string, int64_t>;

std::string Subst(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

class VectorCodegenTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cache_dir_ = testing::MakeTempDir("mk-vector-codegen"); }
  static void TearDownTestSuite() { std::filesystem::remove_all(cache_dir_); }

  // Emits `module` with every kernel's initial schedule, `overrides` replacing values.
  static Result<Implementation> EmitWith(const hlo::Module& module, const Overrides& overrides) {
    MK_ASSIGN_OR_RETURN(analysis::FusionPlan plan, analysis::PlanFusion(module));
    CpuEmitter emitter;
    const target::Target target = target::HostCpu();
    space::Candidate candidate;
    for (const auto& k : plan.kernels) {
      space::Schedule s = emitter.SpaceFor(k, target).Initial();
      for (const auto& [name, value] : overrides) s.values[name] = value;
      candidate.kernels.push_back(s);
    }
    return emitter.Emit(plan, candidate, target);
  }

  // Runs `text` under `overrides` and the interpreter on two random inputs; output o must agree
  // within tols[o] (|got - want| / max(1, |want|)), 0 meaning bit for bit.
  void ExpectAgrees(const std::string& text, const Overrides& overrides,
                    const std::vector<double>& tols) {
    auto module = hlo::ParseModule(text, "vec.hlo");
    ASSERT_TRUE(module.ok()) << module.status().ToString();
    interp::FillElidedConstants(**module);
    auto impl = EmitWith(**module, overrides);
    ASSERT_TRUE(impl.ok()) << impl.status().ToString();
    runtime::CompileOptions copts;
    copts.cache_dir = cache_dir_;
    runtime::CompilerDriver compiler(copts);
    runtime::SandboxRunner sandbox;
    runtime::CpuExecutor exec(compiler, sandbox);
    auto lib = exec.Build(*impl);
    ASSERT_TRUE(lib.ok()) << lib.status().ToString();
    for (uint32_t seed = 1; seed <= 2; ++seed) {
      auto args = testing::RandomArgs(**module, seed);
      auto expected = interp::Evaluate(**module, args);
      ASSERT_TRUE(expected.ok()) << expected.status().ToString();
      std::vector<hlo::Literal> want;
      if (expected->shape().is_tuple()) want = expected->elements();
      else want.push_back(*expected);
      auto got = exec.Run(*lib, *impl, args, runtime::ExecuteOptions{.poison_scratch = true});
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      ASSERT_TRUE(got->outcome.ok()) << got->outcome.message;
      ASSERT_EQ(got->outputs.size(), want.size());
      ASSERT_EQ(tols.size(), want.size());
      for (size_t o = 0; o < want.size(); ++o) {
        ASSERT_TRUE(got->outputs[o].shape().SameAs(want[o].shape())) << "output " << o;
        double worst = 0;
        int64_t worst_at = -1;
        for (int64_t i = 0; i < want[o].num_elements(); ++i) {
          const double w = want[o].GetDouble(i), g = got->outputs[o].GetDouble(i);
          if (std::isnan(w) || std::isnan(g)) {
            ASSERT_TRUE(std::isnan(w) && std::isnan(g)) << "output " << o << " element " << i;
            continue;
          }
          if (std::isinf(w) || std::isinf(g)) {
            ASSERT_EQ(w, g) << "output " << o << " element " << i;
            continue;
          }
          const double err = std::fabs(w - g) / std::max(1.0, std::fabs(w));
          if (err > worst) worst = err, worst_at = i;
        }
        EXPECT_LE(worst, tols[o]) << "output " << o << " ("
                                  << want[o].shape().ToString(false) << ") worst at element "
                                  << worst_at << " seed " << seed;
      }
    }
  }

  static std::string cache_dir_;
};
std::string VectorCodegenTest::cache_dir_;

// Loop kernels (reshape both ways, broadcast, a long row tiled among threads) and reductions of
// every form: innermost dim (lanes; 150 and 19 leave tails, 13 is shorter than 16 lanes), outer
// and middle dims (strided; 9000 results span several blocks), all dims, integer and pred
// combiners, and a softmax chain (one reduction kernel, several passes; rows longer than a
// 1024 tile). Sizes above 16384 elements make the loops parallel.
const char* kModule = R"(
HloModule vec

add_fn {
  a = $T[] parameter(0)
  b = $T[] parameter(1)
  ROOT s = $T[] add(a, b)
}
max_fn {
  a = $T[] parameter(0)
  b = $T[] parameter(1)
  ROOT m = $T[] maximum(a, b)
}
add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
max_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
min_s32 {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT m = s32[] minimum(b, a)
}
or_pred {
  a = pred[] parameter(0)
  b = pred[] parameter(1)
  ROOT o = pred[] or(a, b)
}

ENTRY main {
  x = $T[3,37,150] parameter(0)
  w = $T[150] parameter(1)
  v = $T[2,9000] parameter(2)
  k = s32[7,19] parameter(3)
  p = pred[6,13] parameter(4)
  u = $T[1,16,1100] parameter(5)
  zero = $T[] constant(0)
  ninf = $T[] constant(-inf)
  xr = $T[111,150] reshape(x)
  wb = $T[111,150] broadcast(w), dimensions={1}
  prod = $T[111,150] multiply(xr, wb)
  lx = $T[3,37,150] reshape(prod)
  vv = $T[2,9000] tanh(v)
  row_sum = $T[3,37] reduce(x, zero), dimensions={2}, to_apply=add_fn
  col_sum = $T[37,150] reduce(x, zero), dimensions={0}, to_apply=add_fn
  mid_max = $T[3,150] reduce(x, ninf), dimensions={1}, to_apply=max_fn
  all_max = $T[] reduce(x, ninf), dimensions={0,1,2}, to_apply=max_fn
  vf = f32[2,9000] convert(v)
  zf = f32[] constant(0)
  vsum = f32[2] reduce(vf, zf), dimensions={1}, to_apply=add_f32
  vcol = f32[9000] reduce(vf, zf), dimensions={0}, to_apply=add_f32
  imax = s32[] constant(2147483647)
  kmin = s32[7] reduce(k, imax), dimensions={1}, to_apply=min_s32
  no = pred[] constant(false)
  por = pred[6] reduce(p, no), dimensions={1}, to_apply=or_pred
  uf = f32[1,16,1100] convert(u)
  ninf32 = f32[] constant(-inf)
  um = f32[1,16] reduce(uf, ninf32), dimensions={2}, to_apply=max_f32
  umb = f32[1,16,1100] broadcast(um), dimensions={0,1}
  ud = f32[1,16,1100] subtract(uf, umb)
  ue = f32[1,16,1100] exponential(ud)
  us = f32[1,16] reduce(ue, zf), dimensions={2}, to_apply=add_f32
  usb = f32[1,16,1100] broadcast(us), dimensions={0,1}
  sm32 = f32[1,16,1100] divide(ue, usb)
  sm = $T[1,16,1100] convert(sm32)
  ROOT out = ($T[3,37,150], $T[2,9000], $T[3,37], $T[37,150], $T[3,150], $T[], f32[2], f32[9000], s32[7], pred[6], $T[1,16,1100]) tuple(lx, vv, row_sum, col_sum, mid_max, all_max, vsum, vcol, kmin, por, sm)
}
)";

// Outputs whose order of combination the lane form changes: row_sum, vsum, sm (by position);
// vv (tanh) and sm (exp) also differ from the interpreter's libm by mk_cpu_rt.h's few ulps
// (vector_math_test.cc): `transcendental` for vv, `softmax` covers sm.
std::vector<double> Tolerances(double reordered, double softmax, double transcendental) {
  return {0, transcendental, reordered, 0, 0, 0, 1e-5, 0, 0, 0, softmax};
}

// Bit for bit but for tanh and exp, which are mk_cpu_rt.h's own (<= 3 ulp) rather than libm's:
// a few f32 ulps, and in bf16 at most a neighbouring bf16 (2^-8 relative).
TEST_F(VectorCodegenTest, SerialScheduleIsBitExact) {
  const Overrides serial = {{"threads", 1}, {"vectorize", 0}, {"unroll", 1}, {"tile_inner", 0},
                            {"reduce_lanes", 1}, {"row_fuse", 0}};
  for (const char* t : {"f32", "bf16"}) {
    SCOPED_TRACE(t);
    const bool f32 = std::string(t) == "f32";
    std::vector<double> exact = Tolerances(0, f32 ? 1e-6 : 0x1p-8, f32 ? 1e-6 : 0x1p-8);
    ExpectAgrees(Subst(kModule, "$T", t), serial, exact);
  }
}

TEST_F(VectorCodegenTest, EveryParameterValueAgreesWithTheInterpreter) {
  // Together these cover each value of vectorize, unroll, tile_inner, reduce_lanes, threads and
  // vector_bits.
  const std::vector<Overrides> schedules = {
      {{"threads", 2}, {"vectorize", 1}, {"unroll", 2}, {"tile_inner", 1024}, {"reduce_lanes", 8},
       {"row_fuse", 1}, {"vector_bits", 512}},
      {{"threads", 1}, {"vectorize", 1}, {"unroll", 4}, {"tile_inner", 4096}, {"reduce_lanes", 16},
       {"row_fuse", 0}, {"vector_bits", 256}},
      {{"threads", 2}, {"vectorize", 0}, {"unroll", 1}, {"tile_inner", 0}, {"reduce_lanes", 16},
       {"row_fuse", 1}},
  };
  for (size_t i = 0; i < schedules.size(); ++i) {
    SCOPED_TRACE("schedule " + std::to_string(i));
    {
      SCOPED_TRACE("f32");
      ExpectAgrees(Subst(kModule, "$T", "f32"), schedules[i], Tolerances(1e-5, 1e-5, 1e-6));
    }
    {
      // bf16 rounds every partial sum: the serial sum of 150 values drifts by several ulps of
      // its partial sums, the lanes' less; the f32 case above checks the lanes precisely.
      SCOPED_TRACE("bf16");
      ExpectAgrees(Subst(kModule, "$T", "bf16"), schedules[i], Tolerances(0.5, 1e-2, 0x1p-8));
    }
  }
}

TEST_F(VectorCodegenTest, EmitsTheFormTheScheduleNames) {
  auto module = hlo::ParseModule(Subst(kModule, "$T", "f32"), "vec.hlo");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto text = [&](const Overrides& o) {
    auto impl = EmitWith(**module, o);
    EXPECT_TRUE(impl.ok()) << impl.status().ToString();
    return impl.ok() ? impl->sources[0].text : std::string();
  };
  const std::string lanes16 =
      text({{"reduce_lanes", 16}, {"vectorize", 1}, {"unroll", 4}, {"row_fuse", 1}});
  EXPECT_NE(lanes16.find("lane[16]"), std::string::npos);
  // row_sum's 150 = 9 * 16 + 4 + 2: the remainder in simd steps of 4 and 2, none left alone.
  EXPECT_NE(lanes16.find("for (int j = 0; j < 4; ++j) lane[j]"), std::string::npos);
  EXPECT_NE(lanes16.find("for (int j = 0; j < 2; ++j) lane[j]"), std::string::npos);
  EXPECT_NE(lanes16.find("acc[1024]"), std::string::npos);  // strided blocks of 64 * 16
  // col_sum (over dim 0 of [3,37,150]): a block is 13 whole rows of 150, contiguous in x at
  // each reduced index (the last 37 % 13 = 11 rows are the last block).
  EXPECT_NE(lanes16.find("acc[1950]"), std::string::npos);
  EXPECT_NE(lanes16.find("for (int64_t rb = 0; rb < 37; rb += 13)"), std::string::npos);
  EXPECT_NE(lanes16.find("#pragma GCC ivdep"), std::string::npos);
  EXPECT_NE(lanes16.find("#pragma GCC unroll 4"), std::string::npos);
  EXPECT_NE(lanes16.find("one loop over the rows"), std::string::npos);  // the softmax kernel
  // exp(x - max) is read by the sum and by the output: computed once per row, kept per thread.
  EXPECT_NE(lanes16.find("[mkrt::thread_index() * 1100 + i2] = v"), std::string::npos);
  const std::string serial =
      text({{"reduce_lanes", 1}, {"vectorize", 0}, {"threads", 1}, {"row_fuse", 0}});
  EXPECT_EQ(serial.find("one loop over the rows"), std::string::npos);
  EXPECT_EQ(serial.find("lane["), std::string::npos);
  EXPECT_EQ(serial.find("acc["), std::string::npos);
  EXPECT_EQ(serial.find("#pragma GCC ivdep"), std::string::npos);
  EXPECT_EQ(serial.find("#pragma omp parallel"), std::string::npos);
  // A reshape of a computed value splits only the dims it regroups ([3,37] <-> [111]); the
  // innermost index passes through unchanged, so loops over it stay unit-stride. A reshape of a
  // parameter (a dense row-major array) loads it at the reshape's own linear index: no div/mod.
  EXPECT_NE(lanes16.find("(((i0) * 37 + i1), i2)"), std::string::npos);
  EXPECT_EQ(lanes16.find("(i0) / 37"), std::string::npos);
  EXPECT_NE(lanes16.find("[(i0) * 150 + i1]; }"), std::string::npos);
  EXPECT_NE(text({{"tile_inner", 4096}}).find("i1_hi = std::min<int64_t>(i1_lo + 4096, 9000)"),
            std::string::npos);
  // Tiles inside the row loop of the softmax kernel.
  EXPECT_NE(text({{"tile_inner", 1024}, {"row_fuse", 1}})
                .find("i2_hi = std::min<int64_t>(i2_lo + 1024, 1100)"),
            std::string::npos);
}

// Reductions over channels ([2,5,9,20] over dim 1, like 46k's logsumexp): a block of whole
// rows is one flat loop where every leaf indexes rows and columns together (x, a plane
// broadcast over them, a per-batch scale); a per-column bias keeps a loop per row. Both agree
// with the interpreter bit for bit (each result still sums its channels in order).
const char* kChannelModule = R"(
HloModule channels
add_fn {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[2,5,9,20] parameter(0)
  plane = f32[9,20] parameter(1)
  col = f32[20] parameter(2)
  scale = f32[2] parameter(3)
  zero = f32[] constant(0)
  pb = f32[2,5,9,20] broadcast(plane), dimensions={2,3}
  sb = f32[2,5,9,20] broadcast(scale), dimensions={0}
  t = f32[2,5,9,20] tanh(x)
  flat_in = f32[2,5,9,20] add(t, pb)
  flat_in2 = f32[2,5,9,20] multiply(flat_in, sb)
  flat = f32[2,9,20] reduce(flat_in2, zero), dimensions={1}, to_apply=add_fn
  cb = f32[2,5,9,20] broadcast(col), dimensions={3}
  rowwise_in = f32[2,5,9,20] add(x, cb)
  rowwise = f32[2,9,20] reduce(rowwise_in, zero), dimensions={1}, to_apply=add_fn
  ROOT out = (f32[2,9,20], f32[2,9,20]) tuple(flat, rowwise)
}
)";

TEST_F(VectorCodegenTest, ChannelReductionsRunFlatWhereTheIndexAllows) {
  auto module = hlo::ParseModule(kChannelModule, "channels.hlo");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  const Overrides lanes = {{"reduce_lanes", 16}, {"vectorize", 1}};
  auto impl = EmitWith(**module, lanes);
  ASSERT_TRUE(impl.ok()) << impl.status().ToString();
  std::string text;
  for (const auto& src : impl->sources) text += src.text;
  // Both reductions block 9 rows of 20; one of them runs them as one flat loop.
  const std::regex flat_loop(R"(acc\[q\] = fn[0-9]+\(acc\[q\], v[0-9]+\([a-z0-9]+, r1, rb, q\)\))");
  const auto flats = std::distance(std::sregex_iterator(text.begin(), text.end(), flat_loop),
                                   std::sregex_iterator());
  EXPECT_EQ(flats, 1) << text;
  EXPECT_NE(text.find("acc[(i1 - rb) * 20 + i2]"), std::string::npos) << text;
  ExpectAgrees(kChannelModule, lanes, {1e-6, 0});
}

// An elementwise output whose ops are read several times (t by m, r and the select; s by t, m and
// the compare): the store loop computes each op of the chain once into a local, in order, and
// the select reads both arms before choosing. Each vector width agrees with the interpreter.
const char* kChainModule = R"(
HloModule chain

ENTRY main {
  x = f32[5,37] parameter(0)
  b = f32[37] parameter(1)
  bb = f32[5,37] broadcast(b), dimensions={1}
  s = f32[5,37] add(x, bb)
  t = f32[5,37] tanh(s)
  m = f32[5,37] multiply(t, s)
  c = pred[5,37] compare(m, s), direction=GT
  r = f32[5,37] select(c, m, t)
  ROOT out = f32[5,37] exponential(r)
}
)";

TEST_F(VectorCodegenTest, ElementwiseChainsAreComputedOnceEach) {
  auto module = hlo::ParseModule(kChainModule, "chain.hlo");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  for (int64_t bits : {256, 512}) {
    SCOPED_TRACE(bits);
    auto impl = EmitWith(**module, {{"vector_bits", bits}});
    ASSERT_TRUE(impl.ok()) << impl.status().ToString();
    const std::string& text = impl->sources[0].text;
    // One local per op of the chain (add, tanh, multiply, compare, select, exponential): the
    // broadcast is not elementwise at the same index and stays a lambda call.
    const std::regex local("const float e[0-9]+ = ");
    const auto locals = std::distance(std::sregex_iterator(text.begin(), text.end(), local),
                                      std::sregex_iterator());
    EXPECT_EQ(locals, 5);
    EXPECT_NE(text.find("const bool e"), std::string::npos);
    EXPECT_NE(text.find("mkrt::vtanh(e"), std::string::npos);  // tanh reads s's local
    EXPECT_NE(text.find("const auto mk_on = "), std::string::npos);
    const bool wide = text.find("#pragma GCC target(\"prefer-vector-width=512\")") !=
                      std::string::npos;
    EXPECT_EQ(wide, bits == 512);
    ExpectAgrees(kChainModule, {{"vector_bits", bits}}, {1e-5});
  }
}

// mish(mish(x)) over [-40, 40] (27k's epilogue), and mish of a GEMM's tiles, where x is the
// tile epilogue's gm_dv: each tanh(softplus) is one mkrt::tanh_softplus (fused_math.h).
const char* kMishModule = R"(
HloModule mish
ENTRY main {
  p = f32[9,300] parameter(0)
  w = f32[300,40] parameter(1)
  s = f32[] constant(40)
  sb = f32[9,300] broadcast(s), dimensions={}
  x = f32[9,300] multiply(p, sb)
  z = f32[] constant(0)
  zb = f32[9,300] broadcast(z), dimensions={}
  m1 = f32[9,300] maximum(x, zb)
  a1 = f32[9,300] abs(x)
  n1 = f32[9,300] negate(a1)
  e1 = f32[9,300] exponential(n1)
  l1 = f32[9,300] log-plus-one(e1)
  sp1 = f32[9,300] add(m1, l1)
  t1 = f32[9,300] tanh(sp1)
  y = f32[9,300] multiply(x, t1)
  m2 = f32[9,300] maximum(y, zb)
  a2 = f32[9,300] abs(y)
  n2 = f32[9,300] negate(a2)
  e2 = f32[9,300] exponential(n2)
  l2 = f32[9,300] log-plus-one(e2)
  sp2 = f32[9,300] add(l2, m2)
  t2 = f32[9,300] tanh(sp2)
  mm = f32[9,300] multiply(y, t2)
  d = f32[9,40] dot(p, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  dz = f32[9,40] broadcast(z), dimensions={}
  dm = f32[9,40] maximum(dz, d)
  da = f32[9,40] abs(d)
  dn = f32[9,40] negate(da)
  de = f32[9,40] exponential(dn)
  dl = f32[9,40] log-plus-one(de)
  dsp = f32[9,40] add(dm, dl)
  dt = f32[9,40] tanh(dsp)
  dmish = f32[9,40] multiply(d, dt)
  ROOT out = (f32[9,300], f32[9,40]) tuple(mm, dmish)
}
)";

TEST_F(VectorCodegenTest, TanhOfSoftplusIsOneFunction) {
  auto module = hlo::ParseModule(kMishModule, "mish.hlo");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto impl = EmitWith(**module, {});
  ASSERT_TRUE(impl.ok()) << impl.status().ToString();
  const std::string& text = impl->sources[0].text;
  EXPECT_EQ(text.find("mkrt::vtanh("), std::string::npos);  // every tanh is fused
  EXPECT_NE(text.find("mkrt::tanh_softplus(e"), std::string::npos);      // a chain's local
  EXPECT_NE(text.find("mkrt::tanh_softplus(gm_dv)"), std::string::npos);  // the GEMM's tile
  // The GEMM output's sums are in another order than the interpreter's.
  ExpectAgrees(kMishModule, {}, {1e-5, 1e-4});
  ExpectAgrees(kMishModule, {{"vector_bits", 256}}, {1e-5, 1e-4});
}

// A layer norm over rows of 300 (row fusion): rsqrt(var + eps) and the mean's division are one
// value per row, computed once per row into a row buffer (vector_rows.h) rather than once per
// element by the loops that read them.
const char* kNormModule = R"(
HloModule norm
add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[37,300] parameter(0)
  zero = f32[] constant(0)
  n = f32[] constant(300)
  nb = f32[37,1] broadcast(n), dimensions={}
  s = f32[37] reduce(x, zero), dimensions={1}, to_apply=add_f32
  s1 = f32[37,1] reshape(s)
  mean = f32[37,1] divide(s1, nb)
  m2 = f32[37] reshape(mean)
  mb = f32[37,300] broadcast(m2), dimensions={0}
  d = f32[37,300] subtract(x, mb)
  sq = f32[37,300] multiply(d, d)
  v = f32[37] reduce(sq, zero), dimensions={1}, to_apply=add_f32
  v1 = f32[37,1] reshape(v)
  var = f32[37,1] divide(v1, nb)
  eps = f32[] constant(1e-5)
  eb = f32[37,1] broadcast(eps), dimensions={}
  ve = f32[37,1] add(var, eb)
  r = f32[37,1] rsqrt(ve)
  r2 = f32[37] reshape(r)
  rb = f32[37,300] broadcast(r2), dimensions={0}
  ROOT y = f32[37,300] multiply(d, rb)
}
)";

TEST_F(VectorCodegenTest, NormScalarsAreComputedOncePerRow) {
  auto module = hlo::ParseModule(kNormModule, "norm.hlo");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  const Overrides fused = {{"row_fuse", 1}, {"reduce_lanes", 8}};
  auto impl = EmitWith(**module, fused);
  ASSERT_TRUE(impl.ok()) << impl.status().ToString();
  const std::string& text = impl->sources[0].text;
  ASSERT_NE(text.find("one loop over the rows"), std::string::npos);
  // mean, var and rsqrt: three per-row buffers of one value each.
  size_t buffers = 0;
  for (size_t at = text.find("[mkrt::thread_index() * 1 + i1] = "); at != std::string::npos;
       at = text.find("[mkrt::thread_index() * 1 + i1] = ", at + 1)) {
    ++buffers;
  }
  EXPECT_EQ(buffers, 3u);
  ExpectAgrees(kNormModule, fused, {1e-5});
}

// A logsumexp over channels ([3,6,5,7] over dim 1, like 46k's) of a costly chain: both passes
// (the max and the sum of exponentials) read c at its own index, so the row loop computes c
// once per row into a row buffer (210 values per thread) and both passes load it; t feeds only
// c and is not kept. w is read by two passes too but costs only a multiply-add. The kernels
// agree with the interpreter.
const char* kTwoPassModule = R"(
HloModule two_pass
add_fn {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
max_fn {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
ENTRY main {
  x = f32[3,6,5,7] parameter(0)
  k = f32[6] parameter(1)
  ninf = f32[] constant(-inf)
  zero = f32[] constant(0)
  two = f32[] constant(2)
  kb = f32[3,6,5,7] broadcast(k), dimensions={1}
  xs = f32[3,6,5,7] multiply(x, kb)
  t = f32[3,6,5,7] tanh(xs)
  c = f32[3,6,5,7] add(t, x)
  m = f32[3,5,7] reduce(c, ninf), dimensions={1}, to_apply=max_fn
  mb = f32[3,6,5,7] broadcast(m), dimensions={0,2,3}
  d = f32[3,6,5,7] subtract(c, mb)
  e = f32[3,6,5,7] exponential(d)
  s = f32[3,5,7] reduce(e, zero), dimensions={1}, to_apply=add_fn
  l = f32[3,5,7] log(s)
  lse = f32[3,5,7] add(l, m)
  twob = f32[3,6,5,7] broadcast(two), dimensions={}
  w0 = f32[3,6,5,7] multiply(x, twob)
  w = f32[3,6,5,7] add(w0, kb)
  wm = f32[3,5,7] reduce(w, ninf), dimensions={1}, to_apply=max_fn
  wmb = f32[3,6,5,7] broadcast(wm), dimensions={0,2,3}
  wy = f32[3,6,5,7] subtract(w, wmb)
  q = f32[3,6,5,7] exponential(x)
  qs = f32[3,5,7] reduce(q, zero), dimensions={1}, to_apply=add_fn
  qsb = f32[3,6,5,7] broadcast(qs), dimensions={0,2,3}
  qd = f32[3,6,5,7] subtract(q, qsb)
  qb = f32[3,6,5,7,2] broadcast(q), dimensions={0,1,2,3}
  qm = f32[3,5,7,2] reduce(qb, ninf), dimensions={1}, to_apply=max_fn
  xt = f32[3,5,7,6] parameter(2)
  tr = f32[3,6,5,7] transpose(xt), dimensions={0,3,1,2}
  trn = f32[3,6,5,7] negate(tr)
  trm = f32[3,5,7] reduce(trn, ninf), dimensions={1}, to_apply=max_fn
  trmb = f32[3,6,5,7] broadcast(trm), dimensions={0,2,3}
  trd = f32[3,6,5,7] subtract(trn, trmb)
  xk = f32[6,3,5,7] parameter(3)
  tk = f32[3,6,5,7] transpose(xk), dimensions={1,0,2,3}
  tkn = f32[3,6,5,7] negate(tk)
  tkm = f32[3,5,7] reduce(tkn, ninf), dimensions={1}, to_apply=max_fn
  tkmb = f32[3,6,5,7] broadcast(tkm), dimensions={0,2,3}
  tkd = f32[3,6,5,7] subtract(tkn, tkmb)
  ROOT out = (f32[3,5,7], f32[3,6,5,7], f32[3,6,5,7], f32[3,5,7,2], f32[3,6,5,7], f32[3,6,5,7]) tuple(lse, wy, qd, qm, trd, tkd)
}
)";

TEST_F(VectorCodegenTest, ValuesSeveralPassesReadAreComputedOncePerRow) {
  auto module = hlo::ParseModule(kTwoPassModule, "two_pass.hlo");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto plan = analysis::PlanFusion(**module);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  auto names = [](const std::vector<const hlo::Instruction*>& v) {
    std::set<std::string> out;
    for (const auto* inst : v) out.insert(inst->name);
    return out;
  };
  // The row-cached values of the row-fused kernel that computes `name`.
  auto cached_with = [&](const std::string& name) {
    for (const auto& k : plan->kernels) {
      const bool has = std::any_of(k.instructions.begin(), k.instructions.end(),
                                   [&](const hlo::Instruction* i) { return i->name == name; });
      if (!has || k.family != analysis::KernelFamily::kReduction) continue;
      const RowFusion fusion = PlanRowFusion(k);
      EXPECT_FALSE(fusion.rows.empty()) << name;
      return names(fusion.row_cached);
    }
    ADD_FAILURE() << "no reduction kernel computes " << name;
    return std::set<std::string>{};
  };
  EXPECT_EQ(cached_with("c"), (std::set<std::string>{"c"}));
  EXPECT_EQ(cached_with("w"), (std::set<std::string>{}));
  // The planner gives q a kernel of its own (several kernels read it), so its passes are put
  // together here: the sum and the output pass read q at its own index, and it is kept; when a
  // pass reads it through a broadcast, which a row buffer read at the current index could not
  // serve, it is not.
  std::map<std::string, const hlo::Instruction*> by_name;
  for (const auto& inst : (*module)->entry()->instructions()) by_name[inst->name] = inst.get();
  auto program = [&](std::vector<std::string> ops, std::vector<std::string> outs) {
    std::vector<const hlo::Instruction*> p, o;
    for (const auto& n : ops) p.push_back(by_name.at(n));
    for (const auto& n : outs) o.push_back(by_name.at(n));
    const RowFusion fusion = PlanRowFusion(p, o, {});
    EXPECT_EQ(fusion.rows, (std::vector<int64_t>{3}));
    return names(fusion.row_cached);
  };
  EXPECT_EQ(program({"q", "qs", "qsb", "qd"}, {"qd"}), (std::set<std::string>{"q"}));
  EXPECT_EQ(program({"q", "qs", "qb", "qm"}, {"qs", "qm"}), (std::set<std::string>{}));
  // A value read through a transpose that moves its operand's minor dim gathers (one element
  // per cache line where that dim is long), as costly to compute twice as a transcendental;
  // through one that keeps it, it does not.
  EXPECT_EQ(program({"tr", "trn", "trm", "trmb", "trd"}, {"trd"}),
            (std::set<std::string>{"trn"}));
  EXPECT_EQ(program({"tk", "tkn", "tkm", "tkmb", "tkd"}, {"tkd"}), (std::set<std::string>{}));

  const Overrides fused = {{"row_fuse", 1}, {"reduce_lanes", 8}};
  auto impl = EmitWith(**module, fused);
  ASSERT_TRUE(impl.ok()) << impl.status().ToString();
  std::string text;
  for (const auto& src : impl->sources) text += src.text;
  EXPECT_NE(text.find("[mkrt::thread_index() * 210 + ((i1) * 5 + i2) * 7 + i3] = "),
            std::string::npos)
      << text;
  ExpectAgrees(kTwoPassModule, fused, {1e-5, 1e-5, 1e-5, 1e-5, 0, 0});
}

TEST_F(VectorCodegenTest, LargeConstantsAreCompactAndExact) {
  // Byte sizes 4100, 4098, 4102 and 4097 cover every base64 tail; the splat is a fill.
  std::string splat = "{";
  for (int i = 0; i < 5000; ++i) splat += i ? ",1.5" : "1.5";
  splat += "}";
  const std::string text = R"(
HloModule consts
ENTRY main {
  x = f32[1025] parameter(0)
  a = f32[1025] constant({...})
  b = bf16[2049] constant({...})
  c = bf16[2051] constant({...})
  d = u8[4097] constant({...})
  s = f32[5000] constant()" + splat + R"()
  xa = f32[1025] add(x, a)
  ROOT t = (f32[1025], bf16[2049], bf16[2051], u8[4097], f32[5000]) tuple(xa, b, c, d, s)
}
)";
  ExpectAgrees(text, {}, {0, 0, 0, 0, 0});
  auto module = hlo::ParseModule(text, "consts.hlo");
  ASSERT_TRUE(module.ok());
  interp::FillElidedConstants(**module);
  auto impl = EmitWith(**module, {});
  ASSERT_TRUE(impl.ok()) << impl.status().ToString();
  const std::string& src = impl->sources[0].text;
  EXPECT_NE(src.find("mkrt::decode_base64"), std::string::npos);
  EXPECT_NE(src.find("mkrt::fill_n"), std::string::npos);
  EXPECT_EQ(src.find("1069547520u,"), std::string::npos) << "1.5 written element by element";
}

// A softmax over rows (h, q) of scores stored [k][q][h] (4p's attention): the input's minor
// dim h is a row dim, so h runs innermost and consecutive rows read the same cache lines,
// where the input (16 MiB for each value of the rows before h) would not stay in cache. At
// 4 MiB it would, and the rows keep their natural order.
TEST_F(VectorCodegenTest, RowsReadingATransposedInputInterleaveWhereItExceedsTheCache) {
  auto softmax = [](const std::string& k) {
    return R"(
HloModule scores
max_fn {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
ENTRY main {
  s = f32[)" + k + R"(,512,8] parameter(0)
  ninf = f32[] constant(-inf)
  t = f32[8,512,)" + k + R"(] transpose(s), dimensions={2,1,0}
  m = f32[8,512] reduce(t, ninf), dimensions={2}, to_apply=max_fn
  mb = f32[8,512,)" + k + R"(] broadcast(m), dimensions={0,1}
  ROOT d = f32[8,512,)" + k + R"(] subtract(t, mb)
}
)";
  };
  for (const auto& [k, interleaved] : std::vector<std::pair<std::string, bool>>{
           {"1024", true}, {"256", false}}) {
    SCOPED_TRACE("k " + k);
    auto module = hlo::ParseModule(softmax(k), "scores.hlo");
    ASSERT_TRUE(module.ok()) << module.status().ToString();
    auto plan = analysis::PlanFusion(**module);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    ASSERT_EQ(plan->kernels.size(), 1u);
    const RowFusion fusion = PlanRowFusion(plan->kernels[0]);
    ASSERT_EQ(fusion.rows, (std::vector<int64_t>{8, 512}));
    EXPECT_EQ(fusion.order, interleaved ? (std::vector<size_t>{1, 0}) : (std::vector<size_t>{0, 1}));
    auto impl = EmitWith(**module, {{"row_fuse", 1}});
    ASSERT_TRUE(impl.ok()) << impl.status().ToString();
    const std::string loops = interleaved ? "  for (int64_t i1 = 0; i1 < 512; ++i1)\n"
                                            "  for (int64_t i0 = 0; i0 < 8; ++i0)\n"
                                          : "  for (int64_t i0 = 0; i0 < 8; ++i0)\n"
                                            "  for (int64_t i1 = 0; i1 < 512; ++i1)\n";
    EXPECT_NE(impl->sources[0].text.find(loops), std::string::npos) << impl->sources[0].text;
    if (interleaved) ExpectAgrees(softmax(k), {{"row_fuse", 1}}, {0});
  }
}

// Which reduction kernels share one loop over their rows, and what the space proposes.
TEST(VectorRowsTest, RowFusionNeedsEveryPassToStayInItsRow) {
  const std::string comps = R"(
HloModule rows
add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
)";
  // The row dims of each reduction kernel of `body`, in plan order.
  auto rows_of = [&](const std::string& body) {
    std::vector<std::vector<int64_t>> rows;
    auto module = hlo::ParseModule(comps + "ENTRY main {\n" + body + "}\n", "rows.hlo");
    EXPECT_TRUE(module.ok()) << module.status().ToString();
    if (!module.ok()) return rows;
    auto plan = analysis::PlanFusion(**module);
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    if (!plan.ok()) return rows;
    for (const auto& k : plan->kernels) {
      if (k.family == analysis::KernelFamily::kReduction) rows.push_back(RowFusionDims(k));
    }
    return rows;
  };
  using Rows = std::vector<std::vector<int64_t>>;
  // A norm: the sum and the normalized output, row by row.
  EXPECT_EQ(rows_of(R"(
  x = f32[8,16,32] parameter(0)
  zf = f32[] constant(0)
  s = f32[8,16] reduce(x, zf), dimensions={2}, to_apply=add_f32
  sb = f32[8,16,32] broadcast(s), dimensions={0,1}
  ROOT y = f32[8,16,32] subtract(x, sb)
)"), (Rows{{8, 16}}));
  // Softmax: exp(x - max) feeds the sum and the output, so it is kept for the row.
  {
    auto module = hlo::ParseModule(comps + R"(
max_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
ENTRY main {
  x = f32[8,32] parameter(0)
  ninf = f32[] constant(-inf)
  zf = f32[] constant(0)
  m = f32[8] reduce(x, ninf), dimensions={1}, to_apply=max_f32
  mb = f32[8,32] broadcast(m), dimensions={0}
  d = f32[8,32] subtract(x, mb)
  e = f32[8,32] exponential(d)
  s = f32[8] reduce(e, zf), dimensions={1}, to_apply=add_f32
  sb = f32[8,32] broadcast(s), dimensions={0}
  ROOT y = f32[8,32] divide(e, sb)
}
)", "softmax.hlo");
    ASSERT_TRUE(module.ok()) << module.status().ToString();
    auto plan = analysis::PlanFusion(**module);
    ASSERT_TRUE(plan.ok());
    ASSERT_EQ(plan->kernels.size(), 1u);
    const RowFusion fusion = PlanRowFusion(plan->kernels[0]);
    EXPECT_EQ(fusion.rows, (std::vector<int64_t>{8}));
    ASSERT_EQ(fusion.row_cached.size(), 1u);
    EXPECT_EQ(fusion.row_cached[0]->name, "e");
  }
  // Reducing the leading dim leaves no rows.
  EXPECT_EQ(rows_of(R"(
  x = f32[8,16] parameter(0)
  zf = f32[] constant(0)
  ROOT s = f32[16] reduce(x, zf), dimensions={0}, to_apply=add_f32
)"), (Rows{{}}));
  // An output that moves the reduce result across rows (a transpose) is not row-shaped.
  EXPECT_EQ(rows_of(R"(
  x = f32[8,16,32] parameter(0)
  zf = f32[] constant(0)
  s = f32[8,16] reduce(x, zf), dimensions={2}, to_apply=add_f32
  ROOT cs = f32[16,8] transpose(s), dimensions={1,0}
)"), (Rows{{}}));

  // The space proposes row fusion only with rows for every thread (4 per core), each of at
  // least 256 elements (a group norm's 16-element groups run faster unfused).
  for (const auto& [rows, width] : std::vector<std::pair<int64_t, int64_t>>{
           {2, 4096}, {64, 4096}, {64, 256}, {64, 64}, {1024, 16}}) {
    SCOPED_TRACE(std::to_string(rows) + " rows of " + std::to_string(width));
    const std::string r = std::to_string(rows), w = std::to_string(width);
    auto module = hlo::ParseModule(comps + "ENTRY main {\n  x = f32[" + r + "," + w +
                                       "] parameter(0)\n" + R"(  zf = f32[] constant(0)
  s = f32[)" + r + R"(] reduce(x, zf), dimensions={1}, to_apply=add_f32
  sb = f32[)" + r + "," + w + R"(] broadcast(s), dimensions={0}
  ROOT y = f32[)" + r + "," + w + R"(] subtract(x, sb)
})",
                                   "rows.hlo");
    ASSERT_TRUE(module.ok()) << module.status().ToString();
    auto plan = analysis::PlanFusion(**module);
    ASSERT_TRUE(plan.ok());
    target::Target sixteen = target::HostCpu(), one = sixteen;
    sixteen.cores = 16;
    one.cores = 1;
    int reductions = 0;
    for (const auto& k : plan->kernels) {
      if (k.family != analysis::KernelFamily::kReduction) continue;
      ++reductions;
      const bool long_rows = width >= 256;
      EXPECT_EQ(ReductionKernelSpace(k, sixteen).Initial().Get("row_fuse", -1),
                rows >= 64 && long_rows);
      EXPECT_EQ(ReductionKernelSpace(k, one).Initial().Get("row_fuse", -1), rows >= 4 && long_rows);
      EXPECT_EQ(ReductionKernelSpace(k, one).Initial().Get("reduce_lanes", -1), 16);
    }
    EXPECT_EQ(reductions, 1);
  }
}

// The runtime's branch-free 16-bit conversions (written so loops over them vectorize) against
// support/float16.h, which the interpreter uses: every 16-bit value, and a sweep of f32 bit
// patterns including every exponent, NaNs and subnormals.
TEST(VectorRuntimeTest, SixteenBitConversionsMatchTheInterpreters) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint16_t b = static_cast<uint16_t>(h);
    ASSERT_EQ(FloatBits(mkrt::bf16_to_f32(b)), FloatBits(Bf16ToFloat(b))) << h;
    const float f = mkrt::f16_to_f32(b);
    const float g = F16ToFloat(b);
    ASSERT_TRUE(FloatBits(f) == FloatBits(g) || (std::isnan(f) && std::isnan(g))) << h;
  }
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 997) {
    const float f = BitsToFloat(static_cast<uint32_t>(u));
    ASSERT_EQ(mkrt::f32_to_bf16(f), FloatToBf16(f)) << u;
    const uint16_t mine = mkrt::f32_to_f16(f), theirs = FloatToF16(f);
    const bool both_nan = std::isnan(f) && (mine & 0x7c00u) == 0x7c00u && (mine & 0x3ffu) != 0 &&
                          (theirs & 0x7c00u) == 0x7c00u && (theirs & 0x3ffu) != 0;
    ASSERT_TRUE(mine == theirs || both_nan) << u << ": " << mine << " vs " << theirs;
  }
}

}  // namespace
}  // namespace mk::codegen::cpu
