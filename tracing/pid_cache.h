// The tracer's one answer to "which cgroup is this task in": tid -> series
// slot (series_table.h), kept exact by the events that move tasks, plus the
// per-task state the aggregator pairs events with.
//
// Filled from cgroup:cgroup_attach_task (attach: the destination),
// sched:sched_process_fork (the child inherits the parent's entry, if the
// parent is known) and, on a miss, /proc/<tid>/cgroup through the resolver.
// sched:sched_process_exit marks the entry; it is forgotten at the end of the
// round after the exit (late records of the task still find it), and its
// cgroup is kept among the recent exits for a bounded time so that a reader
// told of the exit by another channel (the taskstats exit record) can still
// ask where the task was (cgroupOf).
// Bounded: at most max_pids entries (then the cache is cleared and refilled
// on demand), at most kRecentExits recent exits.
// Not thread-safe: the Aggregator calls it under its mutex.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tracing/attribution.h"
#include "tracing/cgroup_resolver.h"
#include "tracing/series_table.h"

namespace memcg::tracing {

/// What the tracer keeps per task it has seen.
struct TaskState {
  static constexpr uint8_t kKswapd = 1;     ///< a kswapd thread
  static constexpr uint8_t kProactive = 2;  ///< a registered proactive reclaimer
  static constexpr uint8_t kExited = 4;     ///< sched_process_exit seen
  static constexpr uint8_t kBegan = 8;      ///< a reclaim begin of it was traced
  static constexpr uint32_t kNoRow = 0;

  uint32_t slot = SeriesTable::kUnknown;  ///< the task's cgroup series
  uint8_t flags = 0;
  uint32_t row = kNoRow;  ///< report row (report_rows.h), kNoRow = none
  std::array<uint64_t, 3> begin_ts{};  ///< direct, memcg, softlimit; 0 = none open
  uint64_t kswapd_wake_ts = 0;
  uint64_t slab_start_ts = 0;
  uint8_t overdue = 0;  ///< bit i: begin_ts[i] counted as open too long

  bool inReclaim() const { return begin_ts[0] || begin_ts[1] || begin_ts[2]; }
};

class PidCache {
 public:
  /// Recent exits kept for cgroupOf(): enough for a fork storm's worth
  /// of exits between two drains of the taskstats listener.
  static constexpr size_t kRecentExits = 8192;
  /// ... and for at most this many read rounds (~200 ms each).
  static constexpr uint64_t kRecentExitRounds = 50;

  struct Counters {
    uint64_t lookups = 0;  ///< /proc lookups (misses)
    uint64_t lookup_failures = 0;
    uint64_t resets = 0;  ///< cache cleared because max_pids was reached
  };
  struct Hooks {
    /// A new entry (before first use): e.g. mark a registered reclaimer.
    std::function<void(int32_t tid, TaskState&)> created;
    /// An entry about to be dropped (exit, reset, its cgroup removed).
    std::function<void(int32_t tid, TaskState&)> forgotten;
    /// The end of the round after `tid`'s exit (whether or not it is still cached).
    std::function<void(int32_t tid)> exited;
  };

  /// `resolver` (may be null) and `series` must outlive the cache.
  PidCache(size_t max_pids, CgroupResolver* resolver, SeriesTable& series);
  void setHooks(Hooks h) { hooks_ = std::move(h); }

  /// The task's entry; on a miss its cgroup is read from /proc (kUnknown if
  /// that fails).
  TaskState& get(int32_t tid);
  /// The entry if cached (no /proc read).
  TaskState* find(int32_t tid);
  const TaskState* find(int32_t tid) const;
  /// cgroup_attach_task: `tid` is now in series `slot`.
  void attach(int32_t tid, uint32_t slot);
  /// sched_process_fork: `child` starts in `parent`'s cgroup (if known).
  void fork(int32_t parent, int32_t child);
  /// sched_process_exit: marks the entry (nullptr if unknown); it is
  /// forgotten at the end of the next round.
  TaskState* exit(int32_t tid);
  /// End of a read round: forgets the tasks that exited in the previous one.
  void endRound();
  /// The series `slot` was retired: forgets entries pointing at it (stale:
  /// rmdir needs an empty cgroup), so the next event re-reads /proc.
  void dropSlot(uint32_t slot);
  /// Runs fn(tid, state) for every entry.
  template <class F>
  void forEach(F&& fn) {
    for (auto& [tid, st] : pids_) fn(tid, st);
  }

  /// The cgroup of `tid`: its entry's if cached (exited=true once its exit
  /// was seen), else where it was when it exited, if that was within the last
  /// kRecentExitRounds rounds. nullopt for a task of no known cgroup.
  std::optional<PidCgroup> cgroupOf(int32_t tid) const;

  size_t size() const { return pids_.size(); }
  const Counters& counters() const { return counters_; }

 private:
  using Map = std::unordered_map<int32_t, TaskState>;
  TaskState& add(int32_t tid, uint32_t slot);
  void forget(Map::iterator it);
  void clear();
  std::optional<PidCgroup> where(const TaskState& st, bool exited) const;

  const size_t max_pids_;
  CgroupResolver* resolver_;
  SeriesTable& series_;
  Hooks hooks_;
  Map pids_;
  std::vector<int32_t> exited_;       // exits seen in this round
  std::vector<int32_t> exited_prev_;  // ... in the previous one (forgotten now)
  struct RecentExit {
    int32_t tid;
    uint64_t round;
    PidCgroup where;
  };
  std::deque<RecentExit> recent_exits_;  // oldest first
  uint64_t round_ = 0;
  Counters counters_;
};

}  // namespace memcg::tracing
