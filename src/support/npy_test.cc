#include "support/npy.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace mk::npy {
namespace {

std::vector<uint8_t> FromHex(const std::string& hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

// A version-1.0 file with the given header text (used verbatim, no padding) and data bytes.
std::vector<uint8_t> MakeV1(const std::string& header, const std::vector<uint8_t>& data = {}) {
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  out.push_back(static_cast<uint8_t>(header.size() & 0xff));
  out.push_back(static_cast<uint8_t>(header.size() >> 8));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

Result<NpyArray> Parse(const std::vector<uint8_t>& bytes) {
  return ParseNpy(bytes.data(), bytes.size(), "x.npy");
}

// Asserts that parsing fails with a message naming the file and containing `needle`.
void ExpectError(const std::vector<uint8_t>& bytes, const std::string& needle) {
  Result<NpyArray> r = Parse(bytes);
  ASSERT_FALSE(r.ok()) << "expected an error containing: " << needle;
  std::string text = r.status().ToString();
  EXPECT_NE(text.find("x.npy: error: "), std::string::npos) << text;
  EXPECT_NE(text.find(needle), std::string::npos) << "missing '" << needle << "' in: " << text;
}

// Bytes NumPy 2.4 wrote for np.save(f, np.arange(6, dtype=np.float32).reshape(2, 3)).
const char* kNumpyF32x2x3 =
    "934e554d5059010076007b276465736372273a20273c6634272c2027666f727472616e5f6f72646572273a204661"
    "6c73652c20277368617065273a2028322c2033292c207d2020202020202020202020202020202020202020202020"
    "20202020202020202020202020202020202020202020202020202020202020202020200a000000000000803f0000"
    "004000004040000080400000a040";

TEST(NpyTest, ReadsWhatNumpyWrote) {
  Result<NpyArray> r = Parse(FromHex(kNumpyF32x2x3));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->type, NpyType::kF4);
  EXPECT_EQ(r->shape, (std::vector<int64_t>{2, 3}));
  ASSERT_EQ(r->data.size(), 24u);
  const float* v = reinterpret_cast<const float*>(r->data.data());
  for (int i = 0; i < 6; ++i) EXPECT_EQ(v[i], static_cast<float>(i));
}

TEST(NpyTest, WritesWhatNumpyWrites) {
  NpyArray a;
  a.type = NpyType::kF4;
  a.shape = {2, 3};
  std::vector<float> values = {0, 1, 2, 3, 4, 5};
  a.data.resize(24);
  std::memcpy(a.data.data(), values.data(), 24);
  Result<std::vector<uint8_t>> bytes = EncodeNpy(a);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  EXPECT_EQ(*bytes, FromHex(kNumpyF32x2x3));
}

TEST(NpyTest, HeaderIsAlignedTo64Bytes) {
  for (std::vector<int64_t> shape : {std::vector<int64_t>{}, {0}, {7}, {2, 3}, {1, 2, 3, 4, 5, 6}}) {
    NpyArray a;
    a.type = NpyType::kU1;
    a.shape = shape;
    a.data.resize(static_cast<size_t>(a.num_elements()));
    Result<std::vector<uint8_t>> bytes = EncodeNpy(a);
    ASSERT_TRUE(bytes.ok());
    size_t header_len = (*bytes)[8] | (*bytes)[9] << 8;
    EXPECT_EQ((10 + header_len) % 64, 0u);
    EXPECT_EQ((*bytes)[10 + header_len - 1], '\n');
    EXPECT_EQ((*bytes)[6], 1);  // version 1.0
  }
}

TEST(NpyTest, RoundTripsEveryTypeAndShape) {
  const std::vector<NpyType> types = {NpyType::kF2, NpyType::kF4, NpyType::kF8, NpyType::kB1,
                                      NpyType::kI1, NpyType::kI2, NpyType::kI4, NpyType::kI8,
                                      NpyType::kU1, NpyType::kU2, NpyType::kU4, NpyType::kU8};
  const std::vector<std::vector<int64_t>> shapes = {{}, {0}, {2, 3}};
  for (NpyType t : types) {
    for (const auto& shape : shapes) {
      NpyArray a;
      a.type = t;
      a.shape = shape;
      a.data.resize(static_cast<size_t>(a.num_elements() * NpyTypeByteSize(t)));
      // Distinct bytes, except bool which must stay 0/1.
      for (size_t i = 0; i < a.data.size(); ++i) {
        a.data[i] = t == NpyType::kB1 ? static_cast<uint8_t>(i % 2) : static_cast<uint8_t>(i * 37 + 1);
      }
      Result<std::vector<uint8_t>> bytes = EncodeNpy(a);
      ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
      Result<NpyArray> back = Parse(*bytes);
      ASSERT_TRUE(back.ok()) << NpyTypeDescr(t) << ": " << back.status().ToString();
      EXPECT_EQ(back->type, t);
      EXPECT_EQ(back->shape, shape);
      EXPECT_EQ(back->data, a.data);
    }
  }
}

TEST(NpyTest, ReadsVersion2And3Headers) {
  // np.lib.format.write_array(f, np.array([1, -2], dtype='<i2'), version=(2, 0)) / (3, 0)
  const std::string body =
      "740000007b276465736372273a20273c6932272c2027666f727472616e5f6f72646572273a2046616c73652c20"
      "277368617065273a2028322c292c207d20202020202020202020202020202020202020202020202020202020202020"
      "2020202020202020202020202020202020202020202020202020200a0100feff";
  for (const std::string version : {"0200", "0300"}) {
    Result<NpyArray> r = Parse(FromHex("934e554d5059" + version + body));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->type, NpyType::kI2);
    EXPECT_EQ(r->shape, (std::vector<int64_t>{2}));
    const int16_t* v = reinterpret_cast<const int16_t*>(r->data.data());
    EXPECT_EQ(v[0], 1);
    EXPECT_EQ(v[1], -2);
  }
}

TEST(NpyTest, WritesVersion2WhenHeaderIsLong) {
  // 30000 dimensions of size 1 need a header of about 90 KB, over version 1.0's 64 KiB limit.
  NpyArray a;
  a.type = NpyType::kU1;
  a.shape.assign(30000, 1);
  a.data = {42};
  Result<std::vector<uint8_t>> bytes = EncodeNpy(a);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ((*bytes)[6], 2);
  EXPECT_EQ((*bytes)[7], 0);
  size_t header_len = (*bytes)[8] | (*bytes)[9] << 8 | (*bytes)[10] << 16 | (*bytes)[11] << 24;
  EXPECT_GT(header_len, 0xffffu);
  EXPECT_EQ((12 + header_len) % 64, 0u);
  EXPECT_EQ(bytes->size(), 12 + header_len + 1);
  EXPECT_EQ(bytes->back(), 42);
}

TEST(NpyTest, ReadsLongVersion2Header) {
  std::string dict = "{'descr': '|u1', 'fortran_order': False, 'shape': (2,), }";
  std::string header = dict + std::string(70000 - dict.size() - 1, ' ') + "\n";
  std::vector<uint8_t> bytes = {0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0};
  for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<uint8_t>(header.size() >> (8 * i)));
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.push_back(7);
  bytes.push_back(9);
  Result<NpyArray> r = Parse(bytes);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->data, (std::vector<uint8_t>{7, 9}));
}

