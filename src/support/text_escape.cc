#include "support/text_escape.h"

#include <cstdint>
#include <cstdio>

#include "support/sha256.h"

namespace mk {

namespace {

// One decoded character: a code point and its length in bytes, or (valid = false) one byte
// that does not start a well-formed UTF-8 sequence (overlong, surrogate, past U+10FFFF, cut).
struct Char {
  uint32_t cp = 0;
  size_t len = 1;
  bool valid = true;
};

Char Decode(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b0 = byte(i);
  if (b0 < 0x80) return {b0, 1, true};
  size_t len = b0 >= 0xF0 ? 4 : b0 >= 0xE0 ? 3 : b0 >= 0xC0 ? 2 : 0;
  if (len == 0 || b0 > 0xF4 || i + len > s.size()) return {b0, 1, false};
  uint32_t cp = b0 & (0x3F >> (len - 1));
  for (size_t k = 1; k < len; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return {b0, 1, false};
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {b0, 1, false};
  return {cp, len, true};
}

bool IsUnsafe(const Char& c) {
  if (!c.valid) return true;
  const uint32_t cp = c.cp;
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x061C || (cp >= 0x200B && cp <= 0x200F) ||
         (cp >= 0x2028 && cp <= 0x202E) || (cp >= 0x2060 && cp <= 0x206F) || cp == 0xFEFF;
}

std::string Hex(uint32_t v, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%0*X", digits, static_cast<unsigned>(v));
  return buf;
}

// The visible escape of an unsafe character (OneLineText's form).
std::string VisibleEscape(const Char& c) {
  if (!c.valid) return "\\x" + Hex(c.cp, 2);
  switch (c.cp) {
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default: break;
  }
  return c.cp < 0x80 ? "\\x" + Hex(c.cp, 2) : "\\u" + Hex(c.cp, 4);
}

// Python string body (no quotes).
std::string PyBody(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    Char c = Decode(s, i);
    i += c.len;
    if (!c.valid) {
      out += "\\uFFFD";
    } else if (c.cp == '\\' || c.cp == '"') {
      out += '\\';
      out += static_cast<char>(c.cp);
    } else if (c.cp >= 0x20 && c.cp < 0x7F) {
      out += static_cast<char>(c.cp);
    } else if (c.cp == '\n' || c.cp == '\r' || c.cp == '\t') {
      out += VisibleEscape(c);
    } else if (c.cp < 0x100) {
      out += "\\x" + Hex(c.cp, 2);
    } else if (c.cp < 0x10000) {
      out += "\\u" + Hex(c.cp, 4);
    } else {
      out += "\\U" + Hex(c.cp, 8);
    }
  }
  return out;
}

}  // namespace

std::string OneLineText(std::string_view s, size_t max_bytes) {
  std::string out;
  char prev = 0;  // the last character written raw (0 after an escape)
  for (size_t i = 0; i < s.size();) {
    Char c = Decode(s, i);
    std::string piece;
    if (IsUnsafe(c)) {
      piece = VisibleEscape(c);
    } else if (c.cp == '\\') {
      piece = "\\x5C";
    } else if (c.cp == '/' && prev == '*') {
      piece = "\\x2F";  // "*/" would close a block comment
    } else if (c.cp == '*' && prev == '/') {
      piece = "\\x2A";  // "/*" inside a block comment (-Wcomment)
    } else if (c.cp == '?' && prev == '?') {
      piece = "\\x3F";  // "??/" is a trigraph for a backslash in C with -trigraphs
    } else {
      piece.assign(s.substr(i, c.len));
    }
    if (out.size() + piece.size() > max_bytes) {
      out += "...";
      return out;
    }
    prev = piece.size() == 1 ? piece[0] : 0;
    out += piece;
    i += c.len;
  }
  return out;
}

std::string TerminalText(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    Char c = Decode(s, i);
    if (c.cp != '\n' && c.cp != '\t' && IsUnsafe(c)) {
      out += VisibleEscape(c);
    } else {
      out.append(s.substr(i, c.len));
    }
    i += c.len;
  }
  return out;
}

std::string CStringLiteral(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    const auto b = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\' || ch == '?') {
      out += '\\';
      out += ch;
    } else if (b >= 0x20 && b < 0x7F) {
      out += ch;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\%03o", static_cast<unsigned>(b));
      out += buf;
    }
  }
  return out + "\"";
}

std::string PyStringLiteral(std::string_view s) { return "\"" + PyBody(s) + "\""; }

std::string PyDocstringText(std::string_view s) { return PyBody(s); }

std::string CIdentifier(std::string_view s, std::string_view fallback, size_t max_length) {
  std::string out;
  for (char c : s) {
    const auto b = static_cast<unsigned char>(c);
    bool keep = (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9');
    out += keep ? c : '_';
  }
  if (out.empty()) return std::string(fallback);
  if (out[0] >= '0' && out[0] <= '9') out = "m" + out;
  if (max_length >= 16 && out.size() > max_length) {
    out = out.substr(0, max_length - 9) + "_" + Sha256Hex(s).substr(0, 8);
  }
  return out;
}

std::string YamlQuoted(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    const Char c = Decode(s, i);
    const uint32_t cp = c.cp;
    if (!c.valid) {
      out += "\xEF\xBF\xBD";  // U+FFFD
    } else if (cp == '"' || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\b') {
      out += "\\b";
    } else if (cp == '\f') {
      out += "\\f";
    } else if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 ||
               cp == 0xFEFF || cp == 0xFFFE || cp == 0xFFFF) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
      out += buf;
    } else {
      out.append(s.substr(i, c.len));
    }
    i += c.len;
  }
  return out + "\"";
}

std::string HtmlText(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    Char c = Decode(s, i);
    if (c.valid && (c.cp == 0x2028 || c.cp == 0x2029)) {
      out += "&#x" + Hex(c.cp, 4) + ";";
    } else if (IsUnsafe(c)) {
      out += VisibleEscape(c);
    } else {
      switch (c.cp) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&#39;"; break;
        default: out.append(s.substr(i, c.len));
      }
    }
    i += c.len;
  }
  return out;
}

std::string MarkdownText(std::string_view s) {
  static constexpr std::string_view kSpecial = "\\`*_{}[]<>()#+-.!|~&=:\"'$^";
  std::string out;
  for (char c : OneLineText(s)) {
    if (kSpecial.find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

std::optional<size_t> FirstUnsafeCharacter(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    Char c = Decode(s, i);
    if (IsUnsafe(c)) return i;
    i += c.len;
  }
  return std::nullopt;
}

std::optional<size_t> FirstNonYamlPrintable(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const Char c = Decode(s, i);
    const uint32_t cp = c.cp;
    const bool printable = c.valid && (cp == 0x09 || cp == 0x0A || cp == 0x0D ||
                                       (cp >= 0x20 && cp <= 0x7E) || cp == 0x85 ||
                                       (cp >= 0xA0 && cp != 0xFFFE && cp != 0xFFFF));
    if (!printable) return i;
    i += c.len;
  }
  return std::nullopt;
}

std::string DescribeCharacterAt(std::string_view s, size_t offset) {
  if (offset >= s.size()) return "end of text";
  Char c = Decode(s, offset);
  if (!c.valid) return "byte 0x" + Hex(c.cp, 2) + " (not UTF-8)";
  return "U+" + Hex(c.cp, 4);
}

}  // namespace mk
