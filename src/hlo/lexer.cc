#include "hlo/lexer.h"

#include <algorithm>

namespace mk::hlo {

Lexer::Lexer(std::string_view text, std::string filename)
    : text_(text), filename_(std::move(filename)) {
  line_starts_.push_back(0);
  for (size_t i = 0; i < text_.size(); ++i) {
    if (text_[i] == '\n') line_starts_.push_back(i + 1);
  }
}

void Lexer::SkipTrivia() {
  while (!AtEof()) {
    char c = Peek();
    if (IsAsciiSpace(c)) {
      Advance();
    } else if (c == '/' && Peek(1) == '/') {
      while (!AtEof() && Peek() != '\n') Advance();
    } else if (c == '/' && Peek(1) == '*') {
      size_t start = pos_;
      size_t end = text_.find("*/", pos_ + 2);
      if (end == std::string_view::npos) {
        if (!pending_error_) {
          pending_error_ = InvalidArgument("unterminated comment", LocAt(start));
        }
        set_pos(text_.size());
        return;
      }
      set_pos(end + 2);
    } else {
      return;
    }
  }
}

bool Lexer::TryConsume(char c) {
  SkipTrivia();
  if (!AtEof() && Peek() == c) {
    Advance();
    return true;
  }
  return false;
}

bool Lexer::TryConsumeText(std::string_view s) {
  SkipTrivia();
  if (text_.substr(pos_).starts_with(s)) {
    Advance(s.size());
    return true;
  }
  return false;
}

bool Lexer::PeekWord(std::string_view w, bool consume) {
  SkipTrivia();
  if (!text_.substr(pos_).starts_with(w)) return false;
  char after = Peek(w.size());
  if (IsNameChar(after)) return false;
  if (consume) Advance(w.size());
  return true;
}

std::string Lexer::DescribeNext() {
  SkipTrivia();
  if (AtEof()) return "end of input";
  char c = Peek();
  if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
    static const char kHex[] = "0123456789abcdef";
    unsigned char u = static_cast<unsigned char>(c);
    return std::string("byte 0x") + kHex[u >> 4] + kHex[u & 15];
  }
  return std::string("'") + c + "'";
}

Status Lexer::Expect(char c, std::string_view context) {
  if (TryConsume(c)) return Status::Ok();
  std::string msg = std::string("expected '") + c + "'";
  if (!context.empty()) msg += " " + std::string(context);
  return Error(msg + ", got " + DescribeNext());
}

Result<std::string> Lexer::ReadName(std::string_view what) {
  SkipTrivia();
  size_t start = pos_;
  bool percent = Peek() == '%';
  if (percent) Advance();
  // A leading digit is allowed (`%9.x`, and without `%` in signatures such as `(0: f32[])`).
  char first = Peek();
  if (AtEof() || !(IsAsciiAlpha(first) || first == '_' || IsAsciiDigit(first))) {
    set_pos(start);
    return Error("expected " + std::string(what) + ", got " + DescribeNext());
  }
  size_t name_start = pos_;
  // `-` belongs to names (`Mean-reduction.1`) except as the start of `->`.
  while (!AtEof() && IsNameChar(Peek()) && !(Peek() == '-' && Peek(1) == '>')) Advance();
  return std::string(text_.substr(name_start, pos_ - name_start));
}

Result<std::string> Lexer::ReadWord(std::string_view what) {
  SkipTrivia();
  size_t start = pos_;
  while (!AtEof() && (IsAsciiAlpha(Peek()) || IsAsciiDigit(Peek()) || Peek() == '_' ||
                      (Peek() == '-' && Peek(1) != '>'))) {
    Advance();
  }
  if (pos_ == start) return Error("expected " + std::string(what) + ", got " + DescribeNext());
  return std::string(text_.substr(start, pos_ - start));
}

Result<int64_t> Lexer::ReadIntHere(std::string_view what) {
  size_t start = pos_;
  bool negative = false;
  if (Peek() == '-' || Peek() == '+') {
    negative = Peek() == '-';
    Advance();
  }
  if (!IsAsciiDigit(Peek())) {
    set_pos(start);
    return ErrorAt(start, "expected " + std::string(what) + ", got " + DescribeNext());
  }
  // Accumulate the magnitude as unsigned so that INT64_MIN is representable.
  uint64_t magnitude = 0;
  const uint64_t limit = negative ? (uint64_t{1} << 63) : (uint64_t{1} << 63) - 1;
  bool overflow = false;
  while (IsAsciiDigit(Peek())) {
    uint64_t digit = static_cast<uint64_t>(Peek() - '0');
    if (magnitude > (limit - digit) / 10) overflow = true;
    if (!overflow) magnitude = magnitude * 10 + digit;
    Advance();
  }
  if (overflow) {
    return ErrorAt(start, "integer " + std::string(text_.substr(start, pos_ - start)) +
                              " is out of range for " + std::string(what));
  }
  if (negative) {
    return magnitude == (uint64_t{1} << 63) ? INT64_MIN : -static_cast<int64_t>(magnitude);
  }
  return static_cast<int64_t>(magnitude);
}

