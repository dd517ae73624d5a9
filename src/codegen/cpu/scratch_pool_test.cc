// mk_cpu_rt.h's scratch pool: generated kernels take their temporaries through it, so a module
// called in a loop reuses its blocks instead of mapping and faulting them in on every call.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "codegen/cpu/mk_cpu_rt.h"

namespace mk::codegen::cpu {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

TEST(ScratchPoolTest, AReleasedBlockServesTheNextRequestOfItsSize) {
  mkrt::ScratchPool pool(64 * kMiB, false);
  size_t cap = 0;
  void* a = pool.acquire(3 * kMiB, &cap);
  ASSERT_NE(a, nullptr);
  EXPECT_GE(cap, 3 * kMiB);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
  pool.release(a, cap);
  EXPECT_EQ(pool.held(), cap);
  size_t cap2 = 0;
  void* b = pool.acquire(3 * kMiB - 100, &cap2);
  EXPECT_EQ(b, a);
  EXPECT_EQ(cap2, cap);
  EXPECT_EQ(pool.held(), 0u);
  pool.release(b, cap2);
}

TEST(ScratchPoolTest, ASmallRequestDoesNotTakeAMuchBiggerBlock) {
  mkrt::ScratchPool pool(64 * kMiB, false);
  size_t big_cap = 0, small_cap = 0;
  void* big = pool.acquire(8 * kMiB, &big_cap);
  pool.release(big, big_cap);
  void* small = pool.acquire(kMiB, &small_cap);
  EXPECT_NE(small, big);
  EXPECT_LT(small_cap, 2 * kMiB);
  EXPECT_EQ(pool.held(), big_cap);  // the big block is still there for its size
  pool.release(small, small_cap);
}

TEST(ScratchPoolTest, HoldsNoMoreThanItsLimit) {
  mkrt::ScratchPool pool(5 * kMiB, false);
  size_t c1 = 0, c2 = 0, c3 = 0;
  void* p1 = pool.acquire(2 * kMiB, &c1);
  void* p2 = pool.acquire(2 * kMiB, &c2);
  void* p3 = pool.acquire(2 * kMiB, &c3);
  pool.release(p1, c1);
  pool.release(p2, c2);
  pool.release(p3, c3);  // three would exceed 5 MiB: the oldest goes back to the system
  EXPECT_LE(pool.held(), 5 * kMiB);
  EXPECT_EQ(pool.held(), c2 + c3);
  mkrt::ScratchPool off(0, false);
  size_t c = 0;
  off.release(off.acquire(kMiB, &c), c);
  EXPECT_EQ(off.held(), 0u);
}

TEST(ScratchPoolTest, PoisonFillsEveryBlockHandedOut) {
  mkrt::ScratchPool pool(64 * kMiB, true);
  size_t cap = 0;
  auto* p = static_cast<unsigned char*>(pool.acquire(4096, &cap));
  for (size_t i = 0; i < 4096; ++i) ASSERT_EQ(p[i], 0xFF) << i;
  std::memset(p, 0, 4096);  // a kernel wrote it; the next taker must not see that
  pool.release(p, cap);
  auto* q = static_cast<unsigned char*>(pool.acquire(4096, &cap));
  ASSERT_EQ(q, p);
  for (size_t i = 0; i < 4096; ++i) ASSERT_EQ(q[i], 0xFF) << i;
  pool.release(q, cap);
}

}  // namespace
}  // namespace mk::codegen::cpu
