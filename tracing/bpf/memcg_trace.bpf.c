// SPDX-License-Identifier: GPL-2.0
/* The bpf backend of the vmscan collector: the tracefs backend's events
 * (tracing/tracer.h) folded in the kernel into per-memcg maps, read by
 * bpf_tracer.cpp at scrape. Semantics are the tracefs backend's
 * (tracing/aggregator.cpp, tracing/lock_stats.cpp); where they differ it is
 * said below. Every event is charged to the memory cgroup the task is in
 * when it hits the tracepoint, keyed by that cgroup's id (its kernfs id, the
 * directory inode discovery knows it by), on cgroup v1 and v2 alike.
 * tp_btf programs: a recursive hit (a tracepoint fired inside one of these
 * programs, e.g. an interrupt contending a spinlock) is skipped by the
 * kernel and counted in the program's recursion_misses; for the lock
 * programs, where that happens in a storm, rescue twins handle them (see
 * the lock probes below); the loader reports any they cannot as lost
 * events. GPL: tp_btf needs a GPL-compatible program. */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "memcg_trace_bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by the loader before load. */
const volatile __u64 stall_bounds[MT_BOUNDS_PAD] = {[0 ... MT_BOUNDS_PAD - 1] = ~0ULL};
const volatile __u64 lock_bounds[MT_BOUNDS_PAD] = {[0 ... MT_BOUNDS_PAD - 1] = ~0ULL};
const volatile __s32 hierarchy_id = 0; /* memory's v1 hierarchy id, 0 on v2 */
const volatile __u32 locks_on = 0;     /* the lock probes are loaded */
/* Tests only (BpfTracerOptions::test_lock_hold_ns): the main lock programs
 * spin this long per run, so that contentions nest in them often enough
 * for a test to see the rescue twins at work. 0: no code runs. */
const volatile __u64 test_lock_hold_ns = 0;
/* Tests only (BpfTracerOptions::test_first_twin_off): the first rescue twins
 * return at once, as if skipped, so the second twins' rescues are tested. */
const volatile __u32 test_first_twin_off = 0;
/* Sampled lock callers: off, the verifier removes sample_caller()'s body
 * (the load and test of this switch remain: 6 instructions). */
const volatile __u32 callers_on = 0;
const volatile __u64 caller_samples = 64;              /* per interval */
const volatile __u64 caller_interval_ns = 1000000000; /* the budget's window */

#define PF_KSWAPD_FLAG 0x00020000 /* include/linux/sched.h PF_KSWAPD */
#define LCB_F_MUTEX_ONLY 32       /* a bare mutex re-begin: the tracefs filter drops it */

enum { R_END_WITHOUT_BEGIN, R_END_BEFORE_ANY_BEGIN, R_BEGIN_WITHOUT_END };
enum { K_DIRECT, K_MEMCG, K_SOFTLIMIT, K_PROACTIVE };
enum { C_DIRECT, C_MEMCG, C_SOFTLIMIT, C_PROACTIVE, C_KSWAPD, C_OTHER };

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, __u64);
  __type(value, struct mt_cgroup);
  __uint(max_entries, 2049); /* set by the loader */
} cgroups SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __type(key, __u32);
  __type(value, struct mt_node);
  __uint(max_entries, 3); /* [1], [2]: the lock programs' rescue twins (see there) */
} node SEC(".maps");

/* Per-task state in the task's own local storage, not a hash keyed by tid:
 * the hash's bucket array (sized for every possible pid) made each lookup a
 * cache and TLB miss, the largest part of a program's cost per event. The
 * storage is reached from the task_struct, freed with the task (no exit
 * program needed), so bounded by the tasks alive; task_scan lists it. */
struct {
  __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, int);
  __type(value, struct mt_task);
} tasks SEC(".maps");

/* Report rows of exited tasks, until user space drains them (every second,
 * and at each snapshot): a short-lived task's row outlives its task storage.
 * Full (more reclaiming tasks exited between two drains than it holds): the
 * row is summed into the MT_OTHER_TID entry, which the loader creates, and
 * counted (exited_full). */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, __u32);
  __type(value, struct mt_task_row);
  __uint(max_entries, 4097); /* set by the loader */
} exited SEC(".maps");

/* Our own background reclaimers (thread ids), written by the loader. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __type(key, __u32);
  __type(value, __u8);
  __uint(max_entries, 256);
} reclaimers SEC(".maps");

/* Episodes: a reclaimer working on behalf of a cgroup (the controller's v1
 * limit nudge), thread id -> that cgroup's id, written by the loader around
 * the episode; everything the thread does meanwhile is charged there, as
 * the tracefs backend's ProactiveEpisodes charges it. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __type(key, __u32);
  __type(value, __u64);
  __uint(max_entries, 256);
} episodes SEC(".maps");

/* Entries in `reclaimers`, kept by the loader: the lookups of `reclaimers`
 * and `episodes` are skipped while there are none (the usual case). */
__u32 nr_reclaimers = 0;

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, struct mt_lock_key);
  __type(value, struct mt_lock_wait);
  __uint(max_entries, 4096); /* set by the loader */
} lock_waits SEC(".maps");

/* Contentions by lock address (the lock API's top locks); the loader
 * creates the MT_OTHER_LOCK entry, which takes what a full map cannot, and
 * user space moves the lighter half of the locks into its own "other" when
 * the map is half full (bpf_tracer.cpp). */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, __u64);
  __type(value, struct mt_lock_addr);
  __uint(max_entries, 1025); /* set by the loader */
} lock_addrs SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, __u64);
  __type(value, struct mt_rstat);
  __uint(max_entries, 2049); /* set by the loader */
} rstat SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, __u64);
  __type(value, struct mt_detail);
  __uint(max_entries, 2049); /* set by the loader */
} details SEC(".maps");

/* Sampled lock callers: samples per (kernel stack, LCB_F_* flags). Keyed by
 * the frames themselves (bpf_get_stack into the key), not by the id of a
 * BPF_MAP_TYPE_STACK_TRACE map: a stack map's buckets are by hash without
 * chaining, so a colliding stack is either dropped (-EEXIST) or replaces
 * the other under its id (its samples then counted for the wrong stack),
 * and its entries are freed only by user space, a second map to bound and
 * prune in step with the counts. Here each distinct stack is one entry
 * with its count, moved out with it. Full: the sample is counted in
 * node.callers_full (the report's callers_other); user space moves the
 * lighter half out when more than half is in use, as for lock_addrs. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, struct mt_caller_key);
  __type(value, struct mt_caller);
  __uint(max_entries, 256); /* set by the loader */
} callers SEC(".maps");

