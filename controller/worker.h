// The actuation worker's budgets (the worker loop itself is
// Controller::workerLoop/episode in worker.cpp): a bytes-per-second token
// bucket with a one-second burst, and a CPU budget per one-second window of
// the worker thread. An episode stops ("throttled", reason cpu or rate) when
// either is spent.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <string_view>

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

}  // namespace memcg::controller
