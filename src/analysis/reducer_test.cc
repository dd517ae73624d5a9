#include "analysis/reducer.h"

#include <gtest/gtest.h>

#include "hlo/parser.h"

namespace mk::analysis {
namespace {

// The reducer of the module's one reduce.
std::optional<hlo::Opcode> ReducerOf(const std::string& region) {
  auto m = hlo::ParseModule("HloModule m\n" + region + R"(
ENTRY main {
  x = f32[8] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[] reduce(x, z), dimensions={0}, to_apply=red
}
)");
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  if (!m.ok()) return std::nullopt;
  return BinaryReducerOp(*(*m)->entry()->root()->called[0]);
}

TEST(ReducerTest, OneBinaryOpOfBothParametersInEitherOrder) {
  EXPECT_EQ(ReducerOf("red {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
                      " ROOT s = f32[] add(a, b)\n}\n"),
            hlo::Opcode::kAdd);
  EXPECT_EQ(ReducerOf("red {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
                      " ROOT s = f32[] maximum(b, a)\n}\n"),
            hlo::Opcode::kMaximum);
  // One parameter twice, or a second op: not a plain reducer.
  EXPECT_FALSE(ReducerOf("red {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
                         " ROOT s = f32[] add(a, a)\n}\n"));
  EXPECT_FALSE(ReducerOf("red {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
                         " s = f32[] add(a, b)\n ROOT n = f32[] negate(s)\n}\n"));
}

}  // namespace
}  // namespace mk::analysis
