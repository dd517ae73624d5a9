#include "task/suite_index.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "task/bridge.h"

namespace mk::task {
namespace {

namespace fs = std::filesystem;

fs::path WriteIndex(const std::string& name, const std::string& text) {
  const fs::path dir = fs::path(::testing::TempDir()) / name;
  fs::create_directories(dir);
  std::ofstream(dir / "suite.json") << text;
  return dir;
}

TEST(SuiteIndexTest, PicksWorkloadsByOperatorInIndexOrder) {
  const fs::path dir = WriteIndex("mk_suite_index_ok", R"({"workloads": [
    {"id": "1p", "operator": "attention", "scales": {}},
    {"id": "8p", "operator": "gemm", "scales": {}},
    {"id": "9p", "operator": "mlp", "scales": {}},
    {"id": "19k", "operator": "gemm", "scales": {}},
    {"id": "x", "scales": {}}]})");
  auto index = LoadSuiteIndex(dir.string());
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  EXPECT_EQ(SuiteIdsWithOperator(*index, {"gemm", "mlp"}),
            (std::vector<std::string>{"8p", "9p", "19k"}));
  EXPECT_TRUE(SuiteIdsWithOperator(*index, {"conv"}).empty());
}

TEST(SuiteIndexTest, RejectsWhatIsNotAnIndex) {
  auto missing = LoadSuiteIndex((fs::path(::testing::TempDir()) / "mk_no_such_suite").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no such file"), std::string::npos);
  for (const char* text : {"{not json", R"({"workloads": 3})", R"({"workloads": [{"id": 1}]})"}) {
    auto bad = LoadSuiteIndex(WriteIndex("mk_suite_index_bad", text).string());
    ASSERT_FALSE(bad.ok()) << text;
    EXPECT_NE(bad.status().message().find("suite.json"), std::string::npos);
  }
}

// The suite this checkout ships: its GEMM family is what `bench --suite-shapes gemm` times.
TEST(SuiteIndexTest, TheShippedSuiteHasItsGemmFamily) {
  auto index = LoadSuiteIndex(DefaultSuiteDir());
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  std::vector<std::string> ids = SuiteIdsWithOperator(*index, {"gemm", "mlp", "loss"});
  EXPECT_EQ(ids.size(), 28u);
  EXPECT_EQ(ids.front(), "8p");
}

}  // namespace
}  // namespace mk::task
