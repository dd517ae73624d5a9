// MAXKERNEL_CPU_ISA=avx2 builds exactly what an AVX2-only CPU would run: a kernel emitted and
// compiled under it holds no zmm register, no opmask register, no xmm/ymm register above 15 and
// no EVEX-encoded instruction, whatever the host (objdump of the built library). The module has
// what tempts the compiler most: a transcendental epilogue (512-bit by default on AVX-512
// targets), a row reduction and an f32 GEMM (an AVX-512 micro-kernel on such hosts).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <regex>
#include <sstream>

#include "analysis/fusion_plan.h"
#include "codegen/cpu/test_harness.h"
#include "hlo/parser.h"
#include "interp/interpreter.h"
#include "support/subprocess.h"
#include "target/isa_level.h"

namespace mk::codegen::cpu {
namespace {

constexpr const char* kModule = R"(
HloModule isa_cap
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
ENTRY main {
  x = f32[64,96] parameter(0)
  w = f32[96,128] parameter(1)
  dot = f32[64,128] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  e = f32[64,128] exponential(dot)
  t = f32[64,128] tanh(e)
  zero = f32[] constant(0)
  s = f32[64] reduce(t, zero), dimensions={1}, to_apply=add
  ROOT out = (f32[64,128], f32[64]) tuple(t, s)
}
)";

class ScopedAvx2 {
 public:
  ScopedAvx2() { setenv("MAXKERNEL_CPU_ISA", "avx2", 1); }
  ~ScopedAvx2() { unsetenv("MAXKERNEL_CPU_ISA"); }
};

// The first offending line of `objdump -d` output, or empty. An EVEX instruction starts with
// byte 0x62 (in 64-bit mode 0x62 is nothing else); objdump prints the bytes before the mnemonic.
std::string FirstAvx512Line(const std::string& disassembly) {
  static const std::regex registers(R"(%(zmm\d+|k[0-7]\b|[xy]mm(1[6-9]|2\d|3[01])\b))");
  static const std::regex evex(R"(^\s*[0-9a-f]+:\s+(67 )?62 )");
  std::istringstream in(disassembly);
  std::string line;
  while (std::getline(in, line)) {
    if (std::regex_search(line, registers) || std::regex_search(line, evex)) return line;
  }
  return "";
}

TEST(IsaCapTest, Avx2BuildsHoldNoAvx512Instruction) {
  if (target::LevelOfFeatures(target::HostCpu().isa) < target::IsaLevel::kAvx2) {
    GTEST_SKIP() << "this CPU has no AVX2+FMA";
  }
  auto objdump = RunProcess({"objdump", "--version"}, 30);
  if (!objdump.ok() || objdump->exit_code != 0) GTEST_SKIP() << "objdump is not installed";
  ScopedAvx2 cap;
  auto module = hlo::ParseModule(kModule, "isa_cap.hlo");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto plan = analysis::PlanFusion(**module);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  const std::string cache = testing::MakeTempDir("mk-isa-cap");
  runtime::CompileOptions copts;
  copts.cache_dir = cache;
  // The compiler driver's defaults follow the cap (-march=x86-64-v3 on a wider host).
  for (const std::string& f : target::HostCpu().compile_flags) {
    EXPECT_NE(std::find(copts.flags.begin(), copts.flags.end(), f), copts.flags.end()) << f;
  }
  runtime::CompilerDriver compiler(copts);
  runtime::SandboxRunner sandbox;
  runtime::CpuExecutor exec(compiler, sandbox);
  auto impl = testing::EmitWithContractionParams(*plan, {});
  ASSERT_TRUE(impl.ok()) << impl.status().ToString();
  auto lib = exec.Build(*impl);
  ASSERT_TRUE(lib.ok()) << lib.status().ToString();
  auto dis = RunProcess({"objdump", "-d", "--no-show-raw-insn", lib->so_path}, 60);
  ASSERT_TRUE(dis.ok() && dis->exit_code == 0);
  auto raw = RunProcess({"objdump", "-d", lib->so_path}, 60);
  ASSERT_TRUE(raw.ok() && raw->exit_code == 0);
  // The check itself must see vector code, or it proves nothing.
  ASSERT_NE(dis->out.find("%ymm"), std::string::npos) << "no AVX code in the kernel at all";
  EXPECT_EQ(FirstAvx512Line(dis->out), "");
  EXPECT_EQ(FirstAvx512Line(raw->out), "");
  // And it computes the right thing.
  auto args = testing::RandomArgs(**module, 3);
  auto want = interp::Evaluate(**module, args);
  ASSERT_TRUE(want.ok());
  auto got = exec.Run(*lib, *impl, args, runtime::ExecuteOptions{.poison_scratch = true});
  ASSERT_TRUE(got.ok() && got->outcome.ok());
  EXPECT_TRUE(testing::OutputsNear(got->outputs, want->elements(), 1e-4));
  std::filesystem::remove_all(cache);
}

TEST(IsaCapTest, TheDetectorSeesAvx512) {
  // The same check on hand-written objdump lines, so a detector that matches nothing fails here.
  EXPECT_NE(FirstAvx512Line("  1000:\tvaddps %zmm1,%zmm2,%zmm3"), "");
  EXPECT_NE(FirstAvx512Line("  1000:\tvaddps %ymm17,%ymm2,%ymm3"), "");
  EXPECT_NE(FirstAvx512Line("  1000:\tkmovw %k1,%eax"), "");
  EXPECT_NE(FirstAvx512Line("  1000:\t62 f1 7c 48 58 c1 \tvaddps %zmm1,%zmm0,%zmm0"), "");
  EXPECT_EQ(FirstAvx512Line("  1000:\tc5 fc 58 c1 \tvaddps %ymm1,%ymm0,%ymm0"), "");
  EXPECT_EQ(FirstAvx512Line("  1000:\tvfmadd231ps %ymm15,%ymm14,%ymm13"), "");
}

}  // namespace
}  // namespace mk::codegen::cpu
