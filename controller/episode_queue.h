// Between the waiter and the worker: the protections whose margin was found
// short, in the order found. The waiter pushes (a protection is queued once:
// its `queued` flag, prot.h), the worker pops. Its own lock and condition
// variable; never held together with another lock.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>

#include "controller/options.h"

namespace memcg::controller {

struct Prot;
class EpisodeQueue;
class ControllerStats;

/// What the waiter and the worker both take: the options, the cgroup mode,
/// the queue between them and the counters they add to (all owned by the
/// Controller, which outlives both).
struct ThreadParts {
  const ControllerOptions& opts;
  bool v2 = false;
  EpisodeQueue& queue;
  ControllerStats& stats;
};

class EpisodeQueue {
 public:
  void push(std::shared_ptr<Prot> p) {
    {
      std::lock_guard<std::mutex> g(mu_);
      queue_.push_back(std::move(p));
    }
    cv_.notify_one();
  }
  /// The next protection; blocks until there is one. Null once stop() was called.
  std::shared_ptr<Prot> pop() {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait(lk, [&] { return stopped_ || !queue_.empty(); });
    if (stopped_) return nullptr;
    auto p = std::move(queue_.front());
    queue_.pop_front();
    return p;
  }
  /// Wakes pop() for good (until restart()); what is queued stays queued.
  void stop() {
    {
      std::lock_guard<std::mutex> g(mu_);
      stopped_ = true;
    }
    cv_.notify_all();
  }
  void restart() {
    std::lock_guard<std::mutex> g(mu_);
    stopped_ = false;
  }

 private:
  std::mutex mu_;  // guards everything below
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Prot>> queue_;
  bool stopped_ = false;
};

}  // namespace memcg::controller
