// Folds decoded vmscan/cgroup/sched events into per-cgroup reclaim state.
//
// Attribution: vmscan events carry no cgroup (6.18: not even
// mm_vmscan_memcg_reclaim_begin), so each event is charged to the memcg of the
// task that hit the tracepoint (common_pid). Reclaim done by a process writing
// a cgroup file (memory.reclaim, limit_in_bytes) is thus charged to the
// writer. The pid -> cgroup cache is filled from cgroup:cgroup_attach_task
// (dst_path), sched:sched_process_fork (child inherits the parent's entry) and,
// on a miss, /proc/<tid>/cgroup (CgroupResolver); sched:sched_process_exit
// drops the entry at the end of the reader's round.
// Units: stall times in ns internally, seconds in the snapshot helpers; page
// counts are pages (PAGE_SIZE, 4 KiB on x86-64).
// Bounded memory: at most max_cgroups series (then one overflow series) and
// max_pids cached tasks (then the cache is cleared and refilled on demand).
// Thread safety: apply()/endRound() run on the reader thread; snapshot() and
// the proactive-reclaimer registry may be called from any thread. All share
// one mutex, held per apply() chunk (~1000 events, tens of microseconds).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "metrics/histogram.h"
#include "tracing/cgroup_resolver.h"
#include "tracing/events.h"
#include "tracing/lock_stats.h"