TEST(NpyTest, AcceptsByteOrderVariantsOfOneByteTypes) {
  for (const char* descr : {"|b1", "<b1", "|i1", "<i1", "|u1", "<u1", "=u1"}) {
    Result<NpyType> t = ParseNpyDescr(descr);
    EXPECT_TRUE(t.ok()) << descr;
  }
  EXPECT_EQ(*ParseNpyDescr("<i1"), NpyType::kI1);
  EXPECT_EQ(*ParseNpyDescr("<f2"), NpyType::kF2);
  EXPECT_FALSE(ParseNpyDescr("|f4").ok());
  EXPECT_FALSE(ParseNpyDescr("f4").ok());
}

TEST(NpyTest, AcceptsDoubleQuotesAndMissingTrailingComma) {
  Result<NpyArray> r =
      Parse(MakeV1("{\"shape\": (1,), \"fortran_order\": False, \"descr\": \"|u1\"}\n", {5}));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->data, (std::vector<uint8_t>{5}));
}

const std::string kGoodDict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n";
const std::vector<uint8_t> kEightBytes(8, 0);

TEST(NpyMalformedTest, TooShort) { ExpectError({0x93, 'N', 'U'}, "not a .npy file: only 3 bytes"); }

TEST(NpyMalformedTest, BadMagic) {
  std::vector<uint8_t> bytes = MakeV1(kGoodDict, kEightBytes);
  bytes[1] = 'X';
  ExpectError(bytes, "bad magic");
}

