// Data-movement ops against hand-computed values, including the index arithmetic corner cases:
// negative-stride slicing as JAX emits it, pad with negative edges and interior padding, and the
// clamping of out-of-range dynamic-slice starts.
#include <cstring>

#include "interp/test_util.h"

namespace mk::interp {
namespace {

using hlo::DType;
using hlo::Literal;
using testing::MakeLiteral;
using testing::TryRun;
using testing::Values;

// gtest's Test::Run would hide testing::Run inside TEST bodies.
Literal RunHlo(const std::string& text, const std::vector<Literal>& args) {
  return testing::Run(text, args);
}

std::vector<int64_t> Ints(const Literal& lit) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < lit.num_elements(); ++i) out.push_back(lit.GetInt64(i));
  return out;
}

// ENTRY with one parameter `a` of `shape` and the given body lines (the last one is ROOT).
std::string Module(const std::string& shape, const std::string& body) {
  return "HloModule m\nENTRY main {\n  a = " + shape + " parameter(0)\n" + body + "\n}\n";
}

TEST(DataMovementTest, IotaAlongEachDimension) {
  auto cols = RunHlo("HloModule m\nENTRY main {\n  ROOT r = s32[2,3] iota(), iota_dimension=1\n}\n", {});
  EXPECT_EQ(Ints(cols), (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
  auto rows = RunHlo("HloModule m\nENTRY main {\n  ROOT r = f32[2,3] iota(), iota_dimension=0\n}\n", {});
  EXPECT_EQ(Values(rows), (std::vector<double>{0, 0, 0, 1, 1, 1}));
  auto bf = RunHlo("HloModule m\nENTRY main {\n  ROOT r = bf16[2,2,2] iota(), iota_dimension=1\n}\n", {});
  EXPECT_EQ(Values(bf), (std::vector<double>{0, 0, 1, 1, 0, 0, 1, 1}));
  auto u8 = RunHlo("HloModule m\nENTRY main {\n  ROOT r = u8[4] iota(), iota_dimension=0\n}\n", {});
  EXPECT_EQ(Ints(u8), (std::vector<int64_t>{0, 1, 2, 3}));
}

TEST(DataMovementTest, ReshapeKeepsRowMajorOrder) {
  auto r = RunHlo(Module("f32[2,3]", "  ROOT r = f32[3,1,2] reshape(a)"),
               {MakeLiteral(DType::kF32, {2, 3}, {1, 2, 3, 4, 5, 6})});
  EXPECT_EQ(r.shape().dims(), (std::vector<int64_t>{3, 1, 2}));
  EXPECT_EQ(Values(r), (std::vector<double>{1, 2, 3, 4, 5, 6}));
}

TEST(DataMovementTest, BitcastReshapesOrReinterprets) {
  auto same = RunHlo(Module("s32[4]", "  ROOT r = s32[2,2] bitcast(a)"),
                  {MakeLiteral(DType::kS32, {4}, {1, 2, 3, 4})});
  EXPECT_EQ(Ints(same), (std::vector<int64_t>{1, 2, 3, 4}));
  auto bits = RunHlo(Module("f32[2]", "  ROOT r = u32[2] bitcast(a)"),
                  {MakeLiteral(DType::kF32, {2}, {1.0, -0.0})});
  EXPECT_EQ(Ints(bits), (std::vector<int64_t>{0x3f800000, 0x80000000}));
}

TEST(DataMovementTest, Broadcast) {
  auto x = MakeLiteral(DType::kF32, {3}, {1, 2, 3});
  auto rows = RunHlo(Module("f32[3]", "  ROOT r = f32[2,3] broadcast(a), dimensions={1}"), {x});
  EXPECT_EQ(Values(rows), (std::vector<double>{1, 2, 3, 1, 2, 3}));
  auto cols = RunHlo(Module("f32[3]", "  ROOT r = f32[3,2] broadcast(a), dimensions={0}"), {x});
  EXPECT_EQ(Values(cols), (std::vector<double>{1, 1, 2, 2, 3, 3}));
  auto scalar = RunHlo(Module("s32[]", "  ROOT r = s32[2,2] broadcast(a), dimensions={}"),
                    {MakeLiteral(DType::kS32, {}, {7})});
  EXPECT_EQ(Ints(scalar), (std::vector<int64_t>{7, 7, 7, 7}));
  // operand [2,2] into the outer and inner dims of [2,3,2]: r[i][j][k] = a[i][k].
  auto mid = RunHlo(Module("u8[2,2]", "  ROOT r = u8[2,3,2] broadcast(a), dimensions={0,2}"),
                 {MakeLiteral(DType::kU8, {2, 2}, {1, 2, 3, 4})});
  EXPECT_EQ(Ints(mid), (std::vector<int64_t>{1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4}));
}

TEST(DataMovementTest, Transpose) {
  auto r = RunHlo(Module("f32[2,3]", "  ROOT r = f32[3,2] transpose(a), dimensions={1,0}"),
               {MakeLiteral(DType::kF32, {2, 3}, {1, 2, 3, 4, 5, 6})});
  EXPECT_EQ(Values(r), (std::vector<double>{1, 4, 2, 5, 3, 6}));
  // a[j][k][i] = 12j + 4k + i; result dim m = operand dim perm[m]: r[i][j][k] = a[j][k][i].
  std::vector<double> a(24);
  for (int i = 0; i < 24; ++i) a[static_cast<size_t>(i)] = i;
  auto t = RunHlo(Module("s32[2,3,4]", "  ROOT r = s32[4,2,3] transpose(a), dimensions={2,0,1}"),
               {MakeLiteral(DType::kS32, {2, 3, 4}, a)});
  EXPECT_EQ(Ints(t), (std::vector<int64_t>{0, 4, 8, 12, 16, 20, 1, 5, 9, 13, 17, 21,
                                           2, 6, 10, 14, 18, 22, 3, 7, 11, 15, 19, 23}));
  auto bf = RunHlo(Module("bf16[2,2]", "  ROOT r = bf16[2,2] transpose(a), dimensions={1,0}"),
                {MakeLiteral(DType::kBF16, {2, 2}, {1.5, 2.5, 3.5, 4.5})});
  EXPECT_EQ(Values(bf), (std::vector<double>{1.5, 3.5, 2.5, 4.5}));
}

TEST(DataMovementTest, Slice) {
  auto r = RunHlo(Module("f32[5]", "  ROOT r = f32[2] slice(a), slice={[1:5:2]}"),
               {MakeLiteral(DType::kF32, {5}, {10, 11, 12, 13, 14})});
  EXPECT_EQ(Values(r), (std::vector<double>{11, 13}));
  auto m = RunHlo(Module("s32[3,4]", "  ROOT r = s32[2,2] slice(a), slice={[1:3], [0:4:3]}"),
               {MakeLiteral(DType::kS32, {3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})});
  EXPECT_EQ(Ints(m), (std::vector<int64_t>{4, 7, 8, 11}));
}

TEST(DataMovementTest, NegativeStrideSliceAsJaxEmitsIt) {
  // x[::-2] lowers to reverse, then a positive-stride slice.
  const std::string body =
      "  rev = f32[6] reverse(a), dimensions={0}\n"
      "  ROOT r = f32[3] slice(rev), slice={[0:6:2]}";
  auto r = RunHlo(Module("f32[6]", body), {MakeLiteral(DType::kF32, {6}, {0, 1, 2, 3, 4, 5})});
  EXPECT_EQ(Values(r), (std::vector<double>{5, 3, 1}));
  const std::string odd =
      "  rev = s32[5] reverse(a), dimensions={0}\n"
      "  ROOT r = s32[3] slice(rev), slice={[0:5:2]}";
  auto o = RunHlo(Module("s32[5]", odd), {MakeLiteral(DType::kS32, {5}, {0, 1, 2, 3, 4})});
  EXPECT_EQ(Ints(o), (std::vector<int64_t>{4, 2, 0}));
}

TEST(DataMovementTest, Reverse) {
  auto x = MakeLiteral(DType::kF32, {2, 3}, {1, 2, 3, 4, 5, 6});
  auto inner = RunHlo(Module("f32[2,3]", "  ROOT r = f32[2,3] reverse(a), dimensions={1}"), {x});
  EXPECT_EQ(Values(inner), (std::vector<double>{3, 2, 1, 6, 5, 4}));
  auto both = RunHlo(Module("f32[2,3]", "  ROOT r = f32[2,3] reverse(a), dimensions={0,1}"), {x});
  EXPECT_EQ(Values(both), (std::vector<double>{6, 5, 4, 3, 2, 1}));
}

TEST(DataMovementTest, DynamicSliceClampsStarts) {
  const std::string text = R"(HloModule m
ENTRY main {
  a = f32[5] parameter(0)
  i = s32[] parameter(1)
  ROOT r = f32[2] dynamic-slice(a, i), dynamic_slice_sizes={2}
}
)";
  auto x = MakeLiteral(DType::kF32, {5}, {0, 1, 2, 3, 4});
  auto at = [&](double start) {
    return Values(RunHlo(text, {x, MakeLiteral(DType::kS32, {}, {start})}));
  };
  EXPECT_EQ(at(1), (std::vector<double>{1, 2}));
  EXPECT_EQ(at(4), (std::vector<double>{3, 4}));   // 4 > 5 - 2: clamped to 3
  EXPECT_EQ(at(100), (std::vector<double>{3, 4}));
  EXPECT_EQ(at(-2), (std::vector<double>{0, 1}));  // clamped to 0

  const std::string two_d = R"(HloModule m
ENTRY main {
  a = s32[3,3] parameter(0)
  i = u8[] parameter(1)
  j = s64[] parameter(2)
  ROOT r = s32[2,2] dynamic-slice(a, i, j), dynamic_slice_sizes={2,2}
}
)";
  auto m = RunHlo(two_d, {MakeLiteral(DType::kS32, {3, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8}),
                       MakeLiteral(DType::kU8, {}, {200}), MakeLiteral(DType::kS64, {}, {0})});
  EXPECT_EQ(Ints(m), (std::vector<int64_t>{3, 4, 6, 7}));
}

