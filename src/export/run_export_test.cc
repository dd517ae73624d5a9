#include "export/run_export.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "export/run_export_store.h"
#include "agents/run_fixture_test_util.h"
#include "store/sqlite_store.h"
#include "support/sha256.h"
#include "support/subprocess.h"
#include "task/bridge.h"

namespace mk::exports {

using agents::CpuEngine;
using agents::EngineOptions;

namespace {

namespace fs = std::filesystem;

// One compile cache and one engine for the suite: the fixture's kernel is compiled once.
class RunExportTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/mk-run-export-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    suite_dir_ = tmpl;
    EngineOptions options;
    options.cache_dir = suite_dir_ + "/cache";
    engine_ = new CpuEngine(options);
  }
  static void TearDownTestSuite() {
    delete engine_;
    engine_ = nullptr;
    std::error_code ec;
    fs::remove_all(suite_dir_, ec);
  }

  void SetUp() override {
    char tmpl[] = "/tmp/mk-run-export-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    auto db = store::SqliteStore::Open(dir_ + "/maxkernel.db");
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(*db);
    artifacts_ = std::make_unique<store::ArtifactStore>(dir_);
  }
  void TearDown() override {
    db_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  agents::testing::FixtureRun AddRun(const agents::testing::FixtureOptions& options = {}) {
    auto run = agents::testing::AddFinishedRun(*db_, *artifacts_, *engine_, options);
    EXPECT_TRUE(run.ok()) << run.status().ToString();
    return run.ok() ? *run : agents::testing::FixtureRun{};
  }

  // Writes the export's files into dir_/out and returns that folder.
  fs::path WriteOut(const RunExport& e) {
    fs::path out = fs::path(dir_) / "out";
    fs::create_directories(out);
    for (const ExportedFile& f : e.files) {
      std::ofstream(out / f.name, std::ios::binary) << f.contents;
    }
    return out;
  }

  // Exports build through the suite's compile cache, like the engine.
  static ExportOptions Options() {
    ExportOptions options;
    options.cache_dir = suite_dir_ + "/cache";
    return options;
  }

  static const ExportedFile* Find(const RunExport& e, const std::string& role) {
    for (const ExportedFile& f : e.files) {
      if (f.role == role) return &f;
    }
    return nullptr;
  }

  static std::string suite_dir_;
  static CpuEngine* engine_;
  std::string dir_;
  std::unique_ptr<store::SqliteStore> db_;
  std::unique_ptr<store::ArtifactStore> artifacts_;
};

std::string RunExportTest::suite_dir_;
CpuEngine* RunExportTest::engine_ = nullptr;

TEST_F(RunExportTest, LibFormatShipsTheStoredLibraryWithHeaderExampleAndReadme) {
  agents::testing::FixtureRun run = AddRun();
  auto e = ExportRun(*db_, *artifacts_, run.run_id, Options());
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_TRUE(e->refused.empty());
  EXPECT_EQ(e->name, "axpy_fixture");  // the task's name, not the module's
  EXPECT_EQ(e->candidate_id, run.last_candidate_id);
  EXPECT_EQ(e->measured_library_sha256, run.library_sha256);
  EXPECT_NE(e->library_sha256, run.library_sha256) << "shipped with its entry points renamed";
  EXPECT_EQ(e->module_sha256, run.module_sha256);
  EXPECT_EQ(e->implementation_hash, run.implementation_hash);

  std::vector<std::string> names;
  for (const ExportedFile& f : e->files) names.push_back(f.name);
  EXPECT_EQ(names, (std::vector<std::string>{"libmaxkernel_axpy_fixture.so", "axpy_fixture.h",
                                             "example.c", "README.txt"}));
  EXPECT_EQ(Sha256Hex(Find(*e, "library")->contents), e->library_sha256);
  const std::string& header = Find(*e, "header")->contents;
  EXPECT_NE(header.find("void axpy_fixture_kernel(void** buffers);"), std::string::npos);
  EXPECT_NE(header.find("int axpy_fixture_abi_version(void);"), std::string::npos);
  EXPECT_EQ(header.find("mk_kernel"), std::string::npos);
  EXPECT_NE(header.find("\"x.1\""), std::string::npos) << "parameter names come from the module";
  const std::string& readme = Find(*e, "readme")->contents;
  EXPECT_NE(readme.find("run " + std::to_string(run.run_id)), std::string::npos);
  EXPECT_NE(readme.find("fx1 axpy_fixture"), std::string::npos);
  EXPECT_NE(readme.find(run.library_sha256), std::string::npos);
  EXPECT_NE(readme.find(e->library_sha256), std::string::npos);
  EXPECT_NE(readme.find(run.module_sha256), std::string::npos);
  EXPECT_NE(readme.find("-lmaxkernel_axpy_fixture"), std::string::npos);

  // The files are usable as shipped: example.c builds against them and runs the kernel.
  // x = -0.75, -0.5, ... (example.c's inputs), y likewise: out[0] = 2*(-0.75) + (-0.75).
  fs::path out = WriteOut(*e);
  auto cc =
      RunProcess({"cc", "-O1", (out / "example.c").string(), "-o", (out / "example").string(),
                  "-L" + out.string(), "-lmaxkernel_axpy_fixture", "-Wl,-rpath," + out.string()},
                 120);
  ASSERT_TRUE(cc.ok());
  ASSERT_EQ(cc->exit_code, 0) << cc->err;
  auto ran = RunProcess({(out / "example").string()}, 60);
  ASSERT_TRUE(ran.ok());
  EXPECT_EQ(ran->exit_code, 0) << ran->err;
  EXPECT_NE(ran->out.find("output 0 (f32, 32 elements): -2.25"), std::string::npos) << ran->out;
}

TEST_F(RunExportTest, NameOptionOverridesTheTaskName) {
  agents::testing::FixtureRun run = AddRun();
  ExportOptions options = Options();
  options.name = "my-kernel";
  auto e = ExportRun(*db_, *artifacts_, run.run_id, options);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->name, "my_kernel");
  EXPECT_EQ(e->files.at(0).name, "libmaxkernel_my_kernel.so");
}

