// Reading the result JSON defensively, escaping, number formatting and the rationale's markdown
// subset for the HTML report.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>

#include "report/report_html_internal.h"

namespace mk::report::html {

// ---- reading ---------------------------------------------------------------------------------

const json* Field(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<double> Number(const json& obj, const char* key) {
  const json* v = Field(obj, key);
  if (v == nullptr || !v->is_number()) return std::nullopt;
  double d = v->get<double>();
  if (!std::isfinite(d)) return std::nullopt;
  return d;
}

std::optional<std::string> Text(const json& obj, const char* key) {
  const json* v = Field(obj, key);
  if (v == nullptr) return std::nullopt;
  if (v->is_string()) return v->get<std::string>();
  return v->dump(-1, ' ', false, json::error_handler_t::replace);
}

std::vector<const json*> Items(const json& obj, const char* key) {
  std::vector<const json*> out;
  const json* v = Field(obj, key);
  if (v == nullptr || !v->is_array()) return out;
  for (const json& item : *v) out.push_back(&item);
  return out;
}

const json& Obj(const json& obj, const char* key) {
  static const json kEmpty = json::object();
  const json* v = Field(obj, key);
  return v != nullptr && v->is_object() ? *v : kEmpty;
}

std::string StatusClass(const json& candidate) {
  std::string s = Text(candidate, "status").value_or("");
  if (s == "correct" || s == "build_failed" || s == "test_failed" || s == "duplicate") return s;
  return "other";
}

// ---- text ------------------------------------------------------------------------------------

namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is not one.
size_t Utf8Length(std::string_view s, size_t i) {
  unsigned char c = s[i];
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 0;
  }
  return n;
}

// Drops trailing zeros of a fixed-point number ("1.50" -> "1.5", "2.00" -> "2").
std::string TrimZeros(std::string s) {
  if (s.find('.') == std::string::npos || s.find('e') != std::string::npos) return s;
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

std::string Printf(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

// Three significant digits in fixed point for 1 <= |v| < 1000 (no exponent).
std::string ThreeDigits(double v) {
  double a = std::fabs(v);
  int decimals = a < 9.995 ? 2 : a < 99.95 ? 1 : 0;
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  return TrimZeros(buf);
}

}  // namespace

std::string Escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    char c = text[i];
    switch (c) {
      case '&': out += "&amp;"; ++i; continue;
      case '<': out += "&lt;"; ++i; continue;
      case '>': out += "&gt;"; ++i; continue;
      case '"': out += "&quot;"; ++i; continue;
      case '\'': out += "&#39;"; ++i; continue;
      default: break;
    }
    size_t n = Utf8Length(text, i);
    // Control characters and broken UTF-8 are not allowed in an XML-clean document.
    bool control = n == 1 && static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' &&
                   c != '\r';
    if (n == 0 || control || (n == 1 && c == 0x7f)) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      i += n == 0 ? 1 : n;
      continue;
    }
    out.append(text.substr(i, n));
    i += n;
  }
  return out;
}

std::string CompactJson(const json& value, size_t max_chars) {
  std::string s = value.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() <= max_chars) return s;
  // Cut on a UTF-8 boundary.
  size_t cut = max_chars;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xc0) == 0x80) --cut;
  return s.substr(0, cut) + "…";
}

std::string FormatPlain(double value) {
  if (!std::isfinite(value)) return "n/a";
  double a = std::fabs(value);
  if (a >= 1 && a < 1e6) {
    if (a < 1000) return ThreeDigits(value);
    return Printf("%.0f", value);
  }
  return Printf("%.3g", value);
}

