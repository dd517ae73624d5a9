#include "runtime/compiler.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "runtime/cpu_executor.h"
#include "support/sha256.h"

namespace mk::runtime {
namespace {

namespace fs = std::filesystem;

// out[i] = a[i] + b[i] + `bias` over 4 floats, with the maxkernel ABI.
std::string AddSource(int bias) {
  return "extern \"C\" int mk_abi_version() { return 1; }\n"
         "extern \"C\" void mk_kernel(void** buffers) {\n"
         "  const float* a = static_cast<const float*>(buffers[0]);\n"
         "  const float* b = static_cast<const float*>(buffers[1]);\n"
         "  float* out = static_cast<float*>(buffers[2]);\n"
         "  for (int i = 0; i < 4; ++i) out[i] = a[i] + b[i] + " +
         std::to_string(bias) + ";\n}\n";
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteAll(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
}

unsigned Mode(const std::string& path) {
  struct stat st;
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 0777;
}

class CompilerCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mk-compiler-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    options_.cache_dir = dir_ + "/cache";
    options_.flags = {"-O1", "-std=c++20", "-fPIC", "-shared"};
  }
  void TearDown() override { fs::remove_all(dir_); }

  CompiledLibrary MustCompile(CompilerDriver& compiler, const std::string& source) {
    Result<CompiledLibrary> lib = compiler.Compile(source);
    EXPECT_TRUE(lib.ok()) << lib.status().ToString();
    return lib.ok() ? *lib : CompiledLibrary{};
  }

  std::string dir_;
  CompileOptions options_;
};

TEST_F(CompilerCacheTest, AnUnchangedLibraryIsACacheHit) {
  CompilerDriver compiler(options_);
  CompiledLibrary first = MustCompile(compiler, AddSource(1));
  EXPECT_FALSE(first.cache_hit);
  CompiledLibrary again = MustCompile(compiler, AddSource(1));
  EXPECT_TRUE(again.cache_hit);
  EXPECT_EQ(again.so_sha256, Sha256Hex(ReadAll(again.so_path)));
}

TEST_F(CompilerCacheTest, ThreadsCompilingAtOnceShareTheCacheSafely) {
  // A batch compiled in parallel: two threads on one source (a duplicate candidate), two on
  // others, all on one driver, with no compile run before (the identity and the cache root are
  // first asked for concurrently).
  CompilerDriver compiler(options_);
  const std::vector<std::string> sources = {AddSource(7), AddSource(7), AddSource(8), AddSource(9)};
  std::vector<Result<CompiledLibrary>> libs(sources.size(), Internal("not run"));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < sources.size(); ++i) {
    threads.emplace_back([&, i] { libs[i] = compiler.Compile(sources[i]); });
  }
  for (auto& t : threads) t.join();
  for (const auto& lib : libs) ASSERT_TRUE(lib.ok()) << lib.status().ToString();
  EXPECT_EQ(libs[0]->so_path, libs[1]->so_path);
  EXPECT_NE(libs[0]->so_path, libs[2]->so_path);
  for (const auto& lib : libs) EXPECT_EQ(lib->so_sha256, Sha256Hex(ReadAll(lib->so_path)));
  // No temporary file is left behind, and every library is a cache hit now.
  for (const auto& e : fs::recursive_directory_iterator(options_.cache_dir)) {
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
  }
  for (const auto& src : sources) EXPECT_TRUE(MustCompile(compiler, src).cache_hit);
}

TEST_F(CompilerCacheTest, APlantedLibraryIsRefusedAndRebuilt) {
  CompilerDriver compiler(options_);
  CompiledLibrary good = MustCompile(compiler, AddSource(1));
  CompiledLibrary other = MustCompile(compiler, AddSource(2));
  std::string good_bytes = ReadAll(good.so_path);
  std::string planted = ReadAll(other.so_path);
  ASSERT_NE(good_bytes, planted);
  WriteAll(good.so_path, planted);  // another library copied over the cached one

  CompiledLibrary again = MustCompile(compiler, AddSource(1));
  EXPECT_FALSE(again.cache_hit) << "a planted library was handed out as a cache hit";
  EXPECT_NE(ReadAll(again.so_path), planted);
  EXPECT_EQ(Sha256Hex(ReadAll(again.so_path)), again.so_sha256);
  EXPECT_TRUE(MustCompile(compiler, AddSource(1)).cache_hit);  // the rebuilt one is trusted
}

