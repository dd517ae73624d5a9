#include "agents/debugger.h"

#include <gtest/gtest.h>

#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>

#include "agents/repro.h"
#include "codegen/cpu/cpu_emitter.h"
#include "hlo/parser.h"

namespace mk::agents {
namespace {

namespace fs = std::filesystem;

// A crash injected into a kernel. Under AddressSanitizer the sandbox's worker (a fork of this
// process) inherits ASan's SIGSEGV handler, which turns a segfault into a report and exit(1)
// instead of a death by signal; ASan leaves SIGILL alone, so sanitized builds trap instead.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MK_TEST_UNDER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(MK_TEST_UNDER_ASAN)
constexpr const char* kCrashStatement = "  __builtin_trap();\n";
constexpr const char* kCrashSignal = "SIGILL";
#else
// Through a volatile pointer, so the compiler can neither drop the write nor make it a trap.
constexpr const char* kCrashStatement =
    "  { volatile int* volatile mk_null = nullptr; *mk_null = 42; }\n";
constexpr const char* kCrashSignal = "SIGSEGV";
#endif

// ---- classification of canned compiler logs --------------------------------------------------

struct CannedLog {
  const char* name;
  const char* log;
  FailureClass want;
};

const CannedLog kCannedLogs[] = {
    {"missing_semicolon",
     "/c/ab.cc: In function 'void {anonymous}::kernel_2(void**)':\n"
     "/c/ab.cc:812:14: error: expected ';' before 'float'\n",
     FailureClass::kSyntax},
    {"stray_character", "/c/ab.cc:40:3: error: stray '@' in program\n", FailureClass::kSyntax},
    {"end_of_input", "/c/ab.cc:99:1: error: expected '}' at end of input\n",
     FailureClass::kSyntax},
    {"undeclared_identifier",
     "/c/ab.cc:120:9: error: 'acc_tile' was not declared in this scope; did you mean 'acc'?\n",
     FailureClass::kUndefinedSymbol},
    // The quoted name holds "expected": the rules must look past identifiers.
    {"undeclared_named_expected",
     "/c/ab.cc:7:5: error: \xE2\x80\x98" "expected_sum" "\xE2\x80\x99 was not declared in this "
     "scope\n",
     FailureClass::kUndefinedSymbol},
    {"not_a_member", "/c/ab.cc:31:10: error: 'fmaf16' is not a member of 'std'\n",
     FailureClass::kUndefinedSymbol},
    {"undefined_reference",
     "/usr/bin/ld: /tmp/cc1.o: in function `kernel_4':\nab.cc:(.text+0x1c): undefined reference "
     "to `mk_missing'\ncollect2: error: ld returned 1 exit status\n",
     FailureClass::kUndefinedSymbol},
    {"cannot_convert",
     "/c/ab.cc:55:20: error: cannot convert 'const float*' to 'double*' in initialization\n",
     FailureClass::kType},
    {"no_matching_function",
     "/c/ab.cc:60:30: error: no matching function for call to 'max(float&, double)'\n"
     "/usr/include/c++/12/bits/stl_algobase.h:254:5: note: candidate: 'template<class _Tp> ...'\n",
     FailureClass::kType},
    {"invalid_operands",
     "/c/ab.cc:61:12: error: invalid operands of types 'float*' and 'float*' to binary "
     "'operator*'\n",
     FailureClass::kType},
    {"internal_compiler_error",
     "/c/ab.cc:300:1: internal compiler error: Segmentation fault\nPlease submit a full bug "
     "report, with preprocessed source.\n",
     FailureClass::kResource},
    {"virtual_memory_exhausted",
     "cc1plus: out of memory allocating 4072 bytes after a total of 12345 bytes\n"
     "virtual memory exhausted: Cannot allocate memory\n",
     FailureClass::kResource},
    // An exhausted compiler may complain about syntax on its way down; memory wins.
    {"killed_compiler",
     "/c/ab.cc:5:1: error: expected ';' before '}' token\n"
     "g++: fatal error: Killed signal terminated program cc1plus\n",
     FailureClass::kResource},
    {"array_too_large", "/c/ab.cc:70:9: error: size of array 'tile' is too large\n",
     FailureClass::kResource},
    {"compiler_timeout", "compiler timed out after 300.000000 s on /c/ab.cc",
     FailureClass::kTimeout},
    {"empty_log", "", FailureClass::kUnknown},
    {"unrecognized", "/c/ab.cc:1:1: error: something nobody has seen before\n",
     FailureClass::kUnknown},
};

TEST(DebuggerClassify, CannedCompilerLogs) {
  for (const CannedLog& c : kCannedLogs) {
    EXPECT_EQ(FailureClassName(ClassifyCompilerLog(c.log)), std::string(FailureClassName(c.want)))
        << c.name;
  }
}

TEST(DebuggerClassify, FirstErrorLineSkipsSystemHeaders) {
  EXPECT_EQ(FirstErrorSourceLine("/c/ab.cc:812:14: error: expected ';' before 'float'\n"), 812);
  // An error inside a system header is reported at our line that instantiated it.
  std::string log =
      "/usr/include/c++/12/bits/stl_algobase.h:254:5: error: no type named 'x'\n"
      "/c/ab.cc:33:17:   required from here\n";
  EXPECT_EQ(FirstErrorSourceLine(log), 33);
  EXPECT_EQ(FirstErrorSourceLine("collect2: error: ld returned 1 exit status\n"), std::nullopt);
  EXPECT_EQ(FirstErrorText("noise\n/c/ab.cc:2:1: error: boom\n"), "/c/ab.cc:2:1: error: boom");
  EXPECT_EQ(KernelNamedInLog("/c/ab.cc: In function 'void {anonymous}::kernel_12(void**)':\n"), 12);
  EXPECT_EQ(KernelNamedInLog("/usr/bin/ld: x.o: in function `kernel_4':\n"), 4);
  EXPECT_EQ(KernelNamedInLog("/c/ab.cc:3:1: error: mk_kernel_9 here\n"), std::nullopt);
}

TEST(DebuggerClassify, SourceLinesMapToKernelFunctions) {
  const std::string src =
      "// header\n"                         // 1
      "namespace {\n"                       // 2
      "static void kernel_0(void** slot) {\n"  // 3
      "  for (int i = 0; i < 4; ++i) {\n"   // 4
      "  }\n"                               // 5
      "}\n"                                 // 6
      "\n"                                  // 7
      "static void kernel_7(void** slot) {\n"  // 8
      "  x();\n"                            // 9
      "}\n"                                 // 10
      "}  // namespace\n"                   // 11
      "extern \"C\" void mk_kernel(void** buffers) {\n"  // 12
      "  kernel_7(slot);\n"                 // 13
      "  kernel_0(slot);\n"                 // 14
      "}\n";                                // 15
  EXPECT_EQ(KernelAtSourceLine(src, 1), std::nullopt);
  EXPECT_EQ(KernelAtSourceLine(src, 3), 0);
  EXPECT_EQ(KernelAtSourceLine(src, 5), 0);
  EXPECT_EQ(KernelAtSourceLine(src, 6), 0);
  EXPECT_EQ(KernelAtSourceLine(src, 7), std::nullopt);
  EXPECT_EQ(KernelAtSourceLine(src, 9), 7);
  EXPECT_EQ(KernelAtSourceLine(src, 13), std::nullopt);
  EXPECT_EQ(KernelAtSourceLine(src, 99), std::nullopt);
  EXPECT_EQ(KernelCallOrder(src), (std::vector<int>{7, 0}));
  std::string cut = KeepFirstKernelCalls(src, 1);
  EXPECT_EQ(KernelCallOrder(cut), (std::vector<int>{7}));
  EXPECT_NE(cut.find("dropped by the debugger's bisection: kernel_0(slot);"), std::string::npos);
  EXPECT_EQ(KeepFirstKernelCalls(src, 2), src);
}

TEST(DebuggerFixes, ApplyFixSetsOnlyTheNamedKernel) {
  space::Candidate c;
  c.kernels.resize(3);
  for (auto& s : c.kernels) s.values = {{"threads", 4}, {"tile_m", 64}};
  ScheduleFix one{"k1", 1, {{"threads", 1}, {"tile_m", 32}}};
  space::Candidate fixed = ApplyFix(c, one);
  EXPECT_EQ(fixed.kernels[0].values.at("threads"), 4);
  EXPECT_EQ(fixed.kernels[1].values.at("threads"), 1);
  EXPECT_EQ(fixed.kernels[1].values.at("tile_m"), 32);
  ScheduleFix all{"all", -1, {{"unroll", 1}}};
  fixed = ApplyFix(c, all);
  for (auto& s : fixed.kernels) EXPECT_EQ(s.values.at("unroll"), 1);
  // A fix for a kernel the candidate does not have changes nothing.
  EXPECT_TRUE(ApplyFix(c, ScheduleFix{"k9", 9, {{"threads", 1}}}).kernels == c.kernels);
}

TEST(DebuggerJson, DiagnosisAndRequestRoundTrip) {
  Diagnosis d;
  d.failure_class = FailureClass::kResource;
  d.summary = "s";
  d.kernels = {2, 5};
  d.narrowed = true;
  d.hlo_snippet = "HloModule k";
  d.suggested_fix.push_back({"halve", 2, {{"tile_m", 32}}});
  d.reproduce_cmd = "maxkernel debug repro /x.json";
  std::string text = ToJson(d).dump();
  auto back = DiagnosisFromJson(nlohmann::json::parse(text));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(ToJson(*back).dump(), text);

  DebugRequest r;
  r.module_text = "HloModule m";
  r.failure.kind = Failure::Kind::kMismatch;
  r.failure.first_got = std::nan("");
  r.failure.first_mismatch = {1, 2};
  r.seeds = {3, 4};
  r.atol = 0.5;
  std::string rtext = ToJson(r).dump();
  auto rback = DebugRequestFromJson(nlohmann::json::parse(rtext));
  ASSERT_TRUE(rback.ok()) << rback.status().ToString();
  EXPECT_EQ(ToJson(*rback).dump(), rtext);
  EXPECT_TRUE(std::isnan(rback->failure.first_got));

  for (const char* bad : {R"({"class": "gremlins"})", R"({"kernels": [1.5]})",
                          R"({"suggested_fix": [{"set": {"threads": "one"}}]})"}) {
    EXPECT_FALSE(DiagnosisFromJson(nlohmann::json::parse(bad)).ok()) << bad;
  }
  for (const char* bad :
       {R"({})", R"({"module_text": "m", "seeds": []})", R"({"module_text": "m", "seeds": [-1]})",
        R"({"module_text": "m", "timeout_s": 0})", R"({"module_text": "m", "atol": -1})",
        R"({"module_text": "m", "failure": {"kind": "meltdown"}})",
        R"({"module_text": "m", "failure": {"kind": "run", "run_status": "exploded"}})",
        R"({"module_text": "m", "candidate": {"kernels": 3}})"}) {
    EXPECT_FALSE(DebugRequestFromJson(nlohmann::json::parse(bad)).ok()) << bad;
  }
  EXPECT_FALSE(ReproArtifactFromJson(nlohmann::json::parse(R"({"format": "other"})")).ok());
  EXPECT_FALSE(ReproArtifactFromJson(nlohmann::json::parse(
                   R"({"format": "maxkernel-repro", "version": 1, "expected_class": "x"})"))
                   .ok());
}

TEST(DebuggerRepro, CommandQuotesThePath) {
  EXPECT_EQ(ReproduceCommand("maxkernel", "/tmp/a/repro.json"),
            "maxkernel debug repro /tmp/a/repro.json");
  EXPECT_EQ(ReproduceCommand("maxkernel", "/tmp/it's here.json"),
            "maxkernel debug repro '/tmp/it'\\''s here.json'");
}

// ---- injected failures in real generated code ------------------------------------------------

// Three kernels with distinct ops: a contraction (dot), a reduction (exp -> reduce) and a loop
// (sine * 3). Output 0 is the dot, 1 the reduction, 2 the loop.
const char* kModule = R"(HloModule debug_three

add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  x = f32[4,8] parameter(0)
  y = f32[8,3] parameter(1)
  d = f32[4,3] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  e = f32[4,8] exponential(x)
  zero = f32[] constant(0)
  r = f32[4] reduce(e, zero), dimensions={1}, to_apply=add_f32
  three = f32[] constant(3)
  tb = f32[5] broadcast(three), dimensions={}
  w = f32[5] parameter(2)
  sn = f32[5] sine(w)
  l = f32[5] multiply(sn, tb)
  ROOT t = (f32[4,3], f32[4], f32[5]) tuple(d, r, l)
}
)";

class DebuggerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/mk-debugger-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    EngineOptions options;
    options.cache_dir = dir_ + "/cache";
    engine_ = new CpuEngine(options);
    auto module = hlo::ParseModule(kModule, "debug_three.hlo");
    ASSERT_TRUE(module.ok()) << module.status().ToString();
    auto lowered = engine_->Lower(**module);
    ASSERT_TRUE(lowered.ok()) << lowered.status().ToString();
    lowered_ = new LoweredModule(std::move(*lowered));
  }
  static void TearDownTestSuite() {
    delete lowered_;
    delete engine_;
    lowered_ = nullptr;
    engine_ = nullptr;
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // The id of the kernel that computes instruction `name`.
  static int KernelOf(const std::string& name) {
    for (const analysis::Kernel& k : lowered_->plan.kernels) {
      for (const hlo::Instruction* i : k.instructions) {
        if (i->name == name) return k.id;
      }
    }
    ADD_FAILURE() << "no kernel computes " << name;
    return -1;
  }

  // The generated source with `text` inserted as the first statement of kernel_N.
  static std::string AtKernelStart(std::string src, int kernel, const std::string& text) {
    std::string head = "static void kernel_" + std::to_string(kernel) + "(void** slot) {\n";
    size_t p = src.find(head);
    EXPECT_NE(p, std::string::npos) << head;
    return p == std::string::npos ? src : src.insert(p + head.size(), text);
  }

  // The generated source with `element` of kernel_N's (first) writable f32 buffer incremented
  // by 1.0 as the kernel's last statement.
  static std::string AddOneToOutput(std::string src, int kernel, int element) {
    std::string head = "static void kernel_" + std::to_string(kernel) + "(void** slot) {\n";
    size_t begin = src.find(head);
    size_t end = src.find("\n}\n", begin);
    size_t decl = src.find("float* const ", begin);
    EXPECT_TRUE(begin != std::string::npos && end != std::string::npos && decl < end);
    if (begin == std::string::npos || end == std::string::npos || decl >= end) return src;
    while (decl < end && src.compare(decl - 6, 6, "const ") == 0) {
      decl = src.find("float* const ", decl + 1);  // skip read-only inputs
    }
    size_t name_begin = decl + std::string("float* const ").size();
    std::string name = src.substr(name_begin, src.find(' ', name_begin) - name_begin);
    return src.insert(end + 1, "  " + name + "[" + std::to_string(element) + "] += 1.0f;\n");
  }

  static DebugRequest RequestFor(const std::function<std::string(std::string)>& edit) {
    DebugRequest r;
    r.module_text = kModule;
    r.candidate = lowered_->candidate;
    r.implementation = lowered_->impl;
    r.implementation.sources[0].text = edit(r.implementation.sources[0].text);
    r.implementation.hash = "injected" + std::to_string(++edits_);
    r.seeds = {5};
    r.timeout_s = 20;
    return r;
  }

  // Observes the failure, diagnoses it with an artifact, and checks the artifact reproduces it.
  static Diagnosis DiagnoseAndReproduce(DebugRequest r, FailureClass want) {
    auto failure = ObserveFailure(r, r.implementation, *engine_);
    EXPECT_TRUE(failure.ok()) << failure.status().ToString();
    if (!failure.ok()) return {};
    r.failure = *failure;
    DebugOptions options;
    options.artifact_dir = dir_ + "/artifacts";
    auto d = Diagnose(r, *engine_, options);
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    if (!d.ok()) return {};
    EXPECT_EQ(FailureClassName(d->failure_class), std::string(FailureClassName(want)))
        << FormatDiagnosis(*d);
    EXPECT_TRUE(fs::exists(d->artifact_path)) << d->artifact_path;
    EXPECT_EQ(d->reproduce_cmd, "maxkernel debug repro " + d->artifact_path);
    auto artifact = ReadReproArtifact(d->artifact_path);
    EXPECT_TRUE(artifact.ok()) << artifact.status().ToString();
    if (!artifact.ok()) return *d;
    EXPECT_EQ(artifact->expected_class, want);
    auto repro = RunRepro(*artifact, *engine_);
    EXPECT_TRUE(repro.ok()) << repro.status().ToString();
    if (repro.ok()) {
      EXPECT_TRUE(repro->reproduced) << FailureKindName(repro->observed.kind) << ": "
                                     << repro->observed.message;
    }
    return *d;
  }

  static std::string dir_;
  static CpuEngine* engine_;
  static LoweredModule* lowered_;
  static int edits_;
};
std::string DebuggerTest::dir_;
CpuEngine* DebuggerTest::engine_ = nullptr;
LoweredModule* DebuggerTest::lowered_ = nullptr;
int DebuggerTest::edits_ = 0;

