// Issue 30 hole 7: what a task directory may hold. task.yaml keys appear once, tolerances are
// finite, shapes are possible, every error has its line; a FIFO is refused instead of blocking,
// and a data file must stay inside the task even through a symlink.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <limits>
#include <thread>

#include "support/npy.h"
#include "task/inputs.h"
#include "task/task.h"

namespace mk::task {
namespace {

namespace fs = std::filesystem;

constexpr const char* kYaml = R"(format: 1
id: "t"
parameters:
  - name: x
    shape: [2, 3]
    dtype: f32
    init: {kind: normal, mean: 0.0, std: 1.0}
  - name: table
    shape: [3]
    dtype: s32
    init: {kind: data, file: data/table.npy}
outputs:
  - {shape: [2, 3], dtype: f32}
tolerance: {atol: 0.01, rtol: 0.02}
)";

std::string With(const std::string& from, const std::string& to) {
  std::string text = kYaml;
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

struct Refusal {
  std::string from, to;
  std::string message;
  int line;
};

void ExpectRefused(const Result<Task>& t, const Refusal& c) {
  ASSERT_FALSE(t.ok()) << "accepted: " << c.to;
  EXPECT_EQ(t.status().code(), ErrorCode::kInvalidArgument) << t.status().ToString();
  EXPECT_NE(t.status().message().find(c.message), std::string::npos) << t.status().ToString();
  EXPECT_EQ(t.status().loc().line, c.line) << t.status().ToString();
  EXPECT_GT(t.status().loc().col, 0) << t.status().ToString();
}

// `name` is optional, but looking for its position when it was missing threw out of yaml-cpp:
// every task without a name was "malformed task: invalid node" without a line.
TEST(TaskYamlChecks, ATaskWithoutTheOptionalKeysParses) {
  auto t = ParseTaskYaml(R"(id: "bare"
parameters:
  - {name: x, shape: [2], dtype: f32, init: {kind: normal}}
outputs:
  - {shape: [2], dtype: f32}
)");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->name, "");
  EXPECT_EQ(t->parameters[0].loc.line, 3);
}

// yaml-cpp answers a lookup with the first of two equal keys: the second was ignored silently.
TEST(TaskYamlChecks, RefusesDuplicateKeysAtTheRepeatedKey) {
  const std::vector<Refusal> cases = {
      {"id: \"t\"\n", "id: \"t\"\nid: \"u\"\n", "duplicate key 'id'", 3},
      {"{atol: 0.01, rtol: 0.02}", "{atol: 0.01, rtol: 0.02, atol: 5}", "duplicate key 'atol'", 14},
      {"mean: 0.0, std: 1.0}", "mean: 0.0, std: 1.0, std: 9.0}", "duplicate key 'std'", 7},
      {"    dtype: s32\n", "    dtype: s32\n    dtype: f32\n", "duplicate key 'dtype'", 11},
  };
  for (const Refusal& c : cases) ExpectRefused(ParseTaskYaml(With(c.from, c.to), "t.yaml"), c);
}

// `.inf` passed ">= 0" checks as "must be >= 0" (it is), which told the user nothing.
TEST(TaskYamlChecks, TolerancesMustBeFiniteAndSaySo) {
  const std::vector<Refusal> cases = {
      {"atol: 0.01", "atol: .inf", "atol must be a finite number, got '.inf'", 14},
      {"rtol: 0.02", "rtol: .nan", "rtol must be a finite number, got '.nan'", 14},
      {"rtol: 0.02", "rtol: -.inf", "rtol must be a finite number", 14},
      {"atol: 0.01", "atol: -1", "atol must be >= 0", 14},
      {"dtype: f32}", "dtype: f32, atol: .inf}", "atol must be a finite number", 13},
  };
  for (const Refusal& c : cases) ExpectRefused(ParseTaskYaml(With(c.from, c.to), "t.yaml"), c);
  // Tasks built in code are checked by ValidateTask, with the same words.
  auto t = ParseTaskYaml(kYaml);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  t->outputs[0].atol = std::numeric_limits<double>::infinity();
  Status s = ValidateTask(*t);
  EXPECT_NE(s.message().find("tolerances must be finite"), std::string::npos) << s.ToString();
}

TEST(TaskYamlChecks, ImpossibleShapesAreBadInputAtTheirLine) {
  const std::vector<Refusal> cases = {
      {"shape: [2, 3]\n    dtype: f32", "shape: [2, -3]\n    dtype: f32", "negative dimension -3", 5},
      {"shape: [2, 3]\n    dtype: f32",
       "shape: [4294967296, 4294967296, 16]\n    dtype: f32", "too many elements", 5},
  };
  for (const Refusal& c : cases) ExpectRefused(ParseTaskYaml(With(c.from, c.to), "t.yaml"), c);
  std::string dims = "1";
  for (int i = 0; i < 64; ++i) dims += ", 1";  // 65 dimensions
  ExpectRefused(ParseTaskYaml(With("shape: [3]", "shape: [" + dims + "]"), "t.yaml"),
                {"", "65 dimensions", "more than 64 dimensions", 9});
  // An output's shape too.
  ExpectRefused(ParseTaskYaml(With("{shape: [2, 3], dtype: f32}",
                                   "{shape: [9223372036854775807, 2], dtype: f32}"),
                              "t.yaml"),
                {"", "output", "too many elements", 13});
}

// Errors found after parsing (an init kind that does not fit the dtype, no outputs) point at
// their line too.
TEST(TaskYamlChecks, ValidationErrorsCarryTheLine) {
  ExpectRefused(
      [] {
        auto t = ParseTaskYaml(With("{kind: normal, mean: 0.0, std: 1.0}",
                                    "{kind: randint, low: 0, high: 2}"),
                               "t.yaml");
        if (!t.ok()) return Result<Task>(t.status());
        Status s = ValidateTask(*t);
        return s.ok() ? t : Result<Task>(s);
      }(),
      {"", "randint on f32", "'randint' needs an integer", 4});
  ExpectRefused(ParseTaskYaml(With("outputs:\n  - {shape: [2, 3], dtype: f32}\n", "outputs: []\n"),
                              "t.yaml"),
                {"", "no outputs", "task has no outputs", 12});
}

class TaskDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mk_task_checks_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    task_ = root_ + "/task";
    fs::create_directories(task_ + "/data");
    std::ofstream(task_ + "/task.yaml") << kYaml;
    WriteTable(task_ + "/data/table.npy");
    WriteTable(root_ + "/outside.npy");
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  static void WriteTable(const std::string& path) {
    npy::NpyArray a;
    a.type = npy::NpyType::kI4;
    a.shape = {3};
    a.data.assign(12, 1);
    ASSERT_TRUE(npy::WriteNpyFile(path, a).ok());
  }
  // A reader blocked opening `fifo` (the code before the fix) is released after a few seconds
  // by a writer that opens and closes it, again and again until the test has its answer, so
  // such a test fails instead of hanging.
  class Rescuer {
   public:
    explicit Rescuer(std::string fifo)
        : thread_([this, fifo = std::move(fifo)] {
            const auto start = std::chrono::steady_clock::now();
            while (!done_ && std::chrono::steady_clock::now() - start < std::chrono::seconds(3)) {
              std::this_thread::sleep_for(std::chrono::milliseconds(20));
            }
            while (!done_) {
              int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
              if (fd >= 0) ::close(fd);
              std::this_thread::sleep_for(std::chrono::milliseconds(50));
            }
          }) {}
    ~Rescuer() { join(); }
    void join() {
      done_ = true;
      if (thread_.joinable()) thread_.join();
    }

   private:
    std::atomic<bool> done_{false};
    std::thread thread_;
  };
  std::string root_, task_;
};

TEST_F(TaskDirTest, LoadsTheTaskAndItsData) {
  auto t = LoadTask(task_);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  auto inputs = GenerateInputs(*t, 0);
  ASSERT_TRUE(inputs.ok()) << inputs.status().ToString();
  // A symlink that stays inside the task is fine.
  fs::rename(task_ + "/data/table.npy", task_ + "/table.npy");
  fs::create_symlink("../table.npy", task_ + "/data/table.npy");
  auto linked = LoadTask(task_);
  ASSERT_TRUE(linked.ok()) << linked.status().ToString();
  EXPECT_TRUE(GenerateInputs(*linked, 0).ok());
}

TEST_F(TaskDirTest, RefusesADataSymlinkThatLeavesTheTask) {
  fs::remove(task_ + "/data/table.npy");
  fs::create_symlink(root_ + "/outside.npy", task_ + "/data/table.npy");
  auto t = LoadTask(task_);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("data/table.npy resolves to " + root_ + "/outside.npy"),
            std::string::npos)
      << t.status().ToString();
  EXPECT_NE(t.status().message().find("outside the task directory"), std::string::npos);
  EXPECT_EQ(t.status().loc().line, 8) << t.status().ToString();

