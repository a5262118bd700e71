// The reclaim report's window (?window=) subtracts a baseline snapshot series
// by series. Regression: series were matched by label, so a cgroup removed
// and recreated under the same name inside the window was subtracted against
// the old cgroup's counters (its reclaims vanished from the report).
#include <gtest/gtest.h>

#include <map>

#include "tests/support/trace_records.h"
#include "tracing/aggregator.h"
#include "tracing/reclaim_report.h"

namespace memcg::tracing {
namespace {

using memcg::testing::ev;

class Fs : public CgroupResolver {
 public:
  std::optional<std::string> resolve(int32_t tid) override {
    auto it = paths.find(tid);
    if (it == paths.end()) return std::nullopt;
    return it->second;
  }
  uint64_t idOf(const std::string& path) override {
    auto it = ids->find(path);
    return it == ids->end() ? 0 : it->second;
  }
  std::map<int32_t, std::string> paths{{10, "/a"}, {20, "/b"}};
  std::map<std::string, uint64_t>* ids = nullptr;
};

constexpr int kHierarchy = 4;

class ReportWindowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto fs = std::make_unique<Fs>();
    fs->ids = &ids_;
    AggregatorOptions o;
    o.hierarchy_id = kHierarchy;
    agg_ = std::make_unique<Aggregator>(o, std::move(fs));
  }
  void reclaims(int32_t pid, int n) {
    std::vector<Event> v;
    for (int i = 0; i < n; ++i) {
      v.push_back(ev(EventType::kMemcgReclaimBegin, pid, ts_ += 1000));
      Event e = ev(EventType::kMemcgReclaimEnd, pid, ts_ += 2000);
      e.nr_reclaimed = 8;
      v.push_back(e);
    }
    agg_->apply(v);
  }
  Event rmdir(std::string_view path, uint64_t id) {
    Event e = ev(EventType::kCgroupRmdir, 1, ts_ += 10);
    e.dst_root = kHierarchy;
    e.dst_path = path;
    e.dst_id = id;
    return e;
  }
  Event attach(int32_t pid, std::string_view path, uint64_t id) {
    Event e = ev(EventType::kCgroupAttach, 1, ts_ += 10);
    e.dst_root = kHierarchy;
    e.dst_path = path;
    e.dst_id = id;
    e.target_pid = pid;
    return e;
  }
  static const CgroupTraceStats* find(const TraceSnapshot& s, const std::string& path) {
    for (const auto& c : s.cgroups) {
      if (!c.unknown && !c.overflow && c.path == path) return &c;
    }
    return nullptr;
  }
  static uint64_t memcgReclaims(const CgroupTraceStats* c) {
    return c ? c->reclaim[static_cast<size_t>(ReclaimKind::kMemcg)].total : 0;
  }
  static const nlohmann::json* row(const nlohmann::json& report, const std::string& cgroup) {
    for (const auto& r : report["cgroups"]) {
      if (r["cgroup"] == cgroup) return &r;
    }
    return nullptr;
  }

  std::map<std::string, uint64_t> ids_{{"/a", 2}, {"/b", 3}};
  std::unique_ptr<Aggregator> agg_;
  uint64_t ts_ = 1'000'000;
};

TEST_F(ReportWindowTest, RecreatedCgroupIsNotSubtractedAgainstTheOldOne) {
  reclaims(10, 5);
  reclaims(20, 5);
  const TraceSnapshot base = agg_->snapshot();
  ASSERT_EQ(memcgReclaims(find(base, "/a")), 5u);
  // Inside the window: /a is removed and made again (another inode), a task
  // is moved in and reclaims twice; /b reclaims twice more.
  ids_["/a"] = 50;
  agg_->apply(std::vector<Event>{rmdir("/a", 2), attach(30, "/a", 50)});
  reclaims(30, 2);
  reclaims(20, 2);
  const TraceSnapshot now = agg_->snapshot();
  ASSERT_EQ(memcgReclaims(find(now, "/a")), 2u);
  EXPECT_EQ(find(now, "/a")->id, 50u);

  const TraceSnapshot d = subtractSnapshot(now, base);
  EXPECT_EQ(memcgReclaims(find(d, "/a")), 2u);  // by label: 2 - 5 -> 0, and the row dropped
  EXPECT_EQ(memcgReclaims(find(d, "/b")), 2u);  // the same cgroup: 7 - 5
  const nlohmann::json report = reclaimReport(now, &base, 60.0);
  const nlohmann::json* a = row(report, "/a");
  ASSERT_NE(a, nullptr) << report.dump();
  EXPECT_EQ((*a)["memcg_reclaims"], 2);
  EXPECT_EQ((*a)["id"], 50);
  EXPECT_EQ((*a)["by_kind"]["memcg"]["stalls"], 2);
  EXPECT_EQ((*row(report, "/b"))["memcg_reclaims"], 2);
}

// The same when the rmdir was not traced (--no-collector.vmscan.cgroup-rmdir,
// or a lost event): the new inode alone makes it another series.
TEST_F(ReportWindowTest, RecreatedWithoutRmdirIsStillAnotherCgroup) {
  reclaims(10, 5);
  const TraceSnapshot base = agg_->snapshot();
  ids_["/a"] = 51;
  agg_->apply(std::vector<Event>{attach(30, "/a", 51)});
  reclaims(30, 3);
  const TraceSnapshot now = agg_->snapshot();
  size_t named_a = 0;
  for (const auto& c : now.cgroups) named_a += c.path == "/a";
  EXPECT_EQ(named_a, 1u);  // one series per label: the old one was retired
  EXPECT_EQ(memcgReclaims(find(subtractSnapshot(now, base), "/a")), 3u);
}

// A series seen first without an id (stat failed) that learns it later is
// still the same cgroup.
TEST_F(ReportWindowTest, SeriesThatLearnsItsIdStillMatches) {
  ids_.erase("/a");
  reclaims(10, 5);
  const TraceSnapshot base = agg_->snapshot();
  ASSERT_EQ(find(base, "/a")->id, 0u);
  agg_->apply(std::vector<Event>{attach(10, "/a", 2)});
  reclaims(10, 1);
  const TraceSnapshot now = agg_->snapshot();
  EXPECT_EQ(find(now, "/a")->id, 2u);
  EXPECT_EQ(memcgReclaims(find(subtractSnapshot(now, base), "/a")), 1u);
}

}  // namespace
}  // namespace memcg::tracing