TEST_F(DebuggerTest, PlanHasThreeSeparateKernels) {
  int dot = KernelOf("d"), reduce = KernelOf("r"), loop = KernelOf("l");
  EXPECT_NE(dot, reduce);
  EXPECT_NE(reduce, loop);
  EXPECT_NE(dot, loop);
  EXPECT_EQ(KernelOf("e"), reduce);  // the exponential fuses into the reduction
  EXPECT_EQ(KernelOf("sn"), loop);
}

TEST_F(DebuggerTest, CleanImplementationHasNoFailure) {
  DebugRequest r = RequestFor([](std::string s) { return s; });
  r.implementation.hash = lowered_->impl.hash;
  auto failure = ObserveFailure(r, r.implementation, *engine_);
  ASSERT_TRUE(failure.ok()) << failure.status().ToString();
  EXPECT_EQ(failure->kind, Failure::Kind::kNone) << failure->message;
}

// The debugger re-runs the oracle for the failing seed in this process: the run's deadline and
// SIGINT (its cancel flag) stop it, as they stop the tester's (issue 30, hole 3).
TEST_F(DebuggerTest, TheOracleHonoursTheRunsDeadlineAndCancel) {
  DebugRequest r = RequestFor([](std::string s) { return s; });
  r.implementation.hash = lowered_->impl.hash;
  std::atomic<bool> cancel{true};
  r.cancel = &cancel;
  auto cancelled = ObserveFailure(r, r.implementation, *engine_);
  ASSERT_FALSE(cancelled.ok());
  EXPECT_EQ(cancelled.status().code(), ErrorCode::kCancelled) << cancelled.status().ToString();
  r.cancel = nullptr;
  r.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  auto late = ObserveFailure(r, r.implementation, *engine_);
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.status().code(), ErrorCode::kCancelled) << late.status().ToString();
}

