// Shape inference for contractions (dot, convolution), reductions, gather/scatter and sort, with
// expected shapes computed by hand from XLA's rules (see the comment above each expectation).
#include "hlo/verifier_test_util.h"

namespace mk::hlo {
namespace {

using testing::ExpectVerifyError;
using testing::VerifiedRootShape;

const char* kComputations = R"(%add_f32 {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}

%ge_f32 {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %c = pred[] compare(%x, %y), direction=GE
}

%argmax {
  %a = f32[] parameter(0)
  %ai = s32[] parameter(1)
  %b = f32[] parameter(2)
  %bi = s32[] parameter(3)
  %gt = pred[] compare(%a, %b), direction=GT
  %v = f32[] select(%gt, %a, %b)
  %i = s32[] select(%gt, %ai, %bi)
  ROOT %r = (f32[], s32[]) tuple(%v, %i)
}

%lt_pair {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %ai = s32[] parameter(2)
  %bi = s32[] parameter(3)
  ROOT %c = pred[] compare(%a, %b), direction=LT
}

)";

std::string Entry(const std::string& body) {
  return std::string("HloModule test\n\n") + kComputations + "ENTRY %main {\n" + body + "}\n";
}

// ---------------------------------------------------------------------------------------------
// dot

TEST(ShapeInferenceDot, Matmul) {
  EXPECT_EQ(VerifiedRootShape(Entry("  %a = f32[2,3] parameter(0)\n"
                                    "  %b = f32[3,4] parameter(1)\n"
                                    "  ROOT %d = f32[2,4] dot(%a, %b), lhs_contracting_dims={1}, "
                                    "rhs_contracting_dims={0}\n")),
            "f32[2,4]");
}

TEST(ShapeInferenceDot, BatchDimsComeFirstThenLhsThenRhsFreeDims) {
  EXPECT_EQ(VerifiedRootShape(Entry("  %a = f32[5,2,3] parameter(0)\n"
                                    "  %b = f32[5,3,4] parameter(1)\n"
                                    "  ROOT %d = f32[5,2,4] dot(%a, %b), lhs_batch_dims={0}, "
                                    "lhs_contracting_dims={2}, rhs_batch_dims={0}, "
                                    "rhs_contracting_dims={1}\n")),
            "f32[5,2,4]");
  // Batch dimension in the middle of both operands: batch 5, lhs free 2, rhs free 7.
  EXPECT_EQ(VerifiedRootShape(Entry("  %a = f32[2,5,3] parameter(0)\n"
                                    "  %b = f32[3,5,7] parameter(1)\n"
                                    "  ROOT %d = f32[5,2,7] dot(%a, %b), lhs_batch_dims={1}, "
                                    "lhs_contracting_dims={2}, rhs_batch_dims={1}, "
                                    "rhs_contracting_dims={0}\n")),
            "f32[5,2,7]");
  // No contraction: an outer product. Full contraction: a scalar.
  EXPECT_EQ(VerifiedRootShape(Entry("  %a = f32[2] parameter(0)\n"
                                    "  %b = f32[3] parameter(1)\n"
                                    "  ROOT %d = f32[2,3] dot(%a, %b)\n")),
            "f32[2,3]");
  EXPECT_EQ(VerifiedRootShape(Entry("  %a = f32[3] parameter(0)\n"
                                    "  ROOT %d = f32[] dot(%a, %a), lhs_contracting_dims={0}, "
                                    "rhs_contracting_dims={0}\n")),
            "f32[]");
}

TEST(ShapeInferenceDot, DeclaredAccumulationType) {
  EXPECT_EQ(VerifiedRootShape(Entry("  %a = bf16[2,3] parameter(0)\n"
                                    "  %b = bf16[3,4] parameter(1)\n"
                                    "  ROOT %d = f32[2,4] dot(%a, %b), lhs_contracting_dims={1}, "
                                    "rhs_contracting_dims={0}\n")),
            "f32[2,4]");
  EXPECT_EQ(VerifiedRootShape(Entry("  %a = s8[2,3] parameter(0)\n"
                                    "  %b = s8[3,4] parameter(1)\n"
                                    "  ROOT %d = s32[2,4] dot(%a, %b), lhs_contracting_dims={1}, "
                                    "rhs_contracting_dims={0}\n")),
            "s32[2,4]");
  // Integer results may not be narrower than the operands; floats may not become integers.
  ExpectVerifyError(Entry("  %a = s32[2,3] parameter(0)\n"
                          "  %b = s32[3,4] parameter(1)\n"
                          "  ROOT %bad = s8[2,4] dot(%a, %b), lhs_contracting_dims={1}, "
                          "rhs_contracting_dims={0}\n"),
                    "%bad =", "declared shape s8[2,4] does not match inferred s32[2,4]");
  ExpectVerifyError(Entry("  %a = f32[2,3] parameter(0)\n"
                          "  %b = f32[3,4] parameter(1)\n"
                          "  ROOT %bad = s32[2,4] dot(%a, %b), lhs_contracting_dims={1}, "
                          "rhs_contracting_dims={0}\n"),
                    "%bad =", "declared shape s32[2,4] does not match inferred f32[2,4]");
}

TEST(ShapeInferenceDot, Errors) {
  ExpectVerifyError(Entry("  %a = f32[2,3] parameter(0)\n"
                          "  %b = f32[4,5] parameter(1)\n"
                          "  ROOT %bad = f32[2,5] dot(%a, %b), lhs_contracting_dims={1}, "
                          "rhs_contracting_dims={0}\n"),
                    "%bad =", "contracting dimension sizes differ");
  ExpectVerifyError(Entry("  %a = f32[5,2,3] parameter(0)\n"
                          "  %b = f32[6,3,4] parameter(1)\n"
                          "  ROOT %bad = f32[5,2,4] dot(%a, %b), lhs_batch_dims={0}, "
                          "lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}\n"),
                    "%bad =", "batch dimension sizes differ");
  ExpectVerifyError(Entry("  %a = f32[2,3] parameter(0)\n"
                          "  %b = f32[3,4] parameter(1)\n"
                          "  ROOT %bad = f32[2,4] dot(%a, %b), lhs_contracting_dims={2}, "
                          "rhs_contracting_dims={0}\n"),
                    "%bad =", "lhs_contracting_dims={2} has dimension 2 out of range for rank 2");
}

// ---------------------------------------------------------------------------------------------
// convolution: output spatial = floor((dilated_in + lo + hi - dilated_window) / stride) + 1

std::string Conv(const std::string& lhs, const std::string& rhs, const std::string& out,
                 const std::string& attrs) {
  return Entry("  %x = " + lhs + " parameter(0)\n  %k = " + rhs + " parameter(1)\n  ROOT %conv = " +
               out + " convolution(%x, %k), " + attrs + "\n");
}

TEST(ShapeInferenceConvolution, SamePaddingAndStride) {
  // (8 + 2 - 3) / 1 + 1 = 8.
  EXPECT_EQ(VerifiedRootShape(Conv("f32[1,8,8,3]", "f32[3,3,3,16]", "f32[1,8,8,16]",
                                   "window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f")),
            "f32[1,8,8,16]");
  // (9 - 3) / 2 + 1 = 4.
  EXPECT_EQ(VerifiedRootShape(Conv("f32[1,9,9,3]", "f32[3,3,3,16]", "f32[1,4,4,16]",
                                   "window={size=3x3 stride=2x2}, dim_labels=b01f_01io->b01f")),
            "f32[1,4,4,16]");
  // NCHW / OIHW: (10 - 3) + 1 = 8.
  EXPECT_EQ(VerifiedRootShape(Conv("f32[2,3,10,10]", "f32[8,3,3,3]", "f32[2,8,8,8]",
                                   "window={size=3x3}, dim_labels=bf01_oi01->bf01")),
            "f32[2,8,8,8]");
  // 1-D: 10 - 3 + 1 = 8.
  EXPECT_EQ(VerifiedRootShape(Conv("f32[1,10,2]", "f32[3,2,4]", "f32[1,8,4]",
                                   "window={size=3}, dim_labels=b0f_0io->b0f")),
            "f32[1,8,4]");
}

TEST(ShapeInferenceConvolution, GroupedAndDepthwise) {
  // 4 input features = 2 kernel input features * 2 groups; 6 outputs divisible by 2.
  EXPECT_EQ(VerifiedRootShape(Conv("f32[2,8,8,4]", "f32[3,3,2,6]", "f32[2,6,6,6]",
                                   "window={size=3x3}, dim_labels=b01f_01io->b01f, "
                                   "feature_group_count=2")),
            "f32[2,6,6,6]");
  // Depthwise: feature_group_count == input features, channel multiplier 2.
  EXPECT_EQ(VerifiedRootShape(Conv("f32[1,8,8,4]", "f32[3,3,1,8]", "f32[1,8,8,8]",
                                   "window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, "
                                   "feature_group_count=4")),
            "f32[1,8,8,8]");
  // batch_group_count=2: output batch 4 / 2 = 2.
  EXPECT_EQ(VerifiedRootShape(Conv("f32[4,5,5,3]", "f32[3,3,3,8]", "f32[2,3,3,8]",
                                   "window={size=3x3}, dim_labels=b01f_01io->b01f, "
                                   "batch_group_count=2")),
            "f32[2,3,3,8]");
}

TEST(ShapeInferenceConvolution, Dilations) {
  // Transposed conv (lhs_dilation 2): dilated input (4-1)*2+1 = 7, + 2 + 2 - 3 + 1 = 9.
  EXPECT_EQ(VerifiedRootShape(Conv("f32[1,4,4,2]", "f32[3,3,2,5]", "f32[1,9,9,5]",
                                   "window={size=3x3 pad=2_2x2_2 lhs_dilate=2x2}, "
                                   "dim_labels=b01f_01io->b01f")),
            "f32[1,9,9,5]");
  // Atrous (rhs_dilation 2): dilated window (3-1)*2+1 = 5, 8 - 5 + 1 = 4.
  EXPECT_EQ(VerifiedRootShape(Conv("f32[1,8,8,3]", "f32[3,3,3,16]", "f32[1,4,4,16]",
                                   "window={size=3x3 rhs_dilate=2x2}, dim_labels=b01f_01io->b01f")),
            "f32[1,4,4,16]");
  EXPECT_EQ(VerifiedRootShape(Conv("bf16[1,8,8,3]", "bf16[1,1,3,16]", "f32[1,8,8,16]",
                                   "window={size=1x1}, dim_labels=b01f_01io->b01f")),
            "f32[1,8,8,16]");
}

TEST(ShapeInferenceConvolution, Errors) {
  ExpectVerifyError(Conv("f32[1,8,8,4]", "f32[3,3,3,16]", "f32[1,6,6,16]",
                         "window={size=3x3}, dim_labels=b01f_01io->b01f"),
                    "%conv =", "input features (4) must equal kernel input features (3) * "
                            "feature_group_count (1)");
  ExpectVerifyError(Conv("f32[1,8,8,4]", "f32[3,3,2,5]", "f32[1,6,6,5]",
                         "window={size=3x3}, dim_labels=b01f_01io->b01f, feature_group_count=2"),
                    "%conv =", "kernel output features (5) must be divisible by feature_group_count (2)");
  ExpectVerifyError(Conv("f32[1,8,8,3]", "f32[3,3,3,16]", "f32[1,7,7,16]",
                         "window={size=2x2}, dim_labels=b01f_01io->b01f"),
                    "%conv =", "window size 2 of spatial dimension 0 does not match kernel size 3");
  ExpectVerifyError(Conv("f32[1,8,8,3]", "f32[3,3,3,16]", "f32[1,7,7,16]",
                         "window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f"),
                    "%conv =", "declared shape f32[1,7,7,16] does not match inferred f32[1,8,8,16]");
}

// ---------------------------------------------------------------------------------------------
// reduce, reduce-window, select-and-scatter

TEST(ShapeInferenceReduce, SumAndArgmax) {
  EXPECT_EQ(VerifiedRootShape(Entry("  %a = f32[4,5] parameter(0)\n"
                                    "  %z = f32[] constant(0)\n"
                                    "  ROOT %r = f32[4] reduce(%a, %z), dimensions={1}, "
                                    "to_apply=%add_f32\n")),
            "f32[4]");
  EXPECT_EQ(VerifiedRootShape(Entry("  %a = f32[4,5] parameter(0)\n"
                                    "  %z = f32[] constant(0)\n"
                                    "  ROOT %r = f32[] reduce(%a, %z), dimensions={0,1}, "
                                    "to_apply=%add_f32\n")),
            "f32[]");
  // Argmax: values and their iota indices reduced together.
  EXPECT_EQ(VerifiedRootShape(Entry("  %a = f32[4,5] parameter(0)\n"
                                    "  %i = s32[4,5] iota(), iota_dimension=1\n"
                                    "  %ninf = f32[] constant(-inf)\n"
                                    "  %z = s32[] constant(0)\n"
                                    "  ROOT %r = (f32[4], s32[4]) reduce(%a, %i, %ninf, %z), "
                                    "dimensions={1}, to_apply=%argmax\n")),
            "(f32[4], s32[4])");
}

TEST(ShapeInferenceReduce, Errors) {
  ExpectVerifyError(Entry("  %a = s32[4,5] parameter(0)\n"
                          "  %z = s32[] constant(0)\n"
                          "  ROOT %bad = s32[4] reduce(%a, %z), dimensions={1}, to_apply=%add_f32\n"),
                    "%bad =", "parameter 0 has shape f32[], expected s32[]");
  ExpectVerifyError(Entry("  %a = f32[4,5] parameter(0)\n"
                          "  %z = f32[4] parameter(1)\n"
                          "  ROOT %bad = f32[4] reduce(%a, %z), dimensions={1}, to_apply=%add_f32\n"),
                    "%bad =", "init value 0 must be a scalar, got f32[4]");
  ExpectVerifyError(Entry("  %a = f32[4,5] parameter(0)\n"
                          "  %z = f32[] constant(0)\n"
                          "  ROOT %bad = f32[5] reduce(%a, %z), dimensions={1}, to_apply=%add_f32\n"),
                    "%bad =", "declared shape f32[5] does not match inferred f32[4]");
  ExpectVerifyError(Entry("  %a = f32[4,5] parameter(0)\n"
                          "  %z = f32[] constant(0)\n"
                          "  ROOT %bad = f32[4] reduce(%a, %z), dimensions={2}, to_apply=%add_f32\n"),
                    "%bad =", "dimensions={2} has dimension 2 out of range for rank 2");
}

TEST(ShapeInferenceReduce, ReduceWindow) {
  // 4 / 2 = 2 and 6 / 3 = 2 non-overlapping windows.
  EXPECT_EQ(VerifiedRootShape(Entry("  %a = f32[4,6] parameter(0)\n"
                                    "  %z = f32[] constant(0)\n"
                                    "  ROOT %r = f32[2,2] reduce-window(%a, %z), "
                                    "window={size=2x3 stride=2x3}, to_apply=%add_f32\n")),
            "f32[2,2]");
  // SAME padding keeps the size; base dilation 2 on 4 gives 7, minus window 2 plus 1 = 6.
  EXPECT_EQ(VerifiedRootShape(Entry("  %a = f32[4,6] parameter(0)\n"
                                    "  %z = f32[] constant(0)\n"
                                    "  ROOT %r = f32[4,6] reduce-window(%a, %z), "
                                    "window={size=3x3 pad=1_1x1_1}, to_apply=%add_f32\n")),
            "f32[4,6]");
  EXPECT_EQ(VerifiedRootShape(Entry("  %a = f32[4] parameter(0)\n"
                                    "  %z = f32[] constant(0)\n"
                                    "  ROOT %r = f32[6] reduce-window(%a, %z), "
                                    "window={size=2 lhs_dilate=2}, to_apply=%add_f32\n")),
            "f32[6]");
  ExpectVerifyError(Entry("  %a = f32[4,6] parameter(0)\n"
                          "  %z = f32[] constant(0)\n"
                          "  ROOT %bad = f32[2] reduce-window(%a, %z), window={size=2 stride=2}, "
                          "to_apply=%add_f32\n"),
                    "%bad =", "window has 1 dimensions, operand rank is 2");
}

TEST(ShapeInferenceReduce, SelectAndScatter) {
  EXPECT_EQ(VerifiedRootShape(Entry("  %a = f32[4,6] parameter(0)\n"
                                    "  %s = f32[2,2] parameter(1)\n"
                                    "  %z = f32[] constant(0)\n"
                                    "  ROOT %r = f32[4,6] select-and-scatter(%a, %s, %z), "
                                    "window={size=2x3 stride=2x3}, select=%ge_f32, "
                                    "scatter=%add_f32\n")),
            "f32[4,6]");
  ExpectVerifyError(Entry("  %a = f32[4,6] parameter(0)\n"
                          "  %s = f32[2,3] parameter(1)\n"
                          "  %z = f32[] constant(0)\n"
                          "  ROOT %bad = f32[4,6] select-and-scatter(%a, %s, %z), "
                          "window={size=2x3 stride=2x3}, select=%ge_f32, scatter=%add_f32\n"),
                    "%bad =", "source f32[2,3] must have the windowed operand dims {2,2}");
  ExpectVerifyError(Entry("  %a = f32[4,6] parameter(0)\n"
                          "  %s = f32[2,2] parameter(1)\n"
                          "  %z = f32[] constant(0)\n"
                          "  ROOT %bad = f32[4,6] select-and-scatter(%a, %s, %z), "
                          "window={size=2x3 stride=2x3}, select=%add_f32, scatter=%add_f32\n"),
                    "%bad =", "select must return pred[], returns f32[]");
}

// ---------------------------------------------------------------------------------------------
// gather / scatter

TEST(ShapeInferenceGather, JaxIndexing) {
  // x[idx] with x: f32[5,3], idx: s32[2] -> rows 2 x 3.
  EXPECT_EQ(VerifiedRootShape(Entry("  %x = f32[5,3] parameter(0)\n"
                                    "  %i = s32[2,1] parameter(1)\n"
                                    "  ROOT %g = f32[2,3] gather(%x, %i), offset_dims={1}, "
                                    "collapsed_slice_dims={0}, start_index_map={0}, "
                                    "index_vector_dim=1, slice_sizes={1,3}, "
                                    "indices_are_sorted=false\n")),
            "f32[2,3]");
  // index_vector_dim == rank: an implicit trailing index dimension of size 1.
  EXPECT_EQ(VerifiedRootShape(Entry("  %x = f32[5,3] parameter(0)\n"
                                    "  %i = s32[2] parameter(1)\n"
                                    "  ROOT %g = f32[2,3] gather(%x, %i), offset_dims={1}, "
                                    "collapsed_slice_dims={0}, start_index_map={0}, "
                                    "index_vector_dim=1, slice_sizes={1,3}\n")),
            "f32[2,3]");
  // x[:, idx]: the offset dimension (3) comes first, then the batch dimension (2).
  EXPECT_EQ(VerifiedRootShape(Entry("  %x = f32[3,5] parameter(0)\n"
                                    "  %i = s32[2,1] parameter(1)\n"
                                    "  ROOT %g = f32[3,2] gather(%x, %i), offset_dims={0}, "
                                    "collapsed_slice_dims={1}, start_index_map={1}, "
                                    "index_vector_dim=1, slice_sizes={3,1}\n")),
            "f32[3,2]");
  // x[i, j] for 10 points: both leading dims collapsed.
  EXPECT_EQ(VerifiedRootShape(Entry("  %x = f32[6,7,8] parameter(0)\n"
                                    "  %i = s32[10,2] parameter(1)\n"
                                    "  ROOT %g = f32[10,8] gather(%x, %i), offset_dims={1}, "
                                    "collapsed_slice_dims={0,1}, start_index_map={0,1}, "
                                    "index_vector_dim=1, slice_sizes={1,1,8}\n")),
            "f32[10,8]");
}

TEST(ShapeInferenceGather, BatchingDims) {
  // vmap of x[idx]: operand batch 4 matched with indices batch 4; batch dims [4,2] then offset 3.
  EXPECT_EQ(VerifiedRootShape(Entry("  %x = f32[4,5,3] parameter(0)\n"
                                    "  %i = s32[4,2,1] parameter(1)\n"
                                    "  ROOT %g = f32[4,2,3] gather(%x, %i), offset_dims={2}, "
                                    "collapsed_slice_dims={1}, start_index_map={1}, "
                                    "operand_batching_dims={0}, start_indices_batching_dims={0}, "
                                    "index_vector_dim=2, slice_sizes={1,1,3}\n")),
            "f32[4,2,3]");
  ExpectVerifyError(Entry("  %x = f32[4,5,3] parameter(0)\n"
                          "  %i = s32[3,2,1] parameter(1)\n"
                          "  ROOT %bad = f32[3,2,3] gather(%x, %i), offset_dims={2}, "
                          "collapsed_slice_dims={1}, start_index_map={1}, "
                          "operand_batching_dims={0}, start_indices_batching_dims={0}, "
                          "index_vector_dim=2, slice_sizes={1,1,3}\n"),
                    "%bad =", "batching dimension sizes differ");
}

TEST(ShapeInferenceGather, Errors) {
  ExpectVerifyError(Entry("  %x = f32[5,3] parameter(0)\n"
                          "  %i = s32[2,1] parameter(1)\n"
                          "  ROOT %bad = f32[2,4] gather(%x, %i), offset_dims={1}, "
                          "collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, "
                          "slice_sizes={1,4}\n"),
                    "%bad =", "slice_sizes={1,4} exceeds operand f32[5,3] in dimension 1");
  ExpectVerifyError(Entry("  %x = f32[5,3] parameter(0)\n"
                          "  %i = s32[2,1] parameter(1)\n"
                          "  ROOT %bad = f32[2,3] gather(%x, %i), offset_dims={1}, "
                          "collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, "
                          "slice_sizes={2,3}\n"),
                    "%bad =", "collapsed or batching dimension 0 must have slice size 1, got 2");
  ExpectVerifyError(Entry("  %x = f32[5,3] parameter(0)\n"
                          "  %i = s32[2,2] parameter(1)\n"
                          "  ROOT %bad = f32[2,3] gather(%x, %i), offset_dims={1}, "
                          "collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, "
                          "slice_sizes={1,3}\n"),
                    "%bad =", "start_index_map has 1 entries but the index vector has 2");
  ExpectVerifyError(Entry("  %x = f32[5,3] parameter(0)\n"
                          "  %i = f32[2,1] parameter(1)\n"
                          "  ROOT %bad = f32[2,3] gather(%x, %i), offset_dims={1}, "
                          "collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, "
                          "slice_sizes={1,3}\n"),
                    "%bad =", "indices must be integers");
}

std::string ScatterAdd(const std::string& updates, const std::string& out = "f32[5,3]") {
  return Entry("  %x = f32[5,3] parameter(0)\n"
               "  %i = s32[2,1] parameter(1)\n"
               "  %v = " + updates + " parameter(2)\n"
               "  ROOT %scat = " + out + " scatter(%x, %i, %v), update_window_dims={1}, "
               "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, "
               "to_apply=%add_f32\n");
}

TEST(ShapeInferenceScatter, JaxAtAdd) {
  // x.at[idx].add(v) with x: f32[5,3], idx: s32[2], v: f32[2,3].
  EXPECT_EQ(VerifiedRootShape(ScatterAdd("f32[2,3]")), "f32[5,3]");
  // Scalar updates into a vector: x.at[idx].add(v) with x: f32[5].
  EXPECT_EQ(VerifiedRootShape(Entry("  %x = f32[5] parameter(0)\n"
                                    "  %i = s32[2,1] parameter(1)\n"
                                    "  %v = f32[2] parameter(2)\n"
                                    "  ROOT %s = f32[5] scatter(%x, %i, %v), update_window_dims={}, "
                                    "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
                                    "index_vector_dim=1, to_apply=%add_f32\n")),
            "f32[5]");
  // vmapped: batch 4 on operand, indices and updates.
  EXPECT_EQ(VerifiedRootShape(Entry("  %x = f32[4,5,3] parameter(0)\n"
                                    "  %i = s32[4,2,1] parameter(1)\n"
                                    "  %v = f32[4,2,3] parameter(2)\n"
                                    "  ROOT %s = f32[4,5,3] scatter(%x, %i, %v), "
                                    "update_window_dims={2}, inserted_window_dims={1}, "
                                    "input_batching_dims={0}, scatter_indices_batching_dims={0}, "
                                    "scatter_dims_to_operand_dims={1}, index_vector_dim=2, "
                                    "to_apply=%add_f32\n")),
            "f32[4,5,3]");
}

TEST(ShapeInferenceScatter, Errors) {
  ExpectVerifyError(ScatterAdd("f32[2,4]"), "%scat =",
                    "updates dimension 1 (4) exceeds the operand window bound 3");
  ExpectVerifyError(ScatterAdd("f32[3,3]"), "%scat =",
                    "updates dimension 0 (3) must match indices s32[2,1]");
  ExpectVerifyError(ScatterAdd("f32[2,3]", "f32[5,4]"), "%scat =",
                    "declared shape f32[5,4] does not match inferred f32[5,3]");
  ExpectVerifyError(ScatterAdd("f32[2,3,1]"), "%scat =", "updates f32[2,3,1] must have rank 2");
}

// ---------------------------------------------------------------------------------------------
// sort

TEST(ShapeInferenceSort, OneAndTwoOperands) {
  EXPECT_EQ(VerifiedRootShape(Entry("  %k = f32[8] parameter(0)\n"
                                    "  ROOT %s = f32[8] sort(%k), dimensions={0}, to_apply=%ge_f32\n")),
            "f32[8]");
  EXPECT_EQ(VerifiedRootShape(Entry("  %k = f32[3,8] parameter(0)\n"
                                    "  %v = s32[3,8] iota(), iota_dimension=1\n"
                                    "  ROOT %s = (f32[3,8], s32[3,8]) sort(%k, %v), dimensions={1}, "
                                    "is_stable=true, to_apply=%lt_pair\n")),
            "(f32[3,8], s32[3,8])");
}

TEST(ShapeInferenceSort, Errors) {
  ExpectVerifyError(Entry("  %k = f32[8] parameter(0)\n"
                          "  %v = s32[8] parameter(1)\n"
                          "  ROOT %bad = (f32[8], s32[8]) sort(%k, %v), dimensions={0}, "
                          "to_apply=%ge_f32\n"),
                    "%bad =", "comparator computation %ge_f32 takes 2 parameters, expected 4");
  ExpectVerifyError(Entry("  %k = f32[8] parameter(0)\n"
                          "  ROOT %bad = f32[8] sort(%k), dimensions={0}, to_apply=%add_f32\n"),
                    "%bad =", "comparator must return pred[], returns f32[]");
  ExpectVerifyError(Entry("  %k = f32[8] parameter(0)\n"
                          "  %v = s32[7] parameter(1)\n"
                          "  ROOT %bad = (f32[8], s32[7]) sort(%k, %v), dimensions={0}, "
                          "to_apply=%lt_pair\n"),
                    "%bad =", "have different dimensions");
}

}  // namespace
}  // namespace mk::hlo
