#include "agents/tester.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>

#include "hlo/parser.h"

namespace mk::agents {
namespace {

namespace fs = std::filesystem;

hlo::Literal F32(std::vector<int64_t> dims, const std::vector<double>& values) {
  hlo::Literal lit(hlo::Shape(hlo::DType::kF32, std::move(dims)));
  for (size_t i = 0; i < values.size(); ++i) lit.SetDouble(static_cast<int64_t>(i), values[i]);
  return lit;
}

// ---- CompareOutput on hand-made literals -----------------------------------------------------

TEST(CompareOutput, WithinToleranceReportsErrors) {
  hlo::Literal want = F32({2, 2}, {1, 2, -4, 0});
  hlo::Literal got = F32({2, 2}, {1.001, 2, -4, 0.0005});
  OutputCheck c = CompareOutput(got, want, 1e-3, 1e-3);
  EXPECT_TRUE(c.passed()) << c.message;
  EXPECT_NEAR(c.max_abs_err, 1e-3, 1e-7);  // element 0 (float rounding of 1.001)
  EXPECT_NEAR(c.max_rel_err, 1e-3, 1e-7);  // element 3 has want 0: no relative error
  EXPECT_EQ(c.mismatches, 0);
  EXPECT_FALSE(c.first_mismatch.has_value());
}

TEST(CompareOutput, FirstMismatchIsAMultiIndex) {
  hlo::Literal want = F32({2, 3}, {0, 1, 2, 3, 4, 5});
  hlo::Literal got = F32({2, 3}, {0, 1, 2, 3, 4.6, 7});
  // 4.6 vs 4: 0.6 > 0.1 + 0.1 * 4; 7 vs 5: 2 > 0.6.
  OutputCheck c = CompareOutput(got, want, 0.1, 0.1);
  EXPECT_EQ(c.status, "mismatch");
  EXPECT_EQ(c.mismatches, 2);
  ASSERT_TRUE(c.first_mismatch.has_value());
  EXPECT_EQ(*c.first_mismatch, (std::vector<int64_t>{1, 1}));
  EXPECT_FLOAT_EQ(c.first_got, 4.6f);
  EXPECT_EQ(c.first_want, 4);
  EXPECT_EQ(c.max_abs_err, 2);
  EXPECT_DOUBLE_EQ(c.max_rel_err, 0.4);
  EXPECT_NE(c.message.find("[1, 1]"), std::string::npos) << c.message;
}

TEST(CompareOutput, NanMustMeetNanAndInfinityTheSameInfinity) {
  double nan = std::nan(""), inf = INFINITY;
  OutputCheck same = CompareOutput(F32({3}, {nan, inf, -inf}), F32({3}, {nan, inf, -inf}), 0, 0);
  EXPECT_TRUE(same.passed()) << same.message;
  EXPECT_EQ(same.nan_got, 1);
  EXPECT_EQ(same.nan_want, 1);

  OutputCheck nan_vs_num = CompareOutput(F32({2}, {1, nan}), F32({2}, {1, 2}), 1, 1);
  EXPECT_EQ(nan_vs_num.status, "mismatch");
  EXPECT_EQ(*nan_vs_num.first_mismatch, (std::vector<int64_t>{1}));
  EXPECT_EQ(nan_vs_num.nan_got, 1);

  OutputCheck num_vs_nan = CompareOutput(F32({1}, {0}), F32({1}, {nan}), 1, 1);
  EXPECT_EQ(num_vs_nan.status, "mismatch");

  OutputCheck inf_sign = CompareOutput(F32({1}, {-inf}), F32({1}, {inf}), 1e9, 1e9);
  EXPECT_EQ(inf_sign.status, "mismatch");
  OutputCheck big_vs_inf = CompareOutput(F32({1}, {3e38}), F32({1}, {inf}), 1e9, 1e9);
  EXPECT_EQ(big_vs_inf.status, "mismatch");
}

TEST(CompareOutput, PoisonLeftEverywhereIsUnwritten) {
  hlo::Literal want = F32({4}, {1, 2, 3, 4});
  hlo::Literal got(want.shape());
  std::memset(got.raw(), 0xFF, got.raw_size());
  OutputCheck c = CompareOutput(got, want, 1e-2, 1e-2);
  EXPECT_EQ(c.status, "unwritten");
  EXPECT_EQ(c.nan_got, 4);
  EXPECT_EQ(c.message, "was not written (NaN poison left)");
  // One element written is a wrong value, not an unwritten output.
  got.SetDouble(0, 1);
  EXPECT_EQ(CompareOutput(got, want, 1e-2, 1e-2).status, "mismatch");
}

TEST(CompareOutput, IntegersAndShapes) {
  hlo::Literal want(hlo::Shape(hlo::DType::kS32, {3}));
  hlo::Literal got(want.shape());
  for (int i = 0; i < 3; ++i) {
    want.SetInt64(i, i * 100);
    got.SetInt64(i, i * 100);
  }
  EXPECT_TRUE(CompareOutput(got, want, 0, 0).passed());
  got.SetInt64(2, 201);
  OutputCheck c = CompareOutput(got, want, 0, 0);
  EXPECT_EQ(c.status, "mismatch");
  EXPECT_EQ(*c.first_mismatch, (std::vector<int64_t>{2}));
  EXPECT_EQ(c.max_abs_err, 1);
  EXPECT_EQ(CompareOutput(F32({2}, {1, 2}), F32({1, 2}, {1, 2}), 1, 1).status, "mismatch");
}

TEST(TesterJson, ReportRoundTripsIncludingNonFiniteValues) {
  TestReport r;
  r.status = "failed";
  r.task_id = "12p";
  r.module_name = "m";
  r.implementation_hash = "abc";
  SeedResult s;
  s.seed = 5;
  s.status = "mismatch";
  OutputCheck c;
  c.index = 1;
  c.shape = hlo::Shape(hlo::DType::kBF16, {2, 3});
  c.status = "mismatch";
  c.atol = c.rtol = 0.01;
  c.max_abs_err = 0.5;
  c.first_mismatch = std::vector<int64_t>{1, 2};
  c.first_got = std::nan("");
  c.first_want = -INFINITY;
  c.mismatches = 3;
  s.outputs.push_back(c);
  r.seeds.push_back(s);
  SeedResult crashed;
  crashed.seed = 6;
  crashed.status = "crashed";
  crashed.message = "kernel crashed with signal SIGSEGV";
  r.seeds.push_back(crashed);

  std::string text = ToJson(r).dump();
  auto back = TestReportFromJson(nlohmann::json::parse(text));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(ToJson(*back).dump(), text);
  EXPECT_EQ(back->seeds[0].outputs[0].shape.ToString(false), "bf16[2,3]");
  EXPECT_TRUE(std::isnan(back->seeds[0].outputs[0].first_got));
  EXPECT_EQ(back->seeds[0].outputs[0].first_want, -INFINITY);
  EXPECT_EQ(back->seeds[1].message, "kernel crashed with signal SIGSEGV");

  EXPECT_FALSE(TestReportFromJson(nlohmann::json::parse(R"({"seeds": 3})")).ok());
  EXPECT_FALSE(TestReportFromJson(
                   nlohmann::json::parse(R"({"seeds": [{"outputs": [{"shape": {"dtype": "q9",
                                                                                 "dims": []}}]}]})"))
                   .ok());
}

