// End-to-end tests of the CPU engine commands (`eval --engine cpu`, `compile`, `check`): they
// run the real `maxkernel` binary (MK_BINARY) and, for compile, a C compiler on its example.
#include <gtest/gtest.h>

#include "cli/cli_test_util.h"
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "support/npy.h"

extern char** environ;

namespace mk::cli {
namespace {

namespace fs = std::filesystem;

using testing::Ran;

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Softmax rows in bf16 with f32 statistics, an integer output and a pass-through: several
// output types and a reduction kernel.
const char* kMixedHlo = R"(HloModule mixed

max_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}

add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  x = f32[3,5] parameter(0)
  k = s32[5] parameter(1)
  ninf = f32[] constant(-inf)
  mx = f32[3] reduce(x, ninf), dimensions={1}, to_apply=max_f32
  mxb = f32[3,5] broadcast(mx), dimensions={0}
  d = f32[3,5] subtract(x, mxb)
  e = f32[3,5] exponential(d)
  zero = f32[] constant(0)
  sum = f32[3] reduce(e, zero), dimensions={1}, to_apply=add_f32
  sb = f32[3,5] broadcast(sum), dimensions={0}
  q = f32[3,5] divide(e, sb)
  sm = bf16[3,5] convert(q)
  two = s32[] constant(2)
  twob = s32[5] broadcast(two), dimensions={}
  k2 = s32[5] multiply(k, twob)
  ROOT t = (bf16[3,5], s32[5], f32[3,5]) tuple(sm, k2, x)
}
)";

const char* kAddHlo = R"(HloModule add_pair

ENTRY main {
  a = f32[2,3] parameter(0)
  b = f32[2,3] parameter(1)
  ROOT s = f32[2,3] add(a, b)
}
)";

class EngineCliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/mk-engine-cli-cache-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    cache_ = tmpl;
    setenv("MAXKERNEL_CACHE", cache_.c_str(), 1);  // the binaries we start inherit it
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(cache_, ec);
  }
  void SetUp() override {
    char tmpl[] = "/tmp/mk-engine-cli-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::ofstream(Path("mixed.hlo")) << kMixedHlo;
    std::ofstream(Path("add.hlo")) << kAddHlo;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  // Runs argv[0] (MK_BINARY when empty) with stdout/stderr captured in files.
  Ran Spawn(const std::vector<std::string>& argv) { return testing::RunCommand(argv); }
  Ran Run(std::vector<std::string> args) {
    args.insert(args.begin(), MK_BINARY);
    return Spawn(std::move(args));
  }

  static void WriteNpy(const std::string& path, npy::NpyType type, std::vector<int64_t> shape,
                       const void* data, size_t bytes) {
    npy::NpyArray a;
    a.type = type;
    a.shape = std::move(shape);
    a.data.resize(bytes);
    std::memcpy(a.data.data(), data, bytes);
    ASSERT_TRUE(npy::WriteNpyFile(path, a).ok());
  }

  // The committed ci task used by the check tests (a bf16 RMSNorm).
  static std::string CiTask() { return std::string(MK_SOURCE_DIR) + "/bench/jaxbench/12p/ci"; }

  static std::string cache_;
  std::string dir_;
};
std::string EngineCliTest::cache_;

