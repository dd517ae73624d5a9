// Baselines in the store: keyed by module, CPU and engine, newest wins, bad records refused.
#include <gtest/gtest.h>

#include <filesystem>

#include "store/sqlite_store.h"

namespace mk::store {
namespace {

std::string Sha(char c) { return std::string(64, c); }

TEST(BaselineStoreTest, NewestPerModuleCpuAndEngine) {
  const std::string path = ::testing::TempDir() + "/mk_baselines.db";
  std::filesystem::remove(path);
  auto store = SqliteStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_FALSE((*store)->LatestBaseline(Sha('a'), "cpu", "xla-cpu")->has_value());
  BaselineRecord b;
  b.module_sha256 = Sha('a');
  b.cpu_model = "AMD EPYC";
  b.engine_version = "jax 0.4.38";
  b.median_s = 2e-3;
  b.p10_s = 1.9e-3;
  b.p90_s = 2.2e-3;
  b.runs = 10;
  ASSERT_TRUE((*store)->AddBaseline(b).ok());
  b.median_s = 1.5e-3;
  b.engine_version = "jax 0.5.0";
  ASSERT_TRUE((*store)->AddBaseline(b).ok());
  auto got = (*store)->LatestBaseline(Sha('a'), "AMD EPYC", "xla-cpu");
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_DOUBLE_EQ((*got)->median_s, 1.5e-3);
  EXPECT_EQ((*got)->engine_version, "jax 0.5.0");
  EXPECT_GT((*got)->measured_at, 0);
  // Another module, another CPU: not this baseline.
  EXPECT_FALSE((*store)->LatestBaseline(Sha('b'), "AMD EPYC", "xla-cpu")->has_value());
  EXPECT_FALSE((*store)->LatestBaseline(Sha('a'), "Intel Xeon", "xla-cpu")->has_value());
  // Refused: no median, bad sha, details that are not an object.
  BaselineRecord bad = b;
  bad.median_s = 0;
  EXPECT_FALSE((*store)->AddBaseline(bad).ok());
  bad = b;
  bad.module_sha256 = "abc";
  EXPECT_FALSE((*store)->AddBaseline(bad).ok());
  bad = b;
  bad.details_json = "[1]";
  EXPECT_FALSE((*store)->AddBaseline(bad).ok());
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace mk::store
