#include "task/bridge.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

namespace mk::task {
namespace {

// Sets an environment variable for one test and puts back what was there.
class ScopedEnv {
 public:
  // nullopt: unset it.
  ScopedEnv(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      ::setenv(name, value->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// A stand-in "python" that prints the JAX_PLATFORMS it was started with, so the test sees the
// child's environment without starting jax.
class FakePython {
 public:
  FakePython() {
    char buf[] = "/tmp/mk_bridge_test_XXXXXX";
    dir_ = ::mkdtemp(buf) ? buf : "";
    path_ = dir_ + "/python";
    std::ofstream(path_) << "#!/bin/sh\nprintf '%s' \"${JAX_PLATFORMS-unset}\"\n";
    ::chmod(path_.c_str(), 0755);
  }
  ~FakePython() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string dir_, path_;
};

// With libtpu installed, jax probes for TPUs unless JAX_PLATFORMS says cpu; the bridge must run
// on the CPU platform whatever the caller's environment says (TPU compiles are compile-only).
TEST(RunBridge, ChildRunsWithJaxPlatformsCpuWhateverTheCallerSet) {
  FakePython fake;
  ScopedEnv python("MAXKERNEL_PYTHON", fake.path());
  for (const char* callers : {"tpu", "", "cuda,cpu"}) {
    ScopedEnv platforms("JAX_PLATFORMS", std::string(callers));
    Result<ProcessResult> r = RunBridge({"anything"}, 30);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->exit_code, 0) << r->err;
    EXPECT_EQ(r->out, "cpu") << "caller's JAX_PLATFORMS='" << callers << "'";
    // Our own environment is left as it was.
    EXPECT_STREQ(std::getenv("JAX_PLATFORMS"), callers);
  }
  ScopedEnv unset("JAX_PLATFORMS", std::nullopt);
  Result<ProcessResult> r = RunBridge({"anything"}, 30);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->out, "cpu");
}

}  // namespace
}  // namespace mk::task