TEST_F(EngineCliTest, EvalCpuAgreesWithInterp) {
  std::vector<float> x(15);
  for (int i = 0; i < 15; ++i) x[i] = std::sin(i * 0.7f) * 3;
  std::vector<int32_t> k = {-2, 0, 1, 7, 100};
  WriteNpy(Path("x.npy"), npy::NpyType::kF4, {3, 5}, x.data(), x.size() * 4);
  WriteNpy(Path("k.npy"), npy::NpyType::kI4, {5}, k.data(), k.size() * 4);
  Ran interp = Run({"eval", Path("mixed.hlo"), "--input", Path("x.npy"), "--input", Path("k.npy"),
                    "--out", Path("interp")});
  ASSERT_EQ(interp.exit_code, 0) << interp.err;
  Ran cpu = Run({"eval", Path("mixed.hlo"), "--input", Path("x.npy"), "--input", Path("k.npy"),
                 "--out", Path("cpu"), "--engine", "cpu", "--json"});
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  auto j = nlohmann::json::parse(cpu.out);
  EXPECT_EQ(j["engine"], "cpu");
  ASSERT_EQ(j["outputs"].size(), 3u);
  EXPECT_EQ(j["outputs"][0]["dtype"], "bf16");
  EXPECT_EQ(j["outputs"][0]["npy_dtype"], "<f4");
  EXPECT_EQ(j["outputs"][1]["npy_dtype"], "<i4");
  for (int o = 0; o < 3; ++o) {
    std::string name = "/out" + std::to_string(o) + ".npy";
    auto a = npy::ReadNpyFile(Path("interp") + name);
    auto b = npy::ReadNpyFile(Path("cpu") + name);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->shape, b->shape);
    ASSERT_EQ(a->data.size(), b->data.size());
    if (o == 0) {  // softmax: exp may differ in the last f32 bit before the bf16 rounding
      const float* fa = reinterpret_cast<const float*>(a->data.data());
      const float* fb = reinterpret_cast<const float*>(b->data.data());
      for (int i = 0; i < 15; ++i) EXPECT_NEAR(fa[i], fb[i], 4e-3 * std::fabs(fa[i])) << i;
    } else {
      EXPECT_EQ(a->data, b->data) << "output " << o;
    }
  }
  // Hand-computed: the integer output is 2 * k.
  auto ints = npy::ReadNpyFile(Path("cpu") + "/out1.npy");
  ASSERT_TRUE(ints.ok());
  const int32_t* v = reinterpret_cast<const int32_t*>(ints->data.data());
  EXPECT_EQ(std::vector<int32_t>(v, v + 5), (std::vector<int32_t>{-4, 0, 2, 14, 200}));
}

