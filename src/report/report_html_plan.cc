// The report's plan sections: the kernels the planner made (roofline numbers, what bounds each,
// measured time), why each is what it is (what the planner merged into it and kept out, its
// compute and memory lower bounds and the search space its emitter declared) and the planner's own rationale in markdown.
#include <string>

#include "report/report_html_internal.h"

namespace mk::report::html {
namespace {


// "memory-bound: moving 2 MB takes at least 100 µs, computing 1 MFLOP at least 1.35 µs".
std::string BoundReason(const json& k) {
  std::optional<double> compute = Number(k, "compute_s");
  std::optional<double> memory = Number(k, "memory_s");
  std::optional<std::string> bound = Text(k, "bound");
  std::string s;
  if (bound) s += "<b>" + Escape(*bound) + "-bound</b>";
  std::string parts;
  if (memory) {
    parts += "moving " + FormatSi(Number(k, "bytes").value_or(0), "B") + " takes at least " +
             FormatSeconds(*memory);
  }
  if (compute) {
    parts += std::string(parts.empty() ? "" : ", ") + "computing " +
             FormatSi(Number(k, "flops").value_or(0), "FLOP");
    if (auto dtype = Text(k, "compute_dtype")) parts += " in " + *dtype;
    parts += " at least " + FormatSeconds(*compute);
  }
  if (!parts.empty()) s += (s.empty() ? "" : ": ") + Escape(parts);
  return s.empty() ? Na() : s;
}

// The parameters the search may change for one kernel: name, legal values, the model's initial
// choice and what the parameter controls.
std::string SpaceList(const json& k) {
  std::vector<const json*> params = Items(k, "space");
  if (params.empty()) return Na("no tunable parameters");
  std::string s = "<ul class=\"params\">\n";
  for (const json* p : params) {
    s += "<li><code>" + Escape(Text(*p, "name").value_or("?")) + "</code>";
    if (const json* values = Field(*p, "values")) {
      s += " ∈ " + Escape(CompactJson(*values, 120));
    }
    if (auto initial = Text(*p, "initial")) s += ", initial <b>" + Escape(*initial) + "</b>";
    if (auto doc = Text(*p, "doc"); doc && !doc->empty()) s += ": " + Escape(*doc);
    s += "</li>\n";
  }
  return s + "</ul>\n";
}

// Why the kernel holds what it holds: the instruction that leads it, each instruction the
// planner merged in with its reason (instructions sharing a reason on one line), then what it
// kept out and why. Long kernels show their first kMaxReasons reasons.
std::string FusionList(const json& k) {
  constexpr size_t kMaxReasons = 12;
  std::string s;
  if (auto hero = Text(k, "hero")) s += "<p>led by <code>%" + Escape(*hero) + "</code></p>\n";
  std::vector<std::pair<std::string, std::vector<std::string>>> joined, declined;
  auto add = [](auto& groups, const std::string& reason, const std::string& name) {
    for (auto& [r, names] : groups) {
      if (r == reason) return names.push_back(name);
    }
    groups.push_back({reason, {name}});
  };
  for (const json* n : Items(k, "fusion")) {
    const std::string name = Text(*n, "instruction").value_or("?");
    const std::string reason = Text(*n, "reason").value_or("");
    const json* fused = Field(*n, "fused");
    add(fused && fused->is_boolean() && !fused->get<bool>() ? declined : joined, reason, name);
  }
  if (joined.empty() && declined.empty()) {
    return s + Na("nothing merged: the kernel is one instruction's, or the plan records no "
                  "reasons");
  }
  auto list = [&](const auto& groups, const std::string& verb) {
    std::string out;
    size_t shown = 0;
    for (const auto& [reason, names] : groups) {
      if (shown++ == kMaxReasons) {
        out += "<li>… " + std::to_string(groups.size() - kMaxReasons) + " more</li>\n";
        break;
      }
      std::string codes;
      for (const std::string& name : names) {
        codes += std::string(codes.empty() ? "" : ", ") + "<code>%" + Escape(name) + "</code>";
      }
      out += "<li>" + verb + " " + codes + ": " + Escape(reason) + "</li>\n";
    }
    return out;
  };
  s += "<ul class=\"fusion\">\n" + list(joined, "merged") + list(declined, "kept out") +
       "</ul>\n";
  return s;
}

}  // namespace

std::string PlanSection(const json& result) {
  const json& plan = Obj(result, "plan");
  std::vector<const json*> kernels = Items(plan, "kernels");
  std::string s = "<section id=\"plan\">\n<h2>Plan</h2>\n";
  if (kernels.empty()) return s + Missing("The result has no plan kernels.") + "</section>\n";
  s += "<table>\n<tr><th>id</th><th>name</th><th>family</th><th>FLOPs</th><th>bytes</th>"
       "<th>intensity (FLOP/B)</th><th>bound by</th><th>lower bound</th><th>measured</th>"
       "<th>of bound</th></tr>\n";
  int unmeasured = 0;
  for (const json* k : kernels) {
    s += "<tr>" + TextCell(*k, "id") + TextCell(*k, "name") + TextCell(*k, "family") +
         NumCell(*k, "flops", FormatCount) + NumCell(*k, "bytes", FormatCount) +
         NumCell(*k, "intensity", FormatPlain) + TextCell(*k, "bound") +
         NumCell(*k, "lower_bound_s", FormatSeconds) + NumCell(*k, "measured_s", FormatSeconds);
    auto lb = Number(*k, "lower_bound_s");
    auto measured = Number(*k, "measured_s");
    if (!measured) ++unmeasured;
    std::optional<double> of_bound;
    if (lb && measured && *measured > 0) of_bound = *lb / *measured;
    s += "<td class=\"num\">" + RooflineHtml(of_bound, std::nullopt) + "</td></tr>\n";
  }
  s += "</table>\n";
  if (unmeasured > 0) {
    s += Missing(std::to_string(unmeasured) + " of " + std::to_string(kernels.size()) +
                 " kernel(s) have no measured time.");
  }

  // Why each kernel is what it is: the fusion made one kernel per group of instructions that
  // share a loop nest; its roofline bound says where its time must go, and its space says what
  // the search was allowed to try.
  s += "<h3 id=\"plan-why\">Why these kernels</h3>\n<table>\n"
       "<tr><th>kernel</th><th>why the planner fused what it fused</th><th>what bounds it</th>"
       "<th>what the search may change</th></tr>\n";
  for (const json* k : kernels) {
    std::string name = "#" + Text(*k, "id").value_or("?") + " " + Text(*k, "name").value_or("");
    if (auto family = Text(*k, "family")) name += " (" + *family + ")";
    s += "<tr><td>" + Escape(name) + "</td><td>" + FusionList(*k) + "</td><td>" +
         BoundReason(*k) + "</td><td>" + SpaceList(*k) + "</td></tr>\n";
  }
  return s + "</table>\n</section>\n";
}

std::string RationaleSection(const json& result) {
  std::string s = "<section id=\"rationale\">\n<h2>Planner's rationale</h2>\n";
  std::optional<std::string> md = Text(Obj(result, "plan"), "rationale_markdown");
  if (!md || md->empty()) return s + Missing("The planner gave no rationale.") + "</section>\n";
  return s + MarkdownToHtml(*md) + "</section>\n";
}

}  // namespace mk::report::report
