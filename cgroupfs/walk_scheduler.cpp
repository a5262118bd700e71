#include "cgroupfs/walk_scheduler.h"

#include <string>

#include "common/log.h"

namespace memcg {

WalkScheduler::WalkScheduler(Discovery& discovery) : discovery_(discovery) {}

WalkScheduler::~WalkScheduler() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void WalkScheduler::start() {
  if (discovery_.options().refreshInterval.count() > 0 && !thread_.joinable())
    thread_ = std::thread([this] { run(); });
}

WalkScheduler::TreeResult WalkScheduler::tree() {
  const auto interval = discovery_.options().refreshInterval;
  if (interval.count() > 0) {
    if (auto last = discovery_.lastIfYounger(2 * interval)) return std::move(*last);
  }
  return walkNow();
}

WalkScheduler::TreeResult WalkScheduler::within(std::chrono::milliseconds maxAge) {
  if (maxAge.count() > 0) {
    if (auto last = discovery_.lastIfYounger(maxAge)) return std::move(*last);
  }
  return walkNow();
}

WalkScheduler::TreeResult WalkScheduler::walkNow() { return discovery_.refresh(); }

std::shared_ptr<const cgroupfs::CgroupDir> WalkScheduler::findOrWalk(std::string_view path) {
  auto d = discovery_.find(path);
  if (d && d->alive()) return d;
  (void)walkNow();
  d = discovery_.find(path);
  return d && d->alive() ? d : nullptr;
}

uint64_t WalkScheduler::cadenceWalks() const {
  std::lock_guard<std::mutex> g(mu_);
  return walks_;
}

void WalkScheduler::run() {
  const auto interval = discovery_.options().refreshInterval;
  std::string lastError;
  std::unique_lock<std::mutex> lk(mu_);
  while (!cv_.wait_for(lk, interval, [this] { return stop_; })) {
    lk.unlock();
    auto r = walkNow();
    // Log a failure once, and its end.
    std::string err = r.ok() ? std::string() : r.error().message();
    if (err != lastError) {
      if (!err.empty()) {
        log::error("cgroup discovery failed", "err=" + log::quote(err));
      } else {
        log::info("cgroup discovery recovered");
      }
      lastError = err;
    }
    lk.lock();
    ++walks_;
  }
}

}  // namespace memcg
