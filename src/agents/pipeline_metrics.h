// The optimize run's Prometheus metrics (docs/REPORTS_AND_METRICS.md): a PipelineObserver that
// times every agent call into a histogram, plus the run-level counters, histogram and gauges,
// all in one MetricsRegistry that `optimize --metrics-file` writes (and the server will serve at
// /metrics).
//
// Every series carries the task's id as label `task`, so the textfiles of several tasks can lie
// in one textfile-collector folder without two files exporting the same series. `status` on the
// two duration histograms (and on runs_total) is one of "success", "failure", "error".
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "agents/pipeline.h"
#include "support/metrics.h"

namespace mk::agents {

// The `status` label of the duration histograms from an agent's verdict ("ok", "failed",
// "error": PipelineObserver) or a run's result status ("succeeded", "failed", "cancelled"):
// "success" for ok/succeeded, "failure" for failed/cancelled (the run or the agent worked but
// did not deliver), and "error" for everything else (the agent or the run could not work).
const char* OutcomeLabel(const std::string& status);

class PipelineMetrics final : public PipelineObserver {
 public:
  // Registers the families for one run of `task` (its id) on `target` (e.g. "cpu"). An error
  // only for a registry that already holds a clashing name.
  static Result<std::unique_ptr<PipelineMetrics>> Create(MetricsRegistry& registry,
                                                         std::string task, std::string target);

  // One agent call: maxkernel_agent_execution_duration_seconds{task,agent,status}.
  void OnAgent(const std::string& agent, const std::string& status, double seconds) override;
  // A finished candidate: maxkernel_candidates_total{task,status} (the candidate's outcome).
  void OnCandidate(const std::string& status);
  // The run's end: its duration in maxkernel_auto_optimization_duration_seconds, runs_total,
  // and the best candidate's gauges (speedup over the baseline when recorded, else over the
  // first candidate).
  void OnResult(const nlohmann::json& result, double duration_s);
  // A run that ended in an error value instead of a result: its duration with status "error".
  void OnRunError(double duration_s);

 private:
  PipelineMetrics(std::string task, std::string target)
      : task_(std::move(task)), target_(std::move(target)) {}
  void OnRunEnd(const char* status, double duration_s);

  std::string task_, target_;
  HistogramFamily* agent_seconds_ = nullptr;
  HistogramFamily* run_seconds_ = nullptr;
  CounterFamily* candidates_ = nullptr;
  CounterFamily* runs_ = nullptr;
  GaugeFamily* best_speedup_ = nullptr;
  GaugeFamily* best_seconds_ = nullptr;
  GaugeFamily* roofline_ = nullptr;
};

}  // namespace mk::agents