TEST(TesterJson, RequestRoundTripsWithImplementation) {
  TestRequest r;
  r.task_dir = "bench/jaxbench/12p/ci";
  r.seeds = {1, 2};
  r.atol = 0.5;
  r.timeout_s = 7;
  codegen::Implementation impl;
  impl.target = "cpu";
  impl.sources = {{"module.cc", "int x;"}};
  impl.flags = {"-fopenmp"};
  impl.hash = "h";
  impl.buffers.push_back({codegen::BufferSlot::Role::kParameter, 0,
                          hlo::Shape(hlo::DType::kF32, {2, 2}), 16});
  impl.buffers.push_back({codegen::BufferSlot::Role::kOutput, 0,
                          hlo::Shape(hlo::DType::kS32, {}), 4});
  r.implementation = impl;
  std::string text = ToJson(r).dump();
  auto back = TestRequestFromJson(nlohmann::json::parse(text));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(ToJson(*back).dump(), text);
  EXPECT_FALSE(back->rtol.has_value());
  EXPECT_EQ(back->implementation->buffers[1].bytes, 4);
  EXPECT_FALSE(TestRequestFromJson(nlohmann::json::parse(R"({"num_seeds": "three"})")).ok());
  EXPECT_FALSE(TestRequestFromJson(nlohmann::json::parse(
                                       R"({"implementation": {"buffers": [{"role": "scratch",
                                           "shape": {"dtype": "f32", "dims": [1]}}]}})"))
                   .ok());
}

// ---- the tester on real generated code -------------------------------------------------------

const char* kModule = R"(HloModule axpy_pair

