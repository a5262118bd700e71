// Aggregator semantics on hand-built event sequences (no kernel needed).
#include <gtest/gtest.h>

#include <map>

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
  uint64_t idOf(const std::string& path) override { return path.size(); }

 private:
  std::map<int32_t, std::string>* m_;
  int* calls_;
};

Event ev(EventType t, int32_t pid, uint64_t ts) {
  Event e;
  e.type = t;
  e.pid = pid;
  e.ts = ts;
  return e;
}
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
  EXPECT_EQ(r.stall.sum_ns, 3'000u + 2'000'000'000u);
  EXPECT_EQ(r.stall.buckets[2], 1u);   // <= 5 us
  EXPECT_EQ(r.stall.buckets[19], 1u);  // <= 2.5 s
  auto cum = r.stall.cumulative();
  EXPECT_EQ(cum[1], 0u);
  EXPECT_EQ(cum[2], 1u);
  EXPECT_EQ(cum.back(), 2u);
  EXPECT_DOUBLE_EQ(StallHistogram::boundSeconds(0), 1e-6);
  EXPECT_DOUBLE_EQ(StallHistogram::boundSeconds(kStallBoundsNs.size() - 1), 10.0);
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
  EXPECT_EQ(a->reclaim[static_cast<size_t>(ReclaimKind::kSoftlimit)].stall.sum_ns, 80u);
  EXPECT_EQ(a->reclaim[static_cast<size_t>(ReclaimKind::kDirect)].stall.sum_ns, 200u);
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

}  // namespace
}  // namespace memcg::tracing
