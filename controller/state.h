// The controller's self-metrics and its state: the metric table (one Desc per
// metric, written here once), the trigger-to-reclaim latency histogram type
// and the counters kept per cgroup. Controller::state(), collect() and
// describe() (state.cpp) render them.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "metrics/histogram.h"
#include "metrics/metric.h"

namespace memcg::controller {

/// Trigger-to-reclaim latency buckets, seconds (observed and exposed).
inline constexpr metrics::BucketLayout<double, 12> kLatencyLayout{
    {0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5}, 1};
using LatencyHistogram = metrics::FixedHistogram<kLatencyLayout>;

/// Actions and bytes per cgroup (guarded by ControllerStats' lock).
struct ActionCounters {
  std::map<std::pair<std::string, std::string>, uint64_t> actions;  // (actuator, result)
  std::map<std::string, uint64_t> reclaimed;                        // actuator
};

/// Every metric the controller exports.
struct ControllerDescs;

/// The controller's counters as a part of their own, with their own lock:
/// the worker records actions, throttles, dry runs and latencies, the waiter
/// and worker their CPU, start-up the journal restores; metrics and the state
/// JSON read them. Its lock is taken after a protection's (prot.h), never before.
class ControllerStats {
 public:
  /// `wakeSources`: the trigger label values of this mode (a latency
  /// histogram each, exported at 0 before the first episode).
  explicit ControllerStats(std::vector<const char*> wakeSources);

  void recordAction(const std::string& cgroup, const std::string& actuator,
                    const std::string& result, uint64_t reclaimed);
  /// One trigger-to-reclaim latency (seconds) for wake source `src`.
  void observeLatency(const std::string& src, double seconds);
  void countThrottle(const std::string& reason);
  void countDryRun();
  void setJournalRestores(uint64_t n);
  void setWaiterCpu(double s) { waiterCpu_.store(s); }
  void setWorkerCpu(double s) { workerCpu_.store(s); }

  double cpuSeconds() const { return waiterCpu_.load() + workerCpu_.load(); }
  uint64_t dryRunActions() const;
  uint64_t journalRestores() const;
  /// The counter families (actions, bytes, latency, CPU, dry run, restores,
  /// throttles) into `sink`.
  void collect(metrics::Sink& sink, const ControllerDescs& d) const;

 private:
  const std::vector<const char*> wakeSources_;
  mutable std::mutex mu_;  // guards everything below
  std::map<std::string, ActionCounters> counters_;   // by cgroup
  std::map<std::string, LatencyHistogram> latency_;  // by wake source
  std::map<std::string, uint64_t> throttled_;        // by reason
  uint64_t dryRunActions_ = 0;
  uint64_t journalRestores_ = 0;
  std::atomic<double> waiterCpu_{0};
  std::atomic<double> workerCpu_{0};
};

struct ControllerDescs {
  ControllerDescs();
  metrics::Desc protectedCgroups, protectedCgroup, margin, reclaimed, actions, latency, cpu,
      dryRun, restores, throttled, dryRunMode;
  std::vector<const metrics::Desc*> all() const;
};

}  // namespace memcg::controller
