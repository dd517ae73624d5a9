// ISA levels: parsing MAXKERNEL_CPU_ISA, the level a feature list supports, the features and
// -march flags a capped level keeps, and HostCpu() under a cap.
#include "target/isa_level.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>

#include "target/target.h"

namespace mk::target {
namespace {

const std::vector<std::string> kZen3 = {"avx2", "fma", "f16c"};
const std::vector<std::string> kZen4 = {"avx2",     "fma",      "avx512f",     "avx512bw",
                                        "avx512vl", "avx512dq", "avx512_bf16", "f16c"};
const std::vector<std::string> kSapphireRapids = {
    "avx2",        "fma",         "avx512f",  "avx512bw", "avx512vl", "avx512dq",
    "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "f16c"};

class ScopedIsa {
 public:
  explicit ScopedIsa(const char* value) {
    if (const char* old = getenv("MAXKERNEL_CPU_ISA")) saved_ = old;
    setenv("MAXKERNEL_CPU_ISA", value, 1);
  }
  ~ScopedIsa() {
    if (saved_) setenv("MAXKERNEL_CPU_ISA", saved_->c_str(), 1);
    else unsetenv("MAXKERNEL_CPU_ISA");
  }

 private:
  std::optional<std::string> saved_;
};

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST(IsaLevelTest, ParsesTheFourNamesAndRefusesOthers) {
  EXPECT_EQ(*ParseIsaLevel("avx2"), IsaLevel::kAvx2);
  EXPECT_EQ(*ParseIsaLevel("avx512"), IsaLevel::kAvx512);
  EXPECT_EQ(*ParseIsaLevel("avx512bf16"), IsaLevel::kAvx512Bf16);
  EXPECT_EQ(*ParseIsaLevel("amx"), IsaLevel::kAmx);
  auto bad = ParseIsaLevel("AVX-512");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("MAXKERNEL_CPU_ISA"), std::string::npos);
  EXPECT_NE(bad.status().message().find("avx512bf16"), std::string::npos);
  EXPECT_FALSE(ParseIsaLevel("").ok());
}

TEST(IsaLevelTest, LevelOfTheCpusThisProjectMeets) {
  EXPECT_EQ(LevelOfFeatures({}), IsaLevel::kBaseline);
  EXPECT_EQ(LevelOfFeatures(kZen3), IsaLevel::kAvx2);
  EXPECT_EQ(LevelOfFeatures(kZen4), IsaLevel::kAvx512Bf16);
  EXPECT_EQ(LevelOfFeatures(kSapphireRapids), IsaLevel::kAmx);
  // AVX-512 without BF16 (Skylake-X, Ice Lake).
  std::vector<std::string> skx = kZen4;
  skx.erase(std::find(skx.begin(), skx.end(), "avx512_bf16"));
  EXPECT_EQ(LevelOfFeatures(skx), IsaLevel::kAvx512);
}

TEST(IsaLevelTest, FeaturesAtALowerLevelDropTheWiderFamilies) {
  const auto avx2 = FeaturesAtLevel(kSapphireRapids, IsaLevel::kAvx2);
  for (const auto& f : avx2) {
    EXPECT_EQ(f.rfind("avx512", 0), std::string::npos) << f;
    EXPECT_EQ(f.rfind("amx", 0), std::string::npos) << f;
  }
  EXPECT_TRUE(Contains(avx2, "fma"));
  const auto avx512 = FeaturesAtLevel(kSapphireRapids, IsaLevel::kAvx512);
  EXPECT_TRUE(Contains(avx512, "avx512f"));
  EXPECT_FALSE(Contains(avx512, "avx512_bf16"));
  const auto bf16 = FeaturesAtLevel(kSapphireRapids, IsaLevel::kAvx512Bf16);
  EXPECT_TRUE(Contains(bf16, "avx512_bf16"));
  EXPECT_FALSE(Contains(bf16, "amx_tile"));
  EXPECT_EQ(FeaturesAtLevel(kSapphireRapids, IsaLevel::kAmx), kSapphireRapids);
}

TEST(IsaLevelTest, MarchIsNativeAtTheHostsLevelAndExplicitBelowIt) {
  EXPECT_EQ(MarchFlags(IsaLevel::kAvx2, IsaLevel::kAvx2), std::vector<std::string>{"-march=native"});
  EXPECT_EQ(MarchFlags(IsaLevel::kAvx2, IsaLevel::kAvx512Bf16)[0], "-march=x86-64-v3");
  EXPECT_EQ(MarchFlags(IsaLevel::kAvx512, IsaLevel::kAmx)[0], "-march=x86-64-v4");
  const auto bf16 = MarchFlags(IsaLevel::kAvx512Bf16, IsaLevel::kAmx);
  EXPECT_TRUE(Contains(bf16, "-mavx512bf16"));
  EXPECT_FALSE(Contains(bf16, "-march=native"));
}

TEST(IsaLevelTest, HostCpuUnderAnAvx2CapHasNoAvx512) {
  const Target native = HostCpu();
  const IsaLevel host = LevelOfFeatures(native.isa);
  EXPECT_EQ(native.isa_level, IsaLevelName(host));
  if (host < IsaLevel::kAvx2) GTEST_SKIP() << "this CPU has no AVX2+FMA";
  ScopedIsa cap("avx2");
  const Target t = HostCpu();
  EXPECT_EQ(t.isa_level, "avx2");
  EXPECT_EQ(t.vector_bytes, 32);
  EXPECT_EQ(t.vector_registers, 16);
  for (const auto& f : t.isa) EXPECT_EQ(f.rfind("avx512", 0), std::string::npos) << f;
  const bool native_march = Contains(t.compile_flags, "-march=native");
  // -march=native is right only where the host itself is an AVX2 machine.
  EXPECT_EQ(native_march, host == IsaLevel::kAvx2);
  if (!native_march) {
    EXPECT_TRUE(Contains(t.compile_flags, "-march=x86-64-v3"));
  }
}

TEST(IsaLevelTest, ACapAboveTheHostIsCappedAtTheHost) {
  const IsaLevel host = LevelOfFeatures(HostCpu().isa);
  ScopedIsa cap("amx");
  const Target t = HostCpu();
  EXPECT_EQ(t.isa_level, IsaLevelName(host));
  EXPECT_TRUE(Contains(t.compile_flags, "-march=native"));
}

TEST(IsaLevelTest, RequestedLevelReportsABadValue) {
  ScopedIsa cap("sse9");
  auto r = RequestedIsaLevel();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("sse9"), std::string::npos);
}

}  // namespace
}  // namespace mk::target
