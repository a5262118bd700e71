// Aggregator semantics on hand-built event sequences (no kernel needed).
#include <gtest/gtest.h>

#include <map>

#include "tests/support/trace_records.h"
#include "tracing/aggregator.h"

namespace memcg::tracing {
namespace {

class FakeResolver : public CgroupResolver {
 public:
  explicit FakeResolver(std::map<int32_t, std::string>* m, int* calls)
      : m_(m), calls_(calls) {}
  std::optional<std::string> resolve(int32_t tid) override {
    ++*calls_;
    auto it = m_->find(tid);
    if (it == m_->end()) return std::nullopt;
    return it->second;
  }
  // Distinct ids per path (cgroups are keyed by id): "/" 1, "/a" 2, "/b" 3,
  // others 103, 104, ... in order of first sight.
  uint64_t idOf(const std::string& path) override {
    auto it = ids_.emplace(path, 100 + ids_.size()).first;
    return it->second;
  }
  std::string comm(int32_t tid) override { return "t" + std::to_string(tid); }

 private:
  std::map<int32_t, std::string>* m_;
  int* calls_;
  std::map<std::string, uint64_t> ids_{{"/", 1}, {"/a", 2}, {"/b", 3}};
};

using memcg::testing::ev;
Event endEv(EventType t, int32_t pid, uint64_t ts, uint64_t reclaimed) {
  Event e = ev(t, pid, ts);
  e.nr_reclaimed = reclaimed;
  return e;
}

const CgroupTraceStats* find(const TraceSnapshot& s, const std::string& path) {
  for (const auto& c : s.cgroups) {
    if (!c.unknown && !c.overflow && c.path == path) return &c;
  }
  return nullptr;
}
const CgroupTraceStats& unknownSeries(const TraceSnapshot& s) {
  for (const auto& c : s.cgroups) {
    if (c.unknown) return c;
  }
  static CgroupTraceStats none;
  return none;
}

class AggregatorTest : public ::testing::Test {
 protected:
  void SetUp() override { make({}); }
  void make(AggregatorOptions o) {
    o.hierarchy_id = 4;
    agg_ =
        std::make_unique<Aggregator>(o, std::make_unique<FakeResolver>(&map_, &calls_));
  }
  void apply(std::vector<Event> v) { agg_->apply(v); }
  std::map<int32_t, std::string> map_{{10, "/a"}, {20, "/b"}, {1, "/"}};
  int calls_ = 0;
  std::unique_ptr<Aggregator> agg_;
};

TEST_F(AggregatorTest, MemcgReclaimPairsIntoHistogram) {
  apply(
      {ev(EventType::kMemcgReclaimBegin, 10, 1'000'000),
       endEv(EventType::kMemcgReclaimEnd, 10, 1'003'000, 32),  // 3 us
       ev(EventType::kMemcgReclaimBegin, 10, 2'000'000),
       endEv(EventType::kMemcgReclaimEnd, 10, 2'000'000 + 2'000'000'000ull, 5)});  // 2 s
  auto s = agg_->snapshot();
  const auto* a = find(s, "/a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->id, 2u);
  const auto& r = a->reclaim[static_cast<size_t>(ReclaimKind::kMemcg)];
  EXPECT_EQ(r.total, 2u);
  EXPECT_EQ(r.reclaimed_pages, 37u);
  EXPECT_EQ(r.unpaired, 0u);
  EXPECT_EQ(r.stall.count, 2u);
  EXPECT_EQ(r.stall.sum, 3'000u + 2'000'000'000u);
  EXPECT_EQ(r.stall.buckets[2], 1u);   // <= 5 us
  EXPECT_EQ(r.stall.buckets[19], 1u);  // <= 2.5 s
  auto cum = r.stall.cumulative();
  EXPECT_EQ(cum[1], 0u);
  EXPECT_EQ(cum[2], 1u);
  EXPECT_EQ(cum.back(), 2u);
  EXPECT_DOUBLE_EQ(StallHistogram::exposedBound(0), 1e-6);
  EXPECT_DOUBLE_EQ(StallHistogram::exposedBound(kStallBoundsNs.size() - 1), 10.0);
  EXPECT_EQ(calls_, 1);  // one /proc lookup for pid 10, then cached
}

TEST_F(AggregatorTest, HistogramEdges) {
  StallHistogram h;
  h.observe(0);
  h.observe(1'000);  // exactly on the first bound
  h.observe(1'001);
  h.observe(20'000'000'000ull);  // above 10 s
  EXPECT_EQ(h.buckets[0], 2u);
  EXPECT_EQ(h.buckets[1], 1u);
  EXPECT_EQ(h.buckets.back(), 1u);
  EXPECT_EQ(h.count, 4u);
}

TEST_F(AggregatorTest, UnpairedEndCountsWithoutStall) {
  apply(
      {endEv(EventType::kDirectReclaimEnd, 20, 500, 8),
       ev(EventType::kDirectReclaimBegin, 20, 900),
       endEv(EventType::kDirectReclaimEnd, 20, 800, 1)});  // end before begin: clock skew
  auto s = agg_->snapshot();
  const auto& r = find(s, "/b")->reclaim[static_cast<size_t>(ReclaimKind::kDirect)];
  EXPECT_EQ(r.total, 2u);
  EXPECT_EQ(r.unpaired, 2u);
  EXPECT_EQ(r.stall.count, 0u);
}

TEST_F(AggregatorTest, NestedSoftlimitInsideDirect) {
  Event lru = ev(EventType::kLruShrinkInactive, 10, 150);
  lru.nr_scanned = 32;
  lru.nr_reclaimed = 16;
  lru.reclaim_flags = kReclaimWbFile;
  Event lru2 = lru;
  lru2.ts = 250;
  lru2.reclaim_flags = kReclaimWbAnon;
  apply({ev(EventType::kDirectReclaimBegin, 10, 100),
         ev(EventType::kSoftlimitReclaimBegin, 10, 120), lru,
         endEv(EventType::kSoftlimitReclaimEnd, 10, 200, 16), lru2,
         endEv(EventType::kDirectReclaimEnd, 10, 300, 20)});
  auto s = agg_->snapshot();
  const auto* a = find(s, "/a");
  EXPECT_EQ(a->reclaim[static_cast<size_t>(ReclaimKind::kSoftlimit)].stall.sum, 80u);
  EXPECT_EQ(a->reclaim[static_cast<size_t>(ReclaimKind::kDirect)].stall.sum, 200u);
  const auto& soft = a->lru[static_cast<size_t>(ReclaimContext::kSoftlimit)];
  EXPECT_EQ(soft[static_cast<size_t>(LruType::kFile)].scanned_pages, 32u);
  const auto& direct = a->lru[static_cast<size_t>(ReclaimContext::kDirect)];
  EXPECT_EQ(direct[static_cast<size_t>(LruType::kAnon)].reclaimed_pages, 16u);
}

TEST_F(AggregatorTest, AttachMovesTaskAndIgnoresOtherHierarchies) {
  Event other = ev(EventType::kCgroupAttach, 1, 5);
  other.dst_root = 1;  // cpu hierarchy
  other.dst_path = "/elsewhere";
  other.target_pid = 10;
  Event att = ev(EventType::kCgroupAttach, 1, 10);
  att.dst_root = 4;
  att.dst_id = 777;
  att.dst_path = "/moved";
  att.target_pid = 10;
  apply({ev(EventType::kMemcgReclaimBegin, 10, 1),
         endEv(EventType::kMemcgReclaimEnd, 10, 2, 1), other, att,
         ev(EventType::kMemcgReclaimBegin, 10, 20),
         endEv(EventType::kMemcgReclaimEnd, 10, 30, 4)});
  auto s = agg_->snapshot();
  EXPECT_EQ(find(s, "/elsewhere"), nullptr);
  const auto* moved = find(s, "/moved");
  ASSERT_NE(moved, nullptr);
  EXPECT_EQ(moved->id, 777u);
  EXPECT_EQ(moved->tasks_attached, 1u);
  EXPECT_EQ(moved->reclaim[1].total, 1u);
  EXPECT_EQ(moved->reclaim[1].reclaimed_pages, 4u);
  EXPECT_EQ(find(s, "/a")->reclaim[1].total, 1u);
}

TEST_F(AggregatorTest, ForkInheritsAndExitForgetsAtRoundEnd) {
  Event fork = ev(EventType::kProcessFork, 10, 1);
  fork.target_pid = 11;  // not in the resolver: only fork can attribute it
  Event exit = ev(EventType::kProcessExit, 11, 5);
  exit.target_pid = 11;
  apply({ev(EventType::kMemcgReclaimBegin, 10, 0), fork,
         ev(EventType::kMemcgReclaimBegin, 11, 2), exit,
         endEv(EventType::kMemcgReclaimEnd, 11, 4, 9)});
  // The end arrives after the exit in the same round (another CPU): still /a.
  auto s = agg_->snapshot();
  EXPECT_EQ(find(s, "/a")->reclaim[1].reclaimed_pages, 9u);
  EXPECT_EQ(s.aggregator.pid_cache_entries, 2u);
  agg_->endRound();
  // A record of 11 that another CPU's page only delivers in the next round
  // is still attributed (exits are forgotten one round late).
  apply({endEv(EventType::kMemcgReclaimEnd, 11, 4, 1)});
  EXPECT_EQ(find(agg_->snapshot(), "/a")->reclaim[1].reclaimed_pages, 10u);
  agg_->endRound();
  s = agg_->snapshot();
  EXPECT_EQ(s.aggregator.pid_cache_entries, 1u);
  // Pid 11 reused by a task we cannot resolve: goes to "unknown", not /a.
  apply({endEv(EventType::kMemcgReclaimEnd, 11, 10, 3)});
  s = agg_->snapshot();
  EXPECT_EQ(unknownSeries(s).reclaim[1].reclaimed_pages, 3u);
  EXPECT_EQ(s.aggregator.pid_lookup_failures, 1u);
}

TEST_F(AggregatorTest, CgroupCapFoldsIntoOverflow) {
  AggregatorOptions o;
  o.max_cgroups = 2;
  make(o);
  for (int i = 0; i < 5; ++i) {
    map_[100 + i] = "/c" + std::to_string(i);
    apply({endEv(EventType::kMemcgReclaimEnd, 100 + i, 1, 1)});
  }
  auto s = agg_->snapshot();
  size_t named = 0;
  uint64_t overflow_total = 0;
  for (const auto& c : s.cgroups) {
    if (c.overflow) overflow_total = c.reclaim[1].total;
    if (!c.overflow && !c.unknown) ++named;
  }
  EXPECT_EQ(named, 2u);
  EXPECT_EQ(overflow_total, 3u);
  EXPECT_EQ(s.aggregator.overflow_events, 3u);
}

TEST_F(AggregatorTest, PidCapResetsCache) {
  AggregatorOptions o;
  o.max_pids = 2;
  make(o);
  apply({endEv(EventType::kMemcgReclaimEnd, 10, 1, 1),
         endEv(EventType::kMemcgReclaimEnd, 20, 1, 1),
         endEv(EventType::kMemcgReclaimEnd, 1, 1, 1)});
  auto s = agg_->snapshot();
  EXPECT_EQ(s.aggregator.pid_cache_resets, 1u);
  EXPECT_LE(s.aggregator.pid_cache_entries, 2u);
}

TEST_F(AggregatorTest, KswapdAndWakeups) {
  Event wake = ev(EventType::kKswapdWake, 1, 1'000);
  Event rewake = ev(EventType::kKswapdWake, 1, 2'000);
  Event sleep = ev(EventType::kKswapdSleep, 1, 11'000);
  Event lru = ev(EventType::kLruShrinkInactive, 1, 5'000);
  lru.nr_scanned = 100;
  lru.reclaim_flags = kReclaimWbFile;
  Event req = ev(EventType::kWakeupKswapd, 10, 500);
  req.order = 3;
  Event req_big = req;
  req_big.order = 15;
  apply({req, req_big, wake, rewake, lru, sleep});
  auto s = agg_->snapshot();
  EXPECT_EQ(s.node.kswapd_wakeups, 2u);
  EXPECT_EQ(s.node.kswapd_awake_ns, 10'000u);
  EXPECT_EQ(s.node.wakeup_requests_by_order[3], 1u);
  EXPECT_EQ(s.node.wakeup_requests_by_order[kWakeupOrders - 1], 1u);
  EXPECT_EQ(find(s, "/a")->kswapd_wakeup_requests, 2u);
  EXPECT_EQ(
      find(s, "/")->lru[static_cast<size_t>(ReclaimContext::kKswapd)][1].scanned_pages,
      100u);
}

TEST_F(AggregatorTest, ProactiveReclaimerToldApart) {
  agg_->registerProactiveReclaimer(20);
  apply({ev(EventType::kMemcgReclaimBegin, 20, 1),
         endEv(EventType::kMemcgReclaimEnd, 20, 5, 7),
         ev(EventType::kMemcgReclaimBegin, 10, 1),
         endEv(EventType::kMemcgReclaimEnd, 10, 5, 2)});
  auto s = agg_->snapshot();
  EXPECT_EQ(find(s, "/b")
                ->reclaim[static_cast<size_t>(ReclaimKind::kProactive)]
                .reclaimed_pages,
            7u);
  EXPECT_EQ(find(s, "/b")->reclaim[static_cast<size_t>(ReclaimKind::kMemcg)].total, 0u);
  EXPECT_EQ(find(s, "/a")->reclaim[static_cast<size_t>(ReclaimKind::kMemcg)].total, 1u);
  agg_->unregisterProactiveReclaimer(20);
  apply({endEv(EventType::kMemcgReclaimEnd, 20, 9, 1)});
  s = agg_->snapshot();
  EXPECT_EQ(find(s, "/b")->reclaim[static_cast<size_t>(ReclaimKind::kMemcg)].total, 1u);
}

// --- detail events, report rows, rmdir, proactive episodes --------------------

constexpr size_t kCtxMemcg = static_cast<size_t>(ReclaimContext::kMemcg);
constexpr size_t kCtxKswapd = static_cast<size_t>(ReclaimContext::kKswapd);
constexpr size_t kCtxOther = static_cast<size_t>(ReclaimContext::kOther);

TEST_F(AggregatorTest, ScanDetailByContext) {
  Event iso = ev(EventType::kLruIsolate, 10, 2);
  iso.nr_scanned = 40;
  iso.nr_taken = 32;
  iso.lru = 2;  // inactive_file
  Event iso_bad = iso;
  iso_bad.lru = kLruUnevictable;
  Event act = ev(EventType::kLruShrinkActive, 10, 3);
  act.nr_taken = 16;
  act.nr_deactivated = 6;
  act.reclaim_flags = kReclaimWbAnon;
  Event wasync = ev(EventType::kWriteFolio, 10, 4);
  wasync.reclaim_flags = kReclaimWbFile | kReclaimWbAsync;
  Event wsync = ev(EventType::kWriteFolio, 1, 4);
  wsync.reclaim_flags = kReclaimWbAnon | kReclaimWbSync;
  Event thr = ev(EventType::kThrottled, 10, 5);
  thr.reason = 1u << 1;  // isolated
  thr.delayed_us = 1500;
  Event thr_none = ev(EventType::kThrottled, 10, 5);
  thr_none.reason = 0;
  Event slab_end = ev(EventType::kShrinkSlabEnd, 10, 9);
  slab_end.freed = 12;
  Event slab_stop = ev(EventType::kShrinkSlabEnd, 10, 12);  // no start: no time
  slab_stop.freed = -2;
  Event rp = ev(EventType::kReclaimPages, 20, 20);
  rp.nr_scanned = 64;
  rp.nr_reclaimed = 60;
  Event kwake = ev(EventType::kKswapdWake, 1, 1);
  apply({kwake, ev(EventType::kMemcgReclaimBegin, 10, 1), iso, iso_bad, act, wasync, wsync, thr,
         thr_none, ev(EventType::kShrinkSlabStart, 10, 6), slab_end, slab_stop,
         endEv(EventType::kMemcgReclaimEnd, 10, 15, 40), rp});
  auto s = agg_->snapshot();
  const ScanDetail& a = find(s, "/a")->detail;
  EXPECT_EQ(a.isolate[kCtxMemcg][1][0].scanned_pages, 40u);  // file, inactive
  EXPECT_EQ(a.isolate[kCtxMemcg][1][0].taken_pages, 32u);
  uint64_t iso_total = 0;
  for (const auto& ctx : a.isolate)
    for (const auto& l : ctx)
      for (const auto& li : l) iso_total += li.taken_pages;
  EXPECT_EQ(iso_total, 32u);  // unevictable ignored
  EXPECT_EQ(a.active[kCtxMemcg][0].taken_pages, 16u);
  EXPECT_EQ(a.active[kCtxMemcg][0].deactivated_pages, 6u);
  EXPECT_EQ(a.write_folios[kCtxMemcg][1], 1u);  // async
  EXPECT_EQ(a.write_folios[kCtxMemcg][0], 0u);
  EXPECT_EQ(find(s, "/")->detail.write_folios[kCtxKswapd][0], 1u);  // kswapd, sync
  EXPECT_EQ(a.throttled[1].count, 1u);
  EXPECT_EQ(a.throttled[1].delayed_us, 1500u);
  EXPECT_EQ(a.throttled[kThrottleSlots - 1].count, 1u);  // no reason bit: "other"
  EXPECT_EQ(a.slab[kCtxMemcg].calls, 2u);
  EXPECT_EQ(a.slab[kCtxMemcg].freed_objects, 12u);
  EXPECT_EQ(a.slab[kCtxMemcg].ns, 3u);
  const ScanDetail& b = find(s, "/b")->detail;
  EXPECT_EQ(b.pageout_scanned_pages, 64u);
  EXPECT_EQ(b.pageout_reclaimed_pages, 60u);
  EXPECT_EQ(b.slab[kCtxOther].calls, 0u);
}

const ProcessTraceStats* proc(const TraceSnapshot& s, int32_t pid) {
  for (const auto& p : s.processes) {
    if (!p.other && p.pid == pid) return &p;
  }
  return nullptr;
}
const ProcessTraceStats& otherRow(const TraceSnapshot& s) {
  for (const auto& p : s.processes) {
    if (p.other) return p;
  }
  static ProcessTraceStats none;
  return none;
}

TEST_F(AggregatorTest, ProcessRowsLikeThePostprocessScript) {
  Event lru = ev(EventType::kLruShrinkInactive, 10, 3);
  lru.nr_scanned = 32;
  lru.nr_reclaimed = 30;
  lru.reclaim_flags = kReclaimWbFile;
  Event w = ev(EventType::kWriteFolio, 10, 4);
  w.reclaim_flags = kReclaimWbAsync;
  Event req = ev(EventType::kWakeupKswapd, 10, 1);
  Event klru = ev(EventType::kLruShrinkInactive, 1, 30);
  klru.nr_scanned = 100;
  klru.nr_reclaimed = 90;
  apply({req, ev(EventType::kDirectReclaimBegin, 10, 2), lru, w,
         endEv(EventType::kDirectReclaimEnd, 10, 12, 30),
         ev(EventType::kMemcgReclaimBegin, 10, 20), endEv(EventType::kMemcgReclaimEnd, 10, 25, 1),
         ev(EventType::kKswapdWake, 1, 20), ev(EventType::kKswapdWake, 1, 25), klru,
         ev(EventType::kKswapdSleep, 1, 60)});
  auto s = agg_->snapshot();
  const ProcessTraceStats* p = proc(s, 10);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->comm, "t10");
  EXPECT_EQ(p->cgroup, "/a");
  EXPECT_FALSE(p->kswapd);
  EXPECT_EQ(p->reclaims[static_cast<size_t>(ReclaimKind::kDirect)], 1u);
  EXPECT_EQ(p->reclaims[static_cast<size_t>(ReclaimKind::kMemcg)], 1u);
  EXPECT_EQ(p->stall_ns, 15u);  // 10 direct + 5 memcg
  EXPECT_EQ(p->wake_requests, 1u);
  EXPECT_EQ(p->scanned_pages, 32u);
  EXPECT_EQ(p->reclaimed_pages, 30u);
  EXPECT_EQ(p->write_async, 1u);
  const ProcessTraceStats* k = proc(s, 1);
  ASSERT_NE(k, nullptr);
  EXPECT_TRUE(k->kswapd);
  EXPECT_EQ(k->kswapd_wakeups, 2u);
  EXPECT_EQ(k->kswapd_rewakeups, 1u);
  EXPECT_EQ(k->kswapd_awake_ns, 40u);
  EXPECT_EQ(k->scanned_pages, 100u);
  EXPECT_TRUE(otherRow(s).other);
}

TEST_F(AggregatorTest, ExitedProcessesFoldIntoTopAndOther) {
  AggregatorOptions o;
  o.max_exited_processes = 1;
  o.max_processes = 2;
  make(o);
  map_[30] = "/c";
  // 10 stalls 5 ns, 20 stalls 50 ns, 30 is past the live cap (goes to other).
  apply({ev(EventType::kMemcgReclaimBegin, 10, 1), endEv(EventType::kMemcgReclaimEnd, 10, 6, 1),
         ev(EventType::kMemcgReclaimBegin, 20, 1), endEv(EventType::kMemcgReclaimEnd, 20, 51, 2),
         ev(EventType::kMemcgReclaimBegin, 30, 1), endEv(EventType::kMemcgReclaimEnd, 30, 8, 3)});
  auto s = agg_->snapshot();
  EXPECT_EQ(s.processes.size(), 3u);  // 10, 20, other
  EXPECT_EQ(otherRow(s).reclaims[1], 1u);
  EXPECT_EQ(otherRow(s).stall_ns, 7u);
  Event x10 = ev(EventType::kProcessExit, 10, 60);
  x10.target_pid = 10;
  Event x20 = ev(EventType::kProcessExit, 20, 61);
  x20.target_pid = 20;
  apply({x10, x20});
  agg_->endRound();
  agg_->endRound();  // forgotten one round late
  s = agg_->snapshot();
  ASSERT_EQ(s.processes.size(), 2u);  // exited top (20), other
  const ProcessTraceStats* top = proc(s, 20);
  ASSERT_NE(top, nullptr);
  EXPECT_TRUE(top->exited);
  EXPECT_EQ(top->cgroup, "/b");
  EXPECT_EQ(top->stall_ns, 50u);
  EXPECT_EQ(otherRow(s).reclaims[1], 2u);  // 30 (cap) + 10 (exited, less stalled)
  EXPECT_EQ(otherRow(s).stall_ns, 12u);
  // The live set has room again.
  apply({ev(EventType::kMemcgReclaimBegin, 30, 70), endEv(EventType::kMemcgReclaimEnd, 30, 71, 1)});
  EXPECT_NE(proc(agg_->snapshot(), 30), nullptr);
}

TEST_F(AggregatorTest, IdleTaskWorkGoesToTheOtherRow) {
  map_[0] = "/";
  apply({ev(EventType::kWakeupKswapd, 0, 1)});  // an atomic allocation in irq on an idle CPU
  auto s = agg_->snapshot();
  EXPECT_EQ(proc(s, 0), nullptr);
  EXPECT_EQ(otherRow(s).wake_requests, 1u);
}

TEST_F(AggregatorTest, CgroupRmdirDropsTheSeries) {
  apply({endEv(EventType::kMemcgReclaimEnd, 10, 1, 5),
         endEv(EventType::kMemcgReclaimEnd, 20, 1, 6)});
  ASSERT_NE(find(agg_->snapshot(), "/a"), nullptr);
  const int calls_before = calls_;
  Event other = ev(EventType::kCgroupRmdir, 1, 2);
  other.dst_root = 1;  // another hierarchy
  other.dst_path = "/a";
  Event wrong_id = ev(EventType::kCgroupRmdir, 1, 3);
  wrong_id.dst_root = 4;
  wrong_id.dst_path = "/a";
  wrong_id.dst_id = 999;  // the fake's id of "/a" is 2
  apply({other, wrong_id});
  ASSERT_NE(find(agg_->snapshot(), "/a"), nullptr);
  Event rm = wrong_id;
  rm.dst_id = 2;
  apply({rm});
  auto s = agg_->snapshot();
  EXPECT_EQ(find(s, "/a"), nullptr);
  EXPECT_NE(find(s, "/b"), nullptr);
  EXPECT_EQ(s.aggregator.cgroups_removed, 1u);
  // The stale pid entry was dropped: pid 10 is looked up again.
  map_[10] = "/a2";
  apply({endEv(EventType::kMemcgReclaimEnd, 10, 5, 1)});
  EXPECT_EQ(calls_, calls_before + 1);
  s = agg_->snapshot();
  ASSERT_NE(find(s, "/a2"), nullptr);
  EXPECT_EQ(find(s, "/a2")->reclaim[1].total, 1u);  // reused slot starts from zero
  EXPECT_EQ(s.cgroups.size(), 3u);                  // unknown, /b, /a2
  // A recreated "/a" is a new series.
  map_[11] = "/a";
  apply({endEv(EventType::kMemcgReclaimEnd, 11, 6, 1)});
  EXPECT_EQ(find(agg_->snapshot(), "/a")->reclaim[1].reclaimed_pages, 1u);
}

TEST_F(AggregatorTest, ProactiveEpisodeChargesTheTarget) {
  // Not a registered reclaimer: no episode.
  EXPECT_FALSE(agg_->beginProactiveTarget(20, "/target", 100));
  agg_->registerProactiveReclaimer(20);  // lives in /b
  ASSERT_TRUE(agg_->beginProactiveTarget(20, "/target", 100));
  agg_->endProactiveTarget(20, 300);
  Event lru = ev(EventType::kLruShrinkInactive, 20, 160);
  lru.nr_scanned = 64;
  lru.nr_reclaimed = 60;
  lru.reclaim_flags = kReclaimWbFile;
  apply({ev(EventType::kMemcgReclaimBegin, 20, 150), lru,
         endEv(EventType::kMemcgReclaimEnd, 20, 200, 60),
         // After the episode: the reclaimer's own cgroup again.
         ev(EventType::kMemcgReclaimBegin, 20, 400), endEv(EventType::kMemcgReclaimEnd, 20, 410, 3),
         // The workload's own reclaim in the target stays kind memcg.
         ev(EventType::kMemcgReclaimBegin, 10, 150), endEv(EventType::kMemcgReclaimEnd, 10, 170, 9)});
  auto s = agg_->snapshot();
  const auto* t = find(s, "/target");
  ASSERT_NE(t, nullptr);
  const auto pro = static_cast<size_t>(ReclaimKind::kProactive);
  EXPECT_EQ(t->reclaim[pro].total, 1u);
  EXPECT_EQ(t->reclaim[pro].reclaimed_pages, 60u);
  EXPECT_EQ(t->reclaim[pro].stall.sum, 50u);
  EXPECT_EQ(t->reclaim[1].total, 0u);
  EXPECT_EQ(t->lru[static_cast<size_t>(ReclaimContext::kProactive)][1].scanned_pages, 64u);
  EXPECT_EQ(find(s, "/b")->reclaim[pro].total, 1u);
  EXPECT_EQ(find(s, "/b")->reclaim[pro].reclaimed_pages, 3u);
  EXPECT_EQ(find(s, "/a")->reclaim[1].total, 1u);
  EXPECT_EQ(s.aggregator.proactive_targeted, 2u);  // the lru scan and the end
  // Without a mono trace clock the wall-clock API declines.
  EXPECT_FALSE(agg_->beginProactiveTarget(20, "/target"));
}

}  // namespace
}  // namespace memcg::tracing
