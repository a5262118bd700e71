// The per-cgroup series of the tracer: what is counted per cgroup
// (CgroupTraceStats and its parts), and the table that holds one series per
// cgroup, keyed by the cgroup's identity (its directory inode), plus the
// "_unknown" series (slot 0: tasks whose cgroup could not be read) and the
// "_overflow" series (every cgroup beyond max_cgroups, folded together).
//
// Identity: a series is found by id first. A path is only a label and an
// index for callers that know no id yet (a /proc lookup gives a path; the
// table stats the directory for its id). A cgroup renamed keeps its series
// under its new path; a cgroup removed and recreated under the same path
// (another inode) gets a new series, and the old one is retired as if its
// rmdir had been seen. Retired slots are reused, starting from zero; the
// owner is told (onRetire) so that whatever points at a slot can let go.
// Not thread-safe: the Aggregator calls it under its mutex.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "metrics/histogram.h"
#include "tracing/cgroup_resolver.h"
#include "tracing/events.h"

namespace memcg::tracing {

/// Stall histogram upper bounds (ns): 1 us .. 10 s in 1-2.5-5 steps, then +Inf.
inline constexpr std::array<uint64_t, 22> kStallBoundsNs = {
    1'000,         2'500,         5'000,         10'000,        25'000,      50'000,
    100'000,       250'000,       500'000,       1'000'000,     2'500'000,   5'000'000,
    10'000'000,    25'000'000,    50'000'000,    100'000'000,   250'000'000, 500'000'000,
    1'000'000'000, 2'500'000'000, 5'000'000'000, 10'000'000'000};
inline constexpr metrics::BucketLayout<uint64_t, kStallBoundsNs.size()> kStallBuckets{
    kStallBoundsNs, 1e9};

/// Stall times of one series (ns observed, seconds exposed).
using StallHistogram = metrics::FixedHistogram<kStallBuckets>;

/// Who reclaimed: the begin/end pair the stall belongs to.
enum class ReclaimKind : uint8_t {
  kDirect = 0,  ///< mm_vmscan_direct_reclaim_*: global direct reclaim in the allocator
  kMemcg,       ///< mm_vmscan_memcg_reclaim_*: memcg limit reclaim by the charging task
  kSoftlimit,   ///< mm_vmscan_memcg_softlimit_reclaim_* (cgroup v1 soft limit)
  kProactive,   ///< memcg reclaim by a task registered as our background reclaimer
  kCount,
};
inline constexpr size_t kReclaimKinds = static_cast<size_t>(ReclaimKind::kCount);
const char* reclaimKindName(
    ReclaimKind k);  // "direct", "memcg", "softlimit", "proactive"

/// The context an LRU scan ran in (innermost open reclaim of the task).
enum class ReclaimContext : uint8_t {
  kDirect = 0,
  kMemcg,
  kSoftlimit,
  kProactive,
  kKswapd,
  kOther,
  kCount,
};
inline constexpr size_t kReclaimContexts = static_cast<size_t>(ReclaimContext::kCount);
const char* reclaimContextName(ReclaimContext c);

enum class LruType : uint8_t { kAnon = 0, kFile, kCount };
inline constexpr size_t kLruTypes = static_cast<size_t>(LruType::kCount);
const char* lruTypeName(LruType l);  // "anon", "file"

struct ReclaimStats {
  uint64_t total = 0;            ///< completed reclaims (end events)
  uint64_t reclaimed_pages = 0;  ///< sum of nr_reclaimed of the end events
  uint64_t unpaired = 0;         ///< ends without a matching begin (no stall observed)
  StallHistogram stall;          ///< begin -> end of the same task
};

/// mm_vmscan_lru_shrink_inactive sums.
struct LruStats {
  uint64_t scanned_pages = 0;
  uint64_t reclaimed_pages = 0;
  uint64_t dirty_pages = 0;
  uint64_t writeback_pages = 0;
};

/// LRU/writeback/slab detail per cgroup (tracing/aggregator_scan.cpp).
enum class LruList : uint8_t { kInactive = 0, kActive, kCount };
inline constexpr size_t kLruLists = static_cast<size_t>(LruList::kCount);
const char* lruListName(LruList l);  // "inactive", "active"
enum class WriteIo : uint8_t { kSync = 0, kAsync, kCount };
inline constexpr size_t kWriteIos = static_cast<size_t>(WriteIo::kCount);
const char* writeIoName(WriteIo w);  // "sync", "async"
/// Throttle reasons: writeback, isolated, noprogress, congested, then "other".
inline constexpr size_t kThrottleSlots = kThrottleReasons + 1;
const char* throttleReasonName(size_t i);

struct IsolateStats {         ///< mm_vmscan_lru_isolate (off by default)
  uint64_t scanned_pages = 0;  ///< nr_scanned
  uint64_t taken_pages = 0;    ///< nr_taken (isolated)
};
struct ActiveStats {              ///< mm_vmscan_lru_shrink_active (off by default)
  uint64_t taken_pages = 0;        ///< isolated from the active list
  uint64_t deactivated_pages = 0;  ///< moved to the inactive list
};
struct ThrottleStats {  ///< mm_vmscan_throttled
  uint64_t count = 0;
  uint64_t delayed_us = 0;
};
struct SlabStats {  ///< mm_shrink_slab_start/end (off by default)
  uint64_t calls = 0;
  uint64_t freed_objects = 0;
  uint64_t ns = 0;  ///< start -> end of the same task
};
struct ScanDetail {
  std::array<std::array<std::array<IsolateStats, kLruLists>, kLruTypes>, kReclaimContexts>
      isolate{};
  std::array<std::array<ActiveStats, kLruTypes>, kReclaimContexts> active{};
  std::array<std::array<uint64_t, kWriteIos>, kReclaimContexts> write_folios{};
  std::array<ThrottleStats, kThrottleSlots> throttled{};
  std::array<SlabStats, kReclaimContexts> slab{};
  uint64_t pageout_scanned_pages = 0;  ///< mm_vmscan_reclaim_pages nr_scanned
  uint64_t pageout_reclaimed_pages = 0;
};

struct CgroupTraceStats {
  std::string path;       ///< relative to the memcg hierarchy root ("/" = root)
  uint64_t id = 0;        ///< cgroup id (directory inode), 0 if unknown
  bool unknown = false;   ///< tasks whose cgroup could not be resolved (exited early)
  bool overflow = false;  ///< cgroups beyond max_cgroups, folded together
  std::array<ReclaimStats, kReclaimKinds> reclaim{};
  std::array<std::array<LruStats, kLruTypes>, kReclaimContexts> lru{};
  uint64_t kswapd_wakeup_requests =
      0;                        ///< mm_vmscan_wakeup_kswapd by this cgroup's tasks
  uint64_t tasks_attached = 0;  ///< cgroup_attach_task with this destination
  ScanDetail detail;
};

/// Label value of a series: its path, "_unknown" or "_overflow".
std::string_view traceCgroupLabel(const CgroupTraceStats& c);

class SeriesTable {
 public:
  static constexpr uint32_t kUnknown = 0;  ///< slot of the "_unknown" series

