#include "runtime/sandbox.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "runtime/compiler.h"

namespace mk::runtime {
namespace {

// A kernel library with the maxkernel ABI whose body is `body` (buffers: a, b, out; 4 floats).
std::string KernelSource(const std::string& body) {
  return "#include <csignal>\n#include <cstdlib>\n#include <cstring>\n"
         "extern \"C\" int mk_abi_version() { return 1; }\n"
         "extern \"C\" void mk_kernel(void** buffers) {\n"
         "  const float* a = static_cast<const float*>(buffers[0]);\n"
         "  const float* b = static_cast<const float*>(buffers[1]);\n"
         "  float* out = static_cast<float*>(buffers[2]);\n"
         "  (void)a; (void)b; (void)out;\n" +
         body + "\n}\n";
}

class SandboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mk-sandbox-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    CompileOptions options;
    options.cache_dir = dir_ + "/cache";
    options.flags = {"-O1", "-std=c++20", "-fPIC", "-shared"};
    compiler_ = std::make_unique<CompilerDriver>(options);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Build(const std::string& body) {
    auto lib = compiler_->Compile(KernelSource(body));
    EXPECT_TRUE(lib.ok()) << lib.status().ToString();
    return lib.ok() ? lib->so_path : "";
  }

  // Runs `so` on a=[1,2,3,4], b=[10,20,30,40]; returns the outcome and the output.
  RunOutcome RunAdd(const std::string& so, std::vector<float>* out, double timeout_s = 10) {
    auto region = SharedRegion::Create({16, 16, 16});
    EXPECT_TRUE(region.ok());
    float a[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40};
    std::memcpy(region->buffer(0), a, 16);
    std::memcpy(region->buffer(1), b, 16);
    RunRequest req;
    req.so_path = so;
    req.output_buffers = {2};
    req.min_iterations = 3;
    req.timeout_s = timeout_s;
    auto outcome = runner_.Run(req, *region);
    EXPECT_TRUE(outcome.ok()) << outcome.status().ToString();
    if (out) {
      out->resize(4);
      std::memcpy(out->data(), region->buffer(2), 16);
    }
    return outcome.ok() ? *outcome : RunOutcome{};
  }

