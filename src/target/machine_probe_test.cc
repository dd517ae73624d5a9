// The machine probe's pure half: generated sources, work accounting, calibration and the
// result's JSON, driven by a fake runner whose "hardware" has known rates. The real probe
// (compiled, sandboxed, stored) is exercised in agents/profiler_test.cc.
#include "target/machine_probe.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

namespace mk::target {
namespace {

Target Avx512Host(bool bf16) {
  Target t;
  t.model = "Test CPU";
  t.cores = 2;
  t.isa = {"avx2", "fma", "avx512f", "avx512bw", "avx512vl"};
  if (bf16) t.isa.push_back("avx512_bf16");
  t.vector_bytes = 64;
  t.l3_bytes = 32 << 20;
  return t;
}

// Simulates a machine: FMA at `flops_per_s` f32, `bf16_per_s` for dot_bf16, `bytes_per_s`
// streaming, with a fixed 1 ms cost per call; recognizes the kernel from its source header.
class FakeRunner : public ProbeKernelRunner {
 public:
  FakeRunner(const Target& host, const ProbeOptions& options) : host_(host), options_(options) {}
  Result<ProbeKernelRun> Run(const std::string& source, const std::vector<std::string>& flags,
                             int64_t units, int warmup, int repetitions,
                             double timeout_s) override {
    EXPECT_EQ(flags, ProbeKernelFlags());
    EXPECT_GE(warmup, 1);  // the stream kernel allocates in its first call
    EXPECT_GT(timeout_s, 0);
    ProbeKernelKind kind = source.find("probe: fma_f32") != std::string::npos
                               ? ProbeKernelKind::kFmaF32
                           : source.find("probe: dot_bf16") != std::string::npos
                               ? ProbeKernelKind::kDotBf16
                           : source.find("probe: amx_bf16_fed ") != std::string::npos
                               ? ProbeKernelKind::kAmxBf16Fed
                           : source.find("probe: amx_bf16 ") != std::string::npos
                               ? ProbeKernelKind::kAmxBf16
                               : ProbeKernelKind::kStreamRead;
    ++requests[ProbeKernelName(kind)];
    const bool tiles = kind == ProbeKernelKind::kAmxBf16 || kind == ProbeKernelKind::kAmxBf16Fed;
    if (tiles && (amx_refused || (fed_fails && kind == ProbeKernelKind::kAmxBf16Fed))) {
      ProbeKernelRun refused;
      refused.threads = -2;
      refused.times_s.assign(static_cast<size_t>(repetitions), 1e-3);
      return refused;
    }
    double rate = kind == ProbeKernelKind::kFmaF32    ? 700e9
                  : kind == ProbeKernelKind::kDotBf16 ? 900e9
                  : kind == ProbeKernelKind::kAmxBf16 ? 3000e9
                  : kind == ProbeKernelKind::kAmxBf16Fed ? 1500e9
                                                      : 40e9;
    double work = ProbeWorkPerCall(kind, host_, units, kThreads, options_,
                                   StreamBufferBytes(host_, options_));
    ProbeKernelRun run;
    run.threads = kThreads;
    for (int i = 0; i < repetitions; ++i) {
      // The first call is the slowest (as on a busy machine); the best is the model's.
      run.times_s.push_back((work / rate + 1e-6) * (i == 0 ? 1.5 : 1.0));
    }
    return run;
  }
  std::string CompilerIdentity() override { return "fake c++ 1.0"; }

  static constexpr int kThreads = 2;
  std::map<std::string, int> requests;
  bool amx_refused = false;  // the OS refuses the tile state
  bool fed_fails = false;    // only the fed tile probe fails

