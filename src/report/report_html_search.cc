// The report's Search section (search runs only): what the search covered of its space, what
// the bound pruned and why, how the cost model was used, and the admissibility check.
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
  const json& adm = Obj(search, "admissibility");
  if (adm.is_object()) {
    const json* ok = Field(adm, "ok");
    std::string verdict = ok && ok->is_boolean() && ok->get<bool>() ? "every measurement at or above its bound"
                                                                     : "<strong>violations</strong>: the bound was wrong somewhere";
    if (auto m = Number(adm, "median_bound_over_measured")) verdict += Fixed(", median bound/measured %.2f", *m);
    s += Row("admissibility (" + Fixed("%.0f", Number(adm, "checked").value_or(0)) + " checked)", verdict);
  }
  s += "</table>\n";
  const json* by = Field(search, "pruned_by");
  if (by && by->is_array() && !by->empty()) {
    s += "<table>\n<tr><th>pruned because of</th><th>points</th></tr>\n";
    for (const json& r : *by) {
      if (!r.is_object()) continue;
      s += "<tr><td>" + Escape(Text(r, "decision").value_or("?")) + "</td><td>" +
           Fixed("%.4g", Number(r, "points").value_or(0)) + "</td></tr>\n";
    }
    s += "</table>\n";
  }
  return s + "</section>\n";
}

}  // namespace mk::report::html
