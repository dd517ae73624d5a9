// The report's measurement verdicts: the interleaved A/B of the best candidate against the
// first one and against XLA, as the result records them (best.comparison_with_first and
// best.comparison_with_xla). A ratio is shown with its 95% interval, the number of rounds (and
// how many were re-measured), whether the rounds split into two clusters, the machine's load
// before and after, and the verdict: "faster" or "slower" only when the whole interval lies
// beyond the margin, "inconclusive" otherwise. Nothing here re-judges: the report shows what
// the run decided and why.
#include <string>

#include "report/report_html_internal.h"

namespace mk::report::html {
namespace {

std::string VerdictBadge(const std::string& verdict) {
  std::string cls = verdict == "faster" || verdict == "slower" || verdict == "inconclusive"
                        ? verdict
                        : "other";
  return Badge(cls, verdict);
}

// "1.70–1.90×" from a two-number array, or "".
std::string Interval(const json& verdict) {
  const json* ci = Field(verdict, "ci95");
  if (ci == nullptr || !ci->is_array() || ci->size() != 2 || !(*ci)[0].is_number() ||
      !(*ci)[1].is_number()) {
    return "";
  }
  return FormatRatio((*ci)[0].get<double>()) + " – " + FormatRatio((*ci)[1].get<double>());
}

// "load 3.9 on 2 cores, 2 busy (loaded)" for a machine_load object.
std::string LoadText(const json& load) {
  if (!load.is_object()) return "";
  std::string s;
  if (auto avg = Number(load, "load_avg_1m")) s += "load " + FormatPlain(*avg);
  if (auto cores = Text(load, "cores")) s += (s.empty() ? "" : " on ") + *cores + " cores";
  if (auto busy = Number(load, "busy_cores")) s += ", " + FormatPlain(*busy) + " busy";
  if (auto window = Number(load, "window_s")) s += " over " + FormatSeconds(*window);
  const json* loaded = Field(load, "loaded");
  if (loaded != nullptr && loaded->is_boolean() && loaded->get<bool>()) s += " (loaded)";
  return s;
}

std::string Row(const std::string& label, const std::string& html) {
  return "<tr><th>" + Escape(label) + "</th><td>" + html + "</td></tr>\n";
}

// One comparison as a table. `a` and `b` name the two sides ("first", "best"); `a_key` and
// `b_key` are their median fields.
std::string ComparisonTable(const json& cmp, const std::string& a, const char* a_key,
                            const std::string& b, const char* b_key) {
  const json& verdict = Obj(cmp, "verdict");
  std::string s = "<table>\n";
  std::string v = Text(verdict, "verdict").value_or("no verdict");
  std::string head = VerdictBadge(v);
  if (auto ratio = Number(verdict, "ratio")) {
    head += " " + Escape(b + " is " + FormatRatio(*ratio) + " as fast as " + a);
  }
  std::string ci = Interval(verdict);
  if (!ci.empty()) head += " · 95% CI " + Escape(ci);
  s += Row("Verdict", head);
  if (auto reason = Text(verdict, "reason")) s += Row("Why", Escape(*reason));
  std::string rounds = Text(cmp, "rounds").value_or(Text(verdict, "rounds").value_or(""));
  if (!rounds.empty()) {
    std::string html = Escape(rounds) + " interleaved rounds";
    if (auto again = Text(cmp, "remeasured_rounds")) html += ", " + Escape(*again) + " re-measured";
    const json* bimodal = Field(verdict, "bimodal");
    if (bimodal != nullptr && bimodal->is_boolean()) {
      html += bimodal->get<bool>() ? " · <b>bimodal</b>: the rounds split into two clusters"
                                   : " · one cluster";
    }
    s += Row("Rounds", html);
  }
  auto a_s = Number(cmp, a_key);
  auto b_s = Number(cmp, b_key);
  if (a_s || b_s) {
    s += Row("Medians", Escape(a + " " + (a_s ? FormatSeconds(*a_s) : "—") + " · " + b + " " +
                               (b_s ? FormatSeconds(*b_s) : "—")));
  }
  if (auto speedup = Number(cmp, "speedup")) {
    s += Row("Speedup of the medians", Escape(FormatRatio(*speedup)));
  }
  std::vector<const json*> ratios = Items(cmp, "round_ratios");
  if (!ratios.empty()) {
    std::string list;
    for (const json* r : ratios) {
      list += (list.empty() ? "" : ", ") +
              (r->is_number() ? FormatPlain(r->get<double>()) : CompactJson(*r, 20));
    }
    s += Row("Round ratios (" + a + " / " + b + ")", "<code>" + Escape(list) + "</code>");
  }
  std::string before = LoadText(Obj(cmp, "load_before"));
  std::string after = LoadText(Obj(cmp, "load_after"));
  if (!before.empty() || !after.empty()) {
    s += Row("Machine", Escape("before: " + (before.empty() ? "—" : before) +
                               " · after: " + (after.empty() ? "—" : after)));
  }
  if (auto seq = Text(cmp, "challenger_seq")) s += Row("Challenger", "seq " + Escape(*seq));
  if (auto kept = Text(cmp, "kept")) {
    s += Row("Kept", Escape(*kept) + (*kept == "first" ? " (the challenger did not win the A/B)"
                                                       : ""));
  }
  return s + "</table>\n";
}

}  // namespace

std::string VerdictLine(const json& comparison) {
  const json& verdict = Obj(comparison, "verdict");
  std::optional<std::string> v = Text(verdict, "verdict");
  if (!v) return "";
  std::string s = VerdictBadge(*v);
  std::string detail;
  if (auto ratio = Number(verdict, "ratio")) detail += FormatRatio(*ratio);
  std::string ci = Interval(verdict);
  if (!ci.empty()) detail += " (95% CI " + ci + ")";
  if (auto rounds = Text(verdict, "rounds")) detail += ", " + *rounds + " rounds";
  if (!detail.empty()) s += " " + Escape(detail);
  return s;
}

std::string VerdictsSection(const json& result) {
  std::string s = "<section id=\"verdicts\">\n<h2>Measurement verdicts</h2>\n"
                  "<p class=\"legend\">Each comparison runs both sides in alternating rounds on "
                  "the same machine state; a round's ratio is one side's median over the "
                  "other's. The verdict comes from a 95% bootstrap interval of those ratios: "
                  "faster or slower only when the whole interval lies beyond the margin, "
                  "inconclusive otherwise (too few rounds, a bimodal split, or an interval "
                  "that straddles 1).</p>\n";
  const json& best = Obj(result, "best");
  s += "<h3>Best against the first candidate</h3>\n";
  const json* first = Field(best, "comparison_with_first");
  if (first == nullptr || !first->is_object()) {
    s += Missing(Field(result, "best") == nullptr
                     ? "No best candidate: nothing was compared."
                     : "The result records no A/B comparison of the best against the first "
                       "candidate.");
  } else {
    s += ComparisonTable(*first, "first", "first_median_s", "best", "best_median_s");
  }
  s += "<h3>Best against XLA</h3>\n";
  const json* xla = Field(best, "comparison_with_xla");
  if (xla == nullptr || !xla->is_object()) {
    s += Missing("The result records no interleaved comparison with XLA.");
  } else if (auto error = Text(*xla, "error")) {
    s += Missing("The comparison with XLA failed: " + *error);
  } else {
    std::string engine = Text(*xla, "engine").value_or("XLA");
    s += ComparisonTable(*xla, engine, "xla_median_s", "ours", "ours_median_s");
    if (const json* info = Field(*xla, "xla")) {
      s += "<p class=\"meta\">" + Escape(engine) + ": <code>" + Escape(CompactJson(*info, 400)) +
           "</code></p>\n";
    }
  }
  return s + "</section>\n";
}

}  // namespace mk::report::report
