// libFuzzer target for the task.yaml parser (tests/fuzz/README.md). Every input must either fail
// with a message that names the file (and, where it gives a position, a line:col that lies
// inside the text), or give a Task. A Task must pass or fail ValidateTask cleanly, and its
// serialization must parse back to the same task and print the same text again: TaskToYaml is
// how `baseline` and `import` rewrite task.yaml, so a task that does not survive it would be
// corrupted on disk. Anything else aborts, which libFuzzer reports as a finding; crashes, leaks
// and UB are caught by ASan/UBSan. CI replays the corpus and the crash inputs through this same
// function (replay_main.cc).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "task/task.h"

namespace {

constexpr const char* kFile = "fuzz/task.yaml";

[[noreturn]] void Violation(const char* what, const std::string& detail, const std::string& text) {
  std::fprintf(stderr, "task.yaml property violated: %s\n%s\n--- text ---\n%s\n", what,
               detail.c_str(), text.c_str());
  std::abort();
}

// Whether a 1-based line:col lies in `text` (a column may point one past the end of its line,
// where a line break or the end of the text is missing). Lines end at '\n' only, as yaml-cpp
// counts them; a column counts bytes.
bool InText(const std::string& text, int line, int col) {
  if (line < 1 || col < 1) return false;
  size_t start = 0;
  for (int l = 1; l < line; ++l) {
    const size_t nl = text.find('\n', start);
    if (nl == std::string::npos) return false;
    start = nl + 1;
  }
  const size_t end = std::min(text.find('\n', start), text.size());
  return static_cast<size_t>(col) <= end - start + 1;
}

void CheckError(const mk::Status& status, const std::string& text) {
  if (status.message().empty()) Violation("error with an empty message", status.ToString(), text);
  if (status.loc().file != kFile) Violation("error does not name the file", status.ToString(), text);
  const mk::SourceLoc& loc = status.loc();
  if (loc.known() && !InText(text, loc.line, loc.col)) {
    Violation("error position lies outside the text", status.ToString(), text);
  }
}

bool SameNumber(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

// The parts of a task that TaskToYaml writes without rewriting them (strings may have their
// invalid UTF-8 replaced, so they are covered by the text fixed point instead).
std::string DescribeDifference(const mk::task::Task& a, const mk::task::Task& b) {
  if (a.format != b.format || a.seed != b.seed || a.flops != b.flops || a.bytes != b.bytes) {
    return "format, seed, flops or bytes differ";
  }
  if (!SameNumber(a.atol, b.atol) || !SameNumber(a.rtol, b.rtol)) return "tolerances differ";
  if (a.parameters.size() != b.parameters.size()) return "parameter count differs";
  for (size_t i = 0; i < a.parameters.size(); ++i) {
    const auto& p = a.parameters[i];
    const auto& q = b.parameters[i];
    if (!p.shape.SameAs(q.shape)) return "parameter " + std::to_string(i) + " shape differs";
    if (p.init.kind != q.init.kind || !SameNumber(p.init.mean, q.init.mean) ||
        !SameNumber(p.init.std, q.init.std) || !SameNumber(p.init.low, q.init.low) ||
        !SameNumber(p.init.high, q.init.high) || p.init.int_low != q.init.int_low ||
        p.init.int_high != q.init.int_high) {
      return "parameter " + std::to_string(i) + " init differs";
    }
  }
  if (a.outputs.size() != b.outputs.size()) return "output count differs";
  for (size_t i = 0; i < a.outputs.size(); ++i) {
    const auto& o = a.outputs[i];
    const auto& p = b.outputs[i];
    if (!o.shape.SameAs(p.shape) || !SameNumber(o.atol, p.atol) || !SameNumber(o.rtol, p.rtol)) {
      return "output " + std::to_string(i) + " differs";
    }
  }
  if (a.baseline.has_value() != b.baseline.has_value()) return "baseline presence differs";
  if (a.baseline) {
    const auto& x = *a.baseline;
    const auto& y = *b.baseline;
    if (!SameNumber(x.median_s, y.median_s) || !SameNumber(x.p10_s, y.p10_s) ||
        !SameNumber(x.p90_s, y.p90_s) || x.runs != y.runs) {
      return "baseline differs";
    }
  }
  return "";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  mk::Result<mk::task::Task> parsed = mk::task::ParseTaskYaml(text, kFile);
  if (!parsed.ok()) {
    CheckError(parsed.status(), text);
    return 0;
  }
  mk::Status valid = mk::task::ValidateTask(*parsed);
  if (!valid.ok() && valid.message().empty()) {
    Violation("ValidateTask error with an empty message", valid.ToString(), text);
  }
  const std::string printed = mk::task::TaskToYaml(*parsed);
  mk::Result<mk::task::Task> reparsed = mk::task::ParseTaskYaml(printed, kFile);
  if (!reparsed.ok()) Violation("TaskToYaml output does not parse", reparsed.status().ToString(), printed);
  const std::string difference = DescribeDifference(*parsed, *reparsed);
  if (!difference.empty()) Violation("parse(TaskToYaml(t)) differs from t", difference, printed);
  const std::string reprinted = mk::task::TaskToYaml(*reparsed);
  if (reprinted != printed) Violation("TaskToYaml is not a fixed point", reprinted, printed);
  return 0;
}
