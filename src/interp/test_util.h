// Helpers for interpreter tests: build literals from values and run a module written as HLO text.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hlo/parser.h"
#include "interp/interpreter.h"

namespace mk::interp::testing {

// An array literal of `shape` (HLO text, e.g. "f32[2,2]") with the given row-major values,
// rounded to the element type.
inline hlo::Literal MakeLiteral(hlo::DType dtype, std::vector<int64_t> dims,
                                const std::vector<double>& values) {
  hlo::Literal lit(hlo::Shape(dtype, std::move(dims)));
  EXPECT_EQ(static_cast<int64_t>(values.size()), lit.num_elements());
  for (int64_t i = 0; i < lit.num_elements() && i < static_cast<int64_t>(values.size()); ++i) {
    lit.SetDouble(i, values[static_cast<size_t>(i)]);
  }
  return lit;
}

inline std::vector<double> Values(const hlo::Literal& lit) {
  std::vector<double> out;
  for (int64_t i = 0; i < lit.num_elements(); ++i) out.push_back(lit.GetDouble(i));
  return out;
}

// Parses `hlo_text` and evaluates its entry on `args`. Fails the test on any error.
inline hlo::Literal Run(const std::string& hlo_text, const std::vector<hlo::Literal>& args,
                        const InterpreterOptions& options = {}) {
  auto module = hlo::ParseModule(hlo_text, "test.hlo");
  EXPECT_TRUE(module.ok()) << module.status().ToString();
  if (!module.ok()) return hlo::Literal();
  auto result = Evaluate(**module, args, options);
  EXPECT_TRUE(result.ok()) << result.status().ToString();
  if (!result.ok()) return hlo::Literal();
  return std::move(result).value();
}

// Like Run but returns the status, for tests of errors.
inline Result<hlo::Literal> TryRun(const std::string& hlo_text,
                                   const std::vector<hlo::Literal>& args,
                                   const InterpreterOptions& options = {}) {
  MK_ASSIGN_OR_RETURN(auto module, hlo::ParseModule(hlo_text, "test.hlo"));
  return Evaluate(*module, args, options);
}

}  // namespace mk::interp::testing