// Issue 29 item 3: every exported library used to define mk_kernel and mk_abi_version, so a
// program linking two of them called the first library's kernel twice. Two different kernels,
// exported under their own names, are linked into one C program that calls both.
TEST_F(RunExportTest, TwoExportedLibrariesLinkIntoOneProgram) {
  fs::path scale_task = fs::path(dir_) / "scale_task";
  fs::create_directories(scale_task);
  std::ofstream(scale_task / "module.hlo") << R"(HloModule fixture_scale

ENTRY main {
  x = f32[4,8] parameter(0)
  three = f32[] constant(3)
  b3 = f32[4,8] broadcast(three), dimensions={}
  ROOT r = f32[4,8] multiply(x, b3)
}
)";
  std::ofstream(scale_task / "task.yaml") << R"(format: 1
id: "fx2"
name: "scale_fixture"
parameters:
  - {name: "x", shape: [4, 8], dtype: f32, init: {kind: normal}}
outputs:
  - {shape: [4, 8], dtype: f32}
)";
  agents::testing::FixtureRun axpy = AddRun();
  agents::testing::FixtureRun scale = AddRun({.task_dir = scale_task.string(), .with_best = true});
  auto a = ExportRun(*db_, *artifacts_, axpy.run_id, Options());
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  auto b = ExportRun(*db_, *artifacts_, scale.run_id, Options());
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  fs::path da = fs::path(dir_) / "a", db = fs::path(dir_) / "b";
  for (const auto& [e, d] : {std::pair{&*a, da}, std::pair{&*b, db}}) {
    fs::create_directories(d);
    for (const ExportedFile& f : e->files) std::ofstream(d / f.name, std::ios::binary) << f.contents;
  }
  std::ofstream(fs::path(dir_) / "both.c") << R"(#include <stdio.h>
#include "axpy_fixture.h"
#include "scale_fixture.h"