/* The budget's window and samples taken in it (mt_budget_take). */
__u64 caller_budget = 0;

/* Zero values to insert from (too large for the BPF stack). */
static struct mt_cgroup zero_cgroup;
static struct mt_detail zero_detail;
static struct mt_lock_wait zero_lock_wait;
static struct mt_rstat zero_rstat;
static struct mt_caller zero_caller;

static __always_inline struct mt_node* node_stats(void) {
  __u32 k = 0;
  return bpf_map_lookup_elem(&node, &k);
}

static __always_inline void observe(struct mt_hist* h, __u64 v, int lock) {
  __u32 i = mt_bucket_of(lock ? lock_bounds : stall_bounds, v);
  if (i > MT_BOUNDS) i = MT_BOUNDS;
  h->buckets[i]++;
  h->count++;
  h->sum += v;
}

/* Direct loads through BTF pointers (CO-RE relocated, checked by the
 * verifier, faults caught by the kernel): a fraction of the cost of one
 * bpf_probe_read_kernel() call per hop, which BPF_CORE_READ would make. */
static __always_inline __u64 memcg_id_of(struct task_struct* t) {
  int ss = bpf_core_enum_value(enum cgroup_subsys_id, memory_cgrp_id);
  if (ss < 0 || ss >= CGROUP_SUBSYS_COUNT) return 0;
  struct cgroup_subsys_state* css = t->cgroups->subsys[ss];
  if (!css) return 0;
  return css->cgroup->kn->id;
}

/* The memcg the current task's events are charged to: its own, or the
 * target of an episode it is in. */
static __always_inline __u64 current_memcg_id(void) {
  if (nr_reclaimers) {
    __u32 tid = (__u32)bpf_get_current_pid_tgid();
    __u64* target = bpf_map_lookup_elem(&episodes, &tid);
    if (target) return *target;
  }
  return memcg_id_of(bpf_get_current_task_btf());
}

/* The entry of `key` in `map`, created from `init` on first use (another
 * CPU may create it first: BPF_NOEXIST keeps theirs); null when the map is
 * full. */
static __always_inline void* lookup_or_create(void* map, const void* key, const void* init) {
  void* v = bpf_map_lookup_elem(map, key);
  if (v) return v;
  bpf_map_update_elem(map, key, init, BPF_NOEXIST);
  return bpf_map_lookup_elem(map, key);
}

/* The series of memcg `id` in a per-cgroup map (cgroups, details), created
 * on first use; the overflow series (which the loader creates) once the map
 * is full. */
static __always_inline void* series_of(void* map, __u64 id, const void* zero,
                                        struct mt_node* n) {
  void* v = lookup_or_create(map, &id, zero);
  if (v) return v;
  __u64 o = MT_OVERFLOW_ID;
  if (n) n->overflow_events++;
  return bpf_map_lookup_elem(map, &o);
}

static __always_inline struct mt_cgroup* cgroup_of(__u64 id, struct mt_node* n) {
  return series_of(&cgroups, id, &zero_cgroup, n);
}

