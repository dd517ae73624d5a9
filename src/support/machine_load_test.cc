// Parsing /proc/stat and /proc/loadavg, and a live sample of this machine.
#include "support/machine_load.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace mk {
namespace {

TEST(MachineLoadTest, ParsesTheCpuLine) {
  // user nice system idle iowait irq softirq steal guest guest_nice
  auto t = ParseProcStatCpuLine("cpu  100 5 20 1000 7 1 2 3 50 0");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->busy, 100u + 5 + 20 + 1 + 2 + 3);
  EXPECT_EQ(t->total, t->busy + 1000 + 7);
  // An old kernel's four fields.
  auto old = ParseProcStatCpuLine("cpu 10 0 5 85");
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->total, 100u);
  EXPECT_FALSE(ParseProcStatCpuLine("cpu0 1 2 3 4").ok());
  EXPECT_FALSE(ParseProcStatCpuLine("cpu 1 2").ok());
  EXPECT_FALSE(ParseProcStatCpuLine("").ok());
}

TEST(MachineLoadTest, ParsesTheLoadAverage) {
  EXPECT_DOUBLE_EQ(*ParseLoadAverage("3.85 1.33 0.49 9/312 4242"), 3.85);
  EXPECT_FALSE(ParseLoadAverage("").ok());
  EXPECT_FALSE(ParseLoadAverage("-1 0 0").ok());
}

TEST(MachineLoadTest, LoadedIsAFractionOfTheCores) {
  MachineLoad l;
  l.cores = 2;
  l.busy_cores = 0.4;
  EXPECT_FALSE(l.loaded());
  l.busy_cores = 1.9;
  EXPECT_TRUE(l.loaded());
  EXPECT_NE(DescribeLoad(l).find("loaded"), std::string::npos);
  EXPECT_EQ(ToJson(l)["loaded"], true);
}

// A thread of ours spinning during the window is other work as far as the sample can tell, so
// it must show up as at least part of a core.
TEST(MachineLoadTest, ASpinningThreadShowsAsBusy) {
  if (std::thread::hardware_concurrency() < 1) GTEST_SKIP() << "no CPU count";
  std::atomic<bool> stop{false};
  std::thread spin([&] {
    volatile uint64_t x = 0;
    while (!stop.load(std::memory_order_relaxed)) x = x + 1;
  });
  const MachineLoad l = SampleMachineLoad(static_cast<int>(std::thread::hardware_concurrency()), 0.2);
  stop = true;
  spin.join();
  if (l.window_s == 0) GTEST_SKIP() << "/proc/stat is not readable here";
  EXPECT_GE(l.busy_cores, 0.5) << DescribeLoad(l);
  EXPECT_LE(l.busy_cores, l.cores);
}

}  // namespace
}  // namespace mk
