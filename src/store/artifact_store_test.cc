#include "store/artifact_store.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "store/store_test_util.h"

namespace mk::store {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// sha256("hello"), computed independently (coreutils sha256sum).
constexpr const char* kHelloSha =
    "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";
constexpr const char* kEmptySha =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void WriteFile(const fs::path& path, const std::string& data) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << data;
}

std::vector<std::string> FilesIn(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(ArtifactStoreTest, PutThenGetByContentAddress) {
  TempDir tmp;
  ArtifactStore artifacts(tmp.path());
  auto sha = artifacts.Put("hello", "text/plain");
  ASSERT_TRUE(sha.ok()) << sha.status().ToString();
  EXPECT_EQ(*sha, kHelloSha);
  const fs::path expected = tmp.path() / "artifacts" / "sha256" / "2c" / kHelloSha;
  EXPECT_EQ(artifacts.PathFor(*sha), expected);
  EXPECT_EQ(ReadFile(expected), "hello");
  auto data = artifacts.Get(*sha);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_EQ(*data, "hello");
  auto info = artifacts.Stat(*sha);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->size, 5);
  EXPECT_EQ(info->media_type, "text/plain");
  EXPECT_TRUE(artifacts.Contains(kHelloSha));
}

TEST(ArtifactStoreTest, PutIsIdempotentAndLeavesNoTempFiles) {
  TempDir tmp;
  ArtifactStore artifacts(tmp.path());
  ASSERT_TRUE(artifacts.Put("hello", "text/plain").ok());
  auto again = artifacts.Put("hello", "application/json");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, kHelloSha);
  EXPECT_EQ(FilesIn(tmp.path() / "artifacts" / "sha256" / "2c"),
            (std::vector<std::string>{kHelloSha, std::string(kHelloSha) + ".meta.json"}));
  EXPECT_EQ(artifacts.Stat(kHelloSha)->media_type, "text/plain");  // the first one wins
}

TEST(ArtifactStoreTest, EmptyAndBinaryContent) {
  TempDir tmp;
  ArtifactStore artifacts(tmp.path());
  auto empty = artifacts.Put("");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, kEmptySha);
  EXPECT_EQ(*artifacts.Get(kEmptySha), "");
  EXPECT_EQ(artifacts.Stat(kEmptySha)->media_type, "application/octet-stream");

  std::string binary;
  for (int i = 0; i < 300000; ++i) binary.push_back(static_cast<char>(i * 7 % 256));
  auto sha = artifacts.Put(binary, "application/x-sharedlib");
  ASSERT_TRUE(sha.ok());
  auto back = artifacts.Get(*sha);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, binary);
  EXPECT_EQ(artifacts.Stat(*sha)->size, 300000);
}

TEST(ArtifactStoreTest, CorruptionIsReportedAndNothingIsDeleted) {
  TempDir tmp;
  ArtifactStore artifacts(tmp.path());
  ASSERT_TRUE(artifacts.Put("hello", "text/plain").ok());
  const fs::path path = artifacts.PathFor(kHelloSha);
  WriteFile(path, "hellp");  // one flipped byte

  auto read = artifacts.Get(kHelloSha);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), ErrorCode::kIo);
  EXPECT_NE(read.status().message().find(std::string("artifact ") + kHelloSha + " is corrupted"),
            std::string::npos)
      << read.status().message();
  EXPECT_EQ(ReadFile(path), "hellp");  // left in place

  WriteFile(path, "");  // truncated to nothing
  EXPECT_FALSE(artifacts.Get(kHelloSha).ok());

  // Putting the real content again repairs it; the damaged file is kept in quarantine.
  ASSERT_TRUE(artifacts.Put("hello", "text/plain").ok());
  EXPECT_EQ(*artifacts.Get(kHelloSha), "hello");
  auto quarantined = FilesIn(tmp.path() / "artifacts" / "quarantine");
  ASSERT_EQ(quarantined.size(), 1u);
  EXPECT_EQ(quarantined[0].substr(0, 64), kHelloSha);
  EXPECT_EQ(ReadFile(tmp.path() / "artifacts" / "quarantine" / quarantined[0]), "");
}

TEST(ArtifactStoreTest, BadNamesAndMissingArtifacts) {
  TempDir tmp;
  ArtifactStore artifacts(tmp.path());
  EXPECT_EQ(artifacts.Get("../../etc/passwd").status().code(), ErrorCode::kInvalidArgument);
  std::string upper(kHelloSha);
  for (char& c : upper) c = static_cast<char>(std::toupper(c));
  EXPECT_EQ(artifacts.Get(upper).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(artifacts.Get(kHelloSha).status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(artifacts.Stat(kHelloSha).status().code(), ErrorCode::kNotFound);
  EXPECT_FALSE(artifacts.Contains(kHelloSha));
  EXPECT_FALSE(artifacts.Contains("zz"));
  EXPECT_EQ(artifacts.Put("x", "").status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(artifacts.Put("x", "text plain").status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(artifacts.Put("x", "text/plain\n").status().code(), ErrorCode::kInvalidArgument);
}

TEST(ArtifactStoreTest, MissingMetadataIsRewrittenByTheNextPut) {
  TempDir tmp;
  ArtifactStore artifacts(tmp.path());
  ASSERT_TRUE(artifacts.Put("hello", "text/plain").ok());
  fs::remove(artifacts.PathFor(kHelloSha).parent_path() / (std::string(kHelloSha) + ".meta.json"));
  EXPECT_EQ(artifacts.Stat(kHelloSha)->media_type, "application/octet-stream");
  ASSERT_TRUE(artifacts.Put("hello", "text/x-c++src").ok());
  EXPECT_EQ(artifacts.Stat(kHelloSha)->media_type, "text/x-c++src");
}

TEST(ArtifactStoreTest, UnwritableRootIsAnError) {
  TempDir tmp;
  WriteFile(tmp.path() / "file", "not a directory");
  ArtifactStore artifacts(tmp.path() / "file");
  auto sha = artifacts.Put("hello");
  ASSERT_FALSE(sha.ok());
  EXPECT_EQ(sha.status().code(), ErrorCode::kIo);
}

}  // namespace
}  // namespace mk::store
