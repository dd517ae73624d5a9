// libFuzzer target for the HLO text parser (tests/fuzz/README.md). Every input must either
// fail with a positioned error or parse; a parsed module must survive print -> parse unchanged
// (structurally) and printing must be a fixed point. Anything else aborts, which libFuzzer
// reports as a finding; crashes, leaks and UB are caught by ASan/UBSan.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "hlo/parse_roundtrip.h"
#include "hlo/parser.h"
#include "hlo/printer.h"

namespace {

[[noreturn]] void Violation(const char* what, const std::string& detail, const std::string& text) {
  std::fprintf(stderr, "round-trip violation: %s\n%s\n--- printed module ---\n%s\n", what,
               detail.c_str(), text.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = mk::hlo::ParseModule(text, "fuzz.hlo");
  if (!parsed.ok()) {
    if (!parsed.status().loc().known()) {
      Violation("error without a position", parsed.status().ToString(), std::string(text));
    }
    return 0;
  }
  std::string printed = mk::hlo::PrintModule(**parsed);
  auto reparsed = mk::hlo::ParseModule(printed, "printed.hlo");
  if (!reparsed.ok()) Violation("printed module does not parse", reparsed.status().ToString(), printed);
  std::string difference = mk::hlo::DescribeModuleDifference(**parsed, **reparsed);
  if (!difference.empty()) Violation("parse(print(m)) differs from m", difference, printed);
  std::string reprinted = mk::hlo::PrintModule(**reparsed);
  if (reprinted != printed) Violation("print(parse(print(m))) differs from print(m)", reprinted, printed);
  return 0;
}
