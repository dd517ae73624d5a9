// gather / scatter in the forms JAX emits. Expected values are worked out by hand from the
// inputs (x = iota 0..11 as f32[4,3] unless stated otherwise).
#include <gtest/gtest.h>

#include <limits>

#include "interp/test_util.h"

namespace mk::interp {
namespace {

using hlo::DType;
using testing::MakeLiteral;
using testing::TryRun;

// gtest's Test::Run hides a plain `Run` inside test bodies.
hlo::Literal Eval(const std::string& text, const std::vector<hlo::Literal>& args) {
  return testing::Run(text, args);
}
using testing::Values;

hlo::Literal Iota43() {
  return MakeLiteral(DType::kF32, {4, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
}

// x[idx] with idx = [2, 0]: rows 2 and 0.
TEST(GatherTest, RowsLikeXIdx) {
  const char* hlo = R"(
HloModule m
ENTRY main {
  x = f32[4,3] parameter(0)
  i = s32[2,1] parameter(1)
  ROOT g = f32[2,3] gather(x, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}
})";
  auto out = Eval(hlo, {Iota43(), MakeLiteral(DType::kS32, {2, 1}, {2, 0})});
  EXPECT_EQ(Values(out), (std::vector<double>{6, 7, 8, 0, 1, 2}));
}

// x[:, idx] with idx = [2, 0]: columns 2 and 0, offset dim first.
TEST(GatherTest, ColumnsLikeXColonIdx) {
  const char* hlo = R"(
HloModule m
ENTRY main {
  x = f32[4,3] parameter(0)
  i = s32[2,1] parameter(1)
  ROOT g = f32[4,2] gather(x, i), offset_dims={0}, collapsed_slice_dims={1}, start_index_map={1}, index_vector_dim=1, slice_sizes={4,1}
})";
  auto out = Eval(hlo, {Iota43(), MakeLiteral(DType::kS32, {2, 1}, {2, 0})});
  EXPECT_EQ(Values(out), (std::vector<double>{2, 0, 5, 3, 8, 6, 11, 9}));
}

// The implicit trailing index vector (index_vector_dim == rank of indices) gives the same rows.
TEST(GatherTest, ImplicitIndexVectorDim) {
  const char* hlo = R"(
HloModule m
ENTRY main {
  x = f32[4,3] parameter(0)
  i = s32[2] parameter(1)
  ROOT g = f32[2,3] gather(x, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}
})";
  auto out = Eval(hlo, {Iota43(), MakeLiteral(DType::kS32, {2}, {3, 1})});
  EXPECT_EQ(Values(out), (std::vector<double>{9, 10, 11, 3, 4, 5}));
}

// jnp.take_along_axis(x, idx, axis=1): operand dim 0 and indices dim 0 are batching dims.
TEST(GatherTest, TakeAlongAxisWithBatchingDims) {
  const char* hlo = R"(
HloModule m
ENTRY main {
  x = f32[4,3] parameter(0)
  i = s32[4,2,1] parameter(1)
  ROOT g = f32[4,2] gather(x, i), offset_dims={}, collapsed_slice_dims={1}, start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, index_vector_dim=2, slice_sizes={1,1}
})";
  auto idx = MakeLiteral(DType::kS32, {4, 2, 1}, {0, 2, 1, 1, 2, 0, 0, 0});
  auto out = Eval(hlo, {Iota43(), idx});
  // Row r picks x[r, idx[r, j]]: {0,2}, {4,4}, {8,6}, {9,9}.
  EXPECT_EQ(Values(out), (std::vector<double>{0, 2, 4, 4, 8, 6, 9, 9}));
}

// vmap(lambda x, i: x[i]): batching dim with a window (offset) dim of size 1.
TEST(GatherTest, VmappedIndexKeepsOffsetDim) {
  const char* hlo = R"(
HloModule m
ENTRY main {
  x = f32[4,3] parameter(0)
  i = s32[4,1] parameter(1)
  ROOT g = f32[4,1] gather(x, i), offset_dims={1}, collapsed_slice_dims={}, start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, index_vector_dim=1, slice_sizes={1,1}, indices_are_sorted=true
})";
  auto out = Eval(hlo, {Iota43(), MakeLiteral(DType::kS32, {4, 1}, {2, 0, 1, 1})});
  EXPECT_EQ(Values(out), (std::vector<double>{2, 3, 7, 10}));
}

