// The narrow face tracing shows to the parts that cause reclaim themselves
// (the controller) or need to know which cgroup a task was in (taskstats):
// the composition root hands them this interface, never the Tracer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace memcg::tracing {

/// Reclaim the exporter causes on purpose (controller limit nudges,
/// memory.reclaim writes) is traced under the writing thread's tid. Marking
/// that thread tells the tracer to count its reclaim as kind="proactive",
/// and an episode charges it to the cgroup being protected.
class ReclaimAttribution {
 public:
  virtual ~ReclaimAttribution() = default;
  /// `tid` reclaims on purpose from now on (until unmarkReclaimer).
  virtual void markReclaimer(int32_t tid) = 0;
  virtual void unmarkReclaimer(int32_t tid) = 0;
  /// Reclaim by `tid` from now until endEpisode is charged to `cgroup`
  /// (label, "/a/b"). False if the cgroup is unknown to the tracer.
  virtual bool beginEpisode(int32_t tid, std::string_view cgroup) = 0;
  virtual void endEpisode(int32_t tid) = 0;
};

/// Where a task is, or was when it exited: its memory cgroup.
struct PidCgroup {
  std::string cgroup;   ///< path relative to the memory hierarchy root ("/a/b", "/")
  uint64_t id = 0;      ///< the cgroup's id (directory inode), 0 if unknown
  bool exited = false;  ///< the answer is from the task's exit
};

/// "Which cgroup is (or was) this task in", for readers that learn of a task
/// only when it has exited (the taskstats exit listener: its record names
/// no cgroup). Answered by the tracefs backend from its pid cache, which
/// follows fork, exit and cgroup attach; exited tasks are remembered for a
/// bounded time (PidCache::kRecentExitRounds read rounds, at most
/// PidCache::kRecentExits tasks), since the exit record and the trace's
/// sched_process_exit race. The bpf backend answers from a bounded map its
/// program fills at sched_process_exit (bpf::BpfTracer::cgroupOf).
/// Thread-safe.
class PidCgroupLookup {
 public:
  virtual ~PidCgroupLookup() = default;
  /// nullopt if the tracer does not know the task (never seen, or exited
  /// too long ago) or knows it only as "_unknown"/"_overflow".
  virtual std::optional<PidCgroup> cgroupOf(int32_t pid) const = 0;
};

}  // namespace memcg::tracing