/* The current task's state; created zeroed when `create`. */
static __always_inline struct mt_task* task_of(int create, struct mt_node* n) {
  struct mt_task* t = bpf_task_storage_get(&tasks, bpf_get_current_task_btf(), 0,
                                           create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
  if (!t && create && n) n->task_map_full++;
  return t;
}

static __always_inline __u32 current_tid(void) { return (__u32)bpf_get_current_pid_tgid(); }

static __always_inline int is_reclaimer(__u32 tid) {
  if (!nr_reclaimers) return 0;
  return bpf_map_lookup_elem(&reclaimers, &tid) != 0;
}

/* idx: 0 direct, 1 memcg, 2 softlimit (the tracepoint pair). */
static __always_inline int kind_of(int idx, __u32 tid) {
  if (idx == 1 && is_reclaimer(tid)) return K_PROACTIVE;
  return idx;
}

static __always_inline int in_reclaim(struct mt_task* t) {
  return t->begin_ts[0] || t->begin_ts[1] || t->begin_ts[2];
}

/* LRU pages a reclaiming task's shrink_inactive events counted (and the
 * folios its write_folio events started writing), held in the task's state
 * and added to its cgroup's series at the reclaim's end (which looks the
 * series up anyway): the frequent lru and write events then touch only the
 * task's own state, not the cgroup id chain and the cgroups map. A scrape
 * during a pass sees its pages at the pass's end (milliseconds later). */
static __always_inline void flush_lru(struct mt_task* t, struct mt_cgroup* c) {
  __u32 dirty = t->lru_dirty;
  for (int i = 0; i < MT_CONTEXTS * MT_LRU_TYPES; i++) {
    if (!(dirty & (1u << i))) continue;
    struct mt_lru* p = &t->lru_pending[i / MT_LRU_TYPES][i % MT_LRU_TYPES];
    struct mt_lru* l = &c->lru[i / MT_LRU_TYPES][i % MT_LRU_TYPES];
    l->scanned += p->scanned;
    l->reclaimed += p->reclaimed;
    l->dirty += p->dirty;
    l->writeback += p->writeback;
    t->rep.scanned += p->scanned;
    t->rep.reclaimed += p->reclaimed;
    p->scanned = p->reclaimed = p->dirty = p->writeback = 0;
  }
  if (dirty & MT_WRITES_PENDING) {
    for (int cx = 0; cx < MT_CONTEXTS; cx++) {
      c->write_folios[cx] += t->write_pending[cx];
      t->write_pending[cx] = 0;
    }
  }
  t->lru_dirty = 0;
}

static __always_inline void reclaim_begin(int idx) {
  struct mt_node* n = node_stats();
  __u32 tid = current_tid();
  if (!n) return;
  n->events++;
  /* With the lock probes the series exists from the begin on: lock waits
   * charged to it are dropped with it at rmdir (and user space drops lock
   * series of cgroups it has no series of). Without them the end creates it:
   * the begin then touches no cgroup data, which is its main cost. */
  if (locks_on) cgroup_of(current_memcg_id(), n);
  struct mt_task* t = task_of(1, n);
  if (!t) return;
  if (t->begin_ts[idx]) n->unpaired[kind_of(idx, tid) & 3][R_BEGIN_WITHOUT_END]++;
  __u64 now = bpf_ktime_get_ns();
  t->begin_ts[idx] = now ? now : 1;
  t->began = 1;
}

static __always_inline void reclaim_end(int idx, unsigned long nr_reclaimed) {
  struct mt_node* n = node_stats();
  __u32 tid = current_tid();
  if (!n) return;
  n->events++;
  int kind = kind_of(idx, tid) & 3;
  __u64 cg_id = current_memcg_id();
  struct mt_cgroup* c = cgroup_of(cg_id, n);
  /* Created here too: the report has a row for a task whose begin was
   * before tracing, as the tracefs backend has. */
  struct mt_task* t = task_of(1, n);
  /* Read after the lookups, as the begin reads it after its own: both ends of
   * the stall are then taken at the same point of their programs, so this
   * program's lookups are not counted out of the stall while the begin's are
   * counted in (the tracefs backend's timestamps, taken after this program
   * has run at both tracepoints, see the same span). */
  __u64 now = bpf_ktime_get_ns();
  if (!c) return;
  struct mt_reclaim* r = &c->reclaim[kind];
  r->total++;
  r->reclaimed_pages += nr_reclaimed;
  __u64 b = t ? t->begin_ts[idx] : 0;
  if (b && now >= b) {
    observe(&r->stall, now - b, 0);
    /* The row's stall: direct + memcg; softlimit runs inside direct reclaim
     * or kswapd (tracing/aggregator.cpp endReclaim), kept apart. */
    if (t) {
      if (idx == 2) t->rep.softlimit_ns += now - b;
      else if (kind != K_PROACTIVE) t->rep.stall_ns += now - b;
    }
  } else {
    r->unpaired++;
    n->unpaired[kind][(t && t->began) ? R_END_WITHOUT_BEGIN : R_END_BEFORE_ANY_BEGIN]++;
  }
  if (t) {
    t->begin_ts[idx] = 0;
    t->rep.reclaims[kind]++;
    t->rep.cg_id = cg_id;
    t->rep.flags |= MT_ROW_ACTIVE;
    if (t->lru_dirty) flush_lru(t, c);
  }
}

SEC("tp_btf/mm_vmscan_direct_reclaim_begin")
int BPF_PROG(direct_begin) { reclaim_begin(0); return 0; }
SEC("tp_btf/mm_vmscan_memcg_reclaim_begin")
int BPF_PROG(memcg_begin) { reclaim_begin(1); return 0; }
SEC("tp_btf/mm_vmscan_memcg_softlimit_reclaim_begin")
int BPF_PROG(softlimit_begin) { reclaim_begin(2); return 0; }
SEC("tp_btf/mm_vmscan_direct_reclaim_end")
int BPF_PROG(direct_end, unsigned long nr) { reclaim_end(0, nr); return 0; }
SEC("tp_btf/mm_vmscan_memcg_reclaim_end")
int BPF_PROG(memcg_end, unsigned long nr) { reclaim_end(1, nr); return 0; }
SEC("tp_btf/mm_vmscan_memcg_softlimit_reclaim_end")
int BPF_PROG(softlimit_end, unsigned long nr) { reclaim_end(2, nr); return 0; }

/* The innermost open reclaim of the task (tracing/aggregator.cpp contextOf).
 * kswapd: the task's PF_KSWAPD flag (the tracefs backend knows kswapd only
 * once it has seen it wake). */
static __always_inline int context_of(struct mt_task* t, __u32 tid) {
  if (t && t->begin_ts[2]) return C_SOFTLIMIT;
  if (t && t->begin_ts[1]) return is_reclaimer(tid) ? C_PROACTIVE : C_MEMCG;
  if (t && t->begin_ts[0]) return C_DIRECT;
  struct task_struct* cur = bpf_get_current_task_btf();
  if (cur->flags & PF_KSWAPD_FLAG) return C_KSWAPD;
  if (is_reclaimer(tid)) return C_PROACTIVE;
  return C_OTHER;
}

static __always_inline void lru_add(struct mt_lru* l, unsigned long nr_scanned,
                                    unsigned long nr_reclaimed, struct reclaim_stat* stat) {
  l->scanned += nr_scanned;
  l->reclaimed += nr_reclaimed;
  l->dirty += stat->nr_dirty;
  l->writeback += stat->nr_writeback;
}

SEC("tp_btf/mm_vmscan_lru_shrink_inactive")
int BPF_PROG(lru_shrink_inactive, int nid, unsigned long nr_scanned,
             unsigned long nr_reclaimed, struct reclaim_stat* stat, int priority, int file) {
  struct mt_node* n = node_stats();
  __u32 tid = current_tid();
  if (!n) return 0;
  n->events++;
  /* Created (the same one call): kswapd or a task reclaiming outside a
   * traced begin/end gets its report row. */
  struct mt_task* t = task_of(1, n);
  int cx = context_of(t, tid);
  if (cx < 0 || cx >= MT_CONTEXTS) return 0;
  int f = file ? 1 : 0;
  if (t && in_reclaim(t)) { /* added to the cgroup at the reclaim's end */
    lru_add(&t->lru_pending[cx][f], nr_scanned, nr_reclaimed, stat);
    t->lru_dirty |= 1u << (cx * MT_LRU_TYPES + f);
    return 0;
  }
  __u64 cg_id = current_memcg_id();
  struct mt_cgroup* c = cgroup_of(cg_id, n);
  if (t) {
    t->rep.scanned += nr_scanned;
    t->rep.reclaimed += nr_reclaimed;
    t->rep.cg_id = cg_id;
    t->rep.flags |= MT_ROW_ACTIVE;
  }
  if (!c) return 0;
  lru_add(&c->lru[cx][f], nr_scanned, nr_reclaimed, stat);
  return 0;
}

SEC("tp_btf/mm_vmscan_wakeup_kswapd")
int BPF_PROG(wakeup_kswapd, int nid, int zid, int order) {
  struct mt_node* n = node_stats();
  if (!n) return 0;
  n->events++;
  int o = order < 0 ? 0 : (order >= MT_WAKEUP_ORDERS ? MT_WAKEUP_ORDERS - 1 : order);
  n->wakeup_by_order[o]++;
  __u64 cg_id = current_memcg_id();
  struct mt_cgroup* c = cgroup_of(cg_id, n);
  if (c) c->wakeup_kswapd++;
  struct mt_task* t = task_of(1, n);
  if (t) {
    t->rep.wake_requests++;
    t->rep.cg_id = cg_id;
    t->rep.flags |= MT_ROW_ACTIVE;
  }
  return 0;
}

SEC("tp_btf/mm_vmscan_kswapd_wake")
int BPF_PROG(kswapd_wake, int nid, int zid, int order) {
  struct mt_node* n = node_stats();
  if (!n) return 0;
  n->events++;
  struct mt_task* t = task_of(1, n);
  n->kswapd_wakeups++;
  if (!t) return 0;
  t->rep.flags |= MT_ROW_ACTIVE | MT_ROW_KSWAPD;
  t->rep.kswapd_wakeups++;
  if (t->kswapd_wake_ts == 0) {
    __u64 now = bpf_ktime_get_ns();
    t->kswapd_wake_ts = now ? now : 1;
  } else {
    n->kswapd_rewakeups++;
    t->rep.kswapd_rewakeups++;
  }
  return 0;
}

SEC("tp_btf/mm_vmscan_kswapd_sleep")
int BPF_PROG(kswapd_sleep, int nid) {
  struct mt_node* n = node_stats();
  if (!n) return 0;
  n->events++;
  struct mt_task* t = task_of(0, n);
  if (!t) return 0;
  __u64 now = bpf_ktime_get_ns();
  if (t->kswapd_wake_ts && now >= t->kswapd_wake_ts) {
    n->kswapd_awake_ns += now - t->kswapd_wake_ts;
    t->rep.kswapd_awake_ns += now - t->kswapd_wake_ts;
    t->rep.flags |= MT_ROW_ACTIVE | MT_ROW_KSWAPD;
  }
  t->kswapd_wake_ts = 0;
  return 0;
}

/* One per folio reclaim starts writeback on (swap-out, kswapd writing dirty
 * file folios): in a swap storm as frequent as the LRU scans, so during a
 * reclaim pass it is counted in the task's state only, as
 * lru_shrink_inactive is. The folio is not read: every one is async (see
 * mt_cgroup). Two names: the loader loads the one the kernel has (older
 * kernels: mm_vmscan_writepage, of a page; Debian's 6.1 has write_folio). */
static __always_inline void write_folio(void) {
  struct mt_node* n = node_stats();
  __u32 tid = current_tid();
  if (!n) return;
  n->events++;
  struct mt_task* t = task_of(1, n);
  int cx = context_of(t, tid);
  if (cx < 0 || cx >= MT_CONTEXTS) return;
  if (t) t->rep.write_async++;
  if (t && in_reclaim(t)) {
    t->write_pending[cx]++;
    t->lru_dirty |= MT_WRITES_PENDING;
    return;
  }
  __u64 cg_id = current_memcg_id();
  if (t) {
    t->rep.cg_id = cg_id;
    t->rep.flags |= MT_ROW_ACTIVE;
  }
  struct mt_cgroup* c = cgroup_of(cg_id, n);
  if (c) c->write_folios[cx]++;
}

SEC("tp_btf/mm_vmscan_write_folio")
int BPF_PROG(write_folio_prog) { write_folio(); return 0; }
SEC("tp_btf/mm_vmscan_writepage")
int BPF_PROG(writepage_prog) { write_folio(); return 0; }

/* A task slept in reclaim_throttle() (milliseconds; rare). The tracepoint is
 * handed the enum vmscan_throttle_state; the trace record holds 1 << it,
 * whose lowest set bit the tracefs backend takes. */
SEC("tp_btf/mm_vmscan_throttled")
int BPF_PROG(throttled, int nid, int usec_timeout, int usec_delayed, int reason) {
  struct mt_node* n = node_stats();
  if (!n) return 0;
  n->events++;
  /* Negative or unknown: "other". 64-bit and clamped by a branch the
   * verifier follows: clang's range test on the int (a mask) or on a
   * zero-extended copy left the index used unbounded. */
  __u64 r = (__u32)reason;
  if (r > MT_THROTTLE_SLOTS - 1) r = MT_THROTTLE_SLOTS - 1;
  barrier_var(r);
  __u64 us = usec_delayed > 0 ? (__u64)usec_delayed : 0;
  __u64 cg_id = current_memcg_id();
  struct mt_cgroup* c = cgroup_of(cg_id, n);
  if (c) {
    c->throttled[r].count++;
    c->throttled[r].delayed_us += us;
  }
  struct mt_task* t = task_of(1, n);
  if (t) {
    t->rep.throttled++;
    t->rep.throttled_us += us;
    t->rep.cg_id = cg_id;
    t->rep.flags |= MT_ROW_ACTIVE;
  }
  return 0;
}

/* reclaim_pages(): MADV_PAGEOUT, DAMON; one per node per call. */
SEC("tp_btf/mm_vmscan_reclaim_pages")
int BPF_PROG(reclaim_pages, int nid, unsigned long nr_scanned, unsigned long nr_reclaimed,
             struct reclaim_stat* stat) {
  struct mt_node* n = node_stats();
  if (!n) return 0;
  n->events++;
  struct mt_cgroup* c = cgroup_of(current_memcg_id(), n);
  if (!c) return 0;
  c->pageout_scanned += nr_scanned;
  c->pageout_reclaimed += nr_reclaimed;
  return 0;
}

/* A move into a memcg, counted for the destination: one per
 * cgroup_attach_task() (a process moved by cgroup.procs, its threads with
 * it, is one; a thread moved by v1's `tasks` is one), as the tracefs backend
 * counts. */
SEC("tp_btf/cgroup_attach_task")
int BPF_PROG(cgroup_attach, struct cgroup* dst, const char* path, struct task_struct* task,
             bool threadgroup) {
  if (dst->root->hierarchy_id != hierarchy_id) return 0;
  struct mt_node* n = node_stats();
  if (!n) return 0;
  n->events++;
  struct mt_cgroup* c = cgroup_of(dst->kn->id, n);
  if (c) c->tasks_attached++;
  return 0;
}

/* A removed memcg's series go with it (bounded maps). */
SEC("tp_btf/cgroup_rmdir")
int BPF_PROG(cgroup_rmdir, struct cgroup* cgrp, const char* path) {
  if (cgrp->root->hierarchy_id != hierarchy_id) return 0;
  __u64 id = cgrp->kn->id;
  struct mt_node* n = node_stats();
  if (bpf_map_delete_elem(&cgroups, &id) == 0 && n) n->cgroups_removed++;
  bpf_map_delete_elem(&rstat, &id);
  bpf_map_delete_elem(&details, &id);
  return 0;
}

/* Scrape-time listing of the tasks with state (an iterator user space
 * reads): their count, and open begins for the "begin open too long"
 * reason. A task's state goes with the task (the tracefs backend's pid
 * cache drops it on sched_process_exit). */
SEC("iter/task")
int task_scan(struct bpf_iter__task* ctx) {
  struct task_struct* task = ctx->task;
  if (!task) return 0;
  struct mt_task* t = bpf_task_storage_get(&tasks, task, 0, 0);
  if (!t) return 0;
  if (t->rep.flags & MT_ROW_EXITED) return 0; /* its row is in `exited` */
  struct mt_task_row row = {.tid = task->pid};
  for (int i = 0; i < MT_PAIRED_KINDS; i++) row.begin_ts[i] = t->begin_ts[i];
  bpf_probe_read_kernel(row.comm, sizeof row.comm, task->comm);
  row.rep = t->rep;
  bpf_seq_write(ctx->meta->seq, &row, sizeof row);
  return 0;
}

static __always_inline void add_report(struct mt_task_report* to,
                                       const struct mt_task_report* r) {
  for (int i = 0; i < MT_KINDS; i++) __sync_fetch_and_add(&to->reclaims[i], r->reclaims[i]);
  __sync_fetch_and_add(&to->stall_ns, r->stall_ns);
  __sync_fetch_and_add(&to->softlimit_ns, r->softlimit_ns);
  __sync_fetch_and_add(&to->wake_requests, r->wake_requests);
  __sync_fetch_and_add(&to->scanned, r->scanned);
  __sync_fetch_and_add(&to->reclaimed, r->reclaimed);
  __sync_fetch_and_add(&to->kswapd_wakeups, r->kswapd_wakeups);
  __sync_fetch_and_add(&to->kswapd_rewakeups, r->kswapd_rewakeups);
  __sync_fetch_and_add(&to->kswapd_awake_ns, r->kswapd_awake_ns);
  __sync_fetch_and_add(&to->write_async, r->write_async);
  __sync_fetch_and_add(&to->throttled, r->throttled);
  __sync_fetch_and_add(&to->throttled_us, r->throttled_us);
}

/* A task with a report row exits: the row moves to `exited` (the task
 * storage goes with the task). Every exit runs this, but a task without
 * state costs one storage lookup. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(task_exit, struct task_struct* p) {
  struct mt_task* t = bpf_task_storage_get(&tasks, p, 0, 0);
  if (!t || !(t->rep.flags & MT_ROW_ACTIVE) || (t->rep.flags & MT_ROW_EXITED)) return 0;
  t->rep.flags |= MT_ROW_EXITED;
  struct mt_task_row row = {.tid = p->pid};
  bpf_probe_read_kernel(row.comm, sizeof row.comm, p->comm);
  row.rep = t->rep;
  __u32 key = row.tid;
  if (key != MT_OTHER_TID && bpf_map_update_elem(&exited, &key, &row, BPF_NOEXIST) == 0)
    return 0;
  /* Full, or the tid's previous row not drained yet: summed into "other". */
  struct mt_node* n = node_stats();
  if (n) n->exited_full++;
  __u32 o = MT_OTHER_TID;
  struct mt_task_row* other = bpf_map_lookup_elem(&exited, &o);
  if (other) add_report(&other->rep, &row.rep);
  return 0;
}

