// Tests of the bench machinery that need no timing: the GEMM modules, argument parsing, the
// interleaving order, the rows' JSON and table, the sampled GEMM check and the interpreter's
// cap. (Speeds are never asserted; the CLI tests run the real thing on tiny sizes.)
#include "benchmarks/bench.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "benchmarks/bench_gemm.h"
#include "benchmarks/bench_jaxbench.h"
#include "hlo/parser.h"
#include "hlo/verifier.h"

namespace mk::bench {

using agents::FormatSeconds;
using agents::MedianOf;
using agents::RunInterleaved;
using agents::ValidateProtocol;

namespace {

using nlohmann::json;

TEST(BenchGemmTest, ModulesParseAndVerifyForEveryDtype) {
  for (const auto& [dtype, out] : std::vector<std::pair<std::string, std::string>>{
           {"f32", "f32"}, {"bf16", "f32"}, {"bf16", "bf16"}}) {
    GemmCase c{8, 16, 32, dtype, out, {}};
    auto module = hlo::ParseModule(GemmModuleText(c), "gemm.hlo");
    ASSERT_TRUE(module.ok()) << module.status().ToString();
    ASSERT_TRUE(hlo::VerifyModule(**module).ok());
    const hlo::Instruction* root = (*module)->entry()->root();
    EXPECT_EQ(hlo::DTypeName(root->shape.dtype()), out);
    EXPECT_EQ(root->shape.dims(), (std::vector<int64_t>{8, 16}));
    EXPECT_EQ(hlo::DTypeName((*module)->entry()->parameter(0)->shape.dtype()), dtype);
  }
  EXPECT_EQ(GemmCaseName({1024, 1024, 1024, "f32", "f32", {}}), "gemm_f32_1024");
  EXPECT_EQ(GemmCaseName({8, 16, 32, "bf16", "f32", {}}), "gemm_bf16_8x16x32");
  EXPECT_EQ(GemmCaseName({64, 64, 64, "bf16", "bf16", {}}), "gemm_bf16_bf16out_64");
  EXPECT_EQ(GemmDtypeLabel({8, 8, 8, "bf16", "f32", {}}), "bf16->f32");
  EXPECT_EQ(GemmFlops({8, 16, 32, "f32", "f32", {}}), 2 * 8 * 16 * 32);
}

TEST(BenchGemmTest, ShapesAreMxNxK) {
  auto shapes = ParseGemmShapes("512x2048x2048, 256x8192x1024");
  ASSERT_TRUE(shapes.ok()) << shapes.status().ToString();
  ASSERT_EQ(shapes->size(), 2u);
  EXPECT_EQ((*shapes)[0].m, 512);
  EXPECT_EQ((*shapes)[0].n, 2048);
  EXPECT_EQ((*shapes)[0].k, 2048);
  EXPECT_EQ((*shapes)[1].n, 8192);
  EXPECT_EQ((*shapes)[1].k, 1024);
  for (const char* bad : {"", "64", "64x64", "64x64x", "x64x64", "64x64x64x64", "0x8x8", "8x-1x8",
                          "8x8x100000", "8x,8x8", "8 x8x8y"}) {
    auto r = ParseGemmShapes(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("--shapes"), std::string::npos) << r.status().message();
  }
}

// The suite's GEMMs as the bench sees them: free and contracting dims multiplied out, the bf16
// result only where the dot's one user converts it, batched and integer dots left out, repeats
// merged.
TEST(BenchGemmTest, GemmCasesOfAModuleAreItsPlainDots) {
  const char* text = R"(HloModule m

ENTRY main {
  x = bf16[1,4,8]{2,1,0} parameter(0)
  w = bf16[8,16]{1,0} parameter(1)
  w2 = bf16[8,16]{1,0} parameter(2)
  g = f32[1,4,16]{2,1,0} dot(x, w), lhs_contracting_dims={2}, rhs_contracting_dims={0}
  u = f32[1,4,16]{2,1,0} dot(x, w2), lhs_contracting_dims={2}, rhs_contracting_dims={0}
  h = f32[1,4,16]{2,1,0} multiply(g, u)
  a = f32[6,5]{1,0} parameter(3)
  b = f32[3,5]{1,0} parameter(4)
  t = f32[6,3]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  r = bf16[6,3]{1,0} convert(t)
  q = f32[2,6,5]{2,1,0} parameter(5)
  k = f32[2,3,5]{2,1,0} parameter(6)
  bt = f32[2,6,3]{2,1,0} dot(q, k), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={2}
  i = s32[4,4]{1,0} parameter(7)
  id = s32[4,4]{1,0} dot(i, i), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT out = (f32[1,4,16]{2,1,0}, bf16[6,3]{1,0}, f32[2,6,3]{2,1,0}, s32[4,4]{1,0}) tuple(h, r, bt, id)
}
)";
  auto module = hlo::ParseModule(text, "m.hlo");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  std::vector<GemmCase> cases = GemmCasesOfModule(**module);
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(GemmCaseName(cases[0]), "gemm_bf16_4x16x8");
  EXPECT_EQ(GemmDtypeLabel(cases[0]), "bf16->f32");
  EXPECT_EQ(GemmCaseName(cases[1]), "gemm_f32_6x3x5");
  EXPECT_EQ(cases[1].out_dtype, "f32");  // an f32 operand pair: the convert is an epilogue

