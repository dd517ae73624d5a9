// The names an import gives its parameters: valid C and Python identifiers, unique, and the
// same in the task and in the module's entry.
#include "task/param_names.h"

#include <gtest/gtest.h>

#include "hlo/parser.h"

namespace mk::task {
namespace {

TEST(ParamNamesTest, IdentifiersOfUserAndJaxNames) {
  EXPECT_EQ(ParameterIdentifier("x.1"), "x");  // JAX's uniquifier
  EXPECT_EQ(ParameterIdentifier("w1.12"), "w1");
  EXPECT_EQ(ParameterIdentifier("x"), "x");
  EXPECT_EQ(ParameterIdentifier("Arg_0.1"), "Arg_0");
  EXPECT_EQ(ParameterIdentifier("args_0_.1"), "args_0_");
  EXPECT_EQ(ParameterIdentifier("args[0]"), "args_0_");
  EXPECT_EQ(ParameterIdentifier("input ids"), "input_ids");
  EXPECT_EQ(ParameterIdentifier("x.y"), "x_y");  // not a uniquifier: kept, made valid
  EXPECT_EQ(ParameterIdentifier("Mean-reduction.2"), "Mean_reduction");
  EXPECT_EQ(ParameterIdentifier("2d"), "_2d");
  EXPECT_EQ(ParameterIdentifier("lambda"), "lambda_");  // Python keyword
  EXPECT_EQ(ParameterIdentifier("int"), "int_");        // C keyword
  EXPECT_EQ(ParameterIdentifier("__x"), "p__x");        // reserved in C
  EXPECT_EQ(ParameterIdentifier(""), "arg");
  EXPECT_EQ(ParameterIdentifier(".5"), "_5");
}

TEST(ParamNamesTest, UniqueAmongThemselvesAndTheOtherInstructions) {
  EXPECT_EQ(ParameterIdentifiers({"x.1", "x.2", "x", "y"}, {"y"}),
            (std::vector<std::string>{"x", "x_2", "x_3", "y_2"}));
}

TEST(ParamNamesTest, RenameEntryParametersKeepsTheModuleValid) {
  auto m = hlo::ParseModule(R"(HloModule jit_f
ENTRY %main.2 (x.1: f32[4], b.1: f32[4]) -> f32[4] {
  %b.1 = f32[4]{0} parameter(1)
  %x.1 = f32[4]{0} parameter(0)
  %b = f32[4]{0} negate(%b.1)
  ROOT %add.1 = f32[4]{0} add(%x.1, %b)
}
)");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto ids = RenameEntryParameters(**m, {"x.1", "b.1"});
  ASSERT_TRUE(ids.ok()) << ids.status().ToString();
  EXPECT_EQ(*ids, (std::vector<std::string>{"x", "b_2"}));  // `b` is another instruction
  EXPECT_EQ((*m)->entry()->parameter(0)->name, "x");
  EXPECT_EQ((*m)->entry()->parameter(1)->name, "b_2");
  EXPECT_EQ((*m)->entry()->root()->operands[0]->name, "x");
  auto wrong = RenameEntryParameters(**m, {"x"});
  EXPECT_FALSE(wrong.ok());
}

TEST(ParamNamesTest, NamesOfOtherComputationsAreTakenToo) {
  auto m = hlo::ParseModule(R"(HloModule jit_f
%neg (w: f32[4]) -> f32[4] {
  %w = f32[4]{0} parameter(0)
  ROOT %n = f32[4]{0} negate(%w)
}
ENTRY %main (w.1: f32[4]) -> f32[4] {
  %w.1 = f32[4]{0} parameter(0)
  ROOT %c = f32[4]{0} call(%w.1), to_apply=%neg
}
)");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto ids = RenameEntryParameters(**m, {"w.1"});
  ASSERT_TRUE(ids.ok()) << ids.status().ToString();
  EXPECT_EQ(*ids, (std::vector<std::string>{"w_2"}));  // XLA wants names unique module-wide
}

}  // namespace
}  // namespace mk::task
