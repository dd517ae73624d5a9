#include "store/lease.h"

#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <random>

namespace mk::store {

namespace {

std::string HostName() {
  char host[256] = {0};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') return "localhost";
  return host;
}

}  // namespace

std::string LeaseHolderId() {
  std::random_device rd;
  char nonce[9];
  std::snprintf(nonce, sizeof nonce, "%08x", rd());
  return HostName() + ":" + std::to_string(::getpid()) + ":" + nonce;
}

bool HolderIsDeadHere(const std::string& holder) {
  size_t first = holder.find(':');
  size_t second = first == std::string::npos ? first : holder.find(':', first + 1);
  if (second == std::string::npos || holder.substr(0, first) != HostName()) return false;
  std::string pid_text = holder.substr(first + 1, second - first - 1);
  if (pid_text.empty() || pid_text.size() > 9 ||
      pid_text.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  pid_t pid = static_cast<pid_t>(std::stol(pid_text));
  return pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH;
}

LeaseKeeper::LeaseKeeper(Store& store, std::string resource, std::string holder, double ttl_s)
    : store_(store), resource_(std::move(resource)), holder_(std::move(holder)), ttl_s_(ttl_s) {}

Result<std::unique_ptr<LeaseKeeper>> LeaseKeeper::Acquire(Store& store, std::string resource,
                                                          std::string holder, double ttl_s) {
  std::string dead;
  Result<std::optional<LeaseRecord>> current = store.GetLease(resource);
  if (current.ok() && *current && (*current)->holder != holder &&
      HolderIsDeadHere((*current)->holder)) {
    dead = (*current)->holder;
  }
  MK_RETURN_IF_ERROR(store.AcquireLease(resource, holder, ttl_s, dead).status());
  std::unique_ptr<LeaseKeeper> keeper(
      new LeaseKeeper(store, std::move(resource), std::move(holder), ttl_s));
  keeper->thread_ = std::thread([k = keeper.get()] { k->Heartbeat(); });
  return keeper;
}

void LeaseKeeper::Heartbeat() {
  const auto period = std::chrono::duration<double>(ttl_s_ / 4);
  std::unique_lock lock(mu_);
  while (!wake_.wait_for(lock, period, [&] { return stopping_; })) {
    lock.unlock();
    Result<LeaseRecord> renewed = store_.RenewLease(resource_, holder_, ttl_s_);
    // A busy database is retried next period; only "no longer ours" is final.
    if (!renewed.ok() && renewed.status().code() == ErrorCode::kNotFound) lost_.store(true);
    lock.lock();
    if (lost_.load()) break;
  }
}

LeaseKeeper::~LeaseKeeper() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (!lost_.load()) (void)store_.ReleaseLease(resource_, holder_);
}

}  // namespace mk::store
