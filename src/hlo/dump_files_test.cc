// Real XLA dumps as this jax writes them (src/hlo/testdata/jax_dumps, remade by generate.py
// there): every *_optimizations.txt parses and verifies with its stack-trace tables, the other
// files of a dump are named for what they are, and a dump folder yields the user's module.
#include "hlo/dump_files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "hlo/parser.h"
#include "hlo/verifier.h"

namespace mk::hlo {
namespace {

namespace fs = std::filesystem;

const fs::path kDumps = fs::path(MK_SOURCE_DIR) / "src/hlo/testdata/jax_dumps";

std::vector<std::string> FilesEndingWith(const fs::path& dir, const std::string& suffix) {
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.size() >= suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      files.push_back(e.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(XlaDumpTest, EveryOptimizationsFileParsesAndVerifies) {
  std::vector<std::string> files = FilesEndingWith(kDumps, "_optimizations.txt");
  // attention, mlp, loss (before and after) + the mlp_dump folder's modules.
  ASSERT_GE(files.size(), 6u + 2u);
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    auto m = ParseModuleFile(f);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    Status v = VerifyModule(**m);
    EXPECT_TRUE(v.ok()) << v.ToString();
  }
}

TEST(XlaDumpTest, TheThreeFunctionsKeepTheirSignatures) {
  struct Case {
    const char* file;
    const char* module;
    size_t parameters;
  };
  for (const Case& c : {Case{"attention.before_optimizations.txt", "jit_attention", 5},
                        Case{"mlp.before_optimizations.txt", "jit_mlp", 5},
                        Case{"loss.before_optimizations.txt", "jit_loss", 2},
                        Case{"mlp.cpu_after_optimizations.txt", "jit_mlp", 5}}) {
    SCOPED_TRACE(c.file);
    auto m = ParseModuleFile((kDumps / c.file).string());
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_EQ((*m)->name, c.module);
    ASSERT_NE((*m)->entry(), nullptr);
    EXPECT_EQ((*m)->entry()->parameters().size(), c.parameters);
  }
  auto mlp = ParseModuleFile((kDumps / "mlp.before_optimizations.txt").string());
  ASSERT_TRUE(mlp.ok());
  EXPECT_EQ((*mlp)->entry()->parameter(0)->name, "x.1");  // JAX's argument name, uniquified
}

constexpr const char* kEntry = R"(
ENTRY %main.2 (x.1: f32[4]) -> f32[4] {
  %x.1 = f32[4]{0} parameter(0), metadata={op_name="x"}
  ROOT %neg.1 = f32[4]{0} negate(%x.1), metadata={op_name="jit(f)/neg" stack_frame_id=2}
}
)";

constexpr const char* kTables = R"(
FileNames
1 "/home/me/model.py"
2 "/with \"quotes\" and spaces.py"

FunctionNames
1 "<module>"
2 "f"

FileLocations
1 {file_name_id=1 function_name_id=1 line=7 end_line=7 column=6 end_column=19}
2 {file_name_id=2 function_name_id=2 line=3 end_line=3 column=20 end_column=26}

StackFrames
1 {file_location_id=1 parent_frame_id=1}
2 {file_location_id=2 parent_frame_id=1}
)";

TEST(XlaDumpTest, StackTraceTablesBeforeAndAfterTheComputations) {
  const std::string header = "HloModule jit_f, entry_computation_layout={(f32[4]{0})->f32[4]{0}}\n";
  for (const std::string& text : {header + kTables + kEntry, header + kEntry + kTables,
                                  header + kTables + kEntry + kTables}) {
    auto m = ParseModule(text, "dump.txt");
    ASSERT_TRUE(m.ok()) << m.status().ToString() << "\n" << text;
    EXPECT_EQ((*m)->computations().size(), 1u);
    EXPECT_EQ((*m)->entry()->root()->name, "neg.1");
  }
}

TEST(XlaDumpTest, AComputationNamedLikeATableIsStillAComputation) {
  auto m = ParseModule(
      "HloModule m\n%FileNames (a: f32[]) -> f32[] {\n  ROOT %a = f32[] parameter(0)\n}\n"
      "ENTRY %e {\n  %p = f32[] parameter(0)\n  ROOT %c = f32[] call(%p), to_apply=%FileNames\n}\n",
      "t.hlo");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ((*m)->computations().size(), 2u);
}

TEST(XlaDumpTest, MalformedTableEntryIsPositioned) {
  auto m = ParseModule(
      "HloModule m\nFileNames\n1 \"a.py\"\n2 oops\nENTRY %e {\n  ROOT %p = f32[] parameter(0)\n}\n",
      "t.hlo");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().ToString(),
            "t.hlo:4:3: error: expected a quoted string or '{' after the table entry id, got 'o'");
}