  GemmBenchOptions o;
  o.sizes = {8};
  o.dtypes = {"f32"};
  o.shapes = {{6, 3, 5, "", "", {}}};
  GemmCase a = cases[0], b = cases[0];
  a.from = {"9p"};
  b.from = {"9p", "13p"};
  o.suite_cases = {a, b, cases[1]};
  std::vector<GemmCase> all = GemmCases(o);
  ASSERT_EQ(all.size(), 3u);  // 8^3 f32, 6x3x5 f32 (given twice), the bf16 case (twice)
  EXPECT_EQ(GemmCaseName(all[0]), "gemm_f32_8");
  EXPECT_EQ(GemmCaseName(all[1]), "gemm_f32_6x3x5");
  EXPECT_EQ(GemmCaseName(all[2]), "gemm_bf16_4x16x8");
  EXPECT_EQ(all[2].from, (std::vector<std::string>{"9p", "13p"}));
}

TEST(BenchGemmTest, SizesAndDtypesAreValidated) {
  auto sizes = ParseGemmSizes("256, 512,1024");
  ASSERT_TRUE(sizes.ok());
  EXPECT_EQ(*sizes, (std::vector<int64_t>{256, 512, 1024}));
  for (const char* bad : {"0", "-4", "abc", "", "12x", "100000", "256,,512"}) {
    auto r = ParseGemmSizes(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("--sizes"), std::string::npos) << r.status().message();
  }
  EXPECT_TRUE(ParseGemmDtypes("f32,bf16").ok());
  EXPECT_FALSE(ParseGemmDtypes("f16").ok());
  EXPECT_FALSE(ParseGemmDtypes("f32,f32").ok());

  GemmBenchOptions o;
  o.sizes = {64, 128};
  o.dtypes = {"f32", "bf16"};
  o.bf16_result = "bf16";
  std::vector<GemmCase> cases = GemmCases(o);
  ASSERT_EQ(cases.size(), 4u);
  EXPECT_EQ(cases[0].dtype, "f32");
  EXPECT_EQ(cases[0].out_dtype, "f32");
  EXPECT_EQ(cases[3].dtype, "bf16");
  EXPECT_EQ(cases[3].out_dtype, "bf16");
  EXPECT_EQ(cases[3].m, 128);
}

TEST(BenchJaxbenchTest, CompareAndOnlyListsAreValidated) {
  bool xla = false, interp = false;
  ASSERT_TRUE(ParseCompareList("xla,interp", xla, interp).ok());
  EXPECT_TRUE(xla && interp);
  ASSERT_TRUE(ParseCompareList("interp", xla, interp).ok());
  EXPECT_TRUE(!xla && interp);
  EXPECT_FALSE(ParseCompareList("xla,onednn", xla, interp).ok());
  EXPECT_FALSE(ParseCompareList("", xla, interp).ok());
  auto ids = ParseOnlyList("12p, 8p");
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<std::string>{"12p", "8p"}));
  EXPECT_FALSE(ParseOnlyList("12p,12p").ok());
  EXPECT_FALSE(ParseOnlyList("../x").ok());
  EXPECT_FALSE(ParseOnlyList("").ok());
}

