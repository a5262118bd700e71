#include "tracing/reclaim_report.h"

#include <algorithm>
#include <bit>
#include <map>

#include "tracing/trace_metrics.h"

namespace memcg::tracing {
namespace {

uint64_t sub(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

void subtractInto(ReclaimStats& r, const ReclaimStats& b) {
  r.total = sub(r.total, b.total);
  r.reclaimed_pages = sub(r.reclaimed_pages, b.reclaimed_pages);
  r.unpaired = sub(r.unpaired, b.unpaired);
  r.stall.subtract(b.stall);
}

// ScanDetail is nothing but uint64_t counters: handled as one flat array.
using DetailWords = std::array<uint64_t, sizeof(ScanDetail) / sizeof(uint64_t)>;
static_assert(sizeof(ScanDetail) % sizeof(uint64_t) == 0);

void subtractDetail(ScanDetail& d, const ScanDetail& b) {
  DetailWords dw = std::bit_cast<DetailWords>(d);
  const DetailWords bw = std::bit_cast<DetailWords>(b);
  for (size_t i = 0; i < dw.size(); ++i) dw[i] = sub(dw[i], bw[i]);
  d = std::bit_cast<ScanDetail>(dw);
}

bool detailMoved(const ScanDetail& d) {
  for (uint64_t w : std::bit_cast<DetailWords>(d)) {
    if (w) return true;
  }
  return false;
}

void subtractProcess(ProcessTraceStats& p, const ProcessTraceStats& b) {
  for (size_t k = 0; k < kReclaimKinds; ++k) p.reclaims[k] = sub(p.reclaims[k], b.reclaims[k]);
  p.stall_ns = sub(p.stall_ns, b.stall_ns);
  p.softlimit_ns = sub(p.softlimit_ns, b.softlimit_ns);
  p.wake_requests = sub(p.wake_requests, b.wake_requests);
  p.scanned_pages = sub(p.scanned_pages, b.scanned_pages);
  p.reclaimed_pages = sub(p.reclaimed_pages, b.reclaimed_pages);
  p.write_sync = sub(p.write_sync, b.write_sync);
  p.write_async = sub(p.write_async, b.write_async);
  p.throttled = sub(p.throttled, b.throttled);
  p.throttled_us = sub(p.throttled_us, b.throttled_us);
  p.kswapd_wakeups = sub(p.kswapd_wakeups, b.kswapd_wakeups);
  p.kswapd_rewakeups = sub(p.kswapd_rewakeups, b.kswapd_rewakeups);
  p.kswapd_awake_ns = sub(p.kswapd_awake_ns, b.kswapd_awake_ns);
}

bool processMoved(const ProcessTraceStats& p) {
  for (uint64_t r : p.reclaims) {
    if (r) return true;
  }
  return p.stall_ns || p.softlimit_ns || p.wake_requests || p.scanned_pages || p.reclaimed_pages ||
         p.write_sync || p.write_async || p.throttled || p.kswapd_wakeups || p.kswapd_awake_ns;
}

// A row's identity across snapshots: the task (pid + comm, so a reused pid
// is another row) or the "other" row.
std::string processKey(const ProcessTraceStats& p) {
  return p.other ? std::string("other") : std::to_string(p.pid) + "/" + p.comm;
}

bool moved(const CgroupTraceStats& c) {
  if (c.kswapd_wakeup_requests || c.tasks_attached) return true;
  if (detailMoved(c.detail)) return true;
  for (const auto& r : c.reclaim) {
    if (r.total || r.stall.count) return true;
  }
  for (const auto& ctx : c.lru) {
    for (const auto& l : ctx) {
      if (l.scanned_pages || l.reclaimed_pages || l.dirty_pages || l.writeback_pages) return true;
    }
  }
  return false;
}

struct LruSums {
  uint64_t scanned = 0, reclaimed = 0, scanned_file = 0, scanned_anon = 0, reclaimed_file = 0,
           reclaimed_anon = 0, dirty = 0, writeback = 0;
  void add(const LruStats& l, LruType t) {
    scanned += l.scanned_pages;
    reclaimed += l.reclaimed_pages;
    (t == LruType::kFile ? scanned_file : scanned_anon) += l.scanned_pages;
    (t == LruType::kFile ? reclaimed_file : reclaimed_anon) += l.reclaimed_pages;
    dirty += l.dirty_pages;
    writeback += l.writeback_pages;
  }
  void addContext(const CgroupTraceStats& c, ReclaimContext x) {
    for (size_t l = 0; l < kLruTypes; ++l) add(c.lru[static_cast<size_t>(x)][l], static_cast<LruType>(l));
  }
};

const ReclaimStats& rs(const CgroupTraceStats& c, ReclaimKind k) {
  return c.reclaim[static_cast<size_t>(k)];
}

// A task's stall: direct + memcg passes. Soft-limit reclaim (cgroup v1) runs
// inside direct reclaim (its time is in the direct pass's already) or in
// kswapd (not a task's stall): reported apart, never added on top.
constexpr ReclaimKind kStallKinds[] = {ReclaimKind::kDirect, ReclaimKind::kMemcg};

nlohmann::json cgroupRow(const CgroupTraceStats& c) {
  nlohmann::json row;
  row["cgroup"] = std::string(traceCgroupLabel(c));
  if (c.id) row["id"] = c.id;
  LruSums all;
  for (size_t x = 0; x < kReclaimContexts; ++x) all.addContext(c, static_cast<ReclaimContext>(x));
  double stalled = 0;
  for (ReclaimKind k : kStallKinds) stalled += rs(c, k).stall.exposedSum();
  // The script's per-process columns, per cgroup.
  row["direct_reclaims"] = rs(c, ReclaimKind::kDirect).total;
  row["memcg_reclaims"] = rs(c, ReclaimKind::kMemcg).total;
  row["softlimit_reclaims"] = rs(c, ReclaimKind::kSoftlimit).total;
  row["proactive_reclaims"] = rs(c, ReclaimKind::kProactive).total;
  row["kswapd_wake_requests"] = c.kswapd_wakeup_requests;
  row["pages_scanned"] = all.scanned;
  row["pages_reclaimed"] = all.reclaimed;
  row["pages_dirty"] = all.dirty;
  row["pages_writeback"] = all.writeback;
  uint64_t wsync = 0, wasync = 0;
  for (const auto& w : c.detail.write_folios) {
    wsync += w[static_cast<size_t>(WriteIo::kSync)];
    wasync += w[static_cast<size_t>(WriteIo::kAsync)];
  }
  row["write_sync_io"] = wsync;
  row["write_async_io"] = wasync;
  uint64_t thr = 0, thr_us = 0;
  for (const auto& t : c.detail.throttled) {
    thr += t.count;
    thr_us += t.delayed_us;
  }
  row["throttled"] = thr;
  row["time_throttled_seconds"] = static_cast<double>(thr_us) * 1e-6;
  row["pageout_pages_scanned"] = c.detail.pageout_scanned_pages;
  row["pageout_pages_reclaimed"] = c.detail.pageout_reclaimed_pages;
  row["time_stalled_seconds"] = stalled;
  row["time_softlimit_reclaim_seconds"] = rs(c, ReclaimKind::kSoftlimit).stall.exposedSum();
  row["tasks_attached"] = c.tasks_attached;
  nlohmann::json kinds = nlohmann::json::object();
  for (size_t k = 0; k < kReclaimKinds; ++k) {
    const ReclaimStats& r = c.reclaim[k];
    if (r.total == 0 && r.stall.count == 0) continue;
    nlohmann::json kr;
    kr["reclaims"] = r.total;
    kr["pages_reclaimed"] = r.reclaimed_pages;
    kr["stalls"] = r.stall.count;
    kr["stall_seconds"] = r.stall.exposedSum();
    kr["max_stall_bucket_le_seconds"] = nullptr;
    for (size_t i = r.stall.buckets.size(); i-- > 0;) {
      if (r.stall.buckets[i] == 0) continue;
      // ns * 1e-9 (not the exposition's ns / 1e9): the report's figures as before.
      if (i < kStallBoundsNs.size())
        kr["max_stall_bucket_le_seconds"] = static_cast<double>(kStallBoundsNs[i]) * 1e-9;
      else kr["max_stall_bucket_le_seconds"] = "+Inf";
      break;
    }
    kr["unpaired"] = r.unpaired;
    kinds[reclaimKindName(static_cast<ReclaimKind>(k))] = std::move(kr);
  }
  row["by_kind"] = std::move(kinds);
  return row;
}

nlohmann::json processRow(const ProcessTraceStats& p) {
  nlohmann::json r;
  r["pid"] = p.other ? nlohmann::json(nullptr) : nlohmann::json(p.pid);
  r["comm"] = p.other ? std::string("other") : p.comm;
  r["cgroup"] = p.cgroup;
  r["exited"] = p.exited;
  if (p.kswapd) {
    // The script's kswapd-instance columns.
    r["kswapd_wakeups"] = p.kswapd_wakeups;
    r["kswapd_rewakeups"] = p.kswapd_rewakeups;
    r["pages_scanned"] = p.scanned_pages;
    r["pages_reclaimed"] = p.reclaimed_pages;
    r["write_sync_io"] = p.write_sync;
    r["write_async_io"] = p.write_async;
    r["time_awake_seconds"] = static_cast<double>(p.kswapd_awake_ns) * 1e-9;
    r["time_softlimit_reclaim_seconds"] = static_cast<double>(p.softlimit_ns) * 1e-9;
    return r;
  }
  // The script's per-process columns, plus memcg-era reclaim kinds.
  r["direct_reclaims"] = p.reclaims[static_cast<size_t>(ReclaimKind::kDirect)];
  r["memcg_reclaims"] = p.reclaims[static_cast<size_t>(ReclaimKind::kMemcg)];
  r["softlimit_reclaims"] = p.reclaims[static_cast<size_t>(ReclaimKind::kSoftlimit)];
  r["proactive_reclaims"] = p.reclaims[static_cast<size_t>(ReclaimKind::kProactive)];
  r["kswapd_wake_requests"] = p.wake_requests;
  r["pages_scanned"] = p.scanned_pages;
  r["pages_reclaimed"] = p.reclaimed_pages;
  r["write_sync_io"] = p.write_sync;
  r["write_async_io"] = p.write_async;
  r["throttled"] = p.throttled;
  r["time_throttled_seconds"] = static_cast<double>(p.throttled_us) * 1e-6;
  r["time_stalled_seconds"] = static_cast<double>(p.stall_ns) * 1e-9;
  r["time_softlimit_reclaim_seconds"] = static_cast<double>(p.softlimit_ns) * 1e-9;
  return r;
}

}  // namespace

TraceSnapshot subtractSnapshot(const TraceSnapshot& now, const TraceSnapshot& base) {
  TraceSnapshot out;
  out.running = now.running;
  out.events_read = sub(now.events_read, base.events_read);
  out.events_lost = sub(now.events_lost, base.events_lost);
  out.decode_errors = sub(now.decode_errors, base.decode_errors);
  out.reader_cpu_ns = sub(now.reader_cpu_ns, base.reader_cpu_ns);
  out.aggregator = now.aggregator;
  out.aggregator.events = sub(now.aggregator.events, base.aggregator.events);
  out.aggregator.pid_lookups = sub(now.aggregator.pid_lookups, base.aggregator.pid_lookups);
  out.aggregator.pid_lookup_failures =
      sub(now.aggregator.pid_lookup_failures, base.aggregator.pid_lookup_failures);
  out.aggregator.pid_cache_resets =
      sub(now.aggregator.pid_cache_resets, base.aggregator.pid_cache_resets);
  out.aggregator.overflow_events =
      sub(now.aggregator.overflow_events, base.aggregator.overflow_events);
  out.node.kswapd_wakeups = sub(now.node.kswapd_wakeups, base.node.kswapd_wakeups);
  out.node.kswapd_rewakeups = sub(now.node.kswapd_rewakeups, base.node.kswapd_rewakeups);
  for (size_t k = 0; k < kReclaimKinds; ++k) {
    for (size_t r = 0; r < kUnpairedReasons; ++r) {
      out.aggregator.unpaired[k][r] =
          sub(now.aggregator.unpaired[k][r], base.aggregator.unpaired[k][r]);
    }
  }
  out.node.kswapd_awake_ns = sub(now.node.kswapd_awake_ns, base.node.kswapd_awake_ns);
  for (size_t o = 0; o < kWakeupOrders; ++o) {
    out.node.wakeup_requests_by_order[o] =
        sub(now.node.wakeup_requests_by_order[o], base.node.wakeup_requests_by_order[o]);
  }
  // Series are matched by identity (the cgroup id, its directory inode), as
  // everywhere else: a cgroup removed and recreated under the same path
  // inside the window is another cgroup, whose counters started from zero.
  // Series with no id (unknown, overflow, a directory that could not be
  // stat'ed) match by label; so does a base series that had no id yet.
  std::map<uint64_t, const CgroupTraceStats*> before_id;
  std::map<std::string_view, const CgroupTraceStats*> before_label;
  for (const auto& c : base.cgroups) {
    if (c.id != 0 && !c.unknown && !c.overflow) {
      before_id.emplace(c.id, &c);
    } else {
      before_label.emplace(traceCgroupLabel(c), &c);
    }
  }
  auto baseOf = [&](const CgroupTraceStats& c) -> const CgroupTraceStats* {
    if (c.id != 0 && !c.unknown && !c.overflow) {
      if (auto it = before_id.find(c.id); it != before_id.end()) return it->second;
    }
    auto it = before_label.find(traceCgroupLabel(c));
    return it == before_label.end() ? nullptr : it->second;
  };
  for (const auto& c : now.cgroups) {
    CgroupTraceStats d = c;
    if (const CgroupTraceStats* bp = baseOf(c)) {
      const CgroupTraceStats& b = *bp;
      for (size_t k = 0; k < kReclaimKinds; ++k) subtractInto(d.reclaim[k], b.reclaim[k]);
      for (size_t x = 0; x < kReclaimContexts; ++x) {
        for (size_t l = 0; l < kLruTypes; ++l) {
          LruStats& dl = d.lru[x][l];
          const LruStats& bl = b.lru[x][l];
          dl.scanned_pages = sub(dl.scanned_pages, bl.scanned_pages);
          dl.reclaimed_pages = sub(dl.reclaimed_pages, bl.reclaimed_pages);
          dl.dirty_pages = sub(dl.dirty_pages, bl.dirty_pages);
          dl.writeback_pages = sub(dl.writeback_pages, bl.writeback_pages);
        }
      }
      d.kswapd_wakeup_requests = sub(d.kswapd_wakeup_requests, b.kswapd_wakeup_requests);
      d.tasks_attached = sub(d.tasks_attached, b.tasks_attached);
      subtractDetail(d.detail, b.detail);
    }
    if (moved(d)) out.cgroups.push_back(std::move(d));
  }
  out.aggregator.cgroups_removed =
      sub(now.aggregator.cgroups_removed, base.aggregator.cgroups_removed);
  out.aggregator.proactive_targeted =
      sub(now.aggregator.proactive_targeted, base.aggregator.proactive_targeted);
  std::map<std::string, const ProcessTraceStats*> pbefore;
  for (const auto& p : base.processes) pbefore.emplace(processKey(p), &p);
  for (const auto& p : now.processes) {
    ProcessTraceStats d = p;
    if (auto it = pbefore.find(processKey(p)); it != pbefore.end())
      subtractProcess(d, *it->second);
    if (processMoved(d)) out.processes.push_back(std::move(d));
  }
  return out;
}

nlohmann::json reclaimReport(const TraceSnapshot& now_in, const TraceSnapshot* base,
                             std::optional<double> window_seconds) {
  TraceSnapshot diff;
  const TraceSnapshot& s = base ? (diff = subtractSnapshot(now_in, *base)) : now_in;
  nlohmann::json j;
  j["window_seconds"] = base && window_seconds ? nlohmann::json(*window_seconds) : nullptr;
  j["tracing"] = {{"running", s.running},
                  {"events", s.events_read},
                  {"events_lost", s.events_lost},
                  {"decode_errors", s.decode_errors},
                  {"reader_cpu_seconds", static_cast<double>(s.reader_cpu_ns) * 1e-9}};
  // Begins/ends without a partner, all cgroups (unpairedReasonName()).
  nlohmann::json unpaired = nlohmann::json::object();
  for (size_t k = 0; k < kReclaimKinds; ++k) {
    nlohmann::json by_reason = nlohmann::json::object();
    for (size_t r = 0; r < kUnpairedReasons; ++r) {
      by_reason[unpairedReasonName(static_cast<UnpairedReason>(r))] = s.aggregator.unpaired[k][r];
    }
    unpaired[reclaimKindName(static_cast<ReclaimKind>(k))] = std::move(by_reason);
  }
  j["tracing"]["unpaired_events"] = std::move(unpaired);

  std::vector<const CgroupTraceStats*> rows;
  for (const auto& c : s.cgroups) {
    if (moved(c)) rows.push_back(&c);
  }
  auto stalled = [](const CgroupTraceStats* c) {
    uint64_t ns = 0;
    for (ReclaimKind k : kStallKinds) ns += rs(*c, k).stall.sum;
    return ns;
  };
  std::stable_sort(rows.begin(), rows.end(), [&](auto* a, auto* b) {
    uint64_t sa = stalled(a), sb = stalled(b);
    if (sa != sb) return sa > sb;
    return traceCgroupLabel(*a) < traceCgroupLabel(*b);
  });
  nlohmann::json cgroups = nlohmann::json::array();
  for (auto* c : rows) cgroups.push_back(cgroupRow(*c));
  j["cgroups"] = std::move(cgroups);

  // Per-task rows (the script's per-process table) and kswapd instances.
  std::vector<const ProcessTraceStats*> procs, kswapds;
  for (const auto& p : s.processes) {
    if (!processMoved(p)) continue;
    (p.kswapd ? kswapds : procs).push_back(&p);
  }
  std::stable_sort(procs.begin(), procs.end(), [](auto* a, auto* b) {
    if (a->other != b->other) return b->other;  // "other" last
    if (a->stall_ns != b->stall_ns) return a->stall_ns > b->stall_ns;
    return a->scanned_pages > b->scanned_pages;
  });
  std::stable_sort(kswapds.begin(), kswapds.end(),
                   [](auto* a, auto* b) { return a->pid < b->pid; });
  nlohmann::json prow = nlohmann::json::array(), krow = nlohmann::json::array();
  for (auto* p : procs) prow.push_back(processRow(*p));
  for (auto* p : kswapds) krow.push_back(processRow(*p));
  j["processes"] = std::move(prow);
  j["kswapd_instances"] = std::move(krow);

  // The script's Summary block, extended with memcg/soft-limit/proactive
  // reclaim (cgroup-era reclaim the script predates).
  LruSums direct, memcg, soft, proactive, kswapd;
  ReclaimStats tot[kReclaimKinds];
  uint64_t wake_requests = 0;
  std::array<std::array<uint64_t, kWriteIos>, kReclaimContexts> writes{};
  uint64_t throttled = 0, throttled_us = 0;
  for (const auto& c : s.cgroups) {
    for (size_t x = 0; x < kReclaimContexts; ++x) {
      for (size_t w = 0; w < kWriteIos; ++w) writes[x][w] += c.detail.write_folios[x][w];
    }
    for (const auto& t : c.detail.throttled) {
      throttled += t.count;
      throttled_us += t.delayed_us;
    }
    direct.addContext(c, ReclaimContext::kDirect);
    memcg.addContext(c, ReclaimContext::kMemcg);
    soft.addContext(c, ReclaimContext::kSoftlimit);
    proactive.addContext(c, ReclaimContext::kProactive);
    kswapd.addContext(c, ReclaimContext::kKswapd);
    wake_requests += c.kswapd_wakeup_requests;
    for (size_t k = 0; k < kReclaimKinds; ++k) {
      tot[k].total += c.reclaim[k].total;
      tot[k].reclaimed_pages += c.reclaim[k].reclaimed_pages;
      tot[k].stall.merge(c.reclaim[k].stall);
    }
  }
  nlohmann::json sum;
  auto block = [&](const char* prefix, ReclaimKind k, const LruSums& l) {
    const ReclaimStats& r = tot[static_cast<size_t>(k)];
    std::string p(prefix);
    sum[p + "_reclaims"] = r.total;
    sum[p + "_reclaim_pages_scanned"] = l.scanned;
    sum[p + "_reclaim_file_pages_scanned"] = l.scanned_file;
    sum[p + "_reclaim_anon_pages_scanned"] = l.scanned_anon;
    sum[p + "_reclaim_pages_reclaimed"] = r.reclaimed_pages;
    sum[p + "_reclaim_file_pages_reclaimed"] = l.reclaimed_file;
    sum[p + "_reclaim_anon_pages_reclaimed"] = l.reclaimed_anon;
    sum[p + "_reclaim_pages_dirty"] = l.dirty;
    sum[p + "_reclaim_pages_writeback"] = l.writeback;
    sum["time_stalled_" + p + "_reclaim_seconds"] = r.stall.exposedSum();
  };
  auto io = [&](const char* prefix, ReclaimContext x) {
    std::string p(prefix);
    sum[p + "_reclaim_write_sync_io"] = writes[static_cast<size_t>(x)][0];
    sum[p + "_reclaim_write_async_io"] = writes[static_cast<size_t>(x)][1];
  };
  block("direct", ReclaimKind::kDirect, direct);
  block("memcg", ReclaimKind::kMemcg, memcg);
  block("softlimit", ReclaimKind::kSoftlimit, soft);
  block("proactive", ReclaimKind::kProactive, proactive);
  io("direct", ReclaimContext::kDirect);
  io("memcg", ReclaimContext::kMemcg);
  io("softlimit", ReclaimContext::kSoftlimit);
  io("proactive", ReclaimContext::kProactive);
  io("kswapd", ReclaimContext::kKswapd);
  sum["throttled"] = throttled;
  sum["time_throttled_seconds"] = static_cast<double>(throttled_us) * 1e-6;
  // Stalled time of tasks: direct + memcg (softlimit runs inside either
  // direct reclaim or kswapd: time_stalled_softlimit_reclaim_seconds apart).
  sum["time_stalled_seconds"] = tot[static_cast<size_t>(ReclaimKind::kDirect)].stall.exposedSum() +
                                tot[static_cast<size_t>(ReclaimKind::kMemcg)].stall.exposedSum();
  // mm_vmscan_wakeup_kswapd of every task (reclaiming itself or not), as the
  // script's summary counts them: = the cgroups' and the task rows'
  // kswapd_wake_requests summed, = kswapd.wakeup_requests_by_order summed.
  sum["wake_kswapd_requests"] = wake_requests;
  // mm_vmscan_kswapd_wake, re-wakeups (woken while awake) included, as the
  // script's "Kswapd wakeups"; kswapd_rewakeups counts those apart.
  sum["kswapd_wakeups"] = s.node.kswapd_wakeups;
  sum["kswapd_rewakeups"] = s.node.kswapd_rewakeups;
  sum["kswapd_pages_scanned"] = kswapd.scanned;
  sum["kswapd_file_pages_scanned"] = kswapd.scanned_file;
  sum["kswapd_anon_pages_scanned"] = kswapd.scanned_anon;
  sum["kswapd_pages_reclaimed"] = kswapd.reclaimed;
  sum["kswapd_file_pages_reclaimed"] = kswapd.reclaimed_file;
  sum["kswapd_anon_pages_reclaimed"] = kswapd.reclaimed_anon;
  sum["time_kswapd_awake_seconds"] = static_cast<double>(s.node.kswapd_awake_ns) * 1e-9;
  j["summary"] = std::move(sum);

  nlohmann::json by_order = nlohmann::json::object();
  for (size_t o = 0; o < kWakeupOrders; ++o) {
    if (s.node.wakeup_requests_by_order[o] == 0) continue;
    by_order[o + 1 == kWakeupOrders ? ">=10" : std::to_string(o)] =
        s.node.wakeup_requests_by_order[o];
  }
  j["kswapd"] = {{"wakeups", s.node.kswapd_wakeups},
                 {"rewakeups", s.node.kswapd_rewakeups},
                 {"awake_seconds", static_cast<double>(s.node.kswapd_awake_ns) * 1e-9},
                 {"pages_scanned", kswapd.scanned},
                 {"pages_reclaimed", kswapd.reclaimed},
                 {"wakeup_requests_by_order", std::move(by_order)}};
  // What the script prints that this report cannot give.
  j["not_available"] = {
      "kswapd wake order per instance (requests by order are node-wide: kswapd.wakeup_requests_by_order)",
      "per-task rows of tasks past the live-task cap or exited outside the most stalled "
      "(summed in the \"other\" row)"};
  return j;
}

SnapshotHistory::SnapshotHistory(Clock::duration interval, Clock::duration max_age)
    : interval_(interval), max_age_(max_age) {}

bool SnapshotHistory::due(Clock::time_point t) const {
  std::lock_guard<std::mutex> g(mu_);
  return kept_.empty() || t - kept_.back().first >= interval_;
}

void SnapshotHistory::maybeRecord(Clock::time_point t, const TraceSnapshot& s) {
  std::lock_guard<std::mutex> g(mu_);
  if (!kept_.empty() && t - kept_.back().first < interval_) return;
  kept_.emplace_back(t, s);
  // Keep one snapshot older than max_age so a full-length window has a base.
  while (kept_.size() > 1 && t - kept_[1].first >= max_age_) kept_.pop_front();
}

std::optional<std::pair<TraceSnapshot, double>> SnapshotHistory::baseline(
    Clock::time_point t, Clock::duration window) const {
  std::lock_guard<std::mutex> g(mu_);
  if (kept_.empty()) return std::nullopt;
  const auto* best = &kept_.front();
  for (const auto& k : kept_) {
    if (k.first <= t - window) best = &k;
  }
  return std::make_pair(best->second,
                        std::chrono::duration<double>(t - best->first).count());
}

}  // namespace memcg::tracing
