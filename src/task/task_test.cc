#include "task/task.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace mk::task {
namespace {

namespace fs = std::filesystem;
using hlo::DType;

constexpr const char* kTaskYaml = R"(format: 1
id: "12p"
name: llama3_70b_rmsnorm
description: "RMSNorm"
operator: norm
source: {workload: ../workload.py, function: function}
scale: ci
dtype: bf16
seed: 3
parameters:
  - name: x
    shape: [2, 16, 64]
    dtype: bf16
    init: {kind: normal, mean: 0.0, std: 1.0}
  - name: scale
    shape: [64]
    dtype: f32
    init: {kind: uniform, low: 0.5, high: 1.5}
  - name: lengths
    shape: []
    dtype: s32
    init: {kind: data, file: data/lengths.npy}
  - name: mask
    shape: [4]
    dtype: pred
    init: {kind: randint, low: 0, high: 2}
outputs:
  - {shape: [2, 16, 64], dtype: bf16}
  - {shape: [2], dtype: f32, atol: 0.5, rtol: 0.25}
tolerance: {atol: 0.01, rtol: 0.02}
flops: 10240
bytes: 8448
baseline: {engine: xla-cpu, median_s: 0.0015, p10_s: 0.001, p90_s: 0.002, runs: 20, cpu: "Xeon", jax_version: "0.10.2", date: "2025-01-01"}
)";

TEST(ParseTaskYaml, ReadsEveryField) {
  auto t = ParseTaskYaml(kTaskYaml);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->id, "12p");
  EXPECT_EQ(t->name, "llama3_70b_rmsnorm");
  EXPECT_EQ(t->operator_name, "norm");
  EXPECT_EQ(t->source_workload, "../workload.py");
  EXPECT_EQ(t->source_function, "function");
  EXPECT_EQ(t->scale, "ci");
  EXPECT_EQ(t->seed, 3u);
  ASSERT_EQ(t->parameters.size(), 4u);
  EXPECT_EQ(t->parameters[0].shape.ToString(false), "bf16[2,16,64]");
  EXPECT_EQ(t->parameters[0].init.kind, InitSpec::Kind::kNormal);
  EXPECT_EQ(t->parameters[1].init.kind, InitSpec::Kind::kUniform);
  EXPECT_DOUBLE_EQ(t->parameters[1].init.low, 0.5);
  EXPECT_DOUBLE_EQ(t->parameters[1].init.high, 1.5);
  EXPECT_EQ(t->parameters[2].shape.ToString(false), "s32[]");
  EXPECT_EQ(t->parameters[2].init.data_file, "data/lengths.npy");
  EXPECT_EQ(t->parameters[3].init.kind, InitSpec::Kind::kRandint);
  EXPECT_EQ(t->parameters[3].init.int_high, 2);
  ASSERT_EQ(t->outputs.size(), 2u);
  // An output without its own tolerance inherits the task's.
  EXPECT_DOUBLE_EQ(t->outputs[0].atol, 0.01);
  EXPECT_DOUBLE_EQ(t->outputs[0].rtol, 0.02);
  EXPECT_DOUBLE_EQ(t->outputs[1].atol, 0.5);
  EXPECT_DOUBLE_EQ(t->outputs[1].rtol, 0.25);
  EXPECT_EQ(t->flops, 10240);
  EXPECT_EQ(t->bytes, 8448);
  ASSERT_TRUE(t->baseline.has_value());
  EXPECT_DOUBLE_EQ(t->baseline->median_s, 0.0015);
  EXPECT_EQ(t->baseline->runs, 20);
  EXPECT_EQ(t->baseline->cpu, "Xeon");
  EXPECT_TRUE(ValidateTask(*t).ok());
}

TEST(TaskToYaml, RoundTrips) {
  auto t = ParseTaskYaml(kTaskYaml);
  ASSERT_TRUE(t.ok());
  t->description = "quotes \" and\nnewlines: survive";
  t->parameters[0].init.std = 1e-5;
  const std::string text = TaskToYaml(*t);
  // Floats always carry a '.', so that YAML 1.1 readers (PyYAML) see numbers, not strings.
  EXPECT_NE(text.find("std: 1.0e-05}"), std::string::npos) << text;
  EXPECT_NE(text.find("mean: 0.0,"), std::string::npos) << text;
  auto back = ParseTaskYaml(text, "printed.yaml");
  ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << text;
  EXPECT_EQ(TaskToYaml(*back), text);
  EXPECT_EQ(back->description, t->description);
  EXPECT_EQ(back->parameters[1].shape.ToString(false), "f32[64]");
  EXPECT_DOUBLE_EQ(back->outputs[1].atol, 0.5);
}

