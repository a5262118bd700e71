// PidCache (tracing/pid_cache.h): tid -> cgroup, following fork, exit, attach.
#include "tracing/pid_cache.h"

#include <gtest/gtest.h>

#include <map>

namespace memcg::tracing {
namespace {

class Procs : public CgroupResolver {
 public:
  std::optional<std::string> resolve(int32_t tid) override {
    ++reads;
    auto it = paths.find(tid);
    if (it == paths.end()) return std::nullopt;
    return it->second;
  }
  uint64_t idOf(const std::string& path) override { return path == "/a" ? 11 : 12; }
  std::map<int32_t, std::string> paths{{10, "/a"}, {20, "/b"}};
  int reads = 0;
};

class PidCacheTest : public ::testing::Test {
 protected:
  Procs procs_;
  SeriesTable series_{16, &procs_};
  PidCache cache_{8, &procs_, series_};
  std::string cgroupOf(int32_t tid) {
    auto w = cache_.cgroupOf(tid);
    return w ? w->cgroup + (w->exited ? " (exited)" : "") : "-";
  }
};

TEST_F(PidCacheTest, MissReadsProcOnceThenCaches) {
  const uint32_t a = cache_.get(10).slot;
  EXPECT_EQ(series_[a].path, "/a");
  EXPECT_EQ(cache_.get(10).slot, a);
  EXPECT_EQ(procs_.reads, 1);
  EXPECT_EQ(cache_.get(99).slot, SeriesTable::kUnknown);  // gone before the read
  EXPECT_EQ(cache_.counters().lookups, 2u);
  EXPECT_EQ(cache_.counters().lookup_failures, 1u);
  EXPECT_EQ(cache_.find(11), nullptr);
  EXPECT_EQ(procs_.reads, 2);  // find never reads /proc
  EXPECT_EQ(cgroupOf(10), "/a");
  EXPECT_EQ(cgroupOf(99), "-");  // known only as "_unknown"
}

TEST_F(PidCacheTest, ForkInheritsAndAttachMoves) {
  cache_.get(10);
  cache_.fork(10, 11);
  EXPECT_EQ(cgroupOf(11), "/a");
  cache_.fork(55, 56);  // unknown parent: nothing learnt, resolved lazily later
  EXPECT_EQ(cache_.find(56), nullptr);
  const uint32_t b = series_.intern("/b", 12);
  cache_.attach(11, b);
  EXPECT_EQ(cgroupOf(11), "/b");
  cache_.attach(30, b);  // a task not seen before
  EXPECT_EQ(cgroupOf(30), "/b");
  EXPECT_EQ(procs_.reads, 1);
  auto w = cache_.cgroupOf(30);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->id, 12u);
}

TEST_F(PidCacheTest, ExitIsForgottenOneRoundLateAndRememberedForABoundedTime) {
  int forgotten = 0, exited = 0;
  PidCache::Hooks h;
  h.forgotten = [&](int32_t, TaskState&) { ++forgotten; };
  h.exited = [&](int32_t) { ++exited; };
  cache_.setHooks(h);
  cache_.get(10);
  ASSERT_NE(cache_.exit(10), nullptr);
  EXPECT_EQ(cache_.exit(77), nullptr);  // never seen
  EXPECT_EQ(cgroupOf(10), "/a (exited)");
  cache_.endRound();  // the round of the exit: still cached (late records)
  ASSERT_NE(cache_.find(10), nullptr);
  EXPECT_EQ(forgotten, 0);
  cache_.endRound();
  EXPECT_EQ(cache_.find(10), nullptr);
  EXPECT_EQ(forgotten, 1);
  EXPECT_EQ(exited, 1);
  // The taskstats exit record may come after: the exit is remembered ...
  EXPECT_EQ(cgroupOf(10), "/a (exited)");
  for (uint64_t i = 0; i < PidCache::kRecentExitRounds - 2; ++i) cache_.endRound();
  EXPECT_EQ(cgroupOf(10), "/a (exited)");
  // ... for a bounded number of rounds.
  cache_.endRound();
  cache_.endRound();
  EXPECT_EQ(cgroupOf(10), "-");
}

TEST_F(PidCacheTest, AttachAfterExitRevivesTheEntry) {
  cache_.get(10);
  cache_.exit(10);
  cache_.endRound();
  cache_.attach(10, series_.intern("/b", 12));  // a reused pid, moved
  cache_.endRound();
  ASSERT_NE(cache_.find(10), nullptr);
  EXPECT_EQ(cgroupOf(10), "/b");
}

TEST_F(PidCacheTest, BoundedByMaxPids) {
  int forgotten = 0;
  PidCache::Hooks h;
  h.forgotten = [&](int32_t, TaskState&) { ++forgotten; };
  cache_.setHooks(h);
  const uint32_t a = series_.intern("/a", 11);
  for (int32_t t = 100; t < 108; ++t) cache_.attach(t, a);
  EXPECT_EQ(cache_.size(), 8u);
  cache_.attach(200, a);  // full: cleared, refilled on demand
  EXPECT_EQ(cache_.size(), 1u);
  EXPECT_EQ(forgotten, 8);
  EXPECT_EQ(cache_.counters().resets, 1u);
}

TEST_F(PidCacheTest, RetiredSeriesDropsItsTasks) {
  cache_.get(10);
  cache_.get(20);
  const uint32_t a = cache_.get(10).slot;
  cache_.dropSlot(a);
  EXPECT_EQ(cache_.find(10), nullptr);
  EXPECT_NE(cache_.find(20), nullptr);
  procs_.paths[10] = "/b";
  EXPECT_EQ(cgroupOf(10), "-");
  EXPECT_EQ(series_[cache_.get(10).slot].path, "/b");  // re-read
}

TEST_F(PidCacheTest, CreatedHookMarksNewEntries) {
  PidCache::Hooks h;
  h.created = [](int32_t tid, TaskState& st) {
    if (tid == 20) st.flags |= TaskState::kProactive;
  };
  cache_.setHooks(h);
  EXPECT_TRUE(cache_.get(20).flags & TaskState::kProactive);
  EXPECT_FALSE(cache_.get(10).flags & TaskState::kProactive);
}

}  // namespace
}  // namespace memcg::tracing
