#include "tracing/trace_metrics.h"

#include <string>

#include "tracing/lock_metrics.h"

namespace memcg::tracing {
namespace {

using metrics::Desc;
using metrics::Type;

Desc cg(Type t, std::string name, std::string help, std::vector<std::string> extra = {}) {
  extra.insert(extra.begin(), "cgroup");
  return Desc{std::move(name), std::move(help), t, std::move(extra), {}};
}
Desc node(Type t, std::string name, std::string help, std::vector<std::string> labels = {}) {
  return Desc{std::move(name), std::move(help), t, std::move(labels), {}};
}
std::vector<double> stallBuckets() {
  std::vector<double> b;
  // ns / 1e9 (correctly rounded) rather than ns * 1e-9: "le" prints short.
  for (uint64_t ns : kStallBoundsNs) b.push_back(static_cast<double>(ns) / 1e9);
  return b;
}

const Desc kReclaims = cg(Type::kCounter, "memcg_vmscan_reclaim_total",
                          "Completed reclaim passes by the cgroup's tasks (vmscan *_reclaim_end), "
                          "by kind (direct, memcg, softlimit, proactive).",
                          {"kind"});
const Desc kReclaimed = cg(Type::kCounter, "memcg_vmscan_reclaimed_pages_total",
                           "Pages reclaimed by those passes (nr_reclaimed of *_reclaim_end), by kind.",
                           {"kind"});
const Desc kUnpaired = cg(Type::kCounter, "memcg_vmscan_reclaim_unpaired_total",
                          "Reclaim ends without a matching begin (began before tracing started); "
                          "counted in reclaim_total but not in the stall histogram.",
                          {"kind"});
const Desc kStall = [] {
  Desc d = cg(Type::kHistogram, "memcg_vmscan_reclaim_stall_seconds",
              "Time a task of the cgroup spent in one reclaim pass (begin -> end), by kind.",
              {"kind"});
  d.buckets = stallBuckets();
  return d;
}();
const Desc kLruScanned = cg(Type::kCounter, "memcg_vmscan_lru_scanned_pages_total",
                            "Pages scanned on inactive LRU lists (mm_vmscan_lru_shrink_inactive) by "
                            "the cgroup's tasks, by reclaim context and lru (anon, file).",
                            {"context", "lru"});
const Desc kLruReclaimed = cg(Type::kCounter, "memcg_vmscan_lru_reclaimed_pages_total",
                              "Pages reclaimed from inactive LRU lists, by reclaim context and lru.",
                              {"context", "lru"});
const Desc kLruDirty = cg(Type::kCounter, "memcg_vmscan_lru_dirty_pages_total",
                          "Dirty pages met while shrinking inactive LRU lists, by context and lru.",
                          {"context", "lru"});
const Desc kLruWriteback = cg(Type::kCounter, "memcg_vmscan_lru_writeback_pages_total",
                              "Pages under writeback met while shrinking inactive LRU lists, by "
                              "context and lru.",
                              {"context", "lru"});
const Desc kWakeReq = cg(Type::kCounter, "memcg_vmscan_kswapd_wakeup_requests_total",
                         "kswapd wake-up requests by the cgroup's tasks (mm_vmscan_wakeup_kswapd).");
const Desc kAttached = cg(Type::kCounter, "memcg_cgroup_tasks_attached_total",
                          "Tasks moved into the cgroup (cgroup:cgroup_attach_task destination).");
const Desc kStatScanned = cg(Type::kCounter, "memcg_vmscan_reclaim_stat_scanned_pages_total",
                             "reclaim_stat synthesised from tracepoints: pages scanned by limit, "
                             "soft-limit and margin (our background) reclaim.",
                             {"context"});
const Desc kStatFreed = cg(Type::kCounter, "memcg_vmscan_reclaim_stat_freed_pages_total",
                           "reclaim_stat synthesised from tracepoints: pages freed, by context.",
                           {"context"});
const Desc kStatElapsed = cg(Type::kCounter, "memcg_vmscan_reclaim_stat_elapsed_seconds_total",
                             "reclaim_stat synthesised from tracepoints: time spent reclaiming, by "
                             "context.",
                             {"context"});

const Desc kKswapdWakeups = node(Type::kCounter, "memcg_node_vmscan_kswapd_wakeups_total",
                                 "kswapd wake-ups (mm_vmscan_kswapd_wake), all nodes.");
const Desc kKswapdAwake = node(Type::kCounter, "memcg_node_vmscan_kswapd_awake_seconds_total",
                               "Time kswapd threads spent awake (wake -> sleep), summed.");
const Desc kWakeReqOrder = node(Type::kCounter, "memcg_node_vmscan_wakeup_requests_total",
                                "kswapd wake-up requests (mm_vmscan_wakeup_kswapd) by allocation "
                                "order (\">=10\" for 10 and above).",
                                {"order"});

const Desc kUp = node(Type::kGauge, "memcg_trace_up",
                      "1 if the tracepoint reader is running, 0 if tracing is unavailable.");
const Desc kEvents = node(Type::kCounter, "memcg_trace_events_total",
                          "Trace records read from the exporter's tracefs instance.");
const Desc kLost = node(Type::kCounter, "memcg_trace_events_lost_total",
                        "Trace records the kernel dropped for the exporter's instance (overrun, "
                        "commit overrun, dropped).");
const Desc kDecodeErrors = node(Type::kCounter, "memcg_trace_decode_errors_total",
                                "Trace records of an unknown event id or too short to decode.");
const Desc kReaderCpu = node(Type::kCounter, "memcg_trace_reader_cpu_seconds_total",
                             "CPU time used by the trace reader thread.");
const Desc kPidCache = node(Type::kGauge, "memcg_trace_pid_cache_entries",
                            "Tasks in the pid -> cgroup cache.");
const Desc kPidLookups = node(Type::kCounter, "memcg_trace_pid_lookups_total",
                              "pid -> cgroup cache misses resolved through /proc/<pid>/cgroup.");
const Desc kPidLookupFailures = node(Type::kCounter, "memcg_trace_pid_lookup_failures_total",
                                     "Cache misses whose task was gone or unreadable (charged to "
                                     "cgroup=\"_unknown\").");
const Desc kOverflowEvents = node(Type::kCounter, "memcg_trace_overflow_events_total",
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
    auto cum = r.stall.cumulative();
    sink.family(kStall).addHistogram({cgLabel(), kind}, r.stall.count, r.stall.sumSeconds(),
                                     std::vector<uint64_t>(cum.begin(), cum.end() - 1));
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
  if (c.kswapd_wakeup_requests) sink.add(kWakeReq, {cgLabel()}, d(c.kswapd_wakeup_requests));
  if (c.tasks_attached) sink.add(kAttached, {cgLabel()}, d(c.tasks_attached));
  for (const StatContext& sc : kStatContexts) {
    const ReclaimStats& r = c.reclaim[static_cast<size_t>(sc.kind)];
    uint64_t scanned = 0;
    for (const LruStats& l : c.lru[static_cast<size_t>(sc.context)]) scanned += l.scanned_pages;
    if (r.total == 0 && scanned == 0) continue;
    sink.add(kStatScanned, {cgLabel(), sc.name}, d(scanned));
    sink.add(kStatFreed, {cgLabel(), sc.name}, d(r.reclaimed_pages));
    sink.add(kStatElapsed, {cgLabel(), sc.name}, r.stall.sumSeconds());
  }
}

}  // namespace

std::vector<const metrics::Desc*> traceMetricDescs() {
  std::vector<const metrics::Desc*> all = {&kReclaims,     &kReclaimed,     &kUnpaired,       &kStall,        &kLruScanned,
          &kLruReclaimed, &kLruDirty,      &kLruWriteback,   &kWakeReq,      &kAttached,
          &kStatScanned,  &kStatFreed,     &kStatElapsed,    &kKswapdWakeups, &kKswapdAwake,
          &kWakeReqOrder, &kUp,            &kEvents,         &kLost,         &kDecodeErrors,
          &kReaderCpu,    &kPidCache,      &kPidLookups,     &kPidLookupFailures,
          &kOverflowEvents};
  auto locks = lockMetricDescs();
  all.insert(all.end(), locks.begin(), locks.end());
  return all;
}

std::string_view traceCgroupLabel(const CgroupTraceStats& c) {
  if (c.overflow) return "_overflow";
  if (c.unknown) return "_unknown";
  return c.path.empty() ? std::string_view("/") : std::string_view(c.path);
}

void renderTraceSnapshot(const TraceSnapshot& s, metrics::Sink& sink) {
  sink.add(kUp, {}, s.running ? 1 : 0);
  sink.add(kEvents, {}, d(s.events_read));
  sink.add(kLost, {}, d(s.events_lost));
  sink.add(kDecodeErrors, {}, d(s.decode_errors));
  sink.add(kReaderCpu, {}, static_cast<double>(s.reader_cpu_ns) * 1e-9);
  sink.add(kPidCache, {}, d(s.aggregator.pid_cache_entries));
  sink.add(kPidLookups, {}, d(s.aggregator.pid_lookups));
  sink.add(kPidLookupFailures, {}, d(s.aggregator.pid_lookup_failures));
  sink.add(kOverflowEvents, {}, d(s.aggregator.overflow_events));

  sink.add(kKswapdWakeups, {}, d(s.node.kswapd_wakeups));
  sink.add(kKswapdAwake, {}, static_cast<double>(s.node.kswapd_awake_ns) * 1e-9);
  for (size_t o = 0; o < kWakeupOrders; ++o) {
    if (s.node.wakeup_requests_by_order[o] == 0) continue;
    sink.add(kWakeReqOrder, {kOrderLabels[o]}, d(s.node.wakeup_requests_by_order[o]));
  }
  for (const CgroupTraceStats& c : s.cgroups) renderCgroup(c, sink);
  renderLockSnapshot(s.locks, sink);
}

void renderTraceDown(metrics::Sink& sink) { sink.add(kUp, {}, 0); }

}  // namespace memcg::tracing