/* --- taskstats exit attribution (autoloaded only when the taskstats
 * collector asks for it: BpfTracerOptions::exit_cgroups) --- */

/* The memory cgroup of each process that exited recently, by tgid: a
 * taskstats exit record names no cgroup, and by the time user space reads
 * it /proc no longer shows the task's cgroup (v1 prints "/" for an exiting
 * task) or the task is reaped. LRU: the oldest exits make room. */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __type(key, __u32);
  __type(value, struct mt_exit_cgroup);
  __uint(max_entries, 8192); /* set by the loader */
} exit_cgroups SEC(".maps");

/* The record is per process (tgid), so the leader's exit is recorded. A
 * second program on the tracepoint rather than a branch in task_exit: it is
 * loaded only when wanted. The task is still in its cgroup here:
 * sched_process_exit fires before cgroup_exit() in do_exit(), and even after
 * it task->cgroups keeps pointing at the task's css_set until the task is
 * freed. taskstats_exit() runs before this tracepoint, so a record can
 * arrive first: user space then asks task_memcg, and retries. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(exit_cgroup, struct task_struct* p) {
  if (p->pid != p->tgid) return 0;
  struct mt_exit_cgroup v = {.cg_id = memcg_id_of(p), .exit_ns = bpf_ktime_get_ns()};
  if (!v.cg_id) return 0;
  __u32 key = p->tgid;
  if (bpf_map_update_elem(&exit_cgroups, &key, &v, BPF_NOEXIST) == 0) {
    struct mt_node* n = node_stats();
    if (n) n->exit_cgroups_added++;
    return 0;
  }
  bpf_map_update_elem(&exit_cgroups, &key, &v, BPF_ANY); /* the tgid exited before */
  return 0;
}

