#include "agents/pipeline_metrics.h"

#include <gtest/gtest.h>

namespace mk::agents {
namespace {

TEST(PipelineMetrics, AgentCallsCandidatesAndTheResultAreExported) {
  MetricsRegistry registry;
  auto m = PipelineMetrics::Create(registry);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  (*m)->OnAgent("tester", "ok", 0.25);
  (*m)->OnAgent("tester", "failed", 0.5);
  (*m)->OnCandidate("correct");
  (*m)->OnCandidate("correct");
  (*m)->OnCandidate("build_failed");
  nlohmann::json result = {{"status", "succeeded"},
                           {"task", {{"id", "12p"}}},
                           {"best", {{"median_s", 0.002},
                                     {"roofline_fraction", 0.5},
                                     {"speedup_vs_first", 1.5},
                                     {"speedup_vs_baseline", nullptr}}}};
  (*m)->OnResult(result, 12.5);
  std::string text = registry.ExpositionText();
  for (const char* line :
       {"maxkernel_agent_execution_duration_seconds_count{agent=\"tester\",status=\"ok\"} 1",
        "maxkernel_agent_execution_duration_seconds_count{agent=\"tester\",status=\"failed\"} 1",
        "maxkernel_candidates_total{status=\"correct\"} 2",
        "maxkernel_candidates_total{status=\"build_failed\"} 1",
        "maxkernel_auto_optimization_duration_seconds{task=\"12p\"} 12.5",
        "maxkernel_best_speedup{task=\"12p\",versus=\"first\"} 1.5",
        "maxkernel_best_roofline_fraction{task=\"12p\"} 0.5",
        "maxkernel_runs_total{status=\"succeeded\"} 1"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  }
}

TEST(PipelineMetrics, ABaselineSpeedupWinsAndAFailedRunHasNoBest) {
  MetricsRegistry registry;
  auto m = PipelineMetrics::Create(registry);
  ASSERT_TRUE(m.ok());
  (*m)->OnResult({{"status", "succeeded"},
                  {"task", {{"id", "8p"}}},
                  {"best", {{"median_s", 0.1}, {"roofline_fraction", 0.2},
                            {"speedup_vs_first", 1.1}, {"speedup_vs_baseline", 2.0}}}},
                 1.0);
  (*m)->OnResult({{"status", "failed"}, {"task", {{"id", "9p"}}}, {"best", nullptr}}, 2.0);
  std::string text = registry.ExpositionText();
  EXPECT_NE(text.find("maxkernel_best_speedup{task=\"8p\",versus=\"baseline\"} 2"),
            std::string::npos) << text;
  EXPECT_EQ(text.find("versus=\"first\""), std::string::npos) << text;
  EXPECT_EQ(text.find("task=\"9p\",versus"), std::string::npos) << text;
  EXPECT_NE(text.find("maxkernel_runs_total{status=\"failed\"} 1"), std::string::npos);
  // Creating the families twice in one registry is allowed (same shapes): the server and a run
  // can share one registry.
  EXPECT_TRUE(PipelineMetrics::Create(registry).ok());
}

}  // namespace
}  // namespace mk::agents
