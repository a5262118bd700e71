// Typed tracepoint events the tracing pipeline understands.
//
// Kernel interface: tracefs events (Documentation/trace/events.rst), formats
// read from events/<system>/<event>/format. Field layouts are resolved at run
// time from those files (see decoders.h), so a kernel that moves a field still
// decodes correctly; an event that is missing is simply not enabled.
// Timestamps are the ring buffer's clock (trace_clock "local": ns, per CPU,
// synchronised across CPUs on x86 with a stable TSC). Page counts are pages.
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
  uint32_t reclaim_flags = 0;  ///< RECLAIM_WB_* (lru_shrink_inactive)
  int32_t target_pid = 0;      ///< attach: moved task; fork: child; exit: exiting task
  int32_t dst_root = 0;        ///< attach: hierarchy id (0 = cgroup v2)
  uint64_t dst_id = 0;         ///< attach: cgroup id (kernfs id = directory inode)
  std::string_view
      dst_path;  ///< attach: path below the hierarchy root; points into the page
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

struct EventName {
  EventType type;
  const char* system;
  const char* name;
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