/* The memory cgroup of the one task the loader's link names (a tid filter,
 * kernel 6.1+): a live or exiting task, read as exit_cgroup reads it. */
SEC("iter/task")
int task_memcg(struct bpf_iter__task* ctx) {
  struct task_struct* task = ctx->task;
  if (!task) return 0;
  struct mt_task_memcg row = {.tid = task->pid, .cg_id = memcg_id_of(task)};
  bpf_seq_write(ctx->meta->seq, &row, sizeof row);
  return 0;
}

/* --- detail events (autoloaded only with --collector.vmscan.lru-detail or
 * --collector.vmscan.shrink-slab): tracing/aggregator_scan.cpp --- */

/* The detail series of the current task's memcg; the overflow entry (which
 * the loader creates) once the map is full. */
static __always_inline struct mt_detail* detail_of(struct mt_node* n) {
  return series_of(&details, current_memcg_id(), &zero_detail, n);
}

static __always_inline void lru_isolate(unsigned long nr_scanned, unsigned long nr_taken,
                                        int lru) {
  struct mt_node* n = node_stats();
  __u32 tid = current_tid();
  if (!n) return;
  n->events++;
  if (lru < 0 || lru >= 4) return; /* reclaim never isolates the unevictable list */
  int cx = context_of(task_of(0, n), tid);
  if (cx < 0 || cx >= MT_CONTEXTS) return;
  struct mt_detail* d = detail_of(n);
  if (!d) return;
  struct mt_isolate* s = &d->isolate[cx][lru >= 2 ? 1 : 0][lru & 1];
  s->scanned += nr_scanned;
  s->taken += nr_taken;
}