TEST(NpyMalformedTest, UnknownVersion) {
  std::vector<uint8_t> bytes = MakeV1(kGoodDict, kEightBytes);
  bytes[6] = 4;
  ExpectError(bytes, "unsupported .npy format version 4.0");
  bytes[6] = 1;
  bytes[7] = 1;
  ExpectError(bytes, "unsupported .npy format version 1.1");
}

TEST(NpyMalformedTest, HeaderLengthPastEnd) {
  std::vector<uint8_t> bytes = MakeV1(kGoodDict);
  bytes[9] = 0x7f;  // claims a ~32 KiB header
  ExpectError(bytes, "header length");
}

TEST(NpyMalformedTest, Version2PreambleTruncated) {
  ExpectError({0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 0, 0, 0}, "too short for a version 2.0");
}

TEST(NpyMalformedTest, HeaderNotADict) {
  ExpectError(MakeV1("['descr', '<f4']\n", kEightBytes), "header is not a Python dict");
}

TEST(NpyMalformedTest, MissingKey) {
  ExpectError(MakeV1("{'descr': '<f4', 'shape': (2,), }\n", kEightBytes),
              "no 'fortran_order' key");
}

TEST(NpyMalformedTest, UnknownKey) {
  ExpectError(MakeV1("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}\n",
                     kEightBytes),
              "unexpected key 'x'");
}

TEST(NpyMalformedTest, DuplicateKey) {
  ExpectError(MakeV1("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}\n",
                     kEightBytes),
              "duplicate key 'descr'");
}

TEST(NpyMalformedTest, FortranOrder) {
  ExpectError(MakeV1("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }\n", kEightBytes),
              "Fortran-order");
}

TEST(NpyMalformedTest, FortranOrderNotABool) {
  ExpectError(MakeV1("{'descr': '<f4', 'fortran_order': 0, 'shape': (2,), }\n", kEightBytes),
              "must be True or False");
}

TEST(NpyMalformedTest, BigEndian) {
  ExpectError(MakeV1("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }\n", kEightBytes),
              "big-endian");
}

TEST(NpyMalformedTest, UnsupportedDtype) {
  ExpectError(MakeV1("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }\n", kEightBytes),
              "unsupported .npy dtype '<c8'");
  ExpectError(MakeV1("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }\n",
                     kEightBytes),
              "structured dtypes");
}

TEST(NpyMalformedTest, ShapeNotATuple) {
  ExpectError(MakeV1("{'descr': '<f4', 'fortran_order': False, 'shape': (2), }\n", kEightBytes),
              "must be written (n,)");
  ExpectError(MakeV1("{'descr': '<f4', 'fortran_order': False, 'shape': [2], }\n", kEightBytes),
              "'shape' must be a tuple");
  ExpectError(MakeV1("{'descr': '<f4', 'fortran_order': False, 'shape': (2 2), }\n", kEightBytes),
              "expected ',' between shape entries");
}

TEST(NpyMalformedTest, NegativeDimension) {
  ExpectError(MakeV1("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }\n", kEightBytes),
              "negative dimension");
}

TEST(NpyMalformedTest, HugeShapeIsRejectedWithoutAllocating) {
  ExpectError(MakeV1("{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000, "
                     "1000000000000), }\n",
                     kEightBytes),
              "needs more than 2^63 bytes of data, the file has 8");
  ExpectError(MakeV1("{'descr': '<f8', 'fortran_order': False, 'shape': "
                     "(99999999999999999999999,), }\n",
                     kEightBytes),
              "too large");
}

