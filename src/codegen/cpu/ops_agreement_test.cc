// The backend-agreement table (in the style of ggml's test-backend-ops): every op the
// interpreter supports, run through the CPU engine (call inlining -> fusion plan -> emit ->
// compile -> sandboxed run) and through the interpreter on fresh random inputs, compared by
// normalized error: integer and pred outputs exactly, floats by max |a-b| / max(1, |b|) <= tol.
// Each case is one module with many ops (a tuple of outputs), so the table compiles in a few
// dozen g++ runs; float cases run in f32 and bf16.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "analysis/fusion_plan.h"
#include "codegen/cpu/cpu_emitter.h"
#include "codegen/cpu/test_harness.h"
#include "hlo/call_inliner.h"
#include "hlo/parser.h"
#include "interp/elided_constants.h"
#include "interp/interpreter.h"
#include "runtime/cpu_executor.h"

namespace mk::codegen::cpu {
namespace {

std::string Subst(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

// A module whose entry is `body` plus a root tuple of the named values (their types are read
// from their definitions, "  name = TYPE ...").
std::string BuildModule(const std::string& name, const std::string& computations,
                        const std::string& body, const std::vector<std::string>& outputs) {
  std::string types, names;
  for (const std::string& o : outputs) {
    std::string key = "\n  " + o + " = ";
    size_t at = ("\n" + body).find(key);
    EXPECT_NE(at, std::string::npos) << "no value " << o;
    if (at == std::string::npos) continue;
    at += key.size() - 1;  // account for the "\n" prepended above
    size_t end = body.find(' ', at);
    types += (types.empty() ? "" : ", ") + body.substr(at, end - at);
    names += (names.empty() ? "" : ", ") + o;
  }
  return "HloModule " + name + "\n" + computations + "\nENTRY main {\n" + body +
         "  ROOT root = (" + types + ") tuple(" + names + ")\n}\n";
}

class OpsAgreementTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cache_dir_ = testing::MakeTempDir("mk-ops-agreement"); }
  static void TearDownTestSuite() { std::filesystem::remove_all(cache_dir_); }

  // Runs `text` through both engines on `seeds` random inputs and compares every output;
  // `contraction` overrides parameters of every contraction kernel's initial schedule.
  void ExpectAgreement(const std::string& text, double tol = 0, int seeds = 2,
                       bool inline_calls = true,
                       const std::map<std::string, int64_t>& contraction = {}) {
    auto module = hlo::ParseModule(text, "case.hlo");
    ASSERT_TRUE(module.ok()) << module.status().ToString() << "\n" << text;
    interp::FillElidedConstants(**module);
    std::unique_ptr<hlo::Module> inlined;
    if (inline_calls) {
      auto r = hlo::InlineCalls(**module);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      inlined = std::move(r).value();
    }
    auto plan = analysis::PlanFusion(inline_calls ? *inlined : **module);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    CpuEmitter emitter;
    target::Target target = target::HostCpu();
    space::Candidate candidate;
    for (const auto& k : plan->kernels) {
      space::Schedule s = emitter.SpaceFor(k, target).Initial();
      if (k.family == analysis::KernelFamily::kContraction) {
        for (const auto& [name, v] : contraction) s.values[name] = v;
      }
      candidate.kernels.push_back(s);
    }
    auto impl = emitter.Emit(*plan, candidate, target);
    ASSERT_TRUE(impl.ok()) << impl.status().ToString();
    runtime::CompileOptions copts;
    copts.cache_dir = cache_dir_;
    runtime::CompilerDriver compiler(copts);
    runtime::SandboxRunner sandbox;
    runtime::CpuExecutor exec(compiler, sandbox);
    auto lib = exec.Build(*impl);
    ASSERT_TRUE(lib.ok()) << lib.status().ToString();
    for (int seed = 1; seed <= seeds; ++seed) {
      auto args = testing::RandomArgs(**module, static_cast<uint32_t>(seed));
      // The interpreter runs the module as written (calls included): it also checks the inliner.
      auto expected = interp::Evaluate(**module, args);
      ASSERT_TRUE(expected.ok()) << expected.status().ToString();
      std::vector<hlo::Literal> want;
      if (expected->shape().is_tuple()) want = expected->elements();
      else want.push_back(*expected);
      auto got = exec.Run(*lib, *impl, args, runtime::ExecuteOptions{.poison_scratch = true});
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      ASSERT_TRUE(got->outcome.ok()) << got->outcome.message;
      ASSERT_EQ(got->outputs.size(), want.size());
      for (size_t o = 0; o < want.size(); ++o) {
        ASSERT_TRUE(got->outputs[o].shape().SameAs(want[o].shape())) << "output " << o;
        const bool exact = !hlo::IsFloat(want[o].dtype());
        double worst = 0;
        int64_t worst_at = -1;
        for (int64_t i = 0; i < want[o].num_elements(); ++i) {
          if (exact) {
            ASSERT_EQ(got->outputs[o].GetUInt64(i), want[o].GetUInt64(i))
                << "output " << o << " (" << want[o].shape().ToString(false) << ") element " << i
                << " seed " << seed;
            continue;
          }
          double w = want[o].GetDouble(i), g = got->outputs[o].GetDouble(i);
          if (std::isnan(w) || std::isnan(g)) {
            ASSERT_TRUE(std::isnan(w) && std::isnan(g))
                << "output " << o << " element " << i << ": want " << w << " got " << g;
            continue;
          }
          if (std::isinf(w) || std::isinf(g)) {
            ASSERT_EQ(w, g) << "output " << o << " element " << i;
            continue;
          }
          double err = std::fabs(w - g) / std::max(1.0, std::fabs(w));
          if (err > worst) worst = err, worst_at = i;
        }
        EXPECT_LE(worst, tol) << "output " << o << " (" << want[o].shape().ToString(false)
                              << ") worst at element " << worst_at << ": want "
                              << want[o].GetDouble(worst_at) << " got "
                              << got->outputs[o].GetDouble(worst_at) << " seed " << seed;
      }
    }
  }

