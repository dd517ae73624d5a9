// The profiler agent: statistics and roofline rules on hand-made numbers, JSON round trips, and
// real runs (a tiny generated kernel; the machine probe in its quick form, stored and loaded by
// CPU model). No wall-clock thresholds: a shared machine makes any of them flaky.
#include "agents/profiler.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <random>

#include "agents/engine.h"
#include "hlo/parser.h"
#include "store/sqlite_store.h"

namespace mk::agents {
namespace {

namespace fs = std::filesystem;

// ---- statistics ------------------------------------------------------------------------------

TEST(ProfilerStats, MedianAndPercentilesOfAFakeTimingList) {
  // Sorted: 1..10. Ranks p/100 * 9: p10 -> 0.9 (1 + 0.9 * 1), p50 -> 4.5, p90 -> 8.1.
  TimingStats s = SummarizeTimes({5, 1, 4, 2, 3, 10, 6, 7, 9, 8});
  EXPECT_EQ(s.iterations, 10);
  EXPECT_DOUBLE_EQ(s.median_s, 5.5);
  EXPECT_DOUBLE_EQ(s.p10_s, 1.9);
  EXPECT_DOUBLE_EQ(s.p90_s, 9.1);
  EXPECT_DOUBLE_EQ(s.mean_s, 5.5);
  EXPECT_DOUBLE_EQ(s.min_s, 1);
  EXPECT_DOUBLE_EQ(s.max_s, 10);

  TimingStats odd = SummarizeTimes({0.3, 0.1, 0.2});
  EXPECT_DOUBLE_EQ(odd.median_s, 0.2);
  EXPECT_DOUBLE_EQ(odd.p10_s, 0.1 + 0.2 * (0.2 - 0.1));  // rank 0.2
  EXPECT_DOUBLE_EQ(odd.p90_s, 0.2 + 0.8 * (0.3 - 0.2));  // rank 1.8

  TimingStats one = SummarizeTimes({4});
  EXPECT_EQ(one.median_s, 4);
  EXPECT_EQ(one.p10_s, 4);
  EXPECT_EQ(one.p90_s, 4);
  TimingStats none = SummarizeTimes({});
  EXPECT_EQ(none.iterations, 0);
  EXPECT_EQ(none.median_s, 0);
}

// ---- roofline and bottleneck rules ------------------------------------------------------------

TEST(ProfilerRoofline, ComputeBoundKernel) {
  // 1 GFLOP at 1 TFLOP/s = 1 ms; 1 MB at 100 GB/s = 10 us. Median 2 ms: half the roofline.
  Roofline r = AnalyzeRoofline(1'000'000'000, 1'000'000, 2e-3, 1e12, 1e11);
  EXPECT_DOUBLE_EQ(r.compute_s, 1e-3);
  EXPECT_DOUBLE_EQ(r.memory_s, 1e-5);
  EXPECT_DOUBLE_EQ(r.bound_s, 1e-3);
  EXPECT_DOUBLE_EQ(r.fraction, 0.5);
  EXPECT_DOUBLE_EQ(r.achieved_flops, 5e11);
  EXPECT_DOUBLE_EQ(r.achieved_bytes_per_s, 5e8);
  EXPECT_EQ(r.bottleneck, "compute");
  EXPECT_NE(r.reason.find("near the roof"), std::string::npos) << r.reason;

  // Same kernel at 10% of the peak: still compute-dominated, but the schedule limits it.
  Roofline slow = AnalyzeRoofline(1'000'000'000, 1'000'000, 1e-2, 1e12, 1e11);
  EXPECT_EQ(slow.bottleneck, "compute");
  EXPECT_DOUBLE_EQ(slow.fraction, 0.1);
  EXPECT_NE(slow.reason.find("the schedule limits it"), std::string::npos) << slow.reason;
}

TEST(ProfilerRoofline, MemoryBoundKernel) {
  // 1 GB at 10 GB/s = 0.1 s dominates 1 MFLOP at 1 TFLOP/s = 1 us. Median 0.125 s: 80%.
  Roofline r = AnalyzeRoofline(1'000'000, 1'000'000'000, 0.125, 1e12, 1e10);
  EXPECT_DOUBLE_EQ(r.bound_s, 0.1);
  EXPECT_DOUBLE_EQ(r.fraction, 0.8);
  EXPECT_DOUBLE_EQ(r.achieved_bytes_per_s, 8e9);
  EXPECT_EQ(r.bottleneck, "memory");
}

TEST(ProfilerRoofline, TinyKernelFarFromTheBoundIsOverhead) {
  // 1000 flops and 1000 bytes: bound 1e-7 s (memory). 5 us measured = 50x the bound.
  Roofline r = AnalyzeRoofline(1000, 1000, 5e-6, 1e12, 1e10);
  EXPECT_DOUBLE_EQ(r.bound_s, 1e-7);
  EXPECT_EQ(r.bottleneck, "overhead");
  // 5x the bound is not overhead: the dominant term names it.
  EXPECT_EQ(AnalyzeRoofline(1000, 1000, 5e-7, 1e12, 1e10).bottleneck, "memory");
  // A large kernel 50x off its bound is slow, not overhead.
  EXPECT_EQ(AnalyzeRoofline(1'000'000'000, 1000, 5e-2, 1e12, 1e10).bottleneck, "compute");
  // No rates (a nominal target without bandwidth): no division by zero.
  Roofline zero = AnalyzeRoofline(1000, 1000, 1e-3, 0, 0);
  EXPECT_EQ(zero.bound_s, 0);
  EXPECT_EQ(zero.fraction, 0);
  EXPECT_EQ(zero.bottleneck, "overhead");
}

ProfileRequest HandMadeRequest() {
  ProfileRequest r;
  r.target.name = "cpu";
  r.target.model = "Test CPU";
  r.target.cores = 2;
  r.target.peak_flops_f32 = 1e12;
  r.target.peak_flops_bf16 = 4e12;
  r.target.bandwidth_bytes_per_s = 1e11;
  r.target.rates_measured = true;
  r.flops = 2'000'000'000;
  r.bytes = 1'000'000;
  r.implementation.flags = {"-fopenmp"};
  r.compile_flags = {"-O3", "-march=native"};
  r.compiler_identity = "g++ test";
  r.maxkernel_version = "0.1.0";
  return r;
}

TEST(ProfilerRoofline, Bf16PeakBoundsBf16Work) {
  ProfileRequest r = HandMadeRequest();
  Profile f32 = ProfileFromTimes(r, {4e-3, 4e-3, 4e-3});
  EXPECT_DOUBLE_EQ(f32.roofline.peak_flops, 1e12);
  EXPECT_DOUBLE_EQ(f32.roofline.bound_s, 2e-3);
  EXPECT_DOUBLE_EQ(f32.roofline.fraction, 0.5);
  EXPECT_DOUBLE_EQ(f32.gflops, 500);
  EXPECT_DOUBLE_EQ(f32.gbytes_per_s, 0.25);
  r.compute_dtype = "bf16";
  Profile bf16 = ProfileFromTimes(r, {4e-3, 4e-3, 4e-3});
  EXPECT_DOUBLE_EQ(bf16.roofline.peak_flops, 4e12);
  EXPECT_DOUBLE_EQ(bf16.roofline.fraction, 0.125);
}

TEST(ProfilerEnvironment, RecordsWhereItWasMeasured) {
  ::unsetenv("OMP_NUM_THREADS");
  Profile p = ProfileFromTimes(HandMadeRequest(), {1e-3});
  EXPECT_EQ(p.environment.cpu_model, "Test CPU");
  EXPECT_EQ(p.environment.compiler, "g++ test");
  EXPECT_EQ(p.environment.flags, (std::vector<std::string>{"-O3", "-march=native", "-fopenmp"}));
  EXPECT_EQ(p.environment.threads, 2);  // OpenMP code on every core
  EXPECT_EQ(p.environment.maxkernel_version, "0.1.0");
  EXPECT_TRUE(p.environment.rates_measured);
  ProfileRequest serial = HandMadeRequest();
  serial.implementation.flags.clear();
  EXPECT_EQ(ProfileFromTimes(serial, {1e-3}).environment.threads, 1);
}

// ---- interleaved comparisons on a synthetic timer ---------------------------------------------

// A timer whose side `s` answers each round with `per_round` calls of the times `times(s, round)`
// gives; it counts the rounds it ran.
struct SyntheticTimer {
  std::function<double(int side, int round)> time_of;
  int calls[2] = {0, 0};
  RoundTimer timer() {
    return [this](int side) -> Result<runtime::RunOutcome> {
      runtime::RunOutcome out;
      out.status = runtime::RunStatus::kOk;
      const int round = calls[side]++;
      for (int i = 0; i < 6; ++i) out.times_s.push_back(time_of(side, round));
      return out;
    };
  }
};

TEST(ProfilerCompare, AClearWinIsFaster) {
  SyntheticTimer t{[](int side, int round) { return (side == 0 ? 2e-3 : 1e-3) * (1 + 0.01 * (round % 3)); }};
  auto c = CompareWithTimer(HandMadeRequest(), HandMadeRequest(), t.timer(), 8);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->verdict.verdict, Verdict::kFaster) << c->verdict.reason;
  EXPECT_NEAR(c->speedup_b_over_a, 2.0, 0.05);
  EXPECT_EQ(c->round_ratios.size(), 8u);
  EXPECT_EQ(c->remeasured_rounds, 0);
  EXPECT_EQ(t.calls[0], 8);
}

// The issue's .so timed at 333 us and at 38 ms across rounds: against itself it must never be a
// win or a loss, whatever the pattern of its two speeds.
TEST(ProfilerCompare, ABimodalTimerIsInconclusive) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    SyntheticTimer t{[&rng](int, int) { return rng() % 2 ? 333e-6 : 38e-3; }};
    auto c = CompareWithTimer(HandMadeRequest(), HandMadeRequest(), t.timer(), 8);
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->verdict.verdict, Verdict::kInconclusive)
        << "seed " << seed << ": " << c->verdict.reason;
  }
}

// One round hit by a burst of load is run again, and the verdict comes from the clean rounds.
TEST(ProfilerCompare, ALoneOutlierRoundIsRemeasured) {
  SyntheticTimer t{[](int side, int round) {
    if (side == 1 && round == 3) return 20e-3;  // B's 4th round: a burst
    return side == 0 ? 1.5e-3 : 1e-3;
  }};
  auto c = CompareWithTimer(HandMadeRequest(), HandMadeRequest(), t.timer(), 8);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->remeasured_rounds, 1);
  EXPECT_EQ(t.calls[1], 9);
  for (double r : c->round_ratios) EXPECT_NEAR(r, 1.5, 1e-9);
  EXPECT_EQ(c->verdict.verdict, Verdict::kFaster) << c->verdict.reason;
}

// On a loaded machine a 5% win is not enough for a verdict.
TEST(ProfilerCompare, ALoadedMachineNeedsTheWiderMargin) {
  SyntheticTimer t{[](int side, int round) { return (side == 0 ? 1.05e-3 : 1e-3) * (1 + 0.001 * (round % 2)); }};
  MachineLoad busy;
  busy.cores = 2;
  busy.busy_cores = 2;
  auto quiet = CompareWithTimer(HandMadeRequest(), HandMadeRequest(), t.timer(), 8);
  ASSERT_TRUE(quiet.ok());
  EXPECT_EQ(quiet->verdict.verdict, Verdict::kFaster) << quiet->verdict.reason;
  auto loaded = CompareWithTimer(HandMadeRequest(), HandMadeRequest(), t.timer(), 8, busy);
  ASSERT_TRUE(loaded.ok());
  EXPECT_TRUE(loaded->loaded());
  EXPECT_EQ(loaded->verdict.verdict, Verdict::kInconclusive) << loaded->verdict.reason;
  EXPECT_NE(loaded->verdict.reason.find("loaded"), std::string::npos);
}

TEST(ProfilerEnvironment, OpenMpSettingsFollowTheLoad) {
  MachineLoad quiet, busy;
  quiet.cores = busy.cores = 2;
  busy.busy_cores = 1.5;
  auto q = TimingEnvironment(quiet), b = TimingEnvironment(busy);
  auto value = [](const auto& env, const std::string& name) {
    for (const auto& [n, v] : env) {
      if (n == name) return v;
    }
    return std::string();
  };
  EXPECT_EQ(value(q, "OMP_PROC_BIND"), "close");
  EXPECT_EQ(value(b, "OMP_PROC_BIND"), "false");
  EXPECT_EQ(value(b, "OMP_WAIT_POLICY"), "passive");
}

// ---- JSON -------------------------------------------------------------------------------------

TEST(ProfilerJson, ProfileRoundTrips) {
  Profile p = ProfileFromTimes(HandMadeRequest(), {3e-3, 1e-3, 2e-3, 5e-3});
  auto back = ProfileFromJson(nlohmann::json::parse(ToJson(p).dump()));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(ToJson(*back), ToJson(p));
  EXPECT_DOUBLE_EQ(back->timing.median_s, 2.5e-3);
  EXPECT_EQ(back->timing.iterations, 4);
  EXPECT_EQ(back->roofline.bottleneck, p.roofline.bottleneck);
  EXPECT_EQ(back->environment.flags, p.environment.flags);
  EXPECT_FALSE(ProfileFromJson(nlohmann::json::parse(R"({"timing": {"median_s": "fast"}})")).ok());
  EXPECT_FALSE(ProfileFromJson(nlohmann::json::array()).ok());
}

TEST(ProfilerJson, RequestRoundTripsWithItsInputsBitForBit) {
  ProfileRequest r = HandMadeRequest();
  r.compute_dtype = "bf16";
  r.protocol.warmup = 1;
  r.protocol.min_iterations = 7;
  r.protocol.min_seconds = 0.05;
  r.library.so_path = "/tmp/x.so";
  hlo::Literal a(hlo::Shape(hlo::DType::kF32, {5}));
  for (int i = 0; i < 5; ++i) a.SetDouble(i, 0.1 * i - 0.25);
  hlo::Literal b(hlo::Shape(hlo::DType::kBF16, {2, 1}));
  b.SetDouble(0, -3.5);
  b.SetDouble(1, std::nan(""));
  r.inputs = {a, b, hlo::Literal(hlo::Shape(hlo::DType::kS32, {0}))};
  codegen::BufferSlot slot;
  slot.shape = a.shape();
  slot.bytes = 20;
  r.implementation.buffers = {slot};
  r.implementation.target = "cpu";
  auto back = ProfileRequestFromJson(nlohmann::json::parse(ToJson(r).dump()));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(ToJson(*back), ToJson(r));
  ASSERT_EQ(back->inputs.size(), 3u);
  EXPECT_TRUE(back->inputs[0] == a);
  EXPECT_EQ(std::memcmp(back->inputs[1].raw(), b.raw(), b.raw_size()), 0);  // NaN bits too
  EXPECT_EQ(back->inputs[2].raw_size(), 0u);
  EXPECT_EQ(back->protocol.min_iterations, 7);
  EXPECT_EQ(back->target.peak_flops_bf16, 4e12);
  EXPECT_TRUE(back->target.rates_measured);

  nlohmann::json bad = ToJson(r);
  bad["inputs"][0]["base64"] = "AAAA";  // 3 bytes for a 20-byte input
  EXPECT_FALSE(ProfileRequestFromJson(bad).ok());
  bad = ToJson(r);
  bad["inputs"][0]["base64"] = "!!!!";
  EXPECT_FALSE(ProfileRequestFromJson(bad).ok());
  bad = ToJson(r);
  bad["compute_dtype"] = "f8";
  EXPECT_FALSE(ProfileRequestFromJson(bad).ok());
  bad = ToJson(r);
  bad["inputs"][0]["shape"]["dims"] = {int64_t{1} << 40, int64_t{1} << 40};
  EXPECT_FALSE(ProfileRequestFromJson(bad).ok());
}

// ---- real runs ---------------------------------------------------------------------------------

const char* kTinyModule = R"(HloModule scale_add
ENTRY main {
  x = f32[256] parameter(0)
  y = f32[256] parameter(1)
  two = f32[] constant(2)
  tb = f32[256] broadcast(two), dimensions={}
  m = f32[256] multiply(x, tb)
  ROOT s = f32[256] add(m, y)
}
)";

class ProfilerRunTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/mk-profiler-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    EngineOptions options;
    options.cache_dir = dir_ + "/cache";
    engine_ = new CpuEngine(options);
  }
  static void TearDownTestSuite() {
    delete engine_;
    engine_ = nullptr;
    fs::remove_all(dir_);
  }

  // The tiny module lowered and built, with inputs, under a short protocol.
  static ProfileRequest TinyRequest() {
    ProfileRequest r;
    auto module = hlo::ParseModule(kTinyModule, "tiny.hlo");
    EXPECT_TRUE(module.ok()) << module.status().ToString();
    if (!module.ok()) return r;
    auto lowered = engine_->Lower(**module);
    EXPECT_TRUE(lowered.ok()) << lowered.status().ToString();
    if (!lowered.ok()) return r;
    auto lib = engine_->Build(lowered->impl);
    EXPECT_TRUE(lib.ok()) << lib.status().ToString();
    if (!lib.ok()) return r;
    PlanTotals totals = TotalsOf(lowered->plan);
    r.implementation = lowered->impl;
    r.library = *lib;
    r.target = engine_->target();
    r.flops = totals.flops;
    r.bytes = totals.bytes;
    r.compute_dtype = totals.compute_dtype;
    for (int p = 0; p < 2; ++p) {
      hlo::Literal in(hlo::Shape(hlo::DType::kF32, {256}));
      for (int i = 0; i < 256; ++i) in.SetDouble(i, 0.5 * i + p);
      r.inputs.push_back(std::move(in));
    }
    r.protocol.warmup = 2;
    r.protocol.min_iterations = 25;
    r.protocol.min_seconds = 0.001;
    r.protocol.max_iterations = 1000;
    return r;
  }

  static std::string dir_;
  static CpuEngine* engine_;
};
std::string ProfilerRunTest::dir_;
CpuEngine* ProfilerRunTest::engine_ = nullptr;