// The task cache outlives checkouts: a cached task whose workload file is gone (or belongs to
// another suite folder) must be exported again, not benchmarked against a missing reference.
TEST(BenchJaxbenchTest, CachedTaskIsCurrentOnlyForItsOwnSuitesWorkload) {
  namespace fs = std::filesystem;
  char tmpl[] = "/tmp/mk-bench-cache-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const fs::path root = tmpl;
  const fs::path suite = root / "suite", other = root / "other";
  fs::create_directories(suite / "41k");
  fs::create_directories(other / "41k");
  std::ofstream(suite / "41k" / "workload.py") << "# workload\n";
  std::ofstream(other / "41k" / "workload.py") << "# workload\n";
  std::ifstream in(std::string(MK_SOURCE_DIR) + "/bench/jaxbench/41k/ci/task.yaml");
  ASSERT_TRUE(in.good());
  std::string yaml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string rel = "\"../workload.py\"";
  ASSERT_NE(yaml.find(rel), std::string::npos);
  auto cached = [&](const fs::path& workload) {
    const fs::path dir = root / "cache" / "41k" / "bench";
    fs::create_directories(dir);
    std::string text = yaml;
    text.replace(text.find(rel), rel.size(), "\"" + workload.string() + "\"");
    std::ofstream(dir / "task.yaml") << text;
    return dir;
  };
  EXPECT_TRUE(CachedTaskIsCurrent(cached(suite / "41k" / "workload.py"), suite.string()));
  EXPECT_FALSE(CachedTaskIsCurrent(cached(other / "41k" / "workload.py"), suite.string()));
  EXPECT_FALSE(CachedTaskIsCurrent(cached(root / "gone" / "41k" / "workload.py"), suite.string()));
  EXPECT_FALSE(CachedTaskIsCurrent(root / "cache" / "50k" / "bench", suite.string()));
  fs::remove_all(root);
}

TEST(BenchGemmTest, LibraryRoundsRunWithoutTheOpenBlasOverrides) {
  BenchProtocol p;
  p.min_seconds = 0.25;
  LibraryProcessSide side("/opt/mk/maxkernel-baselines", "openblas", {64, 32, 16, "f32", "f32", {}}, 2,
                          p);
  std::vector<std::string> argv = side.Argv();
  ASSERT_GE(argv.size(), 6u);
  EXPECT_EQ(argv[0], "env");
  EXPECT_EQ(std::vector<std::string>(argv.begin() + 1, argv.begin() + 5),
            (std::vector<std::string>{"-u", "OPENBLAS_CORETYPE", "-u", "OPENBLAS_L2_SIZE"}));
  EXPECT_EQ(argv[5], "/opt/mk/maxkernel-baselines");
  auto value = [&](const std::string& flag) {
    for (size_t i = 0; i + 1 < argv.size(); ++i) {
      if (argv[i] == flag) return argv[i + 1];
    }
    return std::string("<missing>");
  };
  EXPECT_EQ(value("--lib"), "openblas");
  EXPECT_EQ(value("--m"), "64");
  EXPECT_EQ(value("--n"), "32");
  EXPECT_EQ(value("--k"), "16");
  EXPECT_EQ(value("--threads"), "2");
  EXPECT_EQ(value("--min-time"), "0.25");
}

