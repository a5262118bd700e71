/* The layout shared by the BPF program (memcg_trace.bpf.c) and its loader
 * (bpf_tracer.cpp): map keys and values. Plain C, fixed-size types only, so
 * both compilers lay it out alike. Index orders are the tracefs backend's
 * (tracing/series_table.h ReclaimKind / ReclaimContext / LruType,
 * tracing/aggregator.h UnpairedReason); bpf_tracer.cpp static_asserts them. */
#ifndef MEMCG_TRACE_BPF_H
#define MEMCG_TRACE_BPF_H

#ifdef __BPF__
typedef __u64 mt_u64;
typedef __u32 mt_u32;
#else
#include <stdint.h>
typedef uint64_t mt_u64;
typedef uint32_t mt_u32;
#endif

#define MT_KINDS 4          /* direct, memcg, softlimit, proactive */
#define MT_PAIRED_KINDS 3   /* begin/end tracepoint pairs: direct, memcg, softlimit */
#define MT_CONTEXTS 6       /* direct, memcg, softlimit, proactive, kswapd, other */
#define MT_LRU_TYPES 2      /* anon, file */
#define MT_REASONS 4        /* unpaired reasons */
#define MT_BOUNDS 22        /* finite histogram bounds (stall and lock layouts) */
#define MT_BUCKETS (MT_BOUNDS + 1)
#define MT_BOUNDS_PAD 32    /* bounds arrays' length: MT_BOUNDS, then ~0 (bucket search) */
#define MT_WAKEUP_ORDERS 11
#define MT_LOCK_DEPTH 4     /* open contentions per task (irq nesting) */
#define MT_THROTTLE_SLOTS 5 /* enum vmscan_throttle_state (4), then "other" */
#define MT_MARKS 4          /* hand-over marks per lock tracepoint and CPU (a power of 2) */

#ifdef __BPF__
#define MT_INLINE static __always_inline
#define MT_READ_ONCE(p) (*(volatile mt_u64*)(p))
#else
#define MT_INLINE static inline
#define MT_READ_ONCE(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#endif

/* The histogram bucket of v: the first bound >= v (MT_BOUNDS: +Inf), found
 * by a binary search of five unrolled steps instead of a walk of up to 22
 * compares. The bounds arrays are MT_BOUNDS_PAD long, padded with ~0, so
 * every index the search makes is in range and the padding is never below
 * v. Here, not in the program, so a unit test checks it against the tracefs
 * backend's histograms. */
MT_INLINE mt_u32 mt_bucket_of(const volatile mt_u64* b, mt_u64 v) {
  mt_u32 i = 0;
  if (b[15] < v) i = 16;
  if (b[(i + 7) & (MT_BOUNDS_PAD - 1)] < v) i += 8;
  if (b[(i + 3) & (MT_BOUNDS_PAD - 1)] < v) i += 4;
  if (b[(i + 1) & (MT_BOUNDS_PAD - 1)] < v) i += 2;
  if (b[i & (MT_BOUNDS_PAD - 1)] < v) i += 1;
  return i;
}

/* Key of the cgroup series that takes what no free entry could hold. */
#define MT_OVERFLOW_ID (~(mt_u64)0)
/* Key cg_id of node-wide lock contentions (outside reclaim). */
#define MT_NODE_ID 0

struct mt_hist {
  mt_u64 count;
  mt_u64 sum; /* ns */
  mt_u64 buckets[MT_BUCKETS]; /* per bucket, not cumulative */
};

struct mt_reclaim {
  mt_u64 total;
  mt_u64 reclaimed_pages;
  mt_u64 unpaired;
  struct mt_hist stall;
};

struct mt_lru {
  mt_u64 scanned;
  mt_u64 reclaimed;
  mt_u64 dirty;
  mt_u64 writeback;
};

struct mt_throttle {
  mt_u64 count;
  mt_u64 delayed_us;
};

/* Per-CPU value of the `cgroups` map, keyed by the memcg's cgroup id. The
 * series of the events on by default (tracing/series_table.h
 * CgroupTraceStats and the ScanDetail fields of write_folio, throttled and
 * reclaim_pages). */