// Every string TaskToYaml writes reads back unchanged, whatever characters it holds. JSON
// quoting wrote DEL, C1 controls, NEL and U+2028 raw: a YAML stream may not hold the first two
// (ParseTaskYaml refuses them since the task_yaml fuzzer's findings, and so does PyYAML, which
// the Python bridge reads task.yaml with), and PyYAML folds a raw NEL into a space.
TEST(TaskToYaml, RoundTripsEveryCharacterAStringCanHold) {
  auto t = ParseTaskYaml(kTaskYaml);
  ASSERT_TRUE(t.ok());
  std::string all;
  for (int c = 1; c < 0x80; ++c) all += static_cast<char>(c);
  for (uint32_t cp : {0x80u, 0x85u, 0x9bu, 0x9fu, 0xa0u, 0xe9u}) {
    all += static_cast<char>(0xc0 | (cp >> 6));
    all += static_cast<char>(0x80 | (cp & 0x3f));
  }
  all += "\xe2\x80\xa8 \xe2\x80\xa9 \xef\xbb\xbf \xef\xbf\xbe \xef\xbf\xbf \xf0\x9f\x98\x80 \\\"'";
  t->description = all;
  t->source_workload = all;
  t->parameters[2].init.data_file = all;
  const std::string text = TaskToYaml(*t);
  auto back = ParseTaskYaml(text, "printed.yaml");
  ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << text;
  EXPECT_EQ(back->description, all);
  EXPECT_EQ(back->source_workload, all);
  EXPECT_EQ(back->parameters[2].init.data_file, all);
  EXPECT_EQ(TaskToYaml(*back), text);
}

// Each malformed task gives an InvalidArgument whose message names the problem and, where
// the YAML has one, the line.
struct BadCase {
  std::string from, to;  // replace `from` in kTaskYaml by `to`
  std::string message;   // expected substring
  int line;              // expected line (0: not checked)
};

