#include "modes/search/lower_bound.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace mk::modes::search {
namespace {

// One 16.8 MFLOP GEMM of depth 256 on 2 cores at 1.6e11 FLOP/s together, 4e10 bytes/s.
LowerBound Gemm(int64_t depth = 256) {
  return LowerBound({{16'777'216, 700'000, false, depth}}, MachineRates{1.6e11, 0, 4e10, 2});
}

std::map<std::string, int64_t> Tile(int64_t mr, int64_t nr, int64_t kc) {
  return {{"gemm_blocked", 1}, {"inner", 0}, {"mr", mr}, {"nr", nr}, {"kc", kc}, {"threads", 1}};
}

TEST(LowerBoundTest, RegisterTileChainsCountAccumulatorsAndTheOverlappedCalls) {
  // 1 x 8: one accumulator; a 256-deep slice of 3-instruction steps leaves nothing to overlap.
  EXPECT_EQ(LowerBound::RegisterTileChains(1, 8, 256), 1);
  // 2 x 16: 4 accumulators, 8 instructions a step; 256 deep overlaps nothing, 32 deep overlaps
  // 512 / (32 * 8) = 2 more calls.
  EXPECT_EQ(LowerBound::RegisterTileChains(2, 16, 256), 4);
  EXPECT_EQ(LowerBound::RegisterTileChains(2, 16, 32), LowerBound::kChainsForPeak);
  // 6 x 16: 12 accumulators, more than the peak needs.
  EXPECT_EQ(LowerBound::RegisterTileChains(6, 16, 256), LowerBound::kChainsForPeak);
  // A partial vector is a whole accumulator.
  EXPECT_EQ(LowerBound::RegisterTileChains(1, 12, 256), 2);
}

TEST(LowerBoundTest, ANarrowRegisterTileRaisesTheComputeBound) {
  const LowerBound b = Gemm();
  // One thread of two with the turbo headroom: 1e11 FLOP/s; a wide tile reaches it.
  const double wide = b.Kernel(0, Tile(6, 16, 256));
  EXPECT_DOUBLE_EQ(wide, 16'777'216 / 1e11);
  // 1 x 8 at 256 deep: 1 chain of the 6 the peak needs.
  EXPECT_DOUBLE_EQ(b.Kernel(0, Tile(1, 8, 256)), 6 * wide);
  // The same tile with 32-deep slices: the window overlaps 5 more calls, and the bound is back.
  EXPECT_DOUBLE_EQ(b.Kernel(0, Tile(1, 8, 32)), wide);
  // A slice is never deeper than K: K 40 with kc 256 is one 40-deep slice, whose window holds
  // 4 more calls (5 chains of 6).
  const LowerBound shallow = Gemm(40);
  EXPECT_NEAR(shallow.Kernel(0, Tile(1, 8, 256)), wide * 6 / 5, wide * 1e-12);
  // The last slice holds the remainder: kc 32 leaves an 8-deep slice, whose calls overlap.
  EXPECT_DOUBLE_EQ(shallow.Kernel(0, Tile(1, 8, 32)), wide);
}

TEST(LowerBoundTest, TheTileRuleWaitsForEveryParameterThatDecidesIt) {
  const LowerBound b = Gemm();
  const double loose = b.Kernel(0, {{"threads", 1}});
  for (const char* free : {"gemm_blocked", "inner", "mr", "nr", "kc"}) {
    auto fixed = Tile(1, 8, 256);
    fixed.erase(free);
    EXPECT_DOUBLE_EQ(b.Kernel(0, fixed), loose) << "free " << free;
  }
  // Another form of the kernel: the inner-product form, AMX tiles, the unblocked loop nest.
  for (auto [name, value] : std::vector<std::pair<std::string, int64_t>>{
           {"inner", 1}, {"amx", 1}, {"gemm_blocked", 0}}) {
    auto fixed = Tile(1, 8, 256);
    fixed[name] = value;
    EXPECT_DOUBLE_EQ(b.Kernel(0, fixed), loose) << name << "=" << value;
  }
  // Not a register-tile GEMM (no depth), or a bf16 kernel: no rule.
  const LowerBound other({{16'777'216, 700'000, false, 0}}, MachineRates{1.6e11, 0, 4e10, 2});
  EXPECT_DOUBLE_EQ(other.Kernel(0, Tile(1, 8, 256)), loose);
  const LowerBound bf16({{16'777'216, 700'000, true, 256}}, MachineRates{1.6e11, 0, 4e10, 2});
  EXPECT_DOUBLE_EQ(bf16.Kernel(0, Tile(1, 8, 256)), loose);
}

// Admissible as a heuristic needs: fixing one more parameter never lowers the bound, so a node's
// bound is at most every completion's.
TEST(LowerBoundTest, FixingMoreNeverLowersTheBound) {
  const LowerBound b = Gemm();
  const std::vector<std::pair<std::string, std::vector<int64_t>>> params = {
      {"threads", {1, 2}}, {"mr", {1, 2, 6}}, {"nr", {8, 16, 24}}, {"kc", {32, 256}},
      {"inner", {0, 1}},   {"gemm_blocked", {0, 1}}};
  // Every point, and every node on the way to it (parameters fixed in the list's order).
  std::vector<size_t> idx(params.size(), 0);
  for (;;) {
    std::map<std::string, int64_t> fixed;
    double previous = b.Kernel(0, fixed);
    for (size_t i = 0; i < params.size(); ++i) {
      fixed[params[i].first] = params[i].second[idx[i]];
      const double now = b.Kernel(0, fixed);
      EXPECT_GE(now, previous) << "fixing " << params[i].first;
      previous = now;
    }
    size_t i = 0;
    while (i < idx.size() && ++idx[i] == params[i].second.size()) idx[i++] = 0;
    if (i == idx.size()) break;
  }
}

}  // namespace
}  // namespace mk::modes::search