struct mt_cgroup {
  struct mt_reclaim reclaim[MT_KINDS];
  struct mt_lru lru[MT_CONTEXTS][MT_LRU_TYPES];
  mt_u64 wakeup_kswapd;
  /* mm_vmscan_write_folio (older: mm_vmscan_writepage) by context. All async:
   * the kernel's trace_reclaim_flags() sets RECLAIM_WB_ASYNC on every
   * one (never SYNC, since 2.6.38), which is what the tracefs backend reads. */
  mt_u64 write_folios[MT_CONTEXTS];
  struct mt_throttle throttled[MT_THROTTLE_SLOTS]; /* mm_vmscan_throttled by reason */
  mt_u64 pageout_scanned;   /* mm_vmscan_reclaim_pages */
  mt_u64 pageout_reclaimed;
  mt_u64 tasks_attached;    /* cgroup_attach_task with this destination */
};

/* Per-CPU value of the `details` map (the detail events, off by default:
 * --collector.vmscan.lru-detail, --collector.vmscan.shrink-slab), keyed by
 * the memcg's cgroup id; apart from `cgroups` so the frequent events' series
 * stay small. tracing/series_table.h ScanDetail. */
#define MT_LRU_LISTS 2 /* inactive, active */
struct mt_isolate {
  mt_u64 scanned;
  mt_u64 taken;
};
struct mt_active {
  mt_u64 taken;
  mt_u64 deactivated;
};
struct mt_slab {
  mt_u64 calls;
  mt_u64 freed;
  mt_u64 ns;
};
struct mt_detail {
  struct mt_isolate isolate[MT_CONTEXTS][MT_LRU_TYPES][MT_LRU_LISTS];
  struct mt_active active[MT_CONTEXTS][MT_LRU_TYPES];
  struct mt_slab slab[MT_CONTEXTS];
};

/* A lock tracepoint's hand-over from its main program to its rescue twins
 * on one CPU (memcg_trace.bpf.c, the lock probes): the dispatches (ctx)
 * handled whose second twin has not run yet, by the main program and by
 * the first twin. */
struct mt_handover {
  mt_u64 marks[MT_MARKS];
  mt_u64 twin_marks[MT_MARKS];
  mt_u64 next;    /* the slot to overwrite when all are taken */
  mt_u64 running; /* the main program is between its first and last instruction */
};

/* Per-CPU value of the one-entry `node` array. */
struct mt_node {
  mt_u64 events;
  mt_u64 unpaired[MT_KINDS][MT_REASONS];
  mt_u64 wakeup_by_order[MT_WAKEUP_ORDERS];
  mt_u64 kswapd_wakeups;
  mt_u64 kswapd_rewakeups;
  mt_u64 kswapd_awake_ns;
  mt_u64 overflow_events;  /* charged to the overflow series (cgroups map full) */
  mt_u64 task_map_full;    /* task state that could not be kept (tasks map full) */
  mt_u64 cgroups_removed;  /* series dropped at cgroup_rmdir */
  mt_u64 lock_unpaired_ends;
  mt_u64 lock_nested_begins;
  mt_u64 rstat_unpaired;
  mt_u64 lock_map_full;    /* lock series that could not be kept */
  mt_u64 lock_ends;        /* contention_end events seen */
  mt_u64 lock_addrs_full;  /* contentions of locks the full lock_addrs map could not take */
  mt_u64 exited_full;      /* exited tasks' report rows summed into "other" (exited map full) */
  /* Contention events the rescue twins handled (main program skipped). */
  mt_u64 lock_rescued;
  /* The contention programs' hand-over to their rescue twins (slot 0
   * only; not counters: user space ignores them). */
  struct mt_handover lock_begin_ho, lock_end_ho;
  mt_u64 exit_cgroups_added; /* new keys in `exit_cgroups` (minus its entries: evicted) */
  mt_u64 callers_sampled;  /* kernel stacks taken at contention begins (lock callers) */
  mt_u64 callers_full;     /* of which the full `callers` map could not take */
};