add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  x = f32[4,8] parameter(0)
  y = f32[4,8] parameter(1)
  two = f32[] constant(2)
  tb = f32[4,8] broadcast(two), dimensions={}
  m = f32[4,8] multiply(x, tb)
  s = f32[4,8] add(m, y)
  zero = f32[] constant(0)
  r = f32[4] reduce(s, zero), dimensions={1}, to_apply=add_f32
  ROOT t = (f32[4,8], f32[4]) tuple(s, r)
}
)";

const char* kTaskYaml = R"(format: 1
id: "axpy"
name: "axpy_pair"
scale: "custom"
dtype: "f32"
seed: 7
parameters:
  - {name: "x", shape: [4, 8], dtype: f32, init: {kind: normal, mean: 0.0, std: 1.0}}
  - {name: "y", shape: [4, 8], dtype: f32, init: {kind: uniform, low: -1.0, high: 1.0}}
outputs:
  - {shape: [4, 8], dtype: f32, atol: 0.00001, rtol: 0.00001}
  - {shape: [4], dtype: f32}
tolerance: {atol: 0.0001, rtol: 0.0001}
)";

class TesterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/mk-tester-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    fs::create_directories(dir_ + "/task");
    std::ofstream(dir_ + "/task/task.yaml") << kTaskYaml;
    std::ofstream(dir_ + "/task/module.hlo") << kModule;
    std::ofstream(dir_ + "/bare.hlo") << kModule;
    EngineOptions options;
    options.cache_dir = dir_ + "/cache";
    engine_ = new CpuEngine(options);
  }
  static void TearDownTestSuite() {
    delete engine_;
    engine_ = nullptr;
    fs::remove_all(dir_);
  }

  static TestRequest TaskRequest() {
    TestRequest r;
    r.task_dir = dir_ + "/task";
    return r;
  }

  // The generated implementation with `edit` applied to its source.
  static codegen::Implementation Edited(const std::function<std::string(std::string)>& edit) {
    auto module = hlo::ParseModule(kModule, "axpy.hlo");
    EXPECT_TRUE(module.ok());
    auto lowered = engine_->Lower(**module);
    EXPECT_TRUE(lowered.ok()) << lowered.status().ToString();
    codegen::Implementation impl = lowered->impl;
    impl.sources[0].text = edit(impl.sources[0].text);
    impl.hash = "edited";
    return impl;
  }

  // Inserts `line` at the end of mk_kernel (the last function of the generated source).
  static std::string AtKernelEnd(std::string src, const std::string& line) {
    size_t end = src.rfind('}');
    EXPECT_NE(end, std::string::npos);
    return "#include <csignal>\n" + src.substr(0, end) + line + "\n}\n";
  }

  static void ExpectPasses(const TestRequest& r) {
    auto report = RunTester(r, *engine_);
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    EXPECT_TRUE(report->passed()) << FormatReport(*report);
  }

  static std::string dir_;
  static CpuEngine* engine_;
};
std::string TesterTest::dir_;
CpuEngine* TesterTest::engine_ = nullptr;

TEST_F(TesterTest, GeneratedCodePassesOnThreeFreshSeeds) {
  auto report = RunTester(TaskRequest(), *engine_);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->passed()) << FormatReport(*report);
  ASSERT_EQ(report->seeds.size(), 3u);
  EXPECT_EQ(report->seeds[0].seed, 7u);  // the task's seed, then the next ones
  EXPECT_EQ(report->seeds[2].seed, 9u);
  ASSERT_EQ(report->seeds[0].outputs.size(), 2u);
  EXPECT_EQ(report->seeds[0].outputs[0].atol, 1e-5);  // per-output tolerance
  EXPECT_EQ(report->seeds[0].outputs[1].atol, 1e-4);  // inherited from the task
  EXPECT_EQ(report->task_id, "axpy");
  EXPECT_FALSE(report->source_path.empty());
}

TEST_F(TesterTest, BareModuleUsesDefaultGeneratorsAndTightTolerance) {
  TestRequest r;
  r.module_path = dir_ + "/bare.hlo";
  r.seeds = {11};
  auto report = RunTester(r, *engine_);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->passed()) << FormatReport(*report);
  ASSERT_EQ(report->seeds.size(), 1u);
  EXPECT_EQ(report->seeds[0].outputs[1].rtol, 1e-5);
}