TEST_F(DebuggerTest, CompileErrorIsMappedToItsKernel) {
  int reduce = KernelOf("r");
  DebugRequest r = RequestFor([&](std::string s) {
    return AtKernelStart(s, reduce, "  float mk_injected = undeclared_thing_xyz * 2;\n");
  });
  Diagnosis d = DiagnoseAndReproduce(r, FailureClass::kUndefinedSymbol);
  EXPECT_EQ(d.kernels, std::vector<int>{reduce});
  EXPECT_TRUE(d.narrowed);
  EXPECT_NE(d.evidence.find("undeclared_thing_xyz"), std::string::npos) << d.evidence;
  // The snippet is the reduction kernel's subgraph, not the others'.
  EXPECT_NE(d.hlo_snippet.find("reduce("), std::string::npos) << d.hlo_snippet;
  EXPECT_NE(d.hlo_snippet.find("exponential("), std::string::npos) << d.hlo_snippet;
  EXPECT_EQ(d.hlo_snippet.find("dot("), std::string::npos) << d.hlo_snippet;
  EXPECT_EQ(d.hlo_snippet.find("sine("), std::string::npos) << d.hlo_snippet;
  // The minimized repro is that kernel alone, and it is a module the parser accepts.
  auto minimized = hlo::ParseModule(d.minimized_hlo, "minimized.hlo");
  EXPECT_TRUE(minimized.ok()) << minimized.status().ToString() << "\n" << d.minimized_hlo;
}