  /// `resolver` (may be null, must outlive the table) gives ids of paths and
  /// paths of ids.
  SeriesTable(size_t max_cgroups, CgroupResolver* resolver);

  /// Called with a slot just before it is cleared for reuse (rmdir, or the
  /// path recreated as another cgroup).
  void onRetire(std::function<void(uint32_t slot)> fn) { on_retire_ = std::move(fn); }

  /// The series of cgroup `path` ("/a/b"; "" = "/") with id `id` (0 =
  /// unknown: looked up by path, or the directory is stat'ed for a new one).
  /// The overflow slot once max_cgroups cgroups have a series.
  uint32_t intern(std::string_view path, uint64_t id);
  /// The series of the cgroup with id `id` (events that name a cgroup by id):
  /// kUnknown if the id is 0 or no walk of the hierarchy finds it (remembered,
  /// so a miss costs one walk).
  uint32_t slotOfId(uint64_t id);
  /// cgroup_rmdir of `path` (id `id`, 0 = unknown): drops its series. False
  /// if there is none, or the path's series is another cgroup (recreated).
  bool remove(std::string_view path, uint64_t id);

  CgroupTraceStats& operator[](uint32_t slot) { return slots_[slot]; }
  const CgroupTraceStats& operator[](uint32_t slot) const { return slots_[slot]; }
  /// Every slot, indexed by slot (retired ones cleared, path empty).
  const std::vector<CgroupTraceStats>& slots() const { return slots_; }
  bool isOverflow(uint32_t slot) const { return overflow_ != 0 && slot == overflow_; }
  /// traceCgroupLabel() of the slot, as a string.
  std::string labelOf(uint32_t slot) const;
  /// Copies of the series in use (unknown and overflow included), in slot order.
  void copyLive(std::vector<CgroupTraceStats>& out) const;
  /// Cgroups with a series of their own (not unknown/overflow).
  size_t cgroups() const { return by_path_.size(); }
  uint64_t retired() const { return retired_; }

 private:
  uint32_t create(std::string key, uint64_t id);
  void retire(uint32_t slot);

  const size_t max_cgroups_;
  CgroupResolver* resolver_;
  std::function<void(uint32_t)> on_retire_;
  std::vector<CgroupTraceStats> slots_;  // [0]: unknown
  std::unordered_map<std::string, uint32_t> by_path_;  // current cgroup at each path
  std::unordered_map<uint64_t, uint32_t> by_id_;       // cgroup id -> slot
  std::unordered_set<uint64_t> unresolved_ids_;        // ids no walk could find
  std::vector<uint32_t> free_slots_;                   // retired, reused first
  uint32_t overflow_ = 0;                              // 0 = not created yet
  uint64_t retired_ = 0;
};

}  // namespace memcg::tracing
