// A table of malformed HLO texts: each must fail with an error at the given line:col whose
// message contains the given text. Never a crash, never a hang.
#include <gtest/gtest.h>

#include <string>

#include "hlo/parser.h"

namespace mk::hlo {
namespace {

struct MalformedCase {
  const char* what;
  std::string text;
  int line;
  int col;
  const char* message;
};

// The entry computation around `body`: body line 1 is line 3 of the text.
std::string E(const std::string& body) { return "HloModule m\nENTRY e {\n" + body + "\n}\n"; }

std::string DeepTupleShape(int depth) {
  return std::string(static_cast<size_t>(depth), '(') + "f32[]" +
         std::string(static_cast<size_t>(depth), ')');
}

std::string ManyDims(int n) {
  std::string dims;
  for (int i = 0; i < n; ++i) dims += i ? ",1" : "1";
  return "f32[" + dims + "]";
}

const std::vector<MalformedCase>& Cases() {
  static const std::vector<MalformedCase> cases = {
      // --- whole-file problems
      {"empty file", "", 1, 1, "empty input"},
      {"only whitespace", "  \n  ", 2, 3, "empty input"},
      {"no HloModule", "HloModul m", 1, 1, "expected 'HloModule"},
      {"binary garbage", std::string("\x00\xff\x13garbage", 10), 1, 1, "expected 'HloModule"},
      {"garbage after header", "HloModule m\n\x01\x02", 2, 1, "expected computation name, got byte 0x01"},
      {"no module name", "HloModule", 1, 10, "expected module name"},
      {"no computations", "HloModule m", 1, 12, "module has no computations"},
      {"unbalanced header value", "HloModule m, x={1", 1, 16, "unbalanced '{'"},
      {"unterminated comment", "HloModule m /* never closed", 1, 13, "unterminated comment"},
      {"unterminated comment at the end", E("  a = f32[] parameter(0)") + "/* x", 5, 1, "unterminated comment"},
      // --- computations
      {"truncated computation", "HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n", 2, 9, "is not closed"},
      {"truncated instruction", "HloModule m\nENTRY e {\n  a = f32[", 3, 11, "expected dimension size"},
      {"empty computation", "HloModule m\nENTRY e {\n}\n", 2, 9, "has no instructions"},
      {"second ENTRY", "HloModule m\nENTRY a {\n x = f32[] parameter(0)\n}\nENTRY b {\n y = f32[] parameter(0)\n}\n",
       5, 1, "second ENTRY"},
      {"duplicate computation", "HloModule m\nc {\n x = f32[] parameter(0)\n}\nc {\n y = f32[] parameter(0)\n}\n",
       5, 1, "duplicate computation name 'c'"},
      {"signature without arrow", "HloModule m\nc (x: f32[]) f32[] {\n x = f32[] parameter(0)\n}\n", 2, 14,
       "expected '->'"},
      {"unknown computation", E("  p = f32[4] parameter(0)\n  ROOT r = f32[] reduce(p, p), to_apply=nope"), 4, 41,
       "unknown computation 'nope'"},
      {"recursive computation", "HloModule m\nc {\n x = f32[] parameter(0)\n ROOT y = f32[] call(x), to_apply=c\n}\n",
       2, 1, "calls itself"},
      // --- instructions
      {"missing '='", E("  a f32[] parameter(0)"), 3, 5, "expected '=' after instruction name 'a'"},
      {"unknown opcode", E("  a = f32[] foo(b)"), 3, 13, "unknown opcode 'foo'"},
      {"unknown operand", E("  ROOT a = f32[] negate(b)"), 3, 25, "unknown operand 'b'"},
      {"duplicate instruction", E("  a = f32[] parameter(0)\n  a = f32[] parameter(1)"), 4, 3,
       "duplicate instruction name 'a'"},
      {"duplicate ROOT name", E("  a = f32[] parameter(0)\n  ROOT   %a = f32[] parameter(1)"), 4, 10,
       "duplicate instruction name 'a'"},
      {"second ROOT", E("  ROOT a = f32[] parameter(0)\n  ROOT b = f32[] parameter(1)"), 4, 3, "second ROOT"},
      {"operand cycle", E("  a = f32[] negate(b)\n  b = f32[] negate(a)"), 3, 3, "cycle"},
      {"self operand", E("  a = f32[] negate(a)"), 3, 3, "cycle"},
      {"unclosed operand list", "HloModule m\nENTRY e {\n  a = f32[] add(b, c", 3, 21, "expected ')' to close the operand list"},
      {"negative parameter number", E("  a = f32[] parameter(-1)"), 3, 23, "negative parameter number"},
      {"parameter without number", E("  a = f32[] parameter()"), 3, 23, "expected parameter number"},
      {"duplicate attribute", E("  p = f32[2] parameter(0)\n  r = f32[2] reverse(p), dimensions={0}, dimensions={0}"),
       4, 42, "duplicate attribute 'dimensions'"},
      {"attribute without value", E("  p = (f32[]) parameter(0)\n  g = f32[] get-tuple-element(p), index=,"), 4, 41,
       "expected index"},
      {"unknown attribute without value", E("  p = f32[] parameter(0), foo=,"), 3, 31, "expected attribute value"},
      {"mismatched bracket in attribute", E("  a = f32[] parameter(0), foo={1)"), 3, 33, "mismatched ')'"},
      {"unterminated string", E("  a = f32[] custom-call(), custom_call_target=\"abc"), 3, 47, "unterminated string"},
      {"bad string escape", E("  a = f32[] custom-call(), custom_call_target=\"a\\qb\""), 3, 49, "unknown escape"},
      // --- shapes
      {"bad shape f32[2,]", E("  a = f32[2,] parameter(0)"), 3, 13, "expected dimension size"},
      {"unknown dtype", E("  a = f33[2] parameter(0)"), 3, 7, "unknown element type 'f33'"},
      {"tuple is not a dtype", E("  a = tuple[] parameter(0)"), 3, 7, "unknown element type 'tuple'"},
      {"huge dimension", E("  a = f32[99999999999999999999] parameter(0)"), 3, 11, "out of range"},
      {"element count overflow", E("  a = f32[4294967296,4294967296] parameter(0)"), 3, 22, "too many elements"},
      {"negative dimension", E("  a = f32[-2] parameter(0)"), 3, 11, "negative dimension"},
      {"too many dimensions", E("  a = " + ManyDims(70) + " parameter(0)"), 3, 139, "more than 64 dimensions"},
      {"deep tuple nesting", E("  a = " + DeepTupleShape(200) + " parameter(0)"), 3, 72, "nested too deeply"},
      {"layout not a permutation", E("  a = f32[2,3]{0,0} parameter(0)"), 3, 15, "not a permutation"},
      {"layout of wrong rank", E("  a = f32[2,3]{0} parameter(0)"), 3, 15, "layout has 1 dimensions"},
      {"token with dimensions", E("  a = token[2] parameter(0)"), 3, 7, "token shapes have no dimensions"},
      {"unbounded dynamic dimension", E("  a = f32[?] parameter(0)"), 3, 11, "unbounded dynamic"},
      // --- constants
      {"too few elements", E("  ROOT c = f32[3] constant({1, 2})"), 3, 28, "constant has 2 elements in dimension 0"},
      {"too many elements", E("  ROOT c = f32[2] constant({1, 2, 3})"), 3, 28, "more than 2 elements"},
      {"missing nesting", E("  ROOT c = f32[2,2] constant({1, 2})"), 3, 31, "expected '{' to open dimension 1"},
      {"s8 out of range", E("  ROOT c = s8[] constant(200)"), 3, 26, "value '200' is out of range for s8"},
      {"u8 negative", E("  ROOT c = u8[2] constant({0, -1})"), 3, 31, "value '-1' is out of range for u8"},
      {"u64 overflow", E("  ROOT c = u64[] constant(18446744073709551616)"), 3, 27, "out of range for u64"},
      {"f32 overflow", E("  ROOT c = f32[] constant(1e39)"), 3, 27, "out of range for f32"},
      {"f16 overflow", E("  ROOT c = f16[] constant(70000)"), 3, 27, "out of range for f16"},
      {"malformed float", E("  ROOT c = f32[] constant(1.2.3)"), 3, 27, "bad f32 value '1.2.3'"},
      {"fraction for integer", E("  ROOT c = s32[] constant(1.5)"), 3, 27, "expected an integer for s32"},
      {"bad pred", E("  ROOT c = pred[] constant(2)"), 3, 28, "expected true or false for pred"},
      {"s4 out of range", E("  ROOT c = s4[] constant(8)"), 3, 26, "out of range for s4"},
      {"tuple constant too short", E("  ROOT c = (f32[], f32[]) constant((1))"), 3, 38, "expected ','"},
      {"missing constant value", E("  ROOT c = f32[] constant()"), 3, 27, "expected a constant value"},
      // --- attributes
      {"bad window syntax", E("  p = f32[1] parameter(0)\n  ROOT c = f32[1] convolution(p, p), window={size=3x}"), 4, 53,
       "expected window size"},
      {"unknown window field", E("  p = f32[1] parameter(0)\n  ROOT c = f32[1] convolution(p, p), window={size=3 strid=2}"),
       4, 53, "unknown window field 'strid'"},
      {"window dimension mismatch", E("  p = f32[1] parameter(0)\n  ROOT c = f32[1] convolution(p, p), window={size=3x3 stride=2}"),
       4, 55, "window field 'stride' has 1 dimensions but 'size' has 2"},
      {"window without size", E("  p = f32[1] parameter(0)\n  ROOT c = f32[1] convolution(p, p), window={stride=2}"), 4, 45,
       "window has no size"},
      {"bad window pad", E("  p = f32[1] parameter(0)\n  ROOT c = f32[1] convolution(p, p), window={size=3 pad=1}"), 4, 57,
       "expected low_high"},
      {"bad dim_labels letter", E("  p = f32[1] parameter(0)\n  ROOT c = f32[1] convolution(p, p), dim_labels=b01x_01io->b01f"),
       4, 52, "unexpected 'x' in dim_labels"},
      {"dim_labels without arrow", E("  p = f32[1] parameter(0)\n  ROOT c = f32[1] convolution(p, p), dim_labels=b01f_01io-b01f"),
       4, 58, "expected '->'"},
      {"dim_labels repeated", E("  p = f32[1] parameter(0)\n  ROOT c = f32[1] convolution(p, p), dim_labels=bb1f_01io->b01f"),
       4, 50, "repeated 'b'"},
      {"dim_labels rank mismatch", E("  p = f32[1] parameter(0)\n  ROOT c = f32[1] convolution(p, p), dim_labels=b01f_0io->b0f"),
       4, 49, "different numbers of dimensions"},
      {"bad slice bracket", E("  p = f32[8] parameter(0)\n  ROOT s = f32[4] slice(p), slice={[0:4}"), 4, 40,
       "expected ']' to close the slice range"},
      {"bad slice colon", E("  p = f32[8] parameter(0)\n  ROOT s = f32[4] slice(p), slice={[0 4]}"), 4, 39,
       "expected ':' after the slice start"},
      {"bad padding group", E("  p = f32[8] parameter(0)\n  ROOT s = f32[9] pad(p, p), padding=0_0x1"), 4, 42,
       "expected low_high in padding"},
      {"bad padding number", E("  p = f32[8] parameter(0)\n  ROOT s = f32[9] pad(p, p), padding=a_b"), 4, 38,
       "expected padding"},
      {"unknown comparison direction", E("  p = f32[] parameter(0)\n  ROOT c = pred[] compare(p, p), direction=XX"), 4, 44,
       "unknown comparison direction 'XX'"},
      {"unknown comparison type", E("  p = f32[] parameter(0)\n  ROOT c = pred[] compare(p, p), direction=LT, type=FUZZY"),
       4, 53, "unknown comparison type 'FUZZY'"},
      {"bad bool", E("  p = f32[2] parameter(0)\n  ROOT s = f32[2] sort(p), is_stable=yes"), 4, 38,
       "expected true or false for is_stable"},
      {"integer attribute overflow", E("  p = (f32[]) parameter(0)\n  ROOT g = f32[] get-tuple-element(p), index=99999999999999999999"),
       4, 46, "out of range"},
      {"bad integer list", E("  p = f32[2] parameter(0)\n  ROOT r = f32[2] reverse(p), dimensions={0,}"), 4, 45,
       "expected an integer in dimensions"},
  };
  return cases;
}

TEST(MalformedTest, TableHasEnoughCases) { EXPECT_GE(Cases().size(), 45u); }

TEST(MalformedTest, EveryCaseFailsAtTheRightPlace) {
  for (const MalformedCase& c : Cases()) {
    SCOPED_TRACE(c.what);
    auto m = ParseModule(c.text, "bad.hlo");
    ASSERT_FALSE(m.ok()) << "parsed: " << c.text;
    const Status& s = m.status();
    EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(s.loc().file, "bad.hlo");
    EXPECT_EQ(s.loc().line, c.line) << s.ToString();
    EXPECT_EQ(s.loc().col, c.col) << s.ToString();
    EXPECT_NE(s.message().find(c.message), std::string::npos) << s.ToString();
  }
}

TEST(MalformedTest, EveryPrefixOfAValidModuleFailsCleanly) {
  // Truncation at every byte: an error (or, at a few cut points, a smaller valid module), and
  // never a crash; run under ASan/UBSan in CI.
  const std::string text =
      "HloModule m, entry_computation_layout={(f32[2]{0})->f32[]}\n"
      "add { x = f32[] parameter(0)\n y = f32[] parameter(1)\n ROOT s = f32[] add(x, y) }\n"
      "ENTRY e {\n p = f32[2]{0} parameter(0)\n z = f32[] constant(-1.5e-3)\n"
      " c = s32[2,2] constant({ {1, 2}, {3, 4} }), metadata={op_name=\"a\\\"b\"}\n"
      " w = f32[1] reduce-window(p, z), window={size=2 stride=1 pad=0_1}, to_apply=add\n"
      " ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply=%add /* end */\n}\n";
  ASSERT_TRUE(ParseModule(text).ok());
  int failures = 0;
  for (size_t n = 0; n < text.size(); ++n) {
    auto m = ParseModule(std::string_view(text).substr(0, n));
    if (!m.ok()) {
      ++failures;
      EXPECT_TRUE(m.status().loc().known()) << m.status().ToString();
    }
  }
  EXPECT_GT(failures, static_cast<int>(text.size()) * 9 / 10);
}

}  // namespace
}  // namespace mk::hlo