// A side that records the order it was called in and returns fixed times.
class FakeSide final : public BenchSide {
 public:
  FakeSide(std::string name, std::vector<double> times, std::vector<std::string>* log,
           int fail_at_round = -1)
      : name_(std::move(name)), times_(std::move(times)), log_(log), fail_at_(fail_at_round) {}
  std::string name() const override { return name_; }
  Result<RoundTimes> Round(int round) override {
    log_->push_back(name_ + std::to_string(round));
    if (round == fail_at_) return Internal(name_ + " broke");
    RoundTimes t;
    t.times_s = times_;
    return t;
  }

 private:
  std::string name_;
  std::vector<double> times_;
  std::vector<std::string>* log_;
  int fail_at_;
};

TEST(BenchInterleaveTest, SidesAlternateEveryRoundAndAFailedSideSitsOut) {
  std::vector<std::string> log;
  FakeSide ours("ours", {1.0, 3.0, 2.0}, &log);
  FakeSide lib("lib", {4.0}, &log);
  FakeSide flaky("flaky", {1.0}, &log, /*fail_at_round=*/1);
  std::vector<std::string> progress;
  std::vector<SideResult> r = RunInterleaved({&ours, &lib, &flaky}, 3,
                                             [&](const std::string& l) { progress.push_back(l); });
  EXPECT_EQ(log, (std::vector<std::string>{"ours0", "lib0", "flaky0", "ours1", "lib1", "flaky1",
                                           "ours2", "lib2"}));
  EXPECT_EQ(progress.size(), 3u);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_DOUBLE_EQ(r[0].median_s, 2.0);
  EXPECT_EQ(r[0].samples.size(), 9u);
  EXPECT_EQ(r[0].round_medians, (std::vector<double>{2.0, 2.0, 2.0}));
  EXPECT_DOUBLE_EQ(r[1].median_s, 4.0);
  EXPECT_FALSE(r[2].ok());
  EXPECT_NE(r[2].error.find("flaky broke"), std::string::npos);
}

BenchRow SampleRow() {
  BenchRow row;
  row.name = "gemm_f32_64";
  row.shape = "64x64x64";
  row.dtype = "f32";
  row.flops = 2 * 64 * 64 * 64;
  row.checked = "tester";
  SideResult ours;
  ours.name = "ours";
  ours.samples = {1e-3};
  ours.round_medians = {1e-3};
  ours.median_s = 1e-3;
  row.ours = ours;
  SideResult lib = ours;
  lib.name = "onednn";
  lib.median_s = 2e-3;
  row.baselines.push_back(lib);
  SideResult broken;
  broken.name = "xla";
  broken.error = "bridge failed";
  row.baselines.push_back(broken);
  row.skipped.push_back({"openblas", "no bf16 GEMM"});
  row.capped.push_back({"interp", 10.0});
  return row;
}

TEST(BenchRowTest, JsonHasMediansRatiosAndWhatWasNotMeasured) {
  json j = ToJson(SampleRow());
  EXPECT_EQ(j["case"], "gemm_f32_64");
  EXPECT_EQ(j["shape"], "64x64x64");
  EXPECT_DOUBLE_EQ(j["ours_median_s"].get<double>(), 1e-3);
  EXPECT_DOUBLE_EQ(j["baselines"]["onednn"].get<double>(), 2e-3);
  EXPECT_DOUBLE_EQ(j["ratios"]["onednn"].get<double>(), 2.0);  // baseline / ours
  EXPECT_TRUE(j["baselines"]["xla"].is_null());
  EXPECT_TRUE(j["ratios"]["xla"].is_null());
  EXPECT_EQ(j["errors"]["xla"], "bridge failed");
  EXPECT_EQ(j["skipped"]["openblas"], "no bf16 GEMM");
  EXPECT_DOUBLE_EQ(j["lower_bounds"]["interp"]["ratio_at_least"].get<double>(), 10.0 / 1e-3);
  EXPECT_NEAR(j["ours_gflops"].get<double>(), 2.0 * 64 * 64 * 64 / 1e-3 / 1e9, 1e-9);
  EXPECT_EQ(j["checked"], "tester");
}

