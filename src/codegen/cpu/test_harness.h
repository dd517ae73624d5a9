// Shared by the CPU emitter tests: random inputs for a module's entry parameters, and a private
// compile cache directory per test suite.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "hlo/literal.h"
#include "hlo/module.h"

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

}  // namespace mk::codegen::cpu::testing