TEST_F(DebuggerTest, SyntaxErrorInTheLoopKernel) {
  int loop = KernelOf("l");
  DebugRequest r = RequestFor([&](std::string s) {
    return AtKernelStart(s, loop, "  int mk_injected = 1 +;\n");
  });
  Diagnosis d = DiagnoseAndReproduce(r, FailureClass::kSyntax);
  EXPECT_EQ(d.kernels, std::vector<int>{loop});
  EXPECT_NE(d.hlo_snippet.find("sine("), std::string::npos) << d.hlo_snippet;
  EXPECT_EQ(d.hlo_snippet.find("reduce("), std::string::npos) << d.hlo_snippet;
}

TEST_F(DebuggerTest, CrashIsNarrowedToItsKernelByBisection) {
  int reduce = KernelOf("r");
  DebugRequest r =
      RequestFor([&](std::string s) { return AtKernelStart(s, reduce, kCrashStatement); });
  Diagnosis d = DiagnoseAndReproduce(r, FailureClass::kCrash);
  EXPECT_NE(d.evidence.find(kCrashSignal), std::string::npos) << d.evidence;
  EXPECT_EQ(d.kernels, std::vector<int>{reduce}) << FormatDiagnosis(d);
  EXPECT_TRUE(d.narrowed);
  EXPECT_NE(d.hlo_snippet.find("reduce("), std::string::npos) << d.hlo_snippet;
  EXPECT_EQ(d.hlo_snippet.find("dot("), std::string::npos) << d.hlo_snippet;
}