TEST(BenchRowTest, TableShowsTimesRatiosAndNotes) {
  json header = {{"suite", "gemm"},   {"date", "2026-12-03T00:00:00Z"},
                 {"cpu", "Test CPU"}, {"cores", 2},
                 {"threads", 2},      {"commit", "abc"}};
  BenchRow row = SampleRow();
  row.details["from"] = {"19k", "20k"};  // a --suite-shapes case names its workloads
  std::string table = FormatBenchTable(header, {row});
  for (const char* want : {"gemm_f32_64", "64x64x64", "1.000 ms", "2.000 ms", "2.00x", "skipped",
                           "> 10.000 s", "onednn/ours", "Test CPU", "commit abc",
                           "xla: bridge failed", "openblas skipped: no bf16 GEMM",
                           "gemm_f32_64: the GEMM of 19k, 20k"}) {
    EXPECT_NE(table.find(want), std::string::npos) << want << "\n" << table;
  }
}

// The floor is the row's FLOPs at the peak that bounds them; baseline/floor caps every ratio.
TEST(BenchRowTest, FloorsBoundTheRatiosAtTheMeasuredPeak) {
  BenchPeaks peaks;
  peaks.f32_flops = 100e9;
  peaks.bf16_flops = 400e9;
  peaks.probe_id = 7;
  BenchRow f32 = SampleRow();  // 2·64³ FLOPs, onednn 2 ms
  BenchRow bf16 = SampleRow();
  bf16.dtype = "bf16->f32";
  BenchRow no_flops = SampleRow();
  no_flops.flops = 0;
  std::vector<BenchRow> rows = {f32, bf16, no_flops};
  SetFloors(peaks, rows);
  const double flops = 2.0 * 64 * 64 * 64;
  ASSERT_TRUE(rows[0].floor_s.has_value());
  EXPECT_DOUBLE_EQ(*rows[0].floor_s, flops / 100e9);
  ASSERT_TRUE(rows[1].floor_s.has_value());
  EXPECT_DOUBLE_EQ(*rows[1].floor_s, flops / 400e9);
  EXPECT_FALSE(rows[2].floor_s.has_value());
  // A machine whose bf16 rate is below its f32 one still bounds bf16 rows by the larger rate.
  std::vector<BenchRow> slow_bf16 = {bf16};
  peaks.bf16_flops = 50e9;
  SetFloors(peaks, slow_bf16);
  EXPECT_DOUBLE_EQ(*slow_bf16[0].floor_s, flops / 100e9);

  json j = ToJson(rows[0]);
  EXPECT_DOUBLE_EQ(j["floor_s"].get<double>(), flops / 100e9);
  EXPECT_DOUBLE_EQ(j["ceilings"]["onednn"].get<double>(), 2e-3 / (flops / 100e9));
  EXPECT_TRUE(j["ceilings"]["xla"].is_null());  // it failed: nothing to bound
  EXPECT_TRUE(ToJson(rows[2])["floor_s"].is_null());

  json header = {{"suite", "gemm"}, {"cpu", "Test CPU"}, {"threads", 2}, {"commit", "abc"},
                 {"peaks", {{"probe_id", 7}, {"f32_gflops", 100.0}, {"bf16_gflops", 400.0}}}};
  std::string table = FormatBenchTable(header, rows);
  char ceiling[32];
  std::snprintf(ceiling, sizeof ceiling, "%.2fx", 2e-3 / (flops / 100e9));
  for (const char* want : {"onednn/floor", "machine probe #7", "f32 100.0, bf16 400.0 GFLOP/s",
                           static_cast<const char*>(ceiling)}) {
    EXPECT_NE(table.find(want), std::string::npos) << want << "\n" << table;
  }
  // Without a probe: no floor column, and the header says why.
  header.erase("peaks");
  header["peaks_note"] = "no floors: no full machine probe is stored";
  table = FormatBenchTable(header, {SampleRow()});
  EXPECT_EQ(table.find("/floor"), std::string::npos) << table;
  EXPECT_NE(table.find("no floors"), std::string::npos) << table;
}

