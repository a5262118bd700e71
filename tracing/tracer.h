// The tracing pipeline in one object: session (tracefs_session.h) -> decoder
// (decoders.h) -> aggregator (aggregator.h). This is what the exporter owns
// and what a collector reads: call snapshot() once per scrape.
//
// Events enabled by default, and why (each costs the traced task ~0.4 us per
// hit in the kernel, ~0.2 us per hit just for being enabled with a filter):
//  - vmscan direct/memcg/softlimit reclaim begin+end: the stall histograms and
//    counts; low rate (one pair per reclaim pass).
//  - vmscan kswapd_wake/kswapd_sleep: kswapd wakeups and time awake; rare.
//  - vmscan wakeup_kswapd: wake requests by order; can reach 1e5/s in a storm
//    (millions in minutes under iozone's 16 threads). Kept on: ~0.08 us reader CPU per event
//    keeps a 100k/s storm under 1% of a core. Switch off with
//    TracerOptions::wakeup_kswapd = false.
//  - vmscan lru_shrink_inactive: pages scanned/reclaimed by lru and context;
//    one per shrink of an inactive list (~SWAP_CLUSTER_MAX batches).
//  - cgroup:cgroup_attach_task, filtered in the kernel to the memcg hierarchy
//    (dst_root==<id>): keeps the pid -> cgroup cache exact on migration.
//  - sched:sched_process_fork / sched_process_exit: children inherit the
//    parent's cache entry (short-lived tasks stay attributed even if gone
//    before /proc could be read) and entries are dropped on exit, so the
//    cache is bounded by live tasks and a reused pid is never misattributed.
//    Their rate is the fork rate; each hit costs far less than the fork.
//  - vmscan write_folio (6.1: writepage): one per folio reclaim starts
//    writeback on (swap-out, kswapd writing dirty file folios); its cost is
//    small beside the I/O it starts. Gives the script's sync/async I/O columns.
//  - vmscan throttled: one per throttle sleep (milliseconds long); rare.
//  - vmscan reclaim_pages: one per node per reclaim_pages() call
//    (MADV_PAGEOUT, DAMON); rare.
//  - cgroup:cgroup_rmdir, filtered to the memcg hierarchy (root==<id>): drops
//    a removed cgroup's series; rare.
// Off by default (each would add its rate x ~0.4 us to the traced tasks):
//  - vmscan lru_isolate and lru_shrink_active (--collector.vmscan.lru-detail):
//    lru_isolate fires once per shrink_inactive_list and once per
//    shrink_active_list batch, so it alone doubles the per-batch cost of the
//    always-on lru_shrink_inactive; lru_shrink_active adds one per
//    active-list batch. Measured (tests/live/tracing_scan_live_test.cpp, 256
//    MiB streamed through a 64 MiB memcg, 4 runs): ~190 memcg reclaim pairs,
//    590-640 lru_shrink_inactive, 586-1035 lru_isolate and 0-394
//    lru_shrink_active events, i.e. +1 to +1.6 events per lru_shrink_inactive.
//    The pages they count are otherwise given by lru_shrink_inactive.
//  - vmscan shrink_slab_start/end (--collector.vmscan.shrink-slab): a pair
//    per shrinker call, i.e. per memcg-aware shrinker x memcg x node on every
//    reclaim pass (19-379 pairs per ~190 reclaims above, one memcg, one
//    filesystem); grows with the number of cgroups and mounted filesystems,
//    the most frequent vmscan events on a busy host.
// Not decoded: node_reclaim (zone_reclaim_mode only).
// Off by default, on with TracerOptions::locks (--collector.vmscan.locks):
// the lock probes of lock_stats.h (cgroup rstat lock, memcg_flush_stats,
// lock:contention_begin/end: thousands per second under reclaim, far more on
// busy hosts). When off they are not enabled at all, so they cost nothing.
// TracerOptions::lock_callers adds a `stacktrace:N` trigger on
// contention_begin in our instance, re-armed every lock_caller_interval: at
// most N stacks per interval.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "tracing/aggregator.h"
#include "tracing/attribution.h"
#include "tracing/decoders.h"
#include "tracing/event_formats.h"
#include "tracing/lock_metrics.h"
#include "tracing/lock_symbols.h"
#include "tracing/reclaim_report.h"
#include "tracing/tracefs_session.h"

