// The Aggregator's LRU/writeback/slab detail events and cgroup removal
// (aggregator.h declares them). Kept apart from aggregator.cpp so that the
// reclaim begin/end core stays small.

#include "tracing/aggregator.h"

namespace memcg::tracing {

void Aggregator::handleScan(const Event& e) {
  if (e.type == EventType::kCgroupRmdir) {
    // The series table tells retired() (aggregator.cpp), which lets go of it.
    if (e.dst_root == opts_.hierarchy_id) series_.remove(e.dst_path, e.dst_id);
    return;
  }
  TaskState& st = pids_.get(e.pid);
  const size_t ctx = static_cast<size_t>(contextOf(st));
  const uint32_t slot = chargeSlot(st, e);
  ScanDetail& d = series_[slot].detail;
  switch (e.type) {
    case EventType::kLruIsolate: {
      if (e.lru < 0 || e.lru >= kLruUnevictable) break;  // reclaim never isolates those
      const size_t lru = e.lru >= 2 ? 1 : 0;               // enum lru_list: file after anon
      const size_t list = (e.lru & 1) ? 1 : 0;             // active after inactive
      IsolateStats& s = d.isolate[ctx][lru][list];
      s.scanned_pages += e.nr_scanned;
      s.taken_pages += e.nr_taken;
      break;
    }
    case EventType::kLruShrinkActive: {
      const size_t lru = (e.reclaim_flags & kReclaimWbFile) ? 1 : 0;
      d.active[ctx][lru].taken_pages += e.nr_taken;
      d.active[ctx][lru].deactivated_pages += e.nr_deactivated;
      break;
    }
    case EventType::kWriteFolio: {
      // Since 2.6.38 reclaim writes are always ASYNC; SYNC is kept for the
      // script's columns and older kernels. Neither bit: counted as async.
      const bool sync = (e.reclaim_flags & kReclaimWbSync) != 0;
      ++d.write_folios[ctx][sync ? 0 : 1];
      ProcessTraceStats& p = row(st, e.pid, slot);
      ++(sync ? p.write_sync : p.write_async);
      break;
    }
    case EventType::kThrottled: {
      size_t r = kThrottleSlots - 1;
      for (size_t i = 0; i < kThrottleReasons; ++i) {
        if (e.reason & (1u << i)) {
          r = i;
          break;
        }
      }
      ++d.throttled[r].count;
      d.throttled[r].delayed_us += e.delayed_us;
      ProcessTraceStats& p = row(st, e.pid, slot);
      ++p.throttled;
      p.throttled_us += e.delayed_us;
      break;
    }
    case EventType::kShrinkSlabStart:
      st.slab_start_ts = e.ts ? e.ts : 1;
      break;
    case EventType::kShrinkSlabEnd: {
      SlabStats& s = d.slab[ctx];
      ++s.calls;
      if (e.freed > 0) s.freed_objects += static_cast<uint64_t>(e.freed);
      if (st.slab_start_ts != 0 && e.ts >= st.slab_start_ts) s.ns += e.ts - st.slab_start_ts;
      st.slab_start_ts = 0;
      break;
    }
    case EventType::kReclaimPages:
      d.pageout_scanned_pages += e.nr_scanned;
      d.pageout_reclaimed_pages += e.nr_reclaimed;
      break;
    default:
      break;
  }
}

}  // namespace memcg::tracing
