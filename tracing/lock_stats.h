// Lock contention probes (where hierarchy walks and stat flushes contend
// since the css id lock of 2011 is gone): folds the lock events of
// events.h into per-cgroup and node-wide state. Owned by the Aggregator
// (aggregator.h), which calls it under its mutex on the reader thread and
// tells it which cgroup a task's reclaim belongs to.
//
// Depends on the series table only (series_table.h): per-cgroup state is
// indexed by its slots, labels come from it.
// Kernel interface (formats checked on 6.18, tests/fixtures/tracefs/events):
//  - cgroup:cgroup_rstat_lock_contended / cgroup_rstat_locked /
//    cgroup_rstat_unlock (root, level, id, cpu, contended): the rstat flush
//    lock (per subsystem since 6.16, one global lock before), taken per CPU
//    of a flush. contended -> locked of the same task is the wait, locked ->
//    unlock the hold; `id` is the flushed cgroup (its directory inode), `root`
//    its hierarchy id (0 = cgroup v2). Enabled with the in-kernel filter
//    root==<memory hierarchy id>.
//  - memcg:memcg_flush_stats (id, stats_updates, force, needs_flush): one per
//    mem_cgroup_flush_stats() call; needs_flush=0 means it returned early.
//  - lock:contention_begin (lock_addr, flags) / contention_end (lock_addr,
//    ret), since 5.19. flags are LCB_F_* (include/trace/events/lock.h).
//    Begins nest: a mutex's slow path traces MUTEX|SPIN, then MUTEX again for
//    each sleep/spin phase, with one end. We pair an end with the FIRST begin
//    of the same task on the same lock. A contention in an interrupt (another
//    lock) nests inside a task's contention with its own begin/end, so each
//    task has a small stack of open contentions keyed by lock address.
//    Enabled with the in-kernel filter flags!=32 on begins: a bare
//    LCB_F_MUTEX begin always follows a MUTEX|SPIN begin of the same wait
//    (kernel/locking/mutex.c), so dropping it in the kernel loses nothing.
//  - ftrace:kernel_stack, written by a `stacktrace:N` trigger on
//    contention_begin in our instance (lock-callers only), right after the
//    begin it belongs to.
// Attribution: a contention that begins while its task is inside direct,
// memcg or soft-limit reclaim (the aggregator's per-task begin/end state) is
// charged to the task's cgroup; all others are node-wide.
// Units: ns inside, seconds in metrics/JSON. Bounded: one entry per task with
// a contention or rstat lock in flight (dropped at its end, or on exit), per-cgroup series share the
// aggregator's slots (its cap and overflow), at most kMaxTrackedLocks lock
// addresses and kMaxTrackedStacks stacks (then the lighter half is folded
// into "other").
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "metrics/histogram.h"
#include "tracing/events.h"

