// For tests of Prometheus textfiles: what node_exporter's textfile collector does with several
// `.prom` files in one folder. It merges them into one scrape, so a metric name must have the
// same type (and help) in every file, and no series (name + label set) may appear twice; a
// clash is an error at scrape time that drops every file's metrics. `MergeTextfiles` performs
// that merge and reports each clash; `RunPromtool` checks the merged text with
// `promtool check metrics` (Debian package `prometheus`), when it is installed.
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "support/subprocess.h"

namespace mk::metrics_testing {

struct MergedTextfiles {
  std::string text;                 // one exposition: families sorted by name, samples in order
  std::vector<std::string> errors;  // type/help conflicts and duplicate series, one line each
};

namespace metrics_internal {

// `a="x",b="y"` (the text between the braces) as sorted name=value pairs; values kept escaped.
inline std::vector<std::pair<std::string, std::string>> ParseLabels(const std::string& s) {
  std::vector<std::pair<std::string, std::string>> labels;
  size_t i = 0;
  while (i < s.size()) {
    size_t eq = s.find('=', i);
    if (eq == std::string::npos || eq + 1 >= s.size() || s[eq + 1] != '"') break;
    std::string name = s.substr(i, eq - i);
    std::string value;
    size_t j = eq + 2;
    for (; j < s.size() && s[j] != '"'; ++j) {
      if (s[j] == '\\' && j + 1 < s.size()) value += s[j++];
      value += s[j];
    }
    labels.emplace_back(name, value);
    i = j + 1;
    if (i < s.size() && s[i] == ',') ++i;
  }
  std::sort(labels.begin(), labels.end());
  return labels;
}

}  // namespace metrics_internal

// `files`: (file name, contents) pairs. Samples of a histogram family (`x_bucket`, `x_sum`,
// `x_count`) belong to family `x`.
inline MergedTextfiles MergeTextfiles(const std::vector<std::pair<std::string, std::string>>& files) {
  struct Family {
    std::string help, type, help_from, type_from;
    std::vector<std::string> samples;
  };
  std::map<std::string, Family> families;
  std::map<std::string, std::string> series_from;  // canonical series -> the file that had it
  MergedTextfiles merged;
  for (const auto& [file, contents] : files) {
    std::map<std::string, std::string> types_here;  // family -> type, as declared in this file
    std::istringstream lines(contents);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.empty()) continue;
      if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) {
        bool is_help = line[2] == 'H';
        std::string rest = line.substr(7);
        size_t sp = rest.find(' ');
        std::string name = rest.substr(0, sp);
        std::string text = sp == std::string::npos ? "" : rest.substr(sp + 1);
        Family& f = families[name];
        std::string& have = is_help ? f.help : f.type;
        std::string& from = is_help ? f.help_from : f.type_from;
        if (!from.empty() && have != text) {
          merged.errors.push_back(name + ": " + (is_help ? "help" : "type") + " '" + text +
                                  "' in " + file + " but '" + have + "' in " + from);
        } else if (from.empty()) {
          have = text;
          from = file;
        }
        if (!is_help) types_here[name] = text;
        continue;
      }
      if (line[0] == '#') continue;
      size_t brace = line.find('{');
      size_t name_end = std::min(brace, line.find(' '));
      std::string name = line.substr(0, name_end);
      std::string labels;
      if (brace == name_end && brace != std::string::npos) {
        size_t close = line.rfind('}');
        labels = line.substr(brace + 1, close - brace - 1);
      }
      std::string family = name;
      for (const char* suffix : {"_bucket", "_sum", "_count"}) {
        std::string sfx = suffix;
        if (name.size() > sfx.size() && name.compare(name.size() - sfx.size(), sfx.size(), sfx) == 0) {
          std::string base = name.substr(0, name.size() - sfx.size());
          if (types_here.count(base) && types_here[base] == "histogram") family = base;
        }
      }
      std::string key = name + "{";
      for (const auto& [k, v] : metrics_internal::ParseLabels(labels)) key += k + "=\"" + v + "\",";
      key += "}";
      auto [it, fresh] = series_from.emplace(key, file);
      if (!fresh) merged.errors.push_back("duplicate series " + key + " in " + it->second + " and " + file);
      families[family].samples.push_back(line);
    }
  }
  for (const auto& [name, f] : families) {
    if (!f.help_from.empty()) merged.text += "# HELP " + name + " " + f.help + "\n";
    if (!f.type_from.empty()) merged.text += "# TYPE " + name + " " + f.type + "\n";
    for (const std::string& s : f.samples) merged.text += s + "\n";
  }
  return merged;
}

// `promtool check metrics < path`: nullopt when promtool is not installed, else its exit code
// and output (lint problems and parse errors are on stderr).
struct PromtoolResult {
  int exit_code = -1;
  std::string output;
};
inline std::optional<PromtoolResult> RunPromtool(const std::string& path) {
  auto found = RunProcess({"sh", "-c", "command -v promtool"}, 10);
  if (!found.ok() || found->exit_code != 0) return std::nullopt;
  // The path is the test's own temporary file; single quotes keep the shell off it.
  auto ran = RunProcess({"sh", "-c", "promtool check metrics < '" + path + "'"}, 60);
  if (!ran.ok()) return PromtoolResult{-1, ran.status().ToString()};
  return PromtoolResult{ran->signaled || ran->timed_out ? -1 : ran->exit_code, ran->out + ran->err};
}

}  // namespace mk::metrics_testing
