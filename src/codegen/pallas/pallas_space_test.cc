// The declared Pallas spaces hold only blocks a TPU accepts: every point of every kernel's space
// gives BlockSpecs whose last two dims are multiples of (8,128) or whole, and blocks + double
// buffers + accumulator within the target's VMEM. Checked over the whole cartesian space.
#include "codegen/pallas/pallas_space.h"

#include <gtest/gtest.h>

#include <functional>

#include "codegen/pallas/pallas_test_util.h"

namespace mk::codegen::pallas {
namespace {

// Whether a block of `block` dims is legal for an array of `dims` (the (8,128) rule); the
// message names what is not.
::testing::AssertionResult LegalBlock(const std::vector<int64_t>& dims,
                                      const std::vector<int64_t>& block) {
  const size_t r = dims.size();
  if (r >= 1 && block[r - 1] != dims[r - 1] && block[r - 1] % 128 != 0) {
    return ::testing::AssertionFailure() << "last dim block " << block[r - 1] << " of " << dims[r - 1];
  }
  if (r >= 2 && block[r - 2] != dims[r - 2] && block[r - 2] % 8 != 0) {
    return ::testing::AssertionFailure() << "second-to-last block " << block[r - 2] << " of " << dims[r - 2];
  }
  for (size_t d = 0; d < r; ++d) {
    if (dims[d] % block[d] != 0) return ::testing::AssertionFailure() << "block does not divide";
  }
  return ::testing::AssertionSuccess();
}

// Calls fn on every schedule of `space`.
void ForEachPoint(const space::KernelSpace& space, const std::function<void(const space::Schedule&)>& fn) {
  std::vector<size_t> at(space.params.size(), 0);
  while (true) {
    space::Schedule s;
    for (size_t p = 0; p < at.size(); ++p) s.values[space.params[p].name] = space.params[p].values[at[p]];
    fn(s);
    size_t p = 0;
    while (p < at.size() && ++at[p] == space.params[p].values.size()) at[p++] = 0;
    if (p == at.size()) return;
  }
}

constexpr char kShapes[] = R"(
HloModule shapes
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = bf16[4,384,1024] parameter(0)
  w = bf16[1024,2048] parameter(1)
  bias = bf16[2048] parameter(2)
  d = bf16[4,384,2048] dot(x, w), lhs_contracting_dims={2}, rhs_contracting_dims={0}
  bb = bf16[4,384,2048] broadcast(bias), dimensions={2}
  y = bf16[4,384,2048] add(d, bb)
  q = f32[8,64,512] parameter(3)
  k = f32[8,512,256] parameter(4)
  s = f32[8,64,256] dot(q, k), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  r = f32[1000,384] parameter(5)
  zero = f32[] constant(0)
  rs = f32[1000] reduce(r, zero), dimensions={1}, to_apply=add
  e = f32[4096,1024] parameter(6)
  ee = f32[4096,1024] exponential(e)
  ROOT out = (bf16[4,384,2048], f32[8,64,256], f32[1000], f32[4096,1024]) tuple(y, s, rs, ee)
}
)";

void CheckEveryPoint(const target::Target& t, int* points, int* pallas_kernels) {
  auto m = testing::Parse(kShapes);
  ASSERT_NE(m, nullptr);
  auto plan = analysis::PlanFusion(*m);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  for (const auto& k : plan->kernels) {
    KernelDecision d = Decide(k, t);
    if (!d.plan.pallas) continue;
    ++*pallas_kernels;
    for (const auto& p : d.space.params) {
      EXPECT_TRUE(std::find(p.values.begin(), p.values.end(), p.initial) != p.values.end()) << p.name;
    }
    ForEachPoint(d.space, [&](const space::Schedule& s) {
      ++*points;
      auto blocks = AxisBlocks(d.plan, s);
      ASSERT_TRUE(blocks.ok()) << blocks.status().ToString();
      EXPECT_LE(VmemBytes(d.plan, *blocks), VmemBudget(t)) << k.name;
      for (const auto* v : d.plan.call_inputs) {
        EXPECT_TRUE(LegalBlock(v->shape.dims(), BlockDims(v->shape.dims(), d.plan.assign.at(v), *blocks)))
            << k.name << " input %" << v->name;
      }
      for (const auto* v : d.plan.call_outputs) {
        EXPECT_TRUE(LegalBlock(v->shape.dims(), BlockDims(v->shape.dims(), d.plan.assign.at(v), *blocks)))
            << k.name << " output %" << v->name;
      }
      if (d.plan.dot) {
        const int64_t bm = (*blocks)[static_cast<size_t>(d.plan.axis_m)];
        const int64_t bn = (*blocks)[static_cast<size_t>(d.plan.axis_n)];
        const int64_t bk = (*blocks)[static_cast<size_t>(d.plan.axis_k)];
        const auto& lc = d.plan.lhs_canon;
        const auto& rc = d.plan.rhs_canon;
        EXPECT_TRUE(LegalBlock({lc[lc.size() - 2], lc.back()}, {bm, bk})) << k.name << " lhs";
        EXPECT_TRUE(LegalBlock({rc[rc.size() - 2], rc.back()}, {bk, bn})) << k.name << " rhs";
      }
    });
  }
}

