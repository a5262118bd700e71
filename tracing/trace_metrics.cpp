#include "tracing/trace_metrics.h"

#include <string>

#include "metrics/descriptors.h"
#include "tracing/lock_metrics.h"

namespace memcg::tracing {
namespace {

using metrics::Desc;

const Desc kReclaims = metrics::cgroupCounter("memcg_vmscan_reclaim_total",
                          "Completed reclaim passes by the cgroup's tasks (vmscan *_reclaim_end), "
                          "by kind (direct, memcg, softlimit, proactive).",
                          {"kind"});
const Desc kReclaimed = metrics::cgroupCounter("memcg_vmscan_reclaimed_pages_total",
                           "Pages reclaimed by those passes (nr_reclaimed of *_reclaim_end), by kind.",
                           {"kind"});
const Desc kUnpaired = metrics::cgroupCounter("memcg_vmscan_reclaim_unpaired_total",
                          "Reclaim ends without a matching begin (began before tracing started); "
                          "counted in reclaim_total but not in the stall histogram.",
                          {"kind"});
const Desc kStall = metrics::cgroupHistogram(
    "memcg_vmscan_reclaim_stall_seconds",
    "Time a task of the cgroup spent in one reclaim pass (begin -> end), by kind.", {"kind"},
    kStallBuckets.exposedBounds());
const Desc kLruScanned = metrics::cgroupCounter("memcg_vmscan_lru_scanned_pages_total",
                            "Pages scanned on inactive LRU lists (mm_vmscan_lru_shrink_inactive) by "
                            "the cgroup's tasks, by reclaim context and lru (anon, file).",
                            {"context", "lru"});
const Desc kLruReclaimed = metrics::cgroupCounter("memcg_vmscan_lru_reclaimed_pages_total",
                              "Pages reclaimed from inactive LRU lists, by reclaim context and lru.",
                              {"context", "lru"});
const Desc kLruDirty = metrics::cgroupCounter("memcg_vmscan_lru_dirty_pages_total",
                          "Dirty pages met while shrinking inactive LRU lists, by context and lru.",
                          {"context", "lru"});
const Desc kLruWriteback = metrics::cgroupCounter("memcg_vmscan_lru_writeback_pages_total",
                              "Pages under writeback met while shrinking inactive LRU lists, by "
                              "context and lru.",
                              {"context", "lru"});
const Desc kWakeReq = metrics::cgroupCounter("memcg_vmscan_kswapd_wakeup_requests_total",
                         "kswapd wake-up requests by the cgroup's tasks (mm_vmscan_wakeup_kswapd).");
const Desc kAttached = metrics::cgroupCounter("memcg_cgroup_tasks_attached_total",
                          "Tasks moved into the cgroup (cgroup:cgroup_attach_task destination).");
const Desc kStatScanned = metrics::cgroupCounter("memcg_vmscan_reclaim_stat_scanned_pages_total",
                             "reclaim_stat synthesised from tracepoints: pages scanned by limit, "
                             "soft-limit and margin (our background) reclaim.",
                             {"context"});
const Desc kStatFreed = metrics::cgroupCounter("memcg_vmscan_reclaim_stat_freed_pages_total",
                           "reclaim_stat synthesised from tracepoints: pages freed, by context.",
                           {"context"});
const Desc kStatElapsed = metrics::cgroupCounter("memcg_vmscan_reclaim_stat_elapsed_seconds_total",
                             "reclaim_stat synthesised from tracepoints: time spent reclaiming, by "
                             "context.",
                             {"context"});

// Detail events (tracing/aggregator_scan.cpp). lru = anon/file, list =
// inactive/active, context as above.
const Desc kIsoScanned = metrics::cgroupCounter("memcg_vmscan_lru_isolate_scanned_pages_total",
                            "Pages scanned while isolating from LRU lists (mm_vmscan_lru_isolate "
                            "nr_scanned; needs --collector.vmscan.lru-detail), by reclaim context, "
                            "lru and list.",
                            {"context", "lru", "list"});
const Desc kIsoTaken = metrics::cgroupCounter("memcg_vmscan_lru_isolated_pages_total",
                          "Pages isolated from LRU lists for reclaim (mm_vmscan_lru_isolate "
                          "nr_taken), by reclaim context, lru and list.",
                          {"context", "lru", "list"});
const Desc kActiveTaken = metrics::cgroupCounter("memcg_vmscan_lru_active_scanned_pages_total",
                             "Pages taken off active LRU lists to be aged "
                             "(mm_vmscan_lru_shrink_active nr_taken; needs "
                             "--collector.vmscan.lru-detail), by reclaim context and lru.",
                             {"context", "lru"});
const Desc kDeactivated = metrics::cgroupCounter("memcg_vmscan_lru_deactivated_pages_total",
                             "Pages moved from active to inactive LRU lists "
                             "(mm_vmscan_lru_shrink_active nr_deactivated), by context and lru.",
                             {"context", "lru"});
const Desc kWrites = metrics::cgroupCounter("memcg_vmscan_write_folios_total",
                        "Folios reclaim started writeback on (mm_vmscan_write_folio; "
                        "mm_vmscan_writepage before 6.3), by reclaim context and io (sync, async).",
                        {"context", "io"});
const Desc kThrottled = metrics::cgroupCounter("memcg_vmscan_throttled_total",
                           "Times a task of the cgroup was throttled in reclaim "
                           "(mm_vmscan_throttled), by reason (writeback, isolated, noprogress, "
                           "congested).",
                           {"reason"});
const Desc kThrottledSec = metrics::cgroupCounter("memcg_vmscan_throttled_seconds_total",
                              "Time spent throttled in reclaim (usec_delayed), by reason.",
                              {"reason"});
const Desc kSlabCalls = metrics::cgroupCounter("memcg_vmscan_slab_shrinks_total",
                           "Slab shrinker calls by the cgroup's tasks (mm_shrink_slab_end; needs "
                           "--collector.vmscan.shrink-slab), by reclaim context.",
                           {"context"});
const Desc kSlabFreed = metrics::cgroupCounter("memcg_vmscan_slab_freed_objects_total",
                           "Objects the slab shrinkers freed (mm_shrink_slab_end retval), by "
                           "reclaim context.",
                           {"context"});
const Desc kSlabSec = metrics::cgroupCounter("memcg_vmscan_slab_shrink_seconds_total",
                         "Time spent in slab shrinkers (mm_shrink_slab_start -> end), by reclaim "
                         "context.",
                         {"context"});
const Desc kPageoutScanned = metrics::cgroupCounter("memcg_vmscan_pageout_scanned_pages_total",
                                "Pages scanned by reclaim of given folios (mm_vmscan_reclaim_pages: "
                                "MADV_PAGEOUT, DAMON) by the cgroup's tasks.");
const Desc kPageoutReclaimed = metrics::cgroupCounter("memcg_vmscan_pageout_reclaimed_pages_total",
                                  "Pages reclaimed by reclaim of given folios "
                                  "(mm_vmscan_reclaim_pages).");

const Desc kKswapdWakeups = metrics::nodeCounter("memcg_node_vmscan_kswapd_wakeups_total",
                                 "kswapd wake-ups (mm_vmscan_kswapd_wake), all nodes.");
const Desc kKswapdAwake = metrics::nodeCounter("memcg_node_vmscan_kswapd_awake_seconds_total",
                               "Time kswapd threads spent awake (wake -> sleep), summed.");
const Desc kWakeReqOrder = metrics::nodeCounter("memcg_node_vmscan_wakeup_requests_total",
                                "kswapd wake-up requests (mm_vmscan_wakeup_kswapd) by allocation "
                                "order (\">=10\" for 10 and above).",
                                {"order"});

const Desc kUp = metrics::nodeGauge("memcg_trace_up",
                      "1 if the tracepoint reader is running, 0 if tracing is unavailable.");
const Desc kEventEnabled = metrics::nodeGauge(
    "memcg_trace_event_enabled",
    "1 for each tracepoint enabled in the exporter's tracefs instance, 0 for one the kernel "
    "refused to enable (traced without it; the log says why).",
    {"event"});
const Desc kEvents = metrics::nodeCounter("memcg_trace_events_total",
                          "Trace records read from the exporter's tracefs instance.");
const Desc kLost = metrics::nodeCounter("memcg_trace_events_lost_total",
                        "Trace records the kernel dropped for the exporter's instance (overrun, "
                        "commit overrun, dropped).");
const Desc kDecodeErrors = metrics::nodeCounter("memcg_trace_decode_errors_total",
                                "Trace records of an unknown event id or too short to decode.");
const Desc kReadErrors = metrics::nodeCounter(
    "memcg_trace_read_errors_total",
    "Reads of the instance's per-CPU trace_pipe_raw that failed (other than nothing to read); "
    "the vmscan collector reports failure while the reader's last round had one.");
const Desc kUnpairedEvents = metrics::nodeCounter("memcg_vmscan_unpaired_events_total",
    "Reclaim begins and ends without a partner, all cgroups, by kind and reason: "
    "end_without_begin, begin_without_end, begin_open_too_long (events lost or applied out of "
    "order), end_before_any_begin (passes in flight when tracing started).",
    {"kind", "reason"});
const Desc kOutOfOrder = metrics::nodeCounter("memcg_trace_events_out_of_order_total",
    "Trace records the reader handed on older than one before them (committed later than its "
    "bound allows); stalls around them may be wrong.");
const Desc kReaderCpu = metrics::nodeCounter("memcg_trace_reader_cpu_seconds_total",
                             "CPU time used by the trace reader thread.");
const Desc kPidCache = metrics::nodeGauge("memcg_trace_pid_cache_entries",
                            "Tasks in the pid -> cgroup cache.");
const Desc kPidLookups = metrics::nodeCounter("memcg_trace_pid_lookups_total",
                              "pid -> cgroup cache misses resolved through /proc/<pid>/cgroup.");
const Desc kPidLookupFailures = metrics::nodeCounter("memcg_trace_pid_lookup_failures_total",
                                     "Cache misses whose task was gone or unreadable (charged to "
                                     "cgroup=\"_unknown\").");
const Desc kCgroupsRemoved = metrics::nodeCounter("memcg_trace_cgroups_removed_total",
                                  "Cgroup series dropped because the cgroup was removed "
                                  "(cgroup:cgroup_rmdir).");
const Desc kOverflowEvents = metrics::nodeCounter("memcg_trace_overflow_events_total",
                                  "Reclaim ends charged to cgroup=\"_overflow\" (series cap reached).");

constexpr const char* kOrderLabels[kWakeupOrders] = {"0", "1", "2", "3", "4",  "5",
                                                      "6", "7", "8", "9", ">=10"};

struct StatContext {
  const char* name;
  ReclaimKind kind;
  ReclaimContext context;
};
constexpr StatContext kStatContexts[] = {
    {"limit", ReclaimKind::kMemcg, ReclaimContext::kMemcg},
    {"soft", ReclaimKind::kSoftlimit, ReclaimContext::kSoftlimit},
    {"margin", ReclaimKind::kProactive, ReclaimContext::kProactive},
};

double d(uint64_t v) { return static_cast<double>(v); }

template <class Label>
void renderDetail(const ScanDetail& dt, Label& cgLabel, metrics::Sink& sink) {
  for (size_t x = 0; x < kReclaimContexts; ++x) {
    const char* ctx = reclaimContextName(static_cast<ReclaimContext>(x));
    for (size_t l = 0; l < kLruTypes; ++l) {
      const char* lru = lruTypeName(static_cast<LruType>(l));
      for (size_t li = 0; li < kLruLists; ++li) {
        const IsolateStats& i = dt.isolate[x][l][li];
        if (i.scanned_pages == 0 && i.taken_pages == 0) continue;
        const char* list = lruListName(static_cast<LruList>(li));
        sink.add(kIsoScanned, {cgLabel(), ctx, lru, list}, d(i.scanned_pages));
        sink.add(kIsoTaken, {cgLabel(), ctx, lru, list}, d(i.taken_pages));
      }
      const ActiveStats& a = dt.active[x][l];
      if (a.taken_pages || a.deactivated_pages) {
        sink.add(kActiveTaken, {cgLabel(), ctx, lru}, d(a.taken_pages));
        sink.add(kDeactivated, {cgLabel(), ctx, lru}, d(a.deactivated_pages));
      }
    }
    for (size_t w = 0; w < kWriteIos; ++w) {
      if (dt.write_folios[x][w] == 0) continue;
      sink.add(kWrites, {cgLabel(), ctx, writeIoName(static_cast<WriteIo>(w))},
               d(dt.write_folios[x][w]));
    }
    const SlabStats& sl = dt.slab[x];
    if (sl.calls) {
      sink.add(kSlabCalls, {cgLabel(), ctx}, d(sl.calls));
      sink.add(kSlabFreed, {cgLabel(), ctx}, d(sl.freed_objects));
      sink.add(kSlabSec, {cgLabel(), ctx}, static_cast<double>(sl.ns) * 1e-9);
    }
  }
  for (size_t r = 0; r < kThrottleSlots; ++r) {
    if (dt.throttled[r].count == 0) continue;
    sink.add(kThrottled, {cgLabel(), throttleReasonName(r)}, d(dt.throttled[r].count));
    sink.add(kThrottledSec, {cgLabel(), throttleReasonName(r)},
             static_cast<double>(dt.throttled[r].delayed_us) * 1e-6);
  }
  if (dt.pageout_scanned_pages || dt.pageout_reclaimed_pages) {
    sink.add(kPageoutScanned, {cgLabel()}, d(dt.pageout_scanned_pages));
    sink.add(kPageoutReclaimed, {cgLabel()}, d(dt.pageout_reclaimed_pages));
  }
}

void renderCgroup(const CgroupTraceStats& c, metrics::Sink& sink) {
  // Kept once the cgroup has anything to show.
  std::string_view label;
  auto cgLabel = [&]() {
    if (label.empty()) {
      std::string_view l = traceCgroupLabel(c);
      label = (c.unknown || c.overflow) ? l : sink.keep(std::string(l));
    }
    return label;
  };
  for (size_t k = 0; k < kReclaimKinds; ++k) {
    const ReclaimStats& r = c.reclaim[k];
    if (r.total == 0 && r.stall.count == 0) continue;
    const char* kind = reclaimKindName(static_cast<ReclaimKind>(k));
    sink.add(kReclaims, {cgLabel(), kind}, d(r.total));
    sink.add(kReclaimed, {cgLabel(), kind}, d(r.reclaimed_pages));
    if (r.unpaired) sink.add(kUnpaired, {cgLabel(), kind}, d(r.unpaired));
    r.stall.addTo(sink, kStall, {cgLabel(), kind});
  }
  for (size_t x = 0; x < kReclaimContexts; ++x) {
    const char* ctx = reclaimContextName(static_cast<ReclaimContext>(x));
    for (size_t l = 0; l < kLruTypes; ++l) {
      const LruStats& s = c.lru[x][l];
      if (s.scanned_pages == 0 && s.reclaimed_pages == 0 && s.dirty_pages == 0 &&
          s.writeback_pages == 0) {
        continue;
      }
      const char* lru = lruTypeName(static_cast<LruType>(l));
      sink.add(kLruScanned, {cgLabel(), ctx, lru}, d(s.scanned_pages));
      sink.add(kLruReclaimed, {cgLabel(), ctx, lru}, d(s.reclaimed_pages));
      if (s.dirty_pages) sink.add(kLruDirty, {cgLabel(), ctx, lru}, d(s.dirty_pages));
      if (s.writeback_pages)
        sink.add(kLruWriteback, {cgLabel(), ctx, lru}, d(s.writeback_pages));
    }
  }
  renderDetail(c.detail, cgLabel, sink);
  if (c.kswapd_wakeup_requests) sink.add(kWakeReq, {cgLabel()}, d(c.kswapd_wakeup_requests));
  if (c.tasks_attached) sink.add(kAttached, {cgLabel()}, d(c.tasks_attached));
  for (const StatContext& sc : kStatContexts) {
    const ReclaimStats& r = c.reclaim[static_cast<size_t>(sc.kind)];
    uint64_t scanned = 0;
    for (const LruStats& l : c.lru[static_cast<size_t>(sc.context)]) scanned += l.scanned_pages;
    if (r.total == 0 && scanned == 0) continue;
    sink.add(kStatScanned, {cgLabel(), sc.name}, d(scanned));
    sink.add(kStatFreed, {cgLabel(), sc.name}, d(r.reclaimed_pages));
    sink.add(kStatElapsed, {cgLabel(), sc.name}, r.stall.exposedSum());
  }
}

}  // namespace

std::vector<const metrics::Desc*> traceMetricDescs() {
  std::vector<const metrics::Desc*> all = {&kReclaims,     &kReclaimed,     &kUnpaired,       &kStall,        &kLruScanned,
          &kLruReclaimed, &kLruDirty,      &kLruWriteback,   &kWakeReq,      &kAttached,
          &kStatScanned,  &kStatFreed,     &kStatElapsed,    &kKswapdWakeups, &kKswapdAwake,
          &kWakeReqOrder, &kUp,            &kEvents,         &kLost,         &kDecodeErrors,
          &kReaderCpu,    &kPidCache,      &kPidLookups,     &kPidLookupFailures,
          &kOverflowEvents, &kIsoScanned,  &kIsoTaken,       &kActiveTaken,  &kDeactivated,
          &kWrites,       &kThrottled,     &kThrottledSec,   &kSlabCalls,    &kSlabFreed,
          &kSlabSec,      &kPageoutScanned, &kPageoutReclaimed, &kCgroupsRemoved, &kUnpairedEvents, &kOutOfOrder,
          &kEventEnabled, &kReadErrors};
  auto locks = lockMetricDescs();
  all.insert(all.end(), locks.begin(), locks.end());
  return all;
}

void renderTraceSnapshot(const TraceSnapshot& s, metrics::Sink& sink,
                         const CgroupSelection* selection) {
  sink.add(kUp, {}, s.running ? 1 : 0);
  sink.add(kEvents, {}, d(s.events_read));
  sink.add(kLost, {}, d(s.events_lost));
  sink.add(kDecodeErrors, {}, d(s.decode_errors));
  sink.add(kReadErrors, {}, d(s.read_errors));
  sink.add(kOutOfOrder, {}, d(s.events_out_of_order));
  auto eventState = [&](EventType t, double v) {
    const EventName* en = eventName(t);
    if (en) sink.add(kEventEnabled, {sink.keep(std::string(en->system) + ":" + en->name)}, v);
  };
  for (EventType t : s.events_enabled) eventState(t, 1);
  for (EventType t : s.events_refused) eventState(t, 0);
  for (size_t k = 0; k < kReclaimKinds; ++k) {
    for (size_t r = 0; r < kUnpairedReasons; ++r) {
      sink.add(kUnpairedEvents,
               {reclaimKindName(static_cast<ReclaimKind>(k)),
                unpairedReasonName(static_cast<UnpairedReason>(r))},
               d(s.aggregator.unpaired[k][r]));
    }
  }
  sink.add(kReaderCpu, {}, static_cast<double>(s.reader_cpu_ns) * 1e-9);
  sink.add(kPidCache, {}, d(s.aggregator.pid_cache_entries));
  sink.add(kPidLookups, {}, d(s.aggregator.pid_lookups));
  sink.add(kPidLookupFailures, {}, d(s.aggregator.pid_lookup_failures));
  sink.add(kOverflowEvents, {}, d(s.aggregator.overflow_events));
  sink.add(kCgroupsRemoved, {}, d(s.aggregator.cgroups_removed));

  sink.add(kKswapdWakeups, {}, d(s.node.kswapd_wakeups));
  sink.add(kKswapdAwake, {}, static_cast<double>(s.node.kswapd_awake_ns) * 1e-9);
  for (size_t o = 0; o < kWakeupOrders; ++o) {
    if (s.node.wakeup_requests_by_order[o] == 0) continue;
    sink.add(kWakeReqOrder, {kOrderLabels[o]}, d(s.node.wakeup_requests_by_order[o]));
  }
  for (const CgroupTraceStats& c : s.cgroups) {
    if (!selection || selection->selects(c)) renderCgroup(c, sink);
  }
  renderLockSnapshot(s.locks, sink, selection);
}

void renderTraceDown(metrics::Sink& sink) { sink.add(kUp, {}, 0); }

}  // namespace memcg::tracing
