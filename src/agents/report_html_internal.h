// Pieces of the HTML report (report_html.h) shared by its files: reading a result JSON that may
// lack any field, escaping, number formatting, the markdown subset of the rationale, and the two
// SVG charts. Only report_html*.cc include this.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace mk::agents::report {

using nlohmann::json;

// ---- reading (report_html_format.cc) ---------------------------------------------------------

// The value under `key`, or nullptr when `obj` is not an object, lacks the key or holds null.
const json* Field(const json& obj, const char* key);
// A number under `key` (finite: JSON has no NaN), or nothing when absent or not a number.
std::optional<double> Number(const json& obj, const char* key);
// A string under `key` as is; another scalar in its JSON spelling; nothing when absent or null.
std::optional<std::string> Text(const json& obj, const char* key);
// The elements of an array under `key` (empty when absent or not an array).
std::vector<const json*> Items(const json& obj, const char* key);
// A candidate's status, reduced to the names the report styles: "correct", "build_failed",
// "test_failed", or "other".
std::string StatusClass(const json& candidate);

// ---- text (report_html_format.cc) ------------------------------------------------------------

// Escapes &, <, >, " and ' : safe in element text and in quoted attribute values.
std::string Escape(std::string_view text);
// `json` on one line, cut after `max_chars` characters with an ellipsis.
std::string CompactJson(const json& value, size_t max_chars);
// Three significant digits with an SI prefix: "1.23 ms", "740 G", "12.5 µ"; very large or
// small values in exponent form. `unit` is appended ("s", "FLOP", "").
std::string FormatSi(double value, const std::string& unit);
std::string FormatSeconds(double seconds);
// Three significant digits, no prefix: "0.5", "1.8", "1.2e+12".
std::string FormatPlain(double value);
std::string FormatPercent(double fraction);  // 0.423 -> "42.3%"
std::string FormatRatio(double ratio);       // 1.8 -> "1.80×"
// A whole number with thousands separators ("123,456,789"), or FormatPlain beyond 1e15.
std::string FormatCount(double value);

// The planner's rationale: headings, paragraphs, "-"/"*"/"1." lists, ``` fences, `code` and
// **bold** spans. Everything else is text, escaped; no raw HTML passes through.
std::string MarkdownToHtml(std::string_view markdown);

// ---- charts (report_html_svg.cc) -------------------------------------------------------------

// Each returns an inline <svg> (or, when there is nothing to draw, a paragraph saying why) and
// any notes about what was left out.
std::string ConvergenceChart(const json& result);
std::string RooflineChart(const json& result);

}  // namespace mk::agents::report