namespace memcg::tracing {

/// Stall histogram upper bounds (ns): 1 us .. 10 s in 1-2.5-5 steps, then +Inf.
inline constexpr std::array<uint64_t, 22> kStallBoundsNs = {
    1'000,         2'500,         5'000,         10'000,        25'000,      50'000,
    100'000,       250'000,       500'000,       1'000'000,     2'500'000,   5'000'000,
    10'000'000,    25'000'000,    50'000'000,    100'000'000,   250'000'000, 500'000'000,
    1'000'000'000, 2'500'000'000, 5'000'000'000, 10'000'000'000};
inline constexpr metrics::BucketLayout<uint64_t, kStallBoundsNs.size()> kStallBuckets{
    kStallBoundsNs, 1e9};

/// Stall times of one series (ns observed, seconds exposed).
using StallHistogram = metrics::FixedHistogram<kStallBuckets>;

/// Who reclaimed: the begin/end pair the stall belongs to.
enum class ReclaimKind : uint8_t {
  kDirect = 0,  ///< mm_vmscan_direct_reclaim_*: global direct reclaim in the allocator
  kMemcg,       ///< mm_vmscan_memcg_reclaim_*: memcg limit reclaim by the charging task
  kSoftlimit,   ///< mm_vmscan_memcg_softlimit_reclaim_* (cgroup v1 soft limit)
  kProactive,   ///< memcg reclaim by a task registered as our background reclaimer
  kCount,
};
inline constexpr size_t kReclaimKinds = static_cast<size_t>(ReclaimKind::kCount);
const char* reclaimKindName(
    ReclaimKind k);  // "direct", "memcg", "softlimit", "proactive"

/// The context an LRU scan ran in (innermost open reclaim of the task).
enum class ReclaimContext : uint8_t {
  kDirect = 0,
  kMemcg,
  kSoftlimit,
  kProactive,
  kKswapd,
  kOther,
  kCount,
};
inline constexpr size_t kReclaimContexts = static_cast<size_t>(ReclaimContext::kCount);
const char* reclaimContextName(ReclaimContext c);

enum class LruType : uint8_t { kAnon = 0, kFile, kCount };
inline constexpr size_t kLruTypes = static_cast<size_t>(LruType::kCount);
const char* lruTypeName(LruType l);  // "anon", "file"

struct ReclaimStats {
  uint64_t total = 0;            ///< completed reclaims (end events)
  uint64_t reclaimed_pages = 0;  ///< sum of nr_reclaimed of the end events
  uint64_t unpaired = 0;         ///< ends without a matching begin (no stall observed)
  StallHistogram stall;          ///< begin -> end of the same task
};

/// mm_vmscan_lru_shrink_inactive sums.
struct LruStats {
  uint64_t scanned_pages = 0;
  uint64_t reclaimed_pages = 0;
  uint64_t dirty_pages = 0;
  uint64_t writeback_pages = 0;
};

/// LRU/writeback/slab detail per cgroup (tracing/aggregator_scan.cpp).
enum class LruList : uint8_t { kInactive = 0, kActive, kCount };
inline constexpr size_t kLruLists = static_cast<size_t>(LruList::kCount);
const char* lruListName(LruList l);  // "inactive", "active"
enum class WriteIo : uint8_t { kSync = 0, kAsync, kCount };
inline constexpr size_t kWriteIos = static_cast<size_t>(WriteIo::kCount);
const char* writeIoName(WriteIo w);  // "sync", "async"
/// Throttle reasons: writeback, isolated, noprogress, congested, then "other".
inline constexpr size_t kThrottleSlots = kThrottleReasons + 1;
const char* throttleReasonName(size_t i);

struct IsolateStats {         ///< mm_vmscan_lru_isolate (off by default)
  uint64_t scanned_pages = 0;  ///< nr_scanned
  uint64_t taken_pages = 0;    ///< nr_taken (isolated)
};
struct ActiveStats {              ///< mm_vmscan_lru_shrink_active (off by default)
  uint64_t taken_pages = 0;        ///< isolated from the active list
  uint64_t deactivated_pages = 0;  ///< moved to the inactive list
};
struct ThrottleStats {  ///< mm_vmscan_throttled
  uint64_t count = 0;
  uint64_t delayed_us = 0;
};
struct SlabStats {  ///< mm_shrink_slab_start/end (off by default)
  uint64_t calls = 0;
  uint64_t freed_objects = 0;
  uint64_t ns = 0;  ///< start -> end of the same task
};
struct ScanDetail {
  std::array<std::array<std::array<IsolateStats, kLruLists>, kLruTypes>, kReclaimContexts>
      isolate{};
  std::array<std::array<ActiveStats, kLruTypes>, kReclaimContexts> active{};
  std::array<std::array<uint64_t, kWriteIos>, kReclaimContexts> write_folios{};
  std::array<ThrottleStats, kThrottleSlots> throttled{};
  std::array<SlabStats, kReclaimContexts> slab{};
  uint64_t pageout_scanned_pages = 0;  ///< mm_vmscan_reclaim_pages nr_scanned
  uint64_t pageout_reclaimed_pages = 0;
};

struct CgroupTraceStats {
  std::string path;       ///< relative to the memcg hierarchy root ("/" = root)
  uint64_t id = 0;        ///< cgroup id (directory inode), 0 if unknown
  bool unknown = false;   ///< tasks whose cgroup could not be resolved (exited early)
  bool overflow = false;  ///< cgroups beyond max_cgroups, folded together
  std::array<ReclaimStats, kReclaimKinds> reclaim{};
  std::array<std::array<LruStats, kLruTypes>, kReclaimContexts> lru{};
  uint64_t kswapd_wakeup_requests =
      0;                        ///< mm_vmscan_wakeup_kswapd by this cgroup's tasks
  uint64_t tasks_attached = 0;  ///< cgroup_attach_task with this destination
  ScanDetail detail;
};

/// One row of the report's per-process / kswapd-instance tables
/// (trace-vmscan-postprocess's columns). Per task (tid), as the script.
struct ProcessTraceStats {
  int32_t pid = 0;  ///< tid; 0 for the "other" row
  std::string comm;
  std::string cgroup;     ///< label of the series it was charged to last
  bool kswapd = false;    ///< a kswapd thread (row of the kswapd-instance table)
  bool exited = false;    ///< kept after exit (top by stall)
  bool other = false;     ///< exited tasks beyond the top, and tasks past the cap
  std::array<uint64_t, kReclaimKinds> reclaims{};  ///< by ReclaimKind
  uint64_t stall_ns = 0;  ///< direct + memcg + softlimit stalls (not proactive)
  uint64_t wake_requests = 0;
  uint64_t scanned_pages = 0;  ///< lru_shrink_inactive nr_scanned
  uint64_t reclaimed_pages = 0;
  uint64_t write_sync = 0;   ///< write_folio with RECLAIM_WB_SYNC
  uint64_t write_async = 0;  ///< write_folio with RECLAIM_WB_ASYNC
  uint64_t throttled = 0;
  uint64_t throttled_us = 0;
  uint64_t kswapd_wakeups = 0;    ///< kswapd rows: mm_vmscan_kswapd_wake
  uint64_t kswapd_rewakeups = 0;  ///< woken again while awake
  uint64_t kswapd_awake_ns = 0;
};

inline constexpr size_t kWakeupOrders = 11;  // orders 0..9, then ">= 10"

struct NodeTraceStats {
  uint64_t kswapd_wakeups = 0;   ///< mm_vmscan_kswapd_wake (incl. re-wakeups)
  uint64_t kswapd_awake_ns = 0;  ///< first wake -> sleep, summed over kswapd threads
  std::array<uint64_t, kWakeupOrders> wakeup_requests_by_order{};  ///< wakeup_kswapd
};

struct AggregatorCounters {
  uint64_t events = 0;             ///< events applied
  uint64_t pid_cache_entries = 0;  ///< current size
  uint64_t pid_lookups = 0;        ///< /proc lookups (cache misses)
  uint64_t pid_lookup_failures = 0;
  uint64_t pid_cache_resets = 0;  ///< cache cleared because max_pids was reached
  uint64_t overflow_events = 0;   ///< events charged to the overflow series
  uint64_t cgroups_removed = 0;   ///< series dropped on cgroup_rmdir
  uint64_t proactive_targeted = 0;  ///< events charged to a proactive episode's target
};

struct TraceSnapshot {
  std::vector<CgroupTraceStats> cgroups;  ///< unknown and overflow series included
  /// Live tasks with vmscan activity (at most max_processes), then exited
  /// ones (top max_exited_processes by stall), then one "other" row.
  std::vector<ProcessTraceStats> processes;
  NodeTraceStats node;
  AggregatorCounters aggregator;
  // Filled by Tracer (tracer.h) from the session; zero when used standalone.
  bool running = false;
  uint64_t events_read = 0;    ///< records read from the ring buffers
  uint64_t events_lost = 0;    ///< overrun + dropped per the kernel's per-CPU stats
  uint64_t decode_errors = 0;  ///< records of unknown id or too short
  uint64_t reader_cpu_ns = 0;  ///< CPU time used by the reader thread so far
  LockSnapshot locks;          ///< lock probes (lock_stats.h); enabled set by Tracer
};

struct AggregatorOptions {
  size_t max_cgroups = 2048;
  size_t max_pids = 1u << 20;
  /// Hierarchy id of memcg (v1) or 0 (v2): attach events for other hierarchies are
  /// ignored.
  int hierarchy_id = 0;
  /// Live tasks with a report row; later ones are summed into "other".
  size_t max_processes = 1024;
  /// Exited tasks kept as rows (the most stalled); the rest go to "other".
  size_t max_exited_processes = 32;
  /// Event timestamps are CLOCK_MONOTONIC (instance trace_clock "mono"):
  /// needed to match proactive episodes (beginProactiveTarget) to events.
  bool mono_clock = false;
};

class Aggregator {
 public:
  Aggregator(AggregatorOptions opts, std::unique_ptr<CgroupResolver> resolver);

