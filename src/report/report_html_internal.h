// Pieces of the HTML report (report_html.h) shared by its files: reading a result JSON that may
// lack any field, escaping, number formatting, small HTML pieces, the markdown subset of the
// rationale, the C++ highlighter, the two SVG charts and the page's sections. Only
// report_html*.cc include this.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace mk::report::html {

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
// The object under `key`, or an empty object when it is absent or not an object.
const json& Obj(const json& obj, const char* key);
// A candidate's status, reduced to the names the report styles: "correct", "build_failed",
// "test_failed", "duplicate", or "other".
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

// ---- small HTML pieces (report_html_format.cc) ------------------------------------------------

// A grey dash for a missing value, followed by `why` when given.
std::string Na(const std::string& why = "");
std::string Badge(const std::string& cls, const std::string& text);
// <p class="missing">what</p>
std::string Missing(const std::string& what);
// A table cell with the text under `key`, or a dash.
std::string TextCell(const json& obj, const char* key);
// A right-aligned table cell with the number under `key` formatted by `format`, or a dash.
template <typename Format>
std::string NumCell(const json& obj, const char* key, Format format) {
  std::optional<double> v = Number(obj, key);
  return "<td class=\"num\">" + (v ? Escape(format(*v)) : Na()) + "</td>";
}
// A fraction of the roofline as "42.3%". A value above 100% is never shown (nor clamped): the
// peak it was measured against is too low, so the figure says that instead; `note` (the
// result's roofline_note) explains a null fraction.
std::string RooflineHtml(std::optional<double> fraction, const std::optional<std::string>& note);

// The planner's rationale: headings, paragraphs, "-"/"*"/"1." lists, ``` fences, `code` and
// **bold** spans. Everything else is text, escaped; no raw HTML passes through.
std::string MarkdownToHtml(std::string_view markdown);

// C++ source as HTML spans (class kw, ty, cm, st, nu, pp), everything escaped; meant for a
// <pre><code> block. A lexer of the common cases, not a parser: an unterminated comment or
// string runs to the end of the input, which is what a compiler would see too.
std::string HighlightCpp(std::string_view source);

// ---- charts (report_html_svg.cc) -------------------------------------------------------------

// Each returns an inline <svg> (or, when there is nothing to draw, a paragraph saying why) and
// any notes about what was left out.
std::string ConvergenceChart(const json& result);
std::string RooflineChart(const json& result);

// The labels of the roofline's flat roofs, right-aligned at one x: each wants its baseline just
// above its line (`line_y`, pixels, y down); labels closer than kLabelLineHeight are pushed
// apart, the lower ones under their line, and the whole stack stays inside [top, bottom].
// Returns the baselines, in the order of `line_y`.
inline constexpr double kLabelFontPx = 11;
inline constexpr double kLabelLineHeight = 14;
std::vector<double> LayoutRoofLabels(const std::vector<double>& line_y, double top, double bottom);

// ---- sections (one file each: report_html_<name>.cc) ------------------------------------------

// Plan table, why the kernels are what they are (per-kernel bound and search space) and the
// planner's rationale (report_html_plan.cc).
std::string PlanSection(const json& result);
std::string RationaleSection(const json& result);
// Every candidate: time and spread, own duration, load, full schedule with its diff against
// the parent (report_html_candidates.cc).
std::string CandidatesSection(const json& result);
// The A/B verdicts against the first candidate and against XLA (report_html_verdicts.cc).
std::string VerdictsSection(const json& result);
// One line for the summary table: "faster · ×1.80 (95% CI 1.70-1.90×), 8 rounds", or "" when
// `comparison` holds no verdict.
std::string VerdictLine(const json& comparison);
// The best candidate's kernel source, highlighted, in a <details> (report_html_source.cc).
std::string SourceSection(const json& result, const std::string& best_source);

// The Search section of a search run (empty for other runs).
std::string SearchSection(const json& result);
// The TPU section of a run for a TPU target (empty for other runs): per kernel, Pallas or XLA
// glue, the operations in each, the modelled time (report_html_tpu.cc).
std::string TpuSection(const json& result);
// A search run's best time so far against the measurements spent (duplicates and unfinished
// candidates spend none), as inline SVG; a note when no measurement produced a time.
std::string BestSoFarChart(const json& result);

}  // namespace mk::report::html