// Found by tests/fuzz/npy_fuzz (tests/fuzz/crashes/npy/): an empty array whose zero dimension
// comes after dimensions whose product overflows int64. The file is valid (0 data bytes), and
// counting its elements must not overflow on the way (UBSan, which CI's unit tests run under,
// aborted here).
TEST(NpyTest, EmptyArrayWithHugeLeadingDimensions) {
  Result<NpyArray> r = Parse(MakeV1(
      "{'descr': '|b1', 'fortran_order': False, 'shape': (1099511627776, 1099511627776, 0), }\n"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->num_elements(), 0);
  EXPECT_TRUE(r->data.empty());
  Result<std::vector<uint8_t>> encoded = EncodeNpy(*r);
  ASSERT_TRUE(encoded.ok()) << encoded.status().ToString();
  Result<NpyArray> again = Parse(*encoded);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->shape, r->shape);
}

// An array built in code with a shape whose element count does not fit in int64 must not
// report a wrapped-around count (2^40 * 2^40 wrapped to 0, an "empty" array).
TEST(NpyTest, ElementCountOfAnImpossibleShapeDoesNotWrap) {
  NpyArray a;
  a.shape = {int64_t{1} << 40, int64_t{1} << 40};
  EXPECT_EQ(a.num_elements(), std::numeric_limits<int64_t>::max());
  a.shape = {int64_t{1} << 40, int64_t{1} << 40, 0};
  EXPECT_EQ(a.num_elements(), 0);
}

TEST(NpyMalformedTest, TruncatedData) {
  ExpectError(MakeV1("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n",
                     std::vector<uint8_t>(20, 0)),
              "truncated .npy data: <f4 (2, 3) needs 24 bytes of data, the file has 20");
}

TEST(NpyMalformedTest, TrailingData) {
  ExpectError(MakeV1(kGoodDict, std::vector<uint8_t>(12, 0)), "trailing bytes");
}

TEST(NpyMalformedTest, UnterminatedStringAndJunk) {
  ExpectError(MakeV1("{'descr: <f4\n", kEightBytes), "unterminated string");
  ExpectError(MakeV1(kGoodDict + "junk", kEightBytes), "unexpected text after the header dict");
  ExpectError(MakeV1(std::string("{'descr': '<f4\xc3\xa9'}"), kEightBytes), "non-ASCII");
}

TEST(NpyMalformedTest, EveryTruncationOfAValidFileFailsCleanly) {
  std::vector<uint8_t> bytes = FromHex(kNumpyF32x2x3);
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_FALSE(Parse(cut).ok()) << n;
  }
}

class NpyFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mk_npy_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::remove((dir_ + "/a.npy").c_str());
    rmdir(dir_.c_str());
  }
  std::string dir_;
};

TEST_F(NpyFileTest, WriteThenRead) {
  NpyArray a;
  a.type = NpyType::kI4;
  a.shape = {3};
  std::vector<int32_t> values = {-1, 0, 123456};
  a.data.resize(12);
  std::memcpy(a.data.data(), values.data(), 12);
  ASSERT_TRUE(WriteNpyFile(dir_ + "/a.npy", a).ok());
  Result<NpyArray> back = ReadNpyFile(dir_ + "/a.npy");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->data, a.data);
  EXPECT_EQ(back->shape, a.shape);
}

TEST_F(NpyFileTest, MissingFileNamesThePath) {
  Result<NpyArray> r = ReadNpyFile(dir_ + "/missing.npy");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(r.status().ToString().find("missing.npy: error: cannot open"), std::string::npos)
      << r.status().ToString();
}

TEST_F(NpyFileTest, DirectoryIsNotAFile) {
  Result<NpyArray> r = ReadNpyFile(dir_);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().ToString().find("not a regular file"), std::string::npos);
}

TEST(NpyEncodeTest, RejectsDataOfTheWrongSize) {
  NpyArray a;
  a.type = NpyType::kF4;
  a.shape = {2};
  a.data.resize(4);
  EXPECT_FALSE(EncodeNpy(a).ok());
}

}  // namespace
}  // namespace mk::npy
