// The report's TPU section (runs for a TPU target only): every kernel of the best candidate, with
// where its operations run (inside a Pallas kernel, or in XLA glue and why), its modelled time and
// what bounds it, and XLA:TPU's own estimate of the reference. Every time here is modelled: no
// TPU ran any of it, and the section says so first.
#include <string>

#include "report/report_html_internal.h"

namespace mk::report::html {

namespace {

// At most `limit` names, then "and N more".
std::string OpList(const json& kernel, const char* key, size_t limit = 12) {
  const std::vector<const json*> ops = Items(kernel, key);
  if (ops.empty()) return Na();
  std::string s;
  size_t shown = 0;
  for (const json* op : ops) {
    if (!op->is_string()) continue;
    if (shown == limit) break;
    if (shown++ > 0) s += ", ";
    s += "<code>" + Escape(op->get<std::string>()) + "</code>";
  }
  if (ops.size() > shown) s += " and " + std::to_string(ops.size() - shown) + " more";
  return s;
}

}  // namespace

std::string TpuSection(const json& result) {
  const json& target = Obj(result, "target");
  if (Text(target, "kind").value_or("") != "tpu") return "";
  std::string s = "<section id=\"tpu\">\n<h2>TPU: where each operation runs</h2>\n";
  s += "<p><strong>Modelled, not measured:</strong> no TPU ran or timed any of this. Times come "
       "from the TPU performance model (docs/TPU.md); XLA:TPU's figure is the compiler's own "
       "estimate of the reference.</p>\n";
  const json& tpu = Obj(result, "tpu");
  const json& xla = Obj(tpu, "xla_tpu_estimate");
  s += "<table>\n<tr><td>target</td><td>" + Escape(Text(target, "name").value_or("?")) + "</td></tr>\n";
  const json& cost = Obj(xla, "cost");
  if (auto x = Number(cost, "optimal_seconds")) {
    s += "<tr><td>XLA:TPU estimate of the reference</td><td>" + Escape(FormatSeconds(*x)) + "</td></tr>\n";
  } else if (auto err = Text(xla, "error")) {
    s += "<tr><td>XLA:TPU estimate of the reference</td><td>" + Na(*err) + "</td></tr>\n";
  }
  if (auto r = Number(tpu, "modelled_ratio")) {
    s += "<tr><td>modelled ratio (XLA:TPU estimate / ours modelled)</td><td>" +
         Escape(FormatRatio(*r)) + " (a ratio of two models, never a speedup)</td></tr>\n";
  }
  const json& best = Obj(result, "best");
  const json& model = Obj(best, "model");
  if (auto m = Number(model, "modelled_s")) {
    s += "<tr><td>best candidate, modelled</td><td>" + Escape(FormatSeconds(*m)) + " (" +
         Escape(FormatCount(Number(model, "pallas_kernels").value_or(0))) + " Pallas kernels, " +
         Escape(FormatCount(Number(model, "glue_kernels").value_or(0))) + " in XLA glue)</td></tr>\n";
  }
  s += "</table>\n";
  const std::vector<const json*> kernels = Items(model, "kernels");
  if (kernels.empty()) return s + Missing("no checked candidate: nothing was modelled") + "</section>\n";
  s += "<table>\n<tr><th>kernel</th><th>runs in</th><th class=\"num\">modelled</th><th>bound</th>"
       "<th>operations in the Pallas kernel</th><th>operations in XLA glue</th><th>why glue / fused where</th></tr>\n";
  for (const json* k : kernels) {
    // "fused": a plan kernel computed inside another kernel's pallas_call (flash attention);
    // its reason names that kernel, and that kernel's time holds it.
    const std::string runs = Text(*k, "runs").value_or("");
    const std::string badge = runs == "pallas" ? Badge("correct", "Pallas kernel")
                              : runs == "fused" ? Badge("correct", "fused into a Pallas kernel")
                                                : Badge("other", "XLA glue");
    s += "<tr><td><code>" + Escape(Text(*k, "name").value_or("?")) + "</code></td><td>" + badge + "</td>" +
         NumCell(*k, "modelled_s", FormatSeconds) + TextCell(*k, "bound") + "<td>" +
         OpList(*k, "ops_in_pallas") + "</td><td>" + OpList(*k, "ops_in_glue") + "</td>" +
         TextCell(*k, "reason") + "</tr>\n";
  }
  return s + "</table>\n</section>\n";
}

}  // namespace mk::report::html
