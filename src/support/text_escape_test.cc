#include "support/text_escape.h"

#include <gtest/gtest.h>

#include <string>

namespace mk {
namespace {

using namespace std::string_literals;

bool HasRawControl(const std::string& s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) return true;
  }
  return false;
}

TEST(OneLineText, ControlCharactersBecomeVisibleEscapes) {
  EXPECT_EQ(OneLineText("a\nb\tc\rd"), "a\\nb\\tc\\rd");
  EXPECT_EQ(OneLineText("x\0y"s), "x\\x00y");
  EXPECT_EQ(OneLineText("\x1b[2Jok"), "\\x1B[2Jok");
  EXPECT_EQ(OneLineText("del\x7f"), "del\\x7F");
  EXPECT_EQ(OneLineText("ls\xe2\x80\xa8ps\xe2\x80\xa9"), "ls\\u2028ps\\u2029");
  EXPECT_EQ(OneLineText("rlo\xe2\x80\xae"), "rlo\\u202E");  // bidi override ("trojan source")
  EXPECT_EQ(OneLineText("nel\xc2\x85"), "nel\\u0085");       // C1 next-line
  EXPECT_EQ(OneLineText("bad\xff\xc0\x80"), "bad\\xFF\\xC0\\x80");
  EXPECT_EQ(OneLineText("h\xc3\xa9llo \xe4\xb8\xad"), "h\xc3\xa9llo \xe4\xb8\xad");  // kept
}

TEST(TerminalText, KeepsLinesAndTabsAndEscapesEverythingElse) {
  EXPECT_EQ(TerminalText("line 1\n\tline 2"), "line 1\n\tline 2");
  EXPECT_EQ(TerminalText("\x1b[2Jall tests passed\r"), "\\x1B[2Jall tests passed\\r");
  EXPECT_EQ(TerminalText("unknown escape character: \x04"), "unknown escape character: \\x04");
  EXPECT_EQ(TerminalText("rlo\xe2\x80\xae bad\xff"), "rlo\\u202E bad\\xFF");
  EXPECT_EQ(TerminalText("back\\slash */ ??"), "back\\slash */ ??");  // not a comment: kept
  EXPECT_EQ(TerminalText(std::string(300, 'a')).size(), 300u);         // never cut
}

TEST(OneLineText, CommentTerminatorsSplicesAndTrigraphsAreBroken) {
  EXPECT_EQ(OneLineText("a*/b"), "a*\\x2Fb");
  EXPECT_EQ(OneLineText("a/*b"), "a/\\x2Ab");
  EXPECT_EQ(OneLineText("a\\"), "a\\x5C");  // never a backslash at the end of a line
  EXPECT_EQ(OneLineText("?" "?/"), "?\\x3F/");
  EXPECT_EQ(OneLineText("**/"), "**\\x2F");
  EXPECT_EQ(OneLineText("\"\"\""), "\"\"\"");  // quotes are fine in comments and plain text
}

TEST(OneLineText, LongTextIsCutAtACharacterBoundary) {
  std::string long_text(5000, 'x');
  std::string out = OneLineText(long_text);
  EXPECT_EQ(out.size(), kMaxLabelBytes + 3);
  EXPECT_EQ(out.substr(out.size() - 3), "...");
  std::string wide;
  for (int i = 0; i < 100; ++i) wide += "\xe4\xb8\xad";  // 3 bytes each
  out = OneLineText(wide, 10);
  EXPECT_EQ(out, "\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad...");
  EXPECT_EQ(OneLineText(std::string(200, '\n'), 9), "\\n\\n\\n\\n...");
}

