// The glue fallback: which kernels a per-kernel compile report names, and, where libtpu is
// installed, a module the real TPU compiler refuses built again with that kernel in glue.
#include "agents/tpu_fallback.h"

#include <gtest/gtest.h>

#include "hlo/parser.h"
#include "codegen/pallas/pallas_emitter.h"
#include "target/target.h"

namespace mk::agents {
namespace {

using nlohmann::json;

TEST(TpuFallbackTest, RefusedKernelsAreTheFailedKernelFunctionsWithTheirFirstLine) {
  const json kernels = json::parse(R"([
    {"function": "kernel_0", "ok": true, "error": null},
    {"function": "kernel_18", "ok": false,
     "error": {"kind": "mosaic", "message": "INTERNAL: unsupported shape cast\nThe MLIR operation involved: ..."}},
    {"function": "kernel_25", "ok": false, "error": {"kind": "compiler_crash"}},
    {"function": "workload", "ok": false, "error": {"kind": "mosaic", "message": "not a kernel"}},
    {"function": "kernel_x", "ok": false},
    "not an object"
  ])");
  const auto refused = RefusedKernels(kernels);
  ASSERT_EQ(refused.size(), 2u);
  EXPECT_EQ(refused.at(18), "mosaic: INTERNAL: unsupported shape cast");
  EXPECT_EQ(refused.at(25), "the compiler crashed on it");
  EXPECT_TRUE(RefusedKernels(json::object()).empty());
  EXPECT_TRUE(RefusedKernels(json()).empty());
}

TEST(TpuFallbackTest, ItsJsonListsEveryFallback) {
  TpuBuilt b;
  b.build.ok = true;
  b.builds = 2;
  b.fallbacks.push_back({3, "kernel_3", "mosaic: unsupported shape cast"});
  const json j = ToJson(b);
  EXPECT_TRUE(j.at("compiled").get<bool>());
  EXPECT_EQ(j.at("builds"), 2);
  ASSERT_EQ(j.at("fallbacks").size(), 1u);
  EXPECT_EQ(j.at("fallbacks")[0].at("function"), "kernel_3");
  EXPECT_EQ(j.at("fallbacks")[0].at("kernel_id"), 3);
}

// A reverse along the lanes inside a kernel: libtpu 0.0.42's Pallas TPU lowering has no rule
// for `rev` ("Unimplemented primitive in Pallas TPU lowering"), so the pallas_call is refused.
constexpr char kReverseLanes[] = R"(
HloModule reverse_lanes
ENTRY main {
  x = f32[8,100] parameter(0)
  r = f32[8,100] reverse(x), dimensions={1}
  ROOT e = f32[8,100] exponential(r)
}
)";

TEST(TpuFallbackTest, AKernelTheRealCompilerRefusesFallsBackToGlueAndTheModuleCompiles) {
  auto m = hlo::ParseModule(kReverseLanes, "reverse_lanes.hlo");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto tpu = target::TargetByName("tpu-v5e");
  ASSERT_TRUE(tpu.ok());
  TpuRunner runner(*tpu);
  Result<TpuBuilt> built = LowerAndBuildWithGlueFallback(runner, **m);
  if (!built.ok() && built.status().code() == ErrorCode::kEnvironment) {
    GTEST_SKIP() << "no TPU toolchain: " << built.status().ToString();
  }
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  EXPECT_TRUE(built->build.ok) << built->build.message;
  EXPECT_EQ(built->builds, 2);
  ASSERT_EQ(built->fallbacks.size(), 1u);
  EXPECT_EQ(built->fallbacks[0].function, "kernel_0");
  EXPECT_NE(built->fallbacks[0].reason.find("rev"), std::string::npos)
      << built->fallbacks[0].reason;
  EXPECT_EQ(built->candidate.For(0).Get(codegen::pallas::kGlueFallbackKey, 0), 1);
  Result<std::string> map_text = SourceNamed(built->implementation, "kernel_map.json");
  ASSERT_TRUE(map_text.ok());
  const json map = json::parse(*map_text);
  EXPECT_EQ(map.at("kernels")[0].at("runs"), "glue");
  EXPECT_TRUE(map.at("kernels")[0].at("fallback").get<bool>());
  // The tester's build of the same module is the one just made, not a second compile.
  EXPECT_EQ(runner.compiles(), 2);
  Result<BuildOutcome> again = runner.Build(built->implementation);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->ok);
  EXPECT_EQ(runner.compiles(), 2);
}

// The time cap: a clock that says the first round took an hour stops the fallback before a
// second round, and the build's message says so; with time to spare the same module falls back
// and compiles (above). Needs libtpu (the refusal is the real compiler's).
TEST(TpuFallbackTest, TheFallbackStopsBeforeARoundThatWouldPassItsTimeCap) {
  auto m = hlo::ParseModule(kReverseLanes, "reverse_lanes.hlo");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto tpu = target::TargetByName("tpu-v5e");
  ASSERT_TRUE(tpu.ok());
  TpuRunner runner(*tpu);
  double t = 0;
  auto clock = [&t] {
    const double now = t;
    t += 1800;  // every reading half an hour later: the first round "took" an hour
    return now;
  };
  Result<TpuBuilt> built = LowerAndBuildWithGlueFallback(runner, **m, 4, 1200, clock);
  if (!built.ok() && built.status().code() == ErrorCode::kEnvironment) {
    GTEST_SKIP() << "no TPU toolchain: " << built.status().ToString();
  }
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  EXPECT_FALSE(built->build.ok);
  EXPECT_TRUE(built->stopped_by_time);
  EXPECT_EQ(built->builds, 1);
  EXPECT_TRUE(built->fallbacks.empty());
  EXPECT_NE(built->build.message.find("the glue fallback stopped after 1 build(s)"), std::string::npos)
      << built->build.message;
  EXPECT_NE(built->build.message.find("cap of 1200 s, so 1 refused kernel(s) did not fall back"),
            std::string::npos)
      << built->build.message;
  // The refusal itself is still in the message.
  EXPECT_NE(built->build.message.find("kernel_0"), std::string::npos) << built->build.message;
  EXPECT_TRUE(ToJson(*built).at("stopped_by_time").get<bool>());
}

}  // namespace
}  // namespace mk::agents
