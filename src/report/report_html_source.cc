// The best candidate's kernel source in the report: a small C++ highlighter (keywords, types,
// comments, strings and characters, numbers, preprocessor lines) whose output is escaped text
// in <span class> elements, shown folded in a <details>.
#include <cctype>
#include <string>
#include <unordered_set>

#include "report/report_html_internal.h"

namespace mk::report::html {
namespace {

bool IsIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsIdent(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool IsDigit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

const std::unordered_set<std::string_view>& Keywords() {
  static const std::unordered_set<std::string_view> k = {
      "alignas", "alignof", "auto", "break", "case", "catch", "class", "const", "consteval",
      "constexpr", "constinit", "continue", "decltype", "default", "delete", "do", "else",
      "enum", "explicit", "extern", "false", "for", "friend", "goto", "if", "inline",
      "mutable", "namespace", "new", "noexcept", "nullptr", "operator", "private", "protected",
      "public", "register", "restrict", "__restrict", "__restrict__", "return", "sizeof",
      "static", "static_assert", "static_cast", "reinterpret_cast", "const_cast", "struct",
      "switch", "template", "this", "throw", "true", "try", "typedef", "typename", "union",
      "using", "virtual", "volatile", "while", "__attribute__", "_Pragma"};
  return k;
}

const std::unordered_set<std::string_view>& Types() {
  static const std::unordered_set<std::string_view> t = {
      "void", "bool", "char", "short", "int", "long", "float", "double", "signed", "unsigned",
      "size_t", "ptrdiff_t", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t",
      "uint32_t", "uint64_t", "intptr_t", "uintptr_t", "__m128", "__m128i", "__m256", "__m256i",
      "__m512", "__m512i", "__m512bh", "__m256bh", "__mmask16", "__bf16"};
  return t;
}

std::string Span(const char* cls, std::string_view text) {
  return std::string("<span class=\"") + cls + "\">" + Escape(text) + "</span>";
}

// The end of a quoted literal starting at `i` (the quote), past the closing quote; an
// unterminated one ends at the line's end.
size_t QuotedEnd(std::string_view s, size_t i) {
  char quote = s[i];
  size_t j = i + 1;
  while (j < s.size() && s[j] != quote && s[j] != '\n') j += s[j] == '\\' && j + 1 < s.size() ? 2 : 1;
  return j < s.size() && s[j] == quote ? j + 1 : j;
}

}  // namespace

std::string HighlightCpp(std::string_view s) {
  std::string out;
  size_t i = 0;
  bool line_start = true;  // only whitespace since the last newline
  while (i < s.size()) {
    char c = s[i];
    if (c == '\n') {
      out += '\n';
      ++i;
      line_start = true;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      out += Escape(s.substr(i, 1));
      ++i;
      continue;
    }
    bool at_line_start = line_start;
    line_start = false;
    size_t j = i;
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      j = s.find('\n', i);
      if (j == std::string_view::npos) j = s.size();
      out += Span("cm", s.substr(i, j - i));
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      size_t close = s.find("*/", i + 2);
      j = close == std::string_view::npos ? s.size() : close + 2;
      out += Span("cm", s.substr(i, j - i));
    } else if (c == '#' && at_line_start) {
      // A directive runs to the end of its line (and its backslash continuations); a comment
      // on it is still a comment.
      while (j < s.size() && s[j] != '\n') {
        if (s[j] == '\\' && j + 1 < s.size() && s[j + 1] == '\n') j += 2;
        else if (s.compare(j, 2, "//") == 0 || s.compare(j, 2, "/*") == 0) break;
        else ++j;
      }
      out += Span("pp", s.substr(i, j - i));
    } else if (c == '"' || c == '\'') {
      j = QuotedEnd(s, i);
      out += Span("st", s.substr(i, j - i));
    } else if (IsDigit(c) || (c == '.' && i + 1 < s.size() && IsDigit(s[i + 1]))) {
      // Digits, hex, exponents with signs, separators and suffixes: 1.5e-3f, 0x1Fu, 1'000.
      while (j < s.size() &&
             (IsIdent(s[j]) || s[j] == '.' || s[j] == '\'' ||
              ((s[j] == '+' || s[j] == '-') && (s[j - 1] == 'e' || s[j - 1] == 'E' ||
                                                s[j - 1] == 'p' || s[j - 1] == 'P')))) {
        ++j;
      }
      out += Span("nu", s.substr(i, j - i));
    } else if (IsIdentStart(c)) {
      while (j < s.size() && IsIdent(s[j])) ++j;
      std::string_view word = s.substr(i, j - i);
      if (Keywords().count(word)) out += Span("kw", word);
      else if (Types().count(word)) out += Span("ty", word);
      else out += Escape(word);
    } else {
      j = i + 1;
      // Keep a multi-byte UTF-8 character whole so Escape sees a valid sequence.
      while (j < s.size() && (static_cast<unsigned char>(s[j]) & 0xc0) == 0x80) ++j;
      out += Escape(s.substr(i, j - i));
    }
    i = j;
  }
  return out;
}

std::string SourceSection(const json& result, const std::string& best_source) {
  std::string s = "<section id=\"source\">\n<h2>Kernel source of the best candidate</h2>\n";
  const json& best = Obj(result, "best");
  std::optional<std::string> sha = Text(Obj(best, "artifacts"), "source");
  if (best_source.empty()) {
    if (Field(result, "best") == nullptr) {
      return s + Missing("No best candidate: there is no kernel source to show.") + "</section>\n";
    }
    return s +
           Missing(sha ? "The source was not included in this report; fetch it with maxkernel "
                         "artifacts get " + *sha + "."
                       : "The result records no source artifact for the best candidate.") +
           "</section>\n";
  }
  size_t lines = 0;
  for (char c : best_source) lines += c == '\n';
  if (!best_source.empty() && best_source.back() != '\n') ++lines;
  std::string summary = "seq " + Text(best, "seq").value_or("?") + ", " + std::to_string(lines) +
                        " lines";
  if (sha) summary += ", sha256 " + sha->substr(0, 12);
  return s + "<details id=\"best-source\"><summary>" + Escape(summary) +
         "</summary>\n<pre class=\"source\"><code>" + HighlightCpp(best_source) +
         "</code></pre>\n</details>\n</section>\n";
}

}  // namespace mk::report::report
