// Shared by the Pallas emitter tests: a TPU target built by hand (until TargetByName knows
// TPUs), emitting a module, running kernel.py through the Python bridge in TPU interpret mode
// (python/maxkernel_jax/pallas_check.py) and comparing with the reference interpreter.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/fusion_plan.h"
#include "codegen/cpu/test_harness.h"
#include "codegen/pallas/pallas_emitter.h"
#include "hlo/call_inliner.h"
#include "hlo/literal_npy.h"
#include "hlo/parser.h"
#include "interp/interpreter.h"
#include "support/subprocess.h"
#include "task/bridge.h"

namespace mk::codegen::pallas::testing {

inline target::Target TpuV5e(int64_t vmem_bytes = int64_t{128} << 20) {
  target::Target t;
  t.name = "tpu-v5e";
  t.kind = target::TargetKind::kTpu;
  t.model = "TPU v5e";
  t.vmem_bytes = vmem_bytes;
  t.mxu_dim = 128;
  return t;
}

// Empty when jax with Pallas TPU is importable by the bridge's Python; else why not.
inline std::string JaxMissing() {
  static const std::string why = [] {
    auto r = RunProcess({task::BridgePython(), "-c", "import jax.experimental.pallas.tpu"}, 120);
    if (!r.ok()) return r.status().ToString();
    if (r->exit_code != 0) return "jax (with Pallas TPU) is not importable: " + r->err;
    return std::string();
  }();
  return why;
}

// Skips the test (with the reason) where the bridge's Python has no jax with Pallas TPU.
#define MK_SKIP_WITHOUT_JAX()                                                        \
  do {                                                                               \
    if (std::string why = ::mk::codegen::pallas::testing::JaxMissing(); !why.empty()) { \
      GTEST_SKIP() << why;                                                           \
    }                                                                                \
  } while (0)

inline std::unique_ptr<hlo::Module> Parse(const std::string& text) {
  auto m = hlo::ParseModule(text, "test.hlo");
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : nullptr;
}

// Initial schedules, with `overrides` (parameter -> value) applied to every kernel that has the
// parameter.
// A suite workload's ci module (bench/jaxbench/<id>/ci), calls inlined as the planner sees it.
inline std::unique_ptr<hlo::Module> SuiteTask(const std::string& id) {
  const auto path = std::filesystem::path(MK_SOURCE_DIR) / "bench" / "jaxbench" / id / "ci" / "module.hlo";
  auto parsed = hlo::ParseModuleFile(path.string());
  EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
  if (!parsed.ok()) return nullptr;
  auto m = hlo::InlineCalls(**parsed);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(*m) : nullptr;
}

inline space::Candidate CandidateFor(const analysis::FusionPlan& plan, const target::Target& t,
                                     const std::map<std::string, int64_t>& overrides = {}) {
  PallasEmitter e;
  space::Candidate c;
  for (const auto& k : plan.kernels) {
    space::KernelSpace s = e.SpaceFor(k, t);
    space::Schedule sch = s.Initial();
    for (const auto& p : s.params) {
      auto it = overrides.find(p.name);
      if (it != overrides.end()) sch.values[p.name] = it->second;
    }
    c.kernels.push_back(sch);
  }
  return c;
}

struct PallasRun {
  nlohmann::json report;        // pallas_check's JSON
  nlohmann::json kernel_map;    // the emitter's kernel_map.json
  std::string source;           // kernel.py
  std::vector<hlo::Literal> outputs;
  std::vector<hlo::Literal> expected;  // the reference interpreter's
};

// Emits `m` for a hand-made v5e, runs it in interpret mode on seeded inputs, and evaluates the
// reference. `fallback`: kernel id -> its kGlueFallbackKey level. Test failures (and an empty
// report) on any error.
inline PallasRun EmitAndRun(const hlo::Module& m, uint32_t seed,
                            const std::map<std::string, int64_t>& overrides = {},
                            const std::map<size_t, int64_t>& fallback = {}) {
  PallasRun run;
  auto plan = analysis::PlanFusion(m);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  if (!plan.ok()) return run;
  const target::Target t = TpuV5e();
  PallasEmitter e;
  space::Candidate c = CandidateFor(*plan, t, overrides);
  for (const auto& [k, level] : fallback) {
    if (k < c.kernels.size()) c.kernels[k].values[kGlueFallbackKey] = level;
  }
  auto impl = e.Emit(*plan, c, t);
  EXPECT_TRUE(impl.ok()) << impl.status().ToString();
  if (!impl.ok()) return run;
  const std::string dir = cpu::testing::MakeTempDir("mk-pallas");
  for (const auto& s : impl->sources) {
    std::ofstream(dir + "/" + s.name) << s.text;
    if (s.name == "kernel.py") run.source = s.text;
    if (s.name == "kernel_map.json") run.kernel_map = nlohmann::json::parse(s.text);
  }
  const auto args = cpu::testing::RandomArgs(m, seed);
  std::vector<std::string> argv = {"pallas-run", "--module", dir + "/kernel.py", "--out",
                                   dir + "/out", "--json", "--inputs"};
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string p = dir + "/in" + std::to_string(i) + ".npy";
    EXPECT_TRUE(hlo::WriteLiteralNpy(p, args[i]).ok());
    argv.push_back(p);
  }
  auto r = task::RunBridge(argv, 300);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return run;
  EXPECT_EQ(r->exit_code, 0) << r->err;
  try {
    run.report = nlohmann::json::parse(r->out);
  } catch (const nlohmann::json::exception& ex) {
    ADD_FAILURE() << "no JSON report: " << ex.what() << "\nstdout: " << r->out << "\nstderr: " << r->err;
    return run;
  }
  auto want = interp::Evaluate(m, args);
  EXPECT_TRUE(want.ok()) << want.status().ToString();
  if (!want.ok()) return run;
  if (want->shape().is_tuple()) run.expected = want->elements();
  else run.expected.push_back(std::move(*want));
  for (size_t o = 0; o < run.expected.size() && run.report.value("ok", false); ++o) {
    auto got = hlo::ReadLiteralNpy(dir + "/out/out" + std::to_string(o) + ".npy",
                                   run.expected[o].shape(), "output " + std::to_string(o));
    EXPECT_TRUE(got.ok()) << got.status().ToString();
    if (!got.ok()) return run;
    run.outputs.push_back(std::move(*got));
  }
  std::filesystem::remove_all(dir);
  return run;
}

// The kernel map's entries that run where `runs` says ("pallas" or "glue").
inline std::vector<nlohmann::json> KernelsRunning(const nlohmann::json& map, const std::string& runs) {
  std::vector<nlohmann::json> out;
  for (const auto& k : map.at("kernels")) {
    if (k.at("runs") == runs) out.push_back(k);
  }
  return out;
}

}  // namespace mk::codegen::pallas::testing
