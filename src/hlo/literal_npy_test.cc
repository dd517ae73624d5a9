#include "hlo/literal_npy.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>

namespace mk::hlo {
namespace {

using npy::NpyArray;
using npy::NpyType;

template <typename T>
NpyArray MakeNpy(NpyType type, std::vector<int64_t> shape, const std::vector<T>& values) {
  NpyArray a;
  a.type = type;
  a.shape = std::move(shape);
  a.data.resize(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(a.data.data(), values.data(), a.data.size());
  return a;
}

template <typename T>
std::vector<T> NpyValues(const NpyArray& a) {
  std::vector<T> out(a.data.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), a.data.data(), a.data.size());
  return out;
}

std::vector<uint16_t> Bits16(const Literal& lit) {
  std::vector<uint16_t> out(static_cast<size_t>(lit.num_elements()));
  std::memcpy(out.data(), lit.raw(), out.size() * 2);
  return out;
}

void ExpectErrorContains(const Status& s, std::initializer_list<std::string> needles) {
  ASSERT_FALSE(s.ok());
  for (const std::string& n : needles) {
    EXPECT_NE(s.ToString().find(n), std::string::npos) << "missing '" << n << "' in " << s.ToString();
  }
}

TEST(LiteralNpyTest, Float32ToBf16RoundsToNearestEven) {
  // bf16 keeps 7 mantissa bits: near 1.0 its ulp is 2^-7 = 0.0078125.
  std::vector<float> in = {
      1.0f + 0x1p-8f,           // halfway between 1 and 1+2^-7: ties to even -> 1.0 (0x3f80)
      1.0f + 3 * 0x1p-8f,       // halfway between 1+2^-7 and 1+2^-6: ties to even -> 0x3f82
      1.0f + 0x1p-8f + 0x1p-20f,  // just above halfway -> 1+2^-7 (0x3f81)
      -2.0f,                    // exact (0xc000)
      3.0e38f,                  // representable range: rounds to 0x7f62 (3.0040e38)
  };
  Result<Literal> lit = NpyToLiteral(MakeNpy(NpyType::kF4, {5}, in), Shape(DType::kBF16, {5}),
                                     "parameter 0");
  ASSERT_TRUE(lit.ok()) << lit.status().ToString();
  EXPECT_EQ(Bits16(*lit), (std::vector<uint16_t>{0x3f80, 0x3f82, 0x3f81, 0xc000, 0x7f62}));
}

TEST(LiteralNpyTest, Float64ToBf16RoundsOnce) {
  // 1 + 2^-8 + 2^-30 is just above the bf16 halfway point, so it rounds up to 1+2^-7. Rounding to
  // float first would drop the 2^-30 (below float's half ulp), land exactly on the tie, and then
  // round down to 1.0: the double-rounding error this must avoid.
  std::vector<double> in = {1.0 + 0x1p-8 + 0x1p-30, 1.0 + 0x1p-8, 1e300, -1e-300};
  Result<Literal> lit = NpyToLiteral(MakeNpy(NpyType::kF8, {4}, in), Shape(DType::kBF16, {4}),
                                     "parameter 0");
  ASSERT_TRUE(lit.ok()) << lit.status().ToString();
  // 1e300 overflows to +inf (0x7f80); -1e-300 underflows to -0 (0x8000).
  EXPECT_EQ(Bits16(*lit), (std::vector<uint16_t>{0x3f81, 0x3f80, 0x7f80, 0x8000}));
}

TEST(LiteralNpyTest, Float64ToF16RoundsOnce) {
  // f16 keeps 10 mantissa bits: near 1.0 the ulp is 2^-10.
  std::vector<double> in = {1.0 + 0x1p-11 + 0x1p-40, 1.0 + 0x1p-11, 65504.0, 70000.0};
  Result<Literal> lit =
      NpyToLiteral(MakeNpy(NpyType::kF8, {4}, in), Shape(DType::kF16, {4}), "parameter 0");
  ASSERT_TRUE(lit.ok()) << lit.status().ToString();
  EXPECT_EQ(Bits16(*lit), (std::vector<uint16_t>{0x3c01, 0x3c00, 0x7bff, 0x7c00}));
}

TEST(LiteralNpyTest, Float16NpyIntoF32IsExact) {
  // 0x3e00 = 1.5, 0x0001 = 2^-24 (smallest f16 subnormal)
  Result<Literal> lit = NpyToLiteral(MakeNpy<uint16_t>(NpyType::kF2, {2}, {0x3e00, 0x0001}),
                                     Shape(DType::kF32, {2}), "parameter 0");
  ASSERT_TRUE(lit.ok()) << lit.status().ToString();
  EXPECT_EQ(lit->data<float>()[0], 1.5f);
  EXPECT_EQ(lit->data<float>()[1], 0x1p-24f);
}

TEST(LiteralNpyTest, ScalarShape) {
  Result<Literal> lit =
      NpyToLiteral(MakeNpy<float>(NpyType::kF4, {}, {2.5f}), Shape(DType::kF64, {}), "parameter 3");
  ASSERT_TRUE(lit.ok()) << lit.status().ToString();
  EXPECT_EQ(lit->data<double>()[0], 2.5);
}

TEST(LiteralNpyTest, WritingWidensNarrowFloatsToFloat32) {
  Literal bf(Shape(DType::kBF16, {2}));
  bf.data<uint16_t>()[0] = 0x3f81;  // 1.0078125
  bf.data<uint16_t>()[1] = 0xff80;  // -inf
  Result<NpyArray> a = LiteralToNpy(bf);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->type, NpyType::kF4);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(NpyValues<float>(*a), (std::vector<float>{1.0078125f, -INFINITY}));