/* A task's reclaim report row (tracing/report_rows.h ProcessTraceStats, the
 * fields the programs see). Kept in the task's own state; at its exit copied
 * to the `exited` map, which user space drains. */
#define MT_ROW_ACTIVE 1u /* the task did something the report shows */
#define MT_ROW_KSWAPD 2u /* a kswapd thread (its wake/sleep were seen) */
#define MT_ROW_EXITED 4u /* copied to `exited`: the iterator skips it */
struct mt_task_report {
  mt_u64 reclaims[MT_KINDS];
  mt_u64 stall_ns;     /* direct + memcg */
  mt_u64 softlimit_ns;
  mt_u64 wake_requests;
  mt_u64 scanned;      /* lru_shrink_inactive nr_scanned */
  mt_u64 reclaimed;    /* lru_shrink_inactive nr_reclaimed */
  mt_u64 kswapd_wakeups;
  mt_u64 kswapd_rewakeups;
  mt_u64 kswapd_awake_ns;
  mt_u64 write_async;  /* write_folio (all async, see mt_cgroup) */
  mt_u64 throttled;
  mt_u64 throttled_us;
  mt_u64 cg_id;        /* the memcg it was charged to last (0: none yet) */
  mt_u32 flags;        /* MT_ROW_* */
  mt_u32 pad;
};

#define MT_WRITES_PENDING (1u << 31)

/* Per task (thread id): reclaim begin/end pairing and open lock waits. */
struct mt_task {
  mt_u64 begin_ts[MT_PAIRED_KINDS]; /* 0 = none open */
  mt_u64 kswapd_wake_ts;
  mt_u64 lock_ts[MT_LOCK_DEPTH];
  mt_u64 lock_addr[MT_LOCK_DEPTH];
  mt_u64 lock_cg[MT_LOCK_DEPTH]; /* cgroup charged (MT_NODE_ID: node-wide) */
  mt_u32 lock_flags[MT_LOCK_DEPTH];
  mt_u64 rstat_wait_ts;
  mt_u64 rstat_hold_ts;
  mt_u32 began; /* a begin of this task was traced */
  mt_u32 depth; /* open lock waits */
  /* shrink_inactive and write_folio counts of the open reclaim, added to
   * the cgroup at its end; lru_dirty: bit cx * MT_LRU_TYPES + lru of each
   * lru_pending entry in use, MT_WRITES_PENDING if write_pending is */
  struct mt_lru lru_pending[MT_CONTEXTS][MT_LRU_TYPES];
  mt_u64 write_pending[MT_CONTEXTS];
  mt_u32 lru_dirty;
  mt_u32 pad;
  mt_u64 slab_start_ts; /* open mm_shrink_slab_start (0: none) */
  struct mt_task_report rep;
};

/* One row of the task_scan iterator (a task with state), and the value of
 * the `exited` map (key: tid; MT_OTHER_TID: the rows the full map could not
 * take, summed). */
#define MT_COMM_LEN 16
#define MT_OTHER_TID 0
struct mt_task_row {
  mt_u32 tid;
  mt_u32 pad;
  mt_u64 begin_ts[MT_PAIRED_KINDS];
  char comm[MT_COMM_LEN];
  struct mt_task_report rep;
};

/* Value of the `exit_cgroups` map (key: the process's tgid): the memory
 * cgroup its thread-group leader was in at its sched_process_exit, for the
 * taskstats exit records (tracing/attribution.h PidCgroupLookup). */
struct mt_exit_cgroup {
  mt_u64 cg_id;
  mt_u64 exit_ns; /* bpf_ktime_get_ns() (CLOCK_MONOTONIC) at the exit */
};

/* One row of the task_memcg iterator: a task's memory cgroup. */
struct mt_task_memcg {
  mt_u32 tid;
  mt_u32 pad;
  mt_u64 cg_id;
};

/* Key of the `lock_waits` map: contentions of one LCB_F_* flags value,
 * charged to a cgroup (while its task reclaimed) or node-wide. The flags are
 * decoded to a lock kind in user space (lock_stats.h lockKindFromFlags). */