std::string FormatSi(double value, const std::string& unit) {
  static const char* const kPrefixes[] = {"f", "p", "n", "µ", "m", "", "k", "M", "G", "T", "P"};
  if (!std::isfinite(value)) return "n/a";
  std::string number, prefix;
  if (value == 0) {
    number = "0";
  } else {
    double a = std::fabs(value);
    int e3 = static_cast<int>(std::floor(std::log10(a) / 3));
    // Rounding to three digits can carry into the next prefix (999.7 m -> 1 s).
    if (a / std::pow(10.0, 3 * e3) >= 999.5) ++e3;
    if (e3 < -5 || e3 > 5) {
      number = Printf("%.3g", value);
    } else {
      number = ThreeDigits(value / std::pow(10.0, 3 * e3));
      prefix = kPrefixes[e3 + 5];
    }
  }
  // (Built by appending: GCC 12 warns falsely about "literal" + std::string temporaries.)
  std::string suffix = prefix;
  suffix.append(unit);
  if (!suffix.empty()) number.append(" ").append(suffix);
  return number;
}

std::string FormatSeconds(double seconds) {
  if (!std::isfinite(seconds)) return "n/a";
  if (std::fabs(seconds) >= 1000) return FormatPlain(seconds) + " s";
  return FormatSi(seconds, "s");
}

std::string FormatPercent(double fraction) {
  if (!std::isfinite(fraction)) return "n/a";
  double pct = fraction * 100;
  if (std::fabs(pct) >= 1e4) return FormatPlain(pct) + "%";
  return Printf("%.1f", pct) + "%";
}

std::string FormatRatio(double ratio) {
  if (!std::isfinite(ratio)) return "n/a";
  if (std::fabs(ratio) >= 1000 || (ratio != 0 && std::fabs(ratio) < 0.01)) {
    return FormatPlain(ratio) + "×";
  }
  return Printf("%.2f", ratio) + "×";
}

std::string FormatCount(double value) {
  if (!std::isfinite(value)) return "n/a";
  if (std::fabs(value) >= 1e15 || value != std::floor(value)) return FormatPlain(value);
  std::string digits = Printf("%.0f", std::fabs(value));
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return value < 0 ? "-" + out : out;
}

// ---- small HTML pieces ----------------------------------------------------------------------

std::string Na(const std::string& why) {
  return "<span class=\"na\">—" + (why.empty() ? "" : " " + Escape(why)) + "</span>";
}

std::string Badge(const std::string& cls, const std::string& text) {
  return "<span class=\"badge " + Escape(cls) + "\">" + Escape(text) + "</span>";
}

std::string Missing(const std::string& what) {
  return "<p class=\"missing\">" + Escape(what) + "</p>\n";
}

std::string TextCell(const json& obj, const char* key) {
  std::optional<std::string> v = Text(obj, key);
  return "<td>" + (v ? Escape(*v) : Na()) + "</td>";
}

std::string RooflineHtml(std::optional<double> fraction, const std::optional<std::string>& note) {
  if (!fraction) return Na(note.value_or(""));
  if (*fraction > 1) {
    // 102.5% means the peak was measured low (under load, say), not that the kernel beat it.
    return Na("above the measured peak: the peak is stale or was measured under load");
  }
  return Escape(FormatPercent(*fraction));
}

// ---- markdown --------------------------------------------------------------------------------