/* Two forms of the tracepoint: the loader loads the one the kernel's BTF
 * has (6.1 still passes isolate_mode before lru). */
SEC("tp_btf/mm_vmscan_lru_isolate")
int BPF_PROG(lru_isolate7, int highest_zoneidx, int order, unsigned long nr_requested,
             unsigned long nr_scanned, unsigned long nr_skipped, unsigned long nr_taken,
             int lru) {
  lru_isolate(nr_scanned, nr_taken, lru);
  return 0;
}

SEC("tp_btf/mm_vmscan_lru_isolate")
int BPF_PROG(lru_isolate8, int highest_zoneidx, int order, unsigned long nr_requested,
             unsigned long nr_scanned, unsigned long nr_skipped, unsigned long nr_taken,
             unsigned int isolate_mode, int lru) {
  lru_isolate(nr_scanned, nr_taken, lru);
  return 0;
}

SEC("tp_btf/mm_vmscan_lru_shrink_active")
int BPF_PROG(lru_shrink_active, int nid, unsigned long nr_taken, unsigned long nr_active,
             unsigned long nr_deactivated, unsigned long nr_referenced, int priority, int file) {
  struct mt_node* n = node_stats();
  __u32 tid = current_tid();
  if (!n) return 0;
  n->events++;
  int cx = context_of(task_of(0, n), tid);
  if (cx < 0 || cx >= MT_CONTEXTS) return 0;
  struct mt_detail* d = detail_of(n);
  if (!d) return 0;
  struct mt_active* a = &d->active[cx][file ? 1 : 0];
  a->taken += nr_taken;
  a->deactivated += nr_deactivated;
  return 0;
}

SEC("tp_btf/mm_shrink_slab_start")
int BPF_PROG(shrink_slab_start) {
  struct mt_node* n = node_stats();
  if (!n) return 0;
  n->events++;
  struct mt_task* t = task_of(1, n);
  if (!t) return 0;
  __u64 now = bpf_ktime_get_ns();
  t->slab_start_ts = now ? now : 1;
  return 0;
}

SEC("tp_btf/mm_shrink_slab_end")
int BPF_PROG(shrink_slab_end, struct shrinker* shr, int nid, int shrinker_retval) {
  struct mt_node* n = node_stats();
  __u32 tid = current_tid();
  if (!n) return 0;
  n->events++;
  struct mt_task* t = task_of(0, n);
  int cx = context_of(t, tid);
  if (cx < 0 || cx >= MT_CONTEXTS) return 0;
  struct mt_detail* d = detail_of(n);
  /* Read after the lookups, as the start reads it after its own (see
   * reclaim_end): a shrinker call lasts ~0.5 us, so this program's lookups
   * would otherwise be a tenth of it. */
  __u64 now = bpf_ktime_get_ns();
  if (d) {
    struct mt_slab* s = &d->slab[cx];
    s->calls++;
    if (shrinker_retval > 0) s->freed += shrinker_retval;
    if (t && t->slab_start_ts && now >= t->slab_start_ts) s->ns += now - t->slab_start_ts;
  }
  if (t) t->slab_start_ts = 0;
  return 0;
}

/* --- lock probes (autoloaded only with --collector.vmscan.locks) --- */

/* Each contention program has two rescue twins on the same tracepoint. The
 * kernel runs a program at most once at a time per CPU: a contention that
 * fires on a CPU while the main program is running there (an interrupt
 * whose handler contends a lock, or a lock the program itself takes) makes
 * the kernel skip the main program for it (a recursion miss), also in the
 * kernel's own code just before and after the program. A twin is another
 * program, attached after it, so it runs then; it must tell such an event
 * from one the main program has handled. An event's dispatch (its probes,
 * called one after the other) passes every probe the same ctx, the
 * argument array on the stack of the dispatch, and two dispatches alive at
 * once on a CPU (one nested in the other) have different ones. So the main
 * program marks its ctx as handled at its very end (a few slots per CPU:
 * the marks of outer dispatches whose twins have not run yet stay), and
 * between its first and last instruction it flags itself running: a twin
 * that sees the flag runs inside it, so the main program was skipped. The
 * first twin handles the event when the flag is up or no mark of its ctx is
 * there, and marks it (marks of its own); the second twin takes either mark, and
 * handles the event when there is none, or when the flag is up and the
 * first twin left no mark (both were skipped: the event nested in a first
 * twin's rescue, e.g. a lock it took, while the main program ran below).
 * So exactly the events the main program was skipped for are handled by a
 * twin, wherever in its run they nested.
 * A mark left behind (the second twin was skipped for a handled event) is
 * dropped by the next program at that ctx that knows the main program did
 * not mark it, or overwritten once every slot is taken. Not rescued,
 * counted as lost: an event all three were skipped for, or one nested in
 * the kernel's code around the main program (flag down) whose ctx has a
 * mark left behind.
 * The twins count into node slots of their own and into lock_waits entries
 * of their own (key rescue = 1, 2) and lock_addrs keys with the low bits
 * set (| 1, | 2: locks are aligned), which user space merges: the main
 * program's counter updates are plain read-modify-writes of per-CPU values,
 * and a twin, running inside one of them, would otherwise have its add
 * overwritten. All work on the task's lock stack, whose slots are reserved
 * before they are filled (begin) and read before they are released (end),
 * so a nested pair uses the slot above. */
static long hold_step(__u64 i, void* until) {
  return bpf_ktime_get_ns() >= *(__u64*)until;
}

static __always_inline void test_hold(void) {
  if (!test_lock_hold_ns) return;
  __u64 until = bpf_ktime_get_ns() + test_lock_hold_ns;
  bpf_loop(1 << 20, hold_step, &until, 0);
}

/* The node slot of rescue twin 1 or 2, about to handle an event (counted). */
static __always_inline struct mt_node* rescuing(__u32 twin) {
  struct mt_node* r = bpf_map_lookup_elem(&node, &twin);
  if (r) r->lock_rescued++;
  return r;
}