TEST_F(ProfilerRunTest, TimesATinyCompiledKernel) {
  ProfileRequest r = TinyRequest();
  ASSERT_FALSE(r.library.so_path.empty());
  // multiply + add on 256 elements; two 1 KiB inputs and the 4-byte constant read (the planner
  // counts a constant as a kernel input), one 1 KiB output written.
  EXPECT_EQ(r.flops, 512);
  EXPECT_EQ(r.bytes, 3 * 1024 + 4);
  EXPECT_EQ(r.compute_dtype, "f32");
  auto p = RunProfiler(r, engine_->sandbox());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_TRUE(p->ok()) << p->message;
  EXPECT_GE(p->timing.iterations, 25);
  EXPECT_LE(p->timing.iterations, 1000);
  EXPECT_GT(p->timing.min_s, 0);
  EXPECT_LE(p->timing.min_s, p->timing.p10_s);
  EXPECT_LE(p->timing.p10_s, p->timing.median_s);
  EXPECT_LE(p->timing.median_s, p->timing.p90_s);
  EXPECT_GT(p->gflops, 0);
  EXPECT_GT(p->roofline.bound_s, 0);
  EXPECT_FALSE(p->roofline.bottleneck.empty());
  EXPECT_EQ(p->environment.cpu_model, r.target.model);

  // max_iterations caps the count even when min_seconds is far away.
  r.protocol.min_iterations = 3;
  r.protocol.max_iterations = 3;
  r.protocol.min_seconds = 100;
  auto capped = RunProfiler(r, engine_->sandbox());
  ASSERT_TRUE(capped.ok()) << capped.status().ToString();
  EXPECT_EQ(capped->timing.iterations, 3);

  r.inputs.pop_back();
  EXPECT_EQ(RunProfiler(r, engine_->sandbox()).status().code(), ErrorCode::kInvalidArgument);
}

