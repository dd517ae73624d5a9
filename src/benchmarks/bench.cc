#include "benchmarks/bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <thread>

#include "agents/engine.h"
#include "agents/profiler.h"
#include "support/subprocess.h"
#include "target/target.h"

namespace mk::bench {

using agents::FormatSeconds;
using agents::JudgeRoundRatios;
using agents::Percentile;
using agents::RatioVerdict;
using agents::SideResult;
using agents::ToJson;
using agents::Verdict;


namespace {

using nlohmann::json;

std::string Fixed(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// One line of a program's output, or "" when it cannot be run.
std::string Capture(const std::vector<std::string>& argv) {
  auto r = RunProcess(argv, 10);
  if (!r.ok() || r->timed_out || r->signaled || r->exit_code != 0) return "";
  return Trimmed(r->out);
}

std::string Pad(const std::string& s, size_t width, bool right) {
  if (s.size() >= width) return s;
  std::string fill(width - s.size(), ' ');
  return right ? fill + s : s + fill;
}

}  // namespace

// ---- rows ---------------------------------------------------------------------------------

std::optional<double> RatioOf(const BenchRow& row, const SideResult& baseline) {
  if (!row.ours || !row.ours->ok() || !baseline.ok()) return std::nullopt;
  return baseline.median_s / row.ours->median_s;
}

std::optional<RatioVerdict> VerdictOf(const BenchRow& row, const SideResult& baseline) {
  if (!row.ours || !row.ours->ok() || !baseline.ok()) return std::nullopt;
  std::vector<double> ratios;
  const size_t n = std::min(row.ours->round_medians.size(), baseline.round_medians.size());
  for (size_t r = 0; r < n; ++r) {
    if (row.ours->round_medians[r] > 0) {
      ratios.push_back(baseline.round_medians[r] / row.ours->round_medians[r]);
    }
  }
  return JudgeRoundRatios(ratios);
}

void SetFloors(const BenchPeaks& peaks, std::vector<BenchRow>& rows) {
  for (BenchRow& row : rows) {
    const bool bf16 = row.dtype.rfind("bf16", 0) == 0;
    const double rate = bf16 ? std::max(peaks.f32_flops, peaks.bf16_flops) : peaks.f32_flops;
    if (row.flops > 0 && rate > 0) row.floor_s = static_cast<double>(row.flops) / rate;
  }
}

std::optional<double> CeilingOf(const BenchRow& row, const SideResult& baseline) {
  if (!row.floor_s || *row.floor_s <= 0 || !baseline.ok()) return std::nullopt;
  return baseline.median_s / *row.floor_s;
}

json ToJson(const BenchRow& row) {
  auto gflops = [&](double seconds) -> json {
    if (row.flops <= 0 || seconds <= 0) return nullptr;
    return static_cast<double>(row.flops) / seconds / 1e9;
  };
  json j = {{"case", row.name},   {"shape", row.shape},     {"dtype", row.dtype},
            {"flops", row.flops}, {"checked", row.checked}, {"failed", row.failed}};
  const bool ours_ok = row.ours && row.ours->ok();
  j["ours_median_s"] = ours_ok ? json(row.ours->median_s) : json(nullptr);
  j["ours_gflops"] = ours_ok ? gflops(row.ours->median_s) : json(nullptr);
  json baselines = json::object(), ratios = json::object(), gf = json::object();
  json rounds = json::object(), errors = json::object(), info = json::object();
  json p10 = json::object(), ceilings = json::object(), verdicts = json::object();
  auto percentile10 = [](const SideResult& s) -> json {
    if (!s.ok()) return nullptr;
    return Percentile(s.samples, 10);
  };
  if (row.ours) {
    rounds["ours"] = row.ours->round_medians;
    p10["ours"] = percentile10(*row.ours);
    if (!row.ours->error.empty()) errors["ours"] = row.ours->error;
    info["ours"] = row.ours->info;
  }
  for (const SideResult& b : row.baselines) {
    baselines[b.name] = b.ok() ? json(b.median_s) : json(nullptr);
    std::optional<double> ratio = RatioOf(row, b);
    ratios[b.name] = ratio ? json(*ratio) : json(nullptr);
    std::optional<RatioVerdict> verdict = VerdictOf(row, b);
    verdicts[b.name] = verdict ? ToJson(*verdict) : json(nullptr);
    std::optional<double> ceiling = CeilingOf(row, b);
    ceilings[b.name] = ceiling ? json(*ceiling) : json(nullptr);
    gf[b.name] = b.ok() ? gflops(b.median_s) : json(nullptr);
    rounds[b.name] = b.round_medians;
    p10[b.name] = percentile10(b);
    if (!b.error.empty()) errors[b.name] = b.error;
    json bi = b.info;
    if (b.medians_only) bi["statistic"] = "median of the per-round medians";
    info[b.name] = bi;
  }
  json skipped = json::object(), lower = json::object();
  for (const SkippedBaseline& s : row.skipped) skipped[s.name] = s.reason;
  for (const CappedBaseline& c : row.capped) {
    baselines[c.name] = nullptr;
    ratios[c.name] = nullptr;
    json bound = {{"cap_s", c.cap_s}};
    if (ours_ok) bound["ratio_at_least"] = c.cap_s / row.ours->median_s;
    lower[c.name] = bound;
  }
  j["baselines"] = baselines;
  j["ratios"] = ratios;
  j["verdicts"] = verdicts;
  j["floor_s"] = row.floor_s ? json(*row.floor_s) : json(nullptr);
  j["ceilings"] = ceilings;
  j["gflops"] = gf;
  j["skipped"] = skipped;
  j["lower_bounds"] = lower;
  j["round_medians_s"] = rounds;
  j["p10_s"] = p10;
  j["errors"] = errors;
  j["sides"] = info;
  j["details"] = row.details;
  return j;
}

json BenchHeader(const std::string& suite, const std::string& command_line,
                 const std::string& compiler, int threads) {
  target::Target host = target::HostCpu();
  std::string commit = Capture({"git", "rev-parse", "--short=12", "HEAD"});
  json h = {{"suite", suite},
            {"date", UtcNow()},
            {"cpu", host.model.empty() ? "unknown cpu" : host.model},
            {"cores", static_cast<int>(std::thread::hardware_concurrency())},
            {"commit", commit.empty() ? "unknown" : commit},
            {"compiler", compiler.empty() ? "unknown" : compiler},
            {"threads", threads},
            {"command", command_line},
            {"loadavg", LoadAverage()}};
  if (!commit.empty()) {
    // Benchmarks of uncommitted code say so: the commit alone would not reproduce them.
    h["worktree_dirty"] =
        !Capture({"git", "status", "--porcelain", "--untracked-files=no"}).empty();
  }
  return h;
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  if (!(in >> one >> five >> fifteen)) return "";
  return one + " " + five + " " + fifteen;
}

std::string UtcNow() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return date;
}

std::string FormatBenchTable(const json& header, const std::vector<BenchRow>& rows) {
  std::ostringstream out;
  out << "maxkernel bench --suite " << header.value("suite", "") << " — "
      << header.value("date", "") << ", " << header.value("cpu", "") << " ("
      << header.value("cores", 0) << " cores), " << header.value("threads", 0)
      << " threads, commit " << header.value("commit", "")
      << (header.value("worktree_dirty", false) ? " (+ uncommitted changes)" : "") << "\n";
  if (!header.value("loadavg", "").empty()) {
    out << "load average at start " << header.value("loadavg", "")
        << " (other jobs share this machine)\n";
  }
  out << "ratio = baseline time / our time (> 1: ours is faster); + faster, - slower, ~ "
         "inconclusive: whether the 95% bootstrap interval of the per-round ratios lies beyond "
         "+-2% (docs/PROFILING.md)\n";
  const bool floors = std::any_of(rows.begin(), rows.end(),
                                  [](const BenchRow& r) { return r.floor_s.has_value(); });
  if (header.contains("peaks") && header["peaks"].is_object()) {
    const json& p = header["peaks"];
    out << "floor = the case's FLOPs at the measured peak (machine probe #"
        << p.value("probe_id", int64_t{0}) << ": f32 " << Fixed("%.1f", p.value("f32_gflops", 0.0))
        << ", bf16 " << Fixed("%.1f", p.value("bf16_gflops", 0.0)) << " GFLOP/s on "
        << header.value("threads", 0)
        << " threads); baseline/floor = the most any kernel's ratio can be here\n";
  } else if (header.contains("peaks_note")) {
    out << header.value("peaks_note", "") << "\n";
  }
  out << "\n";

  // Baseline columns in first-seen order over all rows.
  std::vector<std::string> names;
  auto note = [&](const std::string& n) {
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  };
  for (const BenchRow& r : rows) {
    for (const SideResult& b : r.baselines) note(b.name);
    for (const SkippedBaseline& s : r.skipped) note(s.name);
    for (const CappedBaseline& c : r.capped) note(c.name);
  }
  std::vector<std::string> head = {"case", "shape", "dtype", "ours", "GFLOP/s"};
  for (const std::string& n : names) {
    head.push_back(n);
    head.push_back(n + "/ours");
    if (floors) head.push_back(n + "/floor");
  }
  std::vector<std::vector<std::string>> table = {head};
  for (const BenchRow& r : rows) {
    std::vector<std::string> line = {r.name, r.shape, r.dtype};
    const bool ours_ok = r.ours && r.ours->ok();
    line.push_back(r.failed ? "FAILED" : ours_ok ? FormatSeconds(r.ours->median_s) : "error");
    line.push_back(ours_ok && r.flops > 0
                       ? Fixed("%.1f", static_cast<double>(r.flops) / r.ours->median_s / 1e9)
                       : "-");
    for (const std::string& n : names) {
      std::string time = "-", ratio = "-", ceiling = "-";
      for (const SideResult& b : r.baselines) {
        if (b.name != n) continue;
        time = b.ok() ? FormatSeconds(b.median_s) : "error";
        if (auto q = RatioOf(r, b)) {
          auto v = VerdictOf(r, b);
          const char* mark = !v                                 ? ""
                             : v->verdict == Verdict::kFaster ? " +"
                             : v->verdict == Verdict::kSlower ? " -"
                                                                : " ~";
          ratio = Fixed("%.2fx", *q) + mark;
        }
        if (auto q = CeilingOf(r, b)) ceiling = Fixed("%.2fx", *q);
      }
      for (const SkippedBaseline& s : r.skipped) {
        if (s.name == n) time = "skipped";
      }
      for (const CappedBaseline& c : r.capped) {
        if (c.name != n) continue;
        time = "> " + FormatSeconds(c.cap_s);
        if (ours_ok) ratio = Fixed("> %.0fx", c.cap_s / r.ours->median_s);
      }
      line.push_back(time);
      line.push_back(ratio);
      if (floors) line.push_back(ceiling);
    }
    table.push_back(line);
  }
  std::vector<size_t> width(head.size(), 0);
  for (const auto& line : table) {
    for (size_t c = 0; c < line.size(); ++c) width[c] = std::max(width[c], line[c].size());
  }
  for (const auto& line : table) {
    for (size_t c = 0; c < line.size(); ++c) {
      out << (c ? "  " : "") << Pad(line[c], width[c], c >= 3);
    }
    out << "\n";
  }
  out << "\nchecked:\n";
  for (const BenchRow& r : rows) out << "  " << r.name << ": " << r.checked << "\n";
  bool any_note = false;
  for (const BenchRow& r : rows) {
    std::vector<std::string> notes;
    if (r.details.contains("from") && r.details["from"].is_array()) {
      std::string ids;
      for (const auto& id : r.details["from"]) {
        ids += (ids.empty() ? "" : ", ") + id.get<std::string>();
      }
      notes.push_back("the GEMM of " + ids);
    }
    if (r.ours && !r.ours->error.empty()) notes.push_back("ours: " + r.ours->error);
    for (const SideResult& b : r.baselines) {
      if (!b.error.empty()) notes.push_back(b.name + ": " + b.error);
    }
    for (const SkippedBaseline& s : r.skipped) notes.push_back(s.name + " skipped: " + s.reason);
    if (notes.empty()) continue;
    if (!any_note) out << "\nnotes:\n";
    any_note = true;
    for (const std::string& n : notes) out << "  " << r.name << ": " << n << "\n";
  }
  return out.str();
}

}  // namespace mk::bench
