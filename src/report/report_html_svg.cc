// The report's two charts as inline SVG: the convergence plot (time per iteration) and the
// roofline chart. Both are drawn from plain numbers in the result JSON; values that cannot be
// placed (a failed candidate has no time, a kernel without FLOPs has no place on a log scale)
// are shown separately or named in a note below the chart, never silently dropped.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <numbers>

#include "report/report_html_internal.h"

namespace mk::report::html {
namespace {

// ---- scales ----------------------------------------------------------------------------------

struct Axis {
  bool log = false;
  double lo = 0, hi = 1;  // domain
  double p0 = 0, p1 = 1;  // pixel positions of lo and hi
  std::vector<double> ticks;

  double Map(double v) const {
    if (log) v = std::max(v, lo);  // a value below the clamped range sits on the frame's edge
    double t = log ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo))
                   : (v - lo) / (hi - lo);
    return p0 + t * (p1 - p0);
  }
};

// A log axis over whole decades around [lo, hi] (both > 0). Ticks at decades; with at most two
// decades also at 2x and 5x, so a narrow axis still has labels; with many, every k-th decade.
Axis LogAxis(double lo, double hi, double p0, double p1) {
  // Callers pass positive finite values; the clamps keep a degenerate input drawable.
  // (1e-300: pow(10, floor(log10(x))) stays a normal double.)
  if (!(lo > 1e-300 && lo < 1e300)) lo = lo > 1 ? 1e300 : 1e-300;
  if (!(hi > 1e-300 && hi < 1e300)) hi = hi > 1 ? 1e300 : 1e-300;
  if (hi < lo) std::swap(lo, hi);
  double a = std::floor(std::log10(lo));
  double b = std::ceil(std::log10(hi));
  if (b <= a) b = a + 1;
  Axis axis{true, std::pow(10.0, a), std::pow(10.0, b), p0, p1, {}};
  int decades = static_cast<int>(b - a);
  int every = std::max(1, (decades + 7) / 8);
  for (int d = 0; d <= decades; d += every) {
    double base = std::pow(10.0, a + d);
    axis.ticks.push_back(base);
    if (decades <= 2 && d < decades) {
      axis.ticks.push_back(2 * base);
      axis.ticks.push_back(5 * base);
    }
  }
  return axis;
}

