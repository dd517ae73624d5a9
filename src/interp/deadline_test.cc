// The interpreter stops at a deadline or on a cancel flag, between instructions and inside a
// single huge instruction: the oracle runs in the caller's process and must honour timeouts.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "interp/test_util.h"

namespace mk::interp {
namespace {

using Clock = std::chrono::steady_clock;
using hlo::DType;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// ~2e9 iterations: hours interpreted.
const char* kLongWhile = R"(
HloModule m
cond {
  i = s32[] parameter(0)
  n = s32[] constant(2000000000)
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

// One instruction of 2 * 2048^3 flops: seconds interpreted, with no instruction boundary inside.
const char* kBigDot = R"(
HloModule m
ENTRY main {
  a = f32[2048,2048] parameter(0)
  b = f32[2048,2048] parameter(1)
  ROOT d = f32[2048,2048] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})";

TEST(DeadlineTest, ALongWhileLoopStopsAtTheDeadline) {
  InterpreterOptions options;
  options.deadline = Clock::now() + std::chrono::milliseconds(200);
  auto start = Clock::now();
  Result<hlo::Literal> r =
      testing::TryRun(kLongWhile, {testing::MakeLiteral(DType::kS32, {}, {0})}, options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kCancelled) << r.status().ToString();
  EXPECT_NE(r.status().message().find("ran out of time"), std::string::npos);
  EXPECT_LT(SecondsSince(start), 5);
}

TEST(DeadlineTest, ASingleHugeDotStopsAtTheDeadline) {
  hlo::Shape shape(DType::kF32, {2048, 2048});
  InterpreterOptions options;
  options.deadline = Clock::now() + std::chrono::milliseconds(50);
  auto start = Clock::now();
  Result<hlo::Literal> r =
      testing::TryRun(kBigDot, {hlo::Literal(shape), hlo::Literal(shape)}, options);
  ASSERT_FALSE(r.ok()) << "the dot ran to completion in " << SecondsSince(start) << " s";
  EXPECT_EQ(r.status().code(), ErrorCode::kCancelled) << r.status().ToString();
  EXPECT_LT(SecondsSince(start), 5);
}

TEST(DeadlineTest, TheCancelFlagStopsADot) {
  hlo::Shape shape(DType::kF32, {2048, 2048});
  std::atomic<bool> cancel{false};
  InterpreterOptions options;
  options.cancel = &cancel;
  std::thread interrupter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    cancel.store(true);
  });
  Result<hlo::Literal> r =
      testing::TryRun(kBigDot, {hlo::Literal(shape), hlo::Literal(shape)}, options);
  interrupter.join();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kCancelled);
  EXPECT_NE(r.status().message().find("interrupted"), std::string::npos);
}

TEST(DeadlineTest, NoLimitsChangeNothing) {
  InterpreterOptions options;
  options.deadline = Clock::now() + std::chrono::hours(1);
  hlo::Literal r = testing::Run(R"(
HloModule m
ENTRY main {
  a = f32[2] parameter(0)
  ROOT n = f32[2] negate(a)
})",
                                {testing::MakeLiteral(DType::kF32, {2}, {1, -2})}, options);
  EXPECT_EQ(testing::Values(r), (std::vector<double>{-1, 2}));
}

}  // namespace
}  // namespace mk::interp
