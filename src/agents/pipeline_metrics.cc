#include "agents/pipeline_metrics.h"

namespace mk::agents {

Result<std::unique_ptr<PipelineMetrics>> PipelineMetrics::Create(MetricsRegistry& registry) {
  auto m = std::unique_ptr<PipelineMetrics>(new PipelineMetrics());
  MK_ASSIGN_OR_RETURN(m->agent_seconds_,
                      registry.AddHistogram("maxkernel_agent_execution_duration_seconds",
                                            "Wall time of one agent call in a pipeline",
                                            {"agent", "status"}));
  MK_ASSIGN_OR_RETURN(m->candidates_,
                      registry.AddCounter("maxkernel_candidates_total",
                                          "Candidates evaluated, by outcome", {"status"}));
  MK_ASSIGN_OR_RETURN(m->duration_,
                      registry.AddGauge("maxkernel_auto_optimization_duration_seconds",
                                        "Wall time of the last auto optimization run", {"task"}));
  MK_ASSIGN_OR_RETURN(m->best_speedup_,
                      registry.AddGauge("maxkernel_best_speedup",
                                        "Speedup of the best correct kernel over the task's XLA "
                                        "baseline (over the first candidate when no baseline is "
                                        "recorded)",
                                        {"task", "versus"}));
  MK_ASSIGN_OR_RETURN(m->best_seconds_,
                      registry.AddGauge("maxkernel_best_kernel_seconds",
                                        "Median time of the best correct kernel", {"task"}));
  MK_ASSIGN_OR_RETURN(m->roofline_,
                      registry.AddGauge("maxkernel_best_roofline_fraction",
                                        "Roofline bound / best median (1 = at the roofline)",
                                        {"task"}));
  MK_ASSIGN_OR_RETURN(m->runs_, registry.AddCounter("maxkernel_runs_total",
                                                    "Finished optimization runs, by status",
                                                    {"status"}));
  return m;
}

void PipelineMetrics::OnAgent(const std::string& agent, const std::string& status,
                              double seconds) {
  agent_seconds_->WithLabels({agent, status}).Observe(seconds);
}

void PipelineMetrics::OnCandidate(const std::string& status) {
  candidates_->WithLabels({status}).Inc();
}

void PipelineMetrics::OnResult(const nlohmann::json& result, double duration_s) {
  std::string task = result.value("task", nlohmann::json::object()).value("id", std::string());
  duration_->WithLabels({task}).Set(duration_s);
  runs_->WithLabels({result.value("status", std::string("unknown"))}).Inc();
  const nlohmann::json& best = result["best"];
  if (!best.is_object()) return;
  best_seconds_->WithLabels({task}).Set(best.value("median_s", 0.0));
  // Null when the kernel beat the measured peaks (auto_driver.cc): no figure then.
  if (best["roofline_fraction"].is_number()) {
    roofline_->WithLabels({task}).Set(best["roofline_fraction"].get<double>());
  }
  if (best["speedup_vs_baseline"].is_number()) {
    best_speedup_->WithLabels({task, "baseline"}).Set(best["speedup_vs_baseline"].get<double>());
  } else if (best["speedup_vs_first"].is_number()) {
    best_speedup_->WithLabels({task, "first"}).Set(best["speedup_vs_first"].get<double>());
  }
}

}  // namespace mk::agents
