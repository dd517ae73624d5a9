// Issue 30, hole 1: a task id or name is text from whoever wrote task.yaml, and the export pastes
// it into C headers, C and C++ sources, a Python module and a README. This is the table of hostile
// strings x every output format: each file must still compile (C, C++) or import (Python) and
// no payload may run; the README keeps its lines and the HTML report its markup. The Python payload touches a marker file; the C payload is `#error`.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "export/library_export.h"
#include "report/report_html.h"
#include "export/run_export.h"
#include "agents/run_fixture_test_util.h"
#include "store/sqlite_store.h"
#include "support/subprocess.h"
#include "support/text_escape.h"
#include "task/bridge.h"

namespace mk::exports {

using agents::CpuEngine;
using agents::EngineOptions;

namespace {

namespace fs = std::filesystem;

struct Hostile {
  std::string what;
  std::string text;
};

std::vector<Hostile> HostileStrings(const std::string& marker) {
  const std::string py = "__import__('pathlib').Path('" + marker + "').touch()";
  return {
      {"newline then code", "x\n" + py + "\n#error injected\n#"},
      {"carriage return", "x\r" + py},
      {"block comment end", "a */ #error injected\n/* b"},
      {"docstring end", "\"\"\"\n" + py + "\n\"\"\""},
      {"docstring end on one line", "\"\"\"; " + py + "; \"\"\""},
      {"trailing backslash", "splice\\"},
      {"python escapes", "\\N{oops} \\x \\u12 \\"},
      {"NUL", std::string("nul\0", 4) + "\n" + py},
      {"line separators", "ls\xe2\x80\xa8" + py + "\xe2\x80\xa9ps"},
      {"NEL", "nel\xc2\x85" + py},
      {"ANSI escapes", "\x1b[2J\x1b[1;1Hall tests passed\x1b[0m"},
      {"trigraph", "end?" "?/"},
      {"bidi override", "\xe2\x80\xae" + py},
      {"not UTF-8", "\xff\xfe\n" + py},
      {"very long", std::string(20000, 'A') + "\n" + py},
  };
}

bool HasRawControls(const std::string& text) {
  for (char c : text) {
    auto b = static_cast<unsigned char>(c);
    if ((b < 0x20 && c != '\n') || b == 0x7F) return true;
  }
  return text.find("\xe2\x80\xa8") != std::string::npos ||
         text.find("\xe2\x80\xa9") != std::string::npos ||
         text.find("\xe2\x80\xae") != std::string::npos || text.find("\xc2\x85") != std::string::npos;
}

size_t Lines(const std::string& text) {
  size_t n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

// A minimal stand-in for jaxlib's xla/ffi/api/ffi.h: just the names the shim uses, so that
// every hostile shim gets a fast syntax check without JAX (the real header is used for one).
constexpr const char* kFfiStub = R"(#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
namespace xla::ffi {
enum class DataType { PRED, S8, S16, S32, S64, U8, U16, U32, U64, F16, BF16, F32, F64 };
struct Error {
  static Error Success() { return {}; }
  static Error InvalidArgument(std::string) { return {}; }
  bool failure() const { return false; }
};
struct Dims {
  size_t size() const { return 0; }
  int64_t operator[](size_t) const { return 0; }
};
struct AnyBuffer {
  DataType element_type() const { return DataType::F32; }
  Dims dimensions() const { return {}; }
  void* untyped_data() const { return nullptr; }
};
template <typename T> struct Result {
  T* operator->() const { return nullptr; }
  T& operator*() const { return *operator->(); }
};
struct Binding {
  template <typename T> Binding Arg() { return *this; }
  template <typename T> Binding Ret() { return *this; }
};
struct Ffi { static Binding Bind() { return {}; } };
}  // namespace xla::ffi
#define XLA_FFI_DEFINE_HANDLER_SYMBOL(name, fn, binding) \
  extern "C" void* name() { (void)(binding); return reinterpret_cast<void*>(&fn); }
)";

// A stand-in `jax` package for importing the generated modules without JAX or the compiled shim:
// the module's top level runs for real (that is where a payload would run), only jax is absent.
void WriteJaxStub(const fs::path& root) {
  fs::create_directories(root / "jax");
  std::ofstream(root / "jax" / "__init__.py")
      << "from . import ffi, numpy\n"
         "class ShapeDtypeStruct:\n"
         "    def __init__(self, shape, dtype):\n"
         "        self.shape, self.dtype = shape, dtype\n";
  std::ofstream(root / "jax" / "ffi.py") << "def register_ffi_target(*args, **kwargs):\n"
                                            "    pass\n"
                                            "def pycapsule(f):\n"
                                            "    return f\n";
  std::ofstream(root / "jax" / "numpy.py")
      << "for _n in ('bool_', 'int8', 'int16', 'int32', 'int64', 'uint8', 'uint16', 'uint32',\n"
         "           'uint64', 'float16', 'bfloat16', 'float32', 'float64'):\n"
         "    globals()[_n] = _n\n";
}

// Imports every module in `modules` (path, expected docstring start) in one Python process, with
// ctypes.CDLL answering for the FFI shims, and prints one line per module: "ok" or the error.
constexpr const char* kImporter = R"(import ctypes, importlib.util, sys
class _Shim:
    def __init__(self, path):
        self.path = path
    def __getattr__(self, name):
        return (lambda: 1) if name.endswith("_abi_version") else object()
ctypes.CDLL = _Shim
for path in sys.argv[1:]:
    try:
        spec = importlib.util.spec_from_file_location("hostile_case", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        assert module.__doc__ and "maxkernel's kernel for" in module.__doc__, "docstring lost"
        assert module.TARGET_NAME.startswith("maxkernel_"), "module body lost"
        print("ok")
    except BaseException as e:
        print("error:", type(e).__name__, str(e).replace("\n", " ")[:300])
)";

class ExportHostileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mk-export-hostile-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    auto db = store::SqliteStore::Open((dir_ / "maxkernel.db").string());
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(*db);
    artifacts_ = std::make_unique<store::ArtifactStore>(dir_.string());
    EngineOptions options;
    options.cache_dir = (dir_ / "cache").string();
    engine_ = std::make_unique<CpuEngine>(options);
  }
  void TearDown() override {
    db_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  ExportOptions Options() const {
    ExportOptions o;
    o.cache_dir = (dir_ / "cache").string();
    return o;
  }
  static std::string Compile(const std::vector<std::string>& argv) {
    auto p = RunProcess(argv, 120);
    if (!p.ok()) return p.status().ToString();
    return p->exit_code == 0 ? "" : p->err.substr(0, 600);
  }

  fs::path dir_;
  std::unique_ptr<store::SqliteStore> db_;
  std::unique_ptr<store::ArtifactStore> artifacts_;
  std::unique_ptr<CpuEngine> engine_;
};

// Every hostile string as the task's id and name (both land in the label) and the task directory,
// through every emitter of both export formats.
TEST_F(ExportHostileTest, EveryFormatStaysInertForEveryHostileString) {
  auto run = agents::testing::AddFinishedRun(*db_, *artifacts_, *engine_);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  auto record = db_->GetRun(run->run_id);
  ASSERT_TRUE(record.ok());
  auto k = LoadBestKernel(*db_, *artifacts_, *record, "");
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  const std::string benign_readme_lib = ExportReadme(*k, ExportFormat::kLib, {});
  const std::string benign_readme_jax = ExportReadme(*k, ExportFormat::kJaxFfi, {});

  fs::create_directories(dir_ / "stub" / "xla" / "ffi" / "api");
  std::ofstream(dir_ / "stub" / "xla" / "ffi" / "api" / "ffi.h") << kFfiStub;
  WriteJaxStub(dir_ / "pystub");
  const fs::path marker = dir_ / "PWNED";

  std::vector<std::string> examples, headers, shims, modules, whats;
  const std::vector<Hostile> table = HostileStrings(marker.string());
  for (size_t i = 0; i < table.size(); ++i) {
    const Hostile& h = table[i];
    SCOPED_TRACE(h.what);
    k->task_label = h.text + " " + h.text;
    k->task.directory = h.text;
    k->name = LibraryName(h.text);
    ASSERT_EQ(LibraryName(k->name), k->name);
    const fs::path out = dir_ / ("case" + std::to_string(i));
    fs::create_directories(out);
    const std::string header = CHeaderFor(k->name, *k->module, k->impl);
    const std::string example = CExampleFor(k->name, k->impl);
    const std::string shim = FfiShimSource(*k);
    const std::string py = JaxModuleSource(*k);
    const std::string readme_lib = ExportReadme(*k, ExportFormat::kLib, {});
    const std::string readme_jax = ExportReadme(*k, ExportFormat::kJaxFfi, {});
    for (const std::string* text : {&header, &example, &shim, &py, &readme_lib, &readme_jax}) {
      EXPECT_FALSE(HasRawControls(*text)) << *text;
    }
    // The optimize report (HTML; html::Escape): no markup and no raw control character.
    nlohmann::json result = {{"task", {{"id", h.text}, {"name", h.text + "<script>x</script>"},
                                       {"dir", h.text}}}};
    const std::string html = report::RenderOptimizeReport(result);
    EXPECT_EQ(html.find("<script"), std::string::npos);
    for (char c : html) {
      auto b = static_cast<unsigned char>(c);
      EXPECT_FALSE((b < 0x20 && c != '\n' && c != '\t' && c != '\r') || b == 0x7F)
          << "raw control character " << static_cast<int>(b) << " in the report";
    }
    // Plain text: the label cannot add lines of its own.
    EXPECT_EQ(Lines(readme_lib), Lines(benign_readme_lib)) << readme_lib;
    EXPECT_EQ(Lines(readme_jax), Lines(benign_readme_jax)) << readme_jax;
    std::ofstream(out / (k->name + ".h"), std::ios::binary) << header;
    std::ofstream(out / "example.c", std::ios::binary) << example;
    std::ofstream(out / (k->name + "_ffi.cc"), std::ios::binary) << shim;
    std::ofstream(out / (k->name + "_jax.py"), std::ios::binary) << py;

    examples.push_back((out / "example.c").string());
    headers.push_back((out / (k->name + ".h")).string());
    shims.push_back((out / (k->name + "_ffi.cc")).string());
    modules.push_back((out / (k->name + "_jax.py")).string());
    whats.push_back(h.what);
  }

  // One compiler run per language for the whole table (each file names itself in an error).
  // C with trigraphs on (a "??/" at a comment's end would splice the next line) and -Wall
  // -Werror (a "/*" inside the header's comment is -Wcomment); the headers as C++ too.
  auto all = [](std::vector<std::string> argv, const std::vector<std::string>& files) {
    argv.insert(argv.end(), files.begin(), files.end());
    return argv;
  };
  EXPECT_EQ(Compile(all({"cc", "-std=c11", "-trigraphs", "-Wall", "-Werror", "-fsyntax-only"},
                        examples)),
            "");
  EXPECT_EQ(Compile(all({"c++", "-std=c++17", "-trigraphs", "-Wall", "-Werror", "-fsyntax-only",
                         "-x", "c++"},
                        headers)),
            "");
  EXPECT_EQ(Compile(all({"c++", "-std=c++17", "-trigraphs", "-Wall", "-Werror", "-fsyntax-only",
                         "-I" + (dir_ / "stub").string()},
                        shims)),
            "");

  std::vector<std::string> argv = {task::BridgePython(), "-c", kImporter};
  argv.insert(argv.end(), modules.begin(), modules.end());
  auto p = RunProcess(argv, 120, (dir_ / "pystub").string());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_EQ(p->exit_code, 0) << p->err;
  std::istringstream lines(p->out);
  std::string line;
  for (size_t i = 0; i < modules.size(); ++i) {
    ASSERT_TRUE(std::getline(lines, line)) << p->out << p->err;
    EXPECT_EQ(line, "ok") << whats[i];
  }
  EXPECT_FALSE(fs::exists(marker)) << "a payload ran on import";
}

// End to end through ExportRun and the real toolchain: a task whose id and name hold the
// printable hostile characters task.yaml accepts (control characters it refuses, see
// task_test's RefusesControlCharactersInIdAndName). The lib export is compiled and run; with JAX
// installed the jax-ffi export's shim is compiled against jaxlib and its module imported by real
// JAX.
TEST_F(ExportHostileTest, PrintableHostileTaskExportsAndImportsCleanly) {
  const fs::path marker = dir_ / "PWNED";
  const std::string py = "__import__('pathlib').Path('" + marker.string() + "').touch()";
  const fs::path task = dir_ / "task";
  fs::create_directories(task);
  std::ofstream(task / "module.hlo") << agents::testing::kFixtureModule;
  std::string yaml = agents::testing::kFixtureYaml;
  // YAML double-quoted: \" and \\ are escapes.
  auto yaml_quote = [](const std::string& s) {
    std::string out;
    for (char c : s) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    return out;
  };
  const std::string id = "*/ #error injected /* ?" "?/ \\";
  const std::string name = "\"\"\"; " + py + "; \"\"\" \\N{x}";
  yaml.replace(yaml.find("\"fx1\""), 5, "\"" + yaml_quote(id) + "\"");
  yaml.replace(yaml.find("\"axpy_fixture\""), 14, "\"" + yaml_quote(name) + "\"");
  std::ofstream(task / "task.yaml") << yaml;
  auto run = agents::testing::AddFinishedRun(*db_, *artifacts_, *engine_, {.task_dir = task.string()});
  ASSERT_TRUE(run.ok()) << run.status().ToString();

  auto lib = ExportRun(*db_, *artifacts_, run->run_id, Options());
  ASSERT_TRUE(lib.ok()) << lib.status().ToString();
  EXPECT_EQ(lib->name, LibraryName(name));
  const fs::path out = dir_ / "lib";
  fs::create_directories(out);
  for (const ExportedFile& f : lib->files) {
    std::ofstream(out / f.name, std::ios::binary) << f.contents;
    if (f.role == "readme") {
      EXPECT_NE(f.contents.find(OneLineText(id)), std::string::npos) << f.contents;
    }
  }
  EXPECT_EQ(Compile({"cc", "-std=c11", "-trigraphs", "-Wall", "-Werror", "-O1",
                     (out / "example.c").string(), "-o", (out / "example").string(),
                     "-L" + out.string(), "-lmaxkernel_" + lib->name,
                     "-Wl,-rpath," + out.string()}),
            "");
  auto ran = RunProcess({(out / "example").string()}, 60);
  ASSERT_TRUE(ran.ok());
  EXPECT_EQ(ran->exit_code, 0) << ran->err;

  auto probe = RunProcess({task::BridgePython(), "-c", "import jax.ffi"}, 120);
  if (!probe.ok() || probe->exit_code != 0) GTEST_SKIP() << "JAX is not installed";
  ExportOptions options = Options();
  options.format = ExportFormat::kJaxFfi;
  auto jax = ExportRun(*db_, *artifacts_, run->run_id, options);
  ASSERT_TRUE(jax.ok()) << jax.status().ToString();  // the shim compiled against jaxlib
  const fs::path jout = dir_ / "jax";
  fs::create_directories(jout);
  for (const ExportedFile& f : jax->files) std::ofstream(jout / f.name, std::ios::binary) << f.contents;
  auto imported = RunProcess(
      {task::BridgePython(), "-c",
       "import sys; sys.path.insert(0, sys.argv[1]); import importlib; "
       "m = importlib.import_module(sys.argv[2]); print(m.TARGET_NAME)",
       jout.string(), jax->name + "_jax"},
      120);
  ASSERT_TRUE(imported.ok());
  EXPECT_EQ(imported->exit_code, 0) << imported->err;
  EXPECT_FALSE(fs::exists(marker)) << "a payload ran on import";
}

}  // namespace
}  // namespace mk::exports
