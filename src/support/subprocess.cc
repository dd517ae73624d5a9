#include "support/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace mk {

Result<ProcessResult> RunProcess(const std::vector<std::string>& argv, double timeout_s,
                                 const std::string& working_dir) {
  if (argv.empty()) return InvalidArgument("RunProcess: empty argv");
  int out_pipe[2], err_pipe[2], exec_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) || pipe2(err_pipe, O_CLOEXEC) || pipe2(exec_pipe, O_CLOEXEC)) {
    return IoError(std::string("pipe: ") + std::strerror(errno));
  }
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);

  auto start = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid < 0) return IoError(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);  // own process group, so a timeout kills its children too
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    if (!working_dir.empty() && chdir(working_dir.c_str()) != 0) _exit(127);
    execvp(cargv[0], cargv.data());
    int e = errno;
    (void)!write(exec_pipe[1], &e, sizeof(e));
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  close(exec_pipe[1]);
  int exec_errno = 0;
  ssize_t n = read(exec_pipe[0], &exec_errno, sizeof(exec_errno));
  close(exec_pipe[0]);
  if (n == sizeof(exec_errno)) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    waitpid(pid, nullptr, 0);
    return NotFound("cannot run '" + argv[0] + "': " + std::strerror(exec_errno));
  }

  ProcessResult result;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    int wait_ms = -1;
    if (timeout_s > 0) {
      double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (elapsed >= timeout_s) {
        result.timed_out = true;
        kill(-pid, SIGKILL);
        break;
      }
      wait_ms = static_cast<int>((timeout_s - elapsed) * 1000) + 1;
    }
    int r = poll(fds, 2, wait_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) break;
    for (auto& f : fds) {
      if (f.fd < 0 || !(f.revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t got = read(f.fd, buf, sizeof(buf));
      if (got <= 0) {
        close(f.fd);
        f.fd = -1;
        --open_fds;
      } else {
        (f.fd == out_pipe[0] ? result.out : result.err).append(buf, static_cast<size_t>(got));
      }
    }
  }
  for (auto& f : fds) {
    if (f.fd >= 0) close(f.fd);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (WIFSIGNALED(status)) {
    result.signaled = !result.timed_out;
    result.term_signal = WTERMSIG(status);
  } else if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  }
  return result;
}

}  // namespace mk
