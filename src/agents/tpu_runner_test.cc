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

TEST(TpuRunnerTest, KernelFailuresNameTheRefusedKernelsAndTheOneACrashStoppedIn) {
  // What `pallas-compile --per-kernel` printed on stderr for 14p ci before libtpu aborted.
  const std::string err =
      "maxkernel: compiling kernel_0\n"
      "maxkernel: compiled {\"function\": \"kernel_0\", \"ok\": true, \"error\": null}\n"
      "W1207 some log line\n"
      "maxkernel: compiling kernel_18\n"
      "maxkernel: compiled {\"function\": \"kernel_18\", \"ok\": false, \"error\": {\"kind\": "
      "\"mosaic\", \"message\": \"INTERNAL: Mosaic failed to compile TPU kernel: unsupported shape "
      "cast\\n\\nThe MLIR operation involved:\\n  %9 = \\\"tpu.reshape\\\"(%8) : (vector<15xi1>) -> "
      "vector<15x1xi1>\\n\\nPlease report a bug\"}}\n"
      "maxkernel: compiling kernel_25\n"
      "F1207 layout.h:268] Check failed: rem == 0\n";
  nlohmann::json kernels;
  const std::string s = KernelFailures(err, &kernels);
  EXPECT_NE(s.find("kernel_18: mosaic: INTERNAL: Mosaic failed to compile TPU kernel: unsupported shape cast"),
            std::string::npos) << s;
  EXPECT_NE(s.find("vector<15xi1>) -> vector<15x1xi1>"), std::string::npos) << s;
  EXPECT_NE(s.find("kernel_25: crashed the compiler"), std::string::npos) << s;
  EXPECT_EQ(s.find("kernel_0"), std::string::npos) << s;
  ASSERT_EQ(kernels.size(), 3u);
  EXPECT_EQ(kernels[2]["function"], "kernel_25");
  // Nothing failed: nothing to say.
  EXPECT_EQ(KernelFailures("maxkernel: compiling kernel_0\nmaxkernel: compiled {\"function\": "
                           "\"kernel_0\", \"ok\": true}\n", &kernels), "");
}

}  // namespace
}  // namespace mk::agents
