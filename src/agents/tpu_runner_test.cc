#include "agents/tpu_runner.h"

#include <gtest/gtest.h>

namespace mk::agents {
namespace {

TEST(TpuRunnerTest, ACompilerCrashIsSummarizedByItsFatalLines) {
  // What libtpu printed when a failed CHECK aborted it (the 14p ci module, 2026-12-07).
  const std::string err =
      "W1207 10:02:31.0 1 x.cc:1] a warning\n"
      "F1207 10:02:32.012499   24483 layout.h:268] Check failed: rem == 0 (1024 vs. 0) \n"
      "F1207 10:02:32.012499   24483 layout.h:268] Check failed: rem == 0 (1024 vs. 0) \n"
      "E1207 10:02:32.265757   24483 client.cc:261] RAW: Coroner client retries enabled\n"
      "E1207 10:02:32.487603   24483 process_state.cc:708] RAW: Raising signal 6\n";
  const std::string s = CompilerCrashSummary(err, 6);
  EXPECT_NE(s.find("Check failed: rem == 0 (1024 vs. 0)"), std::string::npos) << s;
  EXPECT_EQ(s.find("Coroner"), std::string::npos) << s;
  EXPECT_EQ(s.find(" | "), std::string::npos) << "printed twice, shown once: " << s;
  EXPECT_EQ(s.find("a warning"), std::string::npos) << s;
  // Without a fatal line: the last lines, the blank ones skipped.
  EXPECT_EQ(CompilerCrashSummary("one\n\ntwo\nthree\n  \n", 2), ": two | three");
  EXPECT_EQ(CompilerCrashSummary("", 3), "");
}

}  // namespace
}  // namespace mk::agents