TEST(XlaDumpTest, OtherDumpFilesAreNamedForWhatTheyAre) {
  const fs::path folder = kDumps / "mlp_dump";
  struct Case {
    const char* suffix;
    const char* message;
  };
  for (const Case& c :
       {Case{"-buffer-assignment.txt", "is an XLA buffer-assignment dump, not HLO text"},
        Case{"-buffer-assignment-values.txt", "is an XLA buffer-assignment dump"},
        Case{"-live-range.txt", "is an XLA live-range dump"},
        Case{"-memory-usage-report.txt", "is an XLA memory-usage report"},
        Case{".debug_options", "is XLA's debug options, not HLO text"},
        Case{".o", "is an object file, not HLO text"}, Case{".ll", "is LLVM IR, not HLO text"}}) {
    SCOPED_TRACE(c.suffix);
    std::vector<std::string> files = FilesEndingWith(folder, c.suffix);
    ASSERT_FALSE(files.empty());
    Status s = CheckIsHloText(files.front());
    EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(s.ToString().find(c.message), std::string::npos) << s.ToString();
    // The parser refuses them by the same words, not with a syntax error at 1:1.
    auto m = ParseModuleFile(files.front());
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.status().ToString().find(c.message), std::string::npos) << m.status().ToString();
  }
  for (const std::string& f : FilesEndingWith(folder, "_optimizations.txt")) {
    EXPECT_TRUE(CheckIsHloText(f).ok()) << f;
  }
}

TEST(XlaDumpTest, RenamedBufferAssignmentIsRecognizedByItsContent) {
  const fs::path tmp = fs::temp_directory_path() / ("mk_dump_kind_" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  { std::ofstream(tmp / "module.hlo") << "BufferAssignment:\nallocation 0: size 4\n"; }
  Status s = CheckIsHloText((tmp / "module.hlo").string());
  EXPECT_NE(s.ToString().find("is an XLA buffer-assignment dump"), std::string::npos)
      << s.ToString();
  fs::remove_all(tmp);
}

TEST(XlaDumpTest, AFolderYieldsTheJittedFunctionsOwnModule) {
  const fs::path folder = kDumps / "mlp_dump";
  auto picked = PickDumpedModule(folder.string(), "");
  ASSERT_TRUE(picked.ok()) << picked.status().ToString();
  EXPECT_NE(picked->find(".jit_mlp.before_optimizations.txt"), std::string::npos) << *picked;
  auto named = PickDumpedModule(folder.string(), "mlp");
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(*named, *picked);
  auto helper = PickDumpedModule(folder.string(), "broadcast_in_dim");  // jitted five times
  ASSERT_FALSE(helper.ok());
  EXPECT_NE(helper.status().ToString().find("5 candidate modules"), std::string::npos)
      << helper.status().ToString();
  auto missing = PickDumpedModule(folder.string(), "nosuch");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(
      missing.status().ToString().find("has no module jit_nosuch (it has jit_convert_element_type"),
      std::string::npos)
      << missing.status().ToString();
}

TEST(XlaDumpTest, TwoFunctionsInOneFolderAreAmbiguous) {
  const fs::path tmp = fs::temp_directory_path() / ("mk_dump_pick_" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  fs::copy_file(kDumps / "mlp.before_optimizations.txt",
                tmp / "module_0001.jit_mlp.before_optimizations.txt");
  fs::copy_file(kDumps / "loss.before_optimizations.txt",
                tmp / "module_0003.jit_loss.before_optimizations.txt");
  fs::copy_file(kDumps / "loss.before_optimizations.txt",
                tmp / "module_0000.jit__normal.before_optimizations.txt");
  auto picked = PickDumpedModule(tmp.string(), "");
  ASSERT_FALSE(picked.ok());
  EXPECT_NE(picked.status().ToString().find(
                "holds 2 candidate modules (module_0001.jit_mlp.before_optimizations.txt, "
                "module_0003.jit_loss.before_optimizations.txt); name the function with "
                "--function NAME"),
            std::string::npos)
      << picked.status().ToString();
  auto loss = PickDumpedModule(tmp.string(), "loss");
  ASSERT_TRUE(loss.ok()) << loss.status().ToString();
  EXPECT_EQ(fs::path(*loss).filename(), "module_0003.jit_loss.before_optimizations.txt");
  fs::remove_all(tmp);
  auto none = PickDumpedModule(tmp.string(), "");
  EXPECT_EQ(none.status().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace mk::hlo