TEST(PallasSpaceTest, EveryPointIsTileLegalAndFitsVmem) {
  int points = 0, kernels = 0;
  CheckEveryPoint(testing::TpuV5e(), &points, &kernels);
  EXPECT_EQ(kernels, 4);
  EXPECT_GT(points, 50);
}

TEST(PallasSpaceTest, ASmallVmemShrinksTheSpaceInsteadOfAdmittingOverflows) {
  int big_points = 0, big_kernels = 0, small_points = 0, small_kernels = 0;
  CheckEveryPoint(testing::TpuV5e(), &big_points, &big_kernels);
  CheckEveryPoint(testing::TpuV5e(int64_t{4} << 20), &small_points, &small_kernels);
  EXPECT_GT(small_kernels, 0);
  EXPECT_LT(small_points, big_points);
}

// A norm's row block is held by its body's values too (Mosaic keeps block-sized values that do
// not fit the vector registers in VMEM): the count covers the values live at once, not just the
// double-buffered blocks. Here x*x, the broadcast of the scale and the product are row blocks;
// x and x*x are dead once the sum is taken, so at most two row blocks of values live together
// (the broadcast and the product), besides the loaded input.
TEST(PallasSpaceTest, TheBodysLiveValuesCountTowardsVmem) {
  auto m = testing::Parse(R"(
HloModule norm
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[256,4096] parameter(0)
  sq = f32[256,4096] multiply(x, x)
  zero = f32[] constant(0)
  ss = f32[256] reduce(sq, zero), dimensions={1}, to_apply=add
  r = f32[256] rsqrt(ss)
  rb = f32[256,4096] broadcast(r), dimensions={0}
  ROOT y = f32[256,4096] multiply(x, rb)
}
)");
  ASSERT_NE(m, nullptr);
  auto fusion = analysis::PlanFusion(*m);
  ASSERT_TRUE(fusion.ok()) << fusion.status().ToString();
  ASSERT_EQ(fusion->kernels.size(), 1u);
  KernelDecision d = Decide(fusion->kernels[0], testing::TpuV5e());
  ASSERT_TRUE(d.plan.pallas) << d.plan.glue_reason;
  ASSERT_EQ(d.plan.axes.size(), 1u);
  const int64_t rows = 8;
  const int64_t row_block = rows * 4096 * 4;  // 128 KiB
  const int64_t vmem = VmemBytes(d.plan, {rows});
  // The double-buffered input and output blocks alone are 4 row blocks; the body adds its
  // largest set of live values: x*x (with x's loaded block), then the broadcast and the product.
  EXPECT_GE(vmem, 4 * row_block + 2 * row_block);
  // ... but not every value at once: the values die after their last use.
  EXPECT_LT(vmem, 4 * row_block + 4 * row_block);
}

TEST(PallasSpaceTest, ContractionTilesFollowTheMxuSide) {
  auto m = testing::Parse(kShapes);
  ASSERT_NE(m, nullptr);
  auto plan = analysis::PlanFusion(*m);
  ASSERT_TRUE(plan.ok());
  target::Target v6e = testing::TpuV5e();
  v6e.name = "tpu-v6e";
  v6e.mxu_dim = 256;
  int checked = 0;
  bool saw_128_on_v5e = false;
  for (const auto& k : plan->kernels) {
    KernelDecision d6 = Decide(k, v6e);
    KernelDecision d5 = Decide(k, testing::TpuV5e());
    if (!d6.plan.dot) continue;
    for (const auto& p : d6.space.params) {
      if (p.name != "bn" && p.name != "bk") continue;
      const int64_t extent = d6.plan.axes[static_cast<size_t>(p.name == "bn" ? d6.plan.axis_n : d6.plan.axis_k)].extent;
      for (int64_t v : p.values) {
        EXPECT_TRUE(v % 256 == 0 || v == extent) << k.name << " " << p.name << "=" << v;
        ++checked;
      }
    }
    for (const auto& p : d5.space.params) {
      if (p.name == "bn" || p.name == "bk") {
        saw_128_on_v5e |= std::find(p.values.begin(), p.values.end(), 128) != p.values.end();
      }
    }
  }
  EXPECT_GT(checked, 4);
  EXPECT_TRUE(saw_128_on_v5e);
}

TEST(PallasSpaceTest, AnIllegalScheduleIsRefusedByEmit) {
  auto m = testing::Parse(R"(
HloModule one
ENTRY main {
  a = f32[64,256] parameter(0)
  ROOT e = f32[64,256] exponential(a)
}
)");
  ASSERT_NE(m, nullptr);
  auto plan = analysis::PlanFusion(*m);
  ASSERT_TRUE(plan.ok());
  const auto t = testing::TpuV5e();
  space::Candidate c = testing::CandidateFor(*plan, t);
  c.kernels[0].values["block_rows"] = 4;  // not a multiple of 8
  auto impl = PallasEmitter().Emit(*plan, c, t);
  ASSERT_FALSE(impl.ok());
  EXPECT_NE(impl.status().message().find("block_rows=4"), std::string::npos) << impl.status().ToString();
}

}  // namespace
}  // namespace mk::codegen::pallas
