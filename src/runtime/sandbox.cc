#include "runtime/sandbox.h"

#include <algorithm>
#include <dlfcn.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "runtime/kernel_abi.h"

namespace mk::runtime {
namespace {

using json = nlohmann::json;
constexpr size_t kMaxMessage = 1 << 20;
// Timing samples per reply (see WorkerMain): about 25 bytes each as JSON, far below the
// socket's default send buffer.
constexpr size_t kMaxTimeSamples = 4096;

const char* StatusKey(RunStatus s) { return RunStatusName(s); }

json EnvironmentJson(const std::vector<std::pair<std::string, std::string>>& environment) {
  json env = json::object();
  for (const auto& [name, value] : environment) env[name] = value;
  return env;
}

RunStatus StatusFromKey(const std::string& k) {
  for (RunStatus s : {RunStatus::kOk, RunStatus::kCrashed, RunStatus::kTimedOut,
                      RunStatus::kOutOfMemory, RunStatus::kLoadFailed}) {
    if (k == RunStatusName(s)) return s;
  }
  return RunStatus::kInternalError;
}

bool SendMessage(int sock, const std::string& text, int fd_to_pass) {
  msghdr msg{};
  iovec iov{const_cast<char*>(text.data()), text.size()};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd_to_pass >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd_to_pass, sizeof(int));
  }
  ssize_t n;
  do {
    n = sendmsg(sock, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(text.size());
}

// Returns false on EOF/error. `fd_out` receives a passed descriptor (or -1).
bool ReceiveMessage(int sock, std::string& text, int* fd_out) {
  text.assign(kMaxMessage, '\0');
  msghdr msg{};
  iovec iov{text.data(), text.size()};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n;
  do {
    n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return false;
  text.resize(static_cast<size_t>(n));
  if (fd_out) {
    *fd_out = -1;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    if (c && c->cmsg_type == SCM_RIGHTS) std::memcpy(fd_out, CMSG_DATA(c), sizeof(int));
  }
  return true;
}

// In the worker: load, poison, run, time. Writes one JSON line to `out_fd`, then exits.
[[noreturn]] void WorkerMain(const json& req, int region_fd, int out_fd) {
  auto finish = [&](const json& result) {
    std::string s = result.dump();
    (void)!write(out_fd, s.data(), s.size());
    _exit(0);
  };
  // A kernel's fault must kill the worker with its signal, so the server can report it as a
  // crash: drop any handler inherited from the parent (sanitizer runtimes install some).
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) signal(sig, SIG_DFL);
  size_t limit = req.value("memory_limit_bytes", size_t{0});
  if (limit > 0) {
    rlimit rl{limit, limit};
    setrlimit(RLIMIT_AS, &rl);
  }
  size_t total = req["total_bytes"];
  void* base = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, region_fd, 0);
  if (base == MAP_FAILED) finish({{"status", "internal-error"}, {"message", "worker mmap failed"}});
  std::vector<void*> buffers;
  for (size_t off : req["offsets"].get<std::vector<size_t>>()) {
    buffers.push_back(static_cast<uint8_t*>(base) + off);
  }
  std::vector<size_t> sizes = req["sizes"];
  std::vector<size_t> outputs = req["outputs"];
  // Read by the kernel's scratch pool when it first allocates.
  if (req.value("poison_scratch", false)) setenv("MK_SCRATCH_POISON", "1", 1);
  // libgomp reads its OMP_* variables when it is loaded, with the library below.
  if (req.contains("env") && req["env"].is_object()) {
    for (const auto& [name, value] : req["env"].items()) {
      if (value.is_string()) setenv(name.c_str(), value.get<std::string>().c_str(), 0);
    }
  }
  void* lib = dlopen(req["so_path"].get<std::string>().c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) finish({{"status", "load-failed"}, {"message", std::string("dlopen: ") + dlerror()}});
  auto abi = reinterpret_cast<AbiVersionFn>(dlsym(lib, kAbiVersionSymbol));
  if (!abi) finish({{"status", "load-failed"}, {"message", "library has no mk_abi_version"}});
  if (abi() != kKernelAbiVersion) {
    finish({{"status", "load-failed"},
            {"message", "ABI version " + std::to_string(abi()) + ", expected " +
                            std::to_string(kKernelAbiVersion)}});
  }
  auto kernel = reinterpret_cast<KernelFn>(dlsym(lib, kKernelSymbol));
  if (!kernel) finish({{"status", "load-failed"}, {"message", "library has no mk_kernel"}});

  uint8_t poison = req["poison_byte"];
  auto poison_outputs = [&] {
    for (size_t o : outputs) {
      if (o < buffers.size()) std::memset(buffers[o], poison, sizes[o]);
    }
  };
  int warmup = req["warmup"];
  for (int i = 0; i < warmup; ++i) {
    poison_outputs();
    kernel(buffers.data());
  }
  int min_iters = req["min_iterations"], max_iters = req["max_iterations"];
  double min_seconds = req["min_seconds"];
  std::vector<double> times;
  double spent = 0;
  while (static_cast<int>(times.size()) < max_iters &&
         (static_cast<int>(times.size()) < min_iters || spent < min_seconds)) {
    poison_outputs();
    auto t0 = std::chrono::steady_clock::now();
    kernel(buffers.data());
    double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    times.push_back(dt);
    spent += dt;
  }
  // The reply crosses a SOCK_SEQPACKET socket as one message, which must fit the socket's send
  // buffer: a very fast kernel (100k timed calls) would not. Consecutive calls are then merged
  // into groups whose mean per-call time is one sample, so at most kMaxTimeSamples remain.
  if (times.size() > kMaxTimeSamples) {
    size_t group = (times.size() + kMaxTimeSamples - 1) / kMaxTimeSamples;
    std::vector<double> merged;
    for (size_t i = 0; i < times.size(); i += group) {
      size_t end = std::min(times.size(), i + group);
      double sum = 0;
      for (size_t j = i; j < end; ++j) sum += times[j];
      merged.push_back(sum / static_cast<double>(end - i));
    }
    times.swap(merged);
  }
  finish({{"status", "ok"}, {"times_s", times}});
  _exit(0);  // not reached: finish() exits
}

// The server's own children (its worker, and descendants of the worker that were orphaned and
// reparented here: the server is a child subreaper).
std::vector<pid_t> ServerChildren() {
  std::vector<pid_t> pids;
  std::ifstream in("/proc/self/task/" + std::to_string(getpid()) + "/children");
  pid_t pid = 0;
  while (in >> pid) pids.push_back(pid);
  return pids;
}

// Ends every process a finished worker left behind. A kernel may fork (`--source` kernels are
// the user's code): children still in the worker's process group die with the group, and
// children that left it (setsid, a double fork) were reparented to this server when their
// parent died, because the server is a child subreaper. Both are killed and reaped, until no
// child remains (a process forking as we kill it leaves its child to the next round).
void KillWorkerLeftovers(pid_t worker_group) {
  kill(-worker_group, SIGKILL);
  for (int round = 0; round < 1000; ++round) {
    std::vector<pid_t> children = ServerChildren();
    if (children.empty()) return;
    for (pid_t child : children) {
      kill(-child, SIGKILL);  // its own group, when it made one
      kill(child, SIGKILL);
    }
    for (pid_t child : children) {
      while (waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
  }
}

// The fork server: one request at a time, each in a fresh worker.
[[noreturn]] void ServerMain(int sock) {
  signal(SIGPIPE, SIG_IGN);
  // Orphaned descendants of a worker become the server's children (KillWorkerLeftovers).
  prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  std::string text;
  int region_fd = -1;
  while (ReceiveMessage(sock, text, &region_fd)) {
    json reply;
    json req = json::parse(text, nullptr, false);
    if (req.is_discarded() || region_fd < 0) {
      reply = {{"status", "internal-error"}, {"message", "bad request"}};
    } else {
      int pipefd[2];
      if (pipe(pipefd) != 0) {
        reply = {{"status", "internal-error"}, {"message", "pipe failed"}};
      } else {
        pid_t worker = fork();
        if (worker == 0) {
          // Its own process group, so that whatever the kernel forks can be killed with it.
          setpgid(0, 0);
          close(pipefd[0]);
          close(sock);
          WorkerMain(req, region_fd, pipefd[1]);
        }
        if (worker > 0) setpgid(worker, worker);  // both sides: no race with the first kill
        close(pipefd[1]);
        double timeout_s = req["timeout_s"];
        auto start = std::chrono::steady_clock::now();
        std::string out;
        bool timed_out = false;
        bool reaped = false;
        int wstatus = 0;
        char buf[65536];
        while (true) {
          double left = timeout_s - std::chrono::duration<double>(
                                        std::chrono::steady_clock::now() - start).count();
          if (left <= 0) {
            timed_out = true;
            break;
          }
          pollfd p{pipefd[0], POLLIN, 0};
          // Short slices: a process the kernel forked may hold the pipe open after the worker
          // exited, so the worker's exit, not only the pipe's end, ends the wait.
          int r = poll(&p, 1, std::min(static_cast<int>(left * 1000) + 1, 100));
          if (r < 0 && errno == EINTR) continue;
          if (r == 0) {
            if (waitpid(worker, &wstatus, WNOHANG) == worker) {
              reaped = true;
              // Everything the worker wrote is in the pipe already.
              pollfd rest{pipefd[0], POLLIN, 0};
              while (poll(&rest, 1, 0) > 0) {
                ssize_t n = read(pipefd[0], buf, sizeof(buf));
                if (n <= 0) break;
                out.append(buf, static_cast<size_t>(n));
              }
              break;
            }
            continue;  // re-check the clock
          }
          ssize_t n = read(pipefd[0], buf, sizeof(buf));
          if (n <= 0) break;
          out.append(buf, static_cast<size_t>(n));
        }
        close(pipefd[0]);
        if (timed_out) kill(worker, SIGKILL);
        while (!reaped && waitpid(worker, &wstatus, 0) < 0 && errno == EINTR) {
        }
        KillWorkerLeftovers(worker);
        if (timed_out) {
          reply = {{"status", StatusKey(RunStatus::kTimedOut)},
                   {"message", "kernel did not finish within " + std::to_string(timeout_s) +
                                   " s; worker killed"}};
        } else if (WIFSIGNALED(wstatus)) {
          int sig = WTERMSIG(wstatus);
          bool oom = req.value("memory_limit_bytes", size_t{0}) > 0 &&
                     (sig == SIGSEGV || sig == SIGABRT || sig == SIGBUS);
          reply = {{"status", StatusKey(oom ? RunStatus::kOutOfMemory : RunStatus::kCrashed)},
                   {"signal", sig},
                   {"message", std::string("kernel crashed with signal ") + strsignal(sig) +
                                   (oom ? " (under a memory limit: likely out of memory)" : "")}};
        } else {
          reply = json::parse(out, nullptr, false);
          if (reply.is_discarded()) {
            reply = {{"status", "internal-error"},
                     {"message", "worker exited (code " +
                                     std::to_string(WEXITSTATUS(wstatus)) + ") without a result"}};
          }
        }
      }
      close(region_fd);
    }
    if (!SendMessage(sock, reply.dump(), -1)) break;
  }
  _exit(0);
}

}  // namespace

const char* RunStatusName(RunStatus s) {
  switch (s) {
    case RunStatus::kOk: return "ok";
    case RunStatus::kCrashed: return "crashed";
    case RunStatus::kTimedOut: return "timed-out";
    case RunStatus::kOutOfMemory: return "out-of-memory";
    case RunStatus::kLoadFailed: return "load-failed";
    case RunStatus::kInternalError: return "internal-error";
  }
  return "internal-error";
}

SandboxRunner::~SandboxRunner() { StopServer(); }

void SandboxRunner::StopServer() {
  if (sock_ >= 0) close(sock_);
  sock_ = -1;
  if (server_pid_ > 0) {
    kill(server_pid_, SIGKILL);
    while (waitpid(server_pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  server_pid_ = -1;
}

Status SandboxRunner::EnsureServer() {
  if (server_pid_ > 0 && waitpid(server_pid_, nullptr, WNOHANG) == 0) return Status::Ok();
  StopServer();
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    return IoError(std::string("socketpair: ") + std::strerror(errno));
  }
  pid_t pid = fork();
  if (pid < 0) return IoError(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    close(sv[0]);
    // Its own process group: a Ctrl-C at the terminal goes to the caller, which stops after the
    // current step; a kernel being timed must not die of it and be recorded as crashed.
    setpgid(0, 0);
    ServerMain(sv[1]);
  }
  close(sv[1]);
  sock_ = sv[0];
  server_pid_ = pid;
  ++restarts_;
  return Status::Ok();
}

Result<RunOutcome> SandboxRunner::Run(const RunRequest& request, SharedRegion& region) {
  MK_RETURN_IF_ERROR(EnsureServer());
  json req = {{"so_path", request.so_path},
              {"outputs", request.output_buffers},
              {"poison_byte", request.poison_byte},
              {"poison_scratch", request.poison_scratch},
              {"warmup", request.warmup},
              {"min_iterations", request.min_iterations},
              {"min_seconds", request.min_seconds},
              {"max_iterations", request.max_iterations},
              {"timeout_s", request.timeout_s},
              {"memory_limit_bytes", request.memory_limit_bytes},
              {"env", EnvironmentJson(request.environment)},
              {"total_bytes", region.total_bytes()},
              {"offsets", region.offsets()},
              {"sizes", region.sizes()}};
  std::string reply_text;
  bool ok = SendMessage(sock_, req.dump(), region.fd()) && ReceiveMessage(sock_, reply_text, nullptr);
  if (!ok) {
    // The server died (killed from outside; kernels run in its children, not in it): start a
    // new one and send the request once more.
    StopServer();
    MK_RETURN_IF_ERROR(EnsureServer());
    ok = SendMessage(sock_, req.dump(), region.fd()) && ReceiveMessage(sock_, reply_text, nullptr);
    if (!ok) {
      StopServer();
      return Internal("sandbox server died twice while running " + request.so_path);
    }
  }
  json reply = json::parse(reply_text, nullptr, false);
  RunOutcome outcome;
  if (reply.is_discarded()) {
    outcome.message = "unreadable reply from the sandbox";
    return outcome;
  }
  outcome.status = StatusFromKey(reply.value("status", "internal-error"));
  outcome.signal = reply.value("signal", 0);
  outcome.message = reply.value("message", "");
  if (reply.contains("times_s")) outcome.times_s = reply["times_s"].get<std::vector<double>>();
  return outcome;
}

}  // namespace mk::runtime