struct mt_lock_key {
  mt_u64 cg_id;
  mt_u32 flags;
  mt_u32 rescue; /* 1, 2: a rescue twin's entry, merged with 0's by user space */
};
struct mt_lock_wait {
  mt_u64 aborted;
  struct mt_hist wait;
};

/* Per-CPU value of the `lock_addrs` map, keyed by the lock's address: the
 * lock API's top locks (tracing/lock_stats.h TopLock). Key MT_OTHER_LOCK:
 * the contentions a full map could not take. A key with a low bit set
 * (locks are 4-byte aligned, so no address has one) is a rescue twin's
 * entry for that address, | 1 the first's, | 2 the second's
 * (MT_OTHER_LOCK | 1, | 2: their "other"), merged with the plain key's by
 * user space. */
#define MT_OTHER_LOCK 0
#define MT_RESCUE_BITS 3ull
#define MT_TWINS 2 /* rescue twins per lock program: node slots 1 and 2 */
struct mt_lock_addr {
  mt_u64 count;
  mt_u64 wait_ns;
  mt_u32 flags; /* of the first contention seen */
  mt_u32 pad;
};

/* Per-CPU value of the `rstat` map, keyed by the flushed cgroup's id. */
struct mt_rstat {
  mt_u64 contended;
  mt_u64 flushes;
  mt_u64 flushes_skipped;
  struct mt_hist wait;
  struct mt_hist hold;
};

/* Sampled lock callers (--collector.vmscan.lock-callers): the key of the
 * `callers` map, one kernel stack (innermost first, as bpf_get_stack writes
 * it, zero past its depth) and the LCB_F_* flags of the begin it was taken
 * at; per-CPU value: the samples of it. MT_STACK_FRAMES is the tracefs
 * backend's kMaxStackFrames. */
#define MT_STACK_FRAMES 16
struct mt_caller_key {
  mt_u64 frames[MT_STACK_FRAMES];
  mt_u32 flags;
  mt_u32 pad;
};
struct mt_caller {
  mt_u64 count;
};

/* The sampling budget: at most `samples` stacks per window of `interval_ns`
 * (windows aligned on multiples of it on the clock `now` is read from), as
 * the tracefs backend's stacktrace:N trigger re-armed every interval.
 * `*state` packs the window (high bits) and the samples taken in it (low
 * MT_BUDGET_COUNT_BITS): one compare-and-swap starts a window, one
 * fetch-and-add takes from it, so no CPU can undo another's take and the
 * bound holds across CPUs. A CPU that loses the race to start a window, or
 * whose add lands in a newer window, takes nothing (a sample fewer, never
 * one more). `samples` must stay below MT_BUDGET_COUNT_MASK less the CPUs
 * (adds past the budget are counted before they are refused). Returns 1 if
 * the sample may be taken. Here, not in the program, so a unit test checks
 * it. */
#define MT_BUDGET_COUNT_BITS 20
#define MT_BUDGET_COUNT_MASK ((((mt_u64)1) << MT_BUDGET_COUNT_BITS) - 1)
MT_INLINE int mt_budget_take(mt_u64* state, mt_u64 now, mt_u64 interval_ns, mt_u64 samples) {
  if (interval_ns == 0 || samples == 0) return 0;
  const mt_u64 w = now / interval_ns;
  mt_u64 old = MT_READ_ONCE(state);
  if ((old >> MT_BUDGET_COUNT_BITS) < w &&
      __sync_val_compare_and_swap(state, old, (w << MT_BUDGET_COUNT_BITS) | 1) == old)
    return 1;
  old = MT_READ_ONCE(state);
  if ((old & MT_BUDGET_COUNT_MASK) >= samples) return 0;
  const mt_u64 prev = __sync_fetch_and_add(state, 1);
  return (prev >> MT_BUDGET_COUNT_BITS) == (old >> MT_BUDGET_COUNT_BITS) &&
         (prev & MT_BUDGET_COUNT_MASK) < samples;
}

#endif
