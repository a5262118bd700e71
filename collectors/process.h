// process_* self-metrics with the names and meanings every Prometheus client
// library exports (client_golang's process collector): CPU time, resident and
// virtual memory, descriptors and their limit, start time. Read from
// <proc>/self at each scrape (a few small files; no state kept).
#pragma once

#include <memory>
#include <string>

#include "collectors/collector.h"
#include "common/result.h"

namespace memcg {

/// One reading of the process' own figures (base units).
struct ProcessStats {
  double cpuSeconds = 0;         ///< utime + stime
  double residentBytes = 0;      ///< rss pages * page size
  double virtualBytes = 0;       ///< vsize
  double virtualMaxBytes = 0;    ///< RLIMIT_AS soft limit ("unlimited": 2^64-1, as client_golang)
  double openFds = 0;            ///< entries of fd/
  double maxFds = 0;             ///< RLIMIT_NOFILE soft limit
  double startTimeSeconds = 0;   ///< since the epoch: btime + starttime / ticks
};

/// Reads <procRoot>/self/{stat,limits,fd} and <procRoot>/stat (btime).
/// `procRoot` is "/proc" in the exporter (the process' own procfs, never
/// --path.procfs, which may be the host's).
Result<ProcessStats> readProcessStats(const std::string& procRoot = "/proc");

/// Parses /proc/<pid>/stat's content (the comm field may hold spaces and
/// parentheses). `ticks` is sysconf(_SC_CLK_TCK), `page` the page size,
/// `btime` /proc/stat's boot time.
Result<ProcessStats> parseProcessStat(std::string_view stat, double ticks, double page,
                                      double btime);

/// The soft limit of the /proc/<pid>/limits row starting with `row` (e.g.
/// "Max open files"); "unlimited" is 2^64-1.
Result<double> parseSoftLimit(std::string_view limits, std::string_view row);

std::unique_ptr<Collector> makeProcessCollector(std::string procRoot = "/proc");

}  // namespace memcg
