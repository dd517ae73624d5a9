// mk_cpu_rt.h's vectorizable float math (vexp, vexpm1, vlog, vlog1p, vtanh, verf, logistic,
// tanh_softplus):
// accuracy over the float range and the fact that the loops calling them vectorize. Both are
// checked on vector_math_probe.inc, compiled here the way generated kernels are compiled (the
// host target's flags plus the CPU emitter's KernelFlags()) with
// -fopt-info-vec-optimized: every probe loop (an MK_PROBE_LOOP line) must be reported "loop
// vectorized" (a loop calling libm, or one the if-conversion gives up on, is not), and the
// program's max-ulp report for every 127th float bit pattern plus special values must stay
// within the bounds below (also built with -mno-fma, the fallback for targets without FMA).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "codegen/cpu/cpu_emitter.h"
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
    {"exp", 2}, {"expm1", 2}, {"log", 2}, {"log1p", 2}, {"logistic", 2}, {"tanh", 3}, {"erf", 3},
    {"tanh_softplus", 4}};

// Compiles the probe to dir/name with the generated kernels' compiler and flags plus `extra`;
// returns the compiler's diagnostics.
std::string CompileProbe(const std::string& dir, const std::string& name,
                         const std::vector<std::string>& extra) {
  const char* cxx = std::getenv("CXX");
  // The compiler generated kernels are built with; the vectorization report is GCC's (so is the
  // runtime header: it uses GCC's __builtin_omp_get_thread_num).
  std::vector<std::string> argv = {cxx && *cxx ? cxx : "g++"};
  for (const std::string& f : target::HostCpu().compile_flags) argv.push_back(f);
  for (const std::string& f : KernelFlags()) argv.push_back(f);
  argv.push_back("-std=c++20");
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.insert(argv.end(), {"-I" + kSourceDir + "/src", "-x", "c++", kProbe, "-o", dir + "/" + name});
  auto r = RunProcess(argv, 300);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return "";
  EXPECT_EQ(r->exit_code, 0) << r->err;
  return r->err;
}

// Runs a compiled probe over every 127th bit pattern and checks its report against `bounds`.
void ExpectWithinBounds(const std::string& probe, const std::map<std::string, double>& bounds) {
  auto r = RunProcess({probe, "127"}, 300);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 0) << r->out << r->err;
  std::istringstream out(r->out);
  std::string name, worst_at;
  double max_ulp;
  long points, special_failures;
  std::set<std::string> seen;
  while (out >> name >> max_ulp >> worst_at >> points >> special_failures) {
    seen.insert(name);
    ASSERT_TRUE(bounds.count(name)) << name;
    EXPECT_LE(max_ulp, bounds.at(name)) << name << ": worst input " << worst_at;
    EXPECT_EQ(special_failures, 0) << name;
    EXPECT_GT(points, 33000000) << name;
    std::cout << name << ": max " << max_ulp << " ulp (at " << worst_at << ") over " << points
              << " inputs\n";
  }
  EXPECT_EQ(seen.size(), bounds.size()) << r->out;
}

class VectorMathTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = testing::MakeTempDir("mk-vector-math");
    compile_report_ = CompileProbe(dir_, "probe", {"-fopt-info-vec-optimized"});
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

TEST_F(VectorMathTest, AccuracyOverTheFloatRange) { ExpectWithinBounds(dir_ + "/probe", kMaxUlp); }

// Without FMA (a target that lacks it: vm::fma is then a*b + c) the polynomials lose a fraction of
// an ulp and logistic's quotient correction is no longer exact.
TEST_F(VectorMathTest, AccuracyWithoutFma) {
  CompileProbe(dir_, "probe_nofma", {"-mno-fma"});
  std::map<std::string, double> bounds = kMaxUlp;
  bounds["logistic"] = 2.5;
  ExpectWithinBounds(dir_ + "/probe_nofma", bounds);
}

}  // namespace
}  // namespace mk::codegen::cpu