int main(void) {
  float x[32], y[8], axpy_out[32], scale_out[32];
  for (int i = 0; i < 32; ++i) x[i] = 0.5f * (float)i;
  for (int j = 0; j < 8; ++j) y[j] = (float)j;
  void* axpy_buffers[MK_AXPY_FIXTURE_NUM_BUFFERS] = {x, y, axpy_out};
  void* scale_buffers[MK_SCALE_FIXTURE_NUM_BUFFERS] = {x, scale_out};
  if (axpy_fixture_abi_version() != MK_AXPY_FIXTURE_ABI_VERSION) return 3;
  if (scale_fixture_abi_version() != MK_SCALE_FIXTURE_ABI_VERSION) return 3;
  axpy_fixture_kernel(axpy_buffers);
  scale_fixture_kernel(scale_buffers);
  int bad = 0;
  for (int i = 0; i < 32; ++i) {
    if (axpy_out[i] != 2.0f * x[i] + y[i % 8]) bad++;
    if (scale_out[i] != 3.0f * x[i]) bad++;
  }
  printf("%d wrong\n", bad);
  return bad != 0;
}
)";
  fs::path exe = fs::path(dir_) / "both";
  auto cc = RunProcess({"cc", "-std=c99", "-Wall", "-Werror", "-O1",
                        (fs::path(dir_) / "both.c").string(), "-I" + da.string(),
                        "-I" + db.string(), "-o", exe.string(), "-L" + da.string(),
                        "-lmaxkernel_axpy_fixture", "-L" + db.string(), "-lmaxkernel_scale_fixture",
                        "-Wl,-rpath," + da.string() + ":" + db.string()},
                       120);
  ASSERT_TRUE(cc.ok());
  ASSERT_EQ(cc->exit_code, 0) << cc->err;
  auto ran = RunProcess({exe.string()}, 60);
  ASSERT_TRUE(ran.ok());
  EXPECT_EQ(ran->exit_code, 0) << ran->out << ran->err;
  EXPECT_EQ(ran->out, "0 wrong\n");

  // Nothing but the two prefixed entry points is exported (no clash on any other symbol).
  auto nm = RunProcess({"nm", "-D", "--defined-only", (da / "libmaxkernel_axpy_fixture.so").string()}, 60);
  if (nm.ok() && nm->exit_code == 0) {
    EXPECT_NE(nm->out.find(" axpy_fixture_kernel\n"), std::string::npos) << nm->out;
    EXPECT_NE(nm->out.find(" axpy_fixture_abi_version\n"), std::string::npos) << nm->out;
    EXPECT_EQ(nm->out.find("mk_kernel"), std::string::npos) << nm->out;
    EXPECT_EQ(nm->out.find("mk_abi_version"), std::string::npos) << nm->out;
  }
}

TEST_F(RunExportTest, RunWithoutBestCandidateIsRefusedWithTheReason) {
  agents::testing::FixtureRun run = AddRun({.task_dir = "", .with_best = false});
  auto e = ExportRun(*db_, *artifacts_, run.run_id, Options());
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_TRUE(e->files.empty());
  EXPECT_NE(e->refused.find("no correct candidate"), std::string::npos) << e->refused;
  EXPECT_NE(e->refused.find("status failed"), std::string::npos) << e->refused;
  EXPECT_NE(e->refused.find("2 candidates"), std::string::npos) << e->refused;
}

TEST_F(RunExportTest, UnknownRunIsNotFound) {
  auto e = ExportRun(*db_, *artifacts_, 4242, Options());
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(e.status().message().find("4242"), std::string::npos);
}

TEST_F(RunExportTest, CorruptedLibraryIsDetectedAndNamed) {
  agents::testing::FixtureRun run = AddRun();
  fs::path lib = artifacts_->PathFor(run.library_sha256);
  ::chmod(lib.c_str(), 0644);
  {
    std::fstream f(lib, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x5a');  // one flipped byte in the middle of the ELF file
  }
  auto e = ExportRun(*db_, *artifacts_, run.run_id, Options());
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("corrupted"), std::string::npos) << e.status().ToString();
  EXPECT_NE(e.status().message().find(run.library_sha256), std::string::npos);
}

TEST_F(RunExportTest, MissingModuleArtifactIsAnError) {
  agents::testing::FixtureRun run = AddRun();
  fs::remove(artifacts_->PathFor(run.module_sha256));
  auto e = ExportRun(*db_, *artifacts_, run.run_id, Options());
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), ErrorCode::kNotFound) << e.status().ToString();
  EXPECT_NE(e.status().message().find("HLO module"), std::string::npos) << e.status().ToString();
}

