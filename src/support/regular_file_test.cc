#include "support/regular_file.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

namespace mk {
namespace {

namespace fs = std::filesystem;

class RegularFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mk_regular_file_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

TEST_F(RegularFileTest, ReadsARegularFileAndALinkToOne) {
  std::ofstream(dir_ + "/a.txt") << "hello";
  fs::create_symlink(dir_ + "/a.txt", dir_ + "/link");
  for (const std::string name : {"a.txt", "link"}) {
    Result<std::string> text = ReadRegularFile(dir_ + "/" + name);
    ASSERT_TRUE(text.ok()) << text.status().ToString();
    EXPECT_EQ(*text, "hello");
  }
}

// Issue 30 hole 7: opening a FIFO for reading waits for a writer, forever. It is refused at once,
// by name, as bad input.
TEST_F(RegularFileTest, RefusesAFifoWithoutBlocking) {
  const std::string fifo = dir_ + "/pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  Result<std::string> text = ReadRegularFile(fifo);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(text.status().loc().file, fifo);
  EXPECT_NE(text.status().message().find("is a FIFO, not a regular file"), std::string::npos)
      << text.status().ToString();
}

TEST_F(RegularFileTest, RefusesDirectoriesAndDevicesAndNamesMissingFiles) {
  Result<std::string> dir = ReadRegularFile(dir_);
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(dir.status().message().find("directory"), std::string::npos);
  // /dev/zero never ends: reading it would fill memory.
  Result<std::string> zero = ReadRegularFile("/dev/zero");
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("character device"), std::string::npos);
  Result<std::string> missing = ReadRegularFile(dir_ + "/nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(missing.status().loc().file, dir_ + "/nope");
}

TEST_F(RegularFileTest, RefusesAFileOverTheLimitBeforeReadingIt) {
  std::ofstream(dir_ + "/big") << std::string(1000, 'x');
  Result<std::string> text = ReadRegularFile(dir_ + "/big", 999, "a test file");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(text.status().message().find("1000 bytes, more than the 999 bytes a test file may have"),
            std::string::npos)
      << text.status().ToString();
  Result<std::string> exact = ReadRegularFile(dir_ + "/big", 1000);
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ(exact->size(), 1000u);
}

}  // namespace
}  // namespace mk