TEST_F(ProfilerRunTest, InterleavedComparisonTimesBothSides) {
  ProfileRequest a = TinyRequest();
  ASSERT_FALSE(a.library.so_path.empty());
  ProfileRequest b = a;
  auto c = CompareInterleaved(a, b, engine_->sandbox(), 3);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_TRUE(c->a.ok() && c->b.ok()) << c->a.message << c->b.message;
  EXPECT_EQ(c->rounds, 3);
  ASSERT_EQ(c->round_ratios.size(), 3u);
  // ceil(25 / 3) = 9 iterations per round and side, at least.
  EXPECT_GE(c->a.timing.iterations, 27);
  EXPECT_GE(c->b.timing.iterations, 27);
  EXPECT_GT(c->speedup_b_over_a, 0);
  EXPECT_TRUE(std::isfinite(c->speedup_b_over_a));
  EXPECT_TRUE(ToJson(*c).contains("round_ratios"));

  b.protocol.min_iterations = 5;
  EXPECT_EQ(CompareInterleaved(a, b, engine_->sandbox()).status().code(),
            ErrorCode::kInvalidArgument);
}

TEST_F(ProfilerRunTest, CrashingKernelGivesAFailedProfile) {
  ProfileRequest r = TinyRequest();
  ASSERT_FALSE(r.library.so_path.empty());
  codegen::Implementation impl = r.implementation;
  std::string& src = impl.sources[0].text;
  size_t end = src.rfind('}');
  ASSERT_NE(end, std::string::npos);
  src = "#include <csignal>\n" + src.substr(0, end) + "std::raise(SIGSEGV);\n}\n";
  auto lib = engine_->Build(impl);
  ASSERT_TRUE(lib.ok()) << lib.status().ToString();
  r.implementation = impl;
  r.library = *lib;
  auto p = RunProfiler(r, engine_->sandbox());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_FALSE(p->ok());
  EXPECT_EQ(p->status, "crashed");
  EXPECT_NE(p->message.find("SIGSEGV"), std::string::npos) << p->message;
}

