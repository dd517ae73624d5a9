#include "cli/import_destination.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli/cli_test_util.h"

namespace mk::cli {
namespace {

namespace fs = std::filesystem;
using testing::Ran;
using testing::RunMaxkernel;

constexpr const char* kModule = R"(HloModule add_pair

ENTRY main {
  a = f32[2,3] parameter(0)
  b = f32[2,3] parameter(1)
  ROOT s = f32[2,3] add(a, b)
}
)";

class ImportDestinationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mk-import-dest-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::ofstream(dir_ / "add.hlo") << kModule;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  static void Touch(const fs::path& p, const std::string& text = "x") {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  Ran Import(const fs::path& out) {
    return RunMaxkernel({"import", (dir_ / "add.hlo").string(), "-o", out.string(), "--force"});
  }
  fs::path dir_;
};

TEST_F(ImportDestinationTest, AbsentIsFineExistingNeedsForce) {
  EXPECT_TRUE(CheckImportDestination((dir_ / "new").string(), false).ok());
  EXPECT_TRUE(CheckImportDestination((dir_ / "new").string(), true).ok());
  Status s = CheckImportDestination(dir_.string(), false);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("pass --force"), std::string::npos) << s.ToString();
}

TEST_F(ImportDestinationTest, ForceReplacesOnlyWhatImportWrites) {
  fs::create_directories(dir_ / "empty");
  EXPECT_TRUE(CheckImportDestination((dir_ / "empty").string(), true).ok());
  const fs::path task = dir_ / "task";
  Touch(task / "task.yaml");
  Touch(task / "module.hlo");
  Touch(task / "data" / "x.npy");
  EXPECT_TRUE(CheckImportDestination(task.string(), true).ok());

  Touch(task / "notes.txt");
  Status s = CheckImportDestination(task.string(), true);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("refusing to replace"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("notes.txt"), std::string::npos) << s.ToString();
  fs::remove(task / "notes.txt");

  Touch(task / "data" / "nested" / "y.npy");
  s = CheckImportDestination(task.string(), true);
  EXPECT_NE(s.message().find("data/nested"), std::string::npos) << s.ToString();
  fs::remove_all(task / "data" / "nested");

  fs::remove(task / "module.hlo");
  s = CheckImportDestination(task.string(), true);
  EXPECT_NE(s.message().find("no module.hlo"), std::string::npos) << s.ToString();

  Touch(dir_ / "plain");
  s = CheckImportDestination((dir_ / "plain").string(), true);
  EXPECT_NE(s.message().find("not a directory"), std::string::npos) << s.ToString();

  Touch(dir_ / "real" / "task.yaml");
  Touch(dir_ / "real" / "module.hlo");
  fs::create_directory_symlink(dir_ / "real", dir_ / "link");
  s = CheckImportDestination((dir_ / "link").string(), true);
  EXPECT_NE(s.message().find("symbolic link"), std::string::npos) << s.ToString();
}

// Through the binary: before the fix, each of these was deleted and replaced by the import.
TEST_F(ImportDestinationTest, ImportForceLeavesUnrelatedDirectoriesAndFilesAlone) {
  const fs::path home = dir_ / "home";
  Touch(home / "thesis.tex", "years of work");
  Touch(home / "src" / "main.c");
  Ran r = Import(home);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("refusing to replace"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::exists(home / "thesis.tex"));
  EXPECT_TRUE(fs::exists(home / "src" / "main.c"));
  EXPECT_FALSE(fs::exists(home / "task.yaml"));

  const fs::path file = dir_ / "notes.txt";
  Touch(file, "keep me");
  r = Import(file);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_TRUE(fs::is_regular_file(file));

  // A task directory import wrote is replaced, as --force promises.
  const fs::path task = dir_ / "task";
  ASSERT_EQ(Import(task).exit_code, 0);
  Touch(task / "module.hlo", "stale");
  r = Import(task);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(task / "module.hlo");
  std::string first;
  std::getline(in, first);
  EXPECT_EQ(first, "HloModule add_pair");
}

}  // namespace
}  // namespace mk::cli