// A linear axis over [lo, hi] widened to multiples of a 1/2/5 x 10^k step giving about
// `target` ticks; `integer` keeps the step a whole number (iterations).
Axis LinearAxis(double lo, double hi, double p0, double p1, int target, bool integer) {
  if (!(hi > lo)) hi = lo + (lo == 0 ? 1 : std::fabs(lo) * 0.1);
  double raw = (hi - lo) / target;
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double norm = raw / mag;
  double step = (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
  if (integer) step = std::max(1.0, std::round(step));
  Axis axis{false, lo, hi, p0, p1, {}};
  double first = std::ceil(lo / step - 1e-9);
  for (int i = 0; i < 100; ++i) {
    double v = (first + i) * step;
    if (v > hi + step * 1e-9) break;
    axis.ticks.push_back(std::fabs(v) < step * 1e-9 ? 0 : v);
  }
  return axis;
}

std::string Px(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  return buf;
}

struct Frame {
  double left, right, top, bottom;  // the plot area in pixels
};

std::string SvgText(double x, double y, const std::string& anchor, const std::string& escaped,
                 const std::string& extra = "") {
  return "<text x=\"" + Px(x) + "\" y=\"" + Px(y) + "\" text-anchor=\"" + anchor + "\"" + extra +
         ">" + escaped + "</text>\n";
}

// Grid lines, tick labels and axis titles.
std::string AxesSvg(const Frame& f, const Axis& x, const Axis& y,
                    const std::function<std::string(double)>& x_label,
                    const std::function<std::string(double)>& y_label,
                    const std::string& x_title, const std::string& y_title, double x_axis_y) {
  std::string s = "<g class=\"axes\" font-size=\"11\" fill=\"#444\">\n";
  for (double t : x.ticks) {
    double px = x.Map(t);
    if (px < f.left - 0.5 || px > f.right + 0.5) continue;
    s += "<line x1=\"" + Px(px) + "\" y1=\"" + Px(f.top) + "\" x2=\"" + Px(px) + "\" y2=\"" +
         Px(x_axis_y) + "\" stroke=\"#e4e4e4\"/>\n";
    s += SvgText(px, x_axis_y + 16, "middle", Escape(x_label(t)));
  }
  for (double t : y.ticks) {
    double py = y.Map(t);
    if (py < f.top - 0.5 || py > f.bottom + 0.5) continue;
    s += "<line x1=\"" + Px(f.left) + "\" y1=\"" + Px(py) + "\" x2=\"" + Px(f.right) + "\" y2=\"" +
         Px(py) + "\" stroke=\"#e4e4e4\"/>\n";
    s += SvgText(f.left - 6, py + 4, "end", Escape(y_label(t)));
  }
  s += "<line x1=\"" + Px(f.left) + "\" y1=\"" + Px(x_axis_y) + "\" x2=\"" + Px(f.right) +
       "\" y2=\"" + Px(x_axis_y) + "\" stroke=\"#888\"/>\n";
  s += "<line x1=\"" + Px(f.left) + "\" y1=\"" + Px(f.top) + "\" x2=\"" + Px(f.left) + "\" y2=\"" +
       Px(x_axis_y) + "\" stroke=\"#888\"/>\n";
  s += SvgText((f.left + f.right) / 2, x_axis_y + 36, "middle", Escape(x_title));
  double cy = (f.top + f.bottom) / 2;
  s += SvgText(16, cy, "middle", Escape(y_title),
            " transform=\"rotate(-90 16 " + Px(cy) + ")\"");
  s += "</g>\n";
  return s;
}

std::string SvgOpen(const std::string& id, int w, int h, const std::string& label) {
  return "<svg id=\"" + id + "\" class=\"chart\" viewBox=\"0 0 " + std::to_string(w) + " " +
         std::to_string(h) + "\" width=\"" + std::to_string(w) + "\" height=\"" +
         std::to_string(h) + "\" role=\"img\" aria-label=\"" + Escape(label) +
         "\" font-family=\"sans-serif\">\n";
}

const char* StatusColor(const std::string& status_class) {
  if (status_class == "correct") return "#2a9d4b";
  if (status_class == "build_failed") return "#d1495b";
  if (status_class == "test_failed") return "#e09f3e";
  if (status_class == "duplicate") return "#5a7fa8";
  return "#888888";
}

std::string Swatch(const std::string& style, const std::string& label) {
  return "<span class=\"key\"><span class=\"swatch\" style=\"" + style + "\"></span>" +
         Escape(label) + "</span>\n";
}

// ---- convergence -----------------------------------------------------------------------------

struct Point {
  double seq;
  std::optional<double> time;  // a positive median, or none (failed, or no time recorded)
  std::optional<double> best_so_far;
  std::string status_class;
  std::string title;
};

std::vector<Point> ConvergencePoints(const json& result) {
  std::vector<Point> points;
  std::vector<const json*> candidates = Items(result, "candidates");
  for (size_t i = 0; i < candidates.size(); ++i) {
    const json& c = *candidates[i];
    Point p;
    p.seq = Number(c, "seq").value_or(static_cast<double>(i));
    std::optional<double> t = Number(c, "median_s");
    if (t && *t > 0) p.time = t;
    std::optional<double> b = Number(c, "best_so_far_s");
    if (b && *b > 0) p.best_so_far = b;
    p.status_class = StatusClass(c);
    p.title = "seq " + FormatPlain(p.seq);
    if (auto id = Text(c, "candidate_id")) p.title += " · candidate " + *id;
    p.title += " · " + Text(c, "status").value_or("no status");
    p.title += " · " + (p.time ? FormatSeconds(*p.time) : std::string("no time"));
    points.push_back(std::move(p));
  }
  std::stable_sort(points.begin(), points.end(),
                   [](const Point& a, const Point& b) { return a.seq < b.seq; });
  // Where the result does not say, best so far is the running minimum of correct times.
  std::optional<double> running;
  for (Point& p : points) {
    if (p.status_class == "correct" && p.time)
      running = std::min(running.value_or(*p.time), *p.time);
    if (!p.best_so_far) p.best_so_far = running;
  }
  return points;
}

}  // namespace