  // The case in f32 and in bf16 ($T in the text).
  void ExpectAgreementF32AndBf16(const std::string& text, double tol_f32 = 0,
                                 double tol_bf16 = 0) {
    {
      SCOPED_TRACE("f32");
      ExpectAgreement(Subst(text, "$T", "f32"), tol_f32);
    }
    {
      SCOPED_TRACE("bf16");
      ExpectAgreement(Subst(text, "$T", "bf16"), tol_bf16);
    }
  }

  static std::string cache_dir_;
};
std::string OpsAgreementTest::cache_dir_;

const char* kScalarComps = R"(
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
)";

TEST_F(OpsAgreementTest, ElementwiseUnaryFloat) {
  ExpectAgreementF32AndBf16(BuildModule("unary", "", R"(
  x0 = $T[4,33] parameter(0)
  three = $T[] constant(3)
  b3 = $T[4,33] broadcast(three), dimensions={}
  x = $T[4,33] multiply(x0, b3)
  abs = $T[4,33] abs(x)
  neg = $T[4,33] negate(x)
  sign = $T[4,33] sign(x)
  floor = $T[4,33] floor(x)
  ceil = $T[4,33] ceil(x)
  rne = $T[4,33] round-nearest-even(x)
  afz = $T[4,33] round-nearest-afz(x)
  log = $T[4,33] log(x)
  sqrt = $T[4,33] sqrt(abs)
  rsqrt = $T[4,33] rsqrt(abs)
  cbrt = $T[4,33] cbrt(x)
  sin = $T[4,33] sine(x)
  cos = $T[4,33] cosine(x)
  tan = $T[4,33] tan(x0)
  fin = pred[4,33] is-finite(log)
)", {"abs", "neg", "sign", "floor", "ceil", "rne", "afz", "sqrt", "rsqrt", "cbrt", "sin", "cos",
     "tan", "fin"}));
}

// exp, expm1, log, log1p, tanh, erf and logistic run as mk_cpu_rt.h's own vectorizable float
// functions (<= 3 ulp, vector_math_test.cc), not libm's: in f32 they agree with the interpreter
// to a few ulps (normalized error 1e-6), in bf16 a result may round to a neighbouring bf16 (2^-8
// to 2^-7 relative), twice along the activation chains (softplus, mish, GELU). The inputs reach
// overflow, underflow and the denormals of exp (x0 * 40).
TEST_F(OpsAgreementTest, ElementwiseTranscendentalFloat) {
  ExpectAgreementF32AndBf16(BuildModule("transcendental", "", R"(
  x0 = $T[4,33] parameter(0)
  three = $T[] constant(3)
  b3 = $T[4,33] broadcast(three), dimensions={}
  x = $T[4,33] multiply(x0, b3)
  forty = $T[] constant(40)
  b40 = $T[4,33] broadcast(forty), dimensions={}
  big = $T[4,33] multiply(x0, b40)
  abs = $T[4,33] abs(x)
  exp = $T[4,33] exponential(x0)
  expbig = $T[4,33] exponential(big)
  expm1 = $T[4,33] exponential-minus-one(x0)
  expm1big = $T[4,33] exponential-minus-one(big)
  log = $T[4,33] log(x)
  logbig = $T[4,33] log(expbig)
  log1p = $T[4,33] log-plus-one(abs)
  log1pneg = $T[4,33] log-plus-one(x0)
  tanh = $T[4,33] tanh(x)
  tanhbig = $T[4,33] tanh(big)
  logistic = $T[4,33] logistic(x)
  logisticbig = $T[4,33] logistic(big)
  erf = $T[4,33] erf(x0)
  erfx = $T[4,33] erf(x)
  softplus = $T[4,33] log-plus-one(exp)
  mish_t = $T[4,33] tanh(softplus)
  mish = $T[4,33] multiply(x0, mish_t)
  half = $T[] constant(0.5)
  bhalf = $T[4,33] broadcast(half), dimensions={}
  rsqrt2 = $T[] constant(0.70710678118654752)
  brsqrt2 = $T[4,33] broadcast(rsqrt2), dimensions={}
  xs = $T[4,33] multiply(x, brsqrt2)
  erfs = $T[4,33] erf(xs)
  one = $T[] constant(1)
  bone = $T[4,33] broadcast(one), dimensions={}
  erf1 = $T[4,33] add(erfs, bone)
  xhalf = $T[4,33] multiply(x, bhalf)
  gelu = $T[4,33] multiply(xhalf, erf1)
)", {"exp", "expbig", "expm1", "expm1big", "log", "logbig", "log1p", "log1pneg", "tanh", "tanhbig",
     "logistic", "logisticbig", "erf", "erfx", "softplus", "mish", "gelu"}), 1e-6, 0x1p-6);
}

