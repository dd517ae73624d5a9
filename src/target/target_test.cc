// The host description's cache sizes: read from the kernel's per-CPU cache folders.
#include "target/target.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace mk::target {
namespace {

namespace fs = std::filesystem;

void Write(const fs::path& file, const std::string& text) {
  std::ofstream(file) << text << "\n";
}

void AddCache(const fs::path& dir, int index, const std::string& level, const std::string& type,
              const std::string& size) {
  const fs::path d = dir / ("index" + std::to_string(index));
  fs::create_directories(d);
  Write(d / "level", level);
  Write(d / "type", type);
  Write(d / "size", size);
}

TEST(SysfsCacheBytesTest, ReadsDataAndUnifiedCachesByLevel) {
  const fs::path dir = fs::path(::testing::TempDir()) / "mk_sysfs_cache";
  fs::remove_all(dir);
  // The layout of the Zen 4 VM this was written on; the instruction cache comes first at
  // level 1 in index order on some machines, so order must not matter.
  AddCache(dir, 0, "1", "Instruction", "64K");
  AddCache(dir, 1, "1", "Data", "32K");
  AddCache(dir, 2, "2", "Unified", "1024K");
  AddCache(dir, 3, "3", "Unified", "32768K");
  EXPECT_EQ(SysfsCacheBytes(dir.string(), 1), 32 << 10);
  EXPECT_EQ(SysfsCacheBytes(dir.string(), 2), 1 << 20);
  EXPECT_EQ(SysfsCacheBytes(dir.string(), 3), 32 << 20);
  EXPECT_EQ(SysfsCacheBytes(dir.string(), 5), 0);  // none listed
  AddCache(dir, 4, "4", "Instruction", "8K");       // only an instruction cache: not data
  EXPECT_EQ(SysfsCacheBytes(dir.string(), 4), 0);
  // Sizes in M, and a size that is not one.
  AddCache(dir, 3, "3", "Unified", "2M");
  EXPECT_EQ(SysfsCacheBytes(dir.string(), 3), 2 << 20);
  AddCache(dir, 3, "3", "Unified", "lots");
  EXPECT_EQ(SysfsCacheBytes(dir.string(), 3), 0);
  EXPECT_EQ(SysfsCacheBytes((dir / "missing").string(), 1), 0);
  fs::remove_all(dir);
}

// Where the host lists its caches, HostCpu takes them from there.
TEST(SysfsCacheBytesTest, HostCpuUsesTheListedSizes) {
  const std::string host_dir = "/sys/devices/system/cpu/cpu0/cache";
  const Target t = HostCpu();
  for (int level : {1, 2, 3}) {
    const int64_t listed = SysfsCacheBytes(host_dir, level);
    if (listed == 0) continue;
    const int64_t got = level == 1 ? t.l1_bytes : level == 2 ? t.l2_bytes : t.l3_bytes;
    EXPECT_EQ(got, listed) << "L" << level;
  }
}

}  // namespace
}  // namespace mk::target