TEST_F(CompilerCacheTest, ATruncatedLibraryIsRebuilt) {
  CompilerDriver compiler(options_);
  CompiledLibrary lib = MustCompile(compiler, AddSource(1));
  std::string bytes = ReadAll(lib.so_path);
  WriteAll(lib.so_path, bytes.substr(0, bytes.size() / 3));
  CompiledLibrary again = MustCompile(compiler, AddSource(1));
  EXPECT_FALSE(again.cache_hit);
  EXPECT_EQ(ReadAll(again.so_path).size(), bytes.size());
}

TEST_F(CompilerCacheTest, ALibraryWithoutItsRecordIsRebuilt) {
  CompilerDriver compiler(options_);
  CompiledLibrary lib = MustCompile(compiler, AddSource(1));
  fs::remove(lib.so_path + ".sha256");
  EXPECT_FALSE(MustCompile(compiler, AddSource(1)).cache_hit);
}

TEST_F(CompilerCacheTest, TheCacheIsPrivate) {
  ::umask(022);
  CompilerDriver compiler(options_);
  CompiledLibrary lib = MustCompile(compiler, AddSource(1));
  EXPECT_EQ(Mode(options_.cache_dir), 0700u);
  EXPECT_EQ(Mode(fs::path(lib.so_path).parent_path().string()), 0700u);
  EXPECT_EQ(Mode(lib.so_path), 0600u);
  EXPECT_EQ(Mode(lib.so_path + ".sha256"), 0600u);
  EXPECT_EQ(Mode(lib.source_path), 0600u);
}

TEST_F(CompilerCacheTest, AWorldWritableCacheOfOursIsTightened) {
  fs::create_directories(options_.cache_dir);
  ASSERT_EQ(::chmod(options_.cache_dir.c_str(), 0777), 0);
  CompilerDriver compiler(options_);
  MustCompile(compiler, AddSource(1));
  EXPECT_EQ(Mode(options_.cache_dir), 0700u);
}

TEST_F(CompilerCacheTest, ACacheOwnedBySomeoneElseIsRefused) {
  std::string foreign = dir_ + "/foreign";
  if (::geteuid() == 0) {
    fs::create_directories(foreign);
    ASSERT_EQ(::chown(foreign.c_str(), 65534, 65534), 0);
  } else {
    foreign = "/tmp";  // owned by root, not by us
  }
  Status s = EnsurePrivateDirectory(foreign);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::kEnvironment);
  EXPECT_NE(s.message().find("not by this user"), std::string::npos) << s.message();
}

TEST_F(CompilerCacheTest, ASymlinkedCacheIsRefused) {
  fs::create_directories(dir_ + "/real");
  fs::create_directory_symlink(dir_ + "/real", dir_ + "/link");
  Status s = EnsurePrivateDirectory(dir_ + "/link");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::kEnvironment);
}

TEST_F(CompilerCacheTest, AnUnusableCacheIsAnEnvironmentError) {
  WriteAll(dir_ + "/file", "not a directory");
  options_.cache_dir = dir_ + "/file/cache";
  CompilerDriver compiler(options_);
  Result<CompiledLibrary> lib = compiler.Compile(AddSource(1));
  ASSERT_FALSE(lib.ok());
  EXPECT_EQ(lib.status().code(), ErrorCode::kEnvironment) << lib.status().ToString();
}

TEST_F(CompilerCacheTest, WithoutHomeTheCacheIsNeverShared) {
  std::string saved_home = getenv("HOME") ? getenv("HOME") : "";
  std::string saved_cache = getenv("MAXKERNEL_CACHE") ? getenv("MAXKERNEL_CACHE") : "";
  unsetenv("HOME");
  unsetenv("MAXKERNEL_CACHE");
  std::string dir = DefaultCompileCacheDir();
  if (!saved_home.empty()) setenv("HOME", saved_home.c_str(), 1);
  if (!saved_cache.empty()) setenv("MAXKERNEL_CACHE", saved_cache.c_str(), 1);
  EXPECT_NE(dir, "/tmp/.cache/maxkernel/compile");
  if (dir.rfind("/tmp", 0) == 0) {
    EXPECT_EQ(dir, "/tmp/maxkernel-" + std::to_string(::geteuid()));
  }
}

