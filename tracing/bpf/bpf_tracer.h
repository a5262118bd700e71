// The bpf backend of the vmscan collector (--collector.vmscan.backend=bpf):
// the tracefs backend's reclaim and lock events folded in the kernel by one
// BPF program (memcg_trace.bpf.c) into per-memcg, per-CPU maps, read here at
// scrape into the same TraceSnapshot the tracefs backend's aggregator gives,
// so tracing/trace_metrics.h renders the same metric names, labels and
// semantics. Nothing crosses a ring buffer: no event can be lost to a slow
// reader (a program hit recursively, inside itself, is skipped by the
// kernel; the lock programs' rescue twins handle such contention events,
// and any they cannot are counted as lost: misses()).
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
//  - with exit_cgroups (the taskstats collector on): where an exited
//    process was (PidCgroupLookup), from a bounded LRU map the program
//    fills at each thread-group leader's sched_process_exit, read by one
//    map lookup per question; a task not (yet) in it is asked of the
//    program's task iterator (its memcg, also while it exits).
//  - proactive episodes: a marked reclaimer's events between
//    beginEpisode and endEpisode are charged to the episode's cgroup.
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
// max_lock_series lock series, max_caller_stacks sampled stacks,
// max_exit_cgroups exited processes (LRU); a removed memcg's series are
// dropped by the program at cgroup_rmdir. mapSizes() gives their fill.
// Needs: a kernel with BTF (/sys/kernel/btf/vmlinux), CAP_BPF + CAP_PERFMON
// (or CAP_SYS_ADMIN), and a build with libbpf, bpftool and clang
// (MEMCG_HAVE_BPF); probe() says which is missing.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
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
  /// Tests only: the main lock programs spin this long per run, so that
  /// contentions nest in them and their rescue twins run (0: off).
  uint64_t test_lock_hold_ns = 0;
  /// Tests only: the first rescue twins do nothing, as if the kernel had
  /// skipped them too, so that the second twins rescue what they would.
  bool test_first_twin_off = false;
  /// The memory cgroup of recently exited processes, for the taskstats exit
  /// records (cgroupOf); set by the App when the taskstats collector is on.
  bool exit_cgroups = false;
  /// Exited processes remembered (LRU: the oldest make room). An answer
  /// must outlive the exit record's way to the taskstats listener and its
  /// retries (collectors/taskstats/delay_ledger.h): as many as PidCache
  /// keeps (tracing/pid_cache.h kRecentExits).
  size_t max_exit_cgroups = 8192;
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
                  public LockReportSource,
                  public PidCgroupLookup {
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
  /// The kernel's recursion misses (program runs it skipped because the
  /// program was already running on that CPU): of the main programs, of the
  /// lock programs' rescue twins, and the main programs' misses the twins
  /// handled (memcg_trace.bpf.c). snapshot().events_lost = missed - rescued.
  struct Misses {
    uint64_t missed = 0;
    uint64_t twins_missed = 0;
    uint64_t rescued = 0;
    /// Of rescued, those the second twins handled (the first skipped too).
    uint64_t rescued_second = 0;
    /// Each program's misses (those with any), for diagnostics.
    std::vector<std::pair<std::string, uint64_t>> by_program;
  };
  Misses misses() const;
  /// Entries in use and capacity of each bounded map (memcg_trace_bpf_map_*),
  /// as the last snapshot() read them (read once if there was none).
  std::vector<MapSize> mapSizes() const;

  /// ReclaimAttribution: memcg reclaim by a marked task counts as proactive.
  void markReclaimer(int32_t tid) override;
  void unmarkReclaimer(int32_t tid) override;
  /// PidCgroupLookup (with exit_cgroups; nullopt without): the memcg of
  /// `pid`'s process at its leader's exit if that was within the last
  /// kRecentExitNs (exited=true), else of the task `pid` if it is still
  /// there (also a zombie, or a task in do_exit whose exit is not recorded
  /// yet), else nullopt; nullopt too when the cgroup has no path (removed).
  std::optional<PidCgroup> cgroupOf(int32_t pid) const override;
  /// How long an exit answers: the taskstats ledger retries an exit for
  /// DelayLedger::kPendingAge (10 s); an older entry of a reused tgid must
  /// not answer for the new process. (Reused within it, and asked between
  /// the new process's exit record and its sched_process_exit, the old
  /// entry still answers.)
  static constexpr uint64_t kRecentExitNs = 10'000'000'000ull;

  /// Reclaim by marked `tid` from now until endEpisode is charged to
  /// `cgroup` (its id, in the program's `episodes` map). False if `tid` is
  /// not marked or the cgroup has no directory.
  bool beginEpisode(int32_t tid, std::string_view cgroup) override;
  void endEpisode(int32_t tid) override;

  struct Impl;

 private:
  explicit BpfTracer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace memcg::tracing::bpf
