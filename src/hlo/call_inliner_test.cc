#include "hlo/call_inliner.h"

#include <gtest/gtest.h>

#include <set>

#include "hlo/parser.h"
#include "hlo/printer.h"
#include "hlo/verifier.h"

namespace mk::hlo {
namespace {

int CountOpcode(const Computation& c, Opcode op) {
  int n = 0;
  for (const auto& i : c.instructions()) n += i->opcode == op;
  return n;
}

TEST(CallInlinerTest, InlinesNestedCallsWithUniqueNames) {
  auto m = ParseModule(R"(
HloModule calls
inner {
  x = f32[4] parameter(0)
  ROOT neg = f32[4] negate(x)
}
outer {
  a = f32[4] parameter(0)
  b = f32[4] parameter(1)
  neg = f32[4] add(a, b)
  ROOT c = f32[4] call(neg), to_apply=inner
}
ENTRY main {
  p = f32[4] parameter(0)
  q = f32[4] parameter(1)
  c1 = f32[4] call(p, q), to_apply=outer
  c2 = f32[4] call(q, p), to_apply=outer
  ROOT r = (f32[4], f32[4]) tuple(c1, c2)
}
)");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto inlined = InlineCalls(**m);
  ASSERT_TRUE(inlined.ok()) << inlined.status().ToString();
  const Computation& entry = *(*inlined)->entry();
  EXPECT_EQ(CountOpcode(entry, Opcode::kCall), 0);
  // p, q, two adds, two negates, the root tuple.
  EXPECT_EQ(entry.instructions().size(), 7u);
  std::set<std::string> names;
  for (const auto& i : entry.instructions()) EXPECT_TRUE(names.insert(i->name).second) << i->name;
  EXPECT_TRUE(names.count("c1.neg"));
  EXPECT_TRUE(names.count("c1.c.neg"));
  // The root tuple now takes the inlined negates, whose operands are the inlined adds.
  const Instruction* root = entry.root();
  ASSERT_EQ(root->operands.size(), 2u);
  EXPECT_EQ(root->operands[0]->opcode, Opcode::kNegate);
  EXPECT_EQ(root->operands[0]->operands[0]->opcode, Opcode::kAdd);
  EXPECT_EQ(root->operands[1]->operands[0]->operands[0]->name, "q");
  // The result prints, parses back and verifies.
  std::string text = PrintModule(**inlined);
  auto reparsed = ParseModule(text);
  ASSERT_TRUE(reparsed.ok()) << reparsed.status().ToString() << "\n" << text;
  EXPECT_TRUE(VerifyModule(**reparsed).ok()) << text;
}

TEST(CallInlinerTest, InlinesCallsInsideWhileBodiesAndPassThroughRoots) {
  auto m = ParseModule(R"(
HloModule loop
ident {
  ROOT x = s32[] parameter(0)
}
inc {
  y = s32[] parameter(0)
  one = s32[] constant(1)
  ROOT s = s32[] add(y, one)
}
cond {
  c = s32[] parameter(0)
  ten = s32[] constant(10)
  ROOT lt = pred[] compare(c, ten), direction=LT
}
body {
  b = s32[] parameter(0)
  i = s32[] call(b), to_apply=ident
  ROOT n = s32[] call(i), to_apply=inc
}
ENTRY main {
  z = s32[] parameter(0)
  ROOT w = s32[] while(z), condition=cond, body=body
}
)");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto inlined = InlineCalls(**m);
  ASSERT_TRUE(inlined.ok()) << inlined.status().ToString();
  const Instruction* w = (*inlined)->entry()->root();
  ASSERT_EQ(w->called.size(), 2u);
  const Computation* body = w->called[1];
  EXPECT_EQ(CountOpcode(*body, Opcode::kCall), 0);
  // The pass-through call disappears: the add reads the body's parameter directly.
  EXPECT_EQ(body->root()->opcode, Opcode::kAdd);
  EXPECT_EQ(body->root()->operands[0]->opcode, Opcode::kParameter);
}

TEST(CallInlinerTest, RejectsOperandCountMismatch) {
  auto m = ParseModule(R"(
HloModule bad
f {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  p = f32[] parameter(0)
  ROOT c = f32[] call(p), to_apply=f
}
)");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto inlined = InlineCalls(**m);
  EXPECT_FALSE(inlined.ok());
}

// JAX wraps e.g. jnp.take in a call whose body holds a reduce with its own to_apply: the
// inlined copy of that reduce must keep pointing at the (already copied) reducer.
TEST(CallInlinerTest, InlinesCalleeThatCallsAComputation) {
  auto m = ParseModule(R"(
HloModule nested
add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
row_sum {
  x = f32[4,8] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[4] reduce(x, z), dimensions={1}, to_apply=add_f32
}
ENTRY main {
  p = f32[4,8] parameter(0)
  ROOT c = f32[4] call(p), to_apply=row_sum
}
)");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto inlined = InlineCalls(**m);
  ASSERT_TRUE(inlined.ok()) << inlined.status().ToString();
  const Instruction* root = (*inlined)->entry()->root();
  EXPECT_EQ(root->opcode, Opcode::kReduce);
  ASSERT_EQ(root->called.size(), 1u);
  EXPECT_EQ(root->called[0]->name, "add_f32");
  EXPECT_EQ((*inlined)->FindComputation("add_f32"), root->called[0]);
}

}  // namespace
}  // namespace mk::hlo
