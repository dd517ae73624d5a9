// Shared by the report's tests (report_html_test.cc, report_html_story_test.cc): a full
// hand-made result JSON and the checks every rendered page must pass (XML well-formed, no URL,
// no script, finite SVG coordinates).
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mk::report::test_util {

using nlohmann::json;

inline json Candidate(int seq, const std::string& status, json median, json best_so_far) {
  return {{"seq", seq},
          {"candidate_id", 100 + seq},
          {"status", status},
          {"median_s", median},
          {"best_so_far_s", best_so_far},
          {"roofline_fraction", median.is_null() ? json() : json(0.2)},
          {"elapsed_s", 1.5},
          {"schedule", {{"kernels", {{{"threads", 1 + seq % 2}}}}}},
          {"diagnosis", status == "build_failed" ? json("syntax: expected ';'") : json()}};
}

// The schema's example, with six candidates of every status.
inline json FullResult() {
  json r = {
      {"schema", "maxkernel.optimize.result/1"},
      {"run_id", 3},
      {"status", "succeeded"},
      {"stop_reason", "max_iterations"},
      {"date", "2026-12-03T10:00:00Z"},
      {"task",
       {{"id", "12p"}, {"name", "llama3_70b_rmsnorm"}, {"dir", "/tasks/12p/ci"}, {"scale", "ci"},
        {"dtype", "bf16"}, {"flops", 2.0e6}, {"bytes", 4.0e6}}},
      {"target",
       {{"name", "cpu"}, {"model", "AMD EPYC 9B14"}, {"cores", 2}, {"peak_flops_f32", 7.4e11},
        {"peak_flops_bf16", 9.1e11}, {"bandwidth_bytes_per_s", 2.0e10},
        {"peaks_source", "probe"}}},
      {"options",
       {{"max_iterations", 20}, {"time_budget_s", 600}, {"target_metric", "speedup>=1.5"},
        {"seed", 0}}},
      {"iterations", 6},
      {"elapsed_s", 42.0},
      {"baseline", {{"engine", "xla-cpu"}, {"median_s", 0.001}}},
      {"first", {{"seq", 0}, {"candidate_id", 100}, {"median_s", 0.002}}},
      {"best",
       {{"seq", 4}, {"candidate_id", 104}, {"median_s", 0.0011}, {"p10_s", 0.00108},
        {"p90_s", 0.0012}, {"gflops", 1.8}, {"gbps", 3.6}, {"roofline_fraction", 0.42},
        {"bottleneck", "memory"}, {"speedup_vs_first", 1.8}, {"speedup_vs_baseline", 0.9},
        {"schedule", {{"kernels", {{{"threads", 2}}}}}},
        {"artifacts",
         {{"source", std::string(64, 'a')}, {"library", std::string(64, 'b')},
          {"implementation", std::string(64, 'c')}}}}},
      {"plan",
       {{"lower_bound_s", 0.0002},
        {"rationale_markdown",
         "## Plan\nTwo kernels: a `reduce` and an\nelementwise tail.\n\n- fuse the "
         "**normalization**\n- split rows\n\n```\nthreads = 2\n```\n"},
        {"kernels",
         {{{"id", 0}, {"name", "kernel.0.reduction"}, {"family", "reduction"}, {"flops", 1.0e6},
           {"bytes", 2.0e6}, {"intensity", 0.5}, {"lower_bound_s", 1e-4}, {"bound", "memory"},
           {"measured_s", 6e-4}},
          {{"id", 1}, {"name", "kernel.1.loop"}, {"family", "loop"}, {"flops", 1.0e6},
           {"bytes", 2.0e6}, {"intensity", 0.5}, {"lower_bound_s", 1e-4}, {"bound", "memory"},
           {"measured_s", nullptr}}}}}},
      {"candidates", json::array()}};
  r["candidates"] = {Candidate(0, "correct", 0.002, 0.002),
                     Candidate(1, "build_failed", nullptr, 0.002),
                     Candidate(2, "correct", 0.0015, 0.0015),
                     Candidate(3, "test_failed", nullptr, 0.0015),
                     Candidate(4, "correct", 0.0011, 0.0011),
                     Candidate(5, "correct", 0.0013, 0.0011)};
  return r;
}

// ---- a small XML well-formedness checker -----------------------------------------------------
// The page is meant to be XHTML-clean: every element closed, attributes quoted, every '&' an
// entity, no raw '<' or '>' in text. Returns what is wrong, or "" when nothing is.

inline bool EntityAt(const std::string& s, size_t i) {
  for (const char* e : {"&amp;", "&lt;", "&gt;", "&quot;", "&#39;"}) {
    if (s.compare(i, std::string(e).size(), e) == 0) return true;
  }
  return false;
}

inline std::string CheckAttributes(const std::string& tag, size_t name_end) {
  std::set<std::string> seen;
  size_t i = name_end;
  while (true) {
    while (i < tag.size() && tag[i] == ' ') ++i;
    if (i >= tag.size() || (tag[i] == '/' && i + 1 == tag.size())) return "";
    size_t eq = tag.find("=\"", i);
    if (eq == std::string::npos) return "attribute without a quoted value in <" + tag + ">";
    std::string name = tag.substr(i, eq - i);
    if (name.empty() || !std::isalpha(static_cast<unsigned char>(name[0])) ||
        name.find_first_not_of(
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-:") !=
            std::string::npos) {
      return "bad attribute name '" + name + "' in <" + tag + ">";
    }
    if (!seen.insert(name).second) return "duplicate attribute " + name + " in <" + tag + ">";
    size_t close = tag.find('"', eq + 2);
    if (close == std::string::npos) return "unterminated attribute in <" + tag + ">";
    std::string value = tag.substr(eq + 2, close - eq - 2);
    if (value.find('<') != std::string::npos) return "'<' in an attribute of <" + tag + ">";
    for (size_t k = value.find('&'); k != std::string::npos; k = value.find('&', k + 1)) {
      if (!EntityAt(value, k)) return "bare '&' in an attribute of <" + tag + ">";
    }
    i = close + 1;
  }
}

inline std::string XmlProblems(const std::string& s) {
  const std::string doctype = "<!DOCTYPE html>";
  if (s.compare(0, doctype.size(), doctype) != 0) return "no doctype";
  std::vector<std::string> open;
  size_t root_elements = 0;
  for (size_t i = doctype.size(); i < s.size(); ++i) {
    char c = s[i];
    if (c == '&' && !EntityAt(s, i)) return "bare '&' at " + std::to_string(i);
    if (c == '>') return "raw '>' in text at " + std::to_string(i);
    if (c != '<') continue;
    size_t end = s.find('>', i);
    if (end == std::string::npos) return "unterminated tag at " + std::to_string(i);
    std::string tag = s.substr(i + 1, end - i - 1);
    i = end;
    if (tag.empty()) return "empty tag";
    if (tag[0] == '/') {
      if (open.empty() || open.back() != tag.substr(1)) {
        return "</" + tag.substr(1) + "> closes <" + (open.empty() ? "" : open.back()) + ">";
      }
      open.pop_back();
      continue;
    }
    size_t name_end = tag.find_first_of(" /");
    std::string name = tag.substr(0, name_end);
    if (name.empty() || name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789") !=
                            std::string::npos) {
      return "bad element name in <" + tag + ">";
    }
    if (name_end != std::string::npos) {
      std::string problem = CheckAttributes(tag, name_end);
      if (!problem.empty()) return problem;
    }
    if (open.empty()) ++root_elements;
    if (tag.back() != '/') open.push_back(name);
  }
  if (!open.empty()) return "<" + open.back() + "> never closed";
  if (root_elements != 1) return "more than one root element";
  return "";
}

// The text of the element `<svg id="ID" ...>...</svg>`, or "" when there is none.
inline std::string Svg(const std::string& html, const std::string& id) {
  size_t start = html.find("<svg id=\"" + id + "\"");
  if (start == std::string::npos) return "";
  size_t end = html.find("</svg>", start);
  return html.substr(start, end - start);
}

inline size_t Count(const std::string& s, const std::string& needle) {
  size_t n = 0;
  for (size_t i = s.find(needle); i != std::string::npos; i = s.find(needle, i + 1)) ++n;
  return n;
}

// Every coordinate attribute of the SVG parses as a finite number.
inline std::string NonFiniteCoordinate(const std::string& svg) {
  for (const char* attr : {" x=\"", " y=\"", " cx=\"", " cy=\"", " x1=\"", " y1=\"", " x2=\"",
                           " y2=\"", " width=\"", " height=\""}) {
    for (size_t i = svg.find(attr); i != std::string::npos; i = svg.find(attr, i + 1)) {
      size_t start = i + std::string(attr).size();
      std::string value = svg.substr(start, svg.find('"', start) - start);
      char* end = nullptr;
      double v = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || !std::isfinite(v)) return std::string(attr) + value;
    }
  }
  for (size_t i = svg.find(" d=\""); i != std::string::npos; i = svg.find(" d=\"", i + 1)) {
    std::string d = svg.substr(i + 4, svg.find('"', i + 4) - i - 4);
    if (d.find("nan") != std::string::npos || d.find("inf") != std::string::npos) return d;
  }
  return "";
}

inline void ExpectSound(const std::string& html) {
  EXPECT_EQ(XmlProblems(html), "");
  EXPECT_EQ(html.find("http"), std::string::npos) << "no URL may appear";
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(NonFiniteCoordinate(html), "");
}

}  // namespace mk::report::test_util
