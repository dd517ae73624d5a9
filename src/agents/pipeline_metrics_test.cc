#include "agents/pipeline_metrics.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/metrics_test_util.h"

namespace mk::agents {
namespace {

nlohmann::json ResultJson(const std::string& task, const std::string& status, double speedup) {
  return {{"status", status},
          {"task", {{"id", task}}},
          {"best", {{"median_s", 0.002},
                    {"roofline_fraction", 0.5},
                    {"speedup_vs_first", speedup},
                    {"speedup_vs_baseline", nullptr}}}};
}

// One optimize run's metrics, as `optimize --metrics-file` fills them.
std::string RunExposition(const std::string& task, double speedup) {
  MetricsRegistry registry;
  auto m = PipelineMetrics::Create(registry, task, "cpu");
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  if (!m.ok()) return "";
  (*m)->OnAgent("planner", "ok", 0.01);
  (*m)->OnAgent("tester", "ok", 0.25);
  (*m)->OnAgent("tester", "failed", 0.5);
  (*m)->OnAgent("build", "error", 0.1);
  (*m)->OnCandidate("correct");
  (*m)->OnCandidate("test_failed");
  (*m)->OnResult(ResultJson(task, "succeeded", speedup), 12.5);
  return registry.ExpositionText();
}

TEST(PipelineMetrics, AgentCallsCandidatesAndTheResultAreExported) {
  std::string text = RunExposition("12p", 1.5);
  for (const char* line :
       {"# TYPE maxkernel_agent_execution_duration_seconds histogram",
        "maxkernel_agent_execution_duration_seconds_count{task=\"12p\",agent=\"tester\",status=\"success\"} 1",
        "maxkernel_agent_execution_duration_seconds_count{task=\"12p\",agent=\"tester\",status=\"failure\"} 1",
        "maxkernel_agent_execution_duration_seconds_count{task=\"12p\",agent=\"build\",status=\"error\"} 1",
        "# TYPE maxkernel_auto_optimization_duration_seconds histogram",
        "maxkernel_auto_optimization_duration_seconds_sum{task=\"12p\",target=\"cpu\",status=\"success\"} 12.5",
        "maxkernel_auto_optimization_duration_seconds_count{task=\"12p\",target=\"cpu\",status=\"success\"} 1",
        "maxkernel_candidates_total{task=\"12p\",status=\"correct\"} 1",
        "maxkernel_candidates_total{task=\"12p\",status=\"test_failed\"} 1",
        "maxkernel_best_speedup{task=\"12p\",versus=\"first\"} 1.5",
        "maxkernel_best_roofline_fraction{task=\"12p\"} 0.5",
        "maxkernel_runs_total{task=\"12p\",status=\"success\"} 1"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  }
  // Every series of a per-task file names its task, and every status is one of the three.
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    EXPECT_NE(line.find("task=\"12p\""), std::string::npos) << line;
    size_t s = line.find("status=\"");
    if (s != std::string::npos && line.find("candidates_total") == std::string::npos) {
      std::string status = line.substr(s + 8, line.find('"', s + 8) - s - 8);
      EXPECT_TRUE(status == "success" || status == "failure" || status == "error") << line;
    }
  }
}

TEST(PipelineMetrics, StatusLabelsAreSuccessFailureOrError) {
  EXPECT_STREQ(OutcomeLabel("ok"), "success");
  EXPECT_STREQ(OutcomeLabel("succeeded"), "success");
  EXPECT_STREQ(OutcomeLabel("failed"), "failure");
  EXPECT_STREQ(OutcomeLabel("cancelled"), "failure");
  EXPECT_STREQ(OutcomeLabel("error"), "error");
  EXPECT_STREQ(OutcomeLabel("something new"), "error");
}

TEST(PipelineMetrics, ABaselineSpeedupWinsAndAFailedRunHasNoBest) {
  MetricsRegistry registry;
  auto m = PipelineMetrics::Create(registry, "8p", "cpu");
  ASSERT_TRUE(m.ok());
  (*m)->OnResult({{"status", "succeeded"},
                  {"task", {{"id", "8p"}}},
                  {"best", {{"median_s", 0.1}, {"roofline_fraction", 0.2},
                            {"speedup_vs_first", 1.1}, {"speedup_vs_baseline", 2.0}}}},
                 1.0);
  auto failed = PipelineMetrics::Create(registry, "9p", "cpu");
  ASSERT_TRUE(failed.ok());
  (*failed)->OnResult({{"status", "failed"}, {"task", {{"id", "9p"}}}, {"best", nullptr}}, 2.0);
  auto broken = PipelineMetrics::Create(registry, "10p", "cpu");
  ASSERT_TRUE(broken.ok());
  (*broken)->OnRunError(0.5);
  std::string text = registry.ExpositionText();
  EXPECT_NE(text.find("maxkernel_best_speedup{task=\"8p\",versus=\"baseline\"} 2"),
            std::string::npos) << text;
  EXPECT_EQ(text.find("versus=\"first\""), std::string::npos) << text;
  EXPECT_EQ(text.find("task=\"9p\",versus"), std::string::npos) << text;
  EXPECT_NE(text.find("maxkernel_runs_total{task=\"9p\",status=\"failure\"} 1"), std::string::npos);
  EXPECT_NE(text.find("maxkernel_auto_optimization_duration_seconds_count{task=\"10p\",target=\"cpu\","
                      "status=\"error\"} 1"),
            std::string::npos) << text;
  // Creating the families twice in one registry is allowed (same shapes): the server and a run
  // can share one registry.
  EXPECT_TRUE(PipelineMetrics::Create(registry, "8p", "cpu").ok());
}

// Two tasks' textfiles in one collector folder (the docs' cron example): no series twice, one
// type per name, and promtool accepts the merged scrape.
class TwoTaskTextfiles : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "mk_prom_XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    files_ = {{"12p.prom", RunExposition("12p", 1.5)}, {"41k.prom", RunExposition("41k", 2.0)}};
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::filesystem::path dir_;
  std::vector<std::pair<std::string, std::string>> files_;
};

TEST_F(TwoTaskTextfiles, HaveNoSeriesInCommonAndOneTypePerName) {
  mk::metrics_testing::MergedTextfiles merged = mk::metrics_testing::MergeTextfiles(files_);
  EXPECT_TRUE(merged.errors.empty()) << ::testing::PrintToString(merged.errors);
  // The check itself: the same file twice is all duplicates.
  mk::metrics_testing::MergedTextfiles twice = mk::metrics_testing::MergeTextfiles({files_[0], files_[0]});
  EXPECT_FALSE(twice.errors.empty());
  // ... and a name with two types is a conflict.
  mk::metrics_testing::MergedTextfiles types = mk::metrics_testing::MergeTextfiles(
      {{"a.prom", "# TYPE x gauge\nx{task=\"a\"} 1\n"}, {"b.prom", "# TYPE x counter\nx{task=\"b\"} 1\n"}});
  ASSERT_EQ(types.errors.size(), 1u);
  EXPECT_NE(types.errors[0].find("type"), std::string::npos) << types.errors[0];
}

TEST_F(TwoTaskTextfiles, PassPromtoolCheckMetricsTogether) {
  mk::metrics_testing::MergedTextfiles merged = mk::metrics_testing::MergeTextfiles(files_);
  std::string path = (dir_ / "merged.prom").string();
  std::ofstream(path) << merged.text;
  auto checked = mk::metrics_testing::RunPromtool(path);
  if (!checked) GTEST_SKIP() << "promtool is not installed (Debian package prometheus)";
  EXPECT_EQ(checked->exit_code, 0) << checked->output << "\n" << merged.text;
  EXPECT_EQ(checked->output, "") << checked->output;  // lint findings are printed, rc stays 0
}

}  // namespace
}  // namespace mk::agents