namespace memcg::tracing {

class SeriesTable;

/// LCB_F_* of lock:contention_begin (include/trace/events/lock.h).
inline constexpr uint32_t kLcbSpin = 1u << 0;
inline constexpr uint32_t kLcbRead = 1u << 1;
inline constexpr uint32_t kLcbWrite = 1u << 2;
inline constexpr uint32_t kLcbRt = 1u << 3;
inline constexpr uint32_t kLcbPercpu = 1u << 4;
inline constexpr uint32_t kLcbMutex = 1u << 5;

/// The lock kinds a flags value decodes to (the same table as perf lock's).
enum class LockKind : uint8_t {
  kSpinlock = 0,     // SPIN
  kRwlockRead,       // SPIN|READ
  kRwlockWrite,      // SPIN|WRITE
  kRwsemRead,        // READ
  kRwsemWrite,       // WRITE
  kMutex,            // MUTEX, MUTEX|SPIN (optimistic spin)
  kRtMutex,          // RT
  kRtRwlockRead,     // RT|READ (PREEMPT_RT rwlock/rwsem)
  kRtRwlockWrite,    // RT|WRITE
  kPercpuRwsemRead,  // PERCPU|READ
  kPercpuRwsemWrite, // PERCPU|WRITE
  kOther,            // any other combination
  kCount,
};
inline constexpr size_t kLockKinds = static_cast<size_t>(LockKind::kCount);
LockKind lockKindFromFlags(uint32_t flags);
/// "spinlock", "rwlock_read", ..., "other": the bounded `kind` label set.
const char* lockKindName(LockKind k);

/// Lock wait/hold histogram bounds (ns): 100 ns .. 1 s in 1-2.5-5 steps, then
/// +Inf. Lower than the reclaim stall buckets: spinlock waits are sub-us.
inline constexpr std::array<uint64_t, 22> kLockBoundsNs = {
    100,        250,        500,         1'000,       2'500,       5'000,
    10'000,     25'000,     50'000,      100'000,     250'000,     500'000,
    1'000'000,  2'500'000,  5'000'000,   10'000'000,  25'000'000,  50'000'000,
    100'000'000, 250'000'000, 500'000'000, 1'000'000'000};

inline constexpr metrics::BucketLayout<uint64_t, kLockBoundsNs.size()> kLockBuckets{
    kLockBoundsNs, 1e9};

/// Lock wait/hold times (ns observed, seconds exposed).
using LockHistogram = metrics::FixedHistogram<kLockBuckets>;

struct LockKindStats {
  uint64_t count = 0;    ///< paired contentions (begin -> end)
  uint64_t aborted = 0;  ///< of which the wait ended with ret != 0 (signal, timeout)
  LockHistogram wait;
};
using LockKindArray = std::array<LockKindStats, kLockKinds>;

struct RstatStats {
  uint64_t contended = 0;  ///< cgroup_rstat_lock_contended
  LockHistogram wait;      ///< contended -> locked
  LockHistogram hold;      ///< locked -> unlock (count = lock acquisitions)
  uint64_t flushes = 0;         ///< memcg_flush_stats with needs_flush=1
  uint64_t flushes_skipped = 0; ///< memcg_flush_stats with needs_flush=0
};

struct LockCgroupSeries {
  std::string label;  ///< traceCgroupLabel() of the aggregator slot
  RstatStats rstat;
  LockKindArray contention;  ///< contentions while a task of the cgroup reclaimed
};

struct TopLock {
  uint64_t addr = 0;
  LockKind kind = LockKind::kOther;  ///< of the first contention seen
  uint64_t count = 0;
  uint64_t wait_ns = 0;
};

struct TopStack {
  std::vector<uint64_t> frames;  ///< innermost first, as the kernel wrote them
  LockKind kind = LockKind::kOther;
  uint64_t count = 0;
};

inline constexpr size_t kTopLocks = 10;
inline constexpr size_t kTopStacks = 10;
inline constexpr size_t kMaxTrackedLocks = 512;
inline constexpr size_t kMaxTrackedStacks = 256;
inline constexpr size_t kMaxStackFrames = 16;

struct LockSnapshot {
  bool enabled = false;  ///< lock probes on (set by the Tracer)
  bool callers = false;  ///< stacktrace sampling on (set by the Tracer)
  LockKindArray node;    ///< contentions outside reclaim
  std::vector<LockCgroupSeries> cgroups;  ///< only cgroups with data
  std::vector<TopLock> top_locks;  ///< by wait time, at most kTopLocks
  TopLock other_locks;             ///< everything else (addr 0)
  std::vector<TopStack> top_stacks;  ///< by samples, at most kTopStacks
  uint64_t stacks_sampled = 0;       ///< kernel_stack records decoded
  uint64_t stacks_other = 0;         ///< samples not in top_stacks
  uint64_t unpaired_ends = 0;   ///< contention_end without an open begin
  uint64_t nested_begins = 0;   ///< repeated begins of an open contention (ignored)
  uint64_t rstat_unpaired = 0;  ///< rstat locked/unlock without their predecessor
};

/// Ranks sampled stacks as both backends report them: the kTopStacks with
/// the most samples (ties: by frames) into s.top_stacks, the samples of the
/// rest added to s.stacks_other.
void rankStacks(std::vector<TopStack> all, LockSnapshot& s);

/// In-kernel filter for a lock-probe event ("" for none): root==<hierarchy>
/// on the rstat events, flags!=32 on contention_begin (see above).
std::string lockEventFilter(EventType t, int hierarchy_id);
/// The trigger written to lock/contention_begin/trigger for caller sampling.
std::string lockCallerTrigger(unsigned samples);

class LockStats {
 public:
  static constexpr uint32_t kNodeWide = UINT32_MAX;

  /// `reclaim_slot`: the aggregator slot of the task if it is inside reclaim,
  /// else kNodeWide. `cg_slot`: the slot of the event's cgroup id.
  void contentionBegin(const Event& e, uint32_t reclaim_slot);
  void contentionEnd(const Event& e);
  void rstat(const Event& e, uint32_t cg_slot);
  void flushStats(const Event& e, uint32_t cg_slot);
  void kernelStack(const Event& e);
  /// The task exited: forget its open contentions.
  void forget(int32_t tid) { pids_.erase(tid); }
  /// The aggregator freed `slot` (its cgroup was removed): drop the cgroup's
  /// lock series and move waits in flight that were charged to it node-wide,
  /// so a cgroup that reuses the slot starts from zero.
  void dropSlot(uint32_t slot);
  /// Tasks with a contention or rstat lock in flight (tests, bounds).
  size_t openTasks() const { return pids_.size(); }
  /// Bound on tasks with state (the aggregator's max_pids).
  void setMaxPids(size_t n) { max_pids_ = n; }

  /// Copy with labels from the series table (slots are its slots).
  LockSnapshot snapshot(const SeriesTable& series) const;

 private:
  struct Open {
    uint64_t ts = 0;
    uint64_t addr = 0;
    uint32_t flags = 0;
    uint32_t slot = kNodeWide;
  };
  struct PidState {
    std::array<Open, 4> open{};  // innermost last
    uint8_t depth = 0;
    uint64_t rstat_wait_ts = 0;  // 0 = none
    uint64_t rstat_hold_ts = 0;
    uint32_t last_flags = 0;  // of the latest begin (for its stack sample)
  };
  struct CgState {
    RstatStats rstat;
    LockKindArray contention;
    bool used = false;
  };
  PidState& pid(int32_t tid);
  CgState& cg(uint32_t slot);
  void dropIfIdle(std::unordered_map<int32_t, PidState>::iterator it);
  void pruneLocks();
  void pruneStacks();

  size_t max_pids_ = 1u << 20;
  std::unordered_map<int32_t, PidState> pids_;
  std::vector<CgState> cgroups_;  // by aggregator slot
  LockKindArray node_;
  std::unordered_map<uint64_t, TopLock> locks_;
  TopLock other_locks_;
  std::map<std::vector<uint64_t>, TopStack> stacks_;
  uint64_t stacks_sampled_ = 0;
  uint64_t stacks_pruned_ = 0;
  uint64_t unpaired_ends_ = 0;
  uint64_t nested_begins_ = 0;
  uint64_t rstat_unpaired_ = 0;
};

}  // namespace memcg::tracing
