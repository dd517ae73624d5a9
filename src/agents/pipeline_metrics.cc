#include "agents/pipeline_metrics.h"

namespace mk::agents {

const char* OutcomeLabel(const std::string& status) {
  if (status == "ok" || status == "succeeded") return "success";
  if (status == "failed" || status == "cancelled") return "failure";
  return "error";
}

Result<std::unique_ptr<PipelineMetrics>> PipelineMetrics::Create(MetricsRegistry& registry,
                                                                 std::string task,
                                                                 std::string target) {
  auto m = std::unique_ptr<PipelineMetrics>(new PipelineMetrics(std::move(task), std::move(target)));
  MK_ASSIGN_OR_RETURN(m->agent_seconds_,
                      registry.AddHistogram("maxkernel_agent_execution_duration_seconds",
                                            "Wall time of one agent call in a pipeline",
                                            {"task", "agent", "status"}));
  MK_ASSIGN_OR_RETURN(m->run_seconds_,
                      registry.AddHistogram("maxkernel_auto_optimization_duration_seconds",
                                            "Wall time of one auto optimization run",
                                            {"task", "target", "status"}));
  MK_ASSIGN_OR_RETURN(m->candidates_,
                      registry.AddCounter("maxkernel_candidates_total",
                                          "Candidates evaluated, by outcome", {"task", "status"}));
  MK_ASSIGN_OR_RETURN(m->runs_, registry.AddCounter("maxkernel_runs_total",
                                                    "Finished optimization runs, by status",
                                                    {"task", "status"}));
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
  return m;
}

void PipelineMetrics::OnAgent(const std::string& agent, const std::string& status,
                              double seconds) {
  agent_seconds_->WithLabels({task_, agent, OutcomeLabel(status)}).Observe(seconds);
}

void PipelineMetrics::OnCandidate(const std::string& status) {
  candidates_->WithLabels({task_, status}).Inc();
}

void PipelineMetrics::OnRunEnd(const char* status, double duration_s) {
  run_seconds_->WithLabels({task_, target_, status}).Observe(duration_s);
  runs_->WithLabels({task_, status}).Inc();
}

void PipelineMetrics::OnRunError(double duration_s) { OnRunEnd("error", duration_s); }

void PipelineMetrics::OnResult(const nlohmann::json& result, double duration_s) {
  OnRunEnd(OutcomeLabel(result.value("status", std::string())), duration_s);
  auto best_it = result.find("best");
  if (best_it == result.end() || !best_it->is_object()) return;
  const nlohmann::json& best = *best_it;
  best_seconds_->WithLabels({task_}).Set(best.value("median_s", 0.0));
  auto number = [&](const char* key) {
    auto it = best.find(key);
    return it != best.end() && it->is_number() ? &*it : nullptr;
  };
  // Null when the kernel beat the measured peaks (auto_driver.cc): no figure then.
  if (const nlohmann::json* v = number("roofline_fraction")) {
    roofline_->WithLabels({task_}).Set(v->get<double>());
  }
  if (const nlohmann::json* v = number("speedup_vs_baseline")) {
    best_speedup_->WithLabels({task_, "baseline"}).Set(v->get<double>());
  } else if (const nlohmann::json* v = number("speedup_vs_first")) {
    best_speedup_->WithLabels({task_, "first"}).Set(v->get<double>());
  }
}

}  // namespace mk::agents