namespace {

std::string_view TrimLeft(std::string_view s) {
  size_t i = s.find_first_not_of(" \t");
  return i == std::string_view::npos ? std::string_view() : s.substr(i);
}

// Inline spans: `code` (verbatim) and **bold**; an unmatched marker is plain text.
std::string Inline(std::string_view s) {
  std::string out;
  size_t plain_start = 0;
  auto flush = [&](size_t end) { out += Escape(s.substr(plain_start, end - plain_start)); };
  for (size_t i = 0; i < s.size();) {
    if (s[i] == '`') {
      size_t j = s.find('`', i + 1);
      if (j != std::string_view::npos) {
        flush(i);
        out += "<code>" + Escape(s.substr(i + 1, j - i - 1)) + "</code>";
        i = plain_start = j + 1;
        continue;
      }
    } else if (s.compare(i, 2, "**") == 0) {
      size_t j = s.find("**", i + 2);
      if (j != std::string_view::npos && j > i + 2) {
        flush(i);
        out += "<strong>" + Inline(s.substr(i + 2, j - i - 2)) + "</strong>";
        i = plain_start = j + 2;
        continue;
      }
    }
    ++i;
  }
  flush(s.size());
  return out;
}

// "1. x" / "12) x" -> the text after the marker.
std::optional<std::string_view> OrderedItem(std::string_view t) {
  size_t i = 0;
  while (i < t.size() && i < 9 && t[i] >= '0' && t[i] <= '9') ++i;
  if (i == 0 || i + 1 >= t.size() || (t[i] != '.' && t[i] != ')') || t[i + 1] != ' ') {
    return std::nullopt;
  }
  return t.substr(i + 2);
}

class MarkdownRenderer {
 public:
  std::string Render(std::string_view md) {
    size_t start = 0;
    while (start <= md.size()) {
      size_t end = md.find('\n', start);
      if (end == std::string_view::npos) end = md.size();
      std::string_view line = md.substr(start, end - start);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      Line(line);
      start = end + 1;
    }
    if (in_fence_) out_ += "<pre><code>" + Escape(fence_) + "</code></pre>\n";
    Flush();
    return out_;
  }

 private:
  void Line(std::string_view line) {
    std::string_view t = TrimLeft(line);
    if (in_fence_) {
      if (t.substr(0, 3) == "```") {
        out_ += "<pre><code>" + Escape(fence_) + "</code></pre>\n";
        in_fence_ = false;
        fence_.clear();
      } else {
        fence_ += std::string(line) + "\n";
      }
      return;
    }
    if (t.substr(0, 3) == "```") {
      Flush();
      in_fence_ = true;
      return;
    }
    if (t.empty()) {
      Flush();
      return;
    }
    size_t hashes = 0;
    while (hashes < t.size() && t[hashes] == '#') ++hashes;
    if (hashes >= 1 && hashes <= 6 && (hashes == t.size() || t[hashes] == ' ')) {
      Flush();
      // The rationale sits under the report's <h2>: its "#" becomes <h3>.
      std::string tag = "h" + std::to_string(std::min<size_t>(hashes + 2, 6));
      out_ += "<" + tag + ">" + Inline(TrimLeft(t.substr(hashes))) + "</" + tag + ">\n";
      return;
    }
    if (t.size() >= 2 && (t[0] == '-' || t[0] == '*' || t[0] == '+') && t[1] == ' ') {
      Item("ul", t.substr(2));
      return;
    }
    if (auto item = OrderedItem(t)) {
      Item("ol", *item);
      return;
    }
    // An indented line continues the current list item; anything else is paragraph text.
    if (!list_.empty() && line.size() > t.size()) {
      items_.back().append(" ").append(t);
      return;
    }
    FlushList();
    if (!paragraph_.empty()) paragraph_.append(" ");
    paragraph_.append(t);
  }

  void Item(const std::string& list, std::string_view text) {
    FlushParagraph();
    if (list_ != list) FlushList();
    list_ = list;
    items_.emplace_back(text);
  }

  void FlushParagraph() {
    if (!paragraph_.empty()) out_ += "<p>" + Inline(paragraph_) + "</p>\n";
    paragraph_.clear();
  }
  void FlushList() {
    if (list_.empty()) return;
    out_ += "<" + list_ + ">\n";
    for (const std::string& item : items_) out_ += "<li>" + Inline(item) + "</li>\n";
    out_ += "</" + list_ + ">\n";
    list_.clear();
    items_.clear();
  }
  void Flush() {
    FlushParagraph();
    FlushList();
  }

  std::string out_;
  std::string paragraph_;
  std::string list_;  // "ul", "ol" or "" (none open)
  std::vector<std::string> items_;
  bool in_fence_ = false;
  std::string fence_;
};

}  // namespace

std::string MarkdownToHtml(std::string_view markdown) {
  return MarkdownRenderer().Render(markdown);
}

}  // namespace mk::report::report