TEST_F(RunExportTest, ShimThatDoesNotCompileFailsWithTheCompilersFirstError) {
  agents::testing::FixtureRun run = AddRun();
  ExportOptions options = Options();
  options.format = ExportFormat::kJaxFfi;
  options.jax_include_dir = dir_ + "/no-jaxlib-here";  // ffi.h cannot be found
  auto e = ExportRun(*db_, *artifacts_, run.run_id, options);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), ErrorCode::kInternal);
  EXPECT_NE(e.status().message().find("does not compile"), std::string::npos);
  EXPECT_NE(e.status().message().find("xla/ffi/api/ffi.h"), std::string::npos)
      << e.status().ToString();
}

TEST_F(RunExportTest, ShimAndModuleTextsDescribeTheBuffers) {
  agents::testing::FixtureRun run = AddRun();
  auto loaded = db_->GetRun(run.run_id);
  ASSERT_TRUE(loaded.ok());
  auto k = LoadBestKernel(*db_, *artifacts_, *loaded, "");
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  std::string shim = FfiShimSource(*k);
  EXPECT_NE(shim.find("XLA_FFI_DEFINE_HANDLER_SYMBOL(MkFfi_axpy_fixture, Call"), std::string::npos);
  EXPECT_NE(shim.find(".Arg<ffi::AnyBuffer>()\n                                  "
                      ".Arg<ffi::AnyBuffer>()\n                                  "
                      ".Ret<ffi::AnyBuffer>());"),
            std::string::npos)
      << shim;
  EXPECT_NE(shim.find("void* buffers[3] = {in0.untyped_data(), in1.untyped_data(), "
                      "out0->untyped_data()};"),
            std::string::npos)
      << shim;
  std::string py = JaxModuleSource(*k);
  EXPECT_NE(py.find("(\"x.1\", (4, 8), jnp.float32),"), std::string::npos) << py;
  EXPECT_NE(py.find("(\"y\", (8,), jnp.float32),"), std::string::npos) << py;
  EXPECT_NE(py.find("_TUPLE_RESULT = False"), std::string::npos);
  EXPECT_NE(py.find("def axpy_fixture(*args):"), std::string::npos);
  EXPECT_NE(py.find(FfiTargetName(*k)), std::string::npos);
  EXPECT_EQ(JaxFunctionName("lambda"), "lambda_");
}

// Needs JAX (jaxlib's FFI headers); the Python round trip (python/tests/test_ffi_export.py)
// calls the result from JAX. Here: the shim is a loadable library exporting the handler.
TEST_F(RunExportTest, JaxFfiFormatCompilesALoadableShim) {
  auto probe = RunProcess({task::BridgePython(), "-c", "import jax.ffi"}, 120);
  if (!probe.ok() || probe->exit_code != 0) GTEST_SKIP() << "JAX is not installed";
  agents::testing::FixtureRun run = AddRun();
  ExportOptions options = Options();
  options.format = ExportFormat::kJaxFfi;
  auto e = ExportRun(*db_, *artifacts_, run.run_id, options);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  std::vector<std::string> names;
  for (const ExportedFile& f : e->files) names.push_back(f.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"libmaxkernel_axpy_fixture.so", "axpy_fixture_jax.py",
                                      "axpy_fixture_ffi.cc", "axpy_fixture_ffi.so", "README.txt"}));
  fs::path out = WriteOut(*e);
  void* shim = ::dlopen((out / "axpy_fixture_ffi.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(shim, nullptr) << ::dlerror();  // finds the library beside it through $ORIGIN
  EXPECT_NE(::dlsym(shim, "MkFfi_axpy_fixture"), nullptr);
  auto abi = reinterpret_cast<int (*)()>(::dlsym(shim, "MkFfi_axpy_fixture_abi_version"));
  ASSERT_NE(abi, nullptr);
  EXPECT_EQ(abi(), 1);
  ::dlclose(shim);
}

// ---- opening the store, artifact prefixes ----------------------------------------------------

TEST(OpenExistingStore, MissingDatabaseIsNotFoundAndNotCreated) {
  char tmpl[] = "/tmp/mk-open-store-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string home = tmpl;
  auto env = [&](const char* name) -> std::optional<std::string> {
    if (std::string(name) == "MAXKERNEL_HOME") return home;
    return std::nullopt;
  };
  auto opened = OpenExistingStore("", env);
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(opened.status().message().find(home + "/maxkernel.db"), std::string::npos)
      << opened.status().ToString();
  EXPECT_FALSE(fs::exists(home + "/maxkernel.db"));
  auto other = OpenExistingStore(home + "/other.db", env);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("--db"), std::string::npos);
  EXPECT_FALSE(fs::exists(home + "/other.db"));
  fs::remove_all(home);
}

