// End-to-end tests of `maxkernel bench` and of maxkernel-baselines (when it was built: it needs
// oneDNN and OpenBLAS). Tiny sizes only; they check the shape of the output, never the speed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "cli/cli_test_util.h"
#include "store/sqlite_store.h"
#include "target/machine_probe.h"
#include "target/target.h"

namespace mk::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::Ran;
using testing::RunCommand;
using testing::RunMaxkernel;

#ifdef MK_BASELINES_BINARY
constexpr bool kHaveBaselines = true;
constexpr const char* kBaselines = MK_BASELINES_BINARY;
#else
constexpr bool kHaveBaselines = false;
constexpr const char* kBaselines = "";
#endif

TEST(BaselinesTest, Gemm64PrintsSaneJsonForEachLibrary) {
  if (!kHaveBaselines) GTEST_SKIP() << "maxkernel-baselines was not built (no oneDNN/OpenBLAS)";
  for (const char* lib : {"onednn", "openblas"}) {
    Ran r = RunCommand({kBaselines, "gemm", "--lib", lib, "--m", "64", "--n", "64", "--k", "64",
                        "--min-iterations", "3", "--min-time", "0.001"});
    ASSERT_EQ(r.exit_code, 0) << lib << ": " << r.err;
    json j = json::parse(r.out, nullptr, false);
    ASSERT_TRUE(j.is_object()) << r.out;
    EXPECT_EQ(j["lib"], lib);
    EXPECT_FALSE(j["version"].get<std::string>().empty());
    EXPECT_FALSE(j["isa"].get<std::string>().empty());
    ASSERT_TRUE(j["times_s"].is_array());
    EXPECT_GE(j["times_s"].size(), 3u);
    for (const json& t : j["times_s"]) EXPECT_GT(t.get<double>(), 0);
    EXPECT_TRUE(j["check"]["passed"].get<bool>()) << j["check"].dump();
    EXPECT_EQ(j["check"]["nan_entries"], 0);
    EXPECT_GT(j["check"]["samples"].get<int>(), 0);
    // Whatever this machine sets, the library ran without the OpenBLAS overrides.
    EXPECT_TRUE(j["env"]["OPENBLAS_CORETYPE"].is_null());
    EXPECT_TRUE(j["env"]["OPENBLAS_L2_SIZE"].is_null());
  }
  // A bf16 matmul runs and checks where oneDNN has one for this CPU (AVX-512 and up); elsewhere
  // it is a skip (exit 3, said on stdout), and `info` does not offer bf16 either.
  Ran bf16 = RunCommand({kBaselines, "gemm", "--lib", "onednn", "--m", "32", "--n", "48", "--k",
                         "64", "--dtype", "bf16", "--min-iterations", "1", "--min-time", "0"});
  Ran info = RunCommand({kBaselines, "info"});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  const json dtypes = json::parse(info.out)["libs"]["onednn"]["dtypes"];
  const bool offers_bf16 = std::find(dtypes.begin(), dtypes.end(), json("bf16")) != dtypes.end();
  if (offers_bf16) {
    ASSERT_EQ(bf16.exit_code, 0) << bf16.err;
    EXPECT_TRUE(json::parse(bf16.out)["check"]["passed"].get<bool>());
  } else {
    ASSERT_EQ(bf16.exit_code, 3) << bf16.err;
    EXPECT_NE(json::parse(bf16.out)["skipped"].get<std::string>().find("bf16"), std::string::npos);
  }
}

TEST(BaselinesTest, BadInputExitsTwo) {
  if (!kHaveBaselines) GTEST_SKIP() << "maxkernel-baselines was not built (no oneDNN/OpenBLAS)";
  EXPECT_EQ(RunCommand({kBaselines, "gemm", "--lib", "mkl", "--m", "1", "--n", "1", "--k", "1"})
                .exit_code,
            2);
  Ran zero =
      RunCommand({kBaselines, "gemm", "--lib", "onednn", "--m", "0", "--n", "1", "--k", "1"});
  EXPECT_EQ(zero.exit_code, 2);
  EXPECT_NE(zero.err.find("at least 1"), std::string::npos) << zero.err;
}

