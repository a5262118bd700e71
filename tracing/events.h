// Typed tracepoint events the tracing pipeline understands.
//
// Kernel interface: tracefs events (Documentation/trace/events.rst), formats
// read from events/<system>/<event>/format. Field layouts are resolved at run
// time from those files (see decoders.h), so a kernel that moves a field still
// decodes correctly; an event that is missing is simply not enabled.
// Timestamps are the ring buffer's clock: the instance's trace_clock "mono"
// (CLOCK_MONOTONIC ns, tracefs_session.h), or "local" (ns, per CPU) on a
// kernel that refuses mono. Page counts are pages.
// Minimum kernel: 5.10 for the vmscan events as listed (lru_shrink_inactive
// with nr_activate0/1 since 4.17; cgroup_attach_task with dst_id since 5.5).
// Lock probes: lock:contention_* since 5.19; cgroup_rstat_* and
// memcg_flush_stats are recent (absent on 6.1, present on 6.18).
#pragma once

#include <cstdint>
#include <string_view>

namespace memcg::tracing {

enum class EventType : uint8_t {
  kUnknown = 0,
  kDirectReclaimBegin,     // vmscan:mm_vmscan_direct_reclaim_begin (order, gfp_flags)
  kDirectReclaimEnd,       // vmscan:mm_vmscan_direct_reclaim_end (nr_reclaimed)
  kMemcgReclaimBegin,      // vmscan:mm_vmscan_memcg_reclaim_begin (no memcg id on 6.18)
  kMemcgReclaimEnd,        // vmscan:mm_vmscan_memcg_reclaim_end (nr_reclaimed)
  kSoftlimitReclaimBegin,  // vmscan:mm_vmscan_memcg_softlimit_reclaim_begin
  kSoftlimitReclaimEnd,    // vmscan:mm_vmscan_memcg_softlimit_reclaim_end
  kKswapdWake,             // vmscan:mm_vmscan_kswapd_wake (nid, order), by kswapd
  kKswapdSleep,            // vmscan:mm_vmscan_kswapd_sleep (nid), by kswapd
  kWakeupKswapd,       // vmscan:mm_vmscan_wakeup_kswapd (nid, order), by the allocator
  kLruShrinkInactive,  // vmscan:mm_vmscan_lru_shrink_inactive (scanned, reclaimed, ...)
  // LRU/writeback/slab detail and cgroup removal (tracing/aggregator_scan.cpp).
  kLruIsolate,       // vmscan:mm_vmscan_lru_isolate (nr_scanned, nr_taken, lru)
  kLruShrinkActive,  // vmscan:mm_vmscan_lru_shrink_active (nr_taken, nr_deactivated)
  kWriteFolio,       // vmscan:mm_vmscan_write_folio (older kernels: mm_vmscan_writepage)
  kThrottled,        // vmscan:mm_vmscan_throttled (usec_delayed, reason)
  kShrinkSlabStart,  // vmscan:mm_shrink_slab_start, by the shrinking task
  kShrinkSlabEnd,    // vmscan:mm_shrink_slab_end (retval = objects freed)
  kReclaimPages,     // vmscan:mm_vmscan_reclaim_pages (MADV_PAGEOUT, DAMON)
  kCgroupRmdir,      // cgroup:cgroup_rmdir (root, id, path): drops the series
  kCgroupAttach,       // cgroup:cgroup_attach_task (dst_root, dst_id, dst_path, pid)
  kProcessFork,        // sched:sched_process_fork (parent_pid, child_pid)
  kProcessExit,        // sched:sched_process_exit (pid)
  // Lock contention probes (tracing/lock_stats.h); enabled only with
  // TracerOptions::locks. Kept in one block at the end.
  kRstatLockContended,   // cgroup:cgroup_rstat_lock_contended (root, id, cpu, contended)
  kRstatLocked,          // cgroup:cgroup_rstat_locked (root, id, cpu, contended)
  kRstatUnlock,          // cgroup:cgroup_rstat_unlock (root, id, cpu)
  kMemcgFlushStats,      // memcg:memcg_flush_stats (id, stats_updates, force, needs_flush)
  kLockContentionBegin,  // lock:contention_begin (lock_addr, flags LCB_F_*)
  kLockContentionEnd,    // lock:contention_end (lock_addr, ret)
  kKernelStack,          // ftrace:kernel_stack (size, caller[]): from a stacktrace
                         // trigger; a record format, never enabled as an event
  kCount,
};

/// One decoded record. Flat on purpose: decoding writes a handful of fields
/// and the aggregator reads them without virtual calls or allocation.
struct Event {
  uint64_t ts = 0;  ///< ring-buffer timestamp, ns
  int32_t pid = 0;  ///< common_pid: the task (thread id) that hit the tracepoint
  EventType type = EventType::kUnknown;
  int16_t cpu = -1;
  int32_t order = 0;           ///< allocation order (begin events, kswapd wake/wakeup)
  int32_t nid = 0;             ///< NUMA node (kswapd, lru events)
  uint64_t nr_reclaimed = 0;   ///< pages (end events, lru_shrink_inactive)
  uint64_t nr_scanned = 0;     ///< pages (lru_shrink_inactive)
  uint64_t nr_dirty = 0;       ///< pages (lru_shrink_inactive)
  uint64_t nr_writeback = 0;   ///< pages (lru_shrink_inactive)
  uint32_t reclaim_flags = 0;  ///< RECLAIM_WB_* (lru_shrink_*, write_folio)
  int32_t lru = 0;             ///< lru_isolate: enum lru_list (0..4)
  uint64_t nr_taken = 0;       ///< lru_isolate, lru_shrink_active
  uint64_t nr_deactivated = 0; ///< lru_shrink_active
  uint32_t reason = 0;         ///< throttled: 1 << enum vmscan_throttle_state
  uint64_t delayed_us = 0;     ///< throttled: usec_delayed
  int64_t freed = 0;           ///< shrink_slab_end: retval (objects freed)
  int32_t target_pid = 0;      ///< attach: moved task; fork: child; exit: exiting task
  int32_t dst_root = 0;        ///< attach, rmdir: hierarchy id (0 = cgroup v2)
  uint64_t dst_id = 0;         ///< attach, rmdir: cgroup id (kernfs id = directory inode)
  std::string_view
      dst_path;  ///< attach, rmdir: path below the hierarchy root; points into the page
  std::string_view comm;  ///< exit: the task's comm; points into the page
  // Lock contention probes.
  uint64_t lock_addr = 0;   ///< contention_begin/end: the lock's kernel address
  uint32_t lock_flags = 0;  ///< contention_begin: LCB_F_* (lock_stats.h)
  int32_t lock_ret = 0;     ///< contention_end: 0, or -errno if the wait was aborted
  uint64_t cg_id = 0;       ///< rstat, memcg_flush_stats: cgroup id (directory inode)
  int32_t cg_root = 0;      ///< rstat: hierarchy id (0 = cgroup v2)
  bool contended = false;   ///< rstat locked: the lock was contended
  bool needs_flush = false; ///< memcg_flush_stats: the flush was done (not skipped)
  uint16_t stack_depth = 0; ///< kernel_stack: number of callers
  const uint8_t* stack = nullptr;  ///< kernel_stack: callers (u64 each, unaligned), in the page
};

/// RECLAIM_WB_* bits of lru_shrink_inactive's reclaim_flags
/// (include/trace/events/vmscan.h).
inline constexpr uint32_t kReclaimWbAnon = 0x0001;
inline constexpr uint32_t kReclaimWbFile = 0x0002;
inline constexpr uint32_t kReclaimWbSync = 0x0004;
inline constexpr uint32_t kReclaimWbAsync = 0x0008;

/// enum lru_list values of mm_vmscan_lru_isolate's `lru` (include/linux/mmzone.h,
/// stable since 2.6.28): inactive_anon, active_anon, inactive_file, active_file,
/// unevictable. Odd = active list, >= 2 = file.
inline constexpr int32_t kLruUnevictable = 4;

/// mm_vmscan_throttled reason bits: 1 << enum vmscan_throttle_state
/// (include/linux/mmzone.h, 5.16+; the format prints them symbolically).
inline constexpr uint32_t kThrottleReasons = 4;  // writeback, isolated, noprogress, congested

struct EventName {
  EventType type;
  const char* system;
  const char* name;
  /// Older kernels' name of the same event with the fields we read (or null).
  const char* alt_name = nullptr;
};

/// Every event the decoder knows, in EventType order.
inline constexpr EventName kEventNames[] = {
    {EventType::kDirectReclaimBegin, "vmscan", "mm_vmscan_direct_reclaim_begin"},
    {EventType::kDirectReclaimEnd, "vmscan", "mm_vmscan_direct_reclaim_end"},
    {EventType::kMemcgReclaimBegin, "vmscan", "mm_vmscan_memcg_reclaim_begin"},
    {EventType::kMemcgReclaimEnd, "vmscan", "mm_vmscan_memcg_reclaim_end"},
    {EventType::kSoftlimitReclaimBegin, "vmscan",
     "mm_vmscan_memcg_softlimit_reclaim_begin"},
    {EventType::kSoftlimitReclaimEnd, "vmscan", "mm_vmscan_memcg_softlimit_reclaim_end"},
    {EventType::kKswapdWake, "vmscan", "mm_vmscan_kswapd_wake"},
    {EventType::kKswapdSleep, "vmscan", "mm_vmscan_kswapd_sleep"},
    {EventType::kWakeupKswapd, "vmscan", "mm_vmscan_wakeup_kswapd"},
    {EventType::kLruShrinkInactive, "vmscan", "mm_vmscan_lru_shrink_inactive"},
    {EventType::kLruIsolate, "vmscan", "mm_vmscan_lru_isolate"},
    {EventType::kLruShrinkActive, "vmscan", "mm_vmscan_lru_shrink_active"},
    {EventType::kWriteFolio, "vmscan", "mm_vmscan_write_folio", "mm_vmscan_writepage"},
    {EventType::kThrottled, "vmscan", "mm_vmscan_throttled"},
    {EventType::kShrinkSlabStart, "vmscan", "mm_shrink_slab_start"},
    {EventType::kShrinkSlabEnd, "vmscan", "mm_shrink_slab_end"},
    {EventType::kReclaimPages, "vmscan", "mm_vmscan_reclaim_pages"},
    {EventType::kCgroupRmdir, "cgroup", "cgroup_rmdir"},
    {EventType::kCgroupAttach, "cgroup", "cgroup_attach_task"},
    {EventType::kProcessFork, "sched", "sched_process_fork"},
    {EventType::kProcessExit, "sched", "sched_process_exit"},
    {EventType::kRstatLockContended, "cgroup", "cgroup_rstat_lock_contended"},
    {EventType::kRstatLocked, "cgroup", "cgroup_rstat_locked"},
    {EventType::kRstatUnlock, "cgroup", "cgroup_rstat_unlock"},
    {EventType::kMemcgFlushStats, "memcg", "memcg_flush_stats"},
    {EventType::kLockContentionBegin, "lock", "contention_begin"},
    {EventType::kLockContentionEnd, "lock", "contention_end"},
    {EventType::kKernelStack, "ftrace", "kernel_stack"},
};

/// The lock-probe events (off by default; TracerOptions::locks).
inline constexpr bool isLockEvent(EventType t) {
  return t >= EventType::kRstatLockContended && t <= EventType::kKernelStack;
}

inline const EventName* eventName(EventType t) {
  for (const auto& e : kEventNames) {
    if (e.type == t) return &e;
  }
  return nullptr;
}

}  // namespace memcg::tracing
