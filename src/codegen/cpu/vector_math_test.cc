// mk_cpu_rt.h's vectorizable float math (vexp, vexpm1, vlog, vlog1p, vtanh, verf, logistic):
// accuracy over the float range and the fact that the loops calling them vectorize. Both are
// checked on vector_math_probe.inc, compiled here the way generated kernels are compiled (the
// host target's flags plus the CPU emitter's -fopenmp -fno-math-errno) with
// -fopt-info-vec-optimized: every loop marked VECTOR-LOOP must be reported "loop vectorized" (a
// loop calling libm, or one the if-conversion gives up on, is not), and the program's max-ulp
// report for every 127th float bit pattern plus special values must stay within the bounds below.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "codegen/cpu/test_harness.h"
#include "support/subprocess.h"
#include "target/target.h"

namespace mk::codegen::cpu {
namespace {

namespace fs = std::filesystem;

const std::string kSourceDir = MK_SOURCE_DIR;
const std::string kProbe = kSourceDir + "/src/codegen/cpu/vector_math_probe.inc";

// The bounds mk_cpu_rt.h documents, in ulps of the correctly rounded result.
const std::map<std::string, double> kMaxUlp = {
    {"exp", 2}, {"expm1", 2}, {"log", 2}, {"log1p", 2}, {"logistic", 2}, {"tanh", 3}, {"erf", 3}};

class VectorMathTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = testing::MakeTempDir("mk-vector-math");
    const char* cxx = std::getenv("CXX");
    // The compiler generated kernels are built with; the vectorization report is GCC's (so is
    // the runtime header: it uses GCC's __builtin_omp_get_thread_num).
    std::vector<std::string> argv = {cxx && *cxx ? cxx : "g++"};
    for (const std::string& f : target::HostCpu().compile_flags) argv.push_back(f);
    for (const char* f : {"-fopenmp", "-fno-math-errno", "-std=c++20", "-fopt-info-vec-optimized"}) {
      argv.push_back(f);
    }
    argv.insert(argv.end(), {"-I" + kSourceDir + "/src", "-x", "c++", kProbe, "-o", dir_ + "/probe"});
    auto r = RunProcess(argv, 300);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->exit_code, 0) << r->err;
    compile_report_ = r->err;
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static std::string dir_, compile_report_;
};
std::string VectorMathTest::dir_, VectorMathTest::compile_report_;

TEST_F(VectorMathTest, LoopsVectorize) {
  // Lines of the probe with a marked loop, and the lines GCC reports a vectorized loop at.
  std::ifstream in(kProbe);
  std::set<int> loops;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.rfind("MK_PROBE_LOOP(", 0) == 0) loops.insert(n);
  }
  ASSERT_EQ(loops.size(), kMaxUlp.size());
  std::set<int> vectorized;
  std::istringstream report(compile_report_);
  const std::string tag = "vector_math_probe.inc:";
  while (std::getline(report, line)) {
    size_t at = line.find(tag);
    if (at == std::string::npos || line.find("loop vectorized") == std::string::npos) continue;
    vectorized.insert(std::atoi(line.c_str() + at + tag.size()));
  }
  for (int n : loops) {
    EXPECT_TRUE(vectorized.count(n)) << "the loop at vector_math_probe.inc:" << n
                                     << " was not vectorized; GCC said:\n" << compile_report_;
  }
}

TEST_F(VectorMathTest, AccuracyOverTheFloatRange) {
  auto r = RunProcess({dir_ + "/probe", "127"}, 300);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 0) << r->out << r->err;
  std::istringstream out(r->out);
  std::string name, worst_at;
  double max_ulp;
  long points, special_failures;
  std::set<std::string> seen;
  while (out >> name >> max_ulp >> worst_at >> points >> special_failures) {
    seen.insert(name);
    ASSERT_TRUE(kMaxUlp.count(name)) << name;
    EXPECT_LE(max_ulp, kMaxUlp.at(name)) << name << ": worst input " << worst_at;
    EXPECT_EQ(special_failures, 0) << name;
    EXPECT_GT(points, 33000000) << name;
    std::cout << name << ": max " << max_ulp << " ulp (at " << worst_at << ") over " << points
              << " inputs\n";
  }
  EXPECT_EQ(seen.size(), kMaxUlp.size()) << r->out;
}

}  // namespace
}  // namespace mk::codegen::cpu
