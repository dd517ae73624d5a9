// The evaluator's own work: control flow (while, conditional, call), tuples, elided constants,
// and the errors it reports for bad arguments and unsupported ops/types.
#include <gtest/gtest.h>

#include "hlo/parser.h"
#include "interp/test_util.h"

namespace mk::interp {
namespace {

using hlo::DType;
using testing::MakeLiteral;
using testing::TryRun;
using testing::Values;

hlo::Literal Eval(const std::string& text, const std::vector<hlo::Literal>& args,
                  const InterpreterOptions& options = {}) {
  return testing::Run(text, args, options);
}

hlo::Literal S32(int64_t v) { return MakeLiteral(DType::kS32, {}, {static_cast<double>(v)}); }
hlo::Literal F32(double v) { return MakeLiteral(DType::kF32, {}, {v}); }

TEST(EvaluatorTest, WhileCounterLoop) {
  const char* hlo = R"(
HloModule m
cond {
  i = s32[] parameter(0)
  n = s32[] constant(10)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  i = s32[] parameter(0)
  one = s32[] constant(1)
  ROOT next = s32[] add(i, one)
}
ENTRY main {
  start = s32[] parameter(0)
  ROOT w = s32[] while(start), condition=cond, body=body
})";
  EXPECT_EQ(Values(Eval(hlo, {S32(0)})), (std::vector<double>{10}));
  // The condition is false at once: the body never runs.
  EXPECT_EQ(Values(Eval(hlo, {S32(42)})), (std::vector<double>{42}));
}

// (i, acc): acc += 2*i for i in 0..4 -> 0+2+4+6+8 = 20; the array element rides along.
TEST(EvaluatorTest, WhileCarryingTuple) {
  const char* hlo = R"(
HloModule m
cond {
  t = (s32[], f32[], f32[2]) parameter(0)
  i = s32[] get-tuple-element(t), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  t = (s32[], f32[], f32[2]) parameter(0)
  i = s32[] get-tuple-element(t), index=0
  acc = f32[] get-tuple-element(t), index=1
  v = f32[2] get-tuple-element(t), index=2
  one = s32[] constant(1)
  next = s32[] add(i, one)
  fi = f32[] convert(i)
  two = f32[] constant(2)
  step = f32[] multiply(fi, two)
  acc2 = f32[] add(acc, step)
  ROOT out = (s32[], f32[], f32[2]) tuple(next, acc2, v)
}
ENTRY main {
  zero = s32[] constant(0)
  acc0 = f32[] constant(0)
  v = f32[2] parameter(0)
  init = (s32[], f32[], f32[2]) tuple(zero, acc0, v)
  w = (s32[], f32[], f32[2]) while(init), condition=cond, body=body
  ROOT acc = f32[] get-tuple-element(w), index=1
})";
  EXPECT_EQ(Values(Eval(hlo, {MakeLiteral(DType::kF32, {2}, {1, 2})})),
            (std::vector<double>{20}));
}

const char* kPredConditional = R"(
HloModule m
on_true {
  x = f32[] parameter(0)
  one = f32[] constant(1)
  ROOT r = f32[] add(x, one)
}
on_false {
  x = f32[] parameter(0)
  two = f32[] constant(2)
  ROOT r = f32[] multiply(x, two)
}
ENTRY main {
  p = pred[] parameter(0)
  x = f32[] parameter(1)
  ROOT c = f32[] conditional(p, x, x), true_computation=on_true, false_computation=on_false
})";

TEST(EvaluatorTest, ConditionalOnPredicate) {
  EXPECT_EQ(Values(Eval(kPredConditional, {MakeLiteral(DType::kPred, {}, {1}), F32(5)})),
            (std::vector<double>{6}));
  EXPECT_EQ(Values(Eval(kPredConditional, {MakeLiteral(DType::kPred, {}, {0}), F32(5)})),
            (std::vector<double>{10}));
}

// Three branches taking different operand types; out-of-range indices run the last branch.
TEST(EvaluatorTest, ConditionalOnIndex) {
  const char* hlo = R"(
HloModule m
b0 {
  x = f32[] parameter(0)
  ROOT r = f32[] negate(x)
}
b1 {
  t = (f32[], f32[]) parameter(0)
  a = f32[] get-tuple-element(t), index=0
  b = f32[] get-tuple-element(t), index=1
  ROOT r = f32[] subtract(a, b)
}
b2 {
  x = f32[] parameter(0)
  ROOT r = f32[] constant(100)
}
ENTRY main {
  i = s32[] parameter(0)
  x = f32[] parameter(1)
  three = f32[] constant(3)
  t = (f32[], f32[]) tuple(x, three)
  ROOT c = f32[] conditional(i, x, t, x), branch_computations={b0, b1, b2}
})";
  EXPECT_EQ(Values(Eval(hlo, {S32(0), F32(7)})), (std::vector<double>{-7}));
  EXPECT_EQ(Values(Eval(hlo, {S32(1), F32(7)})), (std::vector<double>{4}));
  EXPECT_EQ(Values(Eval(hlo, {S32(2), F32(7)})), (std::vector<double>{100}));
  EXPECT_EQ(Values(Eval(hlo, {S32(9), F32(7)})), (std::vector<double>{100}));
  EXPECT_EQ(Values(Eval(hlo, {S32(-1), F32(7)})), (std::vector<double>{100}));
}

