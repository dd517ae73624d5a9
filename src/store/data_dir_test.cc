#include "store/data_dir.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <map>

#include "store/store_test_util.h"

namespace mk::store {
namespace {

namespace fs = std::filesystem;

EnvLookup FakeEnv(std::map<std::string, std::string> vars) {
  return [vars](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(DataDirTest, PrecedenceOfTheEnvironment) {
  auto dir = ResolveDataDir(
      "", FakeEnv({{"MAXKERNEL_HOME", "/srv/mk"}, {"XDG_DATA_HOME", "/xdg"}, {"HOME", "/home/u"}}));
  ASSERT_TRUE(dir.ok());
  EXPECT_EQ(dir->root, fs::path("/srv/mk"));
  EXPECT_EQ(dir->db_path, fs::path("/srv/mk/maxkernel.db"));
  EXPECT_FALSE(dir->db_overridden);

  dir = ResolveDataDir(
      "", FakeEnv({{"MAXKERNEL_HOME", ""}, {"XDG_DATA_HOME", "/xdg"}, {"HOME", "/home/u"}}));
  ASSERT_TRUE(dir.ok());
  EXPECT_EQ(dir->root, fs::path("/xdg/maxkernel"));

  // A relative XDG_DATA_HOME is ignored (XDG base directory spec).
  dir = ResolveDataDir("", FakeEnv({{"XDG_DATA_HOME", "rel"}, {"HOME", "/home/u"}}));
  ASSERT_TRUE(dir.ok());
  EXPECT_EQ(dir->root, fs::path("/home/u/.local/share/maxkernel"));
  EXPECT_EQ(dir->db_path, fs::path("/home/u/.local/share/maxkernel/maxkernel.db"));
}

TEST(DataDirTest, DbFlagOverridesOnlyTheDatabase) {
  auto dir = ResolveDataDir("/data/runs.db", FakeEnv({{"MAXKERNEL_HOME", "/srv/mk"}}));
  ASSERT_TRUE(dir.ok());
  EXPECT_EQ(dir->root, fs::path("/srv/mk"));
  EXPECT_EQ(dir->db_path, fs::path("/data/runs.db"));
  EXPECT_TRUE(dir->db_overridden);

  dir = ResolveDataDir("sub/../runs.db", FakeEnv({{"MAXKERNEL_HOME", "/srv/mk"}}));
  ASSERT_TRUE(dir.ok());
  EXPECT_EQ(dir->db_path, fs::current_path() / "runs.db");
}

TEST(DataDirTest, EnsureCreatesAPrivateDirectory) {
  testing::TempDir tmp;
  auto dir = ResolveDataDir("", FakeEnv({{"MAXKERNEL_HOME", (tmp.path() / "a" / "b").string()}}));
  ASSERT_TRUE(dir.ok());
  ASSERT_TRUE(EnsureDataDir(*dir).ok());
  struct stat st;
  ASSERT_EQ(::stat(dir->root.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_TRUE(EnsureDataDir(*dir).ok());  // idempotent

  auto bad_db = ResolveDataDir((tmp.path() / "missing" / "x.db").string(),
                               FakeEnv({{"MAXKERNEL_HOME", tmp.path().string()}}));
  ASSERT_TRUE(bad_db.ok());
  Status status = EnsureDataDir(*bad_db);
  EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(status.message().find("does not exist"), std::string::npos);
}

}  // namespace
}  // namespace mk::store
