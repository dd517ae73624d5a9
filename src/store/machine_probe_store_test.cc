// The machine_probes table (migration 3): probes are appended and the newest one per
// (cpu model, core count) is the current one; bad rates never reach the table.
#include <gtest/gtest.h>

#include <cmath>

#include "store/sqlite_store.h"
#include "store/store_test_util.h"

namespace mk::store {
namespace {

using testing::TempDir;

MachineProbeRecord Probe(const std::string& model, int64_t cores, double f32) {
  MachineProbeRecord p;
  p.cpu_model = model;
  p.cores = cores;
  p.peak_flops_f32 = f32;
  p.peak_flops_bf16 = 2 * f32;
  p.bandwidth_bytes_per_s = 40e9;
  p.details_json = R"({"note":"test"})";
  return p;
}

TEST(MachineProbeStoreTest, NewestProbePerModelAndCoresWins) {
  TempDir tmp;
  double now = 100;
  SqliteStoreOptions options;
  options.clock = [&] { return now; };
  auto store = SqliteStore::Open((tmp.path() / "p.db").string(), options);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  Store& s = **store;

  auto none = s.LatestMachineProbe("AMD EPYC", 2);
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_FALSE(none->has_value());

  ASSERT_TRUE(s.AddMachineProbe(Probe("AMD EPYC", 2, 700e9)).ok());
  now = 200;
  MachineProbeRecord no_bf16 = Probe("AMD EPYC", 2, 744e9);
  no_bf16.peak_flops_bf16.reset();
  auto second = s.AddMachineProbe(no_bf16);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  ASSERT_TRUE(s.AddMachineProbe(Probe("AMD EPYC", 4, 1.4e12)).ok());
  ASSERT_TRUE(s.AddMachineProbe(Probe("Intel Xeon", 2, 500e9)).ok());

  auto latest = s.LatestMachineProbe("AMD EPYC", 2);
  ASSERT_TRUE(latest.ok()) << latest.status().ToString();
  ASSERT_TRUE(latest->has_value());
  const MachineProbeRecord& p = **latest;
  EXPECT_EQ(p.id, *second);
  EXPECT_EQ(p.cpu_model, "AMD EPYC");
  EXPECT_EQ(p.cores, 2);
  EXPECT_DOUBLE_EQ(p.peak_flops_f32, 744e9);
  EXPECT_FALSE(p.peak_flops_bf16.has_value());
  EXPECT_DOUBLE_EQ(p.bandwidth_bytes_per_s, 40e9);
  EXPECT_EQ(p.details_json, R"({"note":"test"})");
  EXPECT_DOUBLE_EQ(p.measured_at, 200);

  auto four = s.LatestMachineProbe("AMD EPYC", 4);
  ASSERT_TRUE(four.ok() && four->has_value());
  EXPECT_DOUBLE_EQ((*four)->peak_flops_f32, 1.4e12);
  EXPECT_DOUBLE_EQ(*(*four)->peak_flops_bf16, 2.8e12);
  auto other = s.LatestMachineProbe("AMD EPYC 9B45", 2);  // exact model match only
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->has_value());
}

TEST(MachineProbeStoreTest, BadProbesAreRefused) {
  TempDir tmp;
  auto store = SqliteStore::Open((tmp.path() / "p.db").string());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  Store& s = **store;
  EXPECT_EQ(s.AddMachineProbe(Probe("", 2, 1e9)).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(s.AddMachineProbe(Probe("cpu", 0, 1e9)).status().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_FALSE(s.AddMachineProbe(Probe("cpu", 2, 0)).ok());
  EXPECT_FALSE(s.AddMachineProbe(Probe("cpu", 2, std::nan(""))).ok());
  EXPECT_FALSE(s.AddMachineProbe(Probe("cpu", 2, INFINITY)).ok());
  MachineProbeRecord bad_bf16 = Probe("cpu", 2, 1e9);
  bad_bf16.peak_flops_bf16 = -1;
  EXPECT_FALSE(s.AddMachineProbe(bad_bf16).ok());
  MachineProbeRecord bad_json = Probe("cpu", 2, 1e9);
  bad_json.details_json = "[1, 2]";
  EXPECT_FALSE(s.AddMachineProbe(bad_json).ok());
  auto latest = s.LatestMachineProbe("cpu", 2);
  ASSERT_TRUE(latest.ok());
  EXPECT_FALSE(latest->has_value());
  EXPECT_TRUE(s.CheckIntegrity().ok());
}

}  // namespace
}  // namespace mk::store
