// Holding a lease while working (store.h's AcquireLease / RenewLease / ReleaseLease): a
// LeaseKeeper takes the lease, renews it from a background thread every ttl/4 while the work goes
// on, and releases it when destroyed. If a renewal finds the lease gone (this process stalled
// past the expiry and another took it over) lost() turns true: the work must stop writing.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "store/store.h"

namespace mk::store {

// "host:pid:nonce": names this process to whoever is refused the lease (the nonce tells two
// processes apart that reuse a pid, e.g. in containers).
std::string LeaseHolderId();

// True when `holder` (a LeaseHolderId) names a process on this host that no longer exists: its
// lease need not be waited out (e.g. a run killed with SIGKILL, resumed at once).
bool HolderIsDeadHere(const std::string& holder);

// The resource name of a run's lease.
inline std::string RunLeaseResource(int64_t run_id) { return "run:" + std::to_string(run_id); }

class LeaseKeeper {
 public:
  // Takes `resource` for `holder` (an error when another live holder has it and it has not
  // expired; a holder that HolderIsDeadHere is taken over at once) and starts heartbeating. `store` must be safe to call from another thread (SqliteStore is) and
  // outlive the keeper.
  static Result<std::unique_ptr<LeaseKeeper>> Acquire(Store& store, std::string resource,
                                                      std::string holder, double ttl_s = 30);
  ~LeaseKeeper();  // stops heartbeating and releases the lease
  LeaseKeeper(const LeaseKeeper&) = delete;
  LeaseKeeper& operator=(const LeaseKeeper&) = delete;

  bool lost() const { return lost_.load(); }
  const std::string& holder() const { return holder_; }

 private:
  LeaseKeeper(Store& store, std::string resource, std::string holder, double ttl_s);
  void Heartbeat();

  Store& store_;
  std::string resource_, holder_;
  double ttl_s_;
  std::atomic<bool> lost_{false};
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace mk::store