  /// Reader thread: folds events in order (the session merges CPUs by time).
  void apply(std::span<const Event> events);
  /// Reader thread: end of a read round; forgets tasks that exited in the
  /// round before it (late records of a task still find it).
  void endRound();
  /// Any thread: a consistent copy of all series.
  TraceSnapshot snapshot() const;

  /// Memcg reclaim by `tid` is counted as kProactive (our own background reclaim).
  void registerProactiveReclaimer(int32_t tid);
  void unregisterProactiveReclaimer(int32_t tid);
  /// Episode of background reclaim by registered reclaimer `tid` on behalf of
  /// `cgroup` (label, "/a/b"): everything `tid` does between begin and end
  /// (event timestamps, CLOCK_MONOTONIC now) is charged to that cgroup, as
  /// kind/context "proactive", instead of to the reclaimer's own cgroup.
  /// The controller brackets a v1 limit nudge with these. Returns false (and
  /// the reclaim stays charged to the writer) unless the trace clock is mono.
  bool beginProactiveTarget(int32_t tid, std::string_view cgroup);
  void endProactiveTarget(int32_t tid);
  /// Same with explicit event-clock timestamps (tests).
  bool beginProactiveTarget(int32_t tid, std::string_view cgroup, uint64_t ts);
  void endProactiveTarget(int32_t tid, uint64_t ts);

