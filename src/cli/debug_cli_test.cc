// End-to-end: the debugger writes repro artifacts for injected failures, and the real binary's
// `maxkernel debug repro` reproduces each (exit 0), reports a fixed one as not reproduced
// (exit 1) and refuses a bad file (exit 2); `debug explain` prints the recorded diagnosis.
#include <gtest/gtest.h>

#include "cli/cli_test_util.h"
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "agents/debugger.h"
#include "agents/repro.h"
#include "hlo/parser.h"

extern char** environ;

namespace mk::cli {
namespace {

namespace fs = std::filesystem;

const char* kModule = R"(HloModule debug_cli

ENTRY main {
  x = f32[6] parameter(0)
  y = f32[6] parameter(1)
  s = f32[6] add(x, y)
  ROOT n = f32[6] negate(s)
}
)";

// A crash injected into the kernel: a null write, except under AddressSanitizer, whose SIGSEGV
// handler the sandbox's worker inherits (it would exit(1) with a report instead of dying of the
// signal); ASan leaves SIGILL alone.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MK_TEST_UNDER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(MK_TEST_UNDER_ASAN)
constexpr const char* kCrashStatement = "  __builtin_trap();\n";
#else
constexpr const char* kCrashStatement =
    "  { volatile int* volatile mk_null = nullptr; *mk_null = 1; }\n";
#endif

using testing::Ran;

class DebugCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mk-debug-cli-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    setenv("MAXKERNEL_CACHE", (dir_ + "/cache").c_str(), 1);  // the binary inherits it
    agents::EngineOptions options;
    options.cache_dir = dir_ + "/cache";
    engine_ = std::make_unique<agents::CpuEngine>(options);
  }
  void TearDown() override {
    engine_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  Ran Run(const std::vector<std::string>& args) { return testing::RunMaxkernel(args); }

  // Lowers the module, applies `edit` to the one kernel's body start, observes and diagnoses
  // the failure, and returns the diagnosis (with its artifact).
  agents::Diagnosis Inject(const std::string& statement) {
    auto module = hlo::ParseModule(kModule, "debug_cli.hlo");
    EXPECT_TRUE(module.ok());
    auto lowered = engine_->Lower(**module);
    EXPECT_TRUE(lowered.ok()) << lowered.status().ToString();
    agents::DebugRequest r;
    r.module_text = kModule;
    r.candidate = lowered->candidate;
    r.implementation = lowered->impl;
    std::string& src = r.implementation.sources[0].text;
    std::string head = "static void kernel_0(void** slot) {\n";
    size_t p = src.find(head);
    EXPECT_NE(p, std::string::npos);
    if (p != std::string::npos) src.insert(p + head.size(), statement);
    r.implementation.hash = "cli-" + std::to_string(++edits_);
    auto failure = agents::ObserveFailure(r, r.implementation, *engine_);
    EXPECT_TRUE(failure.ok()) << failure.status().ToString();
    if (failure.ok()) r.failure = *failure;
    agents::DebugOptions options;
    options.artifact_dir = dir_ + "/artifacts";
    auto d = agents::Diagnose(r, *engine_, options);
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    return d.ok() ? *d : agents::Diagnosis{};
  }

  std::string dir_;
  std::unique_ptr<agents::CpuEngine> engine_;
  int edits_ = 0;
};

TEST_F(DebugCliTest, ReproReproducesCompileErrorCrashAndMismatch) {
  struct Case {
    const char* statement;
    const char* want;
  };
  const Case cases[] = {
      {"  float mk_injected = not_declared_anywhere;\n", "undefined-symbol"},
      {kCrashStatement, "crash"},
      // The output buffer is the module's only output (slot 2): add 1.0 to its element 4.
      {"  struct AddOne { void** s; ~AddOne() { static_cast<float*>(s[2])[4] += 1.0f; } } "
       "mk_add_one{slot};\n",
       "numerical-mismatch"},
  };
  for (const Case& c : cases) {
    agents::Diagnosis d = Inject(c.statement);
    EXPECT_EQ(agents::FailureClassName(d.failure_class), std::string(c.want));
    ASSERT_FALSE(d.artifact_path.empty()) << c.want;
    ASSERT_EQ(d.reproduce_cmd, "maxkernel debug repro " + d.artifact_path);
    Ran repro = Run({"debug", "repro", d.artifact_path});
    EXPECT_EQ(repro.exit_code, 0) << c.want << "\n" << repro.out << repro.err;
    EXPECT_NE(repro.out.find(std::string("reproduced: ") + c.want), std::string::npos)
        << repro.out;
    EXPECT_NE(repro.out.find("class:    " + std::string(c.want)), std::string::npos) << repro.out;

    Ran json = Run({"debug", "repro", d.artifact_path, "--json"});
    EXPECT_EQ(json.exit_code, 0) << json.err;
    auto j = nlohmann::json::parse(json.out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << json.out;
    EXPECT_EQ(j["reproduced"], true);
    EXPECT_EQ(j["diagnosis"]["class"], c.want);

    Ran explain = Run({"debug", "explain", d.artifact_path});
    EXPECT_EQ(explain.exit_code, 0) << explain.err;
    EXPECT_NE(explain.out.find(std::string("expected failure: ") + c.want), std::string::npos)
        << explain.out;
    EXPECT_NE(explain.out.find("negate("), std::string::npos) << explain.out;  // the HLO snippet
  }
}

TEST_F(DebugCliTest, FixedArtifactIsNotReproducedAndBadInputIsExitTwo) {
  agents::Diagnosis d = Inject(kCrashStatement);
  ASSERT_FALSE(d.artifact_path.empty());
  // Drop the sources: the repro regenerates them from the candidate, which has no bug.
  auto artifact = agents::ReadReproArtifact(d.artifact_path);
  ASSERT_TRUE(artifact.ok()) << artifact.status().ToString();
  artifact->request.implementation.sources.clear();
  std::string fixed = dir_ + "/fixed.json";
  ASSERT_TRUE(agents::WriteReproArtifact(fixed, *artifact).ok());
  Ran r = Run({"debug", "repro", fixed});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("not reproduced: expected crash, observed passed"), std::string::npos)
      << r.out;

  std::ofstream(dir_ + "/bad.json") << "{\"format\": \"maxkernel-repro\", \"version\": 1}";
  Ran bad = Run({"debug", "repro", dir_ + "/bad.json"});
  EXPECT_EQ(bad.exit_code, 2) << bad.out << bad.err;
  EXPECT_NE(bad.err.find("expected_class"), std::string::npos) << bad.err;
  EXPECT_EQ(Run({"debug", "repro", dir_ + "/missing.json"}).exit_code, 2);
  EXPECT_EQ(Run({"debug", "explain", dir_ + "/missing.json"}).exit_code, 2);
  EXPECT_EQ(Run({"debug"}).exit_code, 2);
}

}  // namespace
}  // namespace mk::cli
