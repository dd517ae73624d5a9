// rng-bit-generator against bits produced by XLA itself (jax 0.10, CPU,
// jax.lax.rng_bit_generator with key u32[4] {1, 2, 3, 4}, i.e. state u64[2]
// {0x200000001, 0x400000003}); and the documented properties of our deterministic `rng`.
#include <gtest/gtest.h>

#include <cmath>

#include "interp/test_util.h"

namespace mk::interp {
namespace {

using hlo::DType;
using testing::TryRun;

hlo::Literal Eval(const std::string& text, const std::vector<hlo::Literal>& args) {
  return testing::Run(text, args);
}

hlo::Literal State(const std::vector<uint64_t>& words) {
  hlo::Literal lit(hlo::Shape(DType::kU64, {static_cast<int64_t>(words.size())}));
  for (size_t i = 0; i < words.size(); ++i) lit.SetUInt64(static_cast<int64_t>(i), words[i]);
  return lit;
}

std::vector<uint64_t> Bits(const hlo::Literal& lit) {
  std::vector<uint64_t> out;
  for (int64_t i = 0; i < lit.num_elements(); ++i) out.push_back(lit.GetUInt64(i));
  return out;
}

// Runs rng-bit-generator with `algorithm` producing `out_type` from `state`.
hlo::Literal Generate(const std::string& algorithm, const std::string& out_type,
                      const std::vector<uint64_t>& state) {
  const std::string st = "u64[" + std::to_string(state.size()) + "]";
  const std::string text = "HloModule m\nENTRY main {\n  s = " + st + " parameter(0)\n  ROOT r = (" +
                           st + ", " + out_type + ") rng-bit-generator(s), algorithm=" +
                           algorithm + "\n}\n";
  return Eval(text, {State(state)});
}

const std::vector<uint64_t> kState = {0x200000001ull, 0x400000003ull};

TEST(RngBitGeneratorTest, ThreeFryU32MatchesXla) {
  auto r = Generate("rng_three_fry", "u32[5]", kState);
  ASSERT_EQ(r.elements().size(), 2u);
  EXPECT_EQ(Bits(r.elements()[0]), (std::vector<uint64_t>{0x200000001ull, 0x400000006ull}));
  EXPECT_EQ(Bits(r.elements()[1]),
            (std::vector<uint64_t>{0x5df433ec, 0x8617198e, 0x2c24a8a8, 0x9094fa5e, 0x91386643}));
}

// XLA splits the shape along its first even dimension (here dim 0 of [2,3]).
TEST(RngBitGeneratorTest, ThreeFryU32SplitsFirstEvenDimension) {
  auto r = Generate("rng_three_fry", "u32[2,3]", kState);
  EXPECT_EQ(Bits(r.elements()[0])[1], 0x400000006ull);
  EXPECT_EQ(Bits(r.elements()[1]), (std::vector<uint64_t>{0x5df433ec, 0x2c24a8a8, 0x91386643,
                                                          0x8617198e, 0x9094fa5e, 0x59491919}));
}

// No even dimension: the largest one is padded to even, then split.
TEST(RngBitGeneratorTest, ThreeFryU32PadsLargestOddDimension) {
  auto r = Generate("rng_three_fry", "u32[3,3]", kState);
  EXPECT_EQ(Bits(r.elements()[0])[1], 0x400000009ull);
  EXPECT_EQ(Bits(r.elements()[1]),
            (std::vector<uint64_t>{0x5df433ec, 0x2c24a8a8, 0x91386643, 0x8617198e, 0x9094fa5e,
                                   0x59491919, 0x4f97fb5b, 0xed54bb55, 0xe339716a}));
  r = Generate("rng_three_fry", "u32[]", kState);
  EXPECT_EQ(Bits(r.elements()[0])[1], 0x400000004ull);
  EXPECT_EQ(Bits(r.elements()[1]), (std::vector<uint64_t>{0x5df433ec}));
}

TEST(RngBitGeneratorTest, ThreeFryU64MatchesXla) {
  auto r = Generate("rng_three_fry", "u64[3]", kState);
  EXPECT_EQ(Bits(r.elements()[0])[1], 0x400000006ull);
  EXPECT_EQ(Bits(r.elements()[1]), (std::vector<uint64_t>{
                                       0x8617198e5df433ecull, 0x9094fa5e2c24a8a8ull,
                                       0x5949191991386643ull}));
}

TEST(RngBitGeneratorTest, PhiloxU32MatchesXla) {
  auto r = Generate("rng_philox", "u32[5]", kState);
  EXPECT_EQ(Bits(r.elements()[0]), (std::vector<uint64_t>{0x200000001ull, 0x400000005ull}));
  EXPECT_EQ(Bits(r.elements()[1]),
            (std::vector<uint64_t>{0x1e8fe864, 0x4d5e0bd7, 0x4b87c9be, 0x2d689201, 0x5273487b}));
}

// rng_default is Philox on XLA's CPU backend.
TEST(RngBitGeneratorTest, DefaultIsPhiloxU64) {
  auto r = Generate("rng_default", "u64[3]", kState);
  EXPECT_EQ(Bits(r.elements()[0])[1], 0x400000005ull);
  EXPECT_EQ(Bits(r.elements()[1]), (std::vector<uint64_t>{
                                       0x4d5e0bd71e8fe864ull, 0x2d6892014b87c9beull,
                                       0x61c056965273487bull}));
}

// A u64[3] state holds a 128-bit counter; crossing 2^64 carries into the high word.
TEST(RngBitGeneratorTest, PhiloxWideStateCarries) {
  auto r = Generate("rng_philox", "u32[5]", {0x200000001ull, 0xffffffffffffffffull, 7});
  EXPECT_EQ(Bits(r.elements()[0]), (std::vector<uint64_t>{0x200000001ull, 1, 8}));
  EXPECT_EQ(Bits(r.elements()[1]),
            (std::vector<uint64_t>{0xe2929704, 0xefe0c3aa, 0x1583ad86, 0x160e62e1, 0x1ae95e95}));
  // With a u64[2] state XLA uses the key as the counter's high word.
  r = Generate("rng_philox", "u32[5]", {0x200000001ull, 0xffffffffffffffffull});
  EXPECT_EQ(Bits(r.elements()[0]), (std::vector<uint64_t>{0x200000001ull, 1}));
  EXPECT_EQ(Bits(r.elements()[1]),
            (std::vector<uint64_t>{0x3427fc20, 0x9279b540, 0x38cb9485, 0x1ff5c099, 0x0409ecd8}));
}

TEST(RngBitGeneratorTest, UnsupportedOutputTypeIsAnError) {
  auto r = TryRun(
      "HloModule m\nENTRY main {\n  s = u64[2] parameter(0)\n  ROOT r = (u64[2], u8[4]) "
      "rng-bit-generator(s), algorithm=rng_philox\n}\n",
      {State(kState)});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnimplemented);
}

// ---------------------------------------------------------------------------------------------

std::string RngModule(const std::string& type, const std::string& name,
                      const std::string& distribution) {
  return "HloModule m\nENTRY main {\n  a = " + type + "[] parameter(0)\n  b = " + type +
         "[] parameter(1)\n  ROOT " + name + " = " + type + "[1000] rng(a, b), distribution=" +
         distribution + "\n}\n";
}

hlo::Literal Scalar(DType t, double v) { return testing::MakeLiteral(t, {}, {v}); }

TEST(RngTest, UniformFloatIsInRangeAndDeterministic) {
  auto args = std::vector<hlo::Literal>{Scalar(DType::kF32, 2), Scalar(DType::kF32, 3)};
  auto a = Eval(RngModule("f32", "r", "rng_uniform"), args);
  auto b = Eval(RngModule("f32", "r", "rng_uniform"), args);
  auto c = Eval(RngModule("f32", "other", "rng_uniform"), args);
  EXPECT_TRUE(a == b);
  EXPECT_FALSE(a == c);  // seeded by the instruction name
  double sum = 0;
  for (double v : testing::Values(a)) {
    EXPECT_GE(v, 2);
    EXPECT_LT(v, 3);
    sum += v;
  }
  EXPECT_NEAR(sum / 1000, 2.5, 0.05);
}

TEST(RngTest, UniformIntegerIsInRange) {
  auto a = Eval(RngModule("s32", "r", "rng_uniform"),
                {Scalar(DType::kS32, -3), Scalar(DType::kS32, 2)});
  std::vector<int> counts(5, 0);
  for (double v : testing::Values(a)) {
    ASSERT_GE(v, -3);
    ASSERT_LT(v, 2);
    counts[static_cast<size_t>(v + 3)]++;
  }
  for (int c : counts) EXPECT_GT(c, 100);  // every value of [-3, 2) shows up
}

TEST(RngTest, NormalHasRoughlyTheRequestedMoments) {
  auto a = Eval(RngModule("f64", "r", "rng_normal"),
                {Scalar(DType::kF64, 10), Scalar(DType::kF64, 2)});
  double sum = 0, sq = 0;
  for (double v : testing::Values(a)) {
    ASSERT_TRUE(std::isfinite(v));
    sum += v;
    sq += v * v;
  }
  const double mean = sum / 1000, var = sq / 1000 - mean * mean;
  EXPECT_NEAR(mean, 10, 0.3);
  EXPECT_NEAR(std::sqrt(var), 2, 0.3);
}

}  // namespace
}  // namespace mk::interp