TEST_F(TesterTest, WrongValueIsReportedWithOutputAndIndex) {
  TestRequest r = TaskRequest();
  // Output 0 is buffers[2] (after the two parameters); element [1,2] is linear index 10.
  r.implementation = Edited([](std::string s) {
    return AtKernelEnd(s, "  static_cast<float*>(buffers[2])[10] += 1.0f;");
  });
  auto report = RunTester(r, *engine_);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->status, "failed");
  for (const SeedResult& s : report->seeds) {
    EXPECT_EQ(s.status, "mismatch");
    ASSERT_EQ(s.outputs.size(), 2u);
    const OutputCheck& bad = s.outputs[0];
    EXPECT_EQ(bad.status, "mismatch");
    EXPECT_EQ(bad.mismatches, 1);
    ASSERT_TRUE(bad.first_mismatch.has_value());
    EXPECT_EQ(*bad.first_mismatch, (std::vector<int64_t>{1, 2}));
    EXPECT_NEAR(bad.first_got - bad.first_want, 1.0, 1e-5);
    EXPECT_NEAR(bad.max_abs_err, 1.0, 1e-5);
    EXPECT_TRUE(s.outputs[1].passed());  // the reduction was computed before the edit
  }
  std::string text = FormatReport(*report);
  EXPECT_NE(text.find("output 0"), std::string::npos) << text;
  EXPECT_NE(text.find("FAIL"), std::string::npos) << text;
  EXPECT_NE(text.find("first mismatch [1, 2]"), std::string::npos) << text;
}

TEST_F(TesterTest, SkippedWriteIsReportedAsUnwritten) {
  TestRequest r = TaskRequest();
  r.seeds = {1};
  // Drop every kernel call from mk_kernel: nothing is written, the poison stays.
  r.implementation = Edited([](std::string s) {
    std::string out;
    size_t body = s.find("extern \"C\" void mk_kernel");
    std::istringstream in(s.substr(body));
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("  kernel_", 0) != 0) out += line + "\n";
    }
    return s.substr(0, body) + out;
  });
  auto report = RunTester(r, *engine_);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->status, "failed");
  ASSERT_EQ(report->seeds[0].outputs.size(), 2u);
  EXPECT_EQ(report->seeds[0].outputs[0].status, "unwritten");
  EXPECT_EQ(report->seeds[0].outputs[1].status, "unwritten");
  EXPECT_EQ(report->seeds[0].message, "output 0 was not written (NaN poison left)");
}

TEST_F(TesterTest, CrashIsReportedAndTheNextCheckSucceeds) {
  TestRequest r = TaskRequest();
  r.seeds = {1, 2};
  r.implementation =
      Edited([](std::string s) { return AtKernelEnd(s, "  std::raise(SIGSEGV);"); });
  auto report = RunTester(r, *engine_);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->status, "failed");
  ASSERT_EQ(report->seeds.size(), 2u);
  for (const SeedResult& s : report->seeds) {
    EXPECT_EQ(s.status, "crashed");
    EXPECT_EQ(s.message, "kernel crashed with signal SIGSEGV");
    EXPECT_TRUE(s.outputs.empty());
  }
  ExpectPasses(TaskRequest());
}

TEST_F(TesterTest, HangIsReportedAsTimeoutAndTheNextCheckSucceeds) {
  TestRequest r = TaskRequest();
  r.timeout_s = 1;
  r.implementation = Edited([](std::string s) {
    return AtKernelEnd(s, "  for (volatile int spin = 1; spin;) {}");
  });
  auto report = RunTester(r, *engine_);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->status, "failed");
  ASSERT_EQ(report->seeds.size(), 3u);
  EXPECT_EQ(report->seeds[0].status, "timed-out");
  EXPECT_EQ(report->seeds[0].message, "timed out after 1 s");
  EXPECT_EQ(report->seeds[1].status, "skipped");  // no point waiting twice more
  ExpectPasses(TaskRequest());
}

TEST_F(TesterTest, CompilerErrorNamesTheErrorAndTheKeptSource) {
  TestRequest r = TaskRequest();
  r.implementation = Edited([](std::string s) { return s + "\nthis is not C++;\n"; });
  auto report = RunTester(r, *engine_);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->status, "build-failed");
  EXPECT_NE(report->message.find("error:"), std::string::npos) << report->message;
  EXPECT_NE(report->message.find(".cc"), std::string::npos) << report->message;
  EXPECT_TRUE(report->seeds.empty());
}

TEST_F(TesterTest, BadRequestsAreErrors) {
  TestRequest none;
  EXPECT_FALSE(RunTester(none, *engine_).ok());
  TestRequest missing;
  missing.task_dir = dir_ + "/no-such-task";
  EXPECT_FALSE(RunTester(missing, *engine_).ok());
  TestRequest zero = TaskRequest();
  zero.num_seeds = 0;
  EXPECT_FALSE(RunTester(zero, *engine_).ok());
  TestRequest negative = TaskRequest();
  negative.atol = -1;
  EXPECT_FALSE(RunTester(negative, *engine_).ok());
}

}  // namespace
}  // namespace mk::agents
