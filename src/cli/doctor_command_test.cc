// `maxkernel doctor` end to end: the real binary (MK_BINARY), a private data directory, the quick
// probe. Checks the report's fields and that a probe is stored and then loaded; no timings.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/subprocess.h"

namespace mk::cli {
namespace {

namespace fs = std::filesystem;

class DoctorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mk-doctor-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs the binary with MAXKERNEL_HOME and the compile cache inside the test's directory.
  ProcessResult Doctor(std::vector<std::string> args) {
    std::vector<std::string> argv = {"env", "MAXKERNEL_HOME=" + dir_ + "/home",
                                     "MAXKERNEL_CACHE=" + dir_ + "/cache", MK_BINARY, "doctor"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = RunProcess(argv, 300);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : ProcessResult{};
  }

  std::string dir_;
};

TEST_F(DoctorTest, ProbesOnceThenLoadsFromTheStore) {
  ProcessResult first = Doctor({"--json", "--quick"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  nlohmann::json j = nlohmann::json::parse(first.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << first.out;
  EXPECT_EQ(j["maxkernel_version"], MK_VERSION);
  EXPECT_GE(j["cpu"]["cores"].get<int>(), 1);
  EXPECT_TRUE(j["cpu"]["isa"].is_array());
  EXPECT_EQ(j["db_path"], dir_ + "/home/maxkernel.db");
  // Nothing stored yet: the probe ran.
  EXPECT_EQ(j["peaks"]["status"], "probed") << j["peaks"].dump();
  EXPECT_EQ(j["peaks"]["quick"], true) << j["peaks"].dump();
  EXPECT_GT(j["peaks"]["f32_gflops"].get<double>(), 0);
  EXPECT_GT(j["peaks"]["gbytes_per_s"].get<double>(), 0);
  const int64_t id = j["peaks"]["probe_id"];

  // A quick request loads the stored quick probe (a plain one would measure the machine anew:
  // quick numbers are never taken for its rates, profiler_test checks that).
  ProcessResult second = Doctor({"--json", "--quick"});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  nlohmann::json k = nlohmann::json::parse(second.out, nullptr, false);
  ASSERT_FALSE(k.is_discarded()) << second.out;
  EXPECT_EQ(k["peaks"]["status"], "stored");
  EXPECT_EQ(k["peaks"]["probe_id"], id);
  EXPECT_EQ(k["peaks"]["f32_gflops"], j["peaks"]["f32_gflops"]);

  ProcessResult text = Doctor({"--probe", "--quick"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("measured now, probe #" + std::to_string(id + 1)), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("f32 FMA"), std::string::npos);
  // Where the AMX tile probe ran, so did the fed one, and both are reported.
  if (j["peaks"].contains("amx_gflops")) {
    EXPECT_GT(j["peaks"]["amx_fed_gflops"].get<double>(), 0) << j["peaks"].dump();
    EXPECT_NE(text.out.find("bf16 fed"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("(AMX tiles)"), std::string::npos) << text.out;
  } else {
    EXPECT_EQ(text.out.find("bf16 fed"), std::string::npos) << text.out;
  }
  EXPECT_NE(text.out.find("cores"), std::string::npos);
}

TEST_F(DoctorTest, AnUnusableDatabaseIsReportedNotFatal) {
  ProcessResult r = Doctor({"--db", dir_ + "/no/such/dir/x.db"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("peaks       unavailable"), std::string::npos) << r.out;
  // Asking for a probe explicitly and not getting one is a failure.
  ProcessResult forced = Doctor({"--probe", "--db", dir_ + "/no/such/dir/x.db"});
  EXPECT_EQ(forced.exit_code, 1);
  EXPECT_NE(forced.err.find("machine probe failed"), std::string::npos) << forced.err;
}

}  // namespace
}  // namespace mk::cli
