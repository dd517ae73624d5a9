// `maxkernel bench` (docs/BENCHMARKS.md): our generated kernels against the hand-tuned libraries
// (oneDNN, OpenBLAS) and XLA:CPU, measured the way DESIGN.md §5 demands: every kernel checked
// against a reference before it is timed, all sides timed interleaved in rounds (ours, baseline
// 1, baseline 2, ours, ...) in one run, results reported as ratios baseline/ours (> 1: ours is
// faster), with the environment recorded. Speed is measured here, never asserted in tests.
//
// This file holds what both suites share: the rows and their table/JSON forms, and the
// interleaving loop over "sides" (ours in the sandbox, a library in its own process, XLA through
// the Python bridge). The suites are bench_gemm.h and bench_jaxbench.h.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "agents/interleaved_timing.h"
#include "agents/timing_verdict.h"
#include "codegen/emitter.h"
#include "hlo/literal.h"
#include "runtime/compiler.h"
#include "runtime/sandbox.h"
#include "runtime/shared_region.h"
#include "support/status.h"

namespace mk::bench {

using agents::RatioVerdict;
using agents::SideResult;
using agents::ToJson;


// A baseline that was not measured at all, and why ("OpenBLAS has no bf16 GEMM").
struct SkippedBaseline {
  std::string name;
  std::string reason;
};

// A baseline known only as a lower bound: it did not finish within `cap_s` (the interpreter).
struct CappedBaseline {
  std::string name;
  double cap_s = 0;
};

// One line of the report.
struct BenchRow {
  std::string name;   // "gemm_f32_1024", "8p llama3_70b_dense_matmul"
  std::string shape;  // "1024x1024x1024" (MxNxK) or the task's parameter shapes
  std::string dtype;  // "f32", "bf16->f32", ...
  int64_t flops = 0;
  std::string checked;  // how correctness was established, or why the row has no timing
  bool failed = false;  // the check (or building ours) failed: no timing
  std::optional<SideResult> ours;
  std::vector<SideResult> baselines;
  std::vector<SkippedBaseline> skipped;
  std::vector<CappedBaseline> capped;
  nlohmann::json details = nlohmann::json::object();
  // The row's FLOPs at the machine's measured peak (SetFloors): no kernel on this machine runs
  // faster, so baseline time / floor_s is the most any ratio against that baseline can be.
  // Absent without a stored machine probe, or without a FLOP count.
  std::optional<double> floor_s;
};

// The peak rates the floors come from: a stored full machine probe (`doctor --probe`), scaled
// to the threads the bench runs on.
struct BenchPeaks {
  double f32_flops = 0;   // FLOP/s, the FMA register loop
  double bf16_flops = 0;  // FLOP/s of the bf16 dot products (the f32 rate where there are none)
  int64_t probe_id = 0;
  double threads_share = 1;  // bench threads / probed cores, already applied to the rates
};

// Each row with FLOPs gets its floor: the FLOPs at f32_flops, or for bf16 operands (a dtype
// starting "bf16") at the larger of the two rates (the bound must hold for whatever mix of bf16
// products and f32 epilogue the row runs).
void SetFloors(const BenchPeaks& peaks, std::vector<BenchRow>& rows);

// The most `baseline`'s ratio can be on this machine: its median / the row's floor.
std::optional<double> CeilingOf(const BenchRow& row, const SideResult& baseline);

// baseline median / our median, when both were measured.
std::optional<double> RatioOf(const BenchRow& row, const SideResult& baseline);
// The verdict on ours against `baseline` from their paired round medians (baseline / ours per
// round: "faster" means ours is faster); nullopt where either side failed.
std::optional<RatioVerdict> VerdictOf(const BenchRow& row, const SideResult& baseline);

// {"case", "shape", "dtype", "flops", "checked", "ours_median_s", "ours_gflops",
//  "baselines": {name: median_s | null}, "ratios": {name: baseline/ours | null},
//  "floor_s": s | null, "ceilings": {name: baseline/floor | null},
//  "gflops": {name: ...}, "skipped": {name: reason}, "lower_bounds": {name: {cap_s,
//  ratio_at_least}}, "rounds": {name: [median per round]}, "details": {...}}
nlohmann::json ToJson(const BenchRow& row);

// Date (the start: call it before measuring), CPU model, core count, commit, compiler, ...
// (DESIGN.md §5: every measurement records its environment). `compiler` is the
// CompilerDriver's identity.
nlohmann::json BenchHeader(const std::string& suite, const std::string& command_line,
                           const std::string& compiler, int threads);

// "2026-12-03T08:50:36Z".
std::string UtcNow();
// The 1, 5 and 15 minute load averages ("5.86 6.37 6.64"; "" where /proc has none): how busy
// the (shared) machine was, recorded beside the numbers it disturbs.
std::string LoadAverage();

// The readable table: one line per row, times, GFLOP/s and ratios ("1.23x" means ours is
// 1.23 times as fast as that baseline), then how each row was checked.
std::string FormatBenchTable(const nlohmann::json& header, const std::vector<BenchRow>& rows);

}  // namespace mk::bench