TEST(DataMovementTest, DynamicUpdateSliceClampsStarts) {
  const std::string text = R"(HloModule m
ENTRY main {
  a = f32[2,4] parameter(0)
  u = f32[1,2] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT r = f32[2,4] dynamic-update-slice(a, u, i, j)
}
)";
  auto base = MakeLiteral(DType::kF32, {2, 4}, {0, 0, 0, 0, 0, 0, 0, 0});
  auto update = MakeLiteral(DType::kF32, {1, 2}, {7, 8});
  auto r = RunHlo(text, {base, update, MakeLiteral(DType::kS32, {}, {1}),
                      MakeLiteral(DType::kS32, {}, {10})});  // column clamped to 4 - 2 = 2
  EXPECT_EQ(Values(r), (std::vector<double>{0, 0, 0, 0, 0, 0, 7, 8}));
  auto s = RunHlo(text, {base, update, MakeLiteral(DType::kS32, {}, {-1}),
                      MakeLiteral(DType::kS32, {}, {1})});
  EXPECT_EQ(Values(s), (std::vector<double>{0, 7, 8, 0, 0, 0, 0, 0}));
}

TEST(DataMovementTest, Concatenate) {
  const std::string text = R"(HloModule m
ENTRY main {
  a = f32[2,2] parameter(0)
  b = f32[2,1] parameter(1)
  ROOT r = f32[2,3] concatenate(a, b), dimensions={1}
}
)";
  auto r = RunHlo(text, {MakeLiteral(DType::kF32, {2, 2}, {1, 2, 3, 4}),
                      MakeLiteral(DType::kF32, {2, 1}, {5, 6})});
  EXPECT_EQ(Values(r), (std::vector<double>{1, 2, 5, 3, 4, 6}));
  const std::string rows = R"(HloModule m
