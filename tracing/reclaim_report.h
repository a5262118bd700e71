// The reclaim report (/api/v1/reclaim/report): the rows
// trace-vmscan-postprocess (the kernel's Documentation/trace/postprocess
// script, which no longer parses 6.x formats) prints, computed from a
// TraceSnapshot instead of a recorded trace, over the whole run or a window.
//
// Shape (all counts in pages or events, times in seconds):
//   {"window_seconds": null | w, "tracing": {running, events, events_lost, ...},
//    "cgroups": [ per-cgroup rows, most stalled first ],
//    "processes": [ the script's per-process rows: pid, comm, cgroup, direct /
//                   memcg / softlimit / proactive reclaims, kswapd wake requests,
//                   pages scanned / reclaimed, sync / async write I/O, throttles,
//                   time stalled; most stalled first, "other" last ],
//    "kswapd_instances": [ per kswapd thread: wakeups, re-wakeups, pages
//                   scanned / reclaimed, sync / async write I/O, time awake ],
//    "summary": { the script's "Summary" block, direct + memcg + kswapd },
//    "kswapd":  { wakeups, awake time, pages scanned/reclaimed, requests by order },
//    "not_available": [ what the script prints that is not traced ] }
// Rows are per task (tid), as the script's "process" rows. Bounded: live
// tasks with vmscan activity up to AggregatorOptions::max_processes (1024),
// then max_exited_processes (32) exited tasks kept by stall time (the rest,
// and live tasks past the cap, are summed into one "other" row). A task's
// row is dropped from the live set at exit (folded as above).
// Pages scanned are mm_vmscan_lru_shrink_inactive's nr_scanned (the script
// used mm_vmscan_lru_isolate, which also counts active-list isolation; ours
// is behind --collector.vmscan.lru-detail). Write I/O counts
// mm_vmscan_write_folio events (folios, one per page on 4 KiB folios); since
// 2.6.38 the kernel flags all of them async.
#pragma once

#include <chrono>
#include <deque>
#include <mutex>
#include <optional>

#include <nlohmann/json.hpp>

#include "tracing/aggregator.h"

namespace memcg::tracing {

/// `now` minus `base`, series matched by cgroup identity (id; by label for
/// series without one), so a cgroup recreated under the same path is not
/// subtracted against the old one's counters; series whose counters did not
/// move are dropped. Both must come from the same tracer run.
TraceSnapshot subtractSnapshot(const TraceSnapshot& now, const TraceSnapshot& base);

/// Renders the report. With `base`, the report covers now - base and
/// `window_seconds` is written as the window; otherwise the whole run.
nlohmann::json reclaimReport(const TraceSnapshot& now, const TraceSnapshot* base = nullptr,
                             std::optional<double> window_seconds = std::nullopt);

/// Baselines for windowed reports: a few snapshots, one per `interval`, kept
/// for `max_age`. A snapshot copies every series (~2.3 KiB per cgroup) and
/// the task rows (at most ~1,060, ~0.2 KiB each), so the default (1 min,
/// 15 min) holds at most 16 of them: ~40 MiB at the 1,000-cgroup scale.
class SnapshotHistory {
 public:
  using Clock = std::chrono::steady_clock;
  explicit SnapshotHistory(Clock::duration interval = std::chrono::minutes(1),
                           Clock::duration max_age = std::chrono::minutes(15));
  /// True when a snapshot taken at `t` would be kept (none yet, or the newest
  /// is at least `interval` old): the owner takes one only then.
  bool due(Clock::time_point t) const;
  /// Records `s` taken at `t` if the newest kept one is at least `interval` old.
  void maybeRecord(Clock::time_point t, const TraceSnapshot& s);
  /// The newest snapshot taken at or before `t - window` (or the oldest kept
  /// if none is that old) and its age at `t`; nullopt if none is kept.
  std::optional<std::pair<TraceSnapshot, double>> baseline(Clock::time_point t,
                                                           Clock::duration window) const;

 private:
  Clock::duration interval_, max_age_;
  mutable std::mutex mu_;
  std::deque<std::pair<Clock::time_point, TraceSnapshot>> kept_;
};

/// What the report API reads: a backend's snapshots and its window
/// baselines (the tracefs Tracer, the bpf backend's BpfTracer).
class ReclaimReportSource {
 public:
  virtual ~ReclaimReportSource() = default;
  /// Thread-safe consistent copy.
  virtual TraceSnapshot snapshot() const = 0;
  /// Baselines for windowed reports, recorded by the backend itself. Thread-safe.
  virtual SnapshotHistory& reportHistory() = 0;
};

}  // namespace memcg::tracing
