// Round trip: parse(print(m)) is the same module as m, and printing is a fixed point, for every
// module in src/hlo/testdata and the real corpus. Plus exact canonical text for small cases.
#include "hlo/printer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "hlo/parse_roundtrip.h"
#include "hlo/parser.h"

namespace mk::hlo {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> RoundTripFiles() {
  std::vector<std::string> files;
  fs::path testdata = fs::path(MK_SOURCE_DIR) / "src/hlo/testdata";
  for (const auto& e : fs::directory_iterator(testdata)) {
    if (e.path().extension() == ".hlo") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

void ExpectRoundTrip(const std::string& path) {
  SCOPED_TRACE(path);
  auto first = ParseModuleFile(path);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  std::string printed = PrintModule(**first);
  auto second = ParseModule(printed, "printed");
  ASSERT_TRUE(second.ok()) << second.status().ToString() << "\n" << printed;
  EXPECT_EQ(DescribeModuleDifference(**first, **second), "");
  EXPECT_EQ(PrintModule(**second), printed);
}

TEST(PrinterRoundTripTest, EveryTestdataModule) {
  std::vector<std::string> files = RoundTripFiles();
  EXPECT_GE(files.size(), 15u);
  for (const std::string& f : files) ExpectRoundTrip(f);
}

TEST(PrinterRoundTripTest, CorpusModules) {
  fs::path corpus = fs::path(MK_SOURCE_DIR) / ".." / "shared" / "hlo-corpus";
  if (!fs::exists(corpus / "graphsage_tf.hlo")) GTEST_SKIP() << "corpus not present";
  ExpectRoundTrip((corpus / "graphsage_tf.hlo").string());
  ExpectRoundTrip((corpus / "ssd_mobilenet_tf.hlo").string());
}

TEST(PrinterTest, CanonicalModuleText) {
  auto m = ParseModule(R"(HloModule jit_f, entry_computation_layout={(f32[4]{0})->f32[]}
region_0.4 {
  Arg_0.5 = f32[] parameter(0)
  Arg_1.6 = f32[] parameter(1)
  ROOT add.7 = f32[] add(Arg_0.5, Arg_1.6), metadata={op_name="x"}
}
ENTRY main.9 {
  Arg_0.1 = f32[4]{0} parameter(0)
  constant.2 = f32[] constant(0)
  ROOT reduce.8 = f32[] reduce(Arg_0.1, constant.2), dimensions={0}, to_apply=region_0.4
})");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(PrintModule(**m),
            "HloModule jit_f, entry_computation_layout={(f32[4]{0})->f32[]}\n"
            "\n"
            "%region_0.4 (Arg_0.5: f32[], Arg_1.6: f32[]) -> f32[] {\n"
            "  %Arg_0.5 = f32[] parameter(0)\n"
            "  %Arg_1.6 = f32[] parameter(1)\n"
            "  ROOT %add.7 = f32[] add(f32[] %Arg_0.5, f32[] %Arg_1.6)\n"
            "}\n"
            "\n"
            "ENTRY %main.9 (Arg_0.1: f32[4]{0}) -> f32[] {\n"
            "  %Arg_0.1 = f32[4]{0} parameter(0)\n"
            "  %constant.2 = f32[] constant(0)\n"
            "  ROOT %reduce.8 = f32[] reduce(f32[4]{0} %Arg_0.1, f32[] %constant.2), "
            "dimensions={0}, to_apply=%region_0.4\n"
            "}\n");
}

std::string PrintRoot(const std::string& body) {
  auto m = ParseModule("HloModule m\nENTRY e {\n" + body + "\n}\n", "t.hlo");
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  if (!m.ok()) return "";
  return PrintInstruction(*(*m)->entry()->root());
}

TEST(PrinterTest, ConvolutionAttributes) {
  EXPECT_EQ(PrintRoot("i = f32[1,9,9,2] parameter(0)\nk = f32[3,3,2,4] parameter(1)\n"
                      "ROOT c = f32[1,4,4,4] convolution(i, k), window={size=3x3 stride=2x2 pad=0_1x1_1 "
                      "rhs_dilate=1x2 rhs_reversal=1x0}, dim_labels=f10b_i10o->b10f, feature_group_count=2"),
            "%c = f32[1,4,4,4] convolution(f32[1,9,9,2] %i, f32[3,3,2,4] %k), window={size=3x3 "
            "stride=2x2 pad=0_1x1_1 rhs_dilate=1x2 rhs_reversal=1x0}, dim_labels=f10b_i10o->b10f, "
            "feature_group_count=2");
}

TEST(PrinterTest, SlicePadCompare) {
  EXPECT_EQ(PrintRoot("x = f32[10] parameter(0)\nROOT s = f32[3] slice(x), slice={[1:10:3]}"),
            "%s = f32[3] slice(f32[10] %x), slice={[1:10:3]}");
  EXPECT_EQ(PrintRoot("x = f32[10] parameter(0)\nz = f32[] constant(0)\n"
                      "ROOT p = f32[30] pad(x, z), padding=-1_3_2"),
            "%p = f32[30] pad(f32[10] %x, f32[] %z), padding=-1_3_2");
  EXPECT_EQ(PrintRoot("x = f32[10] parameter(0)\nROOT c = pred[10] compare(x, x), direction=NE, type=FLOAT"),
            "%c = pred[10] compare(f32[10] %x, f32[10] %x), direction=NE, type=FLOAT");
}

TEST(PrinterTest, ConstantsKeepEnoughDigits) {
  EXPECT_EQ(PrintRoot("ROOT c = f32[3] constant({0.1, 16777217, -1e-45})"),
            "%c = f32[3] constant({0.1, 16777216, -1e-45})");
  EXPECT_EQ(PrintRoot("ROOT c = f64[] constant(0.1)"), "%c = f64[] constant(0.1)");
  EXPECT_EQ(PrintRoot("ROOT c = bf16[2] constant({3.14159, nan})"),
            "%c = bf16[2] constant({3.140625, nan})");
  EXPECT_EQ(PrintRoot("ROOT c = bf16[9,9] constant({...})"), "%c = bf16[9,9] constant({...})");
}

TEST(PrinterTest, ExtraAttributesAndEscapedStrings) {
  EXPECT_EQ(PrintRoot("ROOT c = f32[] custom-call(), custom_call_target=\"a\\\"b\\\\c\\n\", "
                      "zeta={x, \"y\"}, alpha=1, metadata={op_name=\"dropped\"}"),
            "%c = f32[] custom-call(), custom_call_target=\"a\\\"b\\\\c\\n\", alpha=1, zeta={x, \"y\"}");
}

}  // namespace
}  // namespace mk::hlo