// Start indices are clamped so that the slice stays inside the operand: a 2x2 window starting
// at (5, -3) in a 4x3 operand starts at (2, 0).
TEST(GatherTest, OutOfBoundsStartIsClamped) {
  const char* hlo = R"(
HloModule m
ENTRY main {
  x = f32[4,3] parameter(0)
  i = s64[2,2] parameter(1)
  ROOT g = f32[2,2,2] gather(x, i), offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={0,1}, index_vector_dim=1, slice_sizes={2,2}
})";
  auto out = Eval(hlo, {Iota43(), MakeLiteral(DType::kS64, {2, 2}, {5, -3, 1, 1})});
  // First window at (2,0): {6,7},{9,10}. Second at (1,1): {4,5},{7,8}.
  EXPECT_EQ(Values(out), (std::vector<double>{6, 7, 9, 10, 4, 5, 7, 8}));
}

// index_vector_dim = 0: the index vectors run down the columns of the indices array.
TEST(GatherTest, IndexVectorDimZeroAndStartIndexMapPermuted) {
  const char* hlo = R"(
HloModule m
ENTRY main {
  x = f32[4,3] parameter(0)
  i = s32[2,3] parameter(1)
  ROOT g = f32[3] gather(x, i), offset_dims={}, collapsed_slice_dims={0,1}, start_index_map={1,0}, index_vector_dim=0, slice_sizes={1,1}
})";
  // Vectors (col, row): (0,3) -> x[3,0]=9, (2,1) -> x[1,2]=5, (1,0) -> x[0,1]=1.
  auto out = Eval(hlo, {Iota43(), MakeLiteral(DType::kS32, {2, 3}, {0, 2, 1, 3, 1, 0})});
  EXPECT_EQ(Values(out), (std::vector<double>{9, 5, 1}));
}

TEST(GatherTest, Bf16ValuesAreCopiedExactly) {
  const char* hlo = R"(
HloModule m
ENTRY main {
  x = bf16[3] parameter(0)
  i = u32[2,1] parameter(1)
  ROOT g = bf16[2] gather(x, i), offset_dims={}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1}
})";
  auto out = Eval(hlo, {MakeLiteral(DType::kBF16, {3}, {1.5, -2.25, 3.0}),
                       MakeLiteral(DType::kU32, {2, 1}, {1, 7})});
  EXPECT_EQ(Values(out), (std::vector<double>{-2.25, 3.0}));  // 7 clamps to 2
}

TEST(GatherTest, FloatIndicesAreAnError) {
  const char* hlo = R"(
HloModule m
ENTRY main {
  x = f32[4,3] parameter(0)
  i = f32[2,1] parameter(1)
  ROOT g = f32[2,3] gather(x, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}
})";
  // Indices of the wrong element type (f32) must be rejected, not crash.
  auto r = TryRun(hlo, {Iota43(), MakeLiteral(DType::kF32, {2, 1}, {0, 1})});
  EXPECT_FALSE(r.ok());
}

// ---------------------------------------------------------------------------------------------

const char* kScatterRowsSet = R"(
HloModule m
set_second {
  a = f32[] parameter(0)
  ROOT b = f32[] parameter(1)
}
ENTRY main {
  x = f32[4,3] parameter(0)
  i = s32[2,1] parameter(1)
  u = f32[2,3] parameter(2)
  ROOT s = f32[4,3] scatter(x, i, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=set_second
})";

// x.at[[3, 0]].set(u)
TEST(ScatterTest, SetRows) {
  auto out = Eval(kScatterRowsSet, {Iota43(), MakeLiteral(DType::kS32, {2, 1}, {3, 0}),
                                   MakeLiteral(DType::kF32, {2, 3}, {-1, -2, -3, -4, -5, -6})});
  EXPECT_EQ(Values(out), (std::vector<double>{-4, -5, -6, 3, 4, 5, 6, 7, 8, -1, -2, -3}));
}

