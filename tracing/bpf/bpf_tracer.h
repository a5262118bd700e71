// The bpf backend of the vmscan collector (--collector.vmscan.backend=bpf):
// the tracefs backend's reclaim and lock events folded in the kernel by one
// BPF program (memcg_trace.bpf.c) into per-memcg, per-CPU maps, read here at
// scrape into the same TraceSnapshot the tracefs backend's aggregator gives,
// so tracing/trace_metrics.h renders the same metric names, labels and
// semantics. Nothing crosses a ring buffer: no event can be lost to a slow
// reader (a program hit recursively, inside another of ours, is skipped by
// the kernel and counted as lost).
//
// What the snapshot holds, against the tracefs backend's:
//  - per cgroup: reclaim counts, pages, unpaired ends and stall histograms by
//    kind (the same buckets, kStallBoundsNs, handed to the program), inactive
//    LRU scans by context and lru, kswapd wake-up requests; unpaired reasons
//    and kswapd wakeups/awake time node-wide; with locks, contention waits
//    by kind (node-wide and per reclaiming cgroup) and rstat/flush series.
//  - the reclaim report's per-task rows (ProcessTraceStats): counted in each
//    task's own state in the kernel, listed at snapshot by the program's task
//    iterator; an exiting task's row is copied to a bounded map (`exited`)
//    that a thread here drains every second into the same ReportRows the
//    tracefs backend keeps exited rows in (the most stalled, then "other").
//  - with lru_detail / shrink_slab: the LRU isolate / shrink_active and slab
//    shrinker detail series (ScanDetail), in a map of their own (`details`).
//  - the write_folio, throttled and reclaim_pages series (ScanDetail, on by
//    default) in the cgroup's own series, and the report rows' write and
//    throttle columns.
//  - migrations into each memcg (tasks_attached, cgroup_attach_task).
//  - not here: proactive episodes' re-charging. The App hands the
//    taskstats-exit attribution no tracer in this mode.
//  - with locks: the lock API's top locks, by lock address (`lock_addrs`).
//  - with lock callers: kernel stacks sampled at contention begins under the
//    tracefs backend's budget (at most lock_caller_samples per
//    lock_caller_interval, counted in the kernel), counted per (stack, lock
//    flags) in a bounded map (`callers`) and ranked here into the lock
//    snapshot's top stacks, which the lock report names with Kallsyms.
// Keys: the memcg's cgroup id (its kernfs id, the directory's inode: the
// identity discovery knows a cgroup by), v1 and v2 alike; per task (thread
// id) only the begin/end pairing state, dropped at the task's exit.
// Bounds: max_cgroups series (then the "_overflow" series), max_pids tasks,
// max_lock_series lock series, max_caller_stacks sampled stacks; a removed
// memcg's series are dropped by the program at cgroup_rmdir. mapSizes()
// gives their fill.
// Needs: a kernel with BTF (/sys/kernel/btf/vmlinux), CAP_BPF + CAP_PERFMON
// (or CAP_SYS_ADMIN), and a build with libbpf, bpftool and clang
// (MEMCG_HAVE_BPF); probe() says which is missing.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "tracing/aggregator.h"
#include "tracing/attribution.h"
#include "tracing/lock_metrics.h"
#include "tracing/lock_symbols.h"
#include "tracing/reclaim_report.h"

namespace memcg::tracing::bpf {

struct BpfTracerOptions {
  std::string procfs = "/proc";
  /// Memory hierarchy mount point (discovery's MountLayout): ids -> paths.
  std::string memory_root;
  bool memory_v2 = false;
  bool locks = false;  ///< lock probes (--collector.vmscan.locks)
  bool lock_addresses = false;  ///< raw addresses in the lock report (--collector.vmscan.lock-addresses)
  /// Sampled lock callers (--collector.vmscan.lock-callers; needs `locks`):
  /// at most lock_caller_samples kernel stacks per lock_caller_interval, as
  /// TracerOptions'.
  bool lock_callers = false;
  unsigned lock_caller_samples = 64;
  std::chrono::milliseconds lock_caller_interval{1000};
  /// Distinct (stack, lock flags) kept in the kernel (the lighter half moved
  /// into "other" when more than half are in use).
  size_t max_caller_stacks = 256;
  /// Lock addresses kept for the top locks (the lighter half is folded into
  /// "other" when more than half are in use).
  size_t max_lock_addrs = 1024;
  bool lru_detail = false;   ///< lru_isolate + lru_shrink_active (--collector.vmscan.lru-detail)
  bool shrink_slab = false;  ///< mm_shrink_slab_start/end (--collector.vmscan.shrink-slab)
  /// On by default, as TracerOptions' (no flag switches them off).
  bool write_folio = true;    ///< mm_vmscan_write_folio (older: mm_vmscan_writepage)
  bool throttled = true;      ///< mm_vmscan_throttled
  bool reclaim_pages = true;  ///< mm_vmscan_reclaim_pages
  size_t max_cgroups = 2048;
  size_t max_pids = 1u << 20;
  size_t max_lock_series = 4096;
  /// Report rows (as AggregatorOptions): live tasks listed, exited ones kept.
  size_t max_processes = 1024;
  size_t max_exited_processes = 32;
  /// Exited tasks' rows the kernel holds between two drains (one a second).
  size_t max_exited_tasks = 4096;
  /// Paths for probe(): the kernel's BTF (tests point it elsewhere).
  std::string btf_path = "/sys/kernel/btf/vmlinux";
};

/// Whether the backend can run here; `reason` says why not ("" if it can).
struct Availability {
  bool ok = false;
  std::string reason;
};
/// True if this build has the backend (libbpf, bpftool and clang were found).
bool built();
/// Build, kernel BTF and this process's capabilities; no BPF syscall made.
Availability probe(const BpfTracerOptions& o);

struct MapSize {
  std::string map;
  uint64_t entries = 0;
  uint64_t max_entries = 0;
  uint64_t full = 0;  ///< inserts the full map refused (see the map's comment)
};

class BpfTracer : public ReclaimAttribution,
                  public ReclaimReportSource,
                  public LockReportSource {
 public:
  /// Loads and attaches the program. On error nothing stays attached.
  static Result<std::unique_ptr<BpfTracer>> start(const BpfTracerOptions& o);
  ~BpfTracer() override;
  BpfTracer(const BpfTracer&) = delete;
  BpfTracer& operator=(const BpfTracer&) = delete;

  /// Reads the maps (any thread; serialised). events_lost = programs'
  /// recursion misses; reader_cpu_ns = CPU time spent in snapshot().
  TraceSnapshot snapshot() const override;
  /// Baselines for windowed reclaim reports, recorded by the drain thread.
  SnapshotHistory& reportHistory() override;
  /// LockReportSource: the lock API's naming state.
  const Kallsyms* kallsyms() override;
  LockIds& lockIds() override;
  bool lockAddresses() const override;
  /// lock:contention_end events seen since start (paired, unpaired, and
  /// those of series dropped since): what an independent trace counts.
  uint64_t contentionEnds() const;
  /// Entries in use and capacity of each bounded map (memcg_trace_bpf_map_*).
  std::vector<MapSize> mapSizes() const;

  /// ReclaimAttribution: memcg reclaim by a marked task counts as proactive.
  void markReclaimer(int32_t tid) override;
  void unmarkReclaimer(int32_t tid) override;
  /// Episodes re-charging reclaim to another cgroup are not kept here.
  bool beginEpisode(int32_t, std::string_view) override { return false; }
  void endEpisode(int32_t) override {}

  struct Impl;

 private:
  explicit BpfTracer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace memcg::tracing::bpf