TEST_F(OpsAgreementTest, ElementwiseBinaryCompareSelectClampFloat) {
  ExpectAgreementF32AndBf16(BuildModule("binary", "", R"(
  x = $T[4,33] parameter(0)
  y = $T[4,33] parameter(1)
  add = $T[4,33] add(x, y)
  sub = $T[4,33] subtract(x, y)
  mul = $T[4,33] multiply(x, y)
  div = $T[4,33] divide(x, y)
  rem = $T[4,33] remainder(x, y)
  ax = $T[4,33] abs(x)
  pow = $T[4,33] power(ax, y)
  max = $T[4,33] maximum(x, y)
  min = $T[4,33] minimum(x, y)
  atan2 = $T[4,33] atan2(x, y)
  eq = pred[4,33] compare(x, y), direction=EQ
  ne = pred[4,33] compare(x, y), direction=NE
  lt = pred[4,33] compare(x, y), direction=LT
  le = pred[4,33] compare(x, y), direction=LE
  gt = pred[4,33] compare(x, y), direction=GT
  ge = pred[4,33] compare(x, y), direction=GE
  rx = $T[4,33] round-nearest-even(x)
  ry = $T[4,33] round-nearest-even(y)
  req = pred[4,33] compare(rx, ry), direction=EQ
  tlt = pred[4,33] compare(rx, ry), direction=LT, type=TOTALORDER
  tge = pred[4,33] compare(rx, ry), direction=GE, type=TOTALORDER
  sel = $T[4,33] select(lt, x, y)
  lo = $T[] constant(-0.5)
  hi = $T[] constant(0.75)
  clamp = $T[4,33] clamp(lo, x, hi)
  ylo = $T[4,33] negate(ax)
  clamp2 = $T[4,33] clamp(ylo, y, ax)
  rp = $T[4,33] reduce-precision(x), exponent_bits=5, mantissa_bits=4
)", {"add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2", "eq", "ne", "lt", "le", "gt",
     "ge", "req", "tlt", "tge", "sel", "clamp", "clamp2", "rp"}));
}

TEST_F(OpsAgreementTest, ElementwiseInteger) {
  ExpectAgreement(BuildModule("ints", "", R"(
  x = s32[64] parameter(0)
  y = s32[64] parameter(1)
  u = u8[64] parameter(2)
  v = u8[64] parameter(3)
  add = s32[64] add(x, y)
  sub = s32[64] subtract(x, y)
  mul = s32[64] multiply(x, y)
  div = s32[64] divide(x, y)
  rem = s32[64] remainder(x, y)
  max = s32[64] maximum(x, y)
  min = s32[64] minimum(x, y)
  and = s32[64] and(x, y)
  or = s32[64] or(x, y)
  xor = s32[64] xor(x, y)
  shl = s32[64] shift-left(x, y)
  shra = s32[64] shift-right-arithmetic(x, y)
  shrl = s32[64] shift-right-logical(x, y)
  not = s32[64] not(x)
  popcnt = s32[64] popcnt(x)
  clz = s32[64] count-leading-zeros(x)
  abs = s32[64] abs(x)
  neg = s32[64] negate(x)
  sign = s32[64] sign(x)
  pow = s32[64] power(x, y)
  lt = pred[64] compare(x, y), direction=LT
  ge = pred[64] compare(x, y), direction=GE
  eq = pred[64] compare(x, y), direction=EQ
  ne = pred[64] compare(x, y), direction=NE
  pand = pred[64] and(lt, ge)
  por = pred[64] or(lt, eq)
  pnot = pred[64] not(ne)
  sel = s32[64] select(lt, x, y)
  lo = s32[] constant(-1)
  hi = s32[] constant(2)
  clamp = s32[64] clamp(lo, x, hi)
  uadd = u8[64] add(u, v)
  umul = u8[64] multiply(u, v)
  udiv = u8[64] divide(u, v)
  ushr = u8[64] shift-right-logical(u, v)
  ult = pred[64] compare(u, v), direction=LT
  umax = u8[64] maximum(u, v)
)", {"add", "sub", "mul", "div", "rem", "max", "min", "and", "or", "xor", "shl", "shra", "shrl",
     "not", "popcnt", "clz", "abs", "neg", "sign", "pow", "lt", "ge", "eq", "ne", "pand", "por",
     "pnot", "sel", "clamp", "uadd", "umul", "udiv", "ushr", "ult", "umax"}));
}