// An index whose row window would leave the operand is skipped entirely (XLA), not clamped.
TEST(ScatterTest, OutOfBoundsUpdatesAreSkipped) {
  auto out = Eval(kScatterRowsSet, {Iota43(), MakeLiteral(DType::kS32, {2, 1}, {4, -1}),
                                   MakeLiteral(DType::kF32, {2, 3}, {-1, -2, -3, -4, -5, -6})});
  EXPECT_EQ(Values(out), (std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
}

// Extreme index values must neither overflow nor wrap into range: skipped (scatter) or
// clamped (gather).
TEST(ScatterTest, ExtremeIndicesAreSkippedOrClamped) {
  std::string text = kScatterRowsSet;
  text.replace(text.find("s32[2,1]"), 8, "s64[2,1]");
  hlo::Literal idx(hlo::Shape(DType::kS64, {2, 1}));
  idx.SetInt64(0, std::numeric_limits<int64_t>::max());
  idx.SetInt64(1, std::numeric_limits<int64_t>::min());
  auto out = Eval(text, {Iota43(), idx, MakeLiteral(DType::kF32, {2, 3}, {-1, -2, -3, -4, -5, -6})});
  EXPECT_EQ(Values(out), (std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));

  const char* gather = R"(
HloModule m
ENTRY main {
  x = f32[4,3] parameter(0)
  i = u64[2,1] parameter(1)
  ROOT g = f32[2,3] gather(x, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}
})";
  hlo::Literal uidx(hlo::Shape(DType::kU64, {2, 1}));
  uidx.SetUInt64(0, std::numeric_limits<uint64_t>::max());
  uidx.SetUInt64(1, 1);
  EXPECT_EQ(Values(Eval(gather, {Iota43(), uidx})), (std::vector<double>{9, 10, 11, 3, 4, 5}));
}

// A 2-wide column window that starts at column 2 of 3 does not fit: skipped as a whole, while
// the one starting at column 1 is applied.
TEST(ScatterTest, PartiallyOutOfBoundsWindowIsSkipped) {
  const char* hlo = R"(
HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
ENTRY main {
  x = f32[4,3] parameter(0)
  i = s32[2,2] parameter(1)
  u = f32[2,1,2] parameter(2)
  ROOT s = f32[4,3] scatter(x, i, u), update_window_dims={1,2}, inserted_window_dims={}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=1, to_apply=add
})";
  auto out = Eval(hlo, {Iota43(), MakeLiteral(DType::kS32, {2, 2}, {0, 2, 3, 1}),
                       MakeLiteral(DType::kF32, {2, 1, 2}, {100, 200, 1000, 2000})});
  EXPECT_EQ(Values(out), (std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 1010, 2011}));
}

// x.at[[1, 1, 3]].add(1): duplicate indices accumulate.
TEST(ScatterTest, AddAccumulatesDuplicates) {
  const char* hlo = R"(
HloModule m
region_0.1 {
  p0 = f32[] parameter(0)
  p1 = f32[] parameter(1)
  ROOT add.2 = f32[] add(p0, p1)
}
ENTRY main {
  x = f32[4,3] parameter(0)
  i = s32[3,1] parameter(1)
  one = f32[] constant(1)
  u = f32[3,3] broadcast(one), dimensions={}
  ROOT s = f32[4,3] scatter(x, i, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=region_0.1
})";
  auto out = Eval(hlo, {Iota43(), MakeLiteral(DType::kS32, {3, 1}, {1, 1, 3})});
  EXPECT_EQ(Values(out), (std::vector<double>{0, 1, 2, 5, 6, 7, 6, 7, 8, 10, 11, 12}));
}

// Scalar updates into a 1-D operand with max / min / multiply combiners (operands swapped in
// the computation: still recognized), and s32 wraparound for multiply.
TEST(ScatterTest, ElementCombiners) {
  const char* tmpl = R"(
HloModule m
comb {
  p0 = s32[] parameter(0)
  p1 = s32[] parameter(1)
  ROOT r = s32[] OP(p1, p0)
}
ENTRY main {
  x = s32[4] parameter(0)
  i = s32[3] parameter(1)
  u = s32[3] parameter(2)
  ROOT s = s32[4] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=comb
})";
  auto run = [&](const std::string& op) {
    std::string text = tmpl;
    text.replace(text.find("OP"), 2, op);
    return Values(Eval(text, {MakeLiteral(DType::kS32, {4}, {5, 6, 7, 65536}),
                             MakeLiteral(DType::kS32, {3}, {0, 3, 0}),
                             MakeLiteral(DType::kS32, {3}, {9, 65536, -2})}));
  };
  EXPECT_EQ(run("maximum"), (std::vector<double>{9, 6, 7, 65536}));
  EXPECT_EQ(run("minimum"), (std::vector<double>{-2, 6, 7, 65536}));
  // 5*9*-2 = -90; 65536*65536 = 2^32 wraps to 0.
  EXPECT_EQ(run("multiply"), (std::vector<double>{-90, 6, 7, 0}));
  // subtract is not a fast-path combiner: the generic path computes update - old.
  // x[0]: 9-5 = 4, then -2-4 = -6; x[3]: 65536-65536 = 0.
  EXPECT_EQ(run("subtract"), (std::vector<double>{-6, 6, 7, 0}));
}