std::string ConvergenceChart(const json& result) {
  std::vector<Point> points = ConvergencePoints(result);
  if (points.empty()) return Missing("No candidates were run: there is nothing to plot.");
  std::optional<double> baseline;
  const json* base = Field(result, "baseline");
  if (base != nullptr) {
    std::optional<double> b = Number(*base, "median_s");
    if (b && *b > 0) baseline = b;
  }
  std::optional<double> best_seq;
  if (const json* best = Field(result, "best")) best_seq = Number(*best, "seq");

  std::vector<double> times;
  bool any_untimed = false;
  for (const Point& p : points) {
    if (p.time) times.push_back(*p.time);
    else any_untimed = true;
    if (p.best_so_far) times.push_back(*p.best_so_far);
  }
  if (baseline) times.push_back(*baseline);

  const int w = 760, h = 340;
  const double strip = any_untimed ? 30 : 0;
  const double axis_y = h - 48;
  Frame f{80, w - 24.0, 14, axis_y - strip};
  double seq_lo = points.front().seq, seq_hi = points.back().seq;
  Axis x = LinearAxis(seq_lo - 0.5, seq_hi + 0.5, f.left, f.right, 10, true);
  x.lo = seq_lo - 0.5;  // keep the dots off the frame's edges
  x.hi = seq_hi + 0.5;

  Axis y;
  bool log = false;
  if (!times.empty()) {
    double lo = *std::min_element(times.begin(), times.end());
    double hi = *std::max_element(times.begin(), times.end());
    log = hi / lo >= 10;
    if (log) {
      y = LogAxis(lo, hi, f.bottom - 6, f.top);
    } else {
      double pad = hi > lo ? 0.1 * (hi - lo) : 0.1 * hi;
      y = LinearAxis(lo - pad, hi + pad, f.bottom - 6, f.top, 5, false);
    }
  }

  std::string s = SvgOpen("convergence", w, h, "time per candidate over the iterations");
  s += AxesSvg(f, x, y, FormatPlain, FormatSeconds, "iteration (seq)",
               log ? "time per call (log scale)" : "time per call", axis_y);
  if (times.empty()) {
    s += SvgText((f.left + f.right) / 2, (f.top + f.bottom) / 2, "middle",
              "no candidate produced a time", " font-size=\"13\" fill=\"#888\"");
  }
  if (any_untimed) {
    s += "<rect x=\"" + Px(f.left) + "\" y=\"" + Px(f.bottom) + "\" width=\"" +
         Px(f.right - f.left) + "\" height=\"" + Px(strip) + "\" fill=\"#f6f0f0\"/>\n";
    s += SvgText(f.left - 6, f.bottom + strip / 2 + 4, "end", "no time",
                 " font-size=\"11\" fill=\"#444\"");
  }
  if (baseline) {
    double py = y.Map(*baseline);
    s += "<line x1=\"" + Px(f.left) + "\" y1=\"" + Px(py) + "\" x2=\"" + Px(f.right) + "\" y2=\"" +
         Px(py) + "\" stroke=\"#555\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>\n";
    std::string engine = base != nullptr ? Text(*base, "engine").value_or("baseline") : "baseline";
    s += SvgText(f.right - 4, py - 5, "end", Escape(engine + " " + FormatSeconds(*baseline)),
              " font-size=\"11\" fill=\"#555\"");
  }
  // Best so far as a step line: it holds its value until the next candidate improves on it.
  std::string path;
  double last_y = 0;
  for (const Point& p : points) {
    if (!p.best_so_far) continue;
    double px = x.Map(p.seq), py = y.Map(*p.best_so_far);
    if (path.empty()) {
      path = "M" + Px(px) + " " + Px(py);
    } else {
      path += " H" + Px(px);
      if (py != last_y) path += " V" + Px(py);
    }
    last_y = py;
  }
  if (!path.empty()) {
    path += " H" + Px(x.Map(points.back().seq));
    s += "<path d=\"" + path + "\" fill=\"none\" stroke=\"#1f5f99\" stroke-width=\"2\"/>\n";
  }
  for (const Point& p : points) {
    double px = x.Map(p.seq);
    double py = p.time ? y.Map(*p.time) : f.bottom + strip / 2;
    bool is_best = best_seq && p.time && *best_seq == p.seq;
    s += "<circle cx=\"" + Px(px) + "\" cy=\"" + Px(py) + "\" r=\"" + (is_best ? "6" : "4") +
         "\" fill=\"" + StatusColor(p.status_class) + "\"" +
         (is_best ? " stroke=\"#111\" stroke-width=\"2\"" : " stroke=\"#fff\"") + "><title>" +
         Escape(p.title + (is_best ? " · best" : "")) + "</title></circle>\n";
  }
  s += "</svg>\n";

  std::map<std::string, int> counts;
  for (const Point& p : points) ++counts[p.status_class];
  s += "<p class=\"legend\">\n";
  for (const char* st : {"correct", "build_failed", "test_failed", "duplicate", "other"}) {
    if (counts.count(st)) {
      s += Swatch(std::string("background:") + StatusColor(st) + ";border-radius:50%",
                  std::string(st == std::string("other") ? "other status" : st) + " (" +
                      std::to_string(counts[st]) + ")");
    }
  }
  if (!path.empty()) s += Swatch("background:#1f5f99;height:3px", "best so far");
  if (baseline) s += Swatch("border-top:2px dashed #555;height:0", "baseline");
  s += "</p>\n";
  if (!baseline) s += Missing("No baseline time recorded for this task: no baseline line.");
  if (counts["correct"] == 0) s += Missing("No candidate was correct: there is no best time.");
  return s;
}

