// The report's Search section (search runs only): what the search covered of its space, what
// the bound pruned and why, how the cost model was used, and the admissibility check.
#include <algorithm>
#include <cstdio>
#include <string>

#include "report/report_html_internal.h"

namespace mk::report::html {

namespace {

std::string Fixed(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string Row(const std::string& name, const std::string& value) {
  return "<tr><td>" + Escape(name) + "</td><td>" + value + "</td></tr>\n";
}

}  // namespace

std::string SearchSection(const json& result) {
  const json& search = Obj(result, "search");
  if (!search.is_object() || search.empty()) return "";
  std::string s = "<section id=\"search\">\n<h2>Search</h2>\n<table>\n";
  s += Row("algorithm", Escape(Text(search, "algorithm").value_or("?")));
  const double space = Number(search, "space_size").value_or(0);
  s += Row("points in the space", Fixed("%.4g", space));
  s += Row("candidates proposed", Fixed("%.0f", Number(search, "proposed").value_or(0)));
  s += Row("nodes expanded / on the frontier",
           Fixed("%.0f", Number(search, "expanded").value_or(0)) + " / " +
               Fixed("%.0f", Number(search, "frontier").value_or(0)));
  s += Row("pruned by the bound, before any measurement",
           Fixed("%.4g", Number(search, "pruned_points").value_or(0)) + " points (" +
               Fixed("%.1f%%", 100 * Number(search, "pruned_share").value_or(0)) + " of the space)");
  s += Row("rows scored by the cost model", Fixed("%.0f", Number(search, "predicted").value_or(0)));
  if (auto g = Number(search, "generations"); g && *g > 0) s += Row("generations bred", Fixed("%.0f", *g));
  const json& prior = Obj(search, "prior");
  if (prior.is_object() && !prior.empty()) {
    // Where the cost model started: a cold start, a model file, or a stored run's model.
    std::string from = Escape(Text(prior, "source").value_or("?"));
    if (auto path = Text(prior, "path")) from += " " + Escape(*path);
    if (auto sha = Text(prior, "sha256")) from += " <code>" + Escape(sha->substr(0, 12)) + "</code>";
    if (auto run = Number(prior, "run_id")) from += Fixed(" (trained by run %.0f)", *run);
    if (auto note = Text(prior, "note")) from += "; " + Escape(*note);
    s += Row("the cost model's prior", from);
  }
  const json& adm = Obj(search, "admissibility");
  if (adm.is_object()) {
    const json* ok = Field(adm, "ok");
    std::string verdict = ok && ok->is_boolean() && ok->get<bool>() ? "every measurement at or above its bound"
                                                                     : "<strong>violations</strong>: the bound was wrong somewhere";
    if (auto m = Number(adm, "median_bound_over_measured")) verdict += Fixed(", median bound/measured %.2f", *m);
    s += Row("admissibility (" + Fixed("%.0f", Number(adm, "checked").value_or(0)) + " checked)", verdict);
  }
  s += "</table>\n";
  // The pruned share of the space as a bar, split by reason (the top reasons; the rest as one).
  const json* by = Field(search, "pruned_by");
  const double pruned_share = std::clamp(Number(search, "pruned_share").value_or(0), 0.0, 1.0);
  s += "<h3>The space pruned, and why</h3>\n";
  s += "<div class=\"bar\" style=\"display:flex;height:14px;border:1px solid #888;max-width:760px\" "
       "title=\"" + Escape(Fixed("%.1f%% of the space pruned", 100 * pruned_share)) + "\">";
  double drawn = 0;
  static const char* kColors[] = {"#b03a2e", "#d68910", "#7d3c98", "#2e86c1", "#17a589", "#839192"};
  if (by && by->is_array() && space > 0) {
    size_t i = 0;
    for (const json& r : *by) {
      if (!r.is_object()) continue;
      const double share = std::clamp(Number(r, "points").value_or(0) / space, 0.0, 1.0 - drawn);
      if (share <= 0) continue;
      s += "<div style=\"width:" + Fixed("%.3f", 100 * share) + "%;background:" + kColors[i % 6] +
           "\" title=\"" + Escape(Text(r, "decision").value_or("?")) + "\"></div>";
      drawn += share;
      ++i;
    }
  }
  if (pruned_share > drawn) {
    s += "<div style=\"width:" + Fixed("%.3f", 100 * (pruned_share - drawn)) +
         "%;background:#839192\" title=\"other reasons\"></div>";
  }
  s += "</div>\n";
  if (by && by->is_array() && !by->empty()) {
    s += "<table>\n<tr><th>pruned because of</th><th>points</th><th>share of the space</th></tr>\n";
    for (const json& r : *by) {
      if (!r.is_object()) continue;
      const double points = Number(r, "points").value_or(0);
      s += "<tr><td>" + Escape(Text(r, "decision").value_or("?")) + "</td><td>" +
           Fixed("%.4g", points) + "</td><td>" +
           (space > 0 ? Fixed("%.1f%%", 100 * points / space) : std::string("-")) + "</td></tr>\n";
    }
    s += "</table>\n";
  } else {
    s += Missing("Nothing was pruned: every point the search reached was proposed.");
  }
  s += "<h3>Best so far against measurements</h3>\n" + BestSoFarChart(result);
  return s + "</section>\n";
}

}  // namespace mk::report::html