TEST_F(DebuggerTest, CrashWithoutNarrowingBlamesEveryKernel) {
  int loop = KernelOf("l");
  DebugRequest r = RequestFor([&](std::string s) {
    return AtKernelStart(s, loop, kCrashStatement);
  });
  auto failure = ObserveFailure(r, r.implementation, *engine_);
  ASSERT_TRUE(failure.ok()) << failure.status().ToString();
  ASSERT_EQ(failure->kind, Failure::Kind::kRun);
  r.failure = *failure;
  DebugOptions options;
  options.narrow_crashes = false;
  auto d = Diagnose(r, *engine_, options);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->failure_class, FailureClass::kCrash);
  EXPECT_FALSE(d->narrowed);
  EXPECT_EQ(d->kernels.size(), lowered_->plan.kernels.size());
  EXPECT_TRUE(d->artifact_path.empty());
  EXPECT_TRUE(d->reproduce_cmd.empty());
  EXPECT_TRUE(d->minimized_hlo.empty());
}

TEST_F(DebuggerTest, MismatchNamesTheKernelOfTheOutput) {
  int reduce = KernelOf("r");
  DebugRequest r = RequestFor([&](std::string s) { return AddOneToOutput(s, reduce, 2); });
  auto failure = ObserveFailure(r, r.implementation, *engine_);
  ASSERT_TRUE(failure.ok()) << failure.status().ToString();
  ASSERT_EQ(failure->kind, Failure::Kind::kMismatch) << failure->message;
  EXPECT_EQ(failure->output_index, 1);
  EXPECT_EQ(failure->first_mismatch, std::vector<int64_t>{2});
  EXPECT_NEAR(failure->first_got - failure->first_want, 1.0, 1e-4);
  EXPECT_EQ(failure->mismatches, 1);

  Diagnosis d = DiagnoseAndReproduce(r, FailureClass::kNumericalMismatch);
  EXPECT_EQ(d.kernels, std::vector<int>{reduce});
  EXPECT_NE(d.hlo_snippet.find("reduce("), std::string::npos) << d.hlo_snippet;
  EXPECT_EQ(d.hlo_snippet.find("sine("), std::string::npos) << d.hlo_snippet;
  EXPECT_NE(d.evidence.find("[2]"), std::string::npos) << d.evidence;
}

TEST_F(DebuggerTest, FixesAreConcreteAndApply) {
  // Emit the loop kernel with two threads, then break it: the suggested fix is threads=1.
  int loop = KernelOf("l");
  space::Candidate parallel = lowered_->candidate;
  parallel.kernels[static_cast<size_t>(loop)].values["threads"] = 2;
  codegen::cpu::CpuEmitter emitter;
  auto impl = emitter.Emit(lowered_->plan, parallel, engine_->target());
  ASSERT_TRUE(impl.ok()) << impl.status().ToString();
  DebugRequest r = RequestFor([](std::string s) { return s; });
  r.candidate = parallel;
  r.implementation = *impl;
  r.implementation.sources[0].text = AddOneToOutput(impl->sources[0].text, loop, 0);
  r.implementation.hash = "parallel-mismatch";
  auto failure = ObserveFailure(r, r.implementation, *engine_);
  ASSERT_TRUE(failure.ok()) << failure.status().ToString();
  ASSERT_EQ(failure->kind, Failure::Kind::kMismatch);
  EXPECT_EQ(failure->output_index, 2);
  r.failure = *failure;
  auto d = Diagnose(r, *engine_);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->suggested_fix.size(), 1u) << FormatDiagnosis(*d);
  EXPECT_EQ(d->suggested_fix[0].kernel, loop);
  EXPECT_EQ(d->suggested_fix[0].set, (std::map<std::string, int64_t>{{"threads", 1}}));
  space::Candidate fixed = ApplyFix(parallel, *d);
  EXPECT_EQ(fixed.kernels[static_cast<size_t>(loop)].values.at("threads"), 1);
  EXPECT_TRUE(fixed.kernels == lowered_->candidate.kernels);
}