// ---- best so far against measurements (search runs) -----------------------------------------

std::string BestSoFarChart(const json& result) {
  // (measurements spent, best time so far) after each measurement that had a best by then.
  std::vector<std::pair<int, double>> steps;
  int spent = 0;
  std::optional<double> best;
  const json* candidates = Field(result, "candidates");
  if (candidates && candidates->is_array()) {
    for (const json& c : *candidates) {
      if (!c.is_object()) continue;
      const std::string status = Text(c, "status").value_or("");
      if (status == "duplicate" || status == "unfinished") continue;  // no budget spent
      ++spent;
      const std::optional<double> t = Number(c, "median_s");
      if (status == "correct" && t && *t > 0 && (!best || *t < *best)) best = t;
      if (best) steps.push_back({spent, *best});
    }
  }
  if (steps.empty()) return Missing("No measurement produced a time: there is no best-so-far curve.");
  double lo = steps.back().second, hi = steps.front().second;
  const int w = 760, h = 260;
  const double axis_y = h - 48;
  Frame f{80, w - 24.0, 14, axis_y};
  Axis x = LinearAxis(0.5, spent + 0.5, f.left, f.right, 10, true);
  x.lo = 0.5;
  x.hi = spent + 0.5;
  const bool log = hi / lo >= 10;
  Axis y = log ? LogAxis(lo, hi, f.bottom - 6, f.top)
               : LinearAxis(lo - (hi > lo ? 0.1 * (hi - lo) : 0.1 * hi),
                            hi + (hi > lo ? 0.1 * (hi - lo) : 0.1 * hi), f.bottom - 6, f.top, 5, false);
  std::string s = SvgOpen("best-so-far", w, h, "best time so far against measurements");
  s += AxesSvg(f, x, y, FormatPlain, FormatSeconds, "measurements spent",
               log ? "best so far (log scale)" : "best so far", axis_y);
  std::string path;
  double last_y = 0;
  for (const auto& [n, t] : steps) {
    const double px = x.Map(n), py = y.Map(t);
    if (path.empty()) {
      path = "M" + Px(px) + " " + Px(py);
    } else {
      path += " H" + Px(px);
      if (py != last_y) path += " V" + Px(py);
    }
    last_y = py;
  }
  s += "<path d=\"" + path + "\" fill=\"none\" stroke=\"#1f5f99\" stroke-width=\"2\"/>\n";
  // A dot where the best improved, titled with the measurement and the time.
  std::optional<double> previous;
  for (const auto& [n, t] : steps) {
    if (previous && t >= *previous) continue;
    previous = t;
    s += "<circle cx=\"" + Px(x.Map(n)) + "\" cy=\"" + Px(y.Map(t)) +
         "\" r=\"4\" fill=\"#1f5f99\" stroke=\"#fff\"><title>" +
         Escape("measurement " + std::to_string(n) + ": " + FormatSeconds(t)) + "</title></circle>\n";
  }
  return s + "</svg>\n";
}

