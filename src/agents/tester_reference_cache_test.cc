#include "agents/tester_reference_cache.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "hlo/parser.h"

namespace mk::agents {
namespace {

namespace fs = std::filesystem;

const char* kModule = R"(HloModule m
ENTRY main {
  a = f32[3] parameter(0)
  ROOT n = (f32[3], f32[3]) tuple(a, a)
})";

hlo::Literal Vector(std::vector<double> values) {
  hlo::Literal lit(hlo::Shape(hlo::DType::kF32, {static_cast<int64_t>(values.size())}));
  for (size_t i = 0; i < values.size(); ++i) lit.SetDouble(static_cast<int64_t>(i), values[i]);
  return lit;
}

class ReferenceDiskCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mk-refcache-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    auto parsed = hlo::ParseModule(kModule, "m.hlo");
    ASSERT_TRUE(parsed.ok());
    module_ = std::move(*parsed);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string dir_;
  std::unique_ptr<hlo::Module> module_;
  std::vector<hlo::Shape> shapes_ = {hlo::Shape(hlo::DType::kF32, {3}),
                                     hlo::Shape(hlo::DType::kF32, {3})};
};

TEST_F(ReferenceDiskCacheTest, KeysDependOnTheInputsAndTheModule) {
  std::string k1 = ReferenceDiskCache::Key(*module_, {Vector({1, 2, 3})}, false);
  EXPECT_EQ(k1, ReferenceDiskCache::Key(*module_, {Vector({1, 2, 3})}, false));
  EXPECT_NE(k1, ReferenceDiskCache::Key(*module_, {Vector({1, 2, 4})}, false));
  EXPECT_NE(k1, ReferenceDiskCache::Key(*module_, {Vector({1, 2, 3})}, true));
  auto other = hlo::ParseModule(R"(HloModule m
ENTRY main {
  a = f32[3] parameter(0)
  n = f32[3] negate(a)
  ROOT t = (f32[3], f32[3]) tuple(n, a)
})", "o.hlo");
  ASSERT_TRUE(other.ok());
  EXPECT_NE(k1, ReferenceDiskCache::Key(**other, {Vector({1, 2, 3})}, false));
}

TEST_F(ReferenceDiskCacheTest, StoredOutputsComeBackAndArePrivate) {
  ReferenceDiskCache cache(dir_ + "/oracle");
  std::string key = ReferenceDiskCache::Key(*module_, {Vector({1, 2, 3})}, false);
  EXPECT_FALSE(cache.Load(key, shapes_).has_value());
  ASSERT_TRUE(cache.Store(key, {Vector({1, 2, 3}), Vector({4, 5, 6})}).ok());
  auto loaded = cache.Load(key, shapes_);
  ASSERT_TRUE(loaded.has_value());
  ASSERT_EQ(loaded->size(), 2u);
  EXPECT_EQ((*loaded)[1].GetDouble(2), 6.0);
  struct stat st;
  ASSERT_EQ(::stat((dir_ + "/oracle").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat((dir_ + "/oracle/" + key + ".out").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

// The cache is bounded: the least recently used entries go first; a read renews an entry.
TEST_F(ReferenceDiskCacheTest, TheLeastRecentlyUsedEntriesArePrunedToTheCap) {
  ReferenceDiskCache cache(dir_ + "/oracle", 2 * 24);  // two entries of 2 x 3 floats
  std::vector<std::string> keys;
  for (double v : {1.0, 2.0, 3.0}) {
    keys.push_back(ReferenceDiskCache::Key(*module_, {Vector({v, v, v})}, false));
  }
  auto store = [&](const std::string& key) {
    ASSERT_TRUE(cache.Store(key, {Vector({1, 2, 3}), Vector({4, 5, 6})}).ok());
  };
  auto age = [&](const std::string& key, int seconds_ago) {
    fs::last_write_time(dir_ + "/oracle/" + key + ".out",
                        fs::file_time_type::clock::now() - std::chrono::seconds(seconds_ago));
  };
  store(keys[0]);
  age(keys[0], 30);
  store(keys[1]);
  age(keys[1], 20);
  ASSERT_TRUE(cache.Load(keys[0], shapes_).has_value());  // keys[0] is now the most recent
  store(keys[2]);  // over the cap: keys[1], the least recently used, goes
  EXPECT_TRUE(cache.Load(keys[0], shapes_).has_value());
  EXPECT_FALSE(cache.Load(keys[1], shapes_).has_value());
  EXPECT_FALSE(fs::exists(dir_ + "/oracle/" + keys[1] + ".out.sha256"));
  EXPECT_TRUE(cache.Load(keys[2], shapes_).has_value());

  // An entry larger than the cap on its own is kept until the next store.
  ReferenceDiskCache tiny(dir_ + "/tiny", 8);
  ASSERT_TRUE(tiny.Store(keys[0], {Vector({1, 2, 3}), Vector({4, 5, 6})}).ok());
  EXPECT_TRUE(tiny.Load(keys[0], shapes_).has_value());
  ASSERT_TRUE(tiny.Store(keys[1], {Vector({1, 2, 3}), Vector({4, 5, 6})}).ok());
  EXPECT_FALSE(tiny.Load(keys[0], shapes_).has_value());
  EXPECT_TRUE(tiny.Load(keys[1], shapes_).has_value());
}

TEST_F(ReferenceDiskCacheTest, APlantedResultIsRefusedAndRemoved) {
  ReferenceDiskCache cache(dir_ + "/oracle");
  std::string key = ReferenceDiskCache::Key(*module_, {Vector({1, 2, 3})}, false);
  ASSERT_TRUE(cache.Store(key, {Vector({1, 2, 3}), Vector({4, 5, 6})}).ok());
  std::string path = dir_ + "/oracle/" + key + ".out";
  {
    // Same size, different numbers: what someone planting "expected" outputs would write.
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(0);
    float planted = 42;
    f.write(reinterpret_cast<const char*>(&planted), sizeof planted);
  }
  EXPECT_FALSE(cache.Load(key, shapes_).has_value());
  EXPECT_FALSE(fs::exists(path));
}

TEST_F(ReferenceDiskCacheTest, AnEntryOfTheWrongLayoutIsRefused) {
  ReferenceDiskCache cache(dir_ + "/oracle");
  ASSERT_TRUE(cache.Store("k", {Vector({1, 2, 3})}).ok());
  EXPECT_FALSE(cache.Load("k", shapes_).has_value());  // one leaf stored, two expected
}

}  // namespace
}  // namespace mk::agents
