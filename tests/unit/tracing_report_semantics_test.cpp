// What the reclaim report and the unpaired-events metric mean, on
// hand-built event sequences through the real Aggregator, reclaimReport()
// and renderTraceSnapshot(): unpaired begins/ends by reason, soft-limit
// reclaim kept apart from the stall it runs inside, kswapd wakeups vs
// re-wakeups, and whose kswapd wake requests the summary counts.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "metrics/text_format.h"
#include "tests/support/trace_records.h"
#include "tracing/aggregator.h"
#include "tracing/reclaim_report.h"
#include "tracing/trace_metrics.h"

namespace memcg::tracing {
namespace {

using memcg::testing::ev;

class MapResolver : public CgroupResolver {
 public:
  std::optional<std::string> resolve(int32_t tid) override {
    if (tid == 5) return "/";  // kswapd
    return tid < 20 ? "/a" : "/b";
  }
  uint64_t idOf(const std::string& path) override { return path == "/" ? 1 : path == "/a" ? 2 : 3; }
  std::string comm(int32_t tid) override { return tid == 5 ? "kswapd0" : "t" + std::to_string(tid); }
};

Event endEv(EventType t, int32_t pid, uint64_t ts) {
  Event e = ev(t, pid, ts);
  e.nr_reclaimed = 1;
  return e;
}

class ReportSemantics : public ::testing::Test {
 protected:
  void SetUp() override {
    AggregatorOptions o;
    o.hierarchy_id = 4;
    agg_ = std::make_unique<Aggregator>(o, std::make_unique<MapResolver>());
  }
  void apply(std::vector<Event> v) { agg_->apply(v); }
  uint64_t unpaired(const TraceSnapshot& s, ReclaimKind k, UnpairedReason r) {
    return s.aggregator.unpaired[static_cast<size_t>(k)][static_cast<size_t>(r)];
  }
  std::string text(const TraceSnapshot& s) {
    metrics::Sink sink;
    renderTraceSnapshot(s, sink);
    std::string t;
    metrics::writeText(sink.families(), t);
    return t;
  }
  static nlohmann::json rowOf(const nlohmann::json& rows, int pid) {
    for (const auto& r : rows) {
      if (r["pid"].is_number() && r["pid"].get<int>() == pid) return r;
    }
    return nullptr;
  }
  std::unique_ptr<Aggregator> agg_;
};

TEST_F(ReportSemantics, InOrderPairsLeaveNoUnpaired) {
  apply({ev(EventType::kMemcgReclaimBegin, 10, 100), endEv(EventType::kMemcgReclaimEnd, 10, 200),
         ev(EventType::kDirectReclaimBegin, 21, 300), endEv(EventType::kDirectReclaimEnd, 21, 450)});
  auto s = agg_->snapshot();
  for (const auto& kind : s.aggregator.unpaired) {
    for (uint64_t n : kind) EXPECT_EQ(n, 0u);
  }
  const std::string t = text(s);
  EXPECT_NE(t.find("memcg_vmscan_unpaired_events_total{kind=\"memcg\",reason=\"end_without_begin\"} 0\n"),
            std::string::npos)
      << t;
}

TEST_F(ReportSemantics, UnpairedEventsByReason) {
  apply({
      // pid 10: an end first (its begin predates tracing), then a pair,
      // then an end with no begin open (its begin applied late or lost).
      endEv(EventType::kMemcgReclaimEnd, 10, 100),
      ev(EventType::kMemcgReclaimBegin, 10, 200),
      endEv(EventType::kMemcgReclaimEnd, 10, 300),
      endEv(EventType::kMemcgReclaimEnd, 10, 400),
      // pid 21: two begins, one end: the first begin never ended.
      ev(EventType::kDirectReclaimBegin, 21, 500),
      ev(EventType::kDirectReclaimBegin, 21, 600),
      endEv(EventType::kDirectReclaimEnd, 21, 700),
  });
  auto s = agg_->snapshot();
  EXPECT_EQ(unpaired(s, ReclaimKind::kMemcg, UnpairedReason::kEndBeforeAnyBegin), 1u);
  EXPECT_EQ(unpaired(s, ReclaimKind::kMemcg, UnpairedReason::kEndWithoutBegin), 1u);
  EXPECT_EQ(unpaired(s, ReclaimKind::kDirect, UnpairedReason::kBeginWithoutEnd), 1u);
  EXPECT_EQ(unpaired(s, ReclaimKind::kDirect, UnpairedReason::kEndWithoutBegin), 0u);
  const std::string t = text(s);
  EXPECT_NE(t.find("memcg_vmscan_unpaired_events_total{kind=\"memcg\",reason=\"end_without_begin\"} 1\n"),
            std::string::npos);
  EXPECT_NE(
      t.find("memcg_vmscan_unpaired_events_total{kind=\"direct\",reason=\"begin_without_end\"} 1\n"),
      std::string::npos);
  const nlohmann::json j = reclaimReport(s);
  EXPECT_EQ(j["tracing"]["unpaired_events"]["memcg"]["end_before_any_begin"], 1);
  EXPECT_EQ(j["tracing"]["unpaired_events"]["direct"]["begin_without_end"], 1);
}

TEST_F(ReportSemantics, BeginOpenTooLongIsCountedOnceAndStillPairs) {
  const uint64_t s0 = 1'000'000'000;
  apply({ev(EventType::kMemcgReclaimBegin, 10, s0),
         ev(EventType::kDirectReclaimBegin, 21, s0 + kUnpairedBoundNs),
         endEv(EventType::kDirectReclaimEnd, 21, s0 + kUnpairedBoundNs + 1000),
         ev(EventType::kMemcgReclaimBegin, 11, s0 + kUnpairedBoundNs + 2000)});
  for (int i = 0; i < 64; ++i) agg_->endRound();  // the check runs every 32 rounds
  auto s = agg_->snapshot();
  EXPECT_EQ(unpaired(s, ReclaimKind::kMemcg, UnpairedReason::kBeginOpenTooLong), 1u);  // pid 10 only
  apply({endEv(EventType::kMemcgReclaimEnd, 10, s0 + kUnpairedBoundNs + 5000)});
  s = agg_->snapshot();
  EXPECT_EQ(unpaired(s, ReclaimKind::kMemcg, UnpairedReason::kBeginOpenTooLong), 1u);
  EXPECT_EQ(unpaired(s, ReclaimKind::kMemcg, UnpairedReason::kEndWithoutBegin), 0u);
  const auto& a = s.cgroups;
  uint64_t stalls = 0;
  for (const auto& c : a) stalls += c.reclaim[static_cast<size_t>(ReclaimKind::kMemcg)].stall.count;
  EXPECT_EQ(stalls, 1u);  // the long pass is still measured
}

// Soft-limit reclaim runs inside direct reclaim (mm/vmscan.c shrink_zones):
// its time is part of the direct stall, so the task's and the cgroup's
// stalled time count it once, and it is reported apart.
TEST_F(ReportSemantics, SoftlimitInsideDirectIsNotAddedOnTop) {
  apply({ev(EventType::kDirectReclaimBegin, 10, 1000),
         ev(EventType::kSoftlimitReclaimBegin, 10, 2000),
         endEv(EventType::kSoftlimitReclaimEnd, 10, 7000),
         endEv(EventType::kDirectReclaimEnd, 10, 10'000)});
  const nlohmann::json j = reclaimReport(agg_->snapshot());
  const nlohmann::json p = rowOf(j["processes"], 10);
  ASSERT_TRUE(p.is_object()) << j.dump();
  EXPECT_DOUBLE_EQ(p["time_stalled_seconds"].get<double>(), 9000e-9);
  EXPECT_DOUBLE_EQ(p["time_softlimit_reclaim_seconds"].get<double>(), 5000e-9);
  EXPECT_EQ(p["direct_reclaims"], 1);
  EXPECT_EQ(p["softlimit_reclaims"], 1);
  ASSERT_EQ(j["cgroups"].size(), 1u);
  EXPECT_DOUBLE_EQ(j["cgroups"][0]["time_stalled_seconds"].get<double>(), 9000e-9);
  EXPECT_DOUBLE_EQ(j["cgroups"][0]["time_softlimit_reclaim_seconds"].get<double>(), 5000e-9);
  EXPECT_DOUBLE_EQ(j["summary"]["time_stalled_seconds"].get<double>(), 9000e-9);
  EXPECT_DOUBLE_EQ(j["summary"]["time_stalled_direct_reclaim_seconds"].get<double>(), 9000e-9);
  EXPECT_DOUBLE_EQ(j["summary"]["time_stalled_softlimit_reclaim_seconds"].get<double>(), 5000e-9);
}

// Soft-limit reclaim by kswapd is kswapd's work, not a task's stall.
TEST_F(ReportSemantics, SoftlimitByKswapdIsNotATaskStall) {
  apply({ev(EventType::kKswapdWake, 5, 100), ev(EventType::kSoftlimitReclaimBegin, 5, 200),
         endEv(EventType::kSoftlimitReclaimEnd, 5, 900), ev(EventType::kKswapdSleep, 5, 1000)});
  const nlohmann::json j = reclaimReport(agg_->snapshot());
  ASSERT_EQ(j["kswapd_instances"].size(), 1u) << j.dump();
  EXPECT_DOUBLE_EQ(j["kswapd_instances"][0]["time_softlimit_reclaim_seconds"].get<double>(), 700e-9);
  EXPECT_DOUBLE_EQ(j["summary"]["time_stalled_seconds"].get<double>(), 0.0);
}

// As trace-vmscan-postprocess prints them: "wakeups" counts every
// mm_vmscan_kswapd_wake, "re-wakeups" those while kswapd was already awake.
TEST_F(ReportSemantics, KswapdWakeupsAndRewakeupsApart) {
  apply({ev(EventType::kKswapdWake, 5, 100), ev(EventType::kKswapdWake, 5, 200),
         ev(EventType::kKswapdSleep, 5, 300), ev(EventType::kKswapdWake, 5, 400),
         ev(EventType::kKswapdSleep, 5, 500)});
  const nlohmann::json j = reclaimReport(agg_->snapshot());
  ASSERT_EQ(j["kswapd_instances"].size(), 1u);
  EXPECT_EQ(j["kswapd_instances"][0]["kswapd_wakeups"], 3);
  EXPECT_EQ(j["kswapd_instances"][0]["kswapd_rewakeups"], 1);
  EXPECT_EQ(j["summary"]["kswapd_wakeups"], 3);
  EXPECT_EQ(j["summary"]["kswapd_rewakeups"], 1);
  EXPECT_EQ(j["kswapd"]["wakeups"], 3);
  EXPECT_EQ(j["kswapd"]["rewakeups"], 1);
  EXPECT_DOUBLE_EQ(j["kswapd"]["awake_seconds"].get<double>(), 300e-9);  // 100..300, 400..500
}

// The summary's wake requests are every task's mm_vmscan_wakeup_kswapd,
// reclaiming or not: the same as the cgroup rows', the task rows' and the
// by-order counts summed.
TEST_F(ReportSemantics, WakeRequestsOfAllTasks) {
  Event w10 = ev(EventType::kWakeupKswapd, 10, 100);
  w10.order = 0;
  Event w21 = ev(EventType::kWakeupKswapd, 21, 200);  // never reclaims itself
  w21.order = 3;
  apply({w10, ev(EventType::kMemcgReclaimBegin, 10, 150), endEv(EventType::kMemcgReclaimEnd, 10, 160),
         w21, w21});
  const nlohmann::json j = reclaimReport(agg_->snapshot());
  EXPECT_EQ(j["summary"]["wake_kswapd_requests"], 3);
  uint64_t rows = 0, cgs = 0, orders = 0;
  for (const auto& p : j["processes"]) rows += p["kswapd_wake_requests"].get<uint64_t>();
  for (const auto& c : j["cgroups"]) cgs += c["kswapd_wake_requests"].get<uint64_t>();
  for (const auto& [k, v] : j["kswapd"]["wakeup_requests_by_order"].items()) orders += v.get<uint64_t>();
  EXPECT_EQ(rows, 3u);
  EXPECT_EQ(cgs, 3u);
  EXPECT_EQ(orders, 3u);
  EXPECT_EQ(rowOf(j["processes"], 21)["kswapd_wake_requests"], 2);
}

}  // namespace
}  // namespace memcg::tracing
