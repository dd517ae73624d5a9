#include "report/report_html.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "report/report_html_internal.h"
#include "report/report_html_test_util.h"

namespace mk::report {
namespace {

using nlohmann::json;
using namespace test_util;

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
        "syntax: expected &#39;;&#39;", "#0 kernel.0.reduction threads 1 → 2",
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
  using namespace html;
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
  using html::MarkdownToHtml;
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
}  // namespace mk::report

namespace mk::report {
namespace {

TEST(ReportHtmlTest, ASearchRunShowsWhatTheBoundPrunedAndWhyEscaped) {
  using test_util::FullResult;
  json r = FullResult();
  EXPECT_EQ(RenderOptimizeReport(r).find("id=\"search\""), std::string::npos);  // auto runs: none
  r["search"] = {{"algorithm", "astar"},
                 {"space_size", 5.2e9},
                 {"proposed", 35},
                 {"expanded", 73},
                 {"frontier", 109},
                 {"pruned_points", 2.6e9},
                 {"pruned_share", 0.5},
                 {"predicted", 1489},
                 {"pruned_by", {{{"decision", "kernel 0 threads=1 <b>"}, {"points", 2.6e9}}}},
                 {"admissibility", {{"checked", 35}, {"ok", false}, {"median_bound_over_measured", 0.71}}}};
  std::string html = RenderOptimizeReport(r);
  test_util::ExpectSound(html);
  for (const char* needle : {"<h2>Search</h2>", "astar", "50.0% of the space", "1489",
                             "kernel 0 threads=1 &lt;b&gt;", "<strong>violations</strong>",
                             "median bound/measured 0.71"}) {
    EXPECT_NE(html.find(needle), std::string::npos) << "missing: " << needle;
  }
}

TEST(ReportHtmlTest, ATpuRunSaysWhichOperationsRunInPallasAndWhichInGlueEscaped) {
  using test_util::FullResult;
  json r = FullResult();
  EXPECT_EQ(RenderOptimizeReport(r).find("id=\"tpu\""), std::string::npos);  // CPU runs: none
  r["target"] = {{"name", "tpu-v5e"}, {"kind", "tpu"}};
  r["tpu"] = {{"xla_tpu_estimate", {{"ok", true}, {"cost", {{"optimal_seconds", 1.84e-6}}}}},
              {"modelled_ratio", 0.46}};
  r["best"]["model"] = {
      {"modelled_s", 3.97e-6},
      {"pallas_kernels", 1},
      {"glue_kernels", 1},
      {"kernels",
       {{{"name", "kernel.0.contraction"}, {"runs", "pallas"}, {"modelled_s", 3.5e-6}, {"bound", "mxu"},
         {"ops_in_pallas", {"dot.1", "add.<2>"}}, {"ops_in_glue", {"transpose.3"}}, {"reason", nullptr}},
        {{"name", "kernel.2.reduction"}, {"runs", "fused"}, {"modelled_s", 0.0}, {"bound", "fused"},
         {"ops_in_pallas", {"exp.5"}}, {"ops_in_glue", json::array()}, {"reason", "fused into kernel.0.contraction"}},
        {{"name", "kernel.1.standalone"}, {"runs", "glue"}, {"modelled_s", 4.7e-7}, {"bound", "roofline"},
         {"ops_in_pallas", json::array()}, {"ops_in_glue", {"gather.4"}},
         {"reason", "gather <has no blocked form>"}}}}};
  std::string html = RenderOptimizeReport(r);
  test_util::ExpectSound(html);
  for (const char* needle : {"id=\"tpu\"", "Modelled, not measured", "tpu-v5e", "Pallas kernel",
                             "XLA glue", "<code>dot.1</code>", "<code>add.&lt;2&gt;</code>",
                             "<code>transpose.3</code>", "<code>gather.4</code>",
                             "gather &lt;has no blocked form&gt;", "never a speedup",
                             "fused into a Pallas kernel", "fused into kernel.0.contraction"}) {
    EXPECT_NE(html.find(needle), std::string::npos) << "missing: " << needle;
  }
  EXPECT_EQ(html.find("add.<2>"), std::string::npos);
}

// Item 6: the best-so-far curve against measurements (a duplicate or an unfinished candidate
// spends none), the pruned share split by reason, the generations and the model's prior, every
// string escaped.
TEST(ReportHtmlTest, ASearchRunDrawsItsBestSoFarAgainstMeasurementsAndThePrunedShare) {
  using test_util::FullResult;
  json r = FullResult();
  r["candidates"] = json::array();
  auto cand = [](int seq, const char* status, json median) {
    return json{{"seq", seq}, {"status", status}, {"median_s", median}, {"schedule", json::object()}};
  };
  r["candidates"].push_back(cand(0, "correct", 3e-6));
  r["candidates"].push_back(cand(1, "duplicate", nullptr));
  r["candidates"].push_back(cand(2, "build_failed", nullptr));
  r["candidates"].push_back(cand(3, "correct", 2e-6));
  r["candidates"].push_back(cand(4, "unfinished", nullptr));
  r["search"] = {{"algorithm", "evolutionary"},
                 {"space_size", 1000},
                 {"proposed", 4},
                 {"pruned_points", 300},
                 {"pruned_share", 0.3},
                 {"generations", 7},
                 {"pruned_by", {{{"decision", "kernel 0 threads=1 <i>"}, {"points", 200}},
                                {{"decision", "constraint tile & budget"}, {"points", 100}}}},
                 {"prior", {{"source", "file"}, {"path", "/m/<model>.json"}, {"sha256", "abcdef0123456789"},
                            {"run_id", nullptr}, {"note", nullptr}}},
                 {"admissibility", {{"checked", 2}, {"ok", true}}}};
  std::string html = RenderOptimizeReport(r);
  test_util::ExpectSound(html);
  for (const char* needle : {"id=\"best-so-far\"", "measurements spent", "measurement 1: ",
                             "measurement 3: ", "generations bred", "file /m/&lt;model&gt;.json",
                             "abcdef012345", "kernel 0 threads=1 &lt;i&gt;", "20.0%",
                             "constraint tile &amp; budget", "10.0%", "30.0% of the space pruned"}) {
    EXPECT_NE(html.find(needle), std::string::npos) << "missing: " << needle;
  }
  // Three measurements (the duplicate and the unfinished spent none): no fourth point.
  EXPECT_EQ(html.find("measurement 4: "), std::string::npos);
  EXPECT_EQ(html.find("measurement 2: "), std::string::npos);  // the failure did not improve
  EXPECT_EQ(html.find("<model>"), std::string::npos);
  EXPECT_EQ(html.find("<i>"), std::string::npos);

  // No time at all: a note instead of a curve.
  for (auto& c : r["candidates"]) c["median_s"] = nullptr;
  html = RenderOptimizeReport(r);
  EXPECT_EQ(html.find("id=\"best-so-far\""), std::string::npos);
  EXPECT_NE(html.find("no best-so-far curve"), std::string::npos);
}

}  // namespace
}  // namespace mk::report
