// The getdelays view of one cgroup: one row per process (or thread) with the
// count, total, average and max of each delay class; rendered as JSON for
// /api/v1/delays?cgroup=...
//
// Kernel interfaces: <cgroup>/cgroup.procs (processes) or <cgroup>/tasks
// (threads), TASKSTATS_CMD_GET per tgid/pid, /proc/<pid>/comm for process
// names (tgid replies carry none). Units: the JSON gives seconds (doubles)
// next to the kernel's integer counts.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "collectors/taskstats/delayacct_sysctl.h"
#include "collectors/taskstats/taskstats_client.h"
#include "collectors/taskstats/taskstats_format.h"
#include "common/result.h"

namespace memcg::taskstats {

struct DelayTableOptions {
  bool per_thread = false;       ///< rows per thread (tasks) instead of per process
  size_t max_rows = 10000;       ///< bound the work per request
  std::string procfs = "/proc";  ///< where /proc/<pid>/comm is read
};

struct DelayTableRow {
  uint32_t pid = 0;   ///< thread id (per_thread) or tgid
  uint32_t tgid = 0;  ///< 0 when unknown (tgid rows: equals pid)
  std::string comm;
  TaskStats stats;
};

struct DelayTable {
  std::string cgroup;  ///< as given
  bool per_thread = false;
  std::vector<DelayTableRow> rows;  ///< sorted by pid
  uint32_t listed = 0;              ///< ids read from the cgroup file
  uint32_t vanished = 0;            ///< exited before they could be queried
  uint32_t errors = 0;              ///< other failed queries
  bool truncated = false;           ///< more than max_rows ids were listed
};

/// Reads the table for the cgroup directory `cgroup_dir`. Fails if the
/// cgroup's list cannot be read (gone() for a vanished cgroup) or the socket fails.
Result<DelayTable> readDelayTable(TaskstatsClient& client, const std::string& cgroup_dir,
                                  const DelayTableOptions& opts = {});

/// {"cgroup":..., "per_thread":..., "delay_accounting":{...}, "tasks":[{"pid":..,
///  "tgid":.., "comm":.., "delays":{"cpu":{"count":..,"total_seconds":..,
///  "average_seconds":..,"max_seconds":..}, ...}}], "listed":.., ...}
/// Classes the kernel does not report are omitted; max_seconds only where the
/// kernel reports it. `status` may be null.
nlohmann::json delayTableToJson(const DelayTable& t,
                                const DelayAcctStatus* status = nullptr);

}  // namespace memcg::taskstats