 private:
  Target host_;
  ProbeOptions options_;
};

TEST(MachineProbe, SourcesFollowTheIsaAndTheKernelAbi) {
  ProbeOptions options;
  Target host = Avx512Host(true);
  auto fma = ProbeKernelSource(ProbeKernelKind::kFmaF32, host, options, 0);
  ASSERT_TRUE(fma.ok()) << fma.status().ToString();
  EXPECT_NE(fma->find("extern \"C\" int mk_abi_version(void) { return 1; }"), std::string::npos);
  EXPECT_NE(fma->find("extern \"C\" void mk_kernel(void** buffers)"), std::string::npos);
  EXPECT_NE(fma->find("_mm512_fmadd_ps"), std::string::npos);
  EXPECT_NE(fma->find("acc15 = MKV_FMA(acc15, a, b);"), std::string::npos);  // 16 chains
  EXPECT_EQ(fma->find("acc16"), std::string::npos);

  auto bf16 = ProbeKernelSource(ProbeKernelKind::kDotBf16, host, options, 0);
  ASSERT_TRUE(bf16.ok());
  EXPECT_NE(bf16->find("_mm512_dpbf16_ps"), std::string::npos);
  auto stream = ProbeKernelSource(ProbeKernelKind::kStreamRead, host, options, 1 << 20);
  ASSERT_TRUE(stream.ok());
  EXPECT_NE(stream->find("kVectors = 1048576LL"), std::string::npos);

  Target avx2 = host;
  avx2.isa = {"avx2", "fma"};
  auto fma256 = ProbeKernelSource(ProbeKernelKind::kFmaF32, avx2, options, 0);
  ASSERT_TRUE(fma256.ok());
  EXPECT_NE(fma256->find("_mm256_fmadd_ps"), std::string::npos);
  EXPECT_EQ(ProbeKernelSource(ProbeKernelKind::kDotBf16, avx2, options, 0).status().code(),
            ErrorCode::kUnimplemented);
  Target sse = host;
  sse.isa = {};
  EXPECT_FALSE(ProbeKernelSource(ProbeKernelKind::kFmaF32, sse, options, 0).ok());
  options.accumulators = 40;  // more chains than vector registers
  EXPECT_FALSE(ProbeKernelSource(ProbeKernelKind::kFmaF32, host, options, 0).ok());
}

// Whether one of `notes` contains `text`.
bool SaysSomewhere(const std::vector<std::string>& notes, const std::string& text) {
  for (const std::string& n : notes) {
    if (n.find(text) != std::string::npos) return true;
  }
  return false;
}

// Where the CPU has AMX, the bf16 GEMM runs on tiles: the bf16 peak is the tiles' rate. A
// refused tile state keeps the vdpbf16ps rate and says so; a CPU without AMX is not asked.
TEST(MachineProbe, Bf16PeakIsTheAmxTilesRateWhereTheyExist) {
  Target host = Avx512Host(true);
  host.isa.push_back("amx_tile");
  host.isa.push_back("amx_bf16");
  ProbeOptions options;
  options.seconds_per_call = 0.05;
  options.repetitions = 2;
  options.stream_bytes = 1 << 20;
  auto amx = ProbeKernelSource(ProbeKernelKind::kAmxBf16, host, options, 0);
  ASSERT_TRUE(amx.ok()) << amx.status().ToString();
  EXPECT_NE(amx->find("_tile_dpbf16ps(3, 5, 7);"), std::string::npos);
  EXPECT_NE(amx->find("ARCH_REQ_XCOMP_PERM"), std::string::npos);
  EXPECT_DOUBLE_EQ(ProbeWorkPerCall(ProbeKernelKind::kAmxBf16, host, 10, 2, options, 0),
                   10.0 * 2 * 4 * 16 * 16 * 32 * 2);
  // The fed loop: A and B slivers from memory at a tile-row stride, C loaded and stored per pair.
  auto fed = ProbeKernelSource(ProbeKernelKind::kAmxBf16Fed, host, options, 0);
  ASSERT_TRUE(fed.ok()) << fed.status().ToString();
  EXPECT_NE(fed->find("probe: amx_bf16_fed "), std::string::npos);
  EXPECT_NE(fed->find("_tile_loadd(4, as + k * 1024, 64);"), std::string::npos);
  EXPECT_NE(fed->find("_tile_stored(3, cs + 528, 128);"), std::string::npos);
  EXPECT_NE(fed->find("kSlivers = 8, kSteps = 8;"), std::string::npos);
  // Per trip 8 B slivers x 8 A slivers x 8 steps x 4 tdpbf16ps.
  EXPECT_DOUBLE_EQ(ProbeWorkPerCall(ProbeKernelKind::kAmxBf16Fed, host, 10, 2, options, 0),
                   10.0 * 2 * 8 * 8 * 8 * 4 * 16 * 16 * 32 * 2);
  {
    FakeRunner runner(host, options);
    auto result = RunMachineProbe(host, runner, options);
    ASSERT_TRUE(result.ok()) << result.status().ToString();
    ASSERT_TRUE(result->peak_flops_bf16.has_value());
    // The peak is the instruction's rate; the fed rate is recorded beside it.
    EXPECT_NEAR(*result->peak_flops_bf16 / 3000e9, 1, 1e-3);
    EXPECT_GE(runner.requests["amx_bf16"], 1);
    EXPECT_GE(runner.requests["amx_bf16_fed"], 2) << "calibration, then measurement";
    const ProbeMeasurement* m = nullptr;
    for (const ProbeMeasurement& x : result->measurements) {
      if (x.kernel == "amx_bf16_fed") m = &x;
    }
    ASSERT_NE(m, nullptr);
    EXPECT_NEAR(m->rate / 1500e9, 1, 1e-3);
  }
  {
    // A failing fed probe costs its line, not the probe.
    FakeRunner runner(host, options);
    runner.fed_fails = true;
    auto result = RunMachineProbe(host, runner, options);
    ASSERT_TRUE(result.ok()) << result.status().ToString();
    EXPECT_NEAR(*result->peak_flops_bf16 / 3000e9, 1, 1e-3);
    EXPECT_TRUE(SaysSomewhere(result->notes, "fed from the caches not measured"));
    for (const ProbeMeasurement& x : result->measurements) EXPECT_NE(x.kernel, "amx_bf16_fed");
  }
  {
    FakeRunner runner(host, options);
    runner.amx_refused = true;
    auto result = RunMachineProbe(host, runner, options);
    ASSERT_TRUE(result.ok()) << result.status().ToString();
    EXPECT_NEAR(*result->peak_flops_bf16 / 900e9, 1, 1e-3);
    EXPECT_TRUE(SaysSomewhere(result->notes, "AMX not measured"));
  }
  Target no_amx = Avx512Host(true);
  EXPECT_EQ(ProbeKernelSource(ProbeKernelKind::kAmxBf16, no_amx, options, 0).status().code(),
            ErrorCode::kUnimplemented);
  FakeRunner runner(no_amx, options);
  ASSERT_TRUE(RunMachineProbe(no_amx, runner, options).ok());
  EXPECT_EQ(runner.requests.count("amx_bf16"), 0u);
  EXPECT_EQ(runner.requests.count("amx_bf16_fed"), 0u);
  EXPECT_EQ(ProbeKernelSource(ProbeKernelKind::kAmxBf16Fed, no_amx, options, 0).status().code(),
            ErrorCode::kUnimplemented);
}

TEST(MachineProbe, WorkPerCallCountsFlopsAndBytes) {
  ProbeOptions options;  // 16 accumulators
  Target host = Avx512Host(true);
  // 1000 trips x 16 chains x 16 lanes x 2 flops x 2 threads.
  EXPECT_DOUBLE_EQ(ProbeWorkPerCall(ProbeKernelKind::kFmaF32, host, 1000, 2, options, 0),
                   1000.0 * 16 * 16 * 2 * 2);
  // vdpbf16ps: 16 lanes x 2 pairs x (mul + add) = 64 flops per instruction.
  EXPECT_DOUBLE_EQ(ProbeWorkPerCall(ProbeKernelKind::kDotBf16, host, 1000, 2, options, 0),
                   1000.0 * 16 * 64 * 2);
  // Passes x buffer, however many threads share it.
  EXPECT_DOUBLE_EQ(ProbeWorkPerCall(ProbeKernelKind::kStreamRead, host, 3, 7, options, 1 << 20),
                   3.0 * (1 << 20));
  Target avx2 = host;
  avx2.isa = {"avx2", "fma"};
  EXPECT_DOUBLE_EQ(ProbeWorkPerCall(ProbeKernelKind::kFmaF32, avx2, 10, 1, options, 0),
                   10.0 * 16 * 8 * 2);
}

TEST(MachineProbe, StreamBufferIsMuchLargerThanL3WithinLimits) {
  Target host = Avx512Host(false);
  ProbeOptions options;
  host.l3_bytes = 32 << 20;
  EXPECT_EQ(StreamBufferBytes(host, options), int64_t{256} << 20);  // 4 x 32 MiB = 128 -> floor
  host.l3_bytes = 128 << 20;
  EXPECT_EQ(StreamBufferBytes(host, options), int64_t{512} << 20);
  host.l3_bytes = int64_t{320} << 20;
  EXPECT_EQ(StreamBufferBytes(host, options), int64_t{1} << 30);  // capped
  options.stream_bytes = 5000;
  EXPECT_EQ(StreamBufferBytes(host, options), 4096);
}

TEST(MachineProbe, CalibratesAndKeepsTheBestRepetition) {
  Target host = Avx512Host(true);
  ProbeOptions options;
  options.seconds_per_call = 0.1;
  options.repetitions = 3;
  options.stream_bytes = 64 << 20;
  FakeRunner runner(host, options);
  auto result = RunMachineProbe(host, runner, options);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  // The fake's calls cost work/rate + 1 us; calibrated calls are ~0.1 s, so the 1 us is noise.
  EXPECT_NEAR(result->peak_flops_f32 / 700e9, 1, 1e-3);
  ASSERT_TRUE(result->peak_flops_bf16.has_value());
  EXPECT_NEAR(*result->peak_flops_bf16 / 900e9, 1, 1e-3);
  EXPECT_NEAR(result->bandwidth_bytes_per_s / 40e9, 1, 1e-3);
  EXPECT_EQ(result->cpu_model, "Test CPU");
  EXPECT_EQ(result->cores, 2);
  EXPECT_EQ(result->threads, 2);
  EXPECT_EQ(result->compiler, "fake c++ 1.0");
  EXPECT_EQ(result->stream_bytes, 64 << 20);
  ASSERT_EQ(result->measurements.size(), 3u);
  for (const ProbeMeasurement& m : result->measurements) {
    EXPECT_EQ(m.repetitions, 3);
    EXPECT_NEAR(m.best_seconds, 0.1, 0.05) << m.kernel;  // calibrated to the target duration
    EXPECT_GT(m.median_seconds, m.best_seconds * 0.99);
    EXPECT_GE(runner.requests[m.kernel], 2) << "calibration, then measurement";
  }
  // The 64 MiB buffer is larger than 2 x 32 MiB L3: no warning.
  EXPECT_TRUE(result->notes.empty());
}

TEST(MachineProbe, Bf16IsReportedAbsentWithoutTheInstruction) {
  Target host = Avx512Host(false);
  ProbeOptions options = ProbeOptions::Quick();
  FakeRunner runner(host, options);
  auto result = RunMachineProbe(host, runner, options);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_FALSE(result->peak_flops_bf16.has_value());
  EXPECT_EQ(runner.requests.count("dot_bf16"), 0u);
  ASSERT_FALSE(result->notes.empty());
  EXPECT_NE(result->notes[0].find("bf16: absent"), std::string::npos);
  // Quick's 4 MiB buffer is smaller than the L3: the result says so, and it is marked quick.
  EXPECT_NE(result->notes.back().find("not much larger than the L3"), std::string::npos);
  EXPECT_TRUE(result->quick);

  Target measured = WithMeasuredRates(host, 700e9, std::nullopt, 40e9);
  EXPECT_TRUE(measured.rates_measured);
  EXPECT_EQ(measured.peak_flops_bf16, 700e9);  // bf16 runs on the f32 units
  EXPECT_EQ(measured.bandwidth_bytes_per_s, 40e9);
}

// A runner whose kernel reports no threads (e.g. never wrote its output): an error, not a rate.
class BrokenRunner : public ProbeKernelRunner {
 public:
  Result<ProbeKernelRun> Run(const std::string&, const std::vector<std::string>&, int64_t, int,
                             int repetitions, double) override {
    ProbeKernelRun run;
    run.threads = threads;
    run.times_s.assign(static_cast<size_t>(repetitions), time);
    return run;
  }
  int threads = 0;
  double time = 0.1;
};

TEST(MachineProbe, BadRunsAreErrors) {
  Target host = Avx512Host(false);
  BrokenRunner runner;
  EXPECT_FALSE(RunMachineProbe(host, runner, ProbeOptions::Quick()).ok());
  runner.threads = 2;
  runner.time = std::nan("");
  EXPECT_FALSE(RunMachineProbe(host, runner, ProbeOptions::Quick()).ok());
  runner.time = 0.1;
  runner.threads = -1;
  auto oom = RunMachineProbe(host, runner, ProbeOptions::Quick());
  ASSERT_FALSE(oom.ok());
  EXPECT_NE(oom.status().message().find("allocate"), std::string::npos);
  ProbeOptions bad = ProbeOptions::Quick();
  bad.repetitions = 0;
  runner.threads = 2;
  EXPECT_EQ(RunMachineProbe(host, runner, bad).status().code(), ErrorCode::kInvalidArgument);
}

TEST(MachineProbe, ResultJsonRoundTrips) {
  MachineProbeResult r;
  r.cpu_model = "AMD EPYC";
  r.cores = 2;
  r.threads = 2;
  r.peak_flops_f32 = 744e9;
  r.peak_flops_bf16 = 919e9;
  r.bandwidth_bytes_per_s = 35.5e9;
  r.stream_bytes = 1 << 30;
  r.compiler = "g++ 12";
  r.measurements.push_back({"fma_f32", 744e9, 0.25, 0.26, 123456, 2, 4});
  r.notes = {"a note"};
  auto back = MachineProbeResultFromJson(nlohmann::json::parse(ToJson(r).dump()));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->cpu_model, "AMD EPYC");
  EXPECT_EQ(back->threads, 2);
  EXPECT_EQ(back->peak_flops_f32, 744e9);
  EXPECT_EQ(*back->peak_flops_bf16, 919e9);
  EXPECT_EQ(back->bandwidth_bytes_per_s, 35.5e9);
  EXPECT_EQ(back->stream_bytes, 1 << 30);
  ASSERT_EQ(back->measurements.size(), 1u);
  EXPECT_EQ(back->measurements[0].kernel, "fma_f32");
  EXPECT_EQ(back->measurements[0].units, 123456);
  EXPECT_EQ(back->notes, r.notes);
  EXPECT_FALSE(back->quick);
  r.quick = true;
  auto quick = MachineProbeResultFromJson(ToJson(r));
  ASSERT_TRUE(quick.ok());
  EXPECT_TRUE(quick->quick);

  r.peak_flops_bf16.reset();
  auto no_bf16 = MachineProbeResultFromJson(ToJson(r));
  ASSERT_TRUE(no_bf16.ok());
  EXPECT_FALSE(no_bf16->peak_flops_bf16.has_value());
  EXPECT_FALSE(MachineProbeResultFromJson(nlohmann::json::parse(R"({"cpu_model": 3})")).ok());
  EXPECT_FALSE(MachineProbeResultFromJson(nlohmann::json::array()).ok());
}

}  // namespace
}  // namespace mk::target
