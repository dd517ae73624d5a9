// Issue 30 hole 7 through the real binary: inputs that are not regular files, HLO modules over
// the size limit, impossible shapes, task.yaml mistakes and `--db` files that are not databases
// are each one clear error with exit 2, and nothing blocks or crashes.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli/cli_test_util.h"
#include "support/npy.h"

namespace mk::cli {
namespace {

namespace fs = std::filesystem;

class InputFilesCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mk_input_files_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ::setenv("MAXKERNEL_HOME", (dir_ + "/home").c_str(), 1);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  static void Write(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
  }

  // maxkernel ARGS, killed after 20 s: a command blocked on a FIFO fails the test, not the suite.
  static testing::Ran Mk(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {MK_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    testing::Ran r;
    auto p = RunProcess(argv, 20);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    if (!p.ok()) return r;
    EXPECT_FALSE(p->timed_out) << "maxkernel blocked: " << args[0];
    r.exit_code = p->timed_out ? -1 : p->signaled ? 128 + p->term_signal : p->exit_code;
    r.out = std::move(p->out);
    r.err = std::move(p->err);
    return r;
  }

  std::string dir_;
};

constexpr const char* kAddHlo = R"(HloModule add

ENTRY main {
  a = f32[2] parameter(0)
  b = f32[2] parameter(1)
  ROOT s = f32[2] add(a, b)
}
)";

TEST_F(InputFilesCliTest, AFifoGivenAsAModuleOrInputIsRefusedAtOnce) {
  const std::string fifo = Path("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  testing::Ran check = Mk({"hlo", "check", fifo});
  EXPECT_EQ(check.exit_code, 2) << check.err;
  EXPECT_EQ(check.err, fifo + ": error: is a FIFO, not a regular file\n");

  Write(Path("add.hlo"), kAddHlo);
  npy::NpyArray b;
  b.type = npy::NpyType::kF4;
  b.shape = {2};
  b.data.assign(8, 0);
  ASSERT_TRUE(npy::WriteNpyFile(Path("b.npy"), b).ok());
  fs::create_directories(Path("out"));
  testing::Ran eval = Mk({"eval", Path("add.hlo"), "--input", fifo, "--input", Path("b.npy"),
                          "--out", Path("out")});
  EXPECT_EQ(eval.exit_code, 2) << eval.err;
  EXPECT_NE(eval.err.find(fifo + ": error: is a FIFO, not a regular file"), std::string::npos)
      << eval.err;

  // A task whose task.yaml is a FIFO.
  fs::create_directories(Path("task"));
  Write(Path("task/module.hlo"), kAddHlo);
  ASSERT_EQ(::mkfifo(Path("task/task.yaml").c_str(), 0600), 0);
  testing::Ran task = Mk({"compile", Path("task"), "-o", Path("lib")});
  EXPECT_EQ(task.exit_code, 2) << task.err;
  EXPECT_NE(task.err.find("task.yaml: error: is a FIFO"), std::string::npos) << task.err;
}

TEST_F(InputFilesCliTest, AModuleOverTheSizeLimitIsBadInput) {
  std::string text = "HloModule big\n\nENTRY main {\n  ROOT r = f32[2] add(";
  for (int i = 0; i < 9'000'000; ++i) text += "a,";
  text += "a)\n}\n";
  Write(Path("big.hlo"), text);
  testing::Ran r = Mk({"hlo", "check", Path("big.hlo")});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("more than the 16777216 bytes an HLO module file may have"),
            std::string::npos)
      << r.err;
}

// f32[1000000000000] is a valid shape of 4 TB: checking such a module ran out of memory and
// said so as an internal error (exit 1).
TEST_F(InputFilesCliTest, AShapeTooLargeForThisMachineIsBadInput) {
  Write(Path("huge.hlo"), R"(HloModule huge

ENTRY main {
  x = f32[1000000000000] parameter(0)
  ROOT n = f32[1000000000000] negate(x)
}
)");
  testing::Ran r = Mk({"check", Path("huge.hlo")});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("the task's parameters and outputs need 8e+12 bytes, more than this "
                       "machine's"),
            std::string::npos)
      << r.err;
}

TEST_F(InputFilesCliTest, TaskYamlMistakesAreBadInputWithTheirLine) {
  fs::create_directories(Path("task"));
  Write(Path("task/module.hlo"), kAddHlo);
  const std::string yaml = R"(format: 1
id: "add"
parameters:
  - {name: a, shape: [2], dtype: f32, init: {kind: normal}}
  - {name: b, shape: [2], dtype: f32, init: {kind: normal}}
outputs:
  - {shape: [2], dtype: f32}
tolerance: {atol: 0.001, rtol: 0.001}
)";
  struct Case {
    std::string from, to, where, message;
  };
  const std::vector<Case> cases = {
      {"id: \"add\"\n", "id: \"add\"\nid: \"again\"\n", "task.yaml:3:1: error: ", "duplicate key 'id'"},
      {"atol: 0.001", "atol: .inf", "task.yaml:8:19: error: ", "atol must be a finite number"},
      {"shape: [2], dtype: f32}", "shape: [-2], dtype: f32}", "task.yaml:7:14: error: ",
       "negative dimension -2"},
      {"shape: [2], dtype: f32}", "shape: [4294967296, 4294967296, 16], dtype: f32}",
       "task.yaml:7:", "too many elements"},
  };
  for (const Case& c : cases) {
    std::string text = yaml;
    const size_t at = text.find(c.from);
    ASSERT_NE(at, std::string::npos) << c.from;
    text.replace(at, c.from.size(), c.to);
    Write(Path("task/task.yaml"), text);
    testing::Ran r = Mk({"compile", Path("task"), "-o", Path("lib")});
    EXPECT_EQ(r.exit_code, 2) << c.to << ": " << r.err;
    EXPECT_NE(r.err.find(c.where), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
  }
}

// yaml-cpp's message for an escape cut by the end of the file quotes its end-of-stream byte
// (0x04): the terminal gets it as a visible escape, as it gets every other control character.
TEST_F(InputFilesCliTest, NoControlCharacterOfAnErrorReachesTheTerminal) {
  fs::create_directories(Path("task"));
  Write(Path("task/module.hlo"), kAddHlo);
  Write(Path("task/task.yaml"), "\"\\");
  testing::Ran r = Mk({"compile", Path("task"), "-o", Path("lib")});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("malformed YAML"), std::string::npos) << r.err;
  for (char c : r.err) {
    const auto b = static_cast<unsigned char>(c);
    EXPECT_TRUE(b >= 0x20 || c == '\n' || c == '\t') << "byte " << int(b) << " in: " << r.err;
  }
}

// SQLite takes an empty file for a new database: `--db` with a 0-byte file migrated it.
TEST_F(InputFilesCliTest, AnEmptyDbFileIsRefusedAndLeftEmpty) {
  const std::string db = Path("empty.db");
  Write(db, "");
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"runs", "list", "--db", db},
                                            {"optimize", "--resume", "1", "--db", db}}) {
    testing::Ran r = Mk(args);
    EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find(db + ": error: is an empty file, not a SQLite database"), std::string::npos)
        << r.err;
    EXPECT_EQ(fs::file_size(db), 0u);
  }
}

}  // namespace
}  // namespace mk::cli