TEST_F(DebuggerTest, ReproOfAFixedImplementationDoesNotReproduce) {
  int reduce = KernelOf("r");
  DebugRequest r = RequestFor([&](std::string s) {
    return AtKernelStart(s, reduce, kCrashStatement);
  });
  r.failure = FailureFromOutcome({runtime::RunStatus::kCrashed, SIGSEGV, "", {}}, 5);
  ReproArtifact artifact;
  artifact.request = r;
  artifact.expected_class = FailureClass::kCrash;
  // The sources are dropped: the repro regenerates them from the candidate (without the bug).
  artifact.request.implementation.sources.clear();
  auto repro = RunRepro(artifact, *engine_);
  ASSERT_TRUE(repro.ok()) << repro.status().ToString();
  EXPECT_FALSE(repro->reproduced);
  EXPECT_EQ(repro->observed.kind, Failure::Kind::kNone);
  EXPECT_FALSE(repro->fresh.has_value());

  // Expecting a different class than the one observed is not a reproduction either.
  artifact.request.implementation = r.implementation;
  artifact.expected_class = FailureClass::kTimeout;
  repro = RunRepro(artifact, *engine_);
  ASSERT_TRUE(repro.ok()) << repro.status().ToString();
  EXPECT_FALSE(repro->reproduced);
  ASSERT_TRUE(repro->fresh.has_value());
  EXPECT_EQ(repro->fresh->failure_class, FailureClass::kCrash);
}

TEST_F(DebuggerTest, BadArtifactsAreErrorsNotCrashes) {
  std::string path = dir_ + "/bad.json";
  std::ofstream(path) << "{not json";
  EXPECT_FALSE(ReadReproArtifact(path).ok());
  EXPECT_FALSE(ReadReproArtifact(dir_ + "/missing.json").ok());

  // Buffers that do not match the module (an out-of-range parameter index) are refused before
  // anything runs.
  DebugRequest r = RequestFor([](std::string s) { return s; });
  r.implementation.buffers[0].index = 7;
  auto observed = ObserveFailure(r, r.implementation, *engine_);
  EXPECT_FALSE(observed.ok());
  r = RequestFor([](std::string s) { return s; });
  r.module_text = "HloModule broken\nENTRY {";
  EXPECT_FALSE(ObserveFailure(r, r.implementation, *engine_).ok());
  EXPECT_FALSE(Diagnose(r, *engine_).ok());
}

TEST_F(DebuggerTest, FailureFromTestReport) {
  TestReport report;
  report.status = "failed";
  SeedResult passed;
  passed.seed = 1;
  SeedResult crashed;
  crashed.seed = 2;
  crashed.status = "crashed";
  crashed.message = "kernel crashed with signal SIGSEGV";
  report.seeds = {passed, crashed};
  Failure f = FailureFromTestReport(report);
  EXPECT_EQ(f.kind, Failure::Kind::kRun);
  EXPECT_EQ(f.run_status, runtime::RunStatus::kCrashed);
  EXPECT_EQ(f.signal, 11);
  EXPECT_EQ(f.seed, 2u);

  SeedResult mism;
  mism.seed = 3;
  mism.status = "mismatch";
  OutputCheck ok, bad;
  bad.index = 1;
  bad.status = "mismatch";
  bad.first_mismatch = std::vector<int64_t>{0, 4};
  bad.first_got = 2;
  bad.first_want = 1;
  mism.outputs = {ok, bad};
  report.seeds = {mism};
  f = FailureFromTestReport(report);
  EXPECT_EQ(f.kind, Failure::Kind::kMismatch);
  EXPECT_EQ(f.output_index, 1);
  EXPECT_EQ(f.first_mismatch, (std::vector<int64_t>{0, 4}));

  report.status = "build-failed";
  report.message = "error: compiling /c/x.cc failed: /c/x.cc:3:1: error: expected ';' "
                   "(full log: /nonexistent/x.log)";
  f = FailureFromTestReport(report);
  EXPECT_EQ(f.kind, Failure::Kind::kCompile);
  EXPECT_EQ(ClassifyCompilerLog(f.compiler_log), FailureClass::kSyntax);
}

}  // namespace
}  // namespace mk::agents
