// Character-level scanner for HLO text. HLO's grammar is context dependent (`3x3`, `0_1x1_1`,
// `b01f_01io->b01f` and `{...}` mean different things after different attribute names), so
// the parser asks for the token kind it expects next instead of consuming a fixed token stream.
// Every position is a byte offset into the text; LocAt() turns it into file:line:col.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "support/status.h"

namespace mk::hlo {

inline bool IsAsciiDigit(char c) { return c >= '0' && c <= '9'; }
inline bool IsAsciiAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
inline bool IsAsciiSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
// Characters of instruction and computation names: `Arg_0.1`, `Mean-reduction.2`.
inline bool IsNameChar(char c) {
  return IsAsciiAlpha(c) || IsAsciiDigit(c) || c == '_' || c == '.' || c == '-';
}

class Lexer {
 public:
  Lexer(std::string_view text, std::string filename);

  size_t pos() const { return pos_; }
  void set_pos(size_t pos) { pos_ = pos < text_.size() ? pos : text_.size(); }
  std::string_view text() const { return text_; }
  bool AtEof() const { return pos_ >= text_.size(); }
  char Peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  void Advance(size_t n = 1) { set_pos(pos_ + n); }

  // Skips whitespace, `// ...` line comments and `/* ... */` block comments (such as the
  // `/*index=5*/` XLA puts in long operand lists). An unterminated block comment becomes the
  // lexer's pending error, returned by every later ErrorAt().
  void SkipTrivia();
  // SkipTrivia(), then true and consumes `c` if it is next.
  bool TryConsume(char c);
  // SkipTrivia(), then consumes `s` if the text continues with it.
  bool TryConsumeText(std::string_view s);
  // SkipTrivia(), then true if the next token is the word `w` (not a prefix of a longer name);
  // consumes it when `consume` is set.
  bool PeekWord(std::string_view w, bool consume = false);
  // SkipTrivia(), then consumes `c` or fails with "expected 'c' <context>".
  Status Expect(char c, std::string_view context);

  // A name with an optional `%` prefix (the prefix is not part of the name). `what` goes
  // into the error message ("expected instruction name").
  Result<std::string> ReadName(std::string_view what);
  // A run of [A-Za-z0-9_-] (opcode names, enum words such as LT or rng_default).
  Result<std::string> ReadWord(std::string_view what);
  // A decimal integer with optional sign, checked against int64 range. Does not skip trivia,
  // so that `3x3` and `0_1` parse as separate numbers.
  Result<int64_t> ReadIntHere(std::string_view what);
  Result<int64_t> ReadInt(std::string_view what) {
    SkipTrivia();
    return ReadIntHere(what);
  }
  // `true` or `false`.
  Result<bool> ReadBool(std::string_view what);
  // A double-quoted string with C escapes; returns the unescaped bytes.
  Result<std::string> ReadQuotedString();
  // The raw text of an attribute value we do not interpret: everything up to the next `,`,
  // whitespace or closing bracket at nesting depth 0, with brackets balanced and quoted
  // strings and comments skipped as units.
  Result<std::string_view> ReadRawValue();

  SourceLoc LocAt(size_t offset) const;
  Status ErrorAt(size_t offset, std::string message) const;
  // The error of an unterminated block comment, if one was skipped (it ends the input, so a
  // parse that otherwise succeeds must still report it).
  const std::optional<Status>& pending_error() const { return pending_error_; }
  // Error at the next non-trivia character.
  Status Error(std::string message);
  // "'x'" for the next character, or "end of input", for messages like "expected ']', got 'x'".
  std::string DescribeNext();

 private:
  std::string_view text_;
  std::string filename_;
  size_t pos_ = 0;
  std::vector<size_t> line_starts_;
  std::optional<Status> pending_error_;
};

}  // namespace mk::hlo
