// Shared by the CPU emitter tests: random inputs for a module's entry parameters, a private
// compile cache directory per test suite, emitting and running a plan under given contraction
// parameters, and comparing its outputs.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "analysis/fusion_plan.h"
#include "codegen/cpu/cpu_emitter.h"
#include "hlo/literal.h"
#include "hlo/module.h"
#include "runtime/cpu_executor.h"
#include "target/target.h"

namespace mk::codegen::cpu::testing {

// Normal floats, random preds, small integers (unsigned ones in [0, 256)), full-range u64.
inline std::vector<hlo::Literal> RandomArgs(const hlo::Module& m, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<hlo::Literal> args;
  for (const hlo::Instruction* p : m.entry()->parameters()) {
    hlo::Literal lit(p->shape);
    for (int64_t i = 0; i < lit.num_elements(); ++i) {
      if (hlo::IsFloat(lit.dtype())) lit.SetDouble(i, normal(rng));
      else if (lit.dtype() == hlo::DType::kPred) lit.SetInt64(i, rng() & 1);
      else if (lit.dtype() == hlo::DType::kU64) lit.SetUInt64(i, (uint64_t{rng()} << 32) | rng());
      else if (hlo::IsUnsignedInt(lit.dtype())) lit.SetInt64(i, static_cast<int64_t>(rng() % 256));
      else lit.SetInt64(i, static_cast<int64_t>(rng() % 9) - 3);
    }
    args.push_back(std::move(lit));
  }
  return args;
}

// A fresh directory under /tmp named after `prefix`; empty (and a test failure) on error.
inline std::string MakeTempDir(const std::string& prefix) {
  std::string tmpl = "/tmp/" + prefix + "-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp failed for " << tmpl;
    return "";
  }
  return tmpl;
}

// `plan` emitted for this machine with `params` overriding every contraction kernel's initial
// schedule.
inline Result<Implementation> EmitWithContractionParams(
    const analysis::FusionPlan& plan, const std::map<std::string, int64_t>& params) {
  CpuEmitter emitter;
  const target::Target target = target::HostCpu();
  space::Candidate candidate;
  for (const auto& k : plan.kernels) {
    space::Schedule s = emitter.SpaceFor(k, target).Initial();
    if (k.family == analysis::KernelFamily::kContraction) {
      for (const auto& [name, v] : params) s.values[name] = v;
    }
    candidate.kernels.push_back(s);
  }
  return emitter.Emit(plan, candidate, target);
}

// `plan` emitted as EmitWithContractionParams does, built (compile cache in `cache_dir`) and
// run on `args` with poisoned scratch: its outputs, and in `source` the generated text. Empty
// (and a test failure) on error.
inline std::vector<hlo::Literal> RunWithContractionParams(
    const analysis::FusionPlan& plan, const std::vector<hlo::Literal>& args,
    const std::map<std::string, int64_t>& params, const std::string& cache_dir,
    std::string* source) {
  auto impl = EmitWithContractionParams(plan, params);
  EXPECT_TRUE(impl.ok()) << impl.status().ToString();
  if (!impl.ok()) return {};
  *source = impl->sources[0].text;
  runtime::CompileOptions copts;
  copts.cache_dir = cache_dir;
  runtime::CompilerDriver compiler(copts);
  runtime::SandboxRunner sandbox;
  runtime::CpuExecutor exec(compiler, sandbox);
  auto lib = exec.Build(*impl);
  EXPECT_TRUE(lib.ok()) << lib.status().ToString();
  if (!lib.ok()) return {};
  auto got = exec.Run(*lib, *impl, args, runtime::ExecuteOptions{.poison_scratch = true});
  EXPECT_TRUE(got.ok()) << got.status().ToString();
  if (!got.ok()) return {};
  EXPECT_TRUE(got->outcome.ok()) << got->outcome.message;
  return got->outputs;
}

// How many times `what` occurs in `text` (a generated source's loops, calls ...).
inline size_t Occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Whether `got` has `want`'s outputs, shape for shape, each element within
// rel_tol * max(1, |want|) of want's; the message names the first that is not.
inline ::testing::AssertionResult OutputsNear(const std::vector<hlo::Literal>& got,
                                              const std::vector<hlo::Literal>& want,
                                              double rel_tol) {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure() << got.size() << " outputs, want " << want.size();
  }
  for (size_t o = 0; o < want.size(); ++o) {
    if (!got[o].shape().SameAs(want[o].shape())) {
      return ::testing::AssertionFailure() << "output " << o << ": shape differs";
    }
    for (int64_t i = 0; i < want[o].num_elements(); ++i) {
      const double g = got[o].GetDouble(i), w = want[o].GetDouble(i);
      if (!(std::fabs(g - w) <= rel_tol * std::max(1.0, std::fabs(w)))) {
        return ::testing::AssertionFailure()
               << "output " << o << " element " << i << ": got " << g << ", want " << w;
      }
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace mk::codegen::cpu::testing