TEST(ParseTaskYaml, RejectsMalformedTasks) {
  const std::vector<BadCase> cases = {
      {"id: \"12p\"\n", "", "missing required key 'id'", 0},
      {"dtype: bf16\n    init: {kind: normal", "dtype: bfloat16\n    init: {kind: normal",
       "unsupported dtype 'bfloat16'", 13},
      {"shape: [64]", "shape: [-64]", "negative dimension", 16},
      {"shape: [64]", "shape: 64", "must be a list", 16},
      {"{kind: uniform, low: 0.5", "{kind: gaussian, low: 0.5", "unknown init kind 'gaussian'", 18},
      {"seed: 3", "seed: three", "cannot read 'three'", 9},
      {"format: 1", "format: 2", "unsupported task format 2", 1},
      {"outputs:\n", "outputz:\n", "missing required key 'outputs'", 0},
      {"flops: 10240", "flops: [1", "malformed YAML", 0},
      {"{kind: data, file: data/lengths.npy}", "{kind: data}", "missing required key 'file'", 0},
  };
  for (const BadCase& c : cases) {
    std::string text = kTaskYaml;
    const size_t at = text.find(c.from);
    ASSERT_NE(at, std::string::npos) << c.from;
    text.replace(at, c.from.size(), c.to);
    auto t = ParseTaskYaml(text, "bad.yaml");
    ASSERT_FALSE(t.ok()) << "accepted: " << c.to;
    EXPECT_EQ(t.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(t.status().message().find(c.message), std::string::npos) << t.status().ToString();
    if (c.line) {
      EXPECT_EQ(t.status().loc().line, c.line) << t.status().ToString();
    }
    EXPECT_EQ(t.status().loc().file, "bad.yaml");
  }
}

// Found by tests/fuzz/task_yaml_fuzz (inputs kept in tests/fuzz/crashes/task_yaml/): yaml-cpp
// replaces bytes that are not UTF-8 and control characters with U+FFFD and counts columns in
// what it decoded, and reads one character past the end of the text, so its positions pointed
// beyond the file ("i\xff\0" at 1:5 of 3 bytes). Such characters are now refused at their own
// byte, and every position lies inside the text.
TEST(ParseTaskYaml, ErrorPositionsLieInTheFile) {
  struct Case {
    std::string text, message;
    int line, col;
  };
  const std::vector<Case> cases = {
      {std::string("i\xff\0", 3), "byte 0xFF (not UTF-8) at byte 1", 1, 2},
      {std::string("ipdt_ra\x01\0", 9), "U+0001 at byte 7", 1, 8},
      {"id: t\nname: \"a\x1b[2J\"\n", "U+001B at byte 14", 2, 9},
      {"\xff\xfei\0d\0", "byte 0xFF (not UTF-8)", 1, 1},  // UTF-16 is not a task.yaml
      {"id: t\r\nname: \"\xc2\x9b\"\r\n", "U+009B", 2, 8},
      {"\"\\", "malformed YAML", 1, 3},                  // an escape cut by the end of the text
      {"id: t\n\"\\", "malformed YAML", 2, 3},
  };
  for (const Case& c : cases) {
    auto t = ParseTaskYaml(c.text, "bad.yaml");
    ASSERT_FALSE(t.ok()) << "accepted: " << c.text;
    EXPECT_EQ(t.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(t.status().message().find(c.message), std::string::npos) << t.status().ToString();
    EXPECT_EQ(t.status().loc().file, "bad.yaml");
    EXPECT_EQ(t.status().loc().line, c.line) << t.status().ToString();
    EXPECT_EQ(t.status().loc().col, c.col) << t.status().ToString();
  }
  // Tabs, CRLF line ends and printable Unicode (NEL and U+2028 included) are YAML text.
  std::string text = kTaskYaml;
  text.replace(text.find("description: \"RMSNorm\""), 22,
               "description: \"RMS \xc3\xa9\t\xe2\x80\xa8 \xc2\x85 \xf0\x9f\x98\x80\"\r");
  auto ok = ParseTaskYaml(text);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->description.substr(0, 6), "RMS \xc3\xa9");
}

TEST(ValidateTask, RejectsInconsistentTasks) {
  auto base = ParseTaskYaml(kTaskYaml);
  ASSERT_TRUE(base.ok());
  auto expect_bad = [&](auto mutate, const std::string& message) {
    Task t = *base;
    mutate(t);
    Status s = ValidateTask(t);
    EXPECT_FALSE(s.ok()) << message;
    EXPECT_NE(s.message().find(message), std::string::npos) << s.ToString();
  };
  expect_bad([](Task& t) { t.parameters[1].name = "x"; }, "duplicate parameter name 'x'");
  expect_bad([](Task& t) { t.parameters[0].init.kind = InitSpec::Kind::kRandint; },
             "'randint' needs an integer");
  expect_bad([](Task& t) { t.parameters[3].init.kind = InitSpec::Kind::kNormal; },
             "'normal' needs a float");
  expect_bad([](Task& t) { t.parameters[3].init.int_high = 0; }, "low < high");
  expect_bad([](Task& t) { t.parameters[2].init.data_file = "../../etc/passwd"; }, "'..'");
  expect_bad([](Task& t) { t.parameters[2].init.data_file = "/etc/passwd"; }, "relative path");
  expect_bad([](Task& t) { t.outputs[1].atol = -1; }, "tolerances");
  expect_bad([](Task& t) { t.outputs.clear(); }, "no outputs");
}

// Issue 30 hole 1: an id or name is pasted into generated sources, file names and terminal
// lines; a newline, ESC, U+2028 or a bidi override in one is refused with its position.
TEST(ParseTaskYaml, RefusesControlCharactersInIdAndName) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"id: \"12p\"", "id: \"12p\\n__import__('os').system('x')\""},
      {"id: \"12p\"", "id: \"\\e[2Jall tests passed\""},
      {"name: llama3_70b_rmsnorm", "name: \"rms\\u2028norm\""},
      {"name: llama3_70b_rmsnorm", "name: \"rms\\u202enorm\""},
      {"name: llama3_70b_rmsnorm", "name: \"nul\\0\""},
  };
  for (const auto& [from, to] : cases) {
    std::string text = kTaskYaml;
    text.replace(text.find(from), from.size(), to);
    auto t = ParseTaskYaml(text, "bad.yaml");
    ASSERT_FALSE(t.ok()) << "accepted: " << to;
    EXPECT_EQ(t.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(t.status().message().find("printable text on one line"), std::string::npos)
        << t.status().ToString();
    EXPECT_EQ(t.status().loc().line, from[0] == 'i' ? 2 : 3) << t.status().ToString();
  }
  // Quotes, backslashes, comment markers and other Unicode are text: accepted (and escaped by
  // whatever writes them out).
  std::string text = kTaskYaml;
  text.replace(text.find("id: \"12p\""), 9, "id: \"*/ \\\"\\\"\\\" \\\\ \xc3\xa9\"");
  auto ok = ParseTaskYaml(text);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->id, "*/ \"\"\" \\ \xc3\xa9");

  auto base = ParseTaskYaml(kTaskYaml);
  ASSERT_TRUE(base.ok());
  Task t = *base;
  t.id = "from\na file name";
  EXPECT_NE(ValidateTask(t).message().find("U+000A"), std::string::npos);
}