  std::string dir_;
  std::unique_ptr<CompilerDriver> compiler_;
  SandboxRunner runner_;
};

constexpr const char* kAddBody = "for (int i = 0; i < 4; ++i) out[i] = a[i] + b[i];";

TEST_F(SandboxTest, RunsAndTimesAGoodKernel) {
  std::vector<float> out;
  RunOutcome r = RunAdd(Build(kAddBody), &out);
  ASSERT_EQ(r.status, RunStatus::kOk) << r.message;
  EXPECT_EQ(out, (std::vector<float>{11, 22, 33, 44}));
  EXPECT_EQ(r.times_s.size(), 3u);
}

TEST_F(SandboxTest, ManyTimedCallsComeBackAsAtMost4096Samples) {
  // 100k calls of a tiny kernel: their raw times would not fit one reply message.
  auto region = SharedRegion::Create({16, 16, 16});
  ASSERT_TRUE(region.ok());
  RunRequest req;
  req.so_path = Build(kAddBody);
  req.output_buffers = {2};
  req.min_iterations = 100000;
  req.max_iterations = 100000;
  auto outcome = runner_.Run(req, *region);
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  ASSERT_EQ(outcome->status, RunStatus::kOk) << outcome->message;
  EXPECT_LE(outcome->times_s.size(), 4096u);
  EXPECT_GE(outcome->times_s.size(), 3000u);
  for (double t : outcome->times_s) EXPECT_GT(t, 0);
}

TEST_F(SandboxTest, CrashIsReportedAndNextCandidateRuns) {
  RunOutcome crash = RunAdd(Build("std::raise(SIGSEGV);"), nullptr);
  EXPECT_EQ(crash.status, RunStatus::kCrashed);
  EXPECT_EQ(crash.signal, SIGSEGV);
  EXPECT_NE(crash.message.find("signal"), std::string::npos);
  std::vector<float> out;
  RunOutcome good = RunAdd(Build(kAddBody), &out);
  EXPECT_EQ(good.status, RunStatus::kOk);
  EXPECT_EQ(out[3], 44.0f);
}

TEST_F(SandboxTest, HangIsKilledAtTheTimeout) {
  RunOutcome hang = RunAdd(Build("volatile int spin = 1; while (spin) {}"), nullptr, 0.5);
  EXPECT_EQ(hang.status, RunStatus::kTimedOut);
  std::vector<float> out;
  EXPECT_EQ(RunAdd(Build(kAddBody), &out).status, RunStatus::kOk);
  EXPECT_EQ(out[0], 11.0f);
}

TEST_F(SandboxTest, KernelThatWritesNothingLeavesPoison) {
  std::vector<float> out;
  RunOutcome r = RunAdd(Build("/* forgets to write */"), &out);
  ASSERT_EQ(r.status, RunStatus::kOk);
  for (float v : out) EXPECT_TRUE(std::isnan(v));
}

// The tester asks for poisoned scratch: the worker tells the kernel's scratch pool through
// MK_SCRATCH_POISON, for that run only (the next worker, forked from the server, has it unset).
TEST_F(SandboxTest, PoisonScratchReachesTheKernelForThatRunOnly) {
  const std::string so = Build(
      "const char* e = std::getenv(\"MK_SCRATCH_POISON\");\n"
      "  for (int i = 0; i < 4; ++i) out[i] = (e && e[0] == '1') ? 1.0f : 0.0f;");
  for (bool poison : {true, false, true}) {
    auto region = SharedRegion::Create({16, 16, 16});
    ASSERT_TRUE(region.ok());
    RunRequest req;
    req.so_path = so;
    req.output_buffers = {2};
    req.poison_scratch = poison;
    auto outcome = runner_.Run(req, *region);
    ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
    ASSERT_EQ(outcome->status, RunStatus::kOk) << outcome->message;
    float out[4];
    std::memcpy(out, region->buffer(2), 16);
    EXPECT_EQ(out[0], poison ? 1.0f : 0.0f) << "poison_scratch=" << poison;
  }
}

// Issue 30 hole 7: a kernel (a `--source` kernel is the user's code) that forks leaves nothing
// behind: the worker's process group is killed when the run ends, and a child that left the
// group (setsid) is reparented to the server (a child subreaper) and killed there. The child
// writes its pid, then after a second a marker file: the marker must never appear.
TEST_F(SandboxTest, ChildrenAKernelForksDieWithTheRun) {
  for (bool detach : {false, true}) {
    SCOPED_TRACE(detach ? "setsid child" : "child in the worker's group");
    const std::string pid_file = dir_ + "/child-" + std::to_string(detach) + ".pid";
    const std::string marker = dir_ + "/child-" + std::to_string(detach) + ".alive";
    const std::string body =
        "static bool forked = false;\n"
        "  if (!forked) {\n"
        "    forked = true;\n"
        "    if (fork() == 0) {\n" +
        std::string(detach ? "      setsid();\n" : "") +
        "      FILE* f = std::fopen(\"" + pid_file + ".tmp\", \"w\");\n"
        "      std::fprintf(f, \"%d\", static_cast<int>(getpid()));\n"
        "      std::fclose(f);\n"
        "      std::rename(\"" + pid_file + ".tmp\", \"" + pid_file + "\");\n"
        "      usleep(1000000);\n"
        "      std::fclose(std::fopen(\"" + marker + "\", \"w\"));\n"
        "      _exit(0);\n"
        "    }\n"
        "    while (access(\"" + pid_file + "\", F_OK) != 0) usleep(1000);\n"
        "  }\n"
        "  for (int i = 0; i < 4; ++i) out[i] = a[i] + b[i];";
    auto lib = compiler_->Compile("#include <unistd.h>\n#include <cstdio>\n" + KernelSource(body));
    ASSERT_TRUE(lib.ok()) << lib.status().ToString();
    std::vector<float> out;
    RunOutcome r = RunAdd(lib->so_path, &out);
    ASSERT_EQ(r.status, RunStatus::kOk) << r.message;
    EXPECT_EQ(out[3], 44.0f);
    std::ifstream in(pid_file);
    int child = 0;
    ASSERT_TRUE(in >> child) << "the kernel's child wrote no pid";
    // Gone (killed and reaped by the server) right after the run.
    EXPECT_NE(::kill(child, 0), 0) << "child " << child << " still runs after the run";
    std::this_thread::sleep_for(std::chrono::milliseconds(1300));
    EXPECT_FALSE(std::filesystem::exists(marker)) << "the kernel's child outlived the run";
  }
}

TEST_F(SandboxTest, MissingSymbolIsALoadFailure) {
  auto lib = compiler_->Compile("extern \"C\" int mk_abi_version() { return 1; }\n");
  ASSERT_TRUE(lib.ok());
  RunOutcome r = RunAdd(lib->so_path, nullptr);
  EXPECT_EQ(r.status, RunStatus::kLoadFailed);
  EXPECT_NE(r.message.find("mk_kernel"), std::string::npos);
}

TEST_F(SandboxTest, ServerKilledFromOutsideIsRestarted) {
  std::string so = Build(kAddBody);
  ASSERT_EQ(RunAdd(so, nullptr).status, RunStatus::kOk);
  kill(runner_.server_pid(), SIGKILL);
  std::vector<float> out;
  EXPECT_EQ(RunAdd(so, &out).status, RunStatus::kOk);
  EXPECT_EQ(out[1], 22.0f);
  EXPECT_GE(runner_.restarts(), 1);
}

TEST_F(SandboxTest, CompileCacheHitsOnSameSource) {
  auto first = compiler_->Compile(KernelSource(kAddBody));
  auto second = compiler_->Compile(KernelSource(kAddBody));
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_FALSE(first->cache_hit);
  EXPECT_TRUE(second->cache_hit);
  EXPECT_EQ(first->so_path, second->so_path);
}

TEST_F(SandboxTest, CompileErrorNamesFirstErrorAndKeptSource) {
  auto lib = compiler_->Compile(KernelSource("out[0] = undefined_symbol;"));
  ASSERT_FALSE(lib.ok());
  EXPECT_NE(lib.status().message().find("undefined_symbol"), std::string::npos);
  EXPECT_NE(lib.status().message().find(".cc"), std::string::npos);
}

}  // namespace
}  // namespace mk::runtime
