// Leases (store.h, lease.h): two Store handles on one database file stand for two processes
// that both want to work on one run.
#include "store/lease.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "store/sqlite_store.h"
#include "store/store_test_util.h"

namespace mk::store {
namespace {

using testing::TempDir;

class LeaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    path_ = (tmp_.path() / "leases.db").string();
  }
  // A handle with its own connection and clock (seconds since the epoch, settable).
  std::unique_ptr<SqliteStore> Open(std::atomic<double>* clock = nullptr) {
    SqliteStoreOptions options;
    if (clock) options.clock = [clock] { return clock->load(); };
    auto store = SqliteStore::Open(path_, options);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(*store) : nullptr;
  }

  TempDir tmp_;
  std::string path_;
};

TEST_F(LeaseTest, ASecondHolderIsRefusedWithTheHoldersName) {
  auto a = Open(), b = Open();
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->AcquireLease("run:5", "hostA:1:aa", 30).ok());
  Result<LeaseRecord> second = b->AcquireLease("run:5", "hostB:2:bb", 30);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(second.status().message().find("held by hostA:1:aa"), std::string::npos)
      << second.status().message();
  // Other resources are independent; the holder itself renews.
  EXPECT_TRUE(b->AcquireLease("run:6", "hostB:2:bb", 30).ok());
  EXPECT_TRUE(a->AcquireLease("run:5", "hostA:1:aa", 30).ok());
  auto lease = b->GetLease("run:5");
  ASSERT_TRUE(lease.ok() && lease->has_value());
  EXPECT_EQ((*lease)->holder, "hostA:1:aa");
}

TEST_F(LeaseTest, AnExpiredLeaseIsTakenOverAndTheOldHolderLearnsIt) {
  std::atomic<double> now{1000};
  auto a = Open(&now), b = Open(&now);
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->AcquireLease("run:5", "A", 30).ok());
  now = 1020;
  ASSERT_TRUE(a->RenewLease("run:5", "A", 30).ok());  // now expires at 1050
  now = 1049;
  EXPECT_FALSE(b->AcquireLease("run:5", "B", 30).ok());
  now = 1051;
  Result<LeaseRecord> taken = b->AcquireLease("run:5", "B", 30);
  ASSERT_TRUE(taken.ok()) << taken.status().ToString();
  EXPECT_EQ(taken->expires_at, 1081);
  Result<LeaseRecord> late = a->RenewLease("run:5", "A", 30);
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(late.status().message().find("taken over by B"), std::string::npos);
}

TEST_F(LeaseTest, AReleasedLeaseIsFreeAndOnlyItsHolderReleasesIt) {
  auto a = Open(), b = Open();
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->AcquireLease("run:5", "A", 30).ok());
  ASSERT_TRUE(b->ReleaseLease("run:5", "B").ok());  // not B's: nothing happens
  EXPECT_FALSE(b->AcquireLease("run:5", "B", 30).ok());
  ASSERT_TRUE(a->ReleaseLease("run:5", "A").ok());
  EXPECT_TRUE(b->AcquireLease("run:5", "B", 30).ok());
}

TEST_F(LeaseTest, TheKeeperHeartbeatsPastTheTtlAndReleasesOnDestruction) {
  auto a = Open(), b = Open();
  ASSERT_TRUE(a && b);
  {
    auto keeper = LeaseKeeper::Acquire(*a, "run:7", LeaseHolderId(), 0.4);
    ASSERT_TRUE(keeper.ok()) << keeper.status().ToString();
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));  // 2.5 ttls
    EXPECT_FALSE((*keeper)->lost());
    EXPECT_FALSE(b->AcquireLease("run:7", "B", 30).ok()) << "the heartbeat did not keep it";
    auto refused = LeaseKeeper::Acquire(*b, "run:7", LeaseHolderId(), 30);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find((*keeper)->holder()), std::string::npos);
  }
  EXPECT_TRUE(b->AcquireLease("run:7", "B", 30).ok());
}

TEST_F(LeaseTest, ALeaseOfADeadProcessOnThisHostIsTakenOverAtOnce) {
  auto a = Open(), b = Open();
  ASSERT_TRUE(a && b);
  pid_t child = testing::ForkChild([] { return 0; });
  ASSERT_EQ(testing::WaitChild(child), 0);  // `child` names no process now
  std::string mine = LeaseHolderId();
  std::string dead = mine.substr(0, mine.find(':')) + ":" + std::to_string(child) + ":00000000";
  EXPECT_TRUE(HolderIsDeadHere(dead));
  EXPECT_FALSE(HolderIsDeadHere(mine));
  EXPECT_FALSE(HolderIsDeadHere("elsewhere.example:" + std::to_string(child) + ":0"));
  ASSERT_TRUE(a->AcquireLease("run:8", dead, 300).ok());
  auto keeper = LeaseKeeper::Acquire(*b, "run:8", mine, 30);
  ASSERT_TRUE(keeper.ok()) << keeper.status().ToString();
  auto lease = a->GetLease("run:8");
  ASSERT_TRUE(lease.ok() && lease->has_value());
  EXPECT_EQ((*lease)->holder, mine);
}

}  // namespace
}  // namespace mk::store
