#include "codegen/cpu/flat_index.h"

#include <gtest/gtest.h>

#include <string>

#include "hlo/parser.h"

namespace mk::codegen::cpu {
namespace {

// Values over [4,6,8] (dims 1 and 2 are the pair asked about), built from parameters, which
// load dense arrays, in the ways a fused kernel's lambdas index them.
const char* kModule = R"(
HloModule flat
ENTRY main {
  x = f32[4,6,8] parameter(0)
  col = f32[8] parameter(1)
  row = f32[6] parameter(2)
  batch = f32[4] parameter(3)
  plane = f32[6,8] parameter(4)
  xt = f32[6,8,4] parameter(5)
  wide = f32[4,6,10] parameter(6)
  tall = f32[4,8,8] parameter(7)
  merged = f32[4,48] parameter(8)
  x1 = f32[4,1,6,8] parameter(9)
  two = f32[] constant(2)
  twob = f32[4,6,8] broadcast(two), dimensions={}
  chain = f32[4,6,8] tanh(x)
  scaled = f32[4,6,8] multiply(chain, twob)
  colb = f32[4,6,8] broadcast(col), dimensions={2}
  by_col = f32[4,6,8] add(x, colb)
  rowb = f32[4,6,8] broadcast(row), dimensions={1}
  by_row = f32[4,6,8] add(x, rowb)
  batchb = f32[4,6,8] broadcast(batch), dimensions={0}
  by_batch = f32[4,6,8] add(x, batchb)
  planeb = f32[4,6,8] broadcast(plane), dimensions={1,2}
  by_plane = f32[4,6,8] add(x, planeb)
  moved = f32[4,6,8] transpose(xt), dimensions={2,0,1}
  xs = f32[4,8,6] transpose(x), dimensions={0,2,1}
  swapped = f32[4,6,8] transpose(xs), dimensions={0,2,1}
  cols = f32[4,6,8] slice(wide), slice={[0:4], [0:6], [2:10]}
  rows = f32[4,6,8] slice(tall), slice={[0:4], [1:7], [0:8]}
  neg = f32[4,48] negate(merged)
  unmerged = f32[4,6,8] reshape(neg)
  neg1 = f32[4,1,6,8] negate(x1)
  squeezed = f32[4,6,8] reshape(neg1)
  i = f32[4,6,8] iota(), iota_dimension=2
  ROOT out = (f32[4,6,8], f32[4,6,8], f32[4,6,8], f32[4,6,8], f32[4,6,8], f32[4,6,8], f32[4,6,8], f32[4,6,8], f32[4,6,8], f32[4,6,8], f32[4,6,8], f32[4,6,8]) tuple(scaled, by_col, by_row, by_batch, by_plane, moved, swapped, cols, rows, unmerged, squeezed, i)
}
)";

class FlatIndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = hlo::ParseModule(kModule, "flat.hlo");
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    module_ = std::move(*m);
  }
  bool Flat(const std::string& name) {
    for (const auto& inst : module_->entry()->instructions()) {
      if (inst->name == name) {
        return FlatOverDims(*inst, 1, 2, [](const hlo::Instruction& i) {
          return i.opcode == hlo::Opcode::kParameter;
        });
      }
    }
    ADD_FAILURE() << "no " << name;
    return false;
  }
  std::unique_ptr<hlo::Module> module_;
};

TEST_F(FlatIndexTest, DenseArraysAndTheirElementwiseChainsAreFlat) {
  EXPECT_TRUE(Flat("x"));
  EXPECT_TRUE(Flat("scaled"));    // tanh(x) times a broadcast scalar
  EXPECT_TRUE(Flat("by_batch"));  // the same along both dims
  EXPECT_TRUE(Flat("by_plane"));  // a [6,8] array over both dims, in order
}

TEST_F(FlatIndexTest, ValuesAlongOneOfTheDimsAreNot) {
  // A column past 8 would read col[8+]: the bias of the next row's column is col[c - 8].
  EXPECT_FALSE(Flat("by_col"));
  EXPECT_FALSE(Flat("by_row"));
  EXPECT_FALSE(Flat("i"));  // iota: its value is the column itself
}

TEST_F(FlatIndexTest, IndexMovesKeepFlatnessOnlyWhereTheDimsStayInOrder) {
  EXPECT_TRUE(Flat("moved"));     // [6,8,4] -> [4,6,8]: dims 1, 2 are the operand's 0, 1
  EXPECT_FALSE(Flat("swapped"));  // through [4,8,6]: the operand's dims 2, 1
  EXPECT_FALSE(Flat("cols"));     // 8 of 10 columns: rows are 10 apart in the operand
  EXPECT_TRUE(Flat("rows"));      // 6 of 8 rows, whole columns: an offset of whole rows
  EXPECT_TRUE(Flat("squeezed"));  // a unit dim removed: indices pass through
  EXPECT_FALSE(Flat("unmerged"));  // [4,48] -> [4,6,8] of a computed value: div/mod per dim
}

}  // namespace
}  // namespace mk::codegen::cpu
