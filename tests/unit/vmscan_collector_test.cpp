// The vmscan collector's snapshot -> metrics mapping (tracing/trace_metrics.h)
// and the reclaim report (tracing/reclaim_report.h), from synthetic
// TraceSnapshots: no root, no tracefs. The exposition is linted with promtool
// when it is installed (MEMCG_PROMTOOL), skipped otherwise.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <set>
#include <string>

#include "metrics/text_format.h"
#include "tests/support/promtool.h"
#include "tracing/reclaim_report.h"
#include "tracing/trace_metrics.h"

namespace memcg::tracing {
namespace {

constexpr const char* kCg = "/memcg_exporter_test_x";

ReclaimStats& R(CgroupTraceStats& c, ReclaimKind k) { return c.reclaim[static_cast<size_t>(k)]; }
LruStats& L(CgroupTraceStats& c, ReclaimContext x, LruType t) {
  return c.lru[static_cast<size_t>(x)][static_cast<size_t>(t)];
}

TraceSnapshot sampleSnapshot() {
  TraceSnapshot s;
  s.running = true;
  s.events_read = 100;
  s.events_lost = 2;
  s.decode_errors = 1;
  s.read_errors = 3;
  s.reader_cpu_ns = 5'000'000;
  s.aggregator.pid_cache_entries = 42;
  s.aggregator.pid_lookups = 9;
  s.aggregator.pid_lookup_failures = 1;
  s.aggregator.overflow_events = 2;
  s.node.kswapd_wakeups = 4;
  s.node.kswapd_awake_ns = 1'500'000'000;
  s.node.wakeup_requests_by_order[0] = 5;
  s.node.wakeup_requests_by_order[kWakeupOrders - 1] = 1;

  CgroupTraceStats unknown;
  unknown.unknown = true;
  R(unknown, ReclaimKind::kDirect).total = 1;
  R(unknown, ReclaimKind::kDirect).reclaimed_pages = 32;
  R(unknown, ReclaimKind::kDirect).stall.observe(1'000'000);  // 1 ms
  s.cgroups.push_back(unknown);

  CgroupTraceStats x;
  x.path = kCg;
  x.id = 1234;
  ReclaimStats& m = R(x, ReclaimKind::kMemcg);
  m.total = 3;
  m.reclaimed_pages = 96;
  m.stall.observe(2'000);           // <= 2.5 us
  m.stall.observe(30'000);          // <= 50 us
  m.stall.observe(20'000'000'000);  // > 10 s: +Inf only
  ReclaimStats& p = R(x, ReclaimKind::kProactive);
  p.total = 1;
  p.reclaimed_pages = 8;
  p.unpaired = 1;  // no stall
  L(x, ReclaimContext::kMemcg, LruType::kFile) = {100, 90, 5, 0};
  L(x, ReclaimContext::kMemcg, LruType::kAnon) = {20, 0, 0, 3};
  L(x, ReclaimContext::kProactive, LruType::kFile) = {10, 8, 0, 0};
  x.kswapd_wakeup_requests = 7;
  x.tasks_attached = 1;
  const size_t mc = static_cast<size_t>(ReclaimContext::kMemcg);
  x.detail.isolate[mc][1][0] = {40, 32};  // file, inactive
  x.detail.active[mc][0] = {16, 6};        // anon
  x.detail.write_folios[mc][1] = 3;        // async
  x.detail.throttled[0] = {1, 2000};       // writeback, 2 ms
  x.detail.slab[mc] = {5, 100, 3000};
  x.detail.pageout_scanned_pages = 64;
  x.detail.pageout_reclaimed_pages = 60;
  s.cgroups.push_back(x);

  CgroupTraceStats idle;  // interned but never active: no series
  idle.path = "/memcg_exporter_test_idle";
  s.cgroups.push_back(idle);

  CgroupTraceStats root;  // kswapd's own scans land in its cgroup (the root)
  root.path = "/";
  L(root, ReclaimContext::kKswapd, LruType::kFile) = {1000, 900, 0, 0};
  root.detail.write_folios[static_cast<size_t>(ReclaimContext::kKswapd)][1] = 2;
  s.cgroups.push_back(root);

  CgroupTraceStats over;
  over.overflow = true;
  R(over, ReclaimKind::kMemcg).total = 2;
  R(over, ReclaimKind::kMemcg).reclaimed_pages = 64;
  R(over, ReclaimKind::kMemcg).stall.observe(4'000);
  R(over, ReclaimKind::kMemcg).stall.observe(4'000);
  s.cgroups.push_back(over);

  ProcessTraceStats cat;
  cat.pid = 4242;
  cat.comm = "cat";
  cat.cgroup = kCg;
  cat.reclaims[static_cast<size_t>(ReclaimKind::kMemcg)] = 3;
  cat.stall_ns = 20'000'032'000;
  cat.wake_requests = 7;
  cat.scanned_pages = 120;
  cat.reclaimed_pages = 90;
  cat.write_async = 3;
  s.processes.push_back(cat);
  ProcessTraceStats quick = cat;  // exited, less stalled
  quick.pid = 4243;
  quick.comm = "dd";
  quick.exited = true;
  quick.stall_ns = 1'000'000;
  s.processes.push_back(quick);
  ProcessTraceStats kswapd;
  kswapd.pid = 80;
  kswapd.comm = "kswapd0";
  kswapd.cgroup = "/";
  kswapd.kswapd = true;
  kswapd.kswapd_wakeups = 4;
  kswapd.kswapd_rewakeups = 1;
  kswapd.kswapd_awake_ns = 1'500'000'000;
  kswapd.scanned_pages = 1000;
  kswapd.reclaimed_pages = 900;
  kswapd.write_async = 2;
  s.processes.push_back(kswapd);
  ProcessTraceStats other;
  other.other = true;
  other.reclaims[static_cast<size_t>(ReclaimKind::kDirect)] = 1;
  other.stall_ns = 1'000'000'000'000;  // sorts last anyway
  s.processes.push_back(other);
  return s;
}

std::string render(const TraceSnapshot& s, metrics::Sink& sink) {
  renderTraceSnapshot(s, sink);
  std::string out;
  metrics::writeText(sink.families(), out);
  return out;
}

bool hasLine(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos ||
         text.rfind(line + "\n", 0) == 0;
}

std::string lbl(const char* kind) {
  return std::string("{cgroup=\"") + kCg + "\",kind=\"" + kind + "\"";
}

TEST(RenderTraceSnapshot, ReclaimCountsAndPages) {
  metrics::Sink sink;
  std::string t = render(sampleSnapshot(), sink);
  EXPECT_TRUE(hasLine(t, "memcg_vmscan_reclaim_total" + lbl("memcg") + "} 3")) << t;
  EXPECT_TRUE(hasLine(t, "memcg_vmscan_reclaimed_pages_total" + lbl("memcg") + "} 96"));
  EXPECT_TRUE(hasLine(t, "memcg_vmscan_reclaim_total" + lbl("proactive") + "} 1"));
  EXPECT_TRUE(hasLine(t, "memcg_vmscan_reclaim_unpaired_total" + lbl("proactive") + "} 1"));
  // Kinds without activity are not written.
  EXPECT_EQ(t.find("memcg_vmscan_reclaim_total" + lbl("direct")), std::string::npos);
  EXPECT_EQ(t.find("memcg_vmscan_reclaim_unpaired_total" + lbl("memcg")), std::string::npos);
  // Unknown and overflow series.
  EXPECT_TRUE(hasLine(t, "memcg_vmscan_reclaim_total{cgroup=\"_unknown\",kind=\"direct\"} 1"));
  EXPECT_TRUE(hasLine(t, "memcg_vmscan_reclaim_total{cgroup=\"_overflow\",kind=\"memcg\"} 2"));
  // An idle cgroup has no series at all.
  EXPECT_EQ(t.find("memcg_exporter_test_idle"), std::string::npos);
}

TEST(RenderTraceSnapshot, StallHistogramIsCumulative) {
  metrics::Sink sink;
  std::string t = render(sampleSnapshot(), sink);
  const std::string b = "memcg_vmscan_reclaim_stall_seconds_bucket" + lbl("memcg");
  EXPECT_TRUE(hasLine(t, b + ",le=\"1e-06\"} 0")) << t;
  EXPECT_TRUE(hasLine(t, b + ",le=\"2.5e-06\"} 1"));
  EXPECT_TRUE(hasLine(t, b + ",le=\"2.5e-05\"} 1"));
  EXPECT_TRUE(hasLine(t, b + ",le=\"5e-05\"} 2"));
  EXPECT_TRUE(hasLine(t, b + ",le=\"10\"} 2"));
  EXPECT_TRUE(hasLine(t, b + ",le=\"+Inf\"} 3"));
  EXPECT_TRUE(hasLine(t, "memcg_vmscan_reclaim_stall_seconds_count" + lbl("memcg") + "} 3"));
  EXPECT_TRUE(hasLine(t, "memcg_vmscan_reclaim_stall_seconds_sum" + lbl("memcg") + "} 20.000032"));
  // 22 bounds + "+Inf" per series.
  size_t n = 0;
  for (size_t pos = 0; (pos = t.find(b + ",le=", pos)) != std::string::npos; ++pos) ++n;
  EXPECT_EQ(n, kStallBoundsNs.size() + 1);
  // A kind with only unpaired ends has an empty histogram, still written.
  EXPECT_TRUE(hasLine(t, "memcg_vmscan_reclaim_stall_seconds_count" + lbl("proactive") + "} 0"));
}

TEST(RenderTraceSnapshot, LruNodeAndSelfMetrics) {
  metrics::Sink sink;
  std::string t = render(sampleSnapshot(), sink);
  const std::string c = std::string("{cgroup=\"") + kCg + "\"";
  EXPECT_TRUE(hasLine(t, "memcg_vmscan_lru_scanned_pages_total" + c +
                             ",context=\"memcg\",lru=\"file\"} 100"));
  EXPECT_TRUE(hasLine(t, "memcg_vmscan_lru_reclaimed_pages_total" + c +
                             ",context=\"memcg\",lru=\"anon\"} 0"));
  EXPECT_TRUE(hasLine(t, "memcg_vmscan_lru_dirty_pages_total" + c +
                             ",context=\"memcg\",lru=\"file\"} 5"));
  EXPECT_TRUE(hasLine(t, "memcg_vmscan_lru_writeback_pages_total" + c +
                             ",context=\"memcg\",lru=\"anon\"} 3"));
  EXPECT_EQ(t.find("memcg_vmscan_lru_dirty_pages_total" + c + ",context=\"memcg\",lru=\"anon\""),
            std::string::npos);
  EXPECT_TRUE(hasLine(t, "memcg_vmscan_lru_scanned_pages_total{cgroup=\"/\",context=\"kswapd\","
                         "lru=\"file\"} 1000"));
  EXPECT_TRUE(hasLine(t, "memcg_vmscan_kswapd_wakeup_requests_total" + c + "} 7"));
  EXPECT_TRUE(hasLine(t, "memcg_cgroup_tasks_attached_total" + c + "} 1"));
  EXPECT_TRUE(hasLine(t, "memcg_node_vmscan_kswapd_wakeups_total 4"));
  EXPECT_TRUE(hasLine(t, "memcg_node_vmscan_kswapd_awake_seconds_total 1.5"));
  EXPECT_TRUE(hasLine(t, "memcg_node_vmscan_wakeup_requests_total{order=\"0\"} 5"));
  EXPECT_TRUE(hasLine(t, "memcg_node_vmscan_wakeup_requests_total{order=\">=10\"} 1"));
  EXPECT_EQ(t.find("memcg_node_vmscan_wakeup_requests_total{order=\"1\"}"), std::string::npos);
  EXPECT_TRUE(hasLine(t, "memcg_trace_up 1"));
  EXPECT_TRUE(hasLine(t, "memcg_trace_events_total 100"));
  EXPECT_TRUE(hasLine(t, "memcg_trace_events_lost_total 2"));
  EXPECT_TRUE(hasLine(t, "memcg_trace_decode_errors_total 1"));
  EXPECT_TRUE(hasLine(t, "memcg_trace_read_errors_total 3"));
  EXPECT_TRUE(hasLine(t, "memcg_trace_reader_cpu_seconds_total 0.005"));
  EXPECT_TRUE(hasLine(t, "memcg_trace_pid_cache_entries 42"));
}

TEST(RenderTraceSnapshot, SynthesisedReclaimStat) {
  metrics::Sink sink;
  std::string t = render(sampleSnapshot(), sink);
  const std::string c = std::string("{cgroup=\"") + kCg + "\"";
  // limit = memcg reclaim: scanned from its LRU scans (file 100 + anon 20),
  // freed from its end events, elapsed = its stall sum.
  EXPECT_TRUE(hasLine(t, "memcg_vmscan_reclaim_stat_scanned_pages_total" + c +
                             ",context=\"limit\"} 120")) << t;
  EXPECT_TRUE(hasLine(t, "memcg_vmscan_reclaim_stat_freed_pages_total" + c +
                             ",context=\"limit\"} 96"));
  EXPECT_TRUE(hasLine(t, "memcg_vmscan_reclaim_stat_elapsed_seconds_total" + c +
                             ",context=\"limit\"} 20.000032"));
  EXPECT_TRUE(hasLine(t, "memcg_vmscan_reclaim_stat_scanned_pages_total" + c +
                             ",context=\"margin\"} 10"));
  EXPECT_TRUE(hasLine(t, "memcg_vmscan_reclaim_stat_freed_pages_total" + c +
                             ",context=\"margin\"} 8"));
  EXPECT_EQ(t.find("memcg_vmscan_reclaim_stat_scanned_pages_total" + c + ",context=\"soft\""),
            std::string::npos);
}

TEST(RenderTraceSnapshot, EveryFamilyIsDescribedAndLabelsOutliveTheSnapshot) {
  metrics::Sink sink;
  {
    TraceSnapshot s = sampleSnapshot();
    renderTraceSnapshot(s, sink);
  }  // the snapshot (and its path strings) is gone; the sink kept the labels
  std::string t;
  metrics::writeText(sink.families(), t);
  EXPECT_NE(t.find(std::string("cgroup=\"") + kCg + "\""), std::string::npos);
  auto descs = traceMetricDescs();
  std::set<const metrics::Desc*> known(descs.begin(), descs.end());
  std::set<std::string> names;
  for (const auto& f : sink.families()) {
    EXPECT_TRUE(known.count(f.desc)) << f.desc->name;
    EXPECT_LE(f.desc->labels.size(), metrics::kMaxLabels);
    names.insert(f.desc->name);
    if (f.desc->type == metrics::Type::kCounter) {
      EXPECT_TRUE(f.desc->name.ends_with("_total")) << f.desc->name;
    }
  }
  EXPECT_EQ(names.size(), sink.families().size());
}

TEST(RenderTraceSnapshot, DownWritesOnlyUpZero) {
  metrics::Sink sink;
  renderTraceDown(sink);
  std::string t;
  metrics::writeText(sink.families(), t);
  EXPECT_TRUE(hasLine(t, "memcg_trace_up 0"));
  EXPECT_EQ(sink.sampleCount(), 1u);
}

// The selection (cgroup_selection.h): only the scrape's cgroups, the same
// cgroup (id) where both know it, and the pseudo-series with the root only.
TEST(RenderTraceSnapshot, SelectionDecidesWhichCgroupsAreWritten) {
  TraceSnapshot s = sampleSnapshot();
  s.locks.enabled = true;
  LockCgroupSeries lx;
  lx.label = kCg;
  lx.rstat.contended = 4;
  LockCgroupSeries lu;
  lu.label = "_unknown";
  lu.rstat.contended = 5;
  s.locks.cgroups = {lx, lu};
  const std::string xs = "memcg_vmscan_reclaim_total" + lbl("memcg") + "} 3";
  const std::string xl = std::string("memcg_cgroup_rstat_lock_contended_total{cgroup=\"") + kCg +
                         "\"} 4";
  const std::string ul = "memcg_cgroup_rstat_lock_contended_total{cgroup=\"_unknown\"} 5";
  auto with = [&](const CgroupSelection& sel) {
    metrics::Sink sink;
    renderTraceSnapshot(s, sink, &sel);
    std::string out;
    metrics::writeText(sink.families(), out);
    return out;
  };
  {  // the default selection: everything, root included
    CgroupSelection sel;
    sel.add("/", 1);
    sel.add(kCg, 1234);
    const std::string t = with(sel);
    EXPECT_TRUE(hasLine(t, xs)) << t;
    EXPECT_TRUE(hasLine(t, xl)) << t;
    EXPECT_TRUE(hasLine(t, ul)) << t;
    EXPECT_TRUE(hasLine(t, "memcg_vmscan_reclaim_total{cgroup=\"_unknown\",kind=\"direct\"} 1"));
    EXPECT_TRUE(hasLine(t, "memcg_vmscan_reclaim_total{cgroup=\"_overflow\",kind=\"memcg\"} 2"));
    EXPECT_NE(t.find("memcg_vmscan_lru_scanned_pages_total{cgroup=\"/\""), std::string::npos);
  }
  {  // narrowed to the cgroup (e.g. --cgroup.include="/memcg_exporter_test_.*")
    CgroupSelection sel;
    sel.add(kCg, 1234);
    const std::string t = with(sel);
    EXPECT_TRUE(hasLine(t, xs)) << t;
    EXPECT_TRUE(hasLine(t, xl)) << t;
    EXPECT_EQ(t.find("{cgroup=\"_unknown\""), std::string::npos) << t;
    EXPECT_EQ(t.find("{cgroup=\"_overflow\""), std::string::npos) << t;
    EXPECT_EQ(t.find("{cgroup=\"/\""), std::string::npos) << t;
    // Node-wide series stay.
    EXPECT_TRUE(hasLine(t, "memcg_node_vmscan_kswapd_wakeups_total 4")) << t;
  }
  {  // the root only (e.g. --cgroup.max-depth=0)
    CgroupSelection sel;
    sel.add("/", 1);
    const std::string t = with(sel);
    EXPECT_EQ(t.find(kCg), std::string::npos) << t;
    EXPECT_TRUE(hasLine(t, ul)) << t;
  }
  {  // the path is another cgroup now (recreated: the walk found a new inode)
    CgroupSelection sel;
    sel.add(kCg, 99);
    EXPECT_EQ(with(sel).find("memcg_vmscan_reclaim_total" + lbl("memcg")), std::string::npos);
    CgroupSelection unknown_id;  // a walk that could not tell the id
    unknown_id.add(kCg, 0);
    EXPECT_TRUE(hasLine(with(unknown_id), xs));
  }
  {  // an empty tree: no cgroup at all
    const std::string t = with(CgroupSelection{});
    EXPECT_EQ(t.find("{cgroup=\""), std::string::npos) << t;
    EXPECT_TRUE(hasLine(t, "memcg_trace_up 1")) << t;
  }
}

TEST(RenderTraceSnapshot, PassesPromtool) {
#ifndef MEMCG_PROMTOOL
  GTEST_SKIP() << "promtool not found at configure time";
#else
  metrics::Sink sink;
  EXPECT_TRUE(memcg::testing::promtoolCheck(MEMCG_PROMTOOL, render(sampleSnapshot(), sink)));
#endif
}

TEST(RenderTraceSnapshot, ScanDetailSeries) {
  metrics::Sink sink;
  std::string t = render(sampleSnapshot(), sink);
  const std::string c = std::string("cgroup=\"") + kCg + "\"";
  EXPECT_TRUE(hasLine(t, "memcg_vmscan_lru_isolated_pages_total{" + c +
                             ",context=\"memcg\",lru=\"file\",list=\"inactive\"} 32")) << t;
  EXPECT_TRUE(hasLine(t, "memcg_vmscan_lru_isolate_scanned_pages_total{" + c +
                             ",context=\"memcg\",lru=\"file\",list=\"inactive\"} 40"));
  EXPECT_TRUE(hasLine(t, "memcg_vmscan_lru_active_scanned_pages_total{" + c +
                             ",context=\"memcg\",lru=\"anon\"} 16"));
  EXPECT_TRUE(hasLine(t, "memcg_vmscan_lru_deactivated_pages_total{" + c +
                             ",context=\"memcg\",lru=\"anon\"} 6"));
  EXPECT_TRUE(hasLine(t, "memcg_vmscan_write_folios_total{" + c +
                             ",context=\"memcg\",io=\"async\"} 3"));
  EXPECT_TRUE(hasLine(t, "memcg_vmscan_write_folios_total{cgroup=\"/\",context=\"kswapd\",io=\"async\"} 2"));
  EXPECT_TRUE(hasLine(t, "memcg_vmscan_throttled_total{" + c + ",reason=\"writeback\"} 1"));
  EXPECT_TRUE(hasLine(t, "memcg_vmscan_throttled_seconds_total{" + c + ",reason=\"writeback\"} 0.002"));
  EXPECT_TRUE(hasLine(t, "memcg_vmscan_slab_shrinks_total{" + c + ",context=\"memcg\"} 5"));
  EXPECT_TRUE(hasLine(t, "memcg_vmscan_slab_freed_objects_total{" + c + ",context=\"memcg\"} 100"));
  EXPECT_TRUE(hasLine(t, "memcg_vmscan_slab_shrink_seconds_total{" + c + ",context=\"memcg\"} 3e-06"));
  EXPECT_TRUE(hasLine(t, "memcg_vmscan_pageout_scanned_pages_total{" + c + "} 64"));
  EXPECT_TRUE(hasLine(t, "memcg_vmscan_pageout_reclaimed_pages_total{" + c + "} 60"));
  EXPECT_TRUE(hasLine(t, "memcg_trace_cgroups_removed_total 0"));
  // Zero detail is not written (the idle and unknown series have none).
  EXPECT_EQ(t.find("memcg_vmscan_write_folios_total{cgroup=\"_unknown\""), std::string::npos);
  EXPECT_EQ(t.find("io=\"sync\""), std::string::npos);
}

// --- reclaim report -----------------------------------------------------------

TEST(ReclaimReport, ProcessAndKswapdRows) {
  nlohmann::json j = reclaimReport(sampleSnapshot());
  const auto& p = j["processes"];
  ASSERT_EQ(p.size(), 3u) << j.dump(2);
  EXPECT_EQ(p[0]["pid"], 4242);
  EXPECT_EQ(p[0]["comm"], "cat");
  EXPECT_EQ(p[0]["cgroup"], kCg);
  EXPECT_EQ(p[0]["memcg_reclaims"], 3);
  EXPECT_EQ(p[0]["kswapd_wake_requests"], 7);
  EXPECT_EQ(p[0]["pages_scanned"], 120);
  EXPECT_EQ(p[0]["write_async_io"], 3);
  EXPECT_EQ(p[0]["write_sync_io"], 0);
  EXPECT_NEAR(p[0]["time_stalled_seconds"].get<double>(), 20.000032, 1e-9);
  EXPECT_EQ(p[1]["pid"], 4243);
  EXPECT_EQ(p[1]["exited"], true);
  EXPECT_TRUE(p[2]["pid"].is_null());  // "other" last despite its stall
  EXPECT_EQ(p[2]["comm"], "other");
  const auto& k = j["kswapd_instances"];
  ASSERT_EQ(k.size(), 1u);
  EXPECT_EQ(k[0]["comm"], "kswapd0");
  EXPECT_EQ(k[0]["kswapd_wakeups"], 4);
  EXPECT_EQ(k[0]["kswapd_rewakeups"], 1);
  EXPECT_EQ(k[0]["pages_reclaimed"], 900);
  EXPECT_EQ(k[0]["write_async_io"], 2);
  EXPECT_DOUBLE_EQ(k[0]["time_awake_seconds"].get<double>(), 1.5);
  const auto& s = j["summary"];
  EXPECT_EQ(s["memcg_reclaim_write_async_io"], 3);
  EXPECT_EQ(s["kswapd_reclaim_write_async_io"], 2);
  EXPECT_EQ(s["direct_reclaim_write_sync_io"], 0);
  EXPECT_EQ(s["throttled"], 1);
  EXPECT_DOUBLE_EQ(s["time_throttled_seconds"].get<double>(), 0.002);
  EXPECT_EQ(j["cgroups"][0]["write_async_io"], 3);
  EXPECT_EQ(j["cgroups"][0]["pageout_pages_reclaimed"], 60);
}

TEST(ReclaimReport, WindowSubtractsProcessRows) {
  TraceSnapshot base = sampleSnapshot();
  TraceSnapshot now = base;
  now.processes[0].reclaims[static_cast<size_t>(ReclaimKind::kMemcg)] += 2;
  now.processes[0].stall_ns += 5'000;
  ProcessTraceStats reused = now.processes[1];  // same pid, another program
  reused.comm = "sh";
  reused.exited = false;
  reused.stall_ns = 7;
  now.processes.push_back(reused);
  now.cgroups[1].detail.write_folios[static_cast<size_t>(ReclaimContext::kMemcg)][1] += 4;
  nlohmann::json j = reclaimReport(now, &base, 30.0);
  const auto& p = j["processes"];
  ASSERT_EQ(p.size(), 2u) << j.dump(2);
  EXPECT_EQ(p[0]["comm"], "cat");
  EXPECT_EQ(p[0]["memcg_reclaims"], 2);
  EXPECT_NEAR(p[0]["time_stalled_seconds"].get<double>(), 5e-6, 1e-15);
  EXPECT_EQ(p[1]["comm"], "sh");
  EXPECT_EQ(j["kswapd_instances"].size(), 0u);
  EXPECT_EQ(j["summary"]["memcg_reclaim_write_async_io"], 4);
}

TEST(ReclaimReport, WholeRun) {
  nlohmann::json j = reclaimReport(sampleSnapshot());
  EXPECT_TRUE(j["window_seconds"].is_null());
  EXPECT_EQ(j["tracing"]["events_lost"], 2);
  const auto& rows = j["cgroups"];
  // The idle cgroup has no row; the most stalled first (x: 20 s, unknown: 1 ms).
  ASSERT_EQ(rows.size(), 4u) << j.dump(2);
  EXPECT_EQ(rows[0]["cgroup"], kCg);
  EXPECT_EQ(rows[0]["id"], 1234);
  EXPECT_EQ(rows[0]["memcg_reclaims"], 3);
  EXPECT_EQ(rows[0]["proactive_reclaims"], 1);
  EXPECT_EQ(rows[0]["kswapd_wake_requests"], 7);
  EXPECT_EQ(rows[0]["pages_scanned"], 130);  // 100 + 20 (memcg) + 10 (proactive)
  EXPECT_EQ(rows[0]["pages_reclaimed"], 98);
  EXPECT_NEAR(rows[0]["time_stalled_seconds"].get<double>(), 20.000032, 1e-9);
  EXPECT_EQ(rows[0]["by_kind"]["memcg"]["stalls"], 3);
  EXPECT_EQ(rows[0]["by_kind"]["memcg"]["max_stall_bucket_le_seconds"], "+Inf");
  EXPECT_FALSE(rows[0]["by_kind"].contains("direct"));
  EXPECT_EQ(rows[1]["cgroup"], "_unknown");
  const auto& s = j["summary"];
  EXPECT_EQ(s["direct_reclaims"], 1);
  EXPECT_EQ(s["memcg_reclaims"], 5);  // x + overflow
  EXPECT_EQ(s["memcg_reclaim_pages_reclaimed"], 160);
  EXPECT_EQ(s["memcg_reclaim_file_pages_scanned"], 100);
  EXPECT_EQ(s["memcg_reclaim_anon_pages_scanned"], 20);
  EXPECT_EQ(s["wake_kswapd_requests"], 7);
  EXPECT_NEAR(s["time_stalled_direct_reclaim_seconds"].get<double>(), 0.001, 1e-12);
  EXPECT_EQ(s["kswapd_wakeups"], 4);
  EXPECT_EQ(s["kswapd_pages_scanned"], 1000);
  EXPECT_EQ(s["kswapd_pages_reclaimed"], 900);
  EXPECT_DOUBLE_EQ(s["time_kswapd_awake_seconds"].get<double>(), 1.5);
  EXPECT_EQ(j["kswapd"]["wakeup_requests_by_order"][">=10"], 1);
}

TEST(ReclaimReport, WindowSubtractsABaseline) {
  TraceSnapshot base = sampleSnapshot();
  TraceSnapshot now = base;
  // Later: x had two more memcg reclaims; nothing else moved.
  CgroupTraceStats& x = now.cgroups[1];
  ASSERT_EQ(x.path, kCg);
  R(x, ReclaimKind::kMemcg).total += 2;
  R(x, ReclaimKind::kMemcg).reclaimed_pages += 64;
  R(x, ReclaimKind::kMemcg).stall.observe(3'000);
  R(x, ReclaimKind::kMemcg).stall.observe(3'000);
  L(x, ReclaimContext::kMemcg, LruType::kFile).scanned_pages += 70;
  now.events_read += 10;
  // A cgroup that appeared after the baseline.
  CgroupTraceStats y;
  y.path = "/memcg_exporter_test_y";
  y.tasks_attached = 1;
  now.cgroups.push_back(y);

  TraceSnapshot d = subtractSnapshot(now, base);
  ASSERT_EQ(d.cgroups.size(), 2u);
  const ReclaimStats& m = d.cgroups[0].reclaim[static_cast<size_t>(ReclaimKind::kMemcg)];
  EXPECT_EQ(m.total, 2u);
  EXPECT_EQ(m.stall.count, 2u);
  EXPECT_EQ(m.stall.sum, 6'000u);
  EXPECT_EQ(m.stall.buckets[2], 2u);  // <= 5 us
  EXPECT_EQ(m.stall.buckets.back(), 0u);

  nlohmann::json j = reclaimReport(now, &base, 60.0);
  EXPECT_EQ(j["window_seconds"], 60.0);
  EXPECT_EQ(j["tracing"]["events"], 10);
  ASSERT_EQ(j["cgroups"].size(), 2u) << j.dump(2);
  EXPECT_EQ(j["cgroups"][0]["cgroup"], kCg);
  EXPECT_EQ(j["cgroups"][0]["memcg_reclaims"], 2);
  EXPECT_EQ(j["cgroups"][0]["pages_scanned"], 70);
  EXPECT_EQ(j["cgroups"][1]["cgroup"], "/memcg_exporter_test_y");
  EXPECT_EQ(j["summary"]["kswapd_wakeups"], 0);
  EXPECT_EQ(j["summary"]["direct_reclaims"], 0);
}

TEST(SnapshotHistory, PicksTheBaselineForAWindow) {
  using namespace std::chrono;
  SnapshotHistory h(minutes(1), minutes(5));
  auto t0 = SnapshotHistory::Clock::time_point{} + hours(1);
  EXPECT_FALSE(h.baseline(t0, minutes(1)));
  for (int i = 0; i <= 10; ++i) {
    TraceSnapshot s;
    s.events_read = static_cast<uint64_t>(i);
    h.maybeRecord(t0 + minutes(i), s);
    h.maybeRecord(t0 + minutes(i) + seconds(10), s);  // too soon: ignored
  }
  auto now = t0 + minutes(10) + seconds(30);
  auto b = h.baseline(now, minutes(2));
  ASSERT_TRUE(b);
  EXPECT_EQ(b->first.events_read, 8u);  // newest at or before now - 2 min
  EXPECT_DOUBLE_EQ(b->second, 150.0);
  // Older than kept (5 min): the oldest kept, with its real age.
  auto o = h.baseline(now, minutes(30));
  ASSERT_TRUE(o);
  EXPECT_EQ(o->first.events_read, 5u);
}

}  // namespace
}  // namespace memcg::tracing
