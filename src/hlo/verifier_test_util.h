// Helpers for the verifier / shape-inference tests: parse HLO text as "test.hlo", verify it, and
// check where an error is reported.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "hlo/parser.h"
#include "hlo/verifier.h"

namespace mk::hlo::testing {

inline std::unique_ptr<Module> ParseForTest(const std::string& text) {
  auto module = ParseModule(text, "test.hlo");
  EXPECT_TRUE(module.ok()) << module.status().ToString();
  if (!module.ok()) return nullptr;
  return std::move(module).value();
}

// Verifies the module and returns the inferred shape of the ENTRY root (without layout), or a
// description of what went wrong (which never equals an expected shape).
inline std::string VerifiedRootShape(const std::string& text) {
  std::unique_ptr<Module> module = ParseForTest(text);
  if (!module) return "<parse error>";
  Status status = VerifyModule(*module);
  EXPECT_TRUE(status.ok()) << status.ToString();
  if (!status.ok()) return "<verify error>";
  Result<Shape> inferred = InferShape(*module->entry()->root());
  if (!inferred.ok()) return inferred.status().ToString();
  return inferred->ToString(/*print_layout=*/false);
}

// Expects verification to fail with kInvalidArgument at the first character of `marker` in
// `text` (an instruction name such as "%bad"), with a message containing `message_part`.
inline void ExpectVerifyError(const std::string& text, const std::string& marker,
                              const std::string& message_part) {
  std::unique_ptr<Module> module = ParseForTest(text);
  if (!module) return;
  Status status = VerifyModule(*module);
  ASSERT_FALSE(status.ok()) << "expected an error containing: " << message_part;
  EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(status.message().find(message_part), std::string::npos) << status.ToString();
  size_t pos = text.find(marker);
  ASSERT_NE(pos, std::string::npos) << "marker not in text: " << marker;
  int line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < pos; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  int col = static_cast<int>(pos - line_start) + 1;
  EXPECT_EQ(status.loc().file, "test.hlo");
  EXPECT_EQ(status.loc().line, line) << status.ToString();
  EXPECT_EQ(status.loc().col, col) << status.ToString();
}

}  // namespace mk::hlo::testing