TEST(CStringLiteral, QuotesBackslashesQuestionMarksAndOctalEscapes) {
  EXPECT_EQ(CStringLiteral("x.1"), "\"x.1\"");
  EXPECT_EQ(CStringLiteral("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(CStringLiteral("?" "?/"), "\"\\?\\?/\"");
  EXPECT_EQ(CStringLiteral("a\n\0" "1"s), "\"a\\012\\0001\"");  // octal stops after 3 digits
  EXPECT_EQ(CStringLiteral("\xe2\x80\xa8"), "\"\\342\\200\\250\"");
  EXPECT_FALSE(HasRawControl(CStringLiteral("\x1b\x7f\n")));
}

TEST(PyStringLiteral, EscapesToPlainAscii) {
  EXPECT_EQ(PyStringLiteral("x.1"), "\"x.1\"");
  EXPECT_EQ(PyStringLiteral("a\"\"\"b\\N{x}"), "\"a\\\"\\\"\\\"b\\\\N{x}\"");
  EXPECT_EQ(PyStringLiteral("a\nb\0"s), "\"a\\nb\\x00\"");
  EXPECT_EQ(PyStringLiteral("\xe2\x80\xa8\xc3\xa9\xf0\x9f\x98\x80"),
            "\"\\u2028\\xE9\\U0001F600\"");
  EXPECT_EQ(PyStringLiteral("\xff"), "\"\\uFFFD\"");
  EXPECT_EQ(PyDocstringText("end\""), "end\\\"");  // cannot merge with the closing """
}

TEST(CIdentifier, LettersDigitsUnderscoreAndLengthCap) {
  EXPECT_EQ(CIdentifier("llama3-70b.rmsnorm"), "llama3_70b_rmsnorm");
  EXPECT_EQ(CIdentifier("12p"), "m12p");
  EXPECT_EQ(CIdentifier(""), "module");
  EXPECT_EQ(CIdentifier("", "fallback"), "fallback");
  EXPECT_EQ(CIdentifier("a\nb;system(\"x\")"), "a_b_system__x__");
  EXPECT_EQ(CIdentifier("\xc3\xa9"), "__");
  std::string a(300, 'a'), b = a;
  b[299] = 'b';
  std::string ia = CIdentifier(a), ib = CIdentifier(b);
  EXPECT_EQ(ia.size(), 64u);
  EXPECT_NE(ia, ib) << "long names that differ late stay distinct";
  EXPECT_EQ(CIdentifier(std::string(64, 'a')), std::string(64, 'a'));
}

TEST(HtmlText, EntitiesAndVisibleControls) {
  EXPECT_EQ(HtmlText("<script>alert('x&y')</script>"),
            "&lt;script&gt;alert(&#39;x&amp;y&#39;)&lt;/script&gt;");
  EXPECT_EQ(HtmlText("a\"b\nc\x1b"), "a&quot;b\\nc\\x1B");
  EXPECT_EQ(HtmlText("\xe2\x80\xa8"), "&#x2028;");
}

TEST(MarkdownText, PunctuationIsEscaped) {
  EXPECT_EQ(MarkdownText("# [a](b) *c*"), "\\# \\[a\\]\\(b\\) \\*c\\*");
  EXPECT_EQ(MarkdownText("x\ny"), "x\\\\ny");
  EXPECT_EQ(MarkdownText("<img src=x>"), "\\<img src\\=x\\>");
}

TEST(FirstUnsafeCharacter, FindsControlsSeparatorsAndBadBytes) {
  EXPECT_EQ(FirstUnsafeCharacter("plain id-1.x"), std::nullopt);
  EXPECT_EQ(FirstUnsafeCharacter("h\xc3\xa9llo"), std::nullopt);
  EXPECT_EQ(FirstUnsafeCharacter("ab\ncd"), 2u);
  EXPECT_EQ(FirstUnsafeCharacter("a\xe2\x80\xa9"), 1u);
  EXPECT_EQ(FirstUnsafeCharacter("ab\xff"), 2u);
  EXPECT_EQ(DescribeCharacterAt("ab\ncd", 2), "U+000A");
  EXPECT_EQ(DescribeCharacterAt("a\xe2\x80\xa9", 1), "U+2029");
  EXPECT_EQ(DescribeCharacterAt("ab\xff", 2), "byte 0xFF (not UTF-8)");
}

TEST(YamlQuoted, EscapesWhatYamlWouldNotReadBack) {
  EXPECT_EQ(YamlQuoted("plain h\xc3\xa9llo"), "\"plain h\xc3\xa9llo\"");
  EXPECT_EQ(YamlQuoted("q\" b\\ n\n t\t"), "\"q\\\" b\\\\ n\\n t\\t\"");
  EXPECT_EQ(YamlQuoted("\x1b[2J\x7f"), "\"\\u001b[2J\\u007f\"");
  EXPECT_EQ(YamlQuoted("\xc2\x85\xe2\x80\xa8\xef\xbb\xbf\xef\xbf\xbf"), "\"\\u0085\\u2028\\ufeff\\uffff\"");
  EXPECT_EQ(YamlQuoted("a\xff"), "\"a\xef\xbf\xbd\"");  // not UTF-8: U+FFFD
}

TEST(FirstNonYamlPrintable, FindsWhatAYamlStreamMayNotHold) {
  EXPECT_EQ(FirstNonYamlPrintable("id: x\r\n\tname: h\xc3\xa9llo \xe2\x80\xa8 \xc2\x85 \xf0\x9f\x98\x80"),
            std::nullopt);
  EXPECT_EQ(FirstNonYamlPrintable("i\xff"), 1u);                   // not UTF-8
  EXPECT_EQ(FirstNonYamlPrintable("ab\xc3"), 2u);                  // cut short by the end
  EXPECT_EQ(FirstNonYamlPrintable("\xed\xa0\x80"), 0u);           // a UTF-16 surrogate
  EXPECT_EQ(FirstNonYamlPrintable("\xff\xfei\x00"), 0u);          // a UTF-16 byte-order mark
  EXPECT_EQ(FirstNonYamlPrintable("ipdt_ra\x01"), 7u);             // a C0 control
  EXPECT_EQ(FirstNonYamlPrintable(std::string_view("a\0", 2)), 1u);  // NUL
  EXPECT_EQ(FirstNonYamlPrintable("a\x7f"), 1u);                   // DEL
  EXPECT_EQ(FirstNonYamlPrintable("a\xc2\x9b"), 1u);              // a C1 control (CSI)
  EXPECT_EQ(FirstNonYamlPrintable("a\xef\xbf\xbf"), 1u);         // U+FFFF
}

}  // namespace
}  // namespace mk