// bf16 add computes in f32 and rounds once per update: 256 + 1 rounds back to 256 in bf16
// (8 significant bits), every time.
TEST(ScatterTest, Bf16AddRoundsEachStep) {
  const char* hlo = R"(
HloModule m
add {
  a = bf16[] parameter(0)
  b = bf16[] parameter(1)
  ROOT r = bf16[] add(a, b)
}
ENTRY main {
  x = bf16[1] parameter(0)
  i = s32[4,1] parameter(1)
  u = bf16[4] parameter(2)
  ROOT s = bf16[1] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
})";
  auto out = Eval(hlo, {MakeLiteral(DType::kBF16, {1}, {256}),
                       MakeLiteral(DType::kS32, {4, 1}, {0, 0, 0, 0}),
                       MakeLiteral(DType::kBF16, {4}, {1, 1, 1, 1})});
  EXPECT_EQ(Values(out), (std::vector<double>{256}));
}

// Two operands scattered together with a tuple-returning combiner (generic path):
// (a0, a1), (b0, b1) -> (a0 + b0, max(a1, b1)).
TEST(ScatterTest, VariadicScatter) {
  const char* hlo = R"(
HloModule m
comb {
  a0 = f32[] parameter(0)
  a1 = s32[] parameter(1)
  b0 = f32[] parameter(2)
  b1 = s32[] parameter(3)
  s = f32[] add(a0, b0)
  m = s32[] maximum(a1, b1)
  ROOT t = (f32[], s32[]) tuple(s, m)
}
ENTRY main {
  x = f32[3] parameter(0)
  y = s32[3] parameter(1)
  i = s32[3,1] parameter(2)
  u = f32[3] parameter(3)
  v = s32[3] parameter(4)
  ROOT r = (f32[3], s32[3]) scatter(x, y, i, u, v), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=comb
})";
  auto out = Eval(hlo, {MakeLiteral(DType::kF32, {3}, {1, 2, 3}),
                       MakeLiteral(DType::kS32, {3}, {10, 20, 30}),
                       MakeLiteral(DType::kS32, {3, 1}, {2, 0, 2}),
                       MakeLiteral(DType::kF32, {3}, {0.5, 0.25, 4}),
                       MakeLiteral(DType::kS32, {3}, {5, 50, 35})});
  ASSERT_EQ(out.elements().size(), 2u);
  EXPECT_EQ(Values(out.elements()[0]), (std::vector<double>{1.25, 2, 7.5}));
  EXPECT_EQ(Values(out.elements()[1]), (std::vector<double>{50, 20, 35}));
}

// Scatter with batching dims (what vmap of x.at[i].set(v) gives): operand dim 0 is matched
// with indices dim 0.
TEST(ScatterTest, BatchingDims) {
  const char* hlo = R"(
HloModule m
set {
  a = f32[] parameter(0)
  ROOT b = f32[] parameter(1)
}
ENTRY main {
  x = f32[4,3] parameter(0)
  i = s32[4,1] parameter(1)
  u = f32[4] parameter(2)
  ROOT s = f32[4,3] scatter(x, i, u), update_window_dims={}, inserted_window_dims={1}, scatter_dims_to_operand_dims={1}, input_batching_dims={0}, scatter_indices_batching_dims={0}, index_vector_dim=1, to_apply=set
})";
  auto out = Eval(hlo, {Iota43(), MakeLiteral(DType::kS32, {4, 1}, {2, 0, 1, 5}),
                       MakeLiteral(DType::kF32, {4}, {-1, -2, -3, -4})});
  // Row 3's index 5 is out of bounds: skipped.
  EXPECT_EQ(Values(out), (std::vector<double>{0, 1, -1, -2, 4, 5, 6, -3, 8, 9, 10, 11}));
}

TEST(ScatterTest, CombinerErrorsPropagate) {
  const char* hlo = R"(
HloModule m
comb {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] custom-call(a, b), custom_call_target="nope"
}
ENTRY main {
  x = f32[2] parameter(0)
  i = s32[1,1] parameter(1)
  u = f32[1] parameter(2)
  ROOT s = f32[2] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=comb
})";
  auto r = TryRun(hlo, {MakeLiteral(DType::kF32, {2}, {1, 2}), MakeLiteral(DType::kS32, {1, 1}, {0}),
                        MakeLiteral(DType::kF32, {1}, {3})});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("nope"), std::string::npos) << r.status().ToString();
}

}  // namespace
}  // namespace mk::interp