// Issue 30 hole 2: other caches (bench-tasks) fell back to /tmp/.cache/maxkernel without HOME.
TEST_F(CompilerCacheTest, UserCacheDirsAreNeverShared) {
  std::string saved_home = getenv("HOME") ? getenv("HOME") : "";
  std::string saved_xdg = getenv("XDG_CACHE_HOME") ? getenv("XDG_CACHE_HOME") : "";
  setenv("XDG_CACHE_HOME", "/x/cache", 1);
  EXPECT_EQ(UserCacheDir("bench-tasks"), "/x/cache/maxkernel/bench-tasks");
  unsetenv("XDG_CACHE_HOME");
  setenv("HOME", "/home/someone", 1);
  EXPECT_EQ(UserCacheDir("bench-tasks"), "/home/someone/.cache/maxkernel/bench-tasks");
  unsetenv("HOME");
  std::string dir = UserCacheDir("bench-tasks");
  if (!saved_home.empty()) setenv("HOME", saved_home.c_str(), 1);
  if (!saved_xdg.empty()) setenv("XDG_CACHE_HOME", saved_xdg.c_str(), 1);
  EXPECT_EQ(dir.find("/tmp/.cache"), std::string::npos) << dir;
  if (dir.rfind("/tmp", 0) == 0) {
    EXPECT_EQ(dir, "/tmp/maxkernel-" + std::to_string(::geteuid()) + "-bench-tasks");
  }
}

TEST_F(CompilerCacheTest, StaleTempFilesOfDeadProcessesAreRemoved) {
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);  // `child` is now a pid with no process
  fs::create_directories(dir_ + "/c");
  std::string stale = dir_ + "/c/abc.so.tmp." + std::to_string(child);
  std::string live = dir_ + "/c/abc.so.tmp." + std::to_string(::getppid());
  std::string other = dir_ + "/c/abc.so";
  for (const auto& p : {stale, live, other}) WriteAll(p, "x");
  EXPECT_EQ(RemoveStaleTempFiles(dir_ + "/c"), 1);
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_TRUE(fs::exists(other));
}

TEST_F(CompilerCacheTest, ACachedLibraryThatFailsToLoadIsRebuilt) {
  CompilerDriver compiler(options_);
  SandboxRunner sandbox;
  CpuExecutor executor(compiler, sandbox);
  codegen::Implementation impl;
  impl.target = "cpu";
  impl.sources.push_back({"k.cc", AddSource(0)});
  hlo::Shape shape(hlo::DType::kF32, {4});
  impl.buffers = {{codegen::BufferSlot::Role::kParameter, 0, shape, 16},
                  {codegen::BufferSlot::Role::kParameter, 1, shape, 16},
                  {codegen::BufferSlot::Role::kOutput, 0, shape, 16}};
  MustCompile(compiler, AddSource(0));
  // Bytes that verify against their (rewritten) record but are no ELF: only loading finds out.
  Result<CompiledLibrary> cached = executor.Build(impl);
  ASSERT_TRUE(cached.ok());
  ASSERT_TRUE(cached->cache_hit);
  WriteAll(cached->so_path, "not an ELF file");
  WriteAll(cached->so_path + ".sha256", Sha256Hex("not an ELF file") + "\n");
  cached = executor.Build(impl);
  ASSERT_TRUE(cached.ok());
  ASSERT_TRUE(cached->cache_hit);

  hlo::Literal a(shape), b(shape);
  for (int i = 0; i < 4; ++i) {
    a.SetDouble(i, i);
    b.SetDouble(i, 10 * i);
  }
  Result<Execution> ex = executor.Run(*cached, impl, {a, b});
  ASSERT_TRUE(ex.ok()) << ex.status().ToString();
  ASSERT_TRUE(ex->outcome.ok()) << ex->outcome.message;
  float out[4];
  std::memcpy(out, ex->outputs[0].raw(), sizeof out);
  EXPECT_EQ(out[3], 33.0f);
}

}  // namespace
}  // namespace mk::runtime
