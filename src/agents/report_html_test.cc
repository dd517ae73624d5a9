#include "agents/report_html.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "agents/report_html_internal.h"

namespace mk::agents {
namespace {

using nlohmann::json;

json Candidate(int seq, const std::string& status, json median, json best_so_far) {
  return {{"seq", seq},
          {"candidate_id", 100 + seq},
          {"status", status},
          {"median_s", median},
          {"best_so_far_s", best_so_far},
          {"roofline_fraction", median.is_null() ? json() : json(0.2)},
          {"elapsed_s", 1.5},
          {"schedule", {{"kernels", {{{"threads", 1 + seq % 2}}}}}},
          {"diagnosis", status == "build_failed" ? json("syntax: expected ';'") : json()}};
}

// The schema's example, with six candidates of every status.
json FullResult() {
  json r = {
      {"schema", "maxkernel.optimize.result/1"},
      {"run_id", 3},
      {"status", "succeeded"},
      {"stop_reason", "max_iterations"},
      {"date", "2026-12-03T10:00:00Z"},
      {"task",
       {{"id", "12p"}, {"name", "llama3_70b_rmsnorm"}, {"dir", "/tasks/12p/ci"}, {"scale", "ci"},
        {"dtype", "bf16"}, {"flops", 2.0e6}, {"bytes", 4.0e6}}},
      {"target",
       {{"name", "cpu"}, {"model", "AMD EPYC 9B14"}, {"cores", 2}, {"peak_flops_f32", 7.4e11},
        {"peak_flops_bf16", 9.1e11}, {"bandwidth_bytes_per_s", 2.0e10},
        {"peaks_source", "probe"}}},
      {"options",
       {{"max_iterations", 20}, {"time_budget_s", 600}, {"target_metric", "speedup>=1.5"},
        {"seed", 0}}},
      {"iterations", 6},
      {"elapsed_s", 42.0},
      {"baseline", {{"engine", "xla-cpu"}, {"median_s", 0.001}}},
      {"first", {{"seq", 0}, {"candidate_id", 100}, {"median_s", 0.002}}},
      {"best",
       {{"seq", 4}, {"candidate_id", 104}, {"median_s", 0.0011}, {"p10_s", 0.00108},
        {"p90_s", 0.0012}, {"gflops", 1.8}, {"gbps", 3.6}, {"roofline_fraction", 0.42},
        {"bottleneck", "memory"}, {"speedup_vs_first", 1.8}, {"speedup_vs_baseline", 0.9},
        {"schedule", {{"kernels", {{{"threads", 2}}}}}},
        {"artifacts",
         {{"source", std::string(64, 'a')}, {"library", std::string(64, 'b')},
          {"implementation", std::string(64, 'c')}}}}},
      {"plan",
       {{"lower_bound_s", 0.0002},
        {"rationale_markdown",
         "## Plan\nTwo kernels: a `reduce` and an\nelementwise tail.\n\n- fuse the "
         "**normalization**\n- split rows\n\n```\nthreads = 2\n```\n"},
        {"kernels",
         {{{"id", 0}, {"name", "kernel.0.reduction"}, {"family", "reduction"}, {"flops", 1.0e6},
           {"bytes", 2.0e6}, {"intensity", 0.5}, {"lower_bound_s", 1e-4}, {"bound", "memory"},
           {"measured_s", 6e-4}},
          {{"id", 1}, {"name", "kernel.1.loop"}, {"family", "loop"}, {"flops", 1.0e6},
           {"bytes", 2.0e6}, {"intensity", 0.5}, {"lower_bound_s", 1e-4}, {"bound", "memory"},
           {"measured_s", nullptr}}}}}},
      {"candidates", json::array()}};
  r["candidates"] = {Candidate(0, "correct", 0.002, 0.002),
                     Candidate(1, "build_failed", nullptr, 0.002),
                     Candidate(2, "correct", 0.0015, 0.0015),
                     Candidate(3, "test_failed", nullptr, 0.0015),
                     Candidate(4, "correct", 0.0011, 0.0011),
                     Candidate(5, "correct", 0.0013, 0.0011)};
  return r;
}

// ---- a small XML well-formedness checker -----------------------------------------------------
// The page is meant to be XHTML-clean: every element closed, attributes quoted, every '&' an
// entity, no raw '<' or '>' in text. Returns what is wrong, or "" when nothing is.

bool EntityAt(const std::string& s, size_t i) {
  for (const char* e : {"&amp;", "&lt;", "&gt;", "&quot;", "&#39;"}) {
    if (s.compare(i, std::string(e).size(), e) == 0) return true;
  }
  return false;
}

std::string CheckAttributes(const std::string& tag, size_t name_end) {
  std::set<std::string> seen;
  size_t i = name_end;
  while (true) {
    while (i < tag.size() && tag[i] == ' ') ++i;
    if (i >= tag.size() || (tag[i] == '/' && i + 1 == tag.size())) return "";
    size_t eq = tag.find("=\"", i);
    if (eq == std::string::npos) return "attribute without a quoted value in <" + tag + ">";
    std::string name = tag.substr(i, eq - i);
    if (name.empty() || !std::isalpha(static_cast<unsigned char>(name[0])) ||
        name.find_first_not_of(
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-:") !=
            std::string::npos) {
      return "bad attribute name '" + name + "' in <" + tag + ">";
    }
    if (!seen.insert(name).second) return "duplicate attribute " + name + " in <" + tag + ">";
    size_t close = tag.find('"', eq + 2);
    if (close == std::string::npos) return "unterminated attribute in <" + tag + ">";
    std::string value = tag.substr(eq + 2, close - eq - 2);
    if (value.find('<') != std::string::npos) return "'<' in an attribute of <" + tag + ">";
    for (size_t k = value.find('&'); k != std::string::npos; k = value.find('&', k + 1)) {
      if (!EntityAt(value, k)) return "bare '&' in an attribute of <" + tag + ">";
    }
    i = close + 1;
  }
}

std::string XmlProblems(const std::string& s) {
  const std::string doctype = "<!DOCTYPE html>";
  if (s.compare(0, doctype.size(), doctype) != 0) return "no doctype";
  std::vector<std::string> open;
  size_t root_elements = 0;
  for (size_t i = doctype.size(); i < s.size(); ++i) {
    char c = s[i];
    if (c == '&' && !EntityAt(s, i)) return "bare '&' at " + std::to_string(i);
    if (c == '>') return "raw '>' in text at " + std::to_string(i);
    if (c != '<') continue;
    size_t end = s.find('>', i);
    if (end == std::string::npos) return "unterminated tag at " + std::to_string(i);
    std::string tag = s.substr(i + 1, end - i - 1);
    i = end;
    if (tag.empty()) return "empty tag";
    if (tag[0] == '/') {
      if (open.empty() || open.back() != tag.substr(1)) {
        return "</" + tag.substr(1) + "> closes <" + (open.empty() ? "" : open.back()) + ">";
      }
      open.pop_back();
      continue;
    }
    size_t name_end = tag.find_first_of(" /");
    std::string name = tag.substr(0, name_end);
    if (name.empty() || name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789") !=
                            std::string::npos) {
      return "bad element name in <" + tag + ">";
    }
    if (name_end != std::string::npos) {
      std::string problem = CheckAttributes(tag, name_end);
      if (!problem.empty()) return problem;
    }
    if (open.empty()) ++root_elements;
    if (tag.back() != '/') open.push_back(name);
  }
  if (!open.empty()) return "<" + open.back() + "> never closed";
  if (root_elements != 1) return "more than one root element";
  return "";
}

// The text of the element `<svg id="ID" ...>...</svg>`, or "" when there is none.
std::string Svg(const std::string& html, const std::string& id) {
  size_t start = html.find("<svg id=\"" + id + "\"");
  if (start == std::string::npos) return "";
  size_t end = html.find("</svg>", start);
  return html.substr(start, end - start);
}

size_t Count(const std::string& s, const std::string& needle) {
  size_t n = 0;
  for (size_t i = s.find(needle); i != std::string::npos; i = s.find(needle, i + 1)) ++n;
  return n;
}

// Every coordinate attribute of the SVG parses as a finite number.
std::string NonFiniteCoordinate(const std::string& svg) {
  for (const char* attr : {" x=\"", " y=\"", " cx=\"", " cy=\"", " x1=\"", " y1=\"", " x2=\"",
                           " y2=\"", " width=\"", " height=\""}) {
    for (size_t i = svg.find(attr); i != std::string::npos; i = svg.find(attr, i + 1)) {
      size_t start = i + std::string(attr).size();
      std::string value = svg.substr(start, svg.find('"', start) - start);
      char* end = nullptr;
      double v = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || !std::isfinite(v)) return std::string(attr) + value;
    }
  }
  for (size_t i = svg.find(" d=\""); i != std::string::npos; i = svg.find(" d=\"", i + 1)) {
    std::string d = svg.substr(i + 4, svg.find('"', i + 4) - i - 4);
    if (d.find("nan") != std::string::npos || d.find("inf") != std::string::npos) return d;
  }
  return "";
}

void ExpectSound(const std::string& html) {
  EXPECT_EQ(XmlProblems(html), "");
  EXPECT_EQ(html.find("http"), std::string::npos) << "no URL may appear";
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(NonFiniteCoordinate(html), "");
}

// ---- tests -----------------------------------------------------------------------------------

TEST(ReportHtmlTest, TheCheckerRejectsBrokenMarkup) {
  // The tests below lean on XmlProblems: make sure it can fail.
  EXPECT_NE(XmlProblems("<!DOCTYPE html>\n<html><p>a</html>"), "");
  EXPECT_NE(XmlProblems("<!DOCTYPE html>\n<html>a & b</html>"), "");
  EXPECT_NE(XmlProblems("<!DOCTYPE html>\n<html><a x=\"1\" x=\"2\"></a></html>"), "");
  EXPECT_NE(XmlProblems("<!DOCTYPE html>\n<html><meta charset=utf-8/></html>"), "");
  EXPECT_NE(XmlProblems("<!DOCTYPE html>\n<html>1 > 0</html>"), "");
  EXPECT_EQ(XmlProblems("<!DOCTYPE html>\n<html><br/>a &amp; b</html>"), "");
}

TEST(ReportHtmlTest, FullResultIsWellFormedAndComplete) {
  std::string html = RenderOptimizeReport(FullResult());
  ExpectSound(html);
  for (const char* needle :
       {"llama3_70b_rmsnorm", "12p", "AMD EPYC 9B14", "max_iterations", "2026-12-03T10:00:00Z",
        "1.1 ms", "1.80×", "0.90×", "42.0%", "memory", "xla-cpu", "kernel.0.reduction",
        "maxkernel artifacts get " /* + sha */, "<h4>Plan</h4>", "<code>reduce</code>",
        "<strong>normalization</strong>", "<li>split rows</li>", "<pre><code>threads = 2",
        "syntax: expected &#39;;&#39;", "{&quot;kernels&quot;:[{&quot;threads&quot;:2}]}",
        "1 of 2 kernel(s) have no measured time"}) {
    EXPECT_NE(html.find(needle), std::string::npos) << "missing: " << needle;
  }
  EXPECT_NE(html.find("maxkernel artifacts get " + std::string(64, 'c')), std::string::npos);
}

TEST(ReportHtmlTest, ConvergencePlotHasOneCirclePerCandidate) {
  json r = FullResult();
  std::string svg = Svg(RenderOptimizeReport(r), "convergence");
  ASSERT_FALSE(svg.empty());
  EXPECT_EQ(Count(svg, "<circle"), 6u);
  EXPECT_EQ(Count(svg, "fill=\"#2a9d4b\""), 4u);  // correct
  EXPECT_EQ(Count(svg, "fill=\"#d1495b\""), 1u);  // build_failed
  EXPECT_EQ(Count(svg, "fill=\"#e09f3e\""), 1u);  // test_failed
  EXPECT_EQ(Count(svg, "stroke-dasharray"), 1u);  // the baseline
  EXPECT_NE(svg.find("no time"), std::string::npos);  // the failed candidates' strip
  EXPECT_EQ(Count(svg, "· best</title>"), 1u);
  // 0.001 .. 0.002 is a narrow range: a linear axis.
  EXPECT_EQ(svg.find("log scale"), std::string::npos);

  // Add a slow candidate: the range becomes wide and the axis logarithmic.
  r["candidates"].push_back(Candidate(6, "correct", 0.5, 0.0011));
  svg = Svg(RenderOptimizeReport(r), "convergence");
  EXPECT_EQ(Count(svg, "<circle"), 7u);
  EXPECT_NE(svg.find("log scale"), std::string::npos);
}

TEST(ReportHtmlTest, RooflineHasRoofsAndMeasuredKernelsOnly) {
  std::string svg = Svg(RenderOptimizeReport(FullResult()), "roofline");
  ASSERT_FALSE(svg.empty());
  EXPECT_EQ(Count(svg, "<circle"), 1u);  // kernel 1 has no measured time
  EXPECT_NE(svg.find("#0"), std::string::npos);
  EXPECT_NE(svg.find("module (best)"), std::string::npos);
  EXPECT_NE(svg.find("f32 peak 740 GFLOP/s"), std::string::npos);
  EXPECT_NE(svg.find("bf16 peak 910 GFLOP/s"), std::string::npos);
  EXPECT_NE(svg.find("20 GB/s memory"), std::string::npos);
}

TEST(ReportHtmlTest, NoCandidates) {
  json r = FullResult();
  r["candidates"] = json::array();
  r["best"] = nullptr;
  r["first"] = nullptr;
  r["status"] = "failed";
  r["iterations"] = 0;
  std::string html = RenderOptimizeReport(r);
  ExpectSound(html);
  EXPECT_TRUE(Svg(html, "convergence").empty());
  EXPECT_NE(html.find("No candidates were run"), std::string::npos);
  EXPECT_NE(html.find("No module point"), std::string::npos);
  EXPECT_NE(html.find("No artifacts recorded"), std::string::npos);
}

TEST(ReportHtmlTest, AllCandidatesFailed) {
  json r = FullResult();
  r["candidates"] = {Candidate(0, "build_failed", nullptr, nullptr),
                     Candidate(1, "test_failed", nullptr, nullptr),
                     Candidate(2, "crashed", nullptr, nullptr)};
  r["best"] = nullptr;
  r["first"] = nullptr;
  r["status"] = "failed";
  for (json& k : r["plan"]["kernels"]) k["measured_s"] = nullptr;
  std::string html = RenderOptimizeReport(r);
  ExpectSound(html);
  std::string svg = Svg(html, "convergence");
  EXPECT_EQ(Count(svg, "<circle"), 3u);
  EXPECT_EQ(Count(svg, "fill=\"#888888\""), 1u);  // an unknown status is "other"
  EXPECT_EQ(Count(svg, "<path"), 0u);               // no best-so-far line
  EXPECT_NE(html.find("No candidate passed the tester"), std::string::npos);
  EXPECT_NE(html.find("2 of 2 kernel(s) have no measured time"), std::string::npos);
  // The roofs are still drawn, with no point on them.
  EXPECT_EQ(Count(Svg(html, "roofline"), "<circle"), 0u);
  // Without a baseline either, the plot has no time at all and says so.
  r["baseline"] = nullptr;
  html = RenderOptimizeReport(r);
  ExpectSound(html);
  EXPECT_NE(Svg(html, "convergence").find("no candidate produced a time"), std::string::npos);
}

TEST(ReportHtmlTest, NoBaseline) {
  json r = FullResult();
  r["baseline"] = nullptr;
  r["best"].erase("speedup_vs_baseline");
  std::string html = RenderOptimizeReport(r);
  ExpectSound(html);
  EXPECT_EQ(Count(Svg(html, "convergence"), "stroke-dasharray"), 0u);
  EXPECT_NE(html.find("no baseline recorded"), std::string::npos);
  EXPECT_NE(html.find("No baseline time recorded for this task"), std::string::npos);
}

TEST(ReportHtmlTest, OneCandidate) {
  json r = FullResult();
  r["candidates"] = {Candidate(0, "correct", 0.002, 0.002)};
  r["best"]["seq"] = 0;
  r["best"]["median_s"] = 0.002;
  std::string html = RenderOptimizeReport(r);
  ExpectSound(html);
  EXPECT_EQ(Count(Svg(html, "convergence"), "<circle"), 1u);
}

TEST(ReportHtmlTest, HugeAndTinyValuesStayDrawable) {
  json r = FullResult();
  r["candidates"] = {Candidate(0, "correct", 1e300, 1e300), Candidate(1, "correct", 1e-300, 1e-300),
                     Candidate(1000000, "correct", 5e-324, 5e-324)};
  r["task"]["flops"] = 1.7e308;
  r["task"]["bytes"] = 1e-300;
  r["target"]["peak_flops_f32"] = 1e300;
  r["target"]["bandwidth_bytes_per_s"] = 1e-300;
  r["best"]["median_s"] = 1e-300;
  r["best"]["speedup_vs_first"] = 1e300;
  r["elapsed_s"] = 1e300;
  r["plan"]["kernels"][0]["flops"] = 1e308;
  r["plan"]["kernels"][0]["measured_s"] = 1e-300;
  std::string html = RenderOptimizeReport(r);
  ExpectSound(html);
  EXPECT_EQ(Count(Svg(html, "convergence"), "<circle"), 3u);
  EXPECT_NE(html.find("1e+300×"), std::string::npos);
}

TEST(ReportHtmlTest, MistypedAndMissingFieldsDoNotCrash) {
  for (const json& r : {json(nullptr), json(42), json::array(), json::object(),
                        json{{"task", "not an object"}, {"candidates", 7}, {"plan", {1, 2}},
                             {"best", {{"median_s", "fast"}, {"artifacts", {1, 2}}}},
                             {"target", {{"peak_flops_f32", -1}}}}}) {
    std::string html = RenderOptimizeReport(r);
    EXPECT_EQ(XmlProblems(html), "") << r.dump();
  }
  EXPECT_NE(RenderOptimizeReport(json::object()).find("is not maxkernel.optimize.result/1"),
            std::string::npos);
}

TEST(ReportHtmlTest, EverythingFromTheJsonIsEscaped) {
  json r = FullResult();
  r["task"]["name"] = "<script>alert(1)</script>";
  r["task"]["id"] = "a&b \"q\" 'x'";
  r["target"]["model"] = "</p><b>";
  r["candidates"][1]["diagnosis"] = "<img src=x onerror=alert(1)>";
  r["candidates"][0]["schedule"] = {{"note", "</code><script>"}};
  r["candidates"][2]["status"] = "<b>weird</b>";
  r["plan"]["kernels"][0]["name"] = "<k>";
  r["plan"]["rationale_markdown"] = "# <h1>\n<script>x</script> `<b>` **<i>**\n- <li>\n";
  r["best"]["artifacts"]["source"] = "\"><script>";
  r["baseline"]["engine"] = "<xla>";
  std::string html = RenderOptimizeReport(r);
  ExpectSound(html);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("a&amp;b &quot;q&quot; &#39;x&#39;"), std::string::npos);
  EXPECT_NE(html.find("&lt;img src=x onerror=alert(1)&gt;"), std::string::npos);
  EXPECT_NE(html.find("<h3>&lt;h1&gt;</h3>"), std::string::npos);
  for (const char* raw : {"<img", "<b>weird", "<k>", "<li>\n", "<xla>", "<i>"}) {
    EXPECT_EQ(html.find(raw), std::string::npos) << raw;
  }
}

TEST(ReportHtmlTest, InvalidUtf8AndControlCharactersAreReplaced) {
  json r = FullResult();
  r["task"]["name"] = std::string("bad\xff\x01name");
  std::string html = RenderOptimizeReport(r);
  EXPECT_EQ(XmlProblems(html), "");
  EXPECT_NE(html.find("bad\xEF\xBF\xBD\xEF\xBF\xBDname"), std::string::npos);
}

TEST(ReportHtmlFormatTest, Numbers) {
  using namespace report;
  EXPECT_EQ(FormatSeconds(0.0011), "1.1 ms");
  EXPECT_EQ(FormatSeconds(0.0009997), "1 ms");
  EXPECT_EQ(FormatSeconds(2.5e-7), "250 ns");
  EXPECT_EQ(FormatSeconds(42), "42 s");
  EXPECT_EQ(FormatSeconds(7200), "7200 s");
  EXPECT_EQ(FormatSi(7.4e11, "FLOP/s"), "740 GFLOP/s");
  EXPECT_EQ(FormatSi(1.5e-5, "s"), "15 µs");
  EXPECT_EQ(FormatSi(1e300, "s"), "1e+300 s");
  EXPECT_EQ(FormatSi(0, "s"), "0 s");
  EXPECT_EQ(FormatPlain(0.5), "0.5");
  EXPECT_EQ(FormatPlain(1234.4), "1234");
  EXPECT_EQ(FormatPercent(0.423), "42.3%");
  EXPECT_EQ(FormatRatio(1.8), "1.80×");
  EXPECT_EQ(FormatCount(123456789), "123,456,789");
  EXPECT_EQ(FormatCount(-1000), "-1,000");
}

TEST(ReportHtmlFormatTest, Markdown) {
  using report::MarkdownToHtml;
  EXPECT_EQ(
      MarkdownToHtml("# Title\n\nsome `a<b` and **bold**\ntext\n\n1. one\n2) two\n* x\n  more"),
      "<h3>Title</h3>\n<p>some <code>a&lt;b</code> and <strong>bold</strong> text</p>\n"
      "<ol>\n<li>one</li>\n<li>two</li>\n</ol>\n<ul>\n<li>x more</li>\n</ul>\n");
  // Unmatched markers and an unclosed fence stay text.
  EXPECT_EQ(MarkdownToHtml("a ` b ** c"), "<p>a ` b ** c</p>\n");
  EXPECT_EQ(MarkdownToHtml("```\n<x>\n"), "<pre><code>&lt;x&gt;\n\n</code></pre>\n");
  EXPECT_EQ(MarkdownToHtml(""), "");
}

}  // namespace
}  // namespace mk::agents