// ---- the machine probe, for real but short ------------------------------------------------------

TEST_F(ProfilerRunTest, QuickProbeIsStoredAndLoadedByCpuModel) {
  auto store = store::SqliteStore::Open(dir_ + "/probe.db");
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  runtime::CompileOptions compile;
  compile.cache_dir = dir_ + "/cache";
  auto first = LoadOrProbeMachine(**store, /*force=*/false, target::ProbeOptions::Quick(), compile);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_TRUE(first->probed_now);
  const target::Target& t = first->target;
  EXPECT_TRUE(t.rates_measured);
  for (double rate : {t.peak_flops_f32, t.peak_flops_bf16, t.bandwidth_bytes_per_s}) {
    EXPECT_GT(rate, 0);
    EXPECT_TRUE(std::isfinite(rate));
  }
  EXPECT_EQ(first->record.peak_flops_bf16.has_value(), target::HostCpu().Has("avx512_bf16"));
  auto details = target::MachineProbeResultFromJson(
      nlohmann::json::parse(first->record.details_json));
  ASSERT_TRUE(details.ok()) << details.status().ToString();
  EXPECT_GE(details->threads, 1);
  EXPECT_FALSE(details->measurements.empty());

  // Stored under this CPU's model and core count: the next call loads instead of probing.
  auto stored = (*store)->LatestMachineProbe(t.model, t.cores);
  ASSERT_TRUE(stored.ok() && stored->has_value());
  EXPECT_EQ((*stored)->id, first->record.id);
  auto second = LoadOrProbeMachine(**store, false, target::ProbeOptions::Quick(), compile);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_FALSE(second->probed_now);
  EXPECT_EQ(second->record.id, first->record.id);
  EXPECT_EQ(second->target.peak_flops_f32, t.peak_flops_f32);
  EXPECT_TRUE(second->target.rates_measured);

  auto forced = LoadOrProbeMachine(**store, true, target::ProbeOptions::Quick(), compile);
  ASSERT_TRUE(forced.ok()) << forced.status().ToString();
  EXPECT_TRUE(forced->probed_now);
  EXPECT_GT(forced->record.id, first->record.id);

  // A request for the machine's real rates does not take a stored quick probe: it probes (here
  // with quick's short durations, but not marked quick), and that result then serves both kinds.
  target::ProbeOptions real = target::ProbeOptions::Quick();
  real.quick = false;
  auto measured = LoadOrProbeMachine(**store, false, real, compile);
  ASSERT_TRUE(measured.ok()) << measured.status().ToString();
  EXPECT_TRUE(measured->probed_now);
  EXPECT_GT(measured->record.id, forced->record.id);
  // Unless other work kept the cores busy around it (a shared machine, or the test suite's own
  // parallel tests): then it is stale and measured again (ProbeStaleness).
  auto probed = target::MachineProbeResultFromJson(
      nlohmann::json::parse(measured->record.details_json));
  ASSERT_TRUE(probed.ok());
  ASSERT_TRUE(probed->busy_cores_before && probed->busy_cores_after);
  const bool under_load = std::max(*probed->busy_cores_before, *probed->busy_cores_after) >
                          kProbeMaxBusyFraction * probed->cores;
  auto again = LoadOrProbeMachine(**store, false, real, compile);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->probed_now, under_load);
  if (under_load) return;
  EXPECT_EQ(again->record.id, measured->record.id);
  auto quick_again = LoadOrProbeMachine(**store, false, target::ProbeOptions::Quick(), compile);
  ASSERT_TRUE(quick_again.ok()) << quick_again.status().ToString();
  EXPECT_FALSE(quick_again->probed_now);
  EXPECT_EQ(quick_again->record.id, measured->record.id);
}

