// Folds decoded vmscan/cgroup/sched/lock events into per-cgroup reclaim
// state. It composes the parts that own each concern:
//   series_table.h       one series per cgroup, keyed by identity (+ unknown, overflow)
//   pid_cache.h          tid -> cgroup (fork, exit, attach, /proc on a miss)
//   report_rows.h        the report's per-task rows
//   proactive_episodes.h our own reclaimers and the cgroups they work for
//   lock_stats.h         lock probes, per series
// and pairs each task's reclaim begin/end events (the stall histograms).
//
// Attribution: vmscan events carry no cgroup (6.18: not even
// mm_vmscan_memcg_reclaim_begin), so each event is charged to the memcg of the
// task that hit the tracepoint (common_pid), as the pid cache knows it.
// Reclaim done by a process writing a cgroup file (memory.reclaim,
// limit_in_bytes) is thus charged to the writer, unless it is a proactive
// episode's.
// Units: stall times in ns internally, seconds in the snapshot helpers; page
// counts are pages (PAGE_SIZE, 4 KiB on x86-64).
// Bounded memory: at most max_cgroups series (then one overflow series) and
// max_pids cached tasks (then the cache is cleared and refilled on demand).
// Thread safety: apply()/endRound() run on the reader thread; snapshot(),
// cgroupOf() and the proactive-reclaimer registry may be called from any
// thread. All share one mutex, held per apply() chunk (~1000 events, tens of
// microseconds).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tracing/attribution.h"
#include "tracing/cgroup_resolver.h"
#include "tracing/events.h"
#include "tracing/lock_stats.h"
#include "tracing/pid_cache.h"
#include "tracing/proactive_episodes.h"
#include "tracing/report_rows.h"
#include "tracing/series_table.h"

namespace memcg::tracing {

inline constexpr size_t kWakeupOrders = 11;  // orders 0..9, then ">= 10"

struct NodeTraceStats {
  uint64_t kswapd_wakeups = 0;   ///< mm_vmscan_kswapd_wake (incl. re-wakeups)
  uint64_t kswapd_rewakeups = 0;  ///< of those, a wake while already awake (no sleep between)
  uint64_t kswapd_awake_ns = 0;  ///< first wake -> sleep, summed over kswapd threads
  std::array<uint64_t, kWakeupOrders> wakeup_requests_by_order{};  ///< wakeup_kswapd
};

/// Why a reclaim begin or end found no partner (memcg_vmscan_unpaired_events_total).
/// With events applied in time order and none lost, only kEndBeforeAnyBegin
/// (passes in flight when tracing started) is expected; any other reason
/// means events were lost or applied out of order.
enum class UnpairedReason : uint8_t {
  kEndWithoutBegin,    ///< an end, no begin of its kind open, the task began before
  kEndBeforeAnyBegin,  ///< an end of a task no begin of which was traced yet
  kBeginWithoutEnd,    ///< a begin while one of its kind was open (that one never ended)
  kBeginOpenTooLong,   ///< a begin still open after kUnpairedBoundNs (counted once)
};
inline constexpr size_t kUnpairedReasons = 4;
/// A reclaim pass is not expected to last this long (trace time).
inline constexpr uint64_t kUnpairedBoundNs = 60'000'000'000ull;
/// "end_without_begin", "end_before_any_begin", "begin_without_end", "begin_open_too_long".
const char* unpairedReasonName(UnpairedReason r);

struct AggregatorCounters {
  uint64_t events = 0;             ///< events applied
  uint64_t pid_cache_entries = 0;  ///< current size
  uint64_t pid_lookups = 0;        ///< /proc lookups (cache misses)
  uint64_t pid_lookup_failures = 0;
  uint64_t pid_cache_resets = 0;  ///< cache cleared because max_pids was reached
  uint64_t overflow_events = 0;   ///< events charged to the overflow series
  uint64_t cgroups_removed = 0;   ///< series dropped on cgroup_rmdir
  uint64_t proactive_targeted = 0;  ///< events charged to a proactive episode's target
  /// [kind][reason]: reclaim begins/ends without a partner, all cgroups.
  std::array<std::array<uint64_t, kUnpairedReasons>, kReclaimKinds> unpaired{};
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
  uint64_t read_errors = 0;    ///< reads of trace_pipe_raw that failed (not EAGAIN)
  bool reads_failing = false;  ///< a read failed in the reader's last round
  uint64_t reader_cpu_ns = 0;  ///< CPU time used by the reader thread so far
  /// Records handed out older than one before them (tracefs_session.h): 0
  /// unless a record was committed later than the reader's bound allows.
  uint64_t events_out_of_order = 0;
  /// Events enabled in the instance, and those the kernel refused to enable
  /// (Tracer::start, enableEvents): memcg_trace_event_enabled 1 / 0.
  std::vector<EventType> events_enabled;
  std::vector<EventType> events_refused;
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
  Aggregator(const Aggregator&) = delete;
  Aggregator& operator=(const Aggregator&) = delete;

  /// Reader thread: folds events in order (the session merges CPUs by time).
  void apply(std::span<const Event> events);
  /// Reader thread: end of a read round; forgets tasks that exited in the
  /// round before it (late records of a task still find it).
  void endRound();
  /// Any thread: a consistent copy of all series.
  TraceSnapshot snapshot() const;
  /// Any thread: the pid cache's answer (pid_cache.h PidCache::cgroupOf).
  std::optional<PidCgroup> cgroupOf(int32_t tid) const;

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
  void handle(const Event& e);
  void endReclaim(const Event& e, size_t begin_idx);
  void beginReclaim(const Event& e, size_t begin_idx);
  void countUnpaired(const TaskState& st, size_t begin_idx, UnpairedReason why);
  void checkOverdueBegins();  // kBeginOpenTooLong, every few rounds
  // tracing/aggregator_scan.cpp: detail events and cgroup removal.
  void handleScan(const Event& e);
  static ReclaimContext contextOf(const TaskState& st);
  /// The series an event of `st` is charged to (a proactive episode's target
  /// or the task's own cgroup).
  uint32_t chargeSlot(const TaskState& st, const Event& e);
  /// The task's report row, charged to `slot`.
  ProcessTraceStats& row(TaskState& st, int32_t tid, uint32_t slot) {
    return rows_.row(st.row, tid, slot, resolver_.get());
  }
  void retired(uint32_t slot);  // SeriesTable::onRetire
  void handleLock(const Event& e);

  const AggregatorOptions opts_;
  std::unique_ptr<CgroupResolver> resolver_;
  mutable std::mutex mu_;
  SeriesTable series_;
  PidCache pids_;
  ReportRows rows_;
  ProactiveEpisodes proactive_;
  LockStats locks_;
  NodeTraceStats node_;
  AggregatorCounters counters_;
  uint64_t last_ts_ = 0;  // newest event applied (events come in time order)
  uint64_t rounds_ = 0;
};

}  // namespace memcg::tracing