TEST(ResolveArtifactSha, PrefixesUniqueAmbiguousUnknownAndMalformed) {
  char tmpl[] = "/tmp/mk-artifact-prefix-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  store::ArtifactStore artifacts(tmpl);
  auto sha = artifacts.Put("hello");
  ASSERT_TRUE(sha.ok());
  const std::string& s = *sha;

  auto full = ResolveArtifactSha(artifacts, s);
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(*full, s);
  std::string upper = s.substr(0, 10);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  auto by_prefix = ResolveArtifactSha(artifacts, upper);
  ASSERT_TRUE(by_prefix.ok()) << by_prefix.status().ToString();
  EXPECT_EQ(*by_prefix, s);

  auto short_prefix = ResolveArtifactSha(artifacts, s.substr(0, 7));
  ASSERT_FALSE(short_prefix.ok());
  EXPECT_EQ(short_prefix.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(short_prefix.status().message().find("8 to 64"), std::string::npos);
  EXPECT_EQ(ResolveArtifactSha(artifacts, "zzzzzzzzzz").status().code(),
            ErrorCode::kInvalidArgument);
  std::string unknown = s.substr(0, 2) == "00" ? "11111111" : "00000000";
  EXPECT_EQ(ResolveArtifactSha(artifacts, unknown).status().code(), ErrorCode::kNotFound);

  // A second artifact sharing the first 8 digits cannot be made on purpose; a file under such a
  // name in the same folder stands in for one (only names are compared).
  std::string twin = s.substr(0, 63) + (s.back() == '0' ? '1' : '0');
  fs::copy_file(artifacts.PathFor(s), artifacts.PathFor(twin));
  auto ambiguous = ResolveArtifactSha(artifacts, s.substr(0, 8));
  ASSERT_FALSE(ambiguous.ok());
  EXPECT_EQ(ambiguous.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(ambiguous.status().message().find("ambiguous"), std::string::npos);
  EXPECT_NE(ambiguous.status().message().find("2 artifacts"), std::string::npos);
  fs::remove_all(tmpl);
}

// Builds a store holding a finished run of a suite task for python/tests/test_ffi_export.py,
// which needs one before `maxkernel optimize` can make it: with MK_EXPORT_FIXTURE_HOME set,
// the database and artifacts go there (a data directory) and MK_EXPORT_FIXTURE_TASK names the
// task (default: the committed 12p ci task). Without the variable, the same is built in a
// temporary folder and checked to be exportable.
TEST(FixtureForPython, WritesAnExportableRunOfASuiteTask) {
  const char* home_env = std::getenv("MK_EXPORT_FIXTURE_HOME");
  const char* task_env = std::getenv("MK_EXPORT_FIXTURE_TASK");
  std::string home;
  bool temporary = !(home_env && *home_env);
  if (temporary) {
    char tmpl[] = "/tmp/mk-fixture-python-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    home = tmpl;
  } else {
    home = home_env;
    fs::create_directories(home);
  }
  std::string task =
      task_env && *task_env ? task_env : std::string(MK_SOURCE_DIR) + "/bench/jaxbench/12p/ci";
  {
    auto db = store::SqliteStore::Open(home + "/maxkernel.db");
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    store::ArtifactStore artifacts(home);
    CpuEngine engine;
    auto run =
        agents::testing::AddFinishedRun(**db, artifacts, engine, {.task_dir = task, .with_best = true});
    ASSERT_TRUE(run.ok()) << run.status().ToString();
    auto e = ExportRun(**db, artifacts, run->run_id);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    EXPECT_TRUE(e->refused.empty());
    std::printf("run %lld in %s\n", static_cast<long long>(run->run_id), home.c_str());
  }
  if (temporary) fs::remove_all(home);
}

}  // namespace
}  // namespace mk::exports
