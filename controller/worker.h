// The actuation worker: a thread that takes the protections the waiter
// queued (episode_queue.h) and runs an episode on each, up to
// max-nudges actuations until the target margin is reached, then a cooldown.
// Its budgets: a bytes-per-second token bucket with a one-second burst, and a
// CPU budget per one-second window of the worker thread. An episode stops
// ("throttled", reason cpu or rate) when either is spent.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string_view>
#include <thread>

#include "controller/actuation.h"
#include "controller/episode_queue.h"
#include "controller/options.h"

namespace memcg::tracing {
class ReclaimAttribution;
}

namespace memcg::controller {

using SteadyClock = std::chrono::steady_clock;

/// CPU time of the calling thread, seconds.
double threadCpuSeconds();

/// The clocks the budgets read (the worker thread calls them): the steady
/// clock and the worker thread's CPU time by default. A test seam: a fake
/// clock makes the token bucket and the CPU window exact (nothing refills
/// or resets until the test moves the clock). The cooldown and the latency
/// histograms keep the real clock.
struct BudgetClock {
  std::function<SteadyClock::time_point()> now;  ///< null: SteadyClock::now
  std::function<double()> cpuSeconds;            ///< null: threadCpuSeconds
  SteadyClock::time_point readNow() const { return now ? now() : SteadyClock::now(); }
  double readCpu() const { return cpuSeconds ? cpuSeconds() : threadCpuSeconds(); }
};

/// Refills at `rate` bytes per second up to one second's worth.
class TokenBucket {
 public:
  TokenBucket() = default;
  TokenBucket(double rate, SteadyClock::time_point now)
      : rate_(rate), tokens_(rate), at_(now) {}

  void refill(SteadyClock::time_point now) {
    const double dt = std::chrono::duration<double>(now - at_).count();
    tokens_ = std::min(rate_, tokens_ + rate_ * dt);
    at_ = now;
  }
  double tokens() const { return tokens_; }
  /// Spends `bytes` (what an actuation reclaimed; may overdraw, which the
  /// next refills pay back).
  void take(double bytes) { tokens_ -= bytes; }

 private:
  double rate_ = 0;
  double tokens_ = 0;
  SteadyClock::time_point at_{};
};

/// At most `budget` CPU seconds per one-second window.
class CpuBudget {
 public:
  explicit CpuBudget(double budget = 0.5) : budget_(budget) {}

  void start(SteadyClock::time_point now, double cpuNow) {
    windowAt_ = now;
    windowStartCpu_ = cpuNow;
  }
  /// Starts a new window when one second has passed; true when this window's
  /// CPU reached the budget.
  bool spent(SteadyClock::time_point now, double cpuNow) {
    if (now - windowAt_ >= std::chrono::seconds(1)) start(now, cpuNow);
    return cpuNow - windowStartCpu_ >= budget_;
  }

 private:
  double budget_;
  SteadyClock::time_point windowAt_{};
  double windowStartCpu_ = 0;
};

/// Below this many tokens (1 MiB) an actuation waits for the bucket.
inline constexpr double kMinTokens = 1 << 20;

/// Which budget stops the next actuation: "cpu", "rate", or empty.
inline std::string_view throttleReason(bool cpuSpent, const TokenBucket& bucket) {
  if (cpuSpent) return "cpu";
  if (bucket.tokens() < kMinTokens) return "rate";
  return {};
}

struct Prot;
struct ReclaimResult;
class AuditLog;

/// The worker thread and what only it touches: the budgets (no lock: one
/// thread). It reaches the rest through its constructor's arguments: the
/// queue it takes protections from and the counters (`parts`), the
/// actuations, the audit log, and `attribution` (may be null), told which thread reclaims on
/// purpose and for which cgroup.
class Worker {
 public:
  Worker(ThreadParts parts, Reclaimer& reclaimer, AuditLog& audit,
         tracing::ReclaimAttribution* attribution, BudgetClock budgetClock);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  /// Starts the thread with full budgets.
  void start();
  /// Stops and joins it (an episode under way ends after its actuation).
  void stop();

 private:
  void loop();
  void episode(Prot& p);
  void record(Prot& p, const ReclaimResult& r, bool first);

  const ThreadParts parts_;
  const ControllerOptions& opts_;  // parts_.opts
  Reclaimer& reclaimer_;
  AuditLog& audit_;
  tracing::ReclaimAttribution* attribution_;  // not owned; null without tracing

  BudgetClock budgetClock_;
  TokenBucket tokens_;
  CpuBudget cpu_;
  std::atomic<bool> stop_{false};
  bool started_ = false;
  std::thread thread_;
};

}  // namespace memcg::controller
