#include <utility>

#include "collectors/collector.h"

namespace memcg {

cgroupfs::ReadStatus ScrapeContext::read(const cgroupfs::CgroupDir& dir, cgroupfs::FileId id,
                                         std::string_view& out) {
  Error err;
  auto st = dir.read(id, buf, out, &err);
  if (st == cgroupfs::ReadStatus::kError) fail(std::move(err));
  if (st == cgroupfs::ReadStatus::kGone) ++vanished;
  return st;
}

const std::vector<CollectorInfo>& collectorRegistry() {
  static const std::vector<CollectorInfo> kCollectors = {
      {"memory_stat", true, false, "memory.stat of every cgroup (v1 and v2)",
       makeMemoryStatCollector},
      {"memory_usage", true, false, "usage, peak and limits (v1 memory/memsw/kmem/kmem.tcp, v2 memory/swap/zswap)",
       makeMemoryUsageCollector},
      {"memory_events", true, false, "v1 failcnt and oom_control, v2 memory.events(.local) and memory.swap.events",
       makeMemoryEventsCollector},
      {"reclaim_stat", true, false, "memory.reclaim_stat where the kernel has it (async reclaim patches)",
       makeReclaimStatCollector},
      {"pressure", true, false, "PSI: /proc/pressure/memory and per-cgroup memory.pressure",
       makePressureCollector},
      {"vmstat", true, false, "node-wide reclaim counters from /proc/vmstat", makeVmstatCollector},
      {"vmscan", true, true,
       "vmscan and cgroup tracepoints from a private tracefs instance: per-cgroup reclaim "
       "counts and stalls, LRU scans, kswapd, migrations (needs root)",
       makeVmscanCollector},
      {"taskstats", false, true,
       "delay accounting per cgroup (TASKSTATS netlink: cpu, blkio, swapin, reclaim, thrashing, "
       "compact, wpcopy, irq); needs CAP_NET_ADMIN",
       makeTaskstatsCollector},
  };
  return kCollectors;
}

}  // namespace memcg