  Literal h(Shape(DType::kF16, {1, 1}));
  h.data<uint16_t>()[0] = 0x7bff;  // 65504, the largest half
  a = LiteralToNpy(h);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->type, NpyType::kF4);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(NpyValues<float>(*a), (std::vector<float>{65504.0f}));

  Literal d(Shape(DType::kF64, {}));
  d.data<double>()[0] = 0.1;
  a = LiteralToNpy(d);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->type, NpyType::kF4);
  ASSERT_EQ(a->data.size(), 4u);
  uint32_t bits;
  std::memcpy(&bits, a->data.data(), 4);
  EXPECT_EQ(bits, 0x3dcccccdu);  // float(0.1), rounded to nearest
}

TEST(LiteralNpyTest, IntegersAndPredKeepTheirType) {
  Literal s(Shape(DType::kS64, {2}));
  s.data<int64_t>()[0] = -5;
  s.data<int64_t>()[1] = int64_t{1} << 62;
  Result<NpyArray> a = LiteralToNpy(s);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->type, NpyType::kI8);
  Result<Literal> back = NpyToLiteral(*a, Shape(DType::kS64, {2}), "parameter 0");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->data<int64_t>()[1], int64_t{1} << 62);

  EXPECT_EQ(*NpyTypeFor(DType::kPred), NpyType::kB1);
  EXPECT_EQ(*NpyTypeFor(DType::kU16), NpyType::kU2);
  EXPECT_EQ(*NpyTypeFor(DType::kS8), NpyType::kI1);

  // NumPy reads any non-zero bool byte as True; the literal must hold exactly 1.
  Result<Literal> p = NpyToLiteral(MakeNpy<uint8_t>(NpyType::kB1, {3}, {0, 1, 2}),
                                   Shape(DType::kPred, {3}), "parameter 0");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->raw()[0], 0);
  EXPECT_EQ(p->raw()[1], 1);
  EXPECT_EQ(p->raw()[2], 1);
}

TEST(LiteralNpyTest, DtypeMismatchNamesBothTypes) {
  Result<Literal> r = NpyToLiteral(MakeNpy<float>(NpyType::kF4, {3}, {1, 2, 3}),
                                   Shape(DType::kS32, {3}), "parameter 1");
  ExpectErrorContains(r.status(), {"parameter 1", "s32[3]", "int32 ('<i4')", "float32 ('<f4')"});

  r = NpyToLiteral(MakeNpy<uint8_t>(NpyType::kU1, {1}, {1}), Shape(DType::kPred, {1}),
                   "parameter 0");
  ExpectErrorContains(r.status(), {"pred[1]", "bool ('|b1')", "uint8 ('|u1')"});

  r = NpyToLiteral(MakeNpy<int32_t>(NpyType::kI4, {1}, {1}), Shape(DType::kF32, {1}),
                   "parameter 2");
  ExpectErrorContains(r.status(), {"parameter 2", "f32[1]", "float32", "int32 ('<i4')"});

  r = NpyToLiteral(MakeNpy<int64_t>(NpyType::kI8, {1}, {1}), Shape(DType::kS32, {1}),
                   "parameter 0");
  ExpectErrorContains(r.status(), {"int64 ('<i8')", "int32 ('<i4')"});
}

TEST(LiteralNpyTest, ShapeMismatchNamesParameterExpectedAndGot) {
  Result<Literal> r = NpyToLiteral(MakeNpy<float>(NpyType::kF4, {3}, {1, 2, 3}),
                                   Shape(DType::kF32, {2, 3}), "parameter 0");
  ExpectErrorContains(r.status(), {"parameter 0", "f32[2,3]", "(2, 3)", "got shape (3,)"});
  // Same element count, different dims: still an error.
  r = NpyToLiteral(MakeNpy<float>(NpyType::kF4, {3, 2}, {1, 2, 3, 4, 5, 6}),
                   Shape(DType::kF32, {2, 3}), "parameter 4");
  ExpectErrorContains(r.status(), {"parameter 4", "got shape (3, 2)"});
  r = NpyToLiteral(MakeNpy<float>(NpyType::kF4, {1}, {1}), Shape(DType::kF32, {}), "parameter 0");
  ExpectErrorContains(r.status(), {"needs shape ()", "got shape (1,)"});
}

TEST(LiteralNpyTest, UnsupportedValues) {
  Literal tuple = Literal::Tuple({Literal(Shape(DType::kF32, {1}))});
  EXPECT_EQ(LiteralToNpy(tuple).status().code(), ErrorCode::kUnimplemented);
  Result<Literal> r = NpyToLiteral(MakeNpy<uint8_t>(NpyType::kU1, {1}, {1}),
                                   Shape(DType::kF8E5M2, {1}), "parameter 0");
  EXPECT_EQ(r.status().code(), ErrorCode::kUnimplemented);
}

TEST(LiteralNpyTest, FileErrorsCarryThePath) {
  char tmpl[] = "/tmp/mk_literal_npy_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  Literal lit(Shape(DType::kS32, {2}));
  lit.data<int32_t>()[0] = 7;
  lit.data<int32_t>()[1] = -7;
  ASSERT_TRUE(WriteLiteralNpy(dir + "/a.npy", lit).ok());
  Result<Literal> back = ReadLiteralNpy(dir + "/a.npy", Shape(DType::kS32, {2}), "parameter 0");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, lit);
  Result<Literal> bad = ReadLiteralNpy(dir + "/a.npy", Shape(DType::kS32, {3}), "parameter 0");
  ExpectErrorContains(bad.status(), {dir + "/a.npy: error: parameter 0"});
  std::remove((dir + "/a.npy").c_str());
  rmdir(dir.c_str());
}

}  // namespace
}  // namespace mk::hlo
