// End-to-end tests: run the real `maxkernel` binary (MK_BINARY) and check exit codes, output
// text and the files it writes.
#include <dirent.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_test_util.h"
#include "support/npy.h"

extern char** environ;

namespace mk::cli {
namespace {

using RunResult = testing::Ran;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

const char* kAddHlo = R"(HloModule jit_add, entry_computation_layout={(f32[2,3]{1,0}, f32[2,3]{1,0})->f32[2,3]{1,0}}

ENTRY main.3 {
  Arg_0.1 = f32[2,3]{1,0} parameter(0)
  Arg_1.2 = f32[2,3]{1,0} parameter(1)
  ROOT add.3 = f32[2,3]{1,0} add(Arg_0.1, Arg_1.2)
}
)";

const char* kTupleHlo = R"(HloModule tuple_root

ENTRY main {
  x = bf16[3] parameter(0)
  n = s32[] parameter(1)
  neg = bf16[3] negate(x)
  ROOT t = (bf16[3], s32[]) tuple(neg, n)
}
)";

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mk_cli_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    WriteFile(Path("add.hlo"), kAddHlo);
    WriteFile(Path("tuple.hlo"), kTupleHlo);
    WriteF32(Path("a.npy"), {2, 3}, {0, 1, 2, 3, 4, 5});
    WriteF32(Path("b.npy"), {2, 3}, {10, 20, 30, 40, 50, 60});
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  static void WriteNpy(const std::string& path, npy::NpyType type, std::vector<int64_t> shape,
                       const void* data, size_t bytes) {
    npy::NpyArray a;
    a.type = type;
    a.shape = std::move(shape);
    a.data.resize(bytes);
    if (bytes > 0) std::memcpy(a.data.data(), data, bytes);
    ASSERT_TRUE(npy::WriteNpyFile(path, a).ok());
  }
  static void WriteF32(const std::string& path, std::vector<int64_t> shape,
                       const std::vector<float>& v) {
    WriteNpy(path, npy::NpyType::kF4, std::move(shape), v.data(), v.size() * 4);
  }

  // Runs MK_BINARY with `args`; stdout and stderr are captured through files.
  RunResult Run(const std::vector<std::string>& args) { return testing::RunMaxkernel(args); }

  // Names of the out*.npy files (and any leftover temporaries) in `dir`.
  static std::vector<std::string> OutputFiles(const std::string& dir) {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      std::string name = e.path().filename().string();
      if (name.rfind("out", 0) == 0) names.push_back(name);
    }
    std::sort(names.begin(), names.end());  // directory order is unspecified
    return names;
  }

  static std::vector<float> ReadF32(const std::string& path) {
    Result<npy::NpyArray> a = npy::ReadNpyFile(path);
    EXPECT_TRUE(a.ok()) << a.status().ToString();
    if (!a.ok()) return {};
    EXPECT_EQ(a->type, npy::NpyType::kF4);
    std::vector<float> v(a->data.size() / 4);
    if (!v.empty()) std::memcpy(v.data(), a->data.data(), a->data.size());
    return v;
  }

  std::string dir_;
};