/* With lock callers: the kernel stack of this contention begin, at most
 * caller_samples per caller_interval_ns, the tracefs backend's stacktrace:N
 * trigger (re-armed every interval) on the same begins: every begin but a
 * bare mutex re-begin (contention_begin returns before this for those),
 * nested or not, in task or interrupt context. Rare by the budget: a
 * helper here that takes a lock can itself contend (a new stack's entry in
 * `callers` takes its hash bucket's lock; bpf_get_stack takes none, its
 * per-CPU buffers guard their own recursion), and the contention_begin it
 * fires then is skipped by the kernel (a recursion miss, counted as lost);
 * past the budget a begin reads the clock and one shared word, no more. */
static __always_inline void sample_caller(void* ctx, __u32 flags, struct mt_node* n) {
  if (!callers_on) return;
  if (!mt_budget_take(&caller_budget, bpf_ktime_get_ns(), caller_interval_ns, caller_samples))
    return;
  struct mt_caller_key key = {.flags = flags};
  /* Skip 1: the first frame is this program (the helper's caller), so the
   * stack keeps as many of the kernel's frames as the tracefs trigger's
   * (two tracing frames on top: bpf_trace_run2, __traceiter_*). */
  if (bpf_get_stack(ctx, key.frames, sizeof key.frames, 1 & BPF_F_SKIP_FIELD_MASK) <= 0) return;
  n->callers_sampled++;
  struct mt_caller* c = lookup_or_create(&callers, &key, &zero_caller);
  if (!c) {
    n->callers_full++;
    return;
  }
  c->count++;
}

/* sample: the main program (callers are sampled there only: the budget's
 * word is shared, but the twin, nested in a main program's update of the
 * same stack's per-CPU count, would have its add overwritten). */
static __always_inline void lock_begin(void* ctx, __u64 addr, unsigned int flags,
                                       struct mt_node* n, int sample) {
  n->events++;
  if (sample) sample_caller(ctx, flags, n);
  struct mt_task* t = task_of(1, n);
  if (!t) return;
  __u32 d = t->depth;
  for (int i = 0; i < MT_LOCK_DEPTH; i++) {
    if (i < d && t->lock_addr[i] == addr) { /* mutex re-begin: keep the first */
      n->lock_nested_begins++;
      return;
    }
  }
  if (d >= MT_LOCK_DEPTH) { /* deeper than irq nesting goes: ignore */
    n->lock_nested_begins++;
    return;
  }
  t->depth = d + 1; /* reserved before it is filled (see above) */
  __u64 now = bpf_ktime_get_ns();
  t->lock_ts[d] = now ? now : 1;
  t->lock_addr[d] = addr;
  t->lock_flags[d] = flags;
  t->lock_cg[d] = in_reclaim(t) ? current_memcg_id() : MT_NODE_ID;
}

/* rescue: 0 for the main program, 1 or 2 for its twins (their own entries). */
static __always_inline void lock_end(__u64 addr, int ret, struct mt_node* n, __u32 rescue) {
  n->events++;
  n->lock_ends++;
  __u64 now = bpf_ktime_get_ns();
  struct mt_task* t = task_of(0, n);
  int found = -1;
  if (t) {
    __u32 d = t->depth;
    for (int i = MT_LOCK_DEPTH - 1; i >= 0; i--) {
      if (i < d && t->lock_addr[i] == addr) {
        found = i;
        break;
      }
    }
  }
  if (found < 0 || !t) {
    n->lock_unpaired_ends++;
    return;
  }
  found &= MT_LOCK_DEPTH - 1;
  __u64 ts = t->lock_ts[found];
  struct mt_lock_key k = {.cg_id = t->lock_cg[found], .flags = t->lock_flags[found],
                          .rescue = rescue};
  /* Opens above the match lost their end: dropped with it. Released only
   * now that the slot is read. */
  t->depth = found;
  struct mt_lock_wait* w = lookup_or_create(&lock_waits, &k, &zero_lock_wait);
  if (!w) {
    n->lock_map_full++;
    return;
  }
  if (ret != 0) w->aborted++;
  const __u64 wait = now >= ts ? now - ts : 0;
  observe(&w->wait, wait, 1);
  /* The lock's own series (top locks). */
  __u64 la = addr | rescue;
  struct mt_lock_addr fresh = {.flags = k.flags};
  struct mt_lock_addr* a = lookup_or_create(&lock_addrs, &la, &fresh);
  if (!a) {
    n->lock_addrs_full++;
    la = MT_OTHER_LOCK | rescue;
    a = bpf_map_lookup_elem(&lock_addrs, &la);
    if (!a) return;
  }
  a->count++;
  a->wait_ns += wait;
}

/* The hand-over (see the lock probes' comment), its marks first. */
static __always_inline void drop_mark(volatile __u64* marks, __u64 id) {
  for (int i = 0; i < MT_MARKS; i++)
    if (marks[i] == id) marks[i] = 0;
}

static __always_inline void put_mark(volatile __u64* marks, __u64* next, __u64 id) {
  for (int i = 0; i < MT_MARKS; i++)
    if (!marks[i]) {
      marks[i] = id;
      return;
    }
  /* All taken (marks left behind): overwrite them in turn. */
  marks[(*next)++ & (MT_MARKS - 1)] = id;
}

static __always_inline int find_mark(volatile __u64* marks, __u64 id, int take) {
  for (int i = 0; i < MT_MARKS; i++)
    if (marks[i] == id) {
      if (take) marks[i] = 0;
      return 1;
    }
  return 0;
}

/* The main program: at its first instruction (a mark of its ctx is one a
 * skipped twin left behind) ... */
static __always_inline void main_begins(struct mt_handover* h, __u64 id) {
  h->running = 1;
  drop_mark(h->marks, id);
  drop_mark(h->twin_marks, id);
}

/* ... and at its last. */
static __always_inline void main_ends(struct mt_handover* h, __u64 id) {
  put_mark(h->marks, &h->next, id);
  h->running = 0;
}

/* The first twin: true when it is to handle the event (the main program is
 * running below it, or left no mark: skipped); then first_twin_ends(). */
static __always_inline int first_twin_handles(struct mt_handover* h, __u64 id) {
  if (test_first_twin_off) return 0;
  return h->running || !find_mark(h->marks, id, 0);
}

static __always_inline void first_twin_ends(struct mt_handover* h, __u64 id) {
  drop_mark(h->marks, id); /* left behind: the main program did not run */
  put_mark(h->twin_marks, &h->next, id);
}

