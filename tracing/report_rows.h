// The reclaim report's per-task rows (reclaim_report.h): one row per task
// (tid) with vmscan activity, as trace-vmscan-postprocess's per-process and
// kswapd-instance tables.
//
// Bounded: at most max_processes live rows (later tasks are summed into the
// "other" row), and when a task exits its row is folded: the
// max_exited_processes most stalled exited tasks keep theirs, the rest are
// summed into "other". A row remembers the series it was charged to last
// (its `cgroup` label in a snapshot).
// Not thread-safe: the Aggregator calls it under its mutex.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tracing/cgroup_resolver.h"
#include "tracing/series_table.h"

namespace memcg::tracing {

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
  /// direct + memcg stalls. Not proactive (our own background reclaim) and
  /// not softlimit, which runs inside direct reclaim (already in its stall)
  /// or in kswapd: that is softlimit_ns.
  uint64_t stall_ns = 0;
  uint64_t softlimit_ns = 0;  ///< time in soft-limit reclaim passes
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

/// Adds `p`'s counts into `to` (the "other" row's sum).
void addReportRow(ProcessTraceStats& to, const ProcessTraceStats& p);

class ReportRows {
 public:
  static constexpr uint32_t kNoRow = 0;  ///< also the index of the "other" row

  ReportRows(size_t max_processes, size_t max_exited_processes);

  /// The row of task `tid` whose row index is `*index` (kNoRow: none yet,
  /// then one is made and `*index` set), charged to series `slot` from now
  /// on. tid <= 0 (interrupt context on an idle CPU) and tasks past the cap
  /// share "other". `resolver` (may be null) names a new row.
  ProcessTraceStats& row(uint32_t& index, int32_t tid, uint32_t slot, CgroupResolver* resolver);
  /// Names row `index` if it has no name yet (the exit event's comm).
  void nameIfUnnamed(uint32_t index, std::string_view comm);
  /// The task is gone: folds its row (kept among the most stalled exited
  /// tasks, or summed into "other") and sets `*index` to kNoRow.
  void drop(uint32_t& index, const SeriesTable& series);
  /// An exited task's row (its `cgroup` label set): kept among the most
  /// stalled exited tasks, or summed into "other". The bpf backend, whose
  /// live rows are in the kernel, hands its exited rows here.
  void keepExited(ProcessTraceStats p);
  /// The kept exited rows, then "other".
  void copyExitedTo(std::vector<ProcessTraceStats>& out) const;
  /// Series `slot` was retired: rows charged to it are now "_unknown".
  void dropSlot(uint32_t slot);
  /// Live rows, then the kept exited ones, then "other" (labels from `series`).
  void copyTo(std::vector<ProcessTraceStats>& out, const SeriesTable& series) const;
  size_t liveRows() const { return live_; }

 private:
  const size_t max_processes_;
  const size_t max_exited_;
  std::vector<ProcessTraceStats> rows_;  // [0]: the "other" row; pid 0 = free
  std::vector<uint32_t> slot_;           // series each row was last charged to
  std::vector<uint32_t> free_;
  size_t live_ = 0;
  std::vector<ProcessTraceStats> exited_;  // top by stall
};

}  // namespace memcg::tracing
