#include "support/metrics.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace mk {
namespace {

namespace fs = std::filesystem;

TEST(MetricsTest, CounterExposition) {
  MetricsRegistry r;
  Result<CounterFamily*> c = r.AddCounter("maxkernel_candidates_total", "Candidates tried.",
                                          {"status"});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  (*c)->WithLabels({"correct"}).Inc();
  (*c)->WithLabels({"correct"}).Add(2);
  (*c)->WithLabels({"build_failed"}).Inc();
  (*c)->WithLabels({"build_failed"}).Add(-5);  // dropped: counters never go down
  EXPECT_EQ(r.ExpositionText(),
            "# HELP maxkernel_candidates_total Candidates tried.\n"
            "# TYPE maxkernel_candidates_total counter\n"
            "maxkernel_candidates_total{status=\"build_failed\"} 1\n"
            "maxkernel_candidates_total{status=\"correct\"} 3\n");
}

TEST(MetricsTest, GaugeExpositionAndSpecialValues) {
  MetricsRegistry r;
  Result<GaugeFamily*> g = r.AddGauge("maxkernel_best_speedup", "Best speedup.", {"task"});
  ASSERT_TRUE(g.ok());
  (*g)->WithLabels({"a"}).Set(1.25);
  (*g)->WithLabels({"b"}).Set(INFINITY);
  (*g)->WithLabels({"c"}).Set(NAN);
  (*g)->WithLabels({"d"}).Set(1e-6);
  (*g)->WithLabels({"e"}).Set(3);
  (*g)->WithLabels({"e"}).Dec();
  EXPECT_EQ(r.ExpositionText(),
            "# HELP maxkernel_best_speedup Best speedup.\n"
            "# TYPE maxkernel_best_speedup gauge\n"
            "maxkernel_best_speedup{task=\"a\"} 1.25\n"
            "maxkernel_best_speedup{task=\"b\"} +Inf\n"
            "maxkernel_best_speedup{task=\"c\"} NaN\n"
            "maxkernel_best_speedup{task=\"d\"} 1e-06\n"
            "maxkernel_best_speedup{task=\"e\"} 2\n");
}

TEST(MetricsTest, LabelValuesAndHelpAreEscaped) {
  MetricsRegistry r;
  Result<GaugeFamily*> g = r.AddGauge("x", "a \\ b\nc \"q\"", {"l"});
  ASSERT_TRUE(g.ok());
  (*g)->WithLabels({"back\\slash \"quoted\"\nnewline"}).Set(1);
  EXPECT_EQ(r.ExpositionText(),
            "# HELP x a \\\\ b\\nc \"q\"\n"
            "# TYPE x gauge\n"
            "x{l=\"back\\\\slash \\\"quoted\\\"\\nnewline\"} 1\n");
}

TEST(MetricsTest, HistogramBucketsAreCumulative) {
  MetricsRegistry r;
  Result<HistogramFamily*> h =
      r.AddHistogram("agent_seconds", "Agent time.", {"agent", "status"}, {0.1, 1, 10});
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  Histogram& tester = (*h)->WithLabels({"tester", "ok"});
  for (double v : {0.05, 0.1, 0.5, 2.0, 20.0, 30.0}) tester.Observe(v);
  EXPECT_EQ(r.ExpositionText(),
            "# HELP agent_seconds Agent time.\n"
            "# TYPE agent_seconds histogram\n"
            "agent_seconds_bucket{agent=\"tester\",status=\"ok\",le=\"0.1\"} 2\n"
            "agent_seconds_bucket{agent=\"tester\",status=\"ok\",le=\"1\"} 3\n"
            "agent_seconds_bucket{agent=\"tester\",status=\"ok\",le=\"10\"} 4\n"
            "agent_seconds_bucket{agent=\"tester\",status=\"ok\",le=\"+Inf\"} 6\n"
            "agent_seconds_sum{agent=\"tester\",status=\"ok\"} 52.65\n"
            "agent_seconds_count{agent=\"tester\",status=\"ok\"} 6\n");
}

TEST(MetricsTest, LabelLessFamiliesExportZeroAndDefaultBucketsSpanDurations) {
  MetricsRegistry r;
  ASSERT_TRUE(r.AddHistogram("maxkernel_auto_optimization_duration_seconds", "Run time.").ok());
  ASSERT_TRUE(r.AddCounter("b_total", "B.").ok());
  ASSERT_TRUE(r.AddGauge("c", "C.", {"l"}).ok());  // no child yet: left out
  std::string text = r.ExpositionText();
  EXPECT_NE(text.find("maxkernel_auto_optimization_duration_seconds_bucket{le=\"0.005\"} 0\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("maxkernel_auto_optimization_duration_seconds_bucket{le=\"600\"} 0\n"),
            std::string::npos);
  EXPECT_NE(text.find("maxkernel_auto_optimization_duration_seconds_count 0\n"),
            std::string::npos);
  EXPECT_NE(text.find("b_total 0\n"), std::string::npos);
  EXPECT_EQ(text.find("# TYPE c "), std::string::npos);
  // Families come out sorted by name whatever the registration order.
  EXPECT_LT(text.find("# HELP b_total"), text.find("# HELP maxkernel_auto"));
  EXPECT_EQ(text, r.ExpositionText());
}

TEST(MetricsTest, BadNamesAreErrors) {
  MetricsRegistry r;
  for (const char* bad : {"", "1abc", "a-b", "a b", "é"}) {
    EXPECT_FALSE(r.AddCounter(bad, "h").ok()) << bad;
  }
  EXPECT_TRUE(r.AddCounter("ns:sub_name_total", "h").ok());
  for (const char* bad : {"", "a:b", "__reserved", "9x", "le-x"}) {
    EXPECT_FALSE(r.AddGauge("g", "h", {bad}).ok()) << bad;
  }
  EXPECT_TRUE(r.AddGauge("g", "h", {"_ok", "le"}).ok());  // "le" is fine outside histograms
  EXPECT_FALSE(r.AddHistogram("h1", "h", {"le"}).ok());
  EXPECT_FALSE(r.AddGauge("g2", "h", {"a", "a"}).ok());
  EXPECT_FALSE(r.AddHistogram("h2", "h", {}, {1, 1}).ok());
  EXPECT_FALSE(r.AddHistogram("h3", "h", {}, {2, 1}).ok());
  EXPECT_FALSE(r.AddHistogram("h4", "h", {}, {1, NAN}).ok());
  EXPECT_TRUE(r.AddHistogram("h5", "h", {}, {1, INFINITY}).ok());  // +Inf is implicit anyway
  // Nothing invalid was registered.
  std::string text = r.ExpositionText();
  EXPECT_EQ(text.find("h1"), std::string::npos);
  EXPECT_EQ(text.find("g2"), std::string::npos);
}

TEST(MetricsTest, ReRegistrationReturnsTheFamilyOrConflicts) {
  MetricsRegistry r;
  Result<CounterFamily*> a = r.AddCounter("n_total", "help", {"x"});
  Result<CounterFamily*> b = r.AddCounter("n_total", "help", {"x"});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
  EXPECT_FALSE(r.AddGauge("n_total", "help", {"x"}).ok());
  EXPECT_FALSE(r.AddCounter("n_total", "other help", {"x"}).ok());
  EXPECT_FALSE(r.AddCounter("n_total", "help", {"y"}).ok());
  ASSERT_TRUE(r.AddHistogram("lat", "h").ok());
  EXPECT_FALSE(r.AddHistogram("lat", "h", {}, {1, 2}).ok());
  // The histogram's own series names are taken.
  EXPECT_FALSE(r.AddGauge("lat_count", "h").ok());
  EXPECT_FALSE(r.AddCounter("lat_bucket", "h").ok());
  ASSERT_TRUE(r.AddGauge("q_sum", "h").ok());
  EXPECT_FALSE(r.AddHistogram("q", "h").ok());
}

TEST(MetricsTest, WrongLabelCountIsAnErrorOrADetachedChild) {
  MetricsRegistry r;
  Result<CounterFamily*> c = r.AddCounter("c_total", "h", {"a", "b"});
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE((*c)->TryWithLabels({"only-one"}).ok());
  (*c)->WithLabels({"only-one"}).Inc();  // must not crash, must not be exported
  EXPECT_EQ(r.ExpositionText(), "");
  ASSERT_TRUE((*c)->TryWithLabels({"1", "2"}).ok());
  EXPECT_EQ((*c)->TryWithLabels({"1", "2"}).value(), &(*c)->WithLabels({"1", "2"}));
}

TEST(MetricsTest, ConcurrentUpdatesSumExactly) {
  MetricsRegistry r;
  Result<CounterFamily*> c = r.AddCounter("hits_total", "h", {"worker"});
  Result<GaugeFamily*> g = r.AddGauge("level", "h");
  Result<HistogramFamily*> h = r.AddHistogram("lat_seconds", "h", {}, {0.5});
  ASSERT_TRUE(c.ok() && g.ok() && h.ok());
  constexpr int kThreads = 8;
  constexpr int kPerThread = 10000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        // Half the threads share a child, so child creation races too.
        (*c)->WithLabels({t % 2 ? "shared" : "own" + std::to_string(t)}).Inc();
        (*g)->Get().Add(1);
        (*h)->Get().Observe(i % 2 ? 1.0 : 0.25);
      }
    });
  }
  // A reader during the updates sees consistent histograms (+Inf bucket == count).
  std::atomic<bool> inconsistent{false};
  std::thread reader([&] {
    for (int i = 0; i < 200; ++i) {
      Histogram::Snapshot s = (*h)->Get().Read();
      if (s.cumulative[0] > s.count) inconsistent = true;
      (void)r.ExpositionText();
    }
  });
  for (std::thread& t : threads) t.join();
  reader.join();
  EXPECT_FALSE(inconsistent);
  EXPECT_EQ((*c)->WithLabels({"shared"}).Value(), kThreads / 2 * kPerThread);
  EXPECT_EQ((*c)->WithLabels({"own0"}).Value(), kPerThread);
  EXPECT_EQ((*g)->Get().Value(), kThreads * kPerThread);
  Histogram::Snapshot s = (*h)->Get().Read();
  EXPECT_EQ(s.count, uint64_t{kThreads * kPerThread});
  EXPECT_EQ(s.cumulative[0], uint64_t{kThreads * kPerThread / 2});
  EXPECT_DOUBLE_EQ(s.sum, kThreads * kPerThread / 2 * 1.25);
}

class TextfileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("mk_metrics_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  static std::string Read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::vector<std::string> Entries() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) out.push_back(e.path().filename());
    return out;
  }
  fs::path dir_;
};

TEST_F(TextfileTest, WritesTheExpositionAndLeavesNoTempFile) {
  MetricsRegistry r;
  Result<GaugeFamily*> g = r.AddGauge("maxkernel_best_speedup", "h", {"task"});
  ASSERT_TRUE(g.ok());
  (*g)->WithLabels({"12p"}).Set(1.5);
  fs::path path = dir_ / "maxkernel.prom";
  ASSERT_TRUE(r.WriteTextfile(path).ok());
  EXPECT_EQ(Read(path), r.ExpositionText());
  // A second write replaces the file in place.
  (*g)->WithLabels({"12p"}).Set(2);
  ASSERT_TRUE(r.WriteTextfile(path).ok());
  EXPECT_EQ(Read(path), r.ExpositionText());
  EXPECT_EQ(Entries(), std::vector<std::string>{"maxkernel.prom"});
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::others_read, fs::perms::others_read);
}

TEST_F(TextfileTest, AMissingDirectoryIsAnErrorValue) {
  MetricsRegistry r;
  Status s = r.WriteTextfile((dir_ / "no" / "such" / "x.prom").string());
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::kIo);
  EXPECT_TRUE(Entries().empty());
}