struct GemmFixture {
  GemmCase c{5, 7, 9, "f32", "f32", {}};
  std::vector<hlo::Literal> inputs;
  hlo::Literal out;
  GemmFixture() {
    hlo::Literal a(hlo::Shape(hlo::DType::kF32, {c.m, c.k}));
    hlo::Literal b(hlo::Shape(hlo::DType::kF32, {c.k, c.n}));
    for (int64_t i = 0; i < c.m * c.k; ++i) a.SetDouble(i, std::sin(0.7 * static_cast<double>(i)));
    for (int64_t i = 0; i < c.k * c.n; ++i) b.SetDouble(i, std::cos(0.3 * static_cast<double>(i)));
    out = hlo::Literal(hlo::Shape(hlo::DType::kF32, {c.m, c.n}));
    for (int64_t i = 0; i < c.m; ++i) {
      for (int64_t j = 0; j < c.n; ++j) {
        float acc = 0;
        for (int64_t l = 0; l < c.k; ++l) {
          acc += static_cast<float>(a.GetDouble(i * c.k + l)) *
                 static_cast<float>(b.GetDouble(l * c.n + j));
        }
        out.SetDouble(i * c.n + j, acc);
      }
    }
    inputs.push_back(std::move(a));
    inputs.push_back(std::move(b));
  }
};

TEST(BenchGemmTest, SampledCheckAcceptsAnF32ProductAndCatchesWrongOrMissingEntries) {
  GemmFixture f;
  auto ok = CheckGemmSampled(f.c, f.inputs, f.out);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_NE(ok->find("sampled"), std::string::npos);

  hlo::Literal off = f.out;
  off.SetDouble(0, off.GetDouble(0) + 0.01);  // C[0,0] is always sampled
  auto wrong = CheckGemmSampled(f.c, f.inputs, off);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("C[0,0]"), std::string::npos) << wrong.status().message();

  hlo::Literal unwritten = f.out;
  unwritten.SetDouble(f.c.m * f.c.n - 2, std::numeric_limits<double>::quiet_NaN());
  auto nan = CheckGemmSampled(f.c, f.inputs, unwritten);
  ASSERT_FALSE(nan.ok());
  EXPECT_NE(nan.status().message().find("NaN"), std::string::npos);
}

TEST(BenchJaxbenchTest, InterpreterTimingRunsInAChildAndHonoursTheCap) {
  auto module = hlo::ParseModule(GemmModuleText({16, 16, 16, "f32", "f32", {}}), "gemm.hlo");
  ASSERT_TRUE(module.ok());
  std::vector<hlo::Literal> inputs;
  inputs.emplace_back(hlo::Shape(hlo::DType::kF32, {16, 16}));
  inputs.emplace_back(hlo::Shape(hlo::DType::kF32, {16, 16}));
  InterpreterTiming done = TimeInterpreter(**module, inputs, 2, 120);
  EXPECT_TRUE(done.error.empty()) << done.error;
  EXPECT_FALSE(done.capped);
  EXPECT_EQ(done.times_s.size(), 2u);
  // A cap that has passed before the child can report anything: a lower bound, no times.
  InterpreterTiming capped = TimeInterpreter(**module, inputs, 1, 1e-9);
  EXPECT_TRUE(capped.capped);
  EXPECT_TRUE(capped.times_s.empty());
}

TEST(BenchProtocolTest, RejectsProtocolsThatMeasureNothing) {
  BenchProtocol p;
  EXPECT_TRUE(ValidateProtocol(p).ok());
  p.rounds = 0;
  EXPECT_FALSE(ValidateProtocol(p).ok());
  p = BenchProtocol{};
  p.min_iterations = 0;
  EXPECT_FALSE(ValidateProtocol(p).ok());
  p = BenchProtocol{};
  p.min_seconds = -1;
  EXPECT_FALSE(ValidateProtocol(p).ok());
  EXPECT_DOUBLE_EQ(MedianOf({3, 1, 2, 10}), 2.5);
  EXPECT_EQ(FormatSeconds(0.0015), "1.500 ms");
}

}  // namespace
}  // namespace mk::bench
