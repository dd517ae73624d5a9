// Helpers for the store tests: a private temporary directory, and forking a child process that
// reports success through its exit code (a child must never run gtest assertions).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>

namespace mk::store::testing {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "mk_store_XXXXXX").string();
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Forks; the child runs `body` and exits with its return value (0 = success) without running
// the parent's atexit handlers or gtest's. Returns the child's pid (or -1).
inline pid_t ForkChild(const std::function<int()>& body) {
  std::fflush(nullptr);  // buffered output would otherwise be written twice
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(body());
  return pid;
}

// Waits for `pid`; returns its exit code, or 128 + signal when it was killed.
inline int WaitChild(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace mk::store::testing
