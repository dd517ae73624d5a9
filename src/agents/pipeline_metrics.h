// The optimize run's Prometheus metrics (docs/REPORTS_AND_METRICS.md): a PipelineObserver that
// times every agent call into a histogram, plus the run-level counters and gauges, all in one
// MetricsRegistry that `optimize --metrics-file` writes (and the server will serve at /metrics).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "agents/pipeline.h"
#include "support/metrics.h"

namespace mk::agents {

class PipelineMetrics final : public PipelineObserver {
 public:
  // Registers the families; an error only for a registry that already holds a clashing name.
  static Result<std::unique_ptr<PipelineMetrics>> Create(MetricsRegistry& registry);

  void OnAgent(const std::string& agent, const std::string& status, double seconds) override;
  // A finished candidate: maxkernel_candidates_total{status}.
  void OnCandidate(const std::string& status);
  // The run's end: duration, best speedup (over the baseline when recorded, else over the first
  // candidate), and the run's outcome.
  void OnResult(const nlohmann::json& result, double duration_s);

 private:
  HistogramFamily* agent_seconds_ = nullptr;
  CounterFamily* candidates_ = nullptr;
  GaugeFamily* duration_ = nullptr;
  GaugeFamily* best_speedup_ = nullptr;
  GaugeFamily* best_seconds_ = nullptr;
  GaugeFamily* roofline_ = nullptr;
  CounterFamily* runs_ = nullptr;
};

}  // namespace mk::agents
