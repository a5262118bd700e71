#include <utility>

#include "collectors/registry.h"

#include <stdexcept>

namespace memcg {

cgroupfs::ReadStatus ScrapeContext::read(const cgroupfs::CgroupDir& dir, cgroupfs::FileId id,
                                         std::string_view& out) {
  Error err;
  ++reads;
  auto st = dir.read(id, buf, out, &err);
  if (st == cgroupfs::ReadStatus::kError) fail(std::move(err));
  if (st == cgroupfs::ReadStatus::kGone) ++vanished;
  return st;
}

FlagList collectorFlags(CollectorOptions& o) {
  FlagList out = memoryStatFlags(o.memoryStat);
  for (auto& f : memoryUsageFlags(o.memoryUsage)) out.push_back(std::move(f));
  for (auto& f : memoryEventsFlags(o.memoryEvents)) out.push_back(std::move(f));
  for (auto& f : taskstatsFlags(o.taskstats)) out.push_back(std::move(f));
  for (auto& f : vmscanFlags(o.vmscan)) out.push_back(std::move(f));
  for (auto& f : kubepodsFlags(o.kubepods)) out.push_back(std::move(f));
  return out;
}

const std::vector<CollectorInfo>& collectorRegistry() {
  static const std::vector<CollectorInfo> kCollectors = {
      {"memory_stat", true, false, "memory.stat of every cgroup (v1 and v2)",
       [](const CollectorInputs& in) { return makeMemoryStatCollector(in.memoryStat); }},
      {"memory_usage", true, false, "usage, peak and limits (v1 memory, memsw with --collector.memory_usage.memsw and swap accounting, kmem/kmem.tcp with --collector.memory_usage.kmem; v2 memory/swap/zswap)",
       [](const CollectorInputs& in) { return makeMemoryUsageCollector(in.memoryUsage); }},
      {"memory_events", true, false, "v1 failcnt (memory, memsw with swap accounting, kmem; kmem.tcp with --collector.memory_events.kmem-tcp) and oom_control, v2 memory.events(.local) and memory.swap.events",
       [](const CollectorInputs& in) { return makeMemoryEventsCollector(in.memoryEvents); }},
      {"reclaim_stat", true, false, "memory.reclaim_stat where the kernel has it (async reclaim patches)",
       [](const CollectorInputs&) { return makeReclaimStatCollector(); }},
      {"pressure", true, false, "PSI: /proc/pressure/memory and per-cgroup memory.pressure",
       [](const CollectorInputs& in) { return makePressureCollector(in.procfsRoot); }},
      {"vmstat", true, false, "node-wide reclaim counters from /proc/vmstat",
       [](const CollectorInputs& in) { return makeVmstatCollector(in.procfsRoot); }},
      {"kubepods", true, false,
       "Kubernetes pod UID, container id and QoS class of kubelet's cgroups, from their paths, "
       "(memcg_cgroup_info), and with --path.kubelet-logs their namespace, pod and container "
       "names from kubelet's log directories (memcg_cgroup_pod_info)",
       [](const CollectorInputs& in) { return makeKubepodsCollector(in.kubepods); }},
      {"vmscan", true, true,
       "vmscan and cgroup tracepoints from a private tracefs instance: per-cgroup reclaim "
       "counts and stalls, LRU scans, kswapd, migrations (needs root)",
       [](const CollectorInputs& in) {
         Error down = in.tracingDown;
         if (!in.tracer && !in.vmscanBackend.bpf && down.err == 0)
           down = makeError(ESRCH, "tracefs", "tracing not started");
         return makeVmscanCollector(in.tracer, std::move(down), in.vmscanBackend);
       }},
      {"taskstats", false, true,
       "delay accounting per cgroup (TASKSTATS netlink: cpu, blkio, swapin, reclaim, thrashing, "
       "compact, wpcopy, irq); needs CAP_NET_ADMIN",
       [](const CollectorInputs& in) {
         if (!in.taskstats) throw std::logic_error("the taskstats collector needs its service");
         return makeTaskstatsCollector(*in.taskstats);
       }},
  };
  return kCollectors;
}

}  // namespace memcg