TEST(BenchCommandTest, GemmSuiteGivesWellFormedRows) {
  Ran r = RunMaxkernel({"bench", "--suite", "gemm", "--sizes", "64", "--rounds", "1", "--min-time",
                        "0.01", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json doc = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(doc.is_object()) << r.out;
  const json& h = doc["header"];
  for (const char* key : {"date", "cpu", "cores", "commit", "compiler", "command", "threads"}) {
    EXPECT_TRUE(h.contains(key)) << key;
  }
  EXPECT_EQ(h["suite"], "gemm");
  ASSERT_TRUE(doc["rows"].is_array());
  ASSERT_EQ(doc["rows"].size(), 2u);  // f32 and bf16
  for (const json& row : doc["rows"]) {
    EXPECT_EQ(row["shape"], "64x64x64");
    EXPECT_FALSE(row["failed"].get<bool>());
    EXPECT_NE(row["checked"].get<std::string>().find("tester"), std::string::npos);
    ASSERT_TRUE(row["ours_median_s"].is_number()) << row.dump();
    EXPECT_GT(row["ours_median_s"].get<double>(), 0);
    EXPECT_GT(row["ours_gflops"].get<double>(), 0);
    ASSERT_TRUE(row["baselines"].is_object());
    ASSERT_TRUE(row["ratios"].is_object());
    if (!kHaveBaselines) continue;
    // A library without a kernel for the case on this CPU (oneDNN's bf16 matmul below
    // AVX-512) is a skip with its reason, never a failure.
    if (row["skipped"].contains("onednn")) {
      EXPECT_FALSE(row["skipped"]["onednn"].get<std::string>().empty());
      continue;
    }
    ASSERT_TRUE(row["baselines"]["onednn"].is_number()) << row.dump();
    EXPECT_GT(row["baselines"]["onednn"].get<double>(), 0);
    EXPECT_GT(row["ratios"]["onednn"].get<double>(), 0);
    EXPECT_NEAR(row["ratios"]["onednn"].get<double>(),
                row["baselines"]["onednn"].get<double>() / row["ours_median_s"].get<double>(),
                1e-9);
    // Each timed baseline has its verdict (one round here: too few for more than
    // "inconclusive").
    ASSERT_TRUE(row["verdicts"]["onednn"].is_object()) << row.dump();
    EXPECT_EQ(row["verdicts"]["onednn"]["verdict"], "inconclusive");
  }
  EXPECT_EQ(doc["rows"][0]["dtype"], "f32");
  EXPECT_EQ(doc["rows"][1]["dtype"], "bf16->f32");
  if (kHaveBaselines) {
    EXPECT_GT(doc["rows"][0]["ratios"]["openblas"].get<double>(), 0);
    // Debian's OpenBLAS has no bf16 GEMM: said, not hidden.
    const json& bf16 = doc["rows"][1];
    EXPECT_TRUE(bf16["ratios"].contains("openblas") || bf16["skipped"].contains("openblas"));
  }
}

// --threads is what our kernel runs on too, not only the libraries: the planner plans for it.
TEST(BenchCommandTest, OurScheduleUsesTheGivenThreads) {
  const int cpus = static_cast<int>(std::thread::hardware_concurrency());
  for (int threads : {1, cpus}) {
    if (threads < 1) continue;
    Ran r = RunMaxkernel({"bench", "--suite", "gemm", "--sizes", "128", "--dtype", "f32", "--libs",
                          "onednn", "--rounds", "1", "--min-time", "0.01", "--threads",
                          std::to_string(threads), "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    json doc = json::parse(r.out, nullptr, false);
    ASSERT_TRUE(doc.is_object()) << r.out;
    EXPECT_EQ(doc["header"]["threads"], threads);
    const json& kernels = doc["rows"][0]["details"]["schedule"]["kernels"];
    ASSERT_EQ(kernels.size(), 1u) << kernels.dump();
    EXPECT_EQ(kernels[0]["threads"], threads) << kernels.dump();
  }
  Ran over = RunMaxkernel({"bench", "--suite", "gemm", "--sizes", "128", "--threads",
                           std::to_string(cpus + 1)});
  EXPECT_EQ(over.exit_code, 2);
  EXPECT_NE(over.err.find("this machine has"), std::string::npos) << over.err;
}

// --shapes times MxNxK cases; --suite-shapes the plain dots of task directories (here one
// made by `import`), named after the workload they come from.
TEST(BenchCommandTest, ShapesAndSuiteShapes) {
  const fs::path dir = fs::path(::testing::TempDir()) / "mk_bench_suite_shapes";
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    std::ofstream f(dir / "mlp.hlo");
    f << "HloModule mlp\n\nENTRY main {\n"
         "  x = f32[1,24,40]{2,1,0} parameter(0)\n"
         "  w = f32[40,56]{1,0} parameter(1)\n"
         "  d = f32[1,24,56]{2,1,0} dot(x, w), lhs_contracting_dims={2}, rhs_contracting_dims={0}\n"
         "  ROOT r = f32[1,24,56]{2,1,0} tanh(d)\n}\n";
    std::ofstream g(dir / "ew.hlo");
    g << "HloModule ew\n\nENTRY main {\n  x = f32[8]{0} parameter(0)\n"
         "  ROOT r = f32[8]{0} tanh(x)\n}\n";
  }
  ASSERT_EQ(RunMaxkernel({"import", (dir / "mlp.hlo").string(), "-o", (dir / "t/mlp/bench").string()})
                .exit_code,
            0);
  ASSERT_EQ(RunMaxkernel({"import", (dir / "ew.hlo").string(), "-o", (dir / "t/ew/bench").string()})
                .exit_code,
            0);
  Ran r = RunMaxkernel({"bench", "--suite", "gemm", "--shapes", "40x24x8", "--suite-shapes", "mlp",
                        "--tasks", (dir / "t").string(), "--dtype", "f32", "--libs", "onednn",
                        "--rounds", "1", "--min-time", "0.01", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json doc = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(doc.is_object()) << r.out;
  ASSERT_EQ(doc["rows"].size(), 2u) << r.out;  // no squares without --sizes
  EXPECT_EQ(doc["rows"][0]["shape"], "40x24x8");
  EXPECT_EQ(doc["rows"][1]["shape"], "24x56x40");
  EXPECT_EQ(doc["rows"][1]["details"]["from"], json::array({"mlp"}));
  EXPECT_FALSE(doc["rows"][1]["failed"].get<bool>());
  EXPECT_NE(doc["header"]["command"].get<std::string>().find("--suite-shapes mlp"),
            std::string::npos);

  Ran none = RunMaxkernel({"bench", "--suite", "gemm", "--suite-shapes", "ew", "--tasks",
                           (dir / "t").string()});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("ew has no f32 or bf16 dot"), std::string::npos) << none.err;
  Ran missing = RunMaxkernel({"bench", "--suite", "gemm", "--suite-shapes", "nope", "--tasks",
                              (dir / "t").string()});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("has no task.yaml"), std::string::npos) << missing.err;
  Ran bad = RunMaxkernel({"bench", "--suite", "gemm", "--shapes", "8x8"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("is not MxNxK"), std::string::npos) << bad.err;
  Ran wrong = RunMaxkernel({"bench", "--suite", "jaxbench", "--shapes", "8x8x8"});
  EXPECT_EQ(wrong.exit_code, 2);
  fs::remove_all(dir);
}

// The floors come from the newest full machine probe in the store given by --db (here one
// written by hand, so the expected numbers are known); with no probe there the rows say so.
TEST(BenchCommandTest, FloorsComeFromTheStoredMachineProbe) {
  const fs::path dir = fs::path(::testing::TempDir()) / "mk_bench_floors";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string db_path = (dir / "probes.db").string();
  const std::vector<std::string> args = {"bench", "--suite", "gemm", "--sizes", "64", "--dtype",
                                         "f32", "--libs", "onednn", "--rounds", "1",
                                         "--min-time", "0.01", "--json", "--db", db_path};
  Ran none = RunMaxkernel(args);
  ASSERT_EQ(none.exit_code, 0) << none.err;
  json doc = json::parse(none.out, nullptr, false);
  ASSERT_TRUE(doc.is_object()) << none.out;
  EXPECT_TRUE(doc["rows"][0]["floor_s"].is_null());
  EXPECT_NE(doc["header"].value("peaks_note", "").find("doctor --probe"), std::string::npos);
  {
    auto db = store::SqliteStore::Open(db_path);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    const target::Target host = target::HostCpu();
    store::MachineProbeRecord probe;
    probe.cpu_model = host.model.empty() ? "unknown cpu" : host.model;
    probe.cores = host.cores;
    probe.peak_flops_f32 = 50e9 * host.cores;
    probe.peak_flops_bf16 = 100e9 * host.cores;
    probe.bandwidth_bytes_per_s = 10e9;
    // The facts that keep a stored probe current (agents/profiler.h: ProbeStaleness).
    target::MachineProbeResult details;
    details.cpu_model = probe.cpu_model;
    details.cores = static_cast<int>(probe.cores);
    details.peak_flops_f32 = probe.peak_flops_f32;
    details.peak_flops_bf16 = probe.peak_flops_bf16;
    details.bandwidth_bytes_per_s = probe.bandwidth_bytes_per_s;
    details.isa_level = host.isa_level;
    details.boot_id = target::CurrentBootId();
    details.busy_cores_before = details.busy_cores_after = 0.0;
    probe.details_json = target::ToJson(details).dump();
    ASSERT_TRUE((*db)->AddMachineProbe(probe).ok());
  }
  Ran r = RunMaxkernel(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  doc = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(doc.is_object()) << r.out;
  // --threads 2 (the default) of the probed cores: 50 GFLOP/s per thread.
  const double threads = doc["header"]["threads"].get<double>();
  EXPECT_NEAR(doc["header"]["peaks"]["f32_gflops"].get<double>(), 50.0 * threads, 1e-9);
  const json& row = doc["rows"][0];
  ASSERT_TRUE(row["floor_s"].is_number()) << row.dump();
  EXPECT_NEAR(row["floor_s"].get<double>(), 2.0 * 64 * 64 * 64 / (50e9 * threads), 1e-15);
  if (kHaveBaselines) {
    EXPECT_NEAR(row["ceilings"]["onednn"].get<double>(),
                row["baselines"]["onednn"].get<double>() / row["floor_s"].get<double>(), 1e-9);
  }
  fs::remove_all(dir);
}

// `bench --suite search`: a damaged table is exit 2 naming the file; an empty folder says so;
// options of the other suites are refused. Nothing is measured.
TEST(BenchCommandTest, SearchSuiteRefusesDamagedTablesWithTheFileName) {
  const fs::path dir = fs::temp_directory_path() / ("mk-search-tables-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  Ran empty = RunMaxkernel({"bench", "--suite", "search", "--tables", dir.string()});
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_NE(empty.err.find("no complete search table in " + dir.string()), std::string::npos) << empty.err;
  EXPECT_NE(empty.err.find("--build-table --only NAME"), std::string::npos) << empty.err;
  std::ofstream(dir / "broken.json") << "{\"schema\": \"maxkernel.search_table/1\", \"name\": ";
  Ran broken = RunMaxkernel({"bench", "--suite", "search", "--tables", dir.string()});
  EXPECT_EQ(broken.exit_code, 2);
  EXPECT_NE(broken.err.find((dir / "broken.json").string()), std::string::npos) << broken.err;
  Ran mixed = RunMaxkernel({"bench", "--suite", "search", "--sizes", "64"});
  EXPECT_EQ(mixed.exit_code, 2);
  Ran unknown = RunMaxkernel({"bench", "--suite", "search", "--build-table", "--only", "nope"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("'nope' is not a search benchmark kernel"), std::string::npos) << unknown.err;
  fs::remove_all(dir);
}

TEST(BenchCommandTest, BadInputExitsTwoWithAClearMessage) {
  Ran suite = RunMaxkernel({"bench", "--suite", "nope"});
  EXPECT_EQ(suite.exit_code, 2);
  EXPECT_NE(suite.err.find("'nope' is not a suite"), std::string::npos) << suite.err;

  Ran zero = RunMaxkernel({"bench", "--suite", "gemm", "--sizes", "0"});
  EXPECT_EQ(zero.exit_code, 2);
  EXPECT_NE(zero.err.find("--sizes: 0 is out of range"), std::string::npos) << zero.err;

  Ran mixed = RunMaxkernel({"bench", "--suite", "jaxbench", "--sizes", "64"});
  EXPECT_EQ(mixed.exit_code, 2);
  EXPECT_NE(mixed.err.find("--sizes applies to --suite gemm"), std::string::npos) << mixed.err;

  Ran rounds = RunMaxkernel({"bench", "--suite", "gemm", "--rounds", "0"});
  EXPECT_EQ(rounds.exit_code, 2);
  EXPECT_NE(rounds.err.find("--rounds"), std::string::npos) << rounds.err;

  Ran compare = RunMaxkernel({"bench", "--suite", "jaxbench", "--compare", "mkl"});
  EXPECT_EQ(compare.exit_code, 2);
  EXPECT_NE(compare.err.find("--compare"), std::string::npos) << compare.err;

  // The expert suite's flags belong to it, and its own are checked before anything runs.
  Ran budget = RunMaxkernel({"bench", "--suite", "gemm", "--budget", "8"});
  EXPECT_EQ(budget.exit_code, 2);
  EXPECT_NE(budget.err.find("apply to --suite expert"), std::string::npos) << budget.err;
  Ran expert = RunMaxkernel({"bench", "--suite", "expert", "--compare", "xla"});
  EXPECT_EQ(expert.exit_code, 2);
  EXPECT_NE(expert.err.find("--suite expert takes"), std::string::npos) << expert.err;
  Ran algo = RunMaxkernel({"bench", "--suite", "expert", "--algorithm", "greedy", "--db",
                           "/nonexistent-dir/x"});
  EXPECT_EQ(algo.exit_code, 2);
  EXPECT_NE(algo.err.find("greedy"), std::string::npos) << algo.err;
}

}  // namespace
}  // namespace mk::cli
