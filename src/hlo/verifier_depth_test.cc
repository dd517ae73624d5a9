// The verifier refuses computations nested deeper than kMaxCallDepth with a position, without
// recursing itself: later layers (interpreter, code generators) recurse once per level.
#include <gtest/gtest.h>

#include <string>

#include "hlo/parser.h"
#include "hlo/verifier.h"

namespace mk::hlo {
namespace {

// A chain of `levels` computations: c0 negates, every c<i> calls c<i-1> with `op` (call or map),
// and the entry calls the last: nesting depth levels + 1.
std::string Nested(int levels, const std::string& op) {
  std::string text = "HloModule deep\n\nc0 {\n  p = f32[] parameter(0)\n  ROOT n = f32[] negate(p)\n}\n";
  auto call = [&](int callee) {
    return op == "map" ? "f32[] map(p), dimensions={}, to_apply=c" + std::to_string(callee)
                       : "f32[] call(p), to_apply=c" + std::to_string(callee);
  };
  for (int i = 1; i < levels; ++i) {
    text += "\nc" + std::to_string(i) + " {\n  p = f32[] parameter(0)\n  ROOT r = " +
            call(i - 1) + "\n}\n";
  }
  text += "\nENTRY main {\n  p = f32[] parameter(0)\n  ROOT r = " + call(levels - 1) + "\n}\n";
  return text;
}

Status VerifyText(const std::string& text) {
  auto module = ParseModule(text, "deep.hlo");
  EXPECT_TRUE(module.ok()) << module.status().ToString();
  if (!module.ok()) return module.status();
  return VerifyModule(**module);
}

TEST(VerifierDepthTest, NestingUpToTheLimitIsAccepted) {
  EXPECT_TRUE(VerifyText(Nested(static_cast<int>(kMaxCallDepth) - 1, "call")).ok());
  EXPECT_TRUE(VerifyText(Nested(static_cast<int>(kMaxCallDepth) - 1, "map")).ok());
}

TEST(VerifierDepthTest, OneLevelMoreIsRefusedAtTheCall) {
  Status s = VerifyText(Nested(static_cast<int>(kMaxCallDepth), "call"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("more than " + std::to_string(kMaxCallDepth) + " deep"),
            std::string::npos)
      << s.ToString();
  EXPECT_EQ(s.loc().file, "deep.hlo");
  EXPECT_GT(s.loc().line, 0);
  EXPECT_GT(s.loc().col, 0);
}

TEST(VerifierDepthTest, DeepNestingIsAnErrorNotACrash) {
  for (const char* op : {"call", "map"}) {
    Status s = VerifyText(Nested(20000, op));
    ASSERT_FALSE(s.ok()) << op;
    EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.ToString();
  }
}

TEST(VerifierDepthTest, ASharedCalleeCountsAtItsDeepestUse) {
  // c0..c(limit-2) is a legal chain on its own (verified first, in definition order); the entry
  // then reaches it through one extra level, which makes the whole chain one too deep.
  std::string text = Nested(static_cast<int>(kMaxCallDepth) - 1, "call");
  size_t entry = text.find("ENTRY main");
  std::string extra = "wrap {\n  p = f32[] parameter(0)\n  ROOT r = f32[] call(p), to_apply=c" +
                      std::to_string(kMaxCallDepth - 2) + "\n}\n\n";
  text.insert(entry, extra);
  size_t last_call = text.rfind("to_apply=c");
  text.replace(last_call, std::string::npos, "to_apply=wrap\n}\n");
  Status s = VerifyText(text);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("deep"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace mk::hlo