ENTRY main {
  a = pred[1,2] parameter(0)
  b = pred[2,2] parameter(1)
  ROOT r = pred[3,2] concatenate(a, b), dimensions={0}
}
)";
  auto p = RunHlo(rows, {MakeLiteral(DType::kPred, {1, 2}, {1, 0}),
                      MakeLiteral(DType::kPred, {2, 2}, {0, 1, 1, 1})});
  EXPECT_EQ(Ints(p), (std::vector<int64_t>{1, 0, 0, 1, 1, 1}));
}

std::string PadModule(const std::string& in, const std::string& out, const std::string& padding) {
  const std::string dtype = in.substr(0, in.find('['));
  return "HloModule m\nENTRY main {\n  a = " + in + " parameter(0)\n  z = " + dtype +
         "[] parameter(1)\n  ROOT r = " + out + " pad(a, z), padding=" + padding + "\n}\n";
}

TEST(DataMovementTest, PadWithInteriorAndNegativeEdges) {
  auto x = MakeLiteral(DType::kF32, {3}, {1, 2, 3});
  auto zero = MakeLiteral(DType::kF32, {}, {0});
  // low 1, high 2, interior 1: 1 + 3 + 2 + 2 = 8.
  EXPECT_EQ(Values(RunHlo(PadModule("f32[3]", "f32[8]", "1_2_1"), {x, zero})),
            (std::vector<double>{0, 1, 0, 2, 0, 3, 0, 0}));
  // Interior-padded [1,0,2,0,3], cropped by one on each side.
  EXPECT_EQ(Values(RunHlo(PadModule("f32[3]", "f32[3]", "-1_-1_1"), {x, zero})),
            (std::vector<double>{0, 2, 0}));
  // Cropping two from the left starts on an operand element again.
  EXPECT_EQ(Values(RunHlo(PadModule("f32[3]", "f32[3]", "-2_0_1"), {x, zero})),
            (std::vector<double>{2, 0, 3}));
  // Crop more than the operand: only padding remains.
  EXPECT_EQ(Values(RunHlo(PadModule("f32[3]", "f32[2]", "-4_3_0"), {x, MakeLiteral(DType::kF32, {}, {9})})),
            (std::vector<double>{9, 9}));
  // 2-D, u8, pad value 9: dim 0 gets one row on top, dim 1 interior 1 and one column at the end.
  auto m = RunHlo(PadModule("u8[2,2]", "u8[3,4]", "1_0_0x0_1_1"),
               {MakeLiteral(DType::kU8, {2, 2}, {1, 2, 3, 4}), MakeLiteral(DType::kU8, {}, {9})});
  EXPECT_EQ(Ints(m), (std::vector<int64_t>{9, 9, 9, 9, 1, 9, 2, 9, 3, 9, 4, 9}));
}

TEST(DataMovementTest, InconsistentShapesAreErrorsNotCrashes) {
  // Result larger than the operand can provide.
  auto t = TryRun(Module("f32[2,3]", "  ROOT r = f32[4,2] transpose(a), dimensions={1,0}"),
                  {MakeLiteral(DType::kF32, {2, 3}, {1, 2, 3, 4, 5, 6})});
  EXPECT_FALSE(t.ok());
  auto s = TryRun(Module("f32[5]", "  ROOT r = f32[3] slice(a), slice={[2:9:1]}"),
                  {MakeLiteral(DType::kF32, {5}, {0, 1, 2, 3, 4})});
  EXPECT_FALSE(s.ok());
  auto b = TryRun(Module("f32[3]", "  ROOT r = f32[2,4] broadcast(a), dimensions={1}"),
                  {MakeLiteral(DType::kF32, {3}, {1, 2, 3})});
  EXPECT_FALSE(b.ok());
}

}  // namespace
}  // namespace mk::interp
