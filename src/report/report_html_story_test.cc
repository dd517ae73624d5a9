// The report tells the story (issue 29, item 6) and the roofline chart's defects: full
// schedules diffed against their parent, own durations, the best kernel's source, why the
// kernels are what they are, the measurement verdicts, no bf16 roof without bf16, labels apart,
// nothing above 100% of roofline. Every result here is hand-made JSON.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "report/report_html.h"
#include "report/report_html_internal.h"
#include "report/report_html_test_util.h"

namespace mk::report {
namespace {

using nlohmann::json;
using namespace test_util;

// Two kernels per schedule: the candidate table must show both, not just the first.
json TwoKernelSchedule(int threads0, int unroll0, int threads1) {
  return {{"kernels", {{{"threads", threads0}, {"unroll", unroll0}}, {{"threads", threads1}}}}};
}

// The section of the page whose id is `id` (up to its </section>), or "".
std::string Section(const std::string& html, const std::string& id) {
  size_t start = html.find("<section id=\"" + id + "\"");
  if (start == std::string::npos) return "";
  return html.substr(start, html.find("</section>", start) - start);
}

// The <tr> of the candidates table whose first cell is `seq`.
std::string CandidateRow(const std::string& html, int seq) {
  std::string table = Section(html, "candidates");
  size_t start = table.find("<tr><td>" + std::to_string(seq) + "</td>");
  if (start == std::string::npos) start = table.find("<tr class=\"best\"><td>" + std::to_string(seq) + "</td>");
  if (start == std::string::npos) return "";
  return table.substr(start, table.find("</tr>", start) - start);
}

TEST(ReportHtmlStoryTest, EveryKernelOfTheScheduleWithTheDiffAgainstTheBestSoFar) {
  json r = FullResult();
  r["candidates"][0]["schedule"] = TwoKernelSchedule(1, 4, 1);
  r["candidates"][1]["schedule"] = TwoKernelSchedule(2, 4, 1);  // failed
  r["candidates"][2]["schedule"] = TwoKernelSchedule(1, 8, 1);
  r["candidates"][3]["schedule"] = TwoKernelSchedule(1, 8, 2);
  r["candidates"][4]["schedule"] = TwoKernelSchedule(1, 8, 1);
  r["candidates"][5]["schedule"] = TwoKernelSchedule(1, 8, 1);
  std::string html = RenderOptimizeReport(r);
  ExpectSound(html);
  // Seq 0 has nothing before it.
  EXPECT_NE(CandidateRow(html, 0).find("no parent"), std::string::npos);
  // ... but where the plan records its initial schedule, seq 0 is compared with that.
  json with_initial = r;
  with_initial["plan"]["initial"] = TwoKernelSchedule(1, 2, 1);
  std::string row0 = CandidateRow(RenderOptimizeReport(with_initial), 0);
  EXPECT_NE(row0.find("vs the planner&#39;s initial schedule:</span> <mark class=\"changed\">#0 "
                      "kernel.0.reduction unroll 2 → 4</mark>"),
            std::string::npos) << row0;
  // Seq 2's parent is seq 0 (seq 1 failed): only kernel 0's unroll changed.
  std::string row2 = CandidateRow(html, 2);
  EXPECT_NE(row2.find("vs seq 0 (best so far)"), std::string::npos) << row2;
  EXPECT_NE(row2.find("<mark class=\"changed\">#0 kernel.0.reduction unroll 4 → 8</mark>"),
            std::string::npos) << row2;
  EXPECT_NE(row2.find("<mark class=\"changed\">unroll=8</mark>"), std::string::npos);
  EXPECT_EQ(row2.find("<mark class=\"changed\">threads"), std::string::npos) << row2;
  // The second kernel is listed in full, folded.
  EXPECT_NE(row2.find("<details><summary>full schedule (2 kernel(s), 3 parameters)</summary>"),
            std::string::npos) << row2;
  EXPECT_NE(row2.find("#1 kernel.1.loop: threads=1"), std::string::npos) << row2;
  // Seq 3 derives from seq 2 (the best so far then): the change is in the second kernel.
  EXPECT_NE(CandidateRow(html, 3).find("#1 kernel.1.loop threads 1 → 2"), std::string::npos);
  // Seq 4 equals its parent, seq 2.
  EXPECT_NE(CandidateRow(html, 4).find("vs seq 2 (best so far): no parameter changed"),
            std::string::npos);
  // Seq 5's best so far is seq 4 (1.1 ms).
  EXPECT_NE(CandidateRow(html, 5).find("vs seq 4 (best so far)"), std::string::npos);
  EXPECT_NE(html.find("does not record which candidate each was derived from"), std::string::npos);
}

TEST(ReportHtmlStoryTest, AnExplicitParentWinsOverTheBestSoFar) {
  json r = FullResult();
  r["candidates"][0]["schedule"] = TwoKernelSchedule(1, 4, 1);
  r["candidates"][2]["schedule"] = TwoKernelSchedule(1, 8, 1);
  r["candidates"][4]["schedule"] = TwoKernelSchedule(2, 4, 1);
  r["candidates"][4]["parent_seq"] = 0;
  std::string html = RenderOptimizeReport(r);
  ExpectSound(html);
  std::string row4 = CandidateRow(html, 4);
  EXPECT_NE(row4.find("vs seq 0:"), std::string::npos) << row4;
  EXPECT_NE(row4.find("threads 1 → 2"), std::string::npos) << row4;
  EXPECT_EQ(row4.find("unroll 8 → 4"), std::string::npos) << "diffed against the best so far";
  EXPECT_NE(html.find("The parent is the candidate it was derived from (parent_seq)"),
            std::string::npos);
}

TEST(ReportHtmlStoryTest, EachCandidateHasItsOwnDurationFromElapsedDifferences) {
  json r = FullResult();
  double elapsed[] = {0, 2, 3.5, 10, 10.25, 12};
  for (int i = 0; i < 6; ++i) r["candidates"][i]["elapsed_s"] = elapsed[i];
  std::string html = RenderOptimizeReport(r);
  ExpectSound(html);
  auto took = [&](int seq) {
    // The "took" cell is the 7th cell; its text is the only one in "s" after best-so-far and
    // roofline, so look for the formatted value in the row.
    return CandidateRow(html, seq);
  };
  EXPECT_NE(took(0).find("<td class=\"num\">2 s</td>"), std::string::npos) << took(0);
  EXPECT_NE(took(2).find("<td class=\"num\">6.5 s</td>"), std::string::npos) << took(2);
  EXPECT_NE(took(4).find("<td class=\"num\">1.75 s</td>"), std::string::npos) << took(4);
  // The cumulative value (10.25 s since the first candidate) is not shown as a duration.
  EXPECT_EQ(took(4).find("10.2"), std::string::npos) << took(4);
  EXPECT_NE(html.find("the last candidate has none"), std::string::npos);
}

TEST(ReportHtmlStoryTest, DurationFieldIsPreferredWhenPresent) {
  json r = FullResult();
  for (int i = 0; i < 6; ++i) {
    r["candidates"][i]["elapsed_s"] = 100.0 * i;
    r["candidates"][i]["duration_s"] = 0.5 + i;
  }
  std::string html = RenderOptimizeReport(r);
  ExpectSound(html);
  EXPECT_NE(CandidateRow(html, 3).find("<td class=\"num\">3.5 s</td>"), std::string::npos);
  EXPECT_NE(CandidateRow(html, 5).find("<td class=\"num\">5.5 s</td>"), std::string::npos);
  EXPECT_EQ(CandidateRow(html, 3).find("100 s"), std::string::npos);
  EXPECT_NE(html.find("own duration (build, test and measurement)"), std::string::npos);
}

TEST(ReportHtmlStoryTest, CandidatesShowSpreadLoadLibraryAndDuplicates) {
  json r = FullResult();
  r["candidates"][2]["p10_s"] = 0.0014;
  r["candidates"][2]["p90_s"] = 0.0019;
  r["candidates"][2]["library"] = std::string(64, 'd');
  r["candidates"][2]["load"] = {{"load_avg_1m", 3.9}, {"busy_cores", 2}, {"cores", 2},
                                {"window_s", 1.0}, {"loaded", true}};
  r["candidates"][5]["status"] = "duplicate";
  r["candidates"][5]["duplicate_of"] = 2;
  r["candidates"][5]["median_s"] = nullptr;
  std::string html = RenderOptimizeReport(r);
  ExpectSound(html);
  std::string row2 = CandidateRow(html, 2);
  EXPECT_NE(row2.find("p10 1.4 ms · p90 1.9 ms"), std::string::npos) << row2;
  EXPECT_NE(row2.find("lib <code>dddddddddddd</code>"), std::string::npos) << row2;
  EXPECT_NE(row2.find("3.9 on 2 cores"), std::string::npos) << row2;
  EXPECT_NE(row2.find("<span class=\"badge loaded\">loaded</span>"), std::string::npos) << row2;
  std::string row5 = CandidateRow(html, 5);
  EXPECT_NE(row5.find("<span class=\"badge duplicate\">duplicate</span>"), std::string::npos);
  EXPECT_NE(row5.find("duplicate of seq 2: the same library, not measured again"),
            std::string::npos) << row5;
  // In the convergence plot the duplicate has its own colour and legend entry, in the no-time strip.
  EXPECT_EQ(Count(Svg(html, "convergence"), "fill=\"#5a7fa8\""), 1u);
  EXPECT_NE(html.find("duplicate (1)"), std::string::npos);
}

TEST(ReportHtmlStoryTest, BestSourceIsHighlightedAndFolded) {
  json r = FullResult();
  ReportExtras extras;
  extras.best_source =
      "#include <stdint.h>\n// row loop\nstatic inline float f(const float* x, int64_t n) {\n"
      "  return x[0] * 1.5e-3f + n; /* tail */\n}\nconst char* s = \"a<b\";\n";
  std::string html = RenderOptimizeReport(r, extras);
  ExpectSound(html);
  std::string section = Section(html, "source");
  ASSERT_FALSE(section.empty());
  EXPECT_NE(section.find("<details id=\"best-source\"><summary>seq 4, 6 lines, sha256 aaaaaaaaaaaa"),
            std::string::npos) << section;
  for (const char* needle :
       {"<span class=\"pp\">#include &lt;stdint.h&gt;</span>", "<span class=\"cm\">// row loop</span>",
        "<span class=\"kw\">static</span> <span class=\"kw\">inline</span> <span class=\"ty\">float</span> f(",
        "<span class=\"nu\">1.5e-3f</span>", "<span class=\"cm\">/* tail */</span>",
        "<span class=\"st\">&quot;a&lt;b&quot;</span>", "<span class=\"ty\">int64_t</span> n"}) {
    EXPECT_NE(section.find(needle), std::string::npos) << needle;
  }
  // Without the source, the section says how to fetch it.
  std::string without = Section(RenderOptimizeReport(r), "source");
  EXPECT_NE(without.find("maxkernel artifacts get " + std::string(64, 'a')), std::string::npos);
  EXPECT_EQ(without.find("<details"), std::string::npos);
}

TEST(ReportHtmlStoryTest, HighlighterEdgeCases) {
  using html::HighlightCpp;
  EXPECT_EQ(HighlightCpp("a/b"), "a/b");
  EXPECT_EQ(HighlightCpp("x = 'c';"), "x = <span class=\"st\">&#39;c&#39;</span>;");
  EXPECT_EQ(HighlightCpp("\"a\\\"b\" 0x1Fu"),
            "<span class=\"st\">&quot;a\\&quot;b&quot;</span> <span class=\"nu\">0x1Fu</span>");
  // '#' in the middle of a line is no directive; an identifier with digits is no number.
  EXPECT_EQ(HighlightCpp("a # b x1"), "a # b x1");
  EXPECT_EQ(HighlightCpp("  #pragma omp parallel // why\n"),
            "  <span class=\"pp\">#pragma omp parallel </span><span class=\"cm\">// why</span>\n");
  // Unterminated comment and string run to the end (of the input, of the line).
  EXPECT_EQ(HighlightCpp("/* open"), "<span class=\"cm\">/* open</span>");
  EXPECT_EQ(HighlightCpp("\"open\nint"),
            "<span class=\"st\">&quot;open</span>\n<span class=\"ty\">int</span>");
  EXPECT_EQ(HighlightCpp(""), "");
}

TEST(ReportHtmlStoryTest, HostileSourceAndMarkdownStayText) {
  json r = FullResult();
  r["plan"]["rationale_markdown"] =
      "## <img src=x onerror=alert(1)>\n- `</code><script>` **</strong><iframe>**\n"
      "```\n</pre><script>alert(2)</script>\n```\n1. a & b\n";
  r["plan"]["kernels"][0]["space"] = {{{"name", "<svg onload=x>"}, {"values", {1, 2}},
                                       {"initial", 1}, {"doc", "</td><script>"}}};
  ReportExtras extras;
  extras.best_source =
      "// </code></pre></details><script>alert(3)</script>\n"
      "const char* s = \"</span><script>\"; /* <iframe> */ #define X <b>\n"
      "#include \"<img>\"\nchar c = '<'; int \xff bad;\n";
  std::string html = RenderOptimizeReport(r, extras);
  ExpectSound(html);
  for (const char* raw : {"<script", "<img", "<iframe", "<svg onload", "X <b>"}) {
    EXPECT_EQ(html.find(raw), std::string::npos) << raw;
  }
  EXPECT_NE(html.find("&lt;script&gt;alert(3)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("&lt;/pre&gt;&lt;script&gt;alert(2)"), std::string::npos);
  EXPECT_NE(html.find("<li>a &amp; b</li>"), std::string::npos);
  EXPECT_NE(html.find("#define X &lt;b&gt;"), std::string::npos);
  EXPECT_NE(html.find("</span> \xEF\xBF\xBD bad"), std::string::npos);  // broken UTF-8 replaced
}

TEST(ReportHtmlStoryTest, WhyTheseKernelsShowsBoundsAndTheSearchSpace) {
  json r = FullResult();
  r["plan"]["kernels"][0]["compute_s"] = 1.35e-6;
  r["plan"]["kernels"][0]["memory_s"] = 1e-4;
  r["plan"]["kernels"][0]["compute_dtype"] = "f32";
  r["plan"]["kernels"][0]["space"] = {
      {{"name", "threads"}, {"values", {1, 2}}, {"initial", 1},
       {"doc", "worker threads over rows"}},
      {{"name", "unroll"}, {"values", {1, 2, 4}}, {"initial", 4}, {"doc", "row loop unroll"}}};
  std::string plan = Section(RenderOptimizeReport(r), "plan");
  EXPECT_NE(plan.find("<h3 id=\"plan-why\">Why these kernels</h3>"), std::string::npos);
  EXPECT_NE(plan.find("#0 kernel.0.reduction (reduction)"), std::string::npos);
  EXPECT_NE(plan.find("<b>memory-bound</b>: moving 2 MB takes at least 100 µs, computing 1 MFLOP "
                      "in f32 at least 1.35 µs"),
            std::string::npos) << plan;
  EXPECT_NE(plan.find("<code>threads</code> ∈ [1,2], initial <b>1</b>: worker threads over rows"),
            std::string::npos) << plan;
  EXPECT_NE(plan.find("<code>unroll</code> ∈ [1,2,4], initial <b>4</b>"), std::string::npos);
  EXPECT_NE(plan.find("no tunable parameters"), std::string::npos);  // kernel 1 has no space
  // The rationale follows the plan, before the candidates.
  std::string html = RenderOptimizeReport(r);
  EXPECT_LT(html.find("id=\"rationale\""), html.find("id=\"candidates\""));
  EXPECT_LT(html.find("id=\"plan\""), html.find("id=\"rationale\""));
}

TEST(ReportHtmlStoryTest, WhyTheseKernelsSaysWhatThePlannerFusedAndKeptOut) {
  json r = FullResult();
  r["plan"]["kernels"][0]["hero"] = "dot";
  r["plan"]["kernels"][0]["fusion"] = {
      {{"instruction", "add"}, {"fused", true}, {"reason", "elementwise on %dot's result"}},
      {{"instruction", "relu"}, {"fused", true}, {"reason", "elementwise on %dot's result"}},
      {{"instruction", "<b>x"}, {"fused", false}, {"reason", "it would add a <second> output"}}};
  std::string plan = Section(RenderOptimizeReport(r), "plan");
  EXPECT_NE(plan.find("why the planner fused what it fused"), std::string::npos);
  EXPECT_NE(plan.find("led by <code>%dot</code>"), std::string::npos) << plan;
  // Instructions merged for one reason share a line; what was kept out follows, escaped.
  EXPECT_NE(plan.find("<li>merged <code>%add</code>, <code>%relu</code>: elementwise on %dot&#39;s "
                      "result</li>"),
            std::string::npos) << plan;
  EXPECT_NE(plan.find("<li>kept out <code>%&lt;b&gt;x</code>: it would add a &lt;second&gt; "
                      "output</li>"),
            std::string::npos) << plan;
  // Kernel 1 records no notes: the report says so rather than showing nothing.
  EXPECT_NE(plan.find("nothing merged"), std::string::npos);
}

json Verdict(const std::string& v, double ratio, double lo, double hi, bool bimodal) {
  return {{"verdict", v}, {"ratio", ratio}, {"ci95", {lo, hi}}, {"rounds", 8},
          {"bimodal", bimodal}, {"reason", "the interval lies above +2%"}};
}

json Load(double avg, bool loaded) {
  return {{"load_avg_1m", avg}, {"busy_cores", 1}, {"cores", 2}, {"window_s", 1.0},
          {"loaded", loaded}};
}

TEST(ReportHtmlStoryTest, MeasurementVerdictsAreShown) {
  json r = FullResult();
  r["best"]["comparison_with_first"] = {
      {"rounds", 8}, {"first_median_s", 0.002}, {"best_median_s", 0.0011}, {"speedup", 1.82},
      {"round_ratios", {1.8, 1.85, 1.79, 1.81, 1.83, 1.84, 1.8, 1.82}}, {"remeasured_rounds", 1},
      {"verdict", Verdict("faster", 1.81, 1.79, 1.84, false)}, {"load_before", Load(0.4, false)},
      {"load_after", Load(3.9, true)}, {"challenger_seq", 4}, {"kept", "best"}};
  r["best"]["comparison_with_xla"] = {
      {"engine", "xla:cpu"}, {"rounds", 6}, {"ours_median_s", 0.0011}, {"xla_median_s", 0.001},
      {"speedup", 0.91}, {"round_ratios", {0.9, 0.92, 0.5, 0.91, 0.93, 0.49}},
      {"verdict", Verdict("inconclusive", 0.76, 0.5, 0.93, true)},
      {"load_before", Load(0.2, false)}, {"load_after", Load(0.3, false)},
      {"xla", {{"jax", "0.4.30"}, {"threads", 2}}}};
  std::string html = RenderOptimizeReport(r);
  ExpectSound(html);
  std::string v = Section(html, "verdicts");
  for (const char* needle :
       {"<span class=\"badge faster\">faster</span> best is 1.81× as fast as first · 95% CI 1.79× – 1.84×",
        "8 interleaved rounds, 1 re-measured · one cluster", "first 2 ms · best 1.1 ms",
        "<code>1.8, 1.85, 1.79", "before: load 0.4 on 2 cores, 1 busy over 1 s · after: load 3.9 "
        "on 2 cores, 1 busy over 1 s (loaded)",
        "seq 4", "the interval lies above +2%",
        "<span class=\"badge inconclusive\">inconclusive</span> ours is 0.76× as fast as xla:cpu",
        "<b>bimodal</b>: the rounds split into two clusters", "xla:cpu 1 ms · ours 1.1 ms",
        "&quot;jax&quot;:&quot;0.4.30&quot;"}) {
    EXPECT_NE(v.find(needle), std::string::npos) << needle;
  }
  // The summary carries the verdicts next to the speedups, and prefers the interleaved ratios.
  std::string summary = Section(html, "summary");
  EXPECT_NE(summary.find("1.82× · <span class=\"badge faster\">faster</span> 1.81× (95% CI 1.79× – "
                         "1.84×), 8 rounds"),
            std::string::npos) << summary;
  EXPECT_NE(summary.find("0.91× (interleaved in this run) · <span class=\"badge inconclusive\">"),
            std::string::npos) << summary;
}

TEST(ReportHtmlStoryTest, NotComparedFailedAndMissingComparisons) {
  json r = FullResult();
  r["best"]["comparison_with_first"] = {
      {"verdict", {{"verdict", "not compared"}, {"reason", "the run was interrupted"}}},
      {"challenger_seq", 4}, {"kept", "first"}};
  r["best"]["comparison_with_xla"] = {{"error", "jax is not installed <here>"}};
  std::string html = RenderOptimizeReport(r);
  ExpectSound(html);
  std::string v = Section(html, "verdicts");
  EXPECT_NE(v.find("<span class=\"badge other\">not compared</span>"), std::string::npos) << v;
  EXPECT_NE(v.find("the run was interrupted"), std::string::npos);
  EXPECT_NE(v.find("first (the challenger did not win the A/B)"), std::string::npos);
  EXPECT_NE(v.find("The comparison with XLA failed: jax is not installed &lt;here&gt;"),
            std::string::npos);
  // Without an interleaved XLA ratio the summary says its ratio has no verdict.
  EXPECT_NE(Section(html, "summary").find("against a median recorded at another time: no verdict"),
            std::string::npos);
  r["best"]["comparison_with_first"] = nullptr;
  r["best"]["comparison_with_xla"] = nullptr;
  v = Section(RenderOptimizeReport(r), "verdicts");
  EXPECT_NE(v.find("records no A/B comparison"), std::string::npos);
  EXPECT_NE(v.find("records no interleaved comparison with XLA"), std::string::npos);
}

TEST(ReportHtmlStoryTest, NoRooflineFigureAboveOneHundredPercent) {
  json r = FullResult();
  r["best"]["roofline_fraction"] = nullptr;
  r["best"]["roofline_note"] = "the kernel beat the measured peak <re-probe>";
  r["candidates"][4]["roofline_fraction"] = 1.025;
  // Kernel 0 measured faster than its roof allows (2 MB at 20 GB/s needs 100 µs).
  r["plan"]["kernels"][0]["measured_s"] = 9e-5;
  std::string html = RenderOptimizeReport(r);
  ExpectSound(html);
  EXPECT_EQ(html.find("102.5%"), std::string::npos);
  EXPECT_EQ(html.find("111.1%"), std::string::npos);
  EXPECT_EQ(html.find("100.0%"), std::string::npos) << "clamped";
  EXPECT_NE(Section(html, "summary").find("the kernel beat the measured peak &lt;re-probe&gt;"),
            std::string::npos);
  EXPECT_NE(CandidateRow(html, 4).find("above the measured peak"), std::string::npos);
  EXPECT_NE(Svg(html, "roofline").find("above the roof: the measured peak is too low"),
            std::string::npos);
}

TEST(ReportHtmlStoryTest, TargetIsaAndCompileFlagsAreShown) {
  json r = FullResult();
  r["target"]["isa_level"] = "avx2";
  r["target"]["compile_flags"] = "-O3 -march=x86-64-v3";
  r["target"]["peak_flops_bf16"] = nullptr;
  std::string html = RenderOptimizeReport(r);
  ExpectSound(html);
  EXPECT_NE(html.find("Kernels built for ISA <b>avx2</b> · compiled with <code>-O3 "
                      "-march=x86-64-v3</code>"),
            std::string::npos);
  EXPECT_NE(html.find("no bf16 arithmetic"), std::string::npos);
}

TEST(ReportHtmlStoryTest, MistypedNewFieldsDoNotCrash) {
  json r = FullResult();
  r["candidates"].push_back(7);
  r["candidates"].push_back(json::array({1, 2}));
  r["candidates"][0]["schedule"] = {{"kernels", "not an array"}};
  r["candidates"][1]["schedule"] = {{"kernels", {1, nullptr, {{"threads", {1, 2}}}}}};
  r["candidates"][2]["load"] = 3;
  r["candidates"][2]["duration_s"] = "long";
  r["candidates"][3]["parent_seq"] = 99;
  r["candidates"][4]["parent_seq"] = 4;  // itself
  r["candidates"][5]["duplicate_of"] = {{"x", 1}};
  r["best"]["comparison_with_first"] = "faster";
  r["best"]["comparison_with_xla"] = {{"verdict", {{"ci95", {"a", nullptr}}, {"verdict", 3}}},
                                      {"round_ratios", {"x", nullptr}}, {"load_before", 1}};
  r["plan"]["kernels"][0]["space"] = "none";
  r["plan"]["kernels"][1]["space"] = {1, {{"values", "?"}}};
  r["plan"]["initial"] = 5;
  r["target"]["isa_level"] = 7;
  std::string html = RenderOptimizeReport(r, ReportExtras{std::string("\0\x01\xc3", 3)});
  ExpectSound(html);
  EXPECT_NE(CandidateRow(html, 3).find("no parent"), std::string::npos);  // 99 is unknown
}

// ---- roofline chart defects (issue 29, "Also seen") ---------------------------------------------

struct Label {
  double x, y;
  std::string text;
};

// The roof labels ("... peak ...") of the roofline SVG.
std::vector<Label> PeakLabels(const std::string& svg) {
  std::vector<Label> out;
  for (size_t i = svg.find("<text "); i != std::string::npos; i = svg.find("<text ", i + 1)) {
    size_t close = svg.find('>', i);
    std::string text = svg.substr(close + 1, svg.find("</text>", close) - close - 1);
    if (text.find(" peak ") == std::string::npos) continue;
    auto attr = [&](const std::string& name) {
      size_t a = svg.find(" " + name + "=\"", i);
      return std::strtod(svg.c_str() + a + name.size() + 3, nullptr);
    };
    out.push_back({attr("x"), attr("y"), text});
  }
  return out;
}

// Whether two right-aligned labels' boxes intersect (glyphs at most 0.62 em wide; a box from
// the cap height above the baseline to the descenders below it).
bool Intersect(const Label& a, const Label& b) {
  auto box = [](const Label& l) {
    double w = 0.62 * html::kLabelFontPx * static_cast<double>(l.text.size());
    return std::array<double, 4>{l.x - w, l.y - html::kLabelFontPx, l.x, l.y + 3};
  };
  auto p = box(a), q = box(b);
  return p[0] < q[2] && q[0] < p[2] && p[1] < q[3] && q[1] < p[3];
}

TEST(ReportHtmlRooflineTest, NoBf16RoofWithoutBf16) {
  json r = FullResult();
  r["target"]["peak_flops_bf16"] = nullptr;
  std::string svg = Svg(RenderOptimizeReport(r), "roofline");
  EXPECT_EQ(svg.find("bf16"), std::string::npos);
  EXPECT_EQ(PeakLabels(svg).size(), 1u);
  // An older result gave a CPU without bf16 the f32 peak as its bf16 peak: one roof, not two
  // labels drawn over each other.
  r["target"]["peak_flops_bf16"] = r["target"]["peak_flops_f32"];
  std::string html = RenderOptimizeReport(r);
  svg = Svg(html, "roofline");
  EXPECT_EQ(svg.find("bf16 peak"), std::string::npos);
  EXPECT_EQ(PeakLabels(svg).size(), 1u);
  EXPECT_NE(html.find("No bf16 roof: its peak equals the f32 peak"), std::string::npos);
  // An ISA level without bf16 draws no bf16 roof whatever the peak says.
  r["target"]["peak_flops_bf16"] = 9.1e11;
  r["target"]["isa_level"] = "avx512";
  svg = Svg(RenderOptimizeReport(r), "roofline");
  EXPECT_EQ(svg.find("bf16 peak"), std::string::npos);
  r["target"]["isa_level"] = "avx512bf16";
  svg = Svg(RenderOptimizeReport(r), "roofline");
  EXPECT_NE(svg.find("bf16 peak 910 GFLOP/s"), std::string::npos);
}

TEST(ReportHtmlRooflineTest, PeakLabelsOfClosePeaksDoNotOverlap) {
  for (double bf16 : {7.41e11, 7.5e11, 8e11, 9.1e11, 1.5e12, 1e13}) {
    json r = FullResult();
    r["target"]["peak_flops_bf16"] = bf16;
    std::string svg = Svg(RenderOptimizeReport(r), "roofline");
    std::vector<Label> labels = PeakLabels(svg);
    ASSERT_EQ(labels.size(), 2u) << bf16;
    EXPECT_FALSE(Intersect(labels[0], labels[1]))
        << bf16 << ": " << labels[0].text << " at " << labels[0].y << ", " << labels[1].text
        << " at " << labels[1].y;
    for (const Label& l : labels) {
      EXPECT_GE(l.y - html::kLabelFontPx, 0) << "inside the chart";
      EXPECT_LE(l.y, 400) << "inside the chart";
    }
  }
}

TEST(ReportHtmlRooflineTest, LabelLayoutSeparatesAndStaysInTheFrame) {
  using html::kLabelLineHeight;
  using html::LayoutRoofLabels;
  // Equal lines: the second label goes under.
  std::vector<double> y = LayoutRoofLabels({100, 100}, 14, 352);
  ASSERT_EQ(y.size(), 2u);
  EXPECT_GE(std::fabs(y[0] - y[1]), kLabelLineHeight);
  // Far apart: each stays just above its own line.
  y = LayoutRoofLabels({300, 100}, 14, 352);
  EXPECT_DOUBLE_EQ(y[0], 295);
  EXPECT_DOUBLE_EQ(y[1], 95);
  // Three close lines at the frame's bottom: separated, and pulled up inside the frame.
  y = LayoutRoofLabels({350, 349, 351}, 14, 352);
  std::vector<double> sorted = y;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_GE(sorted[1] - sorted[0], kLabelLineHeight);
  EXPECT_GE(sorted[2] - sorted[1], kLabelLineHeight);
  EXPECT_LE(sorted[2], 352);
  // At the top: kept below it.
  y = LayoutRoofLabels({10, 12}, 14, 352);
  EXPECT_GE(std::min(y[0], y[1]) - html::kLabelFontPx, 14);
  EXPECT_TRUE(LayoutRoofLabels({}, 0, 100).empty());
}

}  // namespace
}  // namespace mk::report