TEST_F(OpsAgreementTest, ConvertAndBitcastConvert) {
  ExpectAgreement(BuildModule("converts", "", R"(
  x0 = f32[4,8] parameter(0)
  i = s32[4,8] parameter(1)
  p = pred[4,8] parameter(2)
  u = u8[4,8] parameter(3)
  d = f64[4,8] parameter(4)
  h = f16[4,8] parameter(5)
  k = f32[] constant(100)
  kb = f32[4,8] broadcast(k), dimensions={}
  x = f32[4,8] multiply(x0, kb)
  c1 = bf16[4,8] convert(x)
  c2 = f32[4,8] convert(c1)
  c3 = s32[4,8] convert(x)
  c4 = f32[4,8] convert(i)
  c5 = f16[4,8] convert(x)
  c6 = f32[4,8] convert(h)
  c7 = f32[4,8] convert(p)
  c8 = pred[4,8] convert(x)
  c9 = s8[4,8] convert(c3)
  c10 = s32[4,8] convert(u)
  c11 = f32[4,8] convert(d)
  c12 = bf16[4,8] convert(d)
  c13 = u8[4,8] convert(x)
  c14 = f64[4,8] convert(x)
  c15 = bf16[4,8] convert(h)
  c16 = s64[4,8] convert(d)
  b1 = s32[4,8] bitcast-convert(x)
  b2 = u8[4,8,4] bitcast-convert(x)
  b3 = f32[4,8] bitcast-convert(b2)
  b4 = s16[4,8] bitcast-convert(c1)
  b5 = u32[4,8,2] bitcast-convert(d)
  b6 = f64[4,8] bitcast-convert(b5)
  b7 = f16[4,8,2] bitcast-convert(i)
)", {"c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9", "c10", "c11", "c12", "c13", "c14",
     "c15", "c16", "b1", "b2", "b3", "b4", "b5", "b6", "b7"}));
}