namespace memcg::tracing {

struct TracerOptions {
  SessionOptions session;
  AggregatorOptions
      aggregator;  ///< hierarchy_id is detected unless detect_hierarchy is false
  bool detect_hierarchy = true;
  std::string procfs = "/proc";
  /// Mount point of the memory hierarchy and whether it is cgroup v2, from
  /// the caller (discovery's MountLayout: the one mountinfo parser). Used to
  /// stat cgroup directories for their ids; empty = ids stay 0 and the
  /// version is not cross-checked against /proc/cgroups.
  std::string memory_root;
  bool memory_v2 = false;
  bool wakeup_kswapd = true;
  bool lru = true;
  bool fork_exit = true;
  // Detail events (tracer.cpp scanEventWanted; choice explained above).
  bool lru_detail = false;   ///< lru_isolate + lru_shrink_active
  bool shrink_slab = false;  ///< mm_shrink_slab_start/end
  bool write_folio = true;
  bool throttled = true;
  bool reclaim_pages = true;
  bool cgroup_rmdir = true;
  /// Lock contention probes (lock_stats.h); off by default.
  bool locks = false;
  /// Sampled callers of lock contentions (implies locks).
  bool lock_callers = false;
  /// Raw kernel addresses in the lock report (lock_metrics.h); off: KASLR.
  bool lock_addresses = false;
  unsigned lock_caller_samples = 64;  ///< stacks per interval at most
  std::chrono::milliseconds lock_caller_interval{1000};
  /// Only these events if non-empty (tests); overrides the switches above.
  std::vector<EventType> only_events;
  /// Tests: called before each event's enable is written (kernel names, e.g.
  /// "vmscan", "mm_vmscan_write_folio"); a non-zero errno is taken as the
  /// kernel's refusal and that event is not written (like
  /// ActuatorOptions::faultInjector).
  std::function<int(const char* system, const char* event)> enable_fault_injector;
};

/// Also the PidCgroupLookup (attribution.h) of its pid cache, for taskstats,
/// and the ReclaimAttribution the controller is handed.
class Tracer : private RecordSink,
               public ReclaimAttribution,
               public PidCgroupLookup,
               public ReclaimReportSource,
               public LockReportSource {
 public:
  /// Opens the session, loads formats, enables events and starts reading.
  /// On error nothing is left behind (instance removed, tracefs unmounted).
  static Result<std::unique_ptr<Tracer>> start(const TracerOptions& opts);
  ~Tracer() override;

  /// Thread-safe consistent copy; includes session counters (lost events).
  TraceSnapshot snapshot() const override;
  /// PidCgroupLookup: the pid cache's answer (live, or exited recently).
  std::optional<PidCgroup> cgroupOf(int32_t pid) const override {
    return aggregator_->cgroupOf(pid);
  }
  void stop();
  Aggregator& aggregator() { return *aggregator_; }
  const TracefsSession& session() const { return *session_; }
  const std::vector<EventType>& enabledEvents() const { return enabled_; }
  /// Events the kernel refused to enable (traced without them).
  const std::vector<EventType>& refusedEvents() const { return refused_; }
  /// procfs the tracer reads (for /proc/kallsyms in lock reports).
  const std::string& procfs() const { return procfs_; }
  /// Whether lock reports may show raw kernel addresses (TracerOptions).
  bool lockAddresses() const override { return lock_addresses_; }
  /// Baselines for windowed reclaim reports (/api/v1/reclaim/report?window=),
  /// recorded by the vmscan collector on every scrape and by the API on every
  /// request. Thread-safe.
  SnapshotHistory& reportHistory() override { return history_; }
  /// Opaque lock ids for /api/v1/locks, stable for the tracer's life. Thread-safe.
  LockIds& lockIds() override { return lock_ids_; }
  /// <procfs>/kallsyms of this tracer's procfs, read on first use (callers'
  /// thread); nullptr if it cannot be read. Thread-safe.
  const Kallsyms* kallsyms() override { return kallsyms_.get(procfs_ + "/kallsyms"); }

  /// ReclaimAttribution: forwarded to the aggregator's proactive reclaimers
  /// and episodes.
  void markReclaimer(int32_t tid) override;
  void unmarkReclaimer(int32_t tid) override;
  bool beginEpisode(int32_t tid, std::string_view cgroup) override;
  void endEpisode(int32_t tid) override;

 private:
  Tracer() = default;
  void onRecord(const void* data, uint32_t size, uint64_t ts, int cpu) override;
  void onRoundEnd() override;
  void flush();
  void armCallerTrigger();  // lock_callers: (re)installs the stacktrace trigger

  std::unique_ptr<TracefsSession> session_;
  std::unique_ptr<EventFormats> formats_;
  std::unique_ptr<Decoder> decoder_;
  std::unique_ptr<Aggregator> aggregator_;
  std::vector<EventType> enabled_;
  std::vector<EventType> refused_;
  std::vector<Event> chunk_;
  size_t chunk_used_ = 0;
  std::atomic<uint64_t> decode_errors_{0};
  bool locks_ = false;
  std::string procfs_;
  bool lock_addresses_ = false;
  std::atomic<bool> callers_{false};
  unsigned caller_samples_ = 0;
  std::chrono::milliseconds caller_interval_{1000};
  std::chrono::steady_clock::time_point armed_at_{};
  // State of the tracer's reports (formerly process-wide singletons).
  SnapshotHistory history_;
  LockIds lock_ids_;
  KallsymsOnce kallsyms_;
};

/// Whether `opts` wants the detail event `t` (true for the other events).
bool scanEventWanted(EventType t, const TracerOptions& opts);

/// Writes a filter (if non-empty) and `enable` of one event of the instance:
/// TracefsSession::enableEvent in the tracer, a fault injector in tests.
using EnableEventFn = std::function<Status(const char* system, const char* event,
                                           const std::string& filter)>;
/// What enabling the wanted events gave.
struct EventEnableResult {
  std::vector<EventType> enabled;
  /// Refused by the kernel (the write of its filter or enable failed): traced
  /// without it, reported as memcg_trace_event_enabled 0 and logged once.
  std::vector<std::pair<EventType, Error>> refused;
};
/// Enables each event of `want` the decoder supports (an event this kernel
/// lacks is skipped, logged at info, and is neither enabled nor refused),
/// with its in-kernel filter for `hierarchy_id`. A refusal does not stop the
/// others: the exporter traces what the kernel accepts.
EventEnableResult enableEvents(const std::vector<EventType>& want, const Decoder& decoder,
                               const EventFormats& formats, int hierarchy_id,
                               const EnableEventFn& enable);

}  // namespace memcg::tracing
