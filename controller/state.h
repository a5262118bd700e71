// The controller's self-metrics and its state: the metric table (one Desc per
// metric, written here once), the trigger-to-reclaim latency histogram type
// and the counters kept per cgroup. Controller::state(), collect() and
// describe() (state.cpp) render them.
#pragma once

#include <cstdint>
#include <map>
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

/// Actions and bytes per cgroup (guarded by the controller's lock).
struct ActionCounters {
  std::map<std::pair<std::string, std::string>, uint64_t> actions;  // (actuator, result)
  std::map<std::string, uint64_t> reclaimed;                        // actuator
};

/// Every metric the controller exports.
struct ControllerDescs {
  ControllerDescs();
  metrics::Desc protectedCgroups, reclaimed, actions, latency, cpu, dryRun, restores,
      throttled, dryRunMode;
  std::vector<const metrics::Desc*> all() const;
};

}  // namespace memcg::controller
