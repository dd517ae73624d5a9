// The HTML report of an optimize run: one self-contained file (inline CSS and inline SVG, no
// JavaScript, no external URL) that opens from disk. It shows the run's header, a summary table,
// a convergence plot (time per iteration, best so far, the XLA baseline), a roofline chart of
// the plan's kernels and of the whole module, the measurement verdicts, the plan and why, every
// candidate with its full schedule diffed against its parent, the best kernel's source, the
// artifact hashes and the planner's rationale. docs/REPORTS_AND_METRICS.md describes the sections.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace mk::report {

// What the report shows beyond the result JSON; the caller reads it from the store.
struct ReportExtras {
  std::string best_source;  // the best candidate's kernel source ("" when unknown)
};

// `result` is the optimize result JSON ("maxkernel.optimize.result/1", documented in
// docs/REPORTS_AND_METRICS.md). Every value from it is HTML-escaped. Missing, null or mistyped
// fields never fail the rendering: the report says what is missing instead (no baseline, no
// measured kernel, no correct candidate, no candidates at all).
std::string RenderOptimizeReport(const nlohmann::json& result, const ReportExtras& extras = {});

}  // namespace mk::report