Result<bool> Lexer::ReadBool(std::string_view what) {
  if (PeekWord("true", true)) return true;
  if (PeekWord("false", true)) return false;
  return Error("expected true or false for " + std::string(what) + ", got " + DescribeNext());
}

namespace {
int HexValue(char c) {
  if (IsAsciiDigit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

Result<std::string> Lexer::ReadQuotedString() {
  SkipTrivia();
  size_t start = pos_;
  if (Peek() != '"') return Error("expected a quoted string, got " + DescribeNext());
  Advance();
  std::string out;
  while (true) {
    if (AtEof()) return ErrorAt(start, "unterminated string");
    char c = Peek();
    Advance();
    if (c == '"') return out;
    if (c != '\\') {
      out += c;
      continue;
    }
    if (AtEof()) return ErrorAt(start, "unterminated string");
    size_t escape_pos = pos_ - 1;
    char e = Peek();
    Advance();
    switch (e) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'v': out += '\v'; break;
      case '\\': out += '\\'; break;
      case '"': out += '"'; break;
      case '\'': out += '\''; break;
      case '?': out += '?'; break;
      case 'x': {
        int hi = HexValue(Peek()), lo = HexValue(Peek(1));
        if (hi < 0 || lo < 0) return ErrorAt(escape_pos, "bad \\x escape in string");
        Advance(2);
        out += static_cast<char>(hi * 16 + lo);
        break;
      }
      default:
        if (e >= '0' && e <= '7') {
          int value = e - '0';
          for (int i = 0; i < 2 && Peek() >= '0' && Peek() <= '7'; ++i) {
            value = value * 8 + (Peek() - '0');
            Advance();
          }
          out += static_cast<char>(value & 0xff);
          break;
        }
        return ErrorAt(escape_pos, "unknown escape sequence in string");
    }
  }
}

Result<std::string_view> Lexer::ReadRawValue() {
  SkipTrivia();
  size_t start = pos_;
  std::vector<std::pair<char, size_t>> open;  // expected closer, position of the opener
  while (true) {
    if (AtEof()) {
      if (open.empty()) break;
      return ErrorAt(open.back().second,
                     std::string("unbalanced '") + text_[open.back().second] + "'");
    }
    char c = Peek();
    if (open.empty() && (c == ',' || IsAsciiSpace(c) || c == ')' || c == '}' || c == ']' ||
                         (c == '/' && (Peek(1) == '/' || Peek(1) == '*')))) {
      break;
    }
    if (c == '"') {
      size_t quote = pos_;
      Advance();
      while (!AtEof() && Peek() != '"') Advance(Peek() == '\\' ? 2 : 1);
      if (AtEof()) return ErrorAt(quote, "unterminated string");
      Advance();
      continue;
    }
    if (c == '/' && Peek(1) == '*') {
      size_t end = text_.find("*/", pos_ + 2);
      if (end == std::string_view::npos) return ErrorAt(pos_, "unterminated comment");
      set_pos(end + 2);
      continue;
    }
    if (c == '/' && Peek(1) == '/') {
      while (!AtEof() && Peek() != '\n') Advance();
      continue;
    }
    if (c == '{' || c == '(' || c == '[') {
      open.emplace_back(c == '{' ? '}' : c == '(' ? ')' : ']', pos_);
    } else if (c == '}' || c == ')' || c == ']') {
      if (open.back().first != c) {
        return ErrorAt(pos_, std::string("mismatched '") + c + "', expected '" +
                                 open.back().first + "'");
      }
      open.pop_back();
    }
    Advance();
  }
  if (pos_ == start) return Error("expected attribute value, got " + DescribeNext());
  return text_.substr(start, pos_ - start);
}

SourceLoc Lexer::LocAt(size_t offset) const {
  offset = std::min(offset, text_.size());
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  size_t line_index = static_cast<size_t>(it - line_starts_.begin()) - 1;
  SourceLoc loc;
  loc.file = filename_;
  loc.line = static_cast<int>(line_index + 1);
  loc.col = static_cast<int>(offset - line_starts_[line_index] + 1);
  return loc;
}

Status Lexer::ErrorAt(size_t offset, std::string message) const {
  if (pending_error_) return *pending_error_;
  return InvalidArgument(std::move(message), LocAt(offset));
}

Status Lexer::Error(std::string message) {
  SkipTrivia();
  return ErrorAt(pos_, std::move(message));
}

}  // namespace mk::hlo