  // The whole data/ folder linked elsewhere, after the task was loaded: the input generator
  // checks again.
  fs::remove(task_ + "/data/table.npy");
  WriteTable(task_ + "/data/table.npy");
  auto loaded = LoadTask(task_);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  fs::remove_all(task_ + "/data");
  fs::create_directories(root_ + "/elsewhere");
  WriteTable(root_ + "/elsewhere/table.npy");
  fs::create_directory_symlink(root_ + "/elsewhere", task_ + "/data");
  auto inputs = GenerateInputs(*loaded, 0);
  ASSERT_FALSE(inputs.ok());
  EXPECT_EQ(inputs.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(inputs.status().message().find("outside the task directory"), std::string::npos)
      << inputs.status().ToString();
}

TEST_F(TaskDirTest, RefusesAFifoTaskYamlAndDataFile) {
  fs::remove(task_ + "/task.yaml");
  ASSERT_EQ(::mkfifo((task_ + "/task.yaml").c_str(), 0600), 0);
  {
    Rescuer rescuer(task_ + "/task.yaml");
    auto t = LoadTask(task_);
    rescuer.join();
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().code(), ErrorCode::kInvalidArgument) << t.status().ToString();
    EXPECT_EQ(t.status().loc().file, task_ + "/task.yaml");
    EXPECT_NE(t.status().message().find("is a FIFO, not a regular file"), std::string::npos)
        << t.status().ToString();
  }
  fs::remove(task_ + "/task.yaml");
  std::ofstream(task_ + "/task.yaml") << kYaml;
  auto t = LoadTask(task_);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  fs::remove(task_ + "/data/table.npy");
  ASSERT_EQ(::mkfifo((task_ + "/data/table.npy").c_str(), 0600), 0);
  Rescuer rescuer(task_ + "/data/table.npy");
  const auto start = std::chrono::steady_clock::now();
  auto inputs = GenerateInputs(*t, 0);
  const auto took = std::chrono::steady_clock::now() - start;
  rescuer.join();
  EXPECT_LT(took, std::chrono::seconds(2));
  ASSERT_FALSE(inputs.ok());
  EXPECT_EQ(inputs.status().code(), ErrorCode::kInvalidArgument) << inputs.status().ToString();
  EXPECT_NE(inputs.status().ToString().find(task_ + "/data/table.npy: error: is a FIFO"),
            std::string::npos)
      << inputs.status().ToString();
}

}  // namespace
}  // namespace mk::task