TEST_F(EngineCliTest, EvalCpuBadInputKeepsTheContract) {
  std::vector<float> a(6, 1.0f);
  WriteNpy(Path("a.npy"), npy::NpyType::kF4, {2, 3}, a.data(), a.size() * 4);
  Ran missing = Run({"eval", Path("add.hlo"), "--input", Path("a.npy"), "--out", Path("o"),
                     "--engine", "cpu"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("takes 2 parameters"), std::string::npos) << missing.err;
  EXPECT_FALSE(fs::exists(Path("o")));
  Ran high = Run({"eval", Path("add.hlo"), "--input", Path("a.npy"), "--input", Path("a.npy"),
                  "--out", Path("o"), "--engine", "cpu", "--precision", "high"});
  EXPECT_EQ(high.exit_code, 2);
  Ran bogus = Run({"eval", Path("add.hlo"), "--input", Path("a.npy"), "--input", Path("a.npy"),
                   "--out", Path("o"), "--engine", "gpu"});
  EXPECT_EQ(bogus.exit_code, 2);
  EXPECT_NE(bogus.err.find("available: interp, cpu"), std::string::npos) << bogus.err;
}

TEST_F(EngineCliTest, CompileWritesALibraryThatTheExampleCalls) {
  Ran r = Run({"compile", Path("add.hlo"), "--target", "cpu", "-o", Path("lib"), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["name"], "add_pair");
  // The same key as `export --json` (docs/CLI.md): one name for one thing.
  ASSERT_TRUE(j["implementation_hash"].is_string()) << r.out;
  EXPECT_EQ(j["implementation_hash"].get<std::string>().size(), 64u);
  EXPECT_FALSE(j.contains("hash")) << r.out;
  for (const char* f : {"module.cc", "libmaxkernel_add_pair.so", "add_pair.h", "example.c",
                        "plan.txt"}) {
    EXPECT_TRUE(fs::exists(Path("lib/") + f)) << f;
  }
  EXPECT_EQ(j["files"]["library"], Path("lib/libmaxkernel_add_pair.so"));
  std::string header = Slurp(Path("lib/add_pair.h"));
  EXPECT_NE(header.find("void add_pair_kernel(void** buffers);"), std::string::npos);
  EXPECT_NE(header.find("int add_pair_abi_version(void);"), std::string::npos);
  EXPECT_NE(header.find("buffers[2]  output 0  f32[2,3]  24 bytes"), std::string::npos) << header;
  EXPECT_NE(Slurp(Path("lib/plan.txt")).find("HloModule"), std::string::npos);

  const char* cc = getenv("CC");
  Ran build = Spawn({cc && *cc ? cc : "cc", "-std=c99", "-Wall", "-Werror", "-O2",
                     Path("lib/example.c"), "-o", Path("lib/example"), "-L" + Path("lib"),
                     "-lmaxkernel_add_pair", "-Wl,-rpath," + Path("lib")});
  ASSERT_EQ(build.exit_code, 0) << build.err;
  Ran ex = Spawn({Path("lib/example")});
  ASSERT_EQ(ex.exit_code, 0) << ex.err;
  // Inputs are ((i % 7) - 3) * 0.25 in both operands, so the sum is (i - 3) * 0.5.
  EXPECT_EQ(ex.out, "output 0 (f32, 6 elements): -1.5 -1 -0.5 0 0.5 1\n");
}

TEST_F(EngineCliTest, CompileBadInput) {
  EXPECT_EQ(Run({"compile", Path("nope.hlo"), "-o", Path("lib")}).exit_code, 2);
  Ran unknown = Run({"compile", Path("add.hlo"), "--target", "tpu-v9", "-o", Path("lib")});
  EXPECT_EQ(unknown.exit_code, 2) << unknown.err;
  EXPECT_NE(unknown.err.find("tpu-v5e"), std::string::npos) << unknown.err;  // lists the valid ones
  EXPECT_FALSE(fs::exists(Path("lib/module.cc")));
}

TEST_F(EngineCliTest, CheckPassesOnACommittedCiTask) {
  if (!fs::exists(CiTask() + "/task.yaml")) GTEST_SKIP() << "no committed ci task";
  Ran r = Run({"check", CiTask(), "--target", "cpu"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("12p: passed (3 seeds, target cpu)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("seed 2 output 0"), std::string::npos) << r.out;

  Ran j = Run({"check", CiTask(), "--seeds", "1", "--json"});
  EXPECT_EQ(j.exit_code, 0) << j.err;
  auto report = nlohmann::json::parse(j.out);
  EXPECT_EQ(report["status"], "passed");
  ASSERT_EQ(report["seeds"].size(), 1u);
  EXPECT_TRUE(report["seeds"][0]["outputs"][0]["passed"].get<bool>());
}

TEST_F(EngineCliTest, CheckFailsOnACorruptedImplementation) {
  Ran c = Run({"compile", Path("add.hlo"), "-o", Path("lib")});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  std::string src = Slurp(Path("lib/module.cc"));
  size_t end = src.rfind('}');
  ASSERT_NE(end, std::string::npos);
  // Element [1,0] (linear 3) of output 0 (buffers[2]) gets 1 added.
  std::ofstream(Path("wrong.cc"))
      << src.substr(0, end) << "  static_cast<float*>(buffers[2])[3] += 1.0f;\n}\n";
  Ran r = Run({"check", Path("add.hlo"), "--source", Path("wrong.cc"), "--seeds", "2"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("seed 0 output 0 f32[2,3]: FAIL"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("first mismatch [1, 0]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("FAILED"), std::string::npos) << r.out;

  std::ofstream(Path("crash.cc")) << "#include <csignal>\n"
                                  << src.substr(0, end) << "  std::raise(SIGSEGV);\n}\n";
  Ran crash = Run({"check", Path("add.hlo"), "--source", Path("crash.cc"), "--seeds", "1"});
  EXPECT_EQ(crash.exit_code, 1);
  EXPECT_NE(crash.out.find("kernel crashed with signal SIGSEGV"), std::string::npos) << crash.out;

  std::ofstream(Path("broken.cc")) << src << "\nnot C++ at all;\n";
  Ran broken = Run({"check", Path("add.hlo"), "--source", Path("broken.cc")});
  EXPECT_EQ(broken.exit_code, 1);
  EXPECT_NE(broken.err.find("error:"), std::string::npos) << broken.err;
  EXPECT_NE(broken.err.find(cache_), std::string::npos) << broken.err;  // the kept source

  Ran good = Run({"check", Path("add.hlo")});
  EXPECT_EQ(good.exit_code, 0) << good.out << good.err;
}

TEST_F(EngineCliTest, CheckFailsOnACorruptedTask) {
  if (!fs::exists(CiTask() + "/task.yaml")) GTEST_SKIP() << "no committed ci task";
  // A copy of the task whose module no longer matches the program: the root is negated (same
  // signature), and the code generated for the original module is checked against it.
  fs::copy(CiTask(), Path("task"), fs::copy_options::recursive);
  Ran c = Run({"compile", CiTask(), "-o", Path("lib")});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  std::string hlo = Slurp(Path("task/module.hlo"));
  size_t root = hlo.rfind("ROOT ");
  ASSERT_NE(root, std::string::npos);
  // Negate the root value: same shape and type, different numbers.
  size_t eq = hlo.find(" = ", root);
  size_t type_end = hlo.find(' ', eq + 3);
  std::string type = hlo.substr(eq + 3, type_end - (eq + 3));
  std::string name = hlo.substr(root + 5, eq - (root + 5));
  hlo.replace(root, 5, "");
  size_t line_end = hlo.find('\n', root);
  hlo.insert(line_end, "\n  ROOT corrupted = " + type + " negate(" + name + ")");
  std::ofstream(Path("task/module.hlo")) << hlo;
  Ran r = Run({"check", Path("task"), "--source", Path("lib/module.cc"), "--seeds", "1"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("seed 0 output 0 bf16[1,64,512]: FAIL"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("elements out of tolerance"), std::string::npos) << r.out;
}

TEST_F(EngineCliTest, CheckBadInput) {
  EXPECT_EQ(Run({"check", Path("missing-task")}).exit_code, 2);
  EXPECT_EQ(Run({"check", Path("add.hlo"), "--target", "cuda-sm90"}).exit_code, 2);
  EXPECT_EQ(Run({"check", Path("add.hlo"), "--seeds", "0"}).exit_code, 2);
  EXPECT_EQ(Run({"check", Path("add.hlo"), "--source", Path("none.cc")}).exit_code, 2);
}

}  // namespace
}  // namespace mk::cli

namespace mk::cli {
namespace {

// A module that is instant for a kernel and slow for the reference interpreter: one 4096^3 dot
// (tens of seconds interpreted). With a trivial --source kernel, only the oracle is slow.
const char* kSlowOracleHlo = R"(HloModule slow_oracle

ENTRY main {
  a = f32[4096,4096] parameter(0)
  b = f32[4096,4096] parameter(1)
  ROOT d = f32[4096,4096] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)";

const char* kTrivialKernel = R"(extern "C" int mk_abi_version() { return 1; }
extern "C" void mk_kernel(void** buffers) { (void)buffers; }
)";

TEST_F(EngineCliTest, CheckTimeoutBoundsTheReferenceInterpreter) {
  std::ofstream(Path("slow.hlo")) << kSlowOracleHlo;
  std::ofstream(Path("trivial.cc")) << kTrivialKernel;
  auto start = std::chrono::steady_clock::now();
  Ran r = Run({"check", Path("slow.hlo"), "--source", Path("trivial.cc"), "--seeds", "1",
               "--timeout", "2"});
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("reference interpreter ran out of time (limit 2 s)"), std::string::npos)
      << r.err;
  EXPECT_LT(seconds, 15) << "the oracle ignored --timeout";
}

// `levels` computations, each calling the next with `op` (call or map): nesting the parser
// accepts and the interpreter and code generators would recurse through.
std::string DeeplyNested(int levels, const std::string& op) {
  std::string text = "HloModule deep\n\nc0 {\n  p = f32[] parameter(0)\n  ROOT n = f32[] negate(p)\n}\n";
  auto call = [&](int callee) {
    return op == "map" ? "f32[] map(p), dimensions={}, to_apply=c" + std::to_string(callee)
                       : "f32[] call(p), to_apply=c" + std::to_string(callee);
  };
  for (int i = 1; i < levels; ++i) {
    text += "\nc" + std::to_string(i) + " {\n  p = f32[] parameter(0)\n  ROOT r = " +
            call(i - 1) + "\n}\n";
  }
  text += "\nENTRY main {\n  p = f32[] parameter(0)\n  ROOT r = " + call(levels - 1) + "\n}\n";
  return text;
}

TEST_F(EngineCliTest, DeepNestingIsABadInputNotACrash) {
  float one = 1;
  WriteNpy(Path("one.npy"), npy::NpyType::kF4, {}, &one, sizeof one);
  std::ofstream(Path("calls.hlo")) << DeeplyNested(5000, "call");
  std::ofstream(Path("maps.hlo")) << DeeplyNested(2000, "map");
  Ran eval = Run({"eval", Path("calls.hlo"), "--input", Path("one.npy"), "--out", Path("o")});
  EXPECT_EQ(eval.exit_code, 2) << eval.err;
  EXPECT_NE(eval.err.find("calls.hlo:"), std::string::npos) << eval.err;  // file:line:col
  EXPECT_NE(eval.err.find("deep"), std::string::npos) << eval.err;
  Ran compile = Run({"compile", Path("maps.hlo"), "-o", Path("lib")});
  EXPECT_EQ(compile.exit_code, 2) << compile.err;
  EXPECT_NE(compile.err.find("maps.hlo:"), std::string::npos) << compile.err;
}

TEST_F(EngineCliTest, AnUnusableCompileCacheIsOneEnvironmentError) {
  std::ofstream(Path("file")) << "not a directory";
  Ran r = Spawn({"/usr/bin/env", "MAXKERNEL_CACHE=" + Path("file") + "/cache", MK_BINARY, "check",
                 Path("add.hlo")});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("compile cache"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("build-failed"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace mk::cli