// ---- roofline --------------------------------------------------------------------------------

namespace {

struct Roof {
  std::string dtype;
  double peak_gflops;
};

struct RoofPoint {
  double intensity, gflops;
  std::string label, title;
  bool module;
};

// ", 42.3% of the roof" for a tooltip. Above the roof the peak was measured low: say so rather
// than print a figure over 100% (or clamp it to 100%).
std::string OfTheRoof(double gflops, std::optional<double> attainable) {
  if (!attainable || !(*attainable > 0)) return "";
  double f = gflops / *attainable;
  if (f > 1) return ", above the roof: the measured peak is too low (stale or taken under load)";
  return ", " + FormatPercent(f) + " of the roof";
}

}  // namespace

std::string RooflineChart(const json& result) {
  static const json kEmpty = json::object();
  const json* target = Field(result, "target");
  const json& t = target != nullptr ? *target : kEmpty;
  // bytes/s, 0 when unknown (a plain double: GCC 12 misreads an optional as maybe-uninitialized)
  double bw = std::max(0.0, Number(t, "bandwidth_bytes_per_s").value_or(0));
  double bw_g = bw / 1e9;  // GB/s: GFLOP/s per FLOP/byte
  std::vector<Roof> roofs;
  std::vector<std::string> notes;
  if (std::optional<double> p = Number(t, "peak_flops_f32"); p && *p > 0) {
    roofs.push_back({"f32", *p / 1e9});
  }
  // A bf16 roof only where the CPU does bf16 arithmetic: the result says so with a null peak
  // (and an ISA level without bf16); older results gave such a CPU the f32 peak as its bf16
  // peak, which drew a second roof on top of the first.
  std::string isa = Text(t, "isa_level").value_or("");
  bool isa_without_bf16 = !isa.empty() && isa.find("bf16") == std::string::npos && isa != "amx";
  if (std::optional<double> p = Number(t, "peak_flops_bf16"); p && *p > 0) {
    if (isa_without_bf16) {
      notes.push_back("No bf16 roof: the kernels were built for " + isa +
                      ", which has no bf16 arithmetic.");
    } else if (!roofs.empty() && *p / 1e9 == roofs.front().peak_gflops) {
      notes.push_back("No bf16 roof: its peak equals the f32 peak (bf16 runs as f32 on this CPU).");
    } else {
      roofs.push_back({"bf16", *p / 1e9});
    }
  }
  // The roof a point is judged against: the task's dtype when its peak is known.
  std::string task_dtype;
  if (const json* task = Field(result, "task")) task_dtype = Text(*task, "dtype").value_or("");
  std::optional<double> judged_peak;
  for (const Roof& r : roofs) {
    if (r.dtype == task_dtype) judged_peak = r.peak_gflops;
  }
  if (!judged_peak && !roofs.empty()) judged_peak = roofs.front().peak_gflops;  // f32 first
  auto attainable = [&](double intensity) -> std::optional<double> {
    if (!judged_peak && bw <= 0) return std::nullopt;
    return std::min(judged_peak.value_or(INFINITY), bw > 0 ? intensity * bw_g : INFINITY);
  };

  std::vector<RoofPoint> points;
  int unmeasured = 0, no_flops = 0, unplottable = 0, kernels = 0;
  const json* plan = Field(result, "plan");
  for (const json* k : Items(plan != nullptr ? *plan : kEmpty, "kernels")) {
    ++kernels;
    std::optional<double> measured = Number(*k, "measured_s");
    std::optional<double> flops = Number(*k, "flops");
    std::optional<double> bytes = Number(*k, "bytes");
    std::optional<double> intensity = Number(*k, "intensity");
    if (!intensity && flops && bytes && *bytes > 0) intensity = *flops / *bytes;
    if (!measured || *measured <= 0) {
      ++unmeasured;
      continue;
    }
    if (!flops || *flops <= 0 || !intensity || *intensity <= 0) {
      ++no_flops;
      continue;
    }
    RoofPoint p{*intensity, *flops / *measured / 1e9, "", "", false};
    if (!std::isfinite(p.gflops) || p.gflops <= 0) {
      ++unplottable;
      continue;
    }
    std::string id = Text(*k, "id").value_or("?");
    p.label = "#" + id;
    p.title = "kernel " + id + " " + Text(*k, "name").value_or("") + ": " +
              FormatPlain(p.intensity) + " FLOP/B, " + FormatPlain(p.gflops) + " GFLOP/s";
    p.title += OfTheRoof(p.gflops, attainable(p.intensity));
    points.push_back(std::move(p));
  }
  const json* task = Field(result, "task");
  const json* best = Field(result, "best");
  // (Plain doubles, 0 when unknown: GCC 12 misreads optionals here as maybe-uninitialized.)
  double module_flops = task ? Number(*task, "flops").value_or(0) : 0;
  double module_bytes = task ? Number(*task, "bytes").value_or(0) : 0;
  double best_s = best ? Number(*best, "median_s").value_or(0) : 0;
  bool module_ok = module_flops > 0 && module_bytes > 0 && best_s > 0 &&
                   std::isfinite(module_flops / best_s / 1e9);
  if (module_ok) {
    RoofPoint p{module_flops / module_bytes, module_flops / best_s / 1e9, "module (best)", "",
                true};
    p.title = "whole module, best candidate: " + FormatPlain(p.intensity) + " FLOP/B, " +
              FormatPlain(p.gflops) + " GFLOP/s";
    p.title += OfTheRoof(p.gflops, attainable(p.intensity));
    points.push_back(std::move(p));
  } else if (best_s <= 0) {
    notes.push_back("No module point: the run has no best (correct) candidate.");
  } else {
    notes.push_back("No module point: the task's FLOPs or bytes are unknown, zero or too large.");
  }
  if (kernels == 0) notes.push_back("The plan lists no kernels.");
  if (unmeasured > 0) {
    notes.push_back(std::to_string(unmeasured) + " of " + std::to_string(kernels) +
                    " kernel(s) have no measured time and are not plotted.");
  }
  if (no_flops > 0) {
    notes.push_back(std::to_string(no_flops) +
                    " measured kernel(s) do no floating-point work (0 FLOPs) and have no place on "
                    "a log scale.");
  }
  if (unplottable > 0) {
    notes.push_back(std::to_string(unplottable) +
                    " kernel(s) have a throughput too large or small to plot.");
  }
  if (roofs.empty() || bw <= 0) {
    notes.push_back(
        std::string("The target's ") +
        (roofs.empty() && bw <= 0 ? "peak FLOP/s and bandwidth are"
         : roofs.empty()          ? "peak FLOP/s is"
                                  : "memory bandwidth is") +
        " unknown: " + (roofs.empty() && bw <= 0 ? "no roof is drawn." : "the roof is partial."));
  }

  std::string notes_html;
  for (const std::string& n : notes) notes_html += Missing(n);
  if (points.empty() && roofs.empty() && bw <= 0) {
    return Missing("Nothing to place on a roofline chart.") + notes_html;
  }

  std::vector<double> xs, ys;
  for (const RoofPoint& p : points) {
    xs.push_back(p.intensity);
    ys.push_back(p.gflops);
  }
  for (const Roof& r : roofs) {
    ys.push_back(r.peak_gflops);
    if (bw > 0 && std::isfinite(r.peak_gflops / bw_g)) xs.push_back(r.peak_gflops / bw_g);  // ridge
  }
  if (xs.empty()) xs = {0.1, 10};
  if (ys.empty()) ys = {bw_g * 0.1, bw_g * 10};
  const int w = 760, h = 400;
  Frame f{80, w - 24.0, 14, h - 48.0};
  Axis x = LogAxis(*std::min_element(xs.begin(), xs.end()) / 3,
                   *std::max_element(xs.begin(), xs.end()) * 3, f.left, f.right);
  Axis y = LogAxis(*std::min_element(ys.begin(), ys.end()) / 3,
                   *std::max_element(ys.begin(), ys.end()) * 2, f.bottom, f.top);

  std::string s = SvgOpen("roofline", w, h, "roofline chart: GFLOP/s against FLOP per byte");
  s += AxesSvg(f, x, y, FormatPlain, FormatPlain, "arithmetic intensity (FLOP/byte, log scale)",
               "GFLOP/s (log scale)", f.bottom);
  // One memory slope, shared by every peak, up to the highest ridge point (min(peak, I x bw)
  // for each peak is that slope then its own flat line); then one flat line per peak.
  const char* roof_colors[] = {"#1f3f77", "#7b3f99"};
  double highest = 0;
  for (const Roof& r : roofs) highest = std::max(highest, r.peak_gflops);
  if (bw > 0) {
    double max_ridge = roofs.empty() ? INFINITY : highest / bw_g;
    double x_start = std::max(x.lo, y.lo / bw_g);
    double x_end = std::min({max_ridge, x.hi, y.hi / bw_g});  // stays inside the frame
    if (x_start < x_end) {
      double x0 = x.Map(x_start), y0 = y.Map(x_start * bw_g);
      double x1 = x.Map(x_end), y1 = y.Map(x_end * bw_g);
      s += "<path d=\"M" + Px(x0) + " " + Px(y0) + " L" + Px(x1) + " " + Px(y1) +
           "\" fill=\"none\" stroke=\"" + roof_colors[0] + "\" stroke-width=\"2\"/>\n";
      // The bandwidth label along the slope, at its middle.
      double mx = std::sqrt(x_start * x_end);
      double angle = std::atan2(y1 - y0, x1 - x0) * 180 / std::numbers::pi;
      double lx = x.Map(mx), ly = y.Map(mx * bw_g) - 6;
      s += SvgText(lx, ly, "middle", Escape(FormatSi(bw, "B/s") + " memory"),
                   " font-size=\"11\" fill=\"" + std::string(roof_colors[0]) +
                       "\" transform=\"rotate(" + Px(angle) + " " + Px(lx) + " " + Px(ly) + ")\"");
    }
  }
  // The flat roofs, then their labels laid out together so that close peaks stay legible.
  std::vector<size_t> drawn;
  std::vector<double> line_y;
  for (size_t i = 0; i < roofs.size(); ++i) {
    const Roof& r = roofs[i];
    double ridge = bw > 0 ? r.peak_gflops / bw_g : 0;
    if (!(ridge < x.hi)) continue;  // the peak is never reached inside the chart
    double py = y.Map(r.peak_gflops);
    s += "<path d=\"M" + Px(x.Map(std::max(x.lo, ridge))) + " " + Px(py) + " L" +
         Px(x.Map(x.hi)) + " " + Px(py) + "\" fill=\"none\" stroke=\"" + roof_colors[i % 2] +
         "\" stroke-width=\"2\"" + (i == 0 ? "" : " stroke-dasharray=\"8 4\"") + "/>\n";
    drawn.push_back(i);
    line_y.push_back(py);
  }
  std::vector<double> label_y = LayoutRoofLabels(line_y, f.top, f.bottom);
  for (size_t k = 0; k < drawn.size(); ++k) {
    const Roof& r = roofs[drawn[k]];
    s += SvgText(f.right - 4, label_y[k], "end",
                 Escape(r.dtype + " peak " + FormatSi(r.peak_gflops * 1e9, "FLOP/s")),
                 " font-size=\"" + Px(kLabelFontPx) + "\" fill=\"" + roof_colors[drawn[k] % 2] +
                     "\"");
  }
  for (const RoofPoint& p : points) {
    double px = x.Map(p.intensity), py = y.Map(p.gflops);
    if (p.module) {
      s += "<path d=\"M" + Px(px) + " " + Px(py - 8) + " L" + Px(px + 8) + " " + Px(py) + " L" +
           Px(px) + " " + Px(py + 8) + " L" + Px(px - 8) + " " + Px(py) +
           " Z\" fill=\"#e07a1f\" stroke=\"#111\"><title>" + Escape(p.title) + "</title></path>\n";
    } else {
      s += "<circle cx=\"" + Px(px) + "\" cy=\"" + Px(py) +
           "\" r=\"5\" fill=\"#2a8c8c\" stroke=\"#fff\"><title>" + Escape(p.title) +
           "</title></circle>\n";
    }
    s += SvgText(px + 9, py + 4, "start", Escape(p.label), " font-size=\"11\" fill=\"#222\"");
  }
  s += "</svg>\n";
  s += "<p class=\"legend\">\n";
  s += Swatch("background:#2a8c8c;border-radius:50%", "a kernel of the plan (its measured time)");
  s += Swatch("background:#e07a1f;transform:rotate(45deg)", "the whole module (best candidate)");
  s += "</p>\n";
  return s + notes_html;
}

std::vector<double> LayoutRoofLabels(const std::vector<double>& line_y, double top,
                                     double bottom) {
  std::vector<size_t> order(line_y.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return line_y[a] < line_y[b]; });
  std::vector<double> out(line_y.size());
  const double above = 5, below = kLabelFontPx + 3;  // baseline offsets from the line
  std::optional<double> prev;
  for (size_t i : order) {
    double y = line_y[i] - above;
    // Too close to the label above: go under this label's own line, and further if needed.
    if (prev && y < *prev + kLabelLineHeight) y = std::max(line_y[i] + below, *prev + kLabelLineHeight);
    out[i] = y;
    prev = y;
  }
  if (order.empty()) return out;
  // Keep the stack inside the frame: the first label's top below `top`, the last's baseline
  // above `bottom` (a stack taller than the frame keeps its top).
  double first = out[order.front()], last = out[order.back()];
  double shift = 0;
  if (last > bottom - 3) shift = bottom - 3 - last;
  if (first + shift - kLabelFontPx < top) shift = top + kLabelFontPx - first;
  for (double& y : out) y += shift;
  return out;
}

}  // namespace mk::report::report
