#include "codegen/cpu/element_chain.h"

#include <gtest/gtest.h>

namespace mk::codegen::cpu {
namespace {

// The renaming behind the tile epilogue's second row: whole identifiers only.
TEST(SuffixIdentifiersTest, RenamesWholeIdentifiersOnly) {
  const std::set<std::string> names{"e7", "i0", "gm_dv", "gm_e"};
  EXPECT_EQ(SuffixIdentifiers("const float e8 = [&]() -> float { return (e7 + v14(i0, i1)); }(); ",
                              names, "_1"),
            "const float e8 = [&]() -> float { return (e7_1 + v14(i0_1, i1)); }(); ");
  // Longer names, names inside other identifiers, and members are other tokens.
  EXPECT_EQ(SuffixIdentifiers("e70 + ve7 + e7x + mkrt::e7(gm_dv) + s.i0 + gm_dv2", names, "_1"),
            "e70 + ve7 + e7x + mkrt::e7(gm_dv_1) + s.i0 + gm_dv2");
  // The letters of numbers are not identifiers: 1e7f, 2.5e7, 0x1.8p-3f, .5e7 keep theirs.
  EXPECT_EQ(SuffixIdentifiers("1e7f * e7 - 2.5e7 + 0x1.8p-3f * .5e7 - 3e-7 + i0", names, "_2"),
            "1e7f * e7_2 - 2.5e7 + 0x1.8p-3f * .5e7 - 3e-7 + i0_2");
  EXPECT_EQ(SuffixIdentifiers("p9[gm_e] = e7;", names, "_1"), "p9[gm_e_1] = e7_1;");
  EXPECT_EQ(SuffixIdentifiers("", names, "_1"), "");
}

}  // namespace
}  // namespace mk::codegen::cpu