class TempDir {
 public:
  TempDir() {
    char buf[] = "/tmp/mk_task_test_XXXXXX";
    path_ = ::mkdtemp(buf) ? buf : "";
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(WriteTaskDirectory, WritesAllOrNothing) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/nested/task";
  ASSERT_TRUE(WriteTaskDirectory(dir, {{"task.yaml", kTaskYaml}, {"module.hlo", "HloModule m"},
                                       {"data/lengths.npy", "npy"}},
                                 false)
                  .ok());
  EXPECT_EQ(Slurp(dir + "/module.hlo"), "HloModule m");
  EXPECT_EQ(Slurp(dir + "/data/lengths.npy"), "npy");

  // An existing task is not replaced without overwrite, and is left intact.
  Status again = WriteTaskDirectory(dir, {{"task.yaml", "other"}}, false);
  EXPECT_FALSE(again.ok());
  EXPECT_NE(again.message().find("already exists"), std::string::npos);
  EXPECT_EQ(Slurp(dir + "/module.hlo"), "HloModule m");

  ASSERT_TRUE(WriteTaskDirectory(dir, {{"task.yaml", "replaced"}}, true).ok());
  EXPECT_EQ(Slurp(dir + "/task.yaml"), "replaced");
  EXPECT_FALSE(fs::exists(dir + "/module.hlo"));

  // Nothing but the task itself is left in the parent (no temporary or old directories).
  int entries = 0;
  for (const auto& e : fs::directory_iterator(tmp.path() + "/nested")) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 1);
}

TEST(LoadTask, LoadsValidatesAndRecordsBaseline) {
  TempDir tmp;
  std::string text = kTaskYaml;
  text = text.substr(0, text.find("baseline:"));
  ASSERT_TRUE(WriteTaskDirectory(tmp.path() + "/t", {{"task.yaml", text}}, false).ok());
  auto t = LoadTask(tmp.path() + "/t");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_FALSE(t->baseline.has_value());
  EXPECT_EQ(t->module_path(), tmp.path() + "/t/module.hlo");

  Baseline b;
  b.median_s = 0.25;
  b.p10_s = 0.2;
  b.p90_s = 0.3;
  b.runs = 11;
  b.cpu = "Test CPU";
  b.jax_version = "0.10.2";
  b.date = "2025-06-01T00:00:00Z";
  ASSERT_TRUE(RecordBaseline(tmp.path() + "/t", b).ok());
  auto again = LoadTask(tmp.path() + "/t");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  ASSERT_TRUE(again->baseline.has_value());
  EXPECT_DOUBLE_EQ(again->baseline->median_s, 0.25);
  EXPECT_EQ(again->baseline->runs, 11);
  EXPECT_EQ(again->baseline->cpu, "Test CPU");
  EXPECT_EQ(again->parameters.size(), 4u);

  auto missing = LoadTask(tmp.path() + "/nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
}

// A module built by hand (the parser is tested elsewhere): ENTRY (f32[2,3], s32[]) -> f32[2,3].
std::unique_ptr<hlo::Module> TwoParamModule() {
  auto module = std::make_unique<hlo::Module>();
  module->name = "m";
  auto comp = std::make_unique<hlo::Computation>();
  comp->name = "main";
  auto p0 = std::make_unique<hlo::Instruction>();
  p0->name = "p0";
  p0->opcode = hlo::Opcode::kParameter;
  p0->shape = hlo::Shape(DType::kF32, {2, 3});
  p0->parameter_number = 0;
  auto p1 = std::make_unique<hlo::Instruction>();
  p1->name = "p1";
  p1->opcode = hlo::Opcode::kParameter;
  p1->shape = hlo::Shape(DType::kS32, {});
  p1->parameter_number = 1;
  hlo::Instruction* root = comp->AddInstruction(std::move(p0));
  comp->AddInstruction(std::move(p1));
  comp->set_root(root);
  comp->SortParameters();
  module->set_entry(module->AddComputation(std::move(comp)));
  return module;
}

TEST(CheckTaskAgainstModule, ComparesSignature) {
  auto module = TwoParamModule();
  Task t;
  t.id = "t";
  t.parameters.push_back({"a", hlo::Shape(DType::kF32, {2, 3}), {}});
  InitSpec ints;
  ints.kind = InitSpec::Kind::kRandint;
  t.parameters.push_back({"b", hlo::Shape(DType::kS32, {}), ints});
  t.outputs.push_back({hlo::Shape(DType::kF32, {2, 3})});
  EXPECT_TRUE(CheckTaskAgainstModule(t, *module).ok());

  Task wrong_shape = t;
  wrong_shape.parameters[0].shape = hlo::Shape(DType::kF32, {3, 2});
  Status s = CheckTaskAgainstModule(wrong_shape, *module);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("f32[3,2] in task.yaml but f32[2,3] in the module"), std::string::npos)
      << s.message();

  Task wrong_count = t;
  wrong_count.parameters.pop_back();
  EXPECT_FALSE(CheckTaskAgainstModule(wrong_count, *module).ok());

  Task wrong_output = t;
  wrong_output.outputs[0].shape = hlo::Shape(DType::kBF16, {2, 3});
  EXPECT_FALSE(CheckTaskAgainstModule(wrong_output, *module).ok());
}

}  // namespace
}  // namespace mk::task