TEST_F(CliTest, Version) {
  RunResult r = Run({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("maxkernel 0."), std::string::npos) << r.out;
}

TEST_F(CliTest, UnknownSubcommandIsBadInput) {
  EXPECT_EQ(Run({"frobnicate"}).exit_code, 2);
  EXPECT_EQ(Run({"hlo", "frobnicate", Path("add.hlo")}).exit_code, 2);
  EXPECT_EQ(Run({}).exit_code, 2);
}

TEST_F(CliTest, HloCheckPrintsSummary) {
  RunResult r = Run({"hlo", "check", Path("add.hlo")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("module:       jit_add"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("computations: 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("instructions: 3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("entry:        (f32[2,3], f32[2,3]) -> f32[2,3]"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("add=1 parameter=2"), std::string::npos) << r.out;
}

TEST_F(CliTest, HloCheckJson) {
  RunResult r = Run({"hlo", "check", Path("tuple.hlo"), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["module"], "tuple_root");
  EXPECT_EQ(j["computations"], 1);
  EXPECT_EQ(j["instructions"], 4);
  EXPECT_EQ(j["entry"]["parameters"], nlohmann::json({"bf16[3]", "s32[]"}));
  EXPECT_EQ(j["entry"]["result"], "(bf16[3], s32[])");
  EXPECT_EQ(j["ops"], nlohmann::json({{"negate", 1}, {"parameter", 2}, {"tuple", 1}}));
}

TEST_F(CliTest, HloCheckMalformedGivesPosition) {
  WriteFile(Path("bad.hlo"), "HloModule bad\n\nENTRY main {\n  x = f32[2] parameter(0)\n"
                             "  ROOT y = f32[2] frobnicate(x)\n}\n");
  RunResult r = Run({"hlo", "check", Path("bad.hlo")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(std::regex_search(r.err, std::regex(Path("bad.hlo") + ":5:[0-9]+: error: ")))
      << r.err;
  EXPECT_EQ(r.out, "");
}

TEST_F(CliTest, HloCheckRunsTheVerifier) {
  // Parses, but the declared shape of the add is wrong.
  WriteFile(Path("wrong.hlo"), "HloModule wrong\n\nENTRY main {\n  x = f32[2] parameter(0)\n"
                               "  ROOT y = f32[3] add(x, x)\n}\n");
  RunResult r = Run({"hlo", "check", Path("wrong.hlo")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(std::regex_search(r.err, std::regex(Path("wrong.hlo") + ":5:[0-9]+: error: ")))
      << r.err;
}

TEST_F(CliTest, HloCheckMissingFile) {
  RunResult r = Run({"hlo", "check", Path("missing.hlo")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("missing.hlo"), std::string::npos) << r.err;
}

TEST_F(CliTest, HloFmtOutputReparses) {
  RunResult to_stdout = Run({"hlo", "fmt", Path("add.hlo")});
  ASSERT_EQ(to_stdout.exit_code, 0) << to_stdout.err;
  EXPECT_NE(to_stdout.out.find("HloModule jit_add"), std::string::npos) << to_stdout.out;

  RunResult to_file = Run({"hlo", "fmt", Path("add.hlo"), "-o", Path("fmt1.hlo")});
  ASSERT_EQ(to_file.exit_code, 0) << to_file.err;
  EXPECT_EQ(ReadFile(Path("fmt1.hlo")), to_stdout.out);

  // The canonical text parses, verifies, describes the same module and is a fixed point.
  RunResult check = Run({"hlo", "check", Path("fmt1.hlo")});
  ASSERT_EQ(check.exit_code, 0) << check.err;
  EXPECT_NE(check.out.find("(f32[2,3], f32[2,3]) -> f32[2,3]"), std::string::npos);
  EXPECT_NE(check.out.find("add=1 parameter=2"), std::string::npos);
  RunResult again = Run({"hlo", "fmt", Path("fmt1.hlo")});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, to_stdout.out);
}

TEST_F(CliTest, EvalAdd) {
  RunResult r = Run({"eval", Path("add.hlo"), "--input", Path("a.npy"), "--input", Path("b.npy"),
                     "--out", Path("out")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ReadF32(Path("out/out0.npy")), (std::vector<float>{10, 21, 32, 43, 54, 65}));
  EXPECT_EQ(OutputFiles(Path("out")), (std::vector<std::string>{"out0.npy"}));
}

TEST_F(CliTest, EvalJsonAndHighPrecision) {
  RunResult r = Run({"eval", Path("add.hlo"), "--input", Path("a.npy"), "--input", Path("b.npy"),
                     "--out", Path("out"), "--json", "--precision", "high", "--engine", "interp"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["engine"], "interp");
  EXPECT_TRUE(j["seconds"].is_number());
  ASSERT_EQ(j["outputs"].size(), 1u);
  EXPECT_EQ(j["outputs"][0]["path"], Path("out/out0.npy"));
  EXPECT_EQ(j["outputs"][0]["shape"], nlohmann::json({2, 3}));
  EXPECT_EQ(j["outputs"][0]["dtype"], "f32");
}

TEST_F(CliTest, EvalTupleRootWritesOneFilePerElement) {
  // 1 + 2^-8 is a tie in bf16 and rounds to even (1.0) when the input is read.
  WriteF32(Path("x.npy"), {3}, {1.0f + 0x1p-8f, 2.5f, -3.0f});
  int32_t n = -42;
  WriteNpy(Path("n.npy"), npy::NpyType::kI4, {}, &n, 4);
  RunResult r = Run({"eval", Path("tuple.hlo"), "--input", Path("x.npy"), "--input", Path("n.npy"),
                     "--out", Path("deep/new/dir")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(OutputFiles(Path("deep/new/dir")),
            (std::vector<std::string>{"out0.npy", "out1.npy"}));
  EXPECT_EQ(ReadF32(Path("deep/new/dir/out0.npy")), (std::vector<float>{-1.0f, -2.5f, 3.0f}));
  Result<npy::NpyArray> out1 = npy::ReadNpyFile(Path("deep/new/dir/out1.npy"));
  ASSERT_TRUE(out1.ok()) << out1.status().ToString();
  EXPECT_EQ(out1->type, npy::NpyType::kI4);
  EXPECT_TRUE(out1->shape.empty());
  int32_t got = 0;
  std::memcpy(&got, out1->data.data(), 4);
  EXPECT_EQ(got, -42);
}

// Each bad-input case: exit 2, a message containing every `needles`, and an output directory
// (created beforehand) that holds no out*.npy and no temporaries.
class CliEvalErrorTest : public CliTest {
 protected:
  void ExpectBadInput(const std::vector<std::string>& inputs,
                      const std::vector<std::string>& needles, const char* module = "add.hlo",
                      const std::vector<std::string>& extra = {}) {
    std::filesystem::create_directories(Path("out"));
    std::vector<std::string> args = {"eval", Path(module)};
    for (const std::string& in : inputs) {
      args.push_back("--input");
      args.push_back(Path(in));
    }
    args.push_back("--out");
    args.push_back(Path("out"));
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = Run(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    for (const std::string& n : needles) {
      EXPECT_NE(r.err.find(n), std::string::npos) << "missing '" << n << "' in: " << r.err;
    }
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
    EXPECT_TRUE(OutputFiles(Path("out")).empty());
  }
};

TEST_F(CliEvalErrorTest, WrongInputCount) {
  ExpectBadInput({"a.npy"}, {Path("add.hlo") + ": error: ", "takes 2 parameters", "1 --input"});
  ExpectBadInput({"a.npy", "b.npy", "b.npy"}, {"takes 2 parameters", "3 --input files"});
}

TEST_F(CliEvalErrorTest, WrongShape) {
  WriteF32(Path("c.npy"), {3, 2}, {1, 2, 3, 4, 5, 6});
  ExpectBadInput({"a.npy", "c.npy"},
                 {Path("c.npy") + ": error: ", "parameter 1", "(2, 3)", "got shape (3, 2)"});
}

TEST_F(CliEvalErrorTest, WrongDtype) {
  std::vector<int32_t> ints(6, 1);
  WriteNpy(Path("i.npy"), npy::NpyType::kI4, {2, 3}, ints.data(), 24);
  ExpectBadInput({"i.npy", "b.npy"}, {Path("i.npy") + ": error: ", "parameter 0", "int32 ('<i4')"});
  // An s32 parameter refuses float data.
  float f = 1;
  WriteNpy(Path("f.npy"), npy::NpyType::kF4, {}, &f, 4);
  WriteF32(Path("x.npy"), {3}, {1, 2, 3});
  ExpectBadInput({"x.npy", "f.npy"}, {"parameter 1", "s32[]", "float32 ('<f4')"}, "tuple.hlo");
}

TEST_F(CliEvalErrorTest, TruncatedNpy) {
  std::string bytes = ReadFile(Path("b.npy"));
  WriteFile(Path("trunc.npy"), bytes.substr(0, bytes.size() - 3));
  ExpectBadInput({"a.npy", "trunc.npy"},
                 {Path("trunc.npy") + ": error: ", "needs 24 bytes", "has 21"});
}

TEST_F(CliEvalErrorTest, NotAnNpyFile) {
  WriteFile(Path("text.npy"), "hello, I am not an array\n");
  ExpectBadInput({"a.npy", "text.npy"}, {Path("text.npy") + ": error: ", "bad magic"});
}

TEST_F(CliEvalErrorTest, MissingInputFile) {
  ExpectBadInput({"a.npy", "missing.npy"}, {Path("missing.npy") + ": error: "});
}

TEST_F(CliEvalErrorTest, UnknownEngine) {
  ExpectBadInput({"a.npy", "b.npy"}, {"engine 'gpu' is not available yet"}, "add.hlo",
                 {"--engine", "gpu"});
}

TEST_F(CliEvalErrorTest, MalformedModule) {
  WriteFile(Path("bad.hlo"), "HloModule bad\nENTRY main {\n  ROOT x = f32[ parameter(0)\n}\n");
  ExpectBadInput({"a.npy"}, {Path("bad.hlo") + ":3:"}, "bad.hlo");
}

TEST_F(CliTest, EvalOutIsAFileFailsCleanly) {
  WriteFile(Path("taken"), "not a directory");
  RunResult r = Run({"eval", Path("add.hlo"), "--input", Path("a.npy"), "--input", Path("b.npy"),
                     "--out", Path("taken")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(Path("taken") + ": error: "), std::string::npos) << r.err;
  EXPECT_EQ(ReadFile(Path("taken")), "not a directory");
}

TEST_F(CliTest, EvalBadPrecisionIsUsageError) {
  RunResult r = Run({"eval", Path("add.hlo"), "--input", Path("a.npy"), "--input", Path("b.npy"),
                     "--out", Path("out"), "--precision", "extreme"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_FALSE(std::filesystem::exists(Path("out/out0.npy")));
}

TEST_F(CliTest, EvalElidedConstantNoteGoesToStderr) {
  WriteFile(Path("elided.hlo"), "HloModule elided\n\nENTRY main {\n  x = f32[2] parameter(0)\n"
                                "  c = f32[2] constant({...})\n  ROOT y = f32[2] add(x, c)\n}\n");
  WriteF32(Path("z.npy"), {2}, {0, 0});
  RunResult r = Run({"eval", Path("elided.hlo"), "--input", Path("z.npy"), "--out", Path("out"),
                     "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("note: "), std::string::npos) << r.err;
  // stdout stays pure JSON for the tools that parse it.
  EXPECT_FALSE(nlohmann::json::parse(r.out, nullptr, false).is_discarded()) << r.out;
}

}  // namespace
}  // namespace mk::cli
