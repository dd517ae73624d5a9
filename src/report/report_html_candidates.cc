// The report's candidates table: for every candidate its status, time and spread, the load it
// was measured under, its own duration, and its full schedule (every kernel's parameters) with
// the parameters that differ from its parent highlighted and the rest folded away.
//
// The parent is the candidate it was derived from when the result says so (`parent_seq`);
// otherwise the best correct candidate before it, since the search moves from the best point it
// has seen. The legend says which of the two the table used.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "report/report_html_internal.h"

namespace mk::report::html {
namespace {

struct Row {
  const json* candidate;
  double seq;
  std::optional<double> duration;  // the candidate's own duration, seconds
  const Row* parent = nullptr;
  bool explicit_parent = false;
};

// Each candidate's own duration: `duration_s` where the result has it; otherwise the time from
// its creation to the next candidate's (differences of `elapsed_s`, seconds since the first
// candidate), which leaves the last one without.
void FillDurations(std::vector<Row>& rows, bool has_duration_field) {
  for (size_t i = 0; i < rows.size(); ++i) {
    if (has_duration_field) {
      rows[i].duration = Number(*rows[i].candidate, "duration_s");
      continue;
    }
    if (i + 1 == rows.size()) continue;
    std::optional<double> a = Number(*rows[i].candidate, "elapsed_s");
    std::optional<double> b = Number(*rows[i + 1].candidate, "elapsed_s");
    if (a && b && *b >= *a) rows[i].duration = *b - *a;
  }
}

void FillParents(std::vector<Row>& rows) {
  std::map<double, const Row*> by_seq;
  const Row* best = nullptr;  // the best correct candidate so far, in seq order
  for (Row& row : rows) {
    if (std::optional<double> parent = Number(*row.candidate, "parent_seq")) {
      auto it = by_seq.find(*parent);
      if (it != by_seq.end()) {
        row.parent = it->second;
        row.explicit_parent = true;
      }
    } else {
      row.parent = best;
    }
    by_seq.emplace(row.seq, &row);
    std::optional<double> t = Number(*row.candidate, "median_s");
    if (StatusClass(*row.candidate) == "correct" && t &&
        (best == nullptr || *t < Number(*best->candidate, "median_s").value_or(*t))) {
      best = &row;
    }
  }
}

// The per-kernel parameter objects of a schedule ({"kernels": [{...}, ...]}), or nothing when
// the schedule has another shape.
std::optional<std::vector<const json*>> Kernels(const json* schedule) {
  if (schedule == nullptr) return std::nullopt;
  const json* kernels = Field(*schedule, "kernels");
  if (kernels == nullptr || !kernels->is_array()) return std::nullopt;
  std::vector<const json*> out;
  for (const json& k : *kernels) out.push_back(&k);
  return out;
}

std::string KernelName(const json& result, size_t index) {
  std::vector<const json*> plan_kernels = Items(Obj(result, "plan"), "kernels");
  std::string name = "#" + std::to_string(index);
  if (index < plan_kernels.size()) {
    if (auto n = Text(*plan_kernels[index], "name")) name += " " + *n;
  }
  return name;
}

std::string Value(const json* v) { return v == nullptr ? "—" : CompactJson(*v, 60); }

// The schedule cell: a line of what changed against the parent, then every kernel's
// parameters in a <details>, the changed ones marked.
std::string ScheduleCell(const json& result, const Row& row) {
  const json* schedule = Field(*row.candidate, "schedule");
  if (schedule == nullptr) return Na();
  std::optional<std::vector<const json*>> kernels = Kernels(schedule);
  if (!kernels) return "<code class=\"schedule\">" + Escape(CompactJson(*schedule, 600)) + "</code>";
  // What it is compared with: its parent, or for a candidate without one (the first) the
  // planner's initial schedule, the point the search starts from.
  const json* parent_schedule = nullptr;
  std::string vs;
  if (row.parent != nullptr) {
    parent_schedule = Field(*row.parent->candidate, "schedule");
    vs = "vs seq " + FormatPlain(row.parent->seq) + (row.explicit_parent ? "" : " (best so far)");
  } else if (const json* initial = Field(Obj(result, "plan"), "initial");
             initial != nullptr && Kernels(initial)) {
    parent_schedule = initial;
    vs = "vs the planner's initial schedule";
  }
  std::optional<std::vector<const json*>> parent_kernels = Kernels(parent_schedule);

  std::vector<std::string> changes;
  std::string full = "<ul class=\"params\">\n";
  size_t params = 0;
  size_t count = std::max(kernels->size(), parent_kernels ? parent_kernels->size() : 0);
  for (size_t i = 0; i < count; ++i) {
    static const json kEmpty = json::object();
    const json& now = i < kernels->size() && (*kernels)[i]->is_object() ? *(*kernels)[i] : kEmpty;
    const json* before = parent_kernels && i < parent_kernels->size() &&
                                 (*parent_kernels)[i]->is_object()
                             ? (*parent_kernels)[i]
                             : nullptr;
    std::string name = KernelName(result, i);
    if (i >= kernels->size()) {
      changes.push_back(name + " removed");
      continue;
    }
    std::string line;
    for (const auto& [key, value] : now.items()) {
      ++params;
      const json* old = before != nullptr ? Field(*before, key.c_str()) : nullptr;
      bool changed = parent_kernels && (old == nullptr || *old != value);
      std::string text = Escape(key) + "=" + Escape(Value(&value));
      line += (line.empty() ? "" : ", ") +
              (changed ? "<mark class=\"changed\">" + text + "</mark>" : text);
      if (changed) changes.push_back(name + " " + key + " " + Value(old) + " → " + Value(&value));
    }
    if (before != nullptr) {
      for (const auto& [key, value] : before->items()) {
        if (!now.contains(key)) changes.push_back(name + " " + key + " " + Value(&value) + " → —");
      }
    }
    full += "<li>" + Escape(name) + ": " + (line.empty() ? Na("no parameters") : line) + "</li>\n";
  }
  full += "</ul>\n";

  std::string s;
  if (vs.empty()) {
    s = "<span class=\"meta\">no parent: every parameter is new</span>";
  } else {
    if (!parent_kernels) {
      s = "<span class=\"meta\">" + Escape(vs) + ": its schedule is unreadable</span>";
    } else if (changes.empty()) {
      s = "<span class=\"meta\">" + Escape(vs) + ": no parameter changed</span>";
    } else {
      s = "<span class=\"meta\">" + Escape(vs) + ":</span>";
      for (const std::string& c : changes) s += " <mark class=\"changed\">" + Escape(c) + "</mark>";
    }
  }
  return s + "\n<details><summary>full schedule (" + std::to_string(kernels->size()) +
         " kernel(s), " + std::to_string(params) + " parameters)</summary>\n" + full +
         "</details>";
}

std::string TimeCell(const json& c) {
  if (auto dup = Text(c, "duplicate_of")) {
    return "<td>" + Na("duplicate of seq " + *dup + ": the same library, not measured again") +
           "</td>";
  }
  std::optional<double> t = Number(c, "median_s");
  if (!t) return "<td class=\"num\">" + Na() + "</td>";
  std::string s = "<td class=\"num\">" + Escape(FormatSeconds(*t));
  auto p10 = Number(c, "p10_s");
  auto p90 = Number(c, "p90_s");
  if (p10 && p90) {
    s += "<br/><span class=\"meta\">p10 " + Escape(FormatSeconds(*p10)) + " · p90 " +
         Escape(FormatSeconds(*p90)) + "</span>";
  }
  return s + "</td>";
}

std::string LoadCell(const json& c) {
  const json* load = Field(c, "load");
  if (load == nullptr || !load->is_object()) return "<td>" + Na() + "</td>";
  std::string s;
  if (auto avg = Number(*load, "load_avg_1m")) s += FormatPlain(*avg);
  if (auto cores = Text(*load, "cores")) s += (s.empty() ? "" : " on ") + *cores + " cores";
  std::string html = s.empty() ? Na() : Escape(s);
  if (auto busy = Number(*load, "busy_cores")) {
    html += "<br/><span class=\"meta\">" + Escape(FormatPlain(*busy)) + " busy</span>";
  }
  const json* loaded = Field(*load, "loaded");
  if (loaded != nullptr && loaded->is_boolean() && loaded->get<bool>()) {
    html += " " + Badge("loaded", "loaded");
  }
  return "<td>" + html + "</td>";
}

std::string DiagnosisText(const json& candidate) {
  const json* d = Field(candidate, "diagnosis");
  if (d == nullptr) return "";
  if (d->is_string()) return d->get<std::string>();
  if (d->is_object()) {
    std::string cls = Text(*d, "class").value_or("");
    for (const char* key : {"summary", "message", "detail"}) {
      if (auto line = Text(*d, key)) return cls.empty() ? *line : cls + ": " + *line;
    }
    if (!cls.empty()) return cls;
  }
  return CompactJson(*d, 300);
}

}  // namespace

std::string CandidatesSection(const json& result) {
  std::vector<const json*> candidates = Items(result, "candidates");
  std::string s = "<section id=\"candidates\">\n<h2>Candidates</h2>\n";
  if (candidates.empty()) return s + Missing("No candidates were run.") + "</section>\n";
  std::vector<Row> rows;
  bool has_duration = false, has_parent = false;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const json& c = *candidates[i];
    rows.push_back({&c, Number(c, "seq").value_or(static_cast<double>(i)), std::nullopt});
    has_duration = has_duration || (c.is_object() && c.contains("duration_s"));
    has_parent = has_parent || Number(c, "parent_seq").has_value();
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.seq < b.seq; });
  FillDurations(rows, has_duration);
  FillParents(rows);

  s += "<p class=\"legend\"><b>took</b>: " +
       std::string(has_duration
                       ? "the candidate's own duration (build, test and measurement)."
                       : "the time from this candidate's creation to the next one's (the result "
                         "records only the time since the first candidate, elapsed_s); the last "
                         "candidate has none.") +
       " <b>schedule</b>: the parameters that differ from the parent are marked; the full "
       "schedule of every kernel is folded below. " +
       (has_parent ? "The parent is the candidate it was derived from (parent_seq); without one, "
                     "the best correct candidate before it (marked best so far)."
                   : "The result does not record which candidate each was derived from: the "
                     "parent shown is the best correct candidate before it (best so far).") +
       "</p>\n";

  std::optional<double> best_seq = Number(Obj(result, "best"), "seq");
  s += "<table>\n<tr><th>seq</th><th>candidate</th><th>status</th><th>time</th>"
       "<th>best so far</th><th>of roofline</th><th>took</th><th>load</th><th>schedule</th>"
       "<th>diagnosis</th></tr>\n";
  for (const Row& row : rows) {
    const json& c = *row.candidate;
    bool is_best = best_seq && *best_seq == row.seq;
    std::string status = Text(c, "status").value_or("no status");
    std::string id = Text(c, "candidate_id") ? Escape(*Text(c, "candidate_id")) : Na();
    if (auto lib = Text(c, "library")) {
      id += "<br/><span class=\"meta\">lib <code>" + Escape(lib->substr(0, 12)) + "</code></span>";
    }
    s += std::string(is_best ? "<tr class=\"best\">" : "<tr>") + TextCell(c, "seq") + "<td>" + id +
         "</td><td>" + Badge(StatusClass(c), status) + (is_best ? " best" : "") + "</td>" +
         TimeCell(c) + NumCell(c, "best_so_far_s", FormatSeconds) + "<td class=\"num\">" +
         RooflineHtml(Number(c, "roofline_fraction"), std::nullopt) + "</td><td class=\"num\">" +
         (row.duration ? Escape(FormatSeconds(*row.duration)) : Na()) + "</td>" + LoadCell(c) +
         "<td>" + ScheduleCell(result, row) + "</td>";
    std::string diagnosis = DiagnosisText(c);
    s += "<td>" + (diagnosis.empty() ? Na() : Escape(diagnosis)) + "</td></tr>\n";
  }
  return s + "</table>\n</section>\n";
}

}  // namespace mk::report::report
