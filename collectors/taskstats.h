// The taskstats collector's options and flags, and the taskstats service it
// reads (collectors/taskstats.cpp).
//
// The service (the TASKSTATS netlink client and exit listener, the per-cgroup
// ledger, the kernel.task_delayacct switch) is owned by the App, read by the
// collector every scrape and by GET /api/v1/delays.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "collectors/collector.h"
#include "collectors/taskstats/cgroup_delays.h"
#include "collectors/taskstats/delayacct_sysctl.h"
#include "common/flag_spec.h"
#include "common/result.h"
#include "tracing/attribution.h"

namespace memcg {

struct TaskstatsOptions {
  /// --collector.taskstats.enable-delayacct: switch kernel.task_delayacct on
  /// at start (off again at exit).
  bool enableDelayacct = false;
};

FlagList taskstatsFlags(TaskstatsOptions& o);

/// How the service attributes the exit of a process no scrape saw alive
/// (collectors/taskstats.cpp explains both ways).
struct TaskstatsExitAttribution {
  /// The running vmscan backend (the App passes the tracefs Tracer or the
  /// BpfTracer); null while tracing is down: then by sampling cgroup.procs
  /// only. Must outlive the service.
  const tracing::PidCgroupLookup* lookup = nullptr;
  /// Where the memory hierarchy is, to find the inode of an answer without one.
  MountLayout layout;
};

class TaskstatsService {
 public:
  /// Switches delay accounting on if asked and opens the netlink client;
  /// without CAP_NET_ADMIN the service is down (logged once). Never throws.
  TaskstatsService(const TaskstatsOptions& o, std::string procfs,
                   const TaskstatsExitAttribution& exits = {});
  /// Leaves kernel.task_delayacct as it was found.
  ~TaskstatsService();
  TaskstatsService(const TaskstatsService&) = delete;
  TaskstatsService& operator=(const TaskstatsService&) = delete;

  /// Null while down (see down()).
  taskstats::CgroupDelayAggregator* aggregator() { return agg_.get(); }
  const std::optional<Error>& down() const { return down_; }
  const taskstats::DelayAcctStatus& status() const { return status_; }

  /// The getdelays table (one row per task) of a cgroup directory, as JSON.
  Result<nlohmann::json> delayTable(const std::string& cgroupDir);

 private:
  std::string procfs_;
  taskstats::DelayAcctStatus status_;
  std::unique_ptr<taskstats::CgroupDelayAggregator> agg_;
  std::optional<Error> down_;
};

std::unique_ptr<Collector> makeTaskstatsCollector(TaskstatsService& service);

}  // namespace memcg
