// Assembles the optimize report page: header, summary, charts (report_html_svg.cc), tables and
// the rationale. The page is XHTML-clean (void elements closed, everything escaped) so that an
// XML parser accepts it too; the tests check that.
#include "report/report_html.h"

#include <map>

#include "report/report_html_internal.h"

namespace mk::report {
namespace {

using html::Badge;
using html::Escape;
using html::Field;
using html::FormatPlain;
using html::FormatRatio;
using html::FormatSeconds;
using html::FormatSi;
using html::Items;
using html::Na;
using html::Number;
using html::Obj;
using html::Text;
using nlohmann::json;

constexpr const char* kSchema = "maxkernel.optimize.result/1";

// No '<', '>' or '&' in here: the page must stay XML-clean.
constexpr const char* kCss = R"css(
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px auto;
       max-width: 1100px; padding: 0 16px; color: #222; line-height: 1.4; }
h1 { font-size: 1.5em; margin-bottom: 4px; }
h2 { font-size: 1.2em; margin-top: 32px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
table { border-collapse: collapse; margin: 8px 0; font-size: 0.92em; }
th, td { border: 1px solid #ddd; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
code { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 0.92em;
       background: #f4f4f4; padding: 0 3px; border-radius: 3px; }
td code { word-break: break-all; }
pre { background: #f4f4f4; padding: 8px; overflow-x: auto; }
pre code { background: none; padding: 0; }
.meta { color: #555; margin: 2px 0; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; color: #fff;
         font-size: 0.85em; background: #888; }
.badge.succeeded, .badge.correct { background: #2a9d4b; }
.badge.failed, .badge.build_failed { background: #d1495b; }
.badge.test_failed { background: #e09f3e; }
.badge.cancelled { background: #666; }
.na { color: #999; }
.missing { color: #8a5a00; background: #fff8e6; border-left: 3px solid #e0b050;
           padding: 4px 8px; margin: 6px 0; }
.legend { font-size: 0.88em; color: #444; margin: 4px 0 8px 0; }
.key { margin-right: 16px; white-space: nowrap; }
.swatch { display: inline-block; width: 12px; height: 12px; margin-right: 5px;
          vertical-align: middle; }
svg.chart { max-width: 100%; height: auto; border: 1px solid #eee; background: #fff; }
tr.best td { background: #eef8f0; }
.badge.duplicate { background: #5a7fa8; }
.badge.faster { background: #2a9d4b; }
.badge.slower { background: #d1495b; }
.badge.inconclusive { background: #e09f3e; }
.badge.loaded { background: #b5651d; }
mark.changed { background: #fff0a8; padding: 0 2px; border-radius: 2px; }
details summary { cursor: pointer; color: #1f5f99; }
ul.params { margin: 2px 0 2px 0; padding-left: 16px; font-size: 0.92em; }
pre.source { max-height: 640px; font-size: 0.85em; line-height: 1.35; }
.kw { color: #0b4f9e; font-weight: 600; }
.ty { color: #7b3f99; }
.cm { color: #6a737d; font-style: italic; }
.st { color: #a3302a; }
.nu { color: #1a7f5a; }
.pp { color: #8a5a00; }
footer { margin-top: 40px; color: #888; font-size: 0.85em; }
)css";

// ---- header ----------------------------------------------------------------------------------

std::string Header(const json& result) {
  const json& task = Obj(result, "task");
  const json& target = Obj(result, "target");
  const json& options = Obj(result, "options");
  std::string task_id = Text(task, "id").value_or("");
  std::string task_name = Text(task, "name").value_or("");
  std::string title = (task_id + " " + task_name);
  if (task_id.empty() && task_name.empty()) title = "(task not named)";
  std::string s = "<header>\n<h1>maxkernel optimize: " + Escape(title) + "</h1>\n";
  std::string status = Text(result, "status").value_or("unknown");
  s += "<p class=\"meta\">" + Badge(status, status);
  if (auto stop = Text(result, "stop_reason")) s += " stopped by <b>" + Escape(*stop) + "</b>";
  if (auto run = Text(result, "run_id")) s += " · run " + Escape(*run);
  if (auto date = Text(result, "date")) s += " · " + Escape(*date);
  s += "</p>\n";

  s += "<p class=\"meta\">Target <b>" + Escape(Text(target, "name").value_or("unknown")) + "</b>";
  if (auto model = Text(target, "model")) s += " · " + Escape(*model);
  if (auto cores = Text(target, "cores")) s += " · " + Escape(*cores) + " cores";
  std::string peaks;
  if (auto f32 = Number(target, "peak_flops_f32")) peaks += "f32 " + FormatSi(*f32, "FLOP/s");
  if (auto bf16 = Number(target, "peak_flops_bf16")) {
    peaks += (peaks.empty() ? "" : ", ") + std::string("bf16 ") + FormatSi(*bf16, "FLOP/s");
  }
  if (auto bw = Number(target, "bandwidth_bytes_per_s")) {
    peaks += (peaks.empty() ? "" : ", ") + FormatSi(*bw, "B/s");
  }
  if (!peaks.empty()) {
    s += " · peaks " + Escape(peaks);
    if (auto src = Text(target, "peaks_source")) s += " (" + Escape(*src) + ")";
  }
  if (Field(target, "peak_flops_f32") != nullptr && Field(target, "peak_flops_bf16") == nullptr) {
    s += " · no bf16 arithmetic";
  }
  s += "</p>\n";
  std::string build;
  if (auto isa = Text(target, "isa_level")) build += "ISA <b>" + Escape(*isa) + "</b>";
  if (auto flags = Text(target, "compile_flags")) {
    build += (build.empty() ? "" : " · ") + std::string("compiled with <code>") + Escape(*flags) +
             "</code>";
  }
  if (!build.empty()) s += "<p class=\"meta\">Kernels built for " + build + "</p>\n";

  std::string task_line;
  for (const char* key : {"dtype", "scale"}) {
    if (auto v = Text(task, key)) task_line += std::string(" · ") + key + " " + Escape(*v);
  }
  if (auto dir = Text(task, "dir")) task_line += " · <code>" + Escape(*dir) + "</code>";
  if (!task_line.empty()) s += "<p class=\"meta\">Task" + task_line + "</p>\n";

  std::string opts;
  for (const char* key : {"max_iterations", "time_budget_s", "target_metric", "seed"}) {
    if (auto v = Text(options, key)) {
      opts += std::string(opts.empty() ? "" : " · ") + key + " <code>" + Escape(*v) + "</code>";
    }
  }
  if (!opts.empty()) s += "<p class=\"meta\">Options: " + opts + "</p>\n";
  return s + "</header>\n";
}

// ---- summary ---------------------------------------------------------------------------------

std::string Row(const std::string& label, const std::string& value_html) {
  return "<tr><th>" + Escape(label) + "</th><td>" + value_html + "</td></tr>\n";
}

std::string Summary(const json& result) {
  const json& best = Obj(result, "best");
  const json& first = Obj(result, "first");
  const json& baseline = Obj(result, "baseline");
  const json& plan = Obj(result, "plan");
  const json& options = Obj(result, "options");
  std::optional<double> best_s = Number(best, "median_s");
  std::optional<double> first_s = Number(first, "median_s");
  std::optional<double> base_s = Number(baseline, "median_s");

  std::string s = "<section id=\"summary\">\n<h2>Summary</h2>\n<table>\n";
  std::string best_html = best_s ? Escape(FormatSeconds(*best_s)) : Na("no correct candidate");
  if (best_s) {
    auto p10 = Number(best, "p10_s");
    auto p90 = Number(best, "p90_s");
    if (p10 && p90) {
      best_html += " <span class=\"meta\">(p10 " + Escape(FormatSeconds(*p10)) + ", p90 " +
                   Escape(FormatSeconds(*p90)) + ")</span>";
    }
    if (auto seq = Text(best, "seq")) best_html += " · seq " + Escape(*seq);
  }
  s += Row("Best time", best_html);
  std::string first_html = first_s ? Escape(FormatSeconds(*first_s)) : Na("no first correct time");
  if (first_s) {
    if (auto seq = Text(first, "seq")) first_html += " · seq " + Escape(*seq);
  }
  s += Row("First candidate time", first_html);
  std::string engine = Text(baseline, "engine").value_or("XLA");
  s += Row("Baseline time (" + engine + ")",
           base_s ? Escape(FormatSeconds(*base_s))
                  : Na("no baseline recorded for this task (maxkernel baseline TASK_DIR --xla "
                       "records one)"));

  // The interleaved comparisons (the verdicts section) outrank ratios of separate medians.
  const json& vs_first_ab = Obj(best, "comparison_with_first");
  std::optional<double> vs_first = Number(vs_first_ab, "speedup");
  if (!vs_first) vs_first = Number(best, "speedup_vs_first");
  if (!vs_first && best_s && first_s && *best_s > 0) vs_first = *first_s / *best_s;
  std::string vs_first_html = vs_first ? Escape(FormatRatio(*vs_first)) : Na();
  std::string first_verdict = html::VerdictLine(vs_first_ab);
  if (!first_verdict.empty()) vs_first_html += " · " + first_verdict;
  s += Row("Speedup vs first", vs_first_html);
  const json& vs_xla_ab = Obj(best, "comparison_with_xla");
  std::optional<double> vs_base = Number(vs_xla_ab, "speedup");
  std::string vs_base_html;
  if (vs_base) {
    vs_base_html = Escape(FormatRatio(*vs_base)) + " (interleaved in this run) · " +
                   html::VerdictLine(vs_xla_ab);
  } else {
    vs_base = Number(best, "speedup_vs_baseline");
    if (!vs_base && best_s && base_s && *best_s > 0) vs_base = *base_s / *best_s;
    vs_base_html = vs_base ? Escape(FormatRatio(*vs_base)) +
                                 " <span class=\"meta\">(against a median recorded at another "
                                 "time: no verdict)</span>"
                           : Na(base_s ? "" : "no baseline");
    if (auto error = Text(vs_xla_ab, "error")) {
      vs_base_html += " · the interleaved comparison failed: " + Escape(*error);
    }
  }
  s += Row("Speedup vs baseline (" + engine + ")", vs_base_html);
  s += Row("% of roofline", html::RooflineHtml(Number(best, "roofline_fraction"),
                                                 Text(best, "roofline_note")));
  if (auto lb = Number(plan, "lower_bound_s")) {
    s += Row("Roofline lower bound", Escape(FormatSeconds(*lb)));
  }
  s += Row("Bottleneck", Text(best, "bottleneck") ? Escape(*Text(best, "bottleneck")) : Na());
  auto gflops = Number(best, "gflops");
  s += Row("GFLOP/s", gflops ? Escape(FormatPlain(*gflops)) : Na());
  auto gbps = Number(best, "gbps");
  s += Row("GB/s", gbps ? Escape(FormatPlain(*gbps)) : Na());

  std::string iters = Text(result, "iterations") ? Escape(*Text(result, "iterations")) : Na();
  if (auto max = Text(options, "max_iterations")) iters += " of at most " + Escape(*max);
  s += Row("Iterations", iters);
  std::optional<double> elapsed = Number(result, "elapsed_s");
  std::string elapsed_html = elapsed ? Escape(FormatSeconds(*elapsed)) : Na();
  if (auto budget = Number(options, "time_budget_s")) {
    elapsed_html += " of a " + Escape(FormatSeconds(*budget)) + " budget";
  }
  s += Row("Elapsed", elapsed_html);

  std::map<std::string, int> by_status;
  std::vector<const json*> candidates = Items(result, "candidates");
  for (const json* c : candidates) ++by_status[Text(*c, "status").value_or("no status")];
  std::string counts = std::to_string(candidates.size());
  for (const auto& [status, n] : by_status) {
    counts += " · " + Badge(status, status) + " " + std::to_string(n);
  }
  s += Row("Candidates", counts);
  s += "</table>\n";
  if (candidates.empty()) {
    s += "<p class=\"missing\">No candidates were run.</p>\n";
  } else if (!best_s) {
    s += "<p class=\"missing\">No candidate passed the tester: there is no best kernel.</p>\n";
  }
  return s + "</section>\n";
}

// ---- artifacts -------------------------------------------------------------------------------

std::string Artifacts(const json& result) {
  std::string s = "<section id=\"artifacts\">\n<h2>Artifacts</h2>\n";
  const json* artifacts = Field(Obj(result, "best"), "artifacts");
  if (artifacts == nullptr || !artifacts->is_object() || artifacts->empty()) {
    return s + "<p class=\"missing\">No artifacts recorded: the run has no best candidate.</p>\n" +
           "</section>\n";
  }
  s += "<p>Each artifact is stored by its sha256; fetch it with "
       "<code>maxkernel artifacts get SHA</code>.</p>\n<table>\n"
       "<tr><th>artifact</th><th>sha256</th><th>command</th></tr>\n";
  for (const auto& [kind, sha] : artifacts->items()) {
    std::string hash = sha.is_string() ? sha.get<std::string>() : html::CompactJson(sha, 100);
    s += "<tr><td>" + Escape(kind) + "</td><td><code>" + Escape(hash) +
         "</code></td><td><code>maxkernel artifacts get " + Escape(hash) + "</code></td></tr>\n";
  }
  return s + "</table>\n</section>\n";
}

}  // namespace

std::string RenderOptimizeReport(const json& result, const ReportExtras& extras) {
  std::string task_title = Text(Obj(result, "task"), "name").value_or(
      Text(Obj(result, "task"), "id").value_or("optimize run"));
  std::string s =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n"
      "<title>maxkernel optimize: " + Escape(task_title) + "</title>\n<style>" + kCss +
      "</style>\n</head>\n<body>\n";
  if (!result.is_object()) {
    return s + "<h1>maxkernel optimize</h1>\n<p class=\"missing\">The optimize result is not a "
               "JSON object: there is nothing to report.</p>\n</body>\n</html>\n";
  }
  s += Header(result);
  std::optional<std::string> schema = Text(result, "schema");
  if (schema != kSchema) {
    s += "<p class=\"missing\">Schema " + Escape(schema.value_or("(none)")) + " is not " +
         std::string(kSchema) + ": showing the fields this report knows.</p>\n";
  }
  s += Summary(result);
  s += html::VerdictsSection(result);
  s += "<section id=\"convergence-plot\">\n<h2>Convergence</h2>\n" +
       html::ConvergenceChart(result) + "</section>\n";
  s += "<section id=\"roofline-chart\">\n<h2>Roofline</h2>\n" + html::RooflineChart(result) +
       "</section>\n";
  s += html::SearchSection(result);
  s += html::TpuSection(result);
  s += html::PlanSection(result);
  s += html::RationaleSection(result);
  s += html::CandidatesSection(result);
  s += html::SourceSection(result, extras.best_source);
  s += Artifacts(result);
  s += "<footer>Generated by maxkernel from an optimize result (" + Escape(schema.value_or("")) +
       ").</footer>\n</body>\n</html>\n";
  return s;
}

}  // namespace mk::report
