// Issue 30 hole 7: a 50 MB single-instruction module took 1.4 GB of memory to reject. HLO module
// files are read only when they are regular files of at most kMaxModuleFileBytes, and parsing
// what is under the limit keeps its memory within a small multiple of the text.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>

#include "hlo/parser.h"

namespace mk::hlo {
namespace {

namespace fs = std::filesystem;

class ModuleFileLimitsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mk_hlo_limits_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // One instruction with `operands` operands (none of them defined), about 2 bytes each.
  std::string WriteWideInstruction(const std::string& name, size_t operands) {
    const std::string path = dir_ + "/" + name;
    std::string text = "HloModule wide\n\nENTRY main {\n  ROOT r = f32[2] add(";
    text.reserve(text.size() + 2 * operands + 16);
    for (size_t i = 0; i < operands; ++i) text += i + 1 < operands ? "a," : "a";
    text += ")\n}\n";
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  // Runs ParseModuleFile(path) in a child process; returns how much its peak resident set grew
  // (bytes), or -1 if the child failed. `*rejected` is whether parsing failed (it must, here).
  static int64_t PeakGrowthOfParsing(const std::string& path, bool* rejected) {
    int fds[2];
    if (::pipe(fds) != 0) return -1;
    std::fflush(nullptr);
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(fds[0]);
      rusage before {};
      ::getrusage(RUSAGE_SELF, &before);
      auto parsed = ParseModuleFile(path);
      rusage after {};
      ::getrusage(RUSAGE_SELF, &after);
      int64_t report[2] = {(after.ru_maxrss - before.ru_maxrss) * 1024, parsed.ok() ? 0 : 1};
      ssize_t n = ::write(fds[1], report, sizeof(report));
      ::_exit(n == static_cast<ssize_t>(sizeof(report)) ? 0 : 1);
    }
    ::close(fds[1]);
    int64_t report[2] = {-1, 0};
    ssize_t n = ::read(fds[0], report, sizeof(report));
    ::close(fds[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (n != static_cast<ssize_t>(sizeof(report)) || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
      return -1;
    }
    *rejected = report[1] != 0;
    return report[0];
  }

  std::string dir_;
};

TEST_F(ModuleFileLimitsTest, AFileOverTheLimitIsRefusedBeforeItIsRead) {
  // 20 MB: the code before the limit took about 28 bytes of memory per byte of such a module.
  const std::string path = WriteWideInstruction("big.hlo", 10'000'000);
  ASSERT_GT(fs::file_size(path), kMaxModuleFileBytes);
  auto parsed = ParseModuleFile(path);
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(parsed.status().loc().file, path);
  EXPECT_NE(parsed.status().message().find("more than the 16777216 bytes an HLO module file may "
                                           "have"),
            std::string::npos)
      << parsed.status().ToString();
  bool rejected = false;
  const int64_t growth = PeakGrowthOfParsing(path, &rejected);
  ASSERT_GE(growth, 0) << "the child process failed";
  EXPECT_TRUE(rejected);
  EXPECT_LT(growth, int64_t{32} << 20) << "peak memory grew by " << growth << " bytes";
}

TEST_F(ModuleFileLimitsTest, AWideInstructionUnderTheLimitTakesBoundedMemory) {
  // 15 MB, 7.5 million operands: rejected (the operands are undefined) after parsing them all.
  const std::string path = WriteWideInstruction("wide.hlo", 7'500'000);
  const auto size = static_cast<int64_t>(fs::file_size(path));
  ASSERT_LE(static_cast<uint64_t>(size), kMaxModuleFileBytes);
  bool rejected = false;
  const int64_t growth = PeakGrowthOfParsing(path, &rejected);
  ASSERT_GE(growth, 0) << "the child process failed";
  EXPECT_TRUE(rejected);
  // The text itself, and 16 bytes per operand (two bytes of text): about 9 times the file.
  EXPECT_LT(growth, 12 * size) << "peak memory grew by " << growth << " bytes for a " << size
                               << "-byte module";
}

TEST_F(ModuleFileLimitsTest, AFifoIsRefusedWithoutBlocking) {
  const std::string fifo = dir_ + "/m.hlo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Before the fix the open waited for a writer: release it after a while so the test fails
  // instead of hanging.
  pid_t rescuer = ::fork();
  if (rescuer == 0) {
    ::sleep(3);
    while (true) {  // every open of the FIFO by the reader needs its own writer
      int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
      if (fd >= 0) ::close(fd);
      ::usleep(50000);
    }
  }
  const auto start = std::chrono::steady_clock::now();
  auto parsed = ParseModuleFile(fifo);
  const auto took = std::chrono::steady_clock::now() - start;
  ::kill(rescuer, SIGKILL);
  ::waitpid(rescuer, nullptr, 0);
  EXPECT_LT(took, std::chrono::seconds(2));
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(parsed.status().ToString(), fifo + ": error: is a FIFO, not a regular file");
}

}  // namespace
}  // namespace mk::hlo
