#include "task/inputs.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstring>
#include <filesystem>

#include "support/npy.h"

namespace mk::task {
namespace {

using hlo::DType;

// Published reference outputs of splitmix64 (the first two outputs of the generator seeded
// with 0): an independent check of the constants and shifts.
TEST(SplitMix64, MatchesReferenceSequence) {
  EXPECT_EQ(SplitMix64(0), 0xE220A8397B1DCDAFULL);
  EXPECT_EQ(SplitMix64(0x9E3779B97F4A7C15ULL), 0x6E789E6AA1B965F4ULL);
}

TEST(UniformUnit, InUnitInterval) {
  const uint64_t key = StreamKey(3, 0);
  for (uint64_t j = 0; j < 1000; ++j) {
    const double u = UniformUnit(key, j);
    EXPECT_GE(u, 0.0);
    EXPECT_LT(u, 1.0);
  }
}

// The element bits (floats) or values (ints, as u64) of a literal.
uint64_t ElementBits(const hlo::Literal& lit, int64_t i) {
  switch (lit.dtype()) {
    case DType::kF32: {
      uint32_t b;
      std::memcpy(&b, lit.raw() + 4 * i, 4);
      return b;
    }
    case DType::kBF16:
    case DType::kF16: {
      uint16_t b;
      std::memcpy(&b, lit.raw() + 2 * i, 2);
      return b;
    }
    default: return static_cast<uint64_t>(lit.GetInt64(i));
  }
}

struct GoldenCase {
  uint64_t seed;
  uint64_t param;
  DType dtype;
  InitSpec init;
  std::vector<uint64_t> first6;  // element bits of the first 6 values
  uint64_t sum1000;              // wrapping sum of the element bits of the first 1000 values
};

InitSpec Normal(double mean, double std) {
  InitSpec s;
  s.kind = InitSpec::Kind::kNormal;
  s.mean = mean;
  s.std = std;
  return s;
}
InitSpec Uniform(double low, double high) {
  InitSpec s;
  s.kind = InitSpec::Kind::kUniform;
  s.low = low;
  s.high = high;
  return s;
}
InitSpec Randint(int64_t low, int64_t high) {
  InitSpec s;
  s.kind = InitSpec::Kind::kRandint;
  s.int_low = low;
  s.int_high = high;
  return s;
}

// The same table is in python/tests/test_generator.py: both implementations must produce these
// exact bits. They were produced by the NumPy implementation and agreed with this one on first
// run (an earlier NumPy draft that skipped the outer splitmix64 of the key was caught here).
TEST(GenerateParameter, GoldenValuesSharedWithNumPy) {
  const std::vector<GoldenCase> cases = {
      {0, 0, DType::kF32, Normal(0.0, 1.0),
       {0x3e92b50c, 0xbfd050c0, 0xbf713f93, 0xbf8b5a09, 0xbb678102, 0x3df223f8}, 2109978558503ULL},
      {0, 1, DType::kBF16, Normal(0.5, 0.02),
       {0x3ee9, 0x3efb, 0x3eec, 0x3f00, 0x3f06, 0x3ef5}, 16125850ULL},
      {7, 2, DType::kF16, Uniform(-1.0, 1.0),
       {0x3448, 0x3adb, 0x38c1, 0xa44f, 0x3211, 0x2d4d}, 29574017ULL},
      {12345678901234ULL, 3, DType::kF32, Uniform(0.0, 10.0),
       {0x3ef89fea, 0x41099b58, 0x409f6e81, 0x4090a2e2, 0x41043b72, 0x40cd51a8}, 1080951797663ULL},
      {1, 0, DType::kS32, Randint(-5, 100), {44, 20, 24, 35, 83, 21}, 47530ULL},
      {2, 4, DType::kPred, Randint(0, 2), {1, 1, 0, 1, 1, 1}, 494ULL},
      {18446744073709551615ULL, 5, DType::kBF16, Normal(0.0, 3.0),
       {0xbf4f, 0x3f22, 0xbfdc, 0x407f, 0xbf98, 0xc020}, 32782202ULL},
  };
  for (const GoldenCase& c : cases) {
    SCOPED_TRACE("seed " + std::to_string(c.seed) + " param " + std::to_string(c.param) + " " +
                 std::string(hlo::DTypeName(c.dtype)));
    auto small = GenerateParameter(hlo::Shape(c.dtype, {6}), c.init, c.seed, c.param);
    ASSERT_TRUE(small.ok()) << small.status().ToString();
    for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(ElementBits(*small, i), c.first6[i]) << "element " << i;
    // A multi-dimensional shape generates the same row-major stream.
    auto big = GenerateParameter(hlo::Shape(c.dtype, {10, 100}), c.init, c.seed, c.param);
    ASSERT_TRUE(big.ok());
    uint64_t sum = 0;
    for (int64_t i = 0; i < 1000; ++i) sum += ElementBits(*big, i);
    EXPECT_EQ(sum, c.sum1000);
  }
}

TEST(GenerateParameter, StreamsDifferBySeedAndParameter) {
  const hlo::Shape s(DType::kF32, {4});
  auto a = GenerateParameter(s, Normal(0, 1), 0, 0);
  auto b = GenerateParameter(s, Normal(0, 1), 1, 0);
  auto c = GenerateParameter(s, Normal(0, 1), 0, 1);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_FALSE(*a == *b);
  EXPECT_FALSE(*a == *c);
}

TEST(GenerateParameter, RandintStaysInRange) {
  auto r = GenerateParameter(hlo::Shape(DType::kS32, {2000}), Randint(3, 7), 9, 2);
  ASSERT_TRUE(r.ok());
  bool seen_low = false, seen_high = false;
  for (int64_t i = 0; i < 2000; ++i) {
    const int64_t v = r->GetInt64(i);
    EXPECT_GE(v, 3);
    EXPECT_LT(v, 7);
    seen_low |= v == 3;
    seen_high |= v == 6;
  }
  EXPECT_TRUE(seen_low && seen_high);
}

TEST(GenerateParameter, KindMustFitDtype) {
  EXPECT_FALSE(GenerateParameter(hlo::Shape(DType::kS32, {2}), Normal(0, 1), 0, 0).ok());
  EXPECT_FALSE(GenerateParameter(hlo::Shape(DType::kF32, {2}), Randint(0, 4), 0, 0).ok());
  EXPECT_FALSE(GenerateParameter(hlo::Shape(DType::kS32, {2}), Randint(4, 4), 0, 0).ok());
}

TEST(GenerateParameter, ScalarAndEmptyShapes) {
  auto scalar = GenerateParameter(hlo::Shape(DType::kF32, {}), Normal(0, 1), 0, 0);
  ASSERT_TRUE(scalar.ok());
  EXPECT_FLOAT_EQ(static_cast<float>(scalar->GetDouble(0)), 0.28653753f);
  auto empty = GenerateParameter(hlo::Shape(DType::kF32, {0, 3}), Normal(0, 1), 0, 0);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->num_elements(), 0);
}

class TempDir {
 public:
  TempDir() {
    char buf[] = "/tmp/mk_inputs_test_XXXXXX";
    path_ = ::mkdtemp(buf) ? buf : "";
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(GenerateInputs, MixesGeneratedAndDataParameters) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  std::filesystem::create_directories(dir.path() + "/data");
  npy::NpyArray table;
  table.type = npy::NpyType::kI4;
  table.shape = {3};
  const int32_t values[3] = {7, -1, 42};
  table.data.resize(12);
  std::memcpy(table.data.data(), values, 12);
  ASSERT_TRUE(npy::WriteNpyFile(dir.path() + "/data/table.npy", table).ok());

  Task task;
  task.id = "t";
  task.dir = dir.path();
  task.parameters.push_back({"x", hlo::Shape(DType::kBF16, {2, 2}), Normal(0.5, 0.02)});
  TaskParameter data{"table", hlo::Shape(DType::kS32, {3}), {}};
  data.init.kind = InitSpec::Kind::kData;
  data.init.data_file = "data/table.npy";
  task.parameters.push_back(data);

  auto inputs = GenerateInputs(task, 0);
  ASSERT_TRUE(inputs.ok()) << inputs.status().ToString();
  ASSERT_EQ(inputs->size(), 2u);
  // Parameter 0 at seed 0 is not the golden (param 1) stream: check it is a fresh stream.
  auto expected_x = GenerateParameter(hlo::Shape(DType::kBF16, {2, 2}), Normal(0.5, 0.02), 0, 0);
  EXPECT_TRUE((*inputs)[0] == *expected_x);
  EXPECT_EQ((*inputs)[1].GetInt64(0), 7);
  EXPECT_EQ((*inputs)[1].GetInt64(1), -1);
  EXPECT_EQ((*inputs)[1].GetInt64(2), 42);

  // A data file of the wrong shape or type is a clear error naming the file.
  task.parameters[1].shape = hlo::Shape(DType::kS32, {4});
  auto bad_shape = GenerateInputs(task, 0);
  ASSERT_FALSE(bad_shape.ok());
  EXPECT_NE(bad_shape.status().message().find("table.npy"), std::string::npos);
  task.parameters[1].shape = hlo::Shape(DType::kS64, {3});
  EXPECT_FALSE(GenerateInputs(task, 0).ok());
  task.parameters[1].init.data_file = "data/missing.npy";
  EXPECT_FALSE(GenerateInputs(task, 0).ok());
}

}  // namespace
}  // namespace mk::task