// The rules that make a stored probe stale, one at a time.
TEST(ProbeStalenessTest, EachChangeOfMachineMakesAProbeStale) {
  target::Target host;
  host.model = "AMD EPYC";
  host.cores = 2;
  host.isa_level = "avx2";
  target::MachineProbeResult p;
  p.cpu_model = "AMD EPYC";
  p.cores = 2;
  p.isa_level = "avx2";
  p.boot_id = "boot-1";
  p.busy_cores_before = 0.1;
  p.busy_cores_after = 0.2;
  EXPECT_EQ(ProbeStaleness(p, host, "boot-1"), "");
  auto stale = [&](target::MachineProbeResult q, const std::string& boot, const char* word) {
    const std::string why = ProbeStaleness(q, host, boot);
    EXPECT_NE(why.find(word), std::string::npos) << "'" << why << "' should mention " << word;
  };
  target::MachineProbeResult q = p;
  q.cpu_model = "Intel Xeon";
  stale(q, "boot-1", "Intel Xeon");
  q = p;
  q.cores = 4;
  stale(q, "boot-1", "4 cores");
  q = p;
  q.isa_level = "avx512bf16";
  stale(q, "boot-1", "avx512bf16");
  stale(p, "boot-2", "rebooted");
  q = p;
  q.busy_cores_after = 1.5;
  stale(q, "boot-1", "busy");
  q.quick = true;  // a quick probe's numbers mean nothing anyway: load does not matter
  EXPECT_EQ(ProbeStaleness(q, host, "boot-1"), "");
  q = p;
  q.boot_id.clear();
  stale(q, "boot-1", "predates");
}

}  // namespace
}  // namespace mk::agents