// call -> a computation that itself calls another; tuple in, tuple out.
TEST(EvaluatorTest, NestedCallsAndTuples) {
  const char* hlo = R"(
HloModule m
square {
  x = f32[2] parameter(0)
  ROOT r = f32[2] multiply(x, x)
}
sum_of_squares {
  a = f32[2] parameter(0)
  b = f32[2] parameter(1)
  sa = f32[2] call(a), to_apply=square
  sb = f32[2] call(b), to_apply=square
  s = f32[2] add(sa, sb)
  ROOT t = (f32[2], f32[2]) tuple(s, a)
}
ENTRY main {
  a = f32[2] parameter(0)
  b = f32[2] parameter(1)
  c = (f32[2], f32[2]) call(a, b), to_apply=sum_of_squares
  first = f32[2] get-tuple-element(c), index=0
  second = f32[2] get-tuple-element(c), index=1
  ROOT out = (f32[2], (f32[2], f32[2])) tuple(first, c)
})";
  auto out = Eval(hlo, {MakeLiteral(DType::kF32, {2}, {1, 2}), MakeLiteral(DType::kF32, {2}, {3, -1})});
  ASSERT_EQ(out.elements().size(), 2u);
  EXPECT_EQ(Values(out.elements()[0]), (std::vector<double>{10, 5}));
  ASSERT_EQ(out.elements()[1].elements().size(), 2u);
  EXPECT_EQ(Values(out.elements()[1].elements()[0]), (std::vector<double>{10, 5}));
  EXPECT_EQ(Values(out.elements()[1].elements()[1]), (std::vector<double>{1, 2}));
}

const char* kElided = R"(
HloModule m
ENTRY main {
  c = f32[4] constant({...})
  k = s32[3] constant({...})
  ck = f32[3] convert(k)
  ROOT t = (f32[4], f32[3]) tuple(c, ck)
})";

TEST(EvaluatorTest, ElidedConstantsAreFilledDeterministically) {
  std::vector<std::string> notes;
  InterpreterOptions options;
  options.on_note = [&](const std::string& n) { notes.push_back(n); };
  auto a = Eval(kElided, {}, options);
  auto b = Eval(kElided, {});
  EXPECT_TRUE(a == b);
  ASSERT_EQ(a.elements().size(), 2u);
  for (double v : Values(a.elements()[0])) {
    EXPECT_GE(v, -1);
    EXPECT_LT(v, 1);
  }
  for (double v : Values(a.elements()[1])) {  // small non-negative integers (safe indices)
    EXPECT_GE(v, 0);
    EXPECT_LT(v, 4);
  }
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_NE(notes[0].find("%c"), std::string::npos) << notes[0];
}

TEST(EvaluatorTest, ElidedConstantsRejectedWhenNotFilled) {
  InterpreterOptions options;
  options.fill_elided_constants = false;
  auto r = TryRun(kElided, {}, options);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("elided"), std::string::npos) << r.status().ToString();
  EXPECT_TRUE(r.status().loc().known());
}

const char* kAddModule = R"(
HloModule m
ENTRY main {
  a = f32[2] parameter(0)
  b = f32[2] parameter(1)
  ROOT r = f32[2] add(a, b)
})";

TEST(EvaluatorTest, ArgumentCountMismatchIsAnError) {
  auto r = TryRun(kAddModule, {MakeLiteral(DType::kF32, {2}, {1, 2})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("2 parameter"), std::string::npos)
      << r.status().ToString();
}

TEST(EvaluatorTest, ArgumentShapeMismatchIsAnError) {
  auto r = TryRun(kAddModule, {MakeLiteral(DType::kF32, {2}, {1, 2}),
                               MakeLiteral(DType::kF32, {3}, {1, 2, 3})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("f32[3]"), std::string::npos) << r.status().ToString();
  // Wrong element type, same dims.
  r = TryRun(kAddModule, {MakeLiteral(DType::kF32, {2}, {1, 2}),
                          MakeLiteral(DType::kS32, {2}, {1, 2})});
  EXPECT_FALSE(r.ok());
}

// Small inputs, an impossible intermediate (4 TB): bad input naming the instruction, before any
// allocation fails (issue 30 hole 7: impossible shapes exited 1).
TEST(EvaluatorTest, AResultLargerThanTheMachineIsBadInput) {
  const char* hlo = R"(
HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY main {
  x = f32[] parameter(0)
  huge = f32[1000000,1000000] broadcast(x), dimensions={}
  zero = f32[] constant(0)
  ROOT s = f32[] reduce(huge, zero), dimensions={0,1}, to_apply=add
})";
  auto r = TryRun(hlo, {F32(1)});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument) << r.status().ToString();
  EXPECT_NE(r.status().message().find("broadcast %huge: its result f32[1000000,1000000] needs 4e+12 "
                                      "bytes, more than this machine's"),
            std::string::npos) << r.status().ToString();
}

TEST(EvaluatorTest, CustomCallNamesItsTarget) {
  auto r = TryRun(R"(
HloModule m
ENTRY main {
  a = f32[2] parameter(0)
  ROOT r = f32[2] custom-call(a), custom_call_target="my_fancy_kernel"
})",
                  {MakeLiteral(DType::kF32, {2}, {1, 2})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("my_fancy_kernel"), std::string::npos)
      << r.status().ToString();
}

TEST(EvaluatorTest, F8ParameterIsUnsupported) {
  hlo::Literal arg(hlo::Shape(DType::kF8E4M3FN, {2}));
  auto r = TryRun(R"(
HloModule m
ENTRY main {
  a = f8e4m3fn[2] parameter(0)
  ROOT r = f32[2] convert(a)
})",
                  {arg});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("f8e4m3fn"), std::string::npos) << r.status().ToString();
}

}  // namespace
}  // namespace mk::interp