TEST_F(OpsAgreementTest, DataMovement) {
  ExpectAgreementF32AndBf16(BuildModule("moves", "", R"(
  x = $T[4,6] parameter(0)
  upd = $T[2,3] parameter(1)
  s0 = s32[] parameter(2)
  s1 = s32[] parameter(3)
  iota = $T[3,5] iota(), iota_dimension=1
  iota_s = s32[7] iota(), iota_dimension=0
  reshape = $T[3,8] reshape(x)
  bcast = $T[2,4,5,6] broadcast(x), dimensions={1,3}
  tr = $T[6,4] transpose(x), dimensions={1,0}
  slice = $T[2,2] slice(x), slice={[1:4:2], [0:6:3]}
  ds = $T[2,3] dynamic-slice(x, s0, s1), dynamic_slice_sizes={2,3}
  dus = $T[4,6] dynamic-update-slice(x, upd, s0, s1)
  tr2 = $T[4,6] transpose(tr), dimensions={1,0}
  concat = $T[4,18] concatenate(x, dus, tr2), dimensions={1}
  zero = $T[] constant(0)
  pad = $T[7,12] pad(x, zero), padding=1_-1_1x2_-1_1
  rev = $T[4,6] reverse(x), dimensions={0,1}
  copy = $T[4,6] copy(rev)
)", {"iota", "iota_s", "reshape", "bcast", "tr", "slice", "ds", "dus", "concat", "pad", "rev", "copy"}));
}

// Float dots run as a blocked GEMM (gemm_emitter.h): FMA and bf16-pair products round
// differently from the interpreter's multiply-then-add, so they agree to a few f32 ulps of the
// sum (K <= 10 here), and bf16 results may round to the neighbouring bf16 (2^-7 relative).
TEST_F(OpsAgreementTest, Dot) {
  ExpectAgreementF32AndBf16(BuildModule("dots", "", R"(
  a = $T[2,3,5] parameter(0)
  b = $T[2,5,4] parameter(1)
  lt = $T[5,3] parameter(2)
  rt = $T[4,5] parameter(3)
  v = $T[5] parameter(4)
  c2 = $T[3,2,5] parameter(5)
  batched = $T[2,3,4] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  transposed = $T[3,4] dot(lt, rt), lhs_contracting_dims={0}, rhs_contracting_dims={1}
  vec = $T[4] dot(rt, v), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  two = $T[3,3] dot(c2, a), lhs_contracting_dims={1,2}, rhs_contracting_dims={0,2}
  outer = $T[5,5] dot(v, v), lhs_contracting_dims={}, rhs_contracting_dims={}
  f32out = f32[2,3,4] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
)", {"batched", "transposed", "vec", "two", "outer", "f32out"}), 1e-5, 0x1p-7 + 1e-5);
}

// Float convolutions in b,f,spatial or (one group) b,spatial,f output layouts are implicit GEMMs
// (conv_gemm.h), rounding like the dots above; the rest (grouped b01f, batch groups) keep the
// generic loop nest, which agrees exactly.
TEST_F(OpsAgreementTest, Convolution2D) {
  ExpectAgreementF32AndBf16(BuildModule("conv2d", "", R"(
  in = $T[2,9,9,4] parameter(0)
  k = $T[3,3,4,6] parameter(1)
  kg = $T[3,3,2,6] parameter(2)
  kd = $T[3,3,1,4] parameter(3)
  inb = $T[4,5,5,3] parameter(4)
  kb = $T[3,3,3,6] parameter(5)
  basic = $T[2,5,5,6] convolution(in, k), window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  grouped = $T[2,7,7,6] convolution(in, kg), window={size=3x3}, dim_labels=b01f_01io->b01f, feature_group_count=2
  depthwise = $T[2,9,9,4] convolution(in, kd), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=4
  dilated = $T[2,5,5,6] convolution(in, k), window={size=3x3 rhs_dilate=2x2}, dim_labels=b01f_01io->b01f
  transposed = $T[2,19,19,6] convolution(in, k), window={size=3x3 pad=2_2x2_2 lhs_dilate=2x2 rhs_reversal=1x1}, dim_labels=b01f_01io->b01f
  negpad = $T[2,6,6,6] convolution(in, k), window={size=3x3 pad=-1_0x0_-1}, dim_labels=b01f_01io->b01f
  batchgroup = $T[2,3,3,6] convolution(inb, kb), window={size=3x3}, dim_labels=b01f_01io->b01f, batch_group_count=2
  f32acc = f32[2,5,5,6] convolution(in, k), window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
)", {"basic", "grouped", "depthwise", "dilated", "transposed", "negpad", "batchgroup", "f32acc"}),
                            1e-5, 0x1p-7 + 1e-5);
}

TEST_F(OpsAgreementTest, Convolution1D3DAndLayouts) {
  ExpectAgreementF32AndBf16(BuildModule("conv_nd", "", R"(
  in1 = $T[2,10,3] parameter(0)
  k1 = $T[3,3,5] parameter(1)
  in3 = $T[1,5,5,5,2] parameter(2)
  k3 = $T[2,2,2,2,3] parameter(3)
  nchw = $T[2,3,6,6] parameter(4)
  oihw = $T[4,3,3,3] parameter(5)
  fb = $T[3,6,5,2] parameter(6)
  kfb = $T[3,2,4,3] parameter(7)
  conv1d = $T[2,10,5] convolution(in1, k1), window={size=3 pad=1_1}, dim_labels=b0f_0io->b0f
  conv3d = $T[1,4,4,4,3] convolution(in3, k3), window={size=2x2x2}, dim_labels=b012f_012io->b012f
  conv_nchw = $T[2,4,4,4] convolution(nchw, oihw), window={size=3x3}, dim_labels=bf01_oi01->bf01
  swapped = $T[2,4,4,4] convolution(fb, kfb), window={size=3x2 stride=1x1}, dim_labels=f01b_01oi->b10f
)", {"conv1d", "conv3d", "conv_nchw", "swapped"}), 1e-5, 0x1p-7 + 1e-5);
}

TEST_F(OpsAgreementTest, Reduce) {
  const std::string argmax = R"(
argmax_fn {
  av = $T[] parameter(0)
  ai = s32[] parameter(1)
  bv = $T[] parameter(2)
  bi = s32[] parameter(3)
  gt = pred[] compare(av, bv), direction=GT
  eq = pred[] compare(av, bv), direction=EQ
  lt = pred[] compare(ai, bi), direction=LT
  tie = pred[] and(eq, lt)
  keep = pred[] or(gt, tie)
  v = $T[] select(keep, av, bv)
  i = s32[] select(keep, ai, bi)
  ROOT r = ($T[], s32[]) tuple(v, i)
}
)";
  // The default schedule sums rows in vector lanes (reduce_emit.h), an order the interpreter's
  // serial sum does not share: a few f32 ulps, and a few bf16 roundings of the partial sums
  // (vector_reduce_test.cc checks each schedule, the serial one exactly).
  ExpectAgreementF32AndBf16(BuildModule("reduces", kScalarComps + argmax, R"(
  x = $T[4,33] parameter(0)
  y = $T[3,4,5] parameter(1)
  zero = $T[] constant(0)
  ninf = $T[] constant(-inf)
  rows = $T[4] reduce(x, zero), dimensions={1}, to_apply=add_fn
  all = $T[] reduce(x, ninf), dimensions={0,1}, to_apply=max_fn
  outer = $T[4] reduce(y, zero), dimensions={0,2}, to_apply=add_fn
  idx = s32[4,33] iota(), iota_dimension=1
  zi = s32[] constant(0)
  am = ($T[4], s32[4]) reduce(x, idx, ninf, zi), dimensions={1}, to_apply=argmax_fn
  amv = $T[4] get-tuple-element(am), index=0
  ami = s32[4] get-tuple-element(am), index=1
)", {"rows", "all", "outer", "amv", "ami"}), 1e-5, 0.1);
}

TEST_F(OpsAgreementTest, ReduceWindowAndSelectAndScatter) {
  const std::string comps = std::string(kScalarComps) + R"(
ge_fn {
  a = $T[] parameter(0)
  b = $T[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=GE
}
argmax_fn {
  av = $T[] parameter(0)
  ai = s32[] parameter(1)
  bv = $T[] parameter(2)
  bi = s32[] parameter(3)
  gt = pred[] compare(av, bv), direction=GT
  v = $T[] select(gt, av, bv)
  i = s32[] select(gt, ai, bi)
  ROOT r = ($T[], s32[]) tuple(v, i)
}
)";
  ExpectAgreementF32AndBf16(BuildModule("windows", comps, R"(
  in = $T[1,8,8,2] parameter(0)
  src = $T[1,4,4,2] parameter(1)
  ninf = $T[] constant(-inf)
  zero = $T[] constant(0)
  pool = $T[1,4,4,2] reduce-window(in, ninf), window={size=1x3x3x1 stride=1x2x2x1 pad=0_0x0_1x0_1x0_0}, to_apply=max_fn
  avg = $T[1,8,8,2] reduce-window(in, zero), window={size=1x3x3x1 pad=0_0x1_1x1_1x0_0}, to_apply=add_fn
  based = $T[1,14,14,2] reduce-window(in, ninf), window={size=1x2x2x1 lhs_dilate=1x2x2x1}, to_apply=max_fn
  wdil = $T[1,5,5,2] reduce-window(in, zero), window={size=1x2x2x1 rhs_dilate=1x3x3x1}, to_apply=add_fn
  idx = s32[1,8,8,2] iota(), iota_dimension=2
  zi = s32[] constant(0)
  multi = ($T[1,4,4,2], s32[1,4,4,2]) reduce-window(in, idx, ninf, zi), window={size=1x2x2x1 stride=1x2x2x1}, to_apply=argmax_fn
  mv = $T[1,4,4,2] get-tuple-element(multi), index=0
  mi = s32[1,4,4,2] get-tuple-element(multi), index=1
  sas = $T[1,8,8,2] select-and-scatter(in, src, zero), window={size=1x3x3x1 stride=1x2x2x1 pad=0_0x0_1x0_1x0_0}, select=ge_fn, scatter=add_fn
)", {"pool", "avg", "based", "wdil", "mv", "mi", "sas"}));
}

TEST_F(OpsAgreementTest, GatherAndScatter) {
  const std::string comps = std::string(kScalarComps) + R"(
replace_fn {
  a = $T[] parameter(0)
  ROOT b = $T[] parameter(1)
}
pair_fn {
  a = $T[] parameter(0)
  b = s32[] parameter(1)
  c = $T[] parameter(2)
  d = s32[] parameter(3)
  s = $T[] add(a, c)
  m = s32[] maximum(b, d)
  ROOT r = ($T[], s32[]) tuple(s, m)
}
)";
  ExpectAgreementF32AndBf16(BuildModule("indexing", comps, R"(
  table = $T[10,5] parameter(0)
  gi = s32[3] parameter(1)
  op2 = $T[6,7] parameter(2)
  gi2 = s32[4,2] parameter(3)
  batched = $T[4,8,3] parameter(4)
  bidx = s32[4,2,1] parameter(5)
  operand = $T[10,3] parameter(6)
  sidx = s32[5,1] parameter(7)
  supd = $T[5,3] parameter(8)
  supd2 = $T[4,2,3] parameter(9)
  iop = s32[10,3] parameter(10)
  iupd = s32[5,3] parameter(11)
  emb = $T[3,5] gather(table, gi), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,5}
  g2 = $T[4,2,3] gather(op2, gi2), offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={0,1}, index_vector_dim=1, slice_sizes={2,3}
  bg = $T[4,2,3] gather(batched, bidx), offset_dims={2}, collapsed_slice_dims={1}, start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, index_vector_dim=2, slice_sizes={1,1,3}
  sadd = $T[10,3] scatter(operand, sidx, supd), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add_fn
  srep = $T[10,3] scatter(operand, sidx, supd), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=replace_fn
  swin = $T[6,7] scatter(op2, gi2, supd2), update_window_dims={1,2}, inserted_window_dims={}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=1, to_apply=add_fn
  bsc = $T[4,8,3] scatter(batched, bidx, bg), update_window_dims={2}, inserted_window_dims={1}, scatter_dims_to_operand_dims={1}, input_batching_dims={0}, scatter_indices_batching_dims={0}, index_vector_dim=2, to_apply=add_fn
  multi = ($T[10,3], s32[10,3]) scatter(operand, iop, sidx, supd, iupd), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=pair_fn
  m0 = $T[10,3] get-tuple-element(multi), index=0
  m1 = s32[10,3] get-tuple-element(multi), index=1
)", {"emb", "g2", "bg", "sadd", "srep", "swin", "bsc", "m0", "m1"}));
}

TEST_F(OpsAgreementTest, SortAndTopK) {
  const std::string comps = R"(
less_fn {
  a = $T[] parameter(0)
  b = $T[] parameter(1)
  ROOT lt = pred[] compare(a, b), direction=LT
}
greater_fn {
  a = $T[] parameter(0)
  b = $T[] parameter(1)
  ROOT gt = pred[] compare(a, b), direction=GT
}
total_fn {
  a = $T[] parameter(0)
  b = $T[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT lt = pred[] compare(a, b), direction=LT, type=TOTALORDER
}
by_value_fn {
  a = $T[] parameter(0)
  b = $T[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT gt = pred[] compare(c, d), direction=GT
}
)";
  ExpectAgreementF32AndBf16(BuildModule("sorts", comps, R"(
  keys = $T[4,16] parameter(0)
  ivals = s32[4,16] parameter(1)
  s1 = $T[4,16] sort(keys), dimensions={1}, to_apply=less_fn
  vals = s32[4,16] iota(), iota_dimension=1
  s2 = ($T[4,16], s32[4,16]) sort(keys, vals), dimensions={1}, is_stable=true, to_apply=total_fn
  s2k = $T[4,16] get-tuple-element(s2), index=0
  s2v = s32[4,16] get-tuple-element(s2), index=1
  s3 = $T[4,16] sort(keys), dimensions={0}, to_apply=greater_fn
  s4 = ($T[4,16], s32[4,16]) sort(keys, ivals), dimensions={1}, is_stable=true, to_apply=by_value_fn
  s4k = $T[4,16] get-tuple-element(s4), index=0
  top = ($T[4,5], s32[4,5]) topk(keys), k=5, largest=true
  topv = $T[4,5] get-tuple-element(top), index=0
  topi = s32[4,5] get-tuple-element(top), index=1
  bot = ($T[4,3], s32[4,3]) topk(keys), k=3, largest=false
  botv = $T[4,3] get-tuple-element(bot), index=0
  boti = s32[4,3] get-tuple-element(bot), index=1
)", {"s1", "s2k", "s2v", "s3", "s4k", "topv", "topi", "botv", "boti"}));
}

const char* kControlComps = R"(
add_fn {
  a = $T[] parameter(0)
  b = $T[] parameter(1)
  ROOT s = $T[] add(a, b)
}
cond_fn {
  st = (s32[], $T[4], $T[6,4]) parameter(0)
  i = s32[] get-tuple-element(st), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body_fn {
  st = (s32[], $T[4], $T[6,4]) parameter(0)
  i = s32[] get-tuple-element(st), index=0
  v = $T[4] get-tuple-element(st), index=1
  m = $T[6,4] get-tuple-element(st), index=2
  one = s32[] constant(1)
  next = s32[] add(i, one)
  zero = s32[] constant(0)
  row = $T[1,4] dynamic-slice(m, i, zero), dynamic_slice_sizes={1,4}
  r = $T[4] reshape(row)
  vr = $T[4] add(v, r)
  v2 = $T[4] tanh(vr)
  v2r = $T[1,4] reshape(v2)
  m2 = $T[6,4] dynamic-update-slice(m, v2r, next, zero)
  ROOT t = (s32[], $T[4], $T[6,4]) tuple(next, v2, m2)
}
on_true {
  ROOT x = $T[4] parameter(0)
}
on_false {
  y = $T[4] parameter(0)
  ROOT neg = $T[4] negate(y)
}
branch2 {
  z = $T[4] parameter(0)
  ROOT e = $T[4] exponential(z)
}
inner {
  p = $T[4] parameter(0)
  ROOT a = $T[4] abs(p)
}
callee {
  p = $T[4] parameter(0)
  q = $T[4] parameter(1)
  c = $T[4] call(p), to_apply=inner
  ROOT s = $T[4] multiply(c, q)
}
)";

const char* kControlBody = R"(
  v0 = $T[4] parameter(0)
  m0 = $T[6,4] parameter(1)
  flag = pred[] parameter(2)
  which = s32[] parameter(3)
  zero = s32[] constant(0)
  init = (s32[], $T[4], $T[6,4]) tuple(zero, v0, m0)
  loop = (s32[], $T[4], $T[6,4]) while(init), condition=cond_fn, body=body_fn
  li = s32[] get-tuple-element(loop), index=0
  lv = $T[4] get-tuple-element(loop), index=1
  lm = $T[6,4] get-tuple-element(loop), index=2
  if = $T[4] conditional(flag, lv, v0), true_computation=on_true, false_computation=on_false
  sw = $T[4] conditional(which, lv, v0, lv), branch_computations={on_true, on_false, branch2}
  called = $T[4] call(v0, lv), to_apply=callee
  map = $T[4] map(v0, lv), dimensions={0}, to_apply=add_fn
)";

// The while body's tanh and branch2's exp are mk_cpu_rt.h's (a few ulps from libm, see
// ElementwiseTranscendentalFloat); in bf16 the five tanh iterations may each move a value to a
// neighbouring bf16.
TEST_F(OpsAgreementTest, ControlFlowAndMap) {
  ExpectAgreementF32AndBf16(BuildModule("control", kControlComps, kControlBody,
                                        {"li", "lv", "lm", "if", "sw", "called", "map"}),
                            1e-6, 0x1p-6);
}

TEST_F(OpsAgreementTest, CallsLowerWithoutInlining) {
  ExpectAgreement(Subst(BuildModule("calls", kControlComps, kControlBody, {"called", "sw"}),
                        "$T", "f32"),
                  1e-6, 2, /*inline_calls=*/false);
}

TEST_F(OpsAgreementTest, RandomBits) {
  ExpectAgreement(BuildModule("rng", "", R"(
  state = u64[2] parameter(0)
  state3 = u64[3] parameter(1)
  bits = (u64[2], u32[4,4]) rng-bit-generator(state), algorithm=rng_default
  b_st = u64[2] get-tuple-element(bits), index=0
  b_v = u32[4,4] get-tuple-element(bits), index=1
  p64 = (u64[3], u64[5]) rng-bit-generator(state3), algorithm=rng_philox
  p_st = u64[3] get-tuple-element(p64), index=0
  p_v = u64[5] get-tuple-element(p64), index=1
  tf = (u64[2], u32[3,5]) rng-bit-generator(state), algorithm=rng_three_fry
  tf_st = u64[2] get-tuple-element(tf), index=0
  tf_v = u32[3,5] get-tuple-element(tf), index=1
  tf64 = (u64[2], s64[7]) rng-bit-generator(state), algorithm=rng_three_fry
  tf64_v = s64[7] get-tuple-element(tf64), index=1
  lo = f32[] constant(-1)
  hi = f32[] constant(2)
  uni = f32[3,3] rng(lo, hi), distribution=rng_uniform
  nrm = f32[9] rng(lo, hi), distribution=rng_normal
  lob = bf16[] constant(-1)
  hib = bf16[] constant(2)
  unib = bf16[16] rng(lob, hib), distribution=rng_uniform
  ilo = s32[] constant(-5)
  ihi = s32[] constant(7)
  irng = s32[10] rng(ilo, ihi), distribution=rng_uniform
)", {"b_st", "b_v", "p_st", "p_v", "tf_st", "tf_v", "tf64_v", "uni", "nrm", "unib", "irng"}));
}

TEST_F(OpsAgreementTest, CustomCallIsACannotLowerErrorNamingTheTarget) {
  auto module = hlo::ParseModule(R"(
HloModule cc
ENTRY main {
  x = f32[3] parameter(0)
  ROOT y = f32[3] custom-call(x), custom_call_target="my_fancy_kernel"
}
)", "cc.hlo");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto plan = analysis::PlanFusion(**module);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  CpuEmitter emitter;
  target::Target target = target::HostCpu();
  space::Candidate candidate;
  for (const auto& k : plan->kernels) candidate.kernels.push_back(emitter.SpaceFor(k, target).Initial());
  auto impl = emitter.Emit(*plan, candidate, target);
  ASSERT_FALSE(impl.ok());
  const std::string message = impl.status().ToString();
  EXPECT_NE(message.find("custom-call"), std::string::npos) << message;
  EXPECT_NE(message.find("my_fancy_kernel"), std::string::npos) << message;
  EXPECT_NE(message.find("cc.hlo:5"), std::string::npos) << message;
}

std::string CorpusText(const std::string& file) {
  std::ifstream in(MK_SOURCE_DIR "/../shared/hlo-corpus/" + file);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A bf16 network: its convolutions' implicit GEMMs (conv_gemm.h) sum in another order than the
// interpreter, so a conv result sometimes rounds to the neighbouring bf16 (conv_gemm_test.cc
// checks them to that tolerance), and 20 layers, exp box decoding and sigmoids amplify those
// flips far beyond any useful tolerance. The model's convolutions therefore run the exact generic loop nest here
// (gemm_blocked=0), so every other op is still checked to 1e-5.
TEST_F(OpsAgreementTest, CorpusSsdMobilenet) {
  const std::string text = CorpusText("ssd_mobilenet_tf.hlo");
  if (text.empty()) GTEST_SKIP() << "corpus not present";
  ExpectAgreement(text, 1e-5, 1, true, {{"gemm_blocked", 0}});
}

// Three elided 56945x50 bf16 embedding tables (~17 MB of filled constants): emitted as base64
// blobs decoded at load, they compile in seconds (as initializer lists g++ needed minutes and
// 13 GB).
TEST_F(OpsAgreementTest, CorpusGraphsageLargeConstants) {
  const std::string text = CorpusText("graphsage_tf.hlo");
  if (text.empty()) GTEST_SKIP() << "corpus not present";
  ExpectAgreement(text, 1e-5, 1);
}

}  // namespace
}  // namespace mk::codegen::cpu