 private:
  static constexpr uint8_t kFlagKswapd = 1;
  static constexpr uint8_t kFlagProactive = 2;
  static constexpr uint8_t kFlagExited = 4;
  static constexpr uint32_t kNoProc = 0;
  struct PidState {
    uint32_t slot = 0;
    uint8_t flags = 0;
    uint32_t proc = kNoProc;  // index into procs_ (report row), kNoProc = none
    std::array<uint64_t, 3> begin_ts{};  // direct, memcg, softlimit; 0 = none open
    uint64_t kswapd_wake_ts = 0;
    uint64_t slab_start_ts = 0;
  };
  struct Episode {  // proactive reclaim on behalf of another cgroup
    int32_t tid;
    uint32_t slot;
    uint64_t begin_ts, end_ts;  // end_ts = UINT64_MAX while open
  };

  void handle(const Event& e);
  PidState& pidState(int32_t tid);
  uint32_t internCgroup(std::string_view path, uint64_t id);
  void endReclaim(const Event& e, size_t begin_idx);
  // tracing/aggregator_scan.cpp: detail events, report rows, rmdir, episodes.
  void handleScan(const Event& e);
  void removeCgroup(const Event& e);
  static ReclaimContext contextOf(const PidState& st);
  /// The series an event of `st` is charged to (a proactive episode's target
  /// or the task's own cgroup).
  uint32_t chargeSlot(const PidState& st, const Event& e) {
    return (st.flags & kFlagProactive) && !episodes_.empty() ? episodeSlot(st, e) : st.slot;
  }
  uint32_t episodeSlot(const PidState& st, const Event& e);
  /// The task's report row (created on first use; "other" past the cap).
  ProcessTraceStats& proc(PidState& st, int32_t tid, uint32_t slot);
  void dropProc(PidState& st);  // folds an exited task's row
  void forgetPid(std::unordered_map<int32_t, PidState>::iterator it);
  void clearPids();
  std::string labelOf(uint32_t slot) const;
  // Lock probes (lock_stats.h).
  void handleLock(const Event& e);
  uint32_t slotOfId(uint64_t cgroup_id);

  const AggregatorOptions opts_;
  std::unique_ptr<CgroupResolver> resolver_;
  mutable std::mutex mu_;
  std::unordered_map<int32_t, PidState> pids_;
  std::vector<int32_t> exited_;       // exits seen in this round
  std::vector<int32_t> exited_prev_;  // ... in the previous one (forgotten now)
  std::unordered_set<int32_t> proactive_;
  std::vector<CgroupTraceStats> slots_;  // slot 0: unknown
  std::unordered_map<std::string, uint32_t> by_path_;
  std::vector<uint32_t> free_slots_;  // slots of removed cgroups, reused
  std::vector<ProcessTraceStats> procs_;  // [0]: the "other" row
  std::vector<uint32_t> procs_slot_;      // series each row was last charged to
  std::vector<uint32_t> free_procs_;
  size_t live_procs_ = 0;
  std::vector<ProcessTraceStats> exited_procs_;  // top by stall
  std::vector<Episode> episodes_;
  uint32_t overflow_slot_ = 0;  // 0 = not created yet
  NodeTraceStats node_;
  AggregatorCounters counters_;
  LockStats locks_;
  std::unordered_map<uint64_t, uint32_t> by_id_;  // cgroup id -> slot
  std::unordered_set<uint64_t> unresolved_ids_;   // ids no walk could find
};

}  // namespace memcg::tracing