// A reader polling the file while it is rewritten sees only complete versions: each is one
// registry state, which this test recognizes by its last line.
TEST_F(TextfileTest, ReadersNeverSeeAPartialFile) {
  MetricsRegistry r;
  Result<CounterFamily*> c = r.AddCounter("writes_total", "h", {"pad"});
  ASSERT_TRUE(c.ok());
  fs::path path = dir_ / "m.prom";
  ASSERT_TRUE(r.WriteTextfile(path).ok());
  std::atomic<bool> done{false};
  std::atomic<int> partial{0}, reads{0};
  std::thread reader([&] {
    while (!done) {
      std::string text = Read(path);
      if (text.empty()) continue;  // a successful read of a renamed-over file is never empty
      ++reads;
      // Every version ends with its "zz" child's line and has one line per child + 2 headers.
      size_t lines = std::count(text.begin(), text.end(), '\n');
      if (text.back() != '\n' || text.find("writes_total{pad=\"zz\"}") == std::string::npos ||
          lines < 3) {
        ++partial;
      }
    }
  });
  (*c)->WithLabels({"zz"}).Inc();
  for (int i = 0; i < 60; ++i) {
    // Grow the file each time, so a torn read would be visible as a missing tail.
    // (Built by appending: GCC 12 warns falsely about "literal" + std::string here.)
    std::string label = std::to_string(1000 + i);
    label.append(200, 'x');
    (*c)->WithLabels({label}).Inc();
    ASSERT_TRUE(r.WriteTextfile(path).ok());
  }
  done = true;
  reader.join();
  EXPECT_EQ(partial.load(), 0) << "of " << reads.load() << " reads";
  EXPECT_EQ(Read(path), r.ExpositionText());
  EXPECT_EQ(Entries(), std::vector<std::string>{"m.prom"});
}

}  // namespace
}  // namespace mk