/* The second twin: true when it is to handle the event (neither the first
 * twin nor the main program did); it takes their mark. */
static __always_inline int second_twin_handles(struct mt_handover* h, __u64 id) {
  if (find_mark(h->twin_marks, id, 1)) return 0;
  if (h->running) { /* both skipped; a mark of this ctx was left behind */
    drop_mark(h->marks, id);
    return 1;
  }
  return !find_mark(h->marks, id, 1);
}

SEC("tp_btf/contention_begin")
int BPF_PROG(contention_begin, void* lock, unsigned int flags) {
  if (flags == LCB_F_MUTEX_ONLY) return 0;
  struct mt_node* n = node_stats();
  if (!n) return 0;
  main_begins(&n->lock_begin_ho, (__u64)ctx);
  test_hold();
  lock_begin(ctx, (__u64)lock, flags, n, 1);
  main_ends(&n->lock_begin_ho, (__u64)ctx);
  return 0;
}

SEC("tp_btf/contention_begin")
int BPF_PROG(cont_begin_twin, void* lock, unsigned int flags) {
  if (flags == LCB_F_MUTEX_ONLY) return 0;
  struct mt_node* n = node_stats();
  struct mt_node* r = n && first_twin_handles(&n->lock_begin_ho, (__u64)ctx) ? rescuing(1) : 0;
  if (!r) return 0;
  lock_begin(ctx, (__u64)lock, flags, r, 0);
  first_twin_ends(&n->lock_begin_ho, (__u64)ctx);
  return 0;
}

SEC("tp_btf/contention_begin")
int BPF_PROG(cont_begin_tw2, void* lock, unsigned int flags) {
  if (flags == LCB_F_MUTEX_ONLY) return 0;
  struct mt_node* n = node_stats();
  struct mt_node* r = n && second_twin_handles(&n->lock_begin_ho, (__u64)ctx) ? rescuing(2) : 0;
  if (r) lock_begin(ctx, (__u64)lock, flags, r, 0);
  return 0;
}

SEC("tp_btf/contention_end")
int BPF_PROG(contention_end, void* lock, int ret) {
  struct mt_node* n = node_stats();
  if (!n) return 0;
  main_begins(&n->lock_end_ho, (__u64)ctx);
  test_hold();
  lock_end((__u64)lock, ret, n, 0);
  main_ends(&n->lock_end_ho, (__u64)ctx);
  return 0;
}

SEC("tp_btf/contention_end")
int BPF_PROG(cont_end_twin, void* lock, int ret) {
  struct mt_node* n = node_stats();
  struct mt_node* r = n && first_twin_handles(&n->lock_end_ho, (__u64)ctx) ? rescuing(1) : 0;
  if (!r) return 0;
  lock_end((__u64)lock, ret, r, 1);
  first_twin_ends(&n->lock_end_ho, (__u64)ctx);
  return 0;
}

SEC("tp_btf/contention_end")
int BPF_PROG(cont_end_tw2, void* lock, int ret) {
  struct mt_node* n = node_stats();
  struct mt_node* r = n && second_twin_handles(&n->lock_end_ho, (__u64)ctx) ? rescuing(2) : 0;
  if (r) lock_end((__u64)lock, ret, r, 2);
  return 0;
}

static __always_inline struct mt_rstat* rstat_of(struct cgroup* cgrp, struct mt_node* n) {
  __u64 id = cgrp->kn->id;
  struct mt_rstat* r = lookup_or_create(&rstat, &id, &zero_rstat);
  if (!r) n->lock_map_full++;
  return r;
}

SEC("tp_btf/cgroup_rstat_lock_contended")
int BPF_PROG(rstat_contended, struct cgroup* cgrp, int cpu, bool contended) {
  if (cgrp->root->hierarchy_id != hierarchy_id) return 0;
  struct mt_node* n = node_stats();
  if (!n) return 0;
  n->events++;
  struct mt_rstat* r = rstat_of(cgrp, n);
  if (r) r->contended++;
  struct mt_task* t = task_of(1, n);
  if (t) {
    __u64 now = bpf_ktime_get_ns();
    t->rstat_wait_ts = now ? now : 1;
  }
  return 0;
}

SEC("tp_btf/cgroup_rstat_locked")
int BPF_PROG(rstat_locked, struct cgroup* cgrp, int cpu, bool contended) {
  if (cgrp->root->hierarchy_id != hierarchy_id) return 0;
  struct mt_node* n = node_stats();
  if (!n) return 0;
  n->events++;
  __u64 now = bpf_ktime_get_ns();
  struct mt_rstat* r = rstat_of(cgrp, n);
  struct mt_task* t = task_of(1, n);
  if (contended) {
    if (t && t->rstat_wait_ts && now >= t->rstat_wait_ts) {
      if (r) observe(&r->wait, now - t->rstat_wait_ts, 1);
    } else {
      n->rstat_unpaired++;
    }
  }
  if (t) {
    t->rstat_wait_ts = 0;
    t->rstat_hold_ts = now ? now : 1;
  }
  return 0;
}

SEC("tp_btf/cgroup_rstat_unlock")
int BPF_PROG(rstat_unlock, struct cgroup* cgrp, int cpu, bool contended) {
  if (cgrp->root->hierarchy_id != hierarchy_id) return 0;
  struct mt_node* n = node_stats();
  if (!n) return 0;
  n->events++;
  __u64 now = bpf_ktime_get_ns();
  struct mt_task* t = task_of(0, n);
  if (t && t->rstat_hold_ts && now >= t->rstat_hold_ts) {
    struct mt_rstat* r = rstat_of(cgrp, n);
    if (r) observe(&r->hold, now - t->rstat_hold_ts, 1);
  } else {
    n->rstat_unpaired++;
  }
  if (t) t->rstat_hold_ts = 0;
  return 0;
}

SEC("tp_btf/memcg_flush_stats")
int BPF_PROG(memcg_flush_stats, struct mem_cgroup* memcg, s64 stats_updates, bool force,
             bool needs_flush) {
  struct mt_node* n = node_stats();
  if (!n) return 0;
  n->events++;
  struct cgroup* cgrp = memcg->css.cgroup;
  struct mt_rstat* r = rstat_of(cgrp, n);
  if (!r) return 0;
  if (needs_flush) r->flushes++;
  else r->flushes_skipped++;
  return 0;
}
