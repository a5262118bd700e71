// Exits of processes no scrape saw alive: the ledger places them
// with an ExitLocator (delay_ledger.h), which the collector builds from the
// tracer's pid cache and /proc (collectors/taskstats_locator.h).
#include <gtest/gtest.h>

#include <map>

#include "collectors/taskstats/delay_ledger.h"
#include "collectors/taskstats_locator.h"

namespace memcg::taskstats {
namespace {

TaskStats stats(uint64_t reclaim_count, uint64_t reclaim_ns) {
  TaskStats ts;
  ts.version = 16;
  ts.has_total = 0xff;
  ts[DelayClass::kFreepages] = {reclaim_count, reclaim_ns, 0};
  return ts;
}
TaskstatsMessage exitOf(uint32_t tgid, const TaskStats& fin) {
  TaskstatsMessage m;
  m.pid = tgid;
  m.pid_stats = fin;
  m.pid_stats->ac_pid = tgid;
  m.pid_stats->ac_tgid = tgid;
  m.pid_stats->ac_flag = 0x20;  // AGROUP: the process's last thread
  return m;
}
uint64_t reclaims(DelayLedger& l, const std::string& key, ino_t inode,
                  std::vector<uint32_t> live = {}) {
  l.begin(key, inode, live);
  return l.end(key)[DelayClass::kFreepages].count;
}

struct Where {
  std::map<uint32_t, uint64_t> inode;
  std::vector<std::pair<uint32_t, bool>> calls;
  DelayLedger::ExitLocator fn() {
    return [this](uint32_t tgid, bool first) {
      calls.emplace_back(tgid, first);
      auto it = inode.find(tgid);
      return it == inode.end() ? uint64_t{0} : it->second;
    };
  }
};

TEST(ExitLocator, WithoutOneAnUnseenProcessIsNotCounted) {
  DelayLedger l;
  EXPECT_EQ(reclaims(l, "/cg", 7), 0u);
  l.onExit(exitOf(42, stats(380, 9'000'000)));
  EXPECT_EQ(reclaims(l, "/cg", 7), 0u);  // the wrong answer the locator fixes
  EXPECT_EQ(l.stats().exits_located, 0u);
}

TEST(ExitLocator, UnseenProcessIsFoldedIntoItsCgroup) {
  DelayLedger l;
  Where w;
  w.inode[42] = 7;
  l.setExitLocator(w.fn());
  EXPECT_EQ(reclaims(l, "/cg", 7), 0u);
  EXPECT_EQ(reclaims(l, "/other", 8), 0u);
  l.onExit(exitOf(42, stats(380, 9'000'000)));
  EXPECT_EQ(reclaims(l, "/cg", 7), 380u);
  EXPECT_EQ(reclaims(l, "/other", 8), 0u);
  EXPECT_EQ(l.stats().exits_located, 1u);
  EXPECT_EQ(l.stats().exits_folded, 0u);
  ASSERT_EQ(w.calls.size(), 1u);
  EXPECT_TRUE(w.calls[0].second);  // asked as the record arrived
  // A process a scrape saw is still ended by its record, without the locator.
  std::vector<uint32_t> live = {50};
  l.begin("/cg", 7, live);
  l.observe("/cg", 50, stats(1, 10));
  l.end("/cg");
  l.onExit(exitOf(50, stats(5, 50)));
  EXPECT_EQ(reclaims(l, "/cg", 7), 385u);
  EXPECT_EQ(w.calls.size(), 1u);
}

TEST(ExitLocator, NotKnownYetIsRetriedUntilTheTracerCatchesUp) {
  DelayLedger l;
  Where w;
  l.setExitLocator(w.fn());
  const auto t0 = DelayLedger::Clock::now();
  l.retryPending(t0);
  EXPECT_EQ(reclaims(l, "/cg", 7), 0u);
  l.onExit(exitOf(42, stats(3, 30)));  // the trace reader has not seen it yet
  EXPECT_EQ(l.pendingExits(), 1u);
  l.retryPending(t0 + std::chrono::milliseconds(200));
  EXPECT_EQ(l.pendingExits(), 1u);
  w.inode[42] = 7;  // now it has
  l.retryPending(t0 + std::chrono::milliseconds(400));
  EXPECT_EQ(l.pendingExits(), 0u);
  EXPECT_EQ(reclaims(l, "/cg", 7), 3u);
  EXPECT_FALSE(w.calls.back().second);  // a retry
}

TEST(ExitLocator, CgroupScrapedLaterGetsItsEarlierExits) {
  DelayLedger l;
  Where w;
  w.inode[42] = 9;
  l.setExitLocator(w.fn());
  l.onExit(exitOf(42, stats(4, 40)));  // its cgroup was never scraped yet
  EXPECT_EQ(l.pendingExits(), 1u);
  EXPECT_EQ(reclaims(l, "/new", 9), 4u);
  EXPECT_EQ(l.pendingExits(), 0u);
}

TEST(ExitLocator, UnplacedExitsExpire) {
  DelayLedger l;
  Where w;
  l.setExitLocator(w.fn());
  const auto t0 = DelayLedger::Clock::now();
  l.retryPending(t0);
  l.onExit(exitOf(42, stats(4, 40)));
  l.retryPending(t0 + DelayLedger::kPendingAge / 2);
  EXPECT_EQ(l.pendingExits(), 1u);
  l.retryPending(t0 + DelayLedger::kPendingAge + std::chrono::seconds(1));
  EXPECT_EQ(l.pendingExits(), 0u);
  EXPECT_EQ(l.stats().exits_unlocated, 1u);
  w.inode[42] = 7;
  EXPECT_EQ(reclaims(l, "/cg", 7), 0u);
}

TEST(ExitLocator, LocatedProcessStillListedIsNotCountedTwice) {
  DelayLedger l;
  Where w;
  w.inode[42] = 7;
  l.setExitLocator(w.fn());
  EXPECT_EQ(reclaims(l, "/cg", 7), 0u);
  l.onExit(exitOf(42, stats(6, 60)));
  // The record is queued just before the task leaves cgroup.procs: a scrape
  // in between still lists it (and its query may still answer).
  std::vector<uint32_t> live = {42};
  l.begin("/cg", 7, live);
  l.observe("/cg", 42, stats(6, 60));
  EXPECT_EQ(l.end("/cg")[DelayClass::kFreepages].count, 6u);
  EXPECT_EQ(reclaims(l, "/cg", 7), 6u);  // gone now: not folded again
  EXPECT_EQ(l.stats().exits_without_record, 0u);
}

// --- the collector's locator -------------------------------------------------

class FakeTracer : public tracing::PidCgroupLookup {
 public:
  std::optional<tracing::PidCgroup> cgroupOf(int32_t pid) const override {
    ++asked;
    auto it = known.find(pid);
    if (it == known.end()) return std::nullopt;
    return it->second;
  }
  std::map<int32_t, tracing::PidCgroup> known;
  mutable int asked = 0;
};

class FakeIds : public tracing::CgroupResolver {
 public:
  std::optional<std::string> resolve(int32_t) override {
    ++reads;
    return std::nullopt;
  }
  uint64_t idOf(const std::string& path) override {
    auto it = ids.find(path);
    return it == ids.end() ? 0 : it->second;
  }
  std::map<std::string, uint64_t> ids{{"/a", 11}, {"/b", 12}};
  int reads = 0;
};

TEST(TaskstatsExitLocator, AsksTheTracerAndStatsAnswersWithoutId) {
  FakeTracer tracer;
  auto ids = std::make_shared<FakeIds>();
  tracer.known[1] = {"/a", 77, true};
  tracer.known[2] = {"/b", 0, true};  // no id: the directory is stat'ed
  auto locate = memcg::taskstatsExitLocator(&tracer, ids);
  ASSERT_TRUE(locate);
  EXPECT_EQ(locate(1, true), 77u);
  EXPECT_EQ(locate(2, false), 12u);
  EXPECT_EQ(locate(3, true), 0u);  // unknown (yet): the ledger retries
  EXPECT_EQ(ids->reads, 0);        // never /proc
  EXPECT_FALSE(memcg::taskstatsExitLocator(nullptr, ids));  // sampling only then
}

// Without a locator: the members sampled between scrapes.
TEST(ExitSampling, ProcessSampledAliveIsPlacedAtExit) {
  DelayLedger l;
  EXPECT_EQ(reclaims(l, "/cg", 7), 0u);
  std::vector<uint32_t> members = {42};
  l.sampleMembers("/cg", members, true);
  l.onExit(exitOf(42, stats(9, 90)));
  EXPECT_EQ(reclaims(l, "/cg", 7), 9u);
  EXPECT_EQ(l.stats().exits_located, 1u);
  // Never sampled, no locator: not counted (as before).
  l.onExit(exitOf(43, stats(5, 50)));
  EXPECT_EQ(reclaims(l, "/cg", 7), 9u);
}

TEST(ExitSampling, OnlyTheLastTwoRoundsCount) {
  DelayLedger l;
  EXPECT_EQ(reclaims(l, "/cg", 7), 0u);
  std::vector<uint32_t> m = {42}, none;
  l.sampleMembers("/cg", m, true);
  l.sampleMembers("/cg", none, true);  // gone by the next round: still known
  l.onExit(exitOf(42, stats(1, 10)));
  EXPECT_EQ(reclaims(l, "/cg", 7), 1u);
  l.sampleMembers("/cg", m, true);
  l.sampleMembers("/cg", none, true);
  l.sampleMembers("/cg", none, true);  // two rounds without it: forgotten
  l.onExit(exitOf(42, stats(1, 10)));
  EXPECT_EQ(reclaims(l, "/cg", 7), 1u);
  // Unknown cgroups are not sampled.
  l.sampleMembers("/never-scraped", m, true);
  l.onExit(exitOf(42, stats(1, 10)));
  EXPECT_EQ(reclaims(l, "/cg", 7), 1u);
}

}  // namespace
}  // namespace memcg::taskstats
