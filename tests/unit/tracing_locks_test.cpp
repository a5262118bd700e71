// Lock contention probes without root: decoding of the committed 6.18 format
// files (tests/fixtures/tracefs) with records synthesised from their offsets,
// lock kinds, pairing (nested and interrupt-nested begins), in-reclaim
// attribution, the top-K bound, rstat/flush per cgroup, caller stacks,
// kallsyms symbolisation (tests/fixtures/kallsyms) and the exposition.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <thread>

#include "common/file.h"
#include "metrics/text_format.h"
#include "tests/support/promtool.h"
#include "tests/support/trace_records.h"
#include "tracing/aggregator.h"
#include "tracing/decoders.h"
#include "tracing/event_formats.h"
#include "tracing/lock_metrics.h"
#include "tracing/lock_stats.h"
#include "tracing/lock_symbols.h"
#include "tracing/trace_metrics.h"

namespace memcg::tracing {
namespace {

const std::string kFixtures = MEMCG_TRACEFS_FIXTURES;
const std::string kKallsyms = kFixtures + "/../kallsyms/kallsyms";

// Ids in the fixture format files (6.18).
constexpr uint16_t kIdBegin = 408, kIdEnd = 407, kIdContended = 534, kIdLocked = 533,
                   kIdUnlock = 532, kIdFlush = 760, kIdStack = 4;

using Rec = memcg::testing::RawRecord;

class LockDecoderTest : public memcg::testing::FormatFixtureTest {
 protected:
  LockDecoderTest() : FormatFixtureTest(kFixtures) {}
};

TEST_F(LockDecoderTest, AllLockEventsFromFixtures) {
  for (EventType t : {EventType::kRstatLockContended, EventType::kRstatLocked,
                      EventType::kRstatUnlock, EventType::kMemcgFlushStats,
                      EventType::kLockContentionBegin, EventType::kLockContentionEnd,
                      EventType::kKernelStack}) {
    EXPECT_TRUE(dec_->supports(t)) << eventName(t)->name;
    EXPECT_TRUE(isLockEvent(t));
  }
  EXPECT_FALSE(isLockEvent(EventType::kProcessExit));
  EXPECT_EQ(dec_->eventId(EventType::kLockContentionBegin), kIdBegin);
  EXPECT_EQ(dec_->eventId(EventType::kKernelStack), kIdStack);
}

TEST_F(LockDecoderTest, ContentionBeginEnd) {
  Event b = decode(Rec(24, kIdBegin, 42).put(8, 0xffff888012345678ull, 8).put(16, 0x21, 4));
  EXPECT_EQ(b.type, EventType::kLockContentionBegin);
  EXPECT_EQ(b.pid, 42);
  EXPECT_EQ(b.lock_addr, 0xffff888012345678ull);
  EXPECT_EQ(b.lock_flags, 0x21u);
  Event e = decode(Rec(24, kIdEnd, 42).put(8, 0xffff888012345678ull, 8)
                       .put(16, static_cast<uint32_t>(-4), 4));
  EXPECT_EQ(e.type, EventType::kLockContentionEnd);
  EXPECT_EQ(e.lock_ret, -4);
  // Too short for lock_addr + flags: malformed.
  Event bad;
  Rec shortRec(16, kIdBegin, 1);
  EXPECT_FALSE(dec_->decode(shortRec.b.data(), 16, 1, bad));
}

TEST_F(LockDecoderTest, RstatAndFlush) {
  Event l = decode(
      Rec(32, kIdLocked, 7).put(8, 3, 4).put(12, 2, 4).put(16, 4242, 8).put(24, 1, 4).put(28, 1, 1));
  EXPECT_EQ(l.type, EventType::kRstatLocked);
  EXPECT_EQ(l.cg_root, 3);
  EXPECT_EQ(l.cg_id, 4242u);
  EXPECT_TRUE(l.contended);
  Event c = decode(Rec(32, kIdContended, 7).put(8, 3, 4).put(16, 9, 8));
  EXPECT_EQ(c.type, EventType::kRstatLockContended);
  EXPECT_FALSE(c.contended);
  Event u = decode(Rec(32, kIdUnlock, 7).put(16, 9, 8));
  EXPECT_EQ(u.type, EventType::kRstatUnlock);
  Event f = decode(Rec(32, kIdFlush, 7).put(8, 555, 8).put(16, 100, 8).put(25, 1, 1));
  EXPECT_EQ(f.type, EventType::kMemcgFlushStats);
  EXPECT_EQ(f.cg_id, 555u);
  EXPECT_TRUE(f.needs_flush);
}

TEST_F(LockDecoderTest, KernelStackDepthFromSizeBoundedByRecord) {
  // 3 callers, record sized for exactly 3 (6.x writes only what it has).
  Rec r(16 + 3 * 8, kIdStack, 9);
  r.put(8, 3, 4).put(16, 0xffffffff813e9550ull, 8).put(24, 0xffffffff8226aa00ull, 8)
      .put(32, 0xffffffff8226b120ull, 8);
  Event e = decode(r);
  EXPECT_EQ(e.type, EventType::kKernelStack);
  ASSERT_EQ(e.stack_depth, 3);
  uint64_t second;
  std::memcpy(&second, e.stack + 8, 8);
  EXPECT_EQ(second, 0xffffffff8226aa00ull);
  // A size larger than the record holds is clamped to what is there.
  Rec lie(16 + 2 * 8, kIdStack, 9);
  lie.put(8, 50, 4);
  EXPECT_EQ(decode(lie).stack_depth, 2);
}

TEST(LockKinds, FlagsDecodeToBoundedKinds) {
  EXPECT_EQ(lockKindFromFlags(kLcbSpin), LockKind::kSpinlock);
  EXPECT_EQ(lockKindFromFlags(kLcbSpin | kLcbRead), LockKind::kRwlockRead);
  EXPECT_EQ(lockKindFromFlags(kLcbSpin | kLcbWrite), LockKind::kRwlockWrite);
  EXPECT_EQ(lockKindFromFlags(kLcbRead), LockKind::kRwsemRead);
  EXPECT_EQ(lockKindFromFlags(kLcbWrite), LockKind::kRwsemWrite);
  EXPECT_EQ(lockKindFromFlags(kLcbMutex), LockKind::kMutex);
  EXPECT_EQ(lockKindFromFlags(kLcbMutex | kLcbSpin), LockKind::kMutex);
  EXPECT_EQ(lockKindFromFlags(kLcbRt), LockKind::kRtMutex);
  EXPECT_EQ(lockKindFromFlags(kLcbRt | kLcbWrite), LockKind::kRtRwlockWrite);
  EXPECT_EQ(lockKindFromFlags(kLcbPercpu | kLcbRead), LockKind::kPercpuRwsemRead);
  EXPECT_EQ(lockKindFromFlags(kLcbPercpu | kLcbWrite), LockKind::kPercpuRwsemWrite);
  EXPECT_EQ(lockKindFromFlags(0), LockKind::kOther);
  EXPECT_EQ(lockKindFromFlags(kLcbRead | kLcbWrite), LockKind::kOther);
  EXPECT_EQ(lockKindFromFlags(0x400), LockKind::kOther);  // unknown future bit
  EXPECT_STREQ(lockKindName(LockKind::kPercpuRwsemWrite), "percpu_rwsem_write");
  EXPECT_STREQ(lockKindName(LockKind::kCount), "other");
}

TEST(LockFilters, InKernelFilters) {
  EXPECT_EQ(lockEventFilter(EventType::kRstatLocked, 4), "root==4");
  EXPECT_EQ(lockEventFilter(EventType::kLockContentionBegin, 4), "flags!=32");
  EXPECT_EQ(lockEventFilter(EventType::kLockContentionEnd, 4), "");
  EXPECT_EQ(lockCallerTrigger(64), "stacktrace:64 if flags!=32");
}

// --- aggregation ---------------------------------------------------------------

class FakeResolver : public CgroupResolver {
 public:
  std::optional<std::string> resolve(int32_t tid) override {
    auto it = paths.find(tid);
    if (it == paths.end()) return std::nullopt;
    return it->second;
  }
  uint64_t idOf(const std::string& path) override {
    for (const auto& [id, p] : ids) {
      if (p == path) return id;
    }
    return 0;
  }
  std::optional<std::string> pathOfId(uint64_t id) override {
    ++walks;
    auto it = ids.find(id);
    if (it == ids.end()) return std::nullopt;
    return it->second;
  }
  std::map<int32_t, std::string> paths{{10, "/a"}, {20, "/b"}};
  std::map<uint64_t, std::string> ids{{100, "/a"}, {200, "/b"}, {1, "/"}};
  int walks = 0;
};

using memcg::testing::ev;
Event begin(int32_t pid, uint64_t ts, uint64_t addr, uint32_t flags) {
  Event e = ev(EventType::kLockContentionBegin, pid, ts);
  e.lock_addr = addr;
  e.lock_flags = flags;
  return e;
}
Event end(int32_t pid, uint64_t ts, uint64_t addr, int32_t ret = 0) {
  Event e = ev(EventType::kLockContentionEnd, pid, ts);
  e.lock_addr = addr;
  e.lock_ret = ret;
  return e;
}
Event rstat(EventType t, int32_t pid, uint64_t ts, uint64_t id, bool contended = false,
            int root = 4) {
  Event e = ev(t, pid, ts);
  e.cg_id = id;
  e.cg_root = root;
  e.contended = contended;
  return e;
}

const LockKindStats& K(const LockKindArray& a, LockKind k) {
  return a[static_cast<size_t>(k)];
}
const LockCgroupSeries* findCg(const LockSnapshot& s, const std::string& label) {
  for (const auto& c : s.cgroups) {
    if (c.label == label) return &c;
  }
  return nullptr;
}
// The result points into the snapshot: a temporary one would leave it dangling.
const LockCgroupSeries* findCg(LockSnapshot&& s, const std::string& label) = delete;

class LockAggregatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    AggregatorOptions o;
    o.hierarchy_id = 4;
    auto r = std::make_unique<FakeResolver>();
    resolver_ = r.get();
    agg_ = std::make_unique<Aggregator>(o, std::move(r));
  }
  void apply(std::vector<Event> v) { agg_->apply(v); }
  LockSnapshot snap() { return agg_->snapshot().locks; }
  FakeResolver* resolver_ = nullptr;
  std::unique_ptr<Aggregator> agg_;
};

TEST_F(LockAggregatorTest, NestedMutexBeginsPairWithTheFirst) {
  const uint64_t m = 0xffff888000001000ull;
  apply({begin(30, 1'000, m, kLcbMutex | kLcbSpin), begin(30, 5'000, m, kLcbMutex),
         begin(30, 7'000, m, kLcbMutex | kLcbSpin), end(30, 11'000, m)});
  LockSnapshot s = snap();
  const LockKindStats& mu = K(s.node, LockKind::kMutex);
  EXPECT_EQ(mu.count, 1u);
  EXPECT_EQ(mu.wait.sum, 10'000u);  // from the first begin
  EXPECT_EQ(s.nested_begins, 2u);
  EXPECT_EQ(s.unpaired_ends, 0u);
  // The next contention of the same task starts afresh.
  apply({begin(30, 20'000, m, kLcbMutex | kLcbSpin), end(30, 20'300, m)});
  EXPECT_EQ(K(snap().node, LockKind::kMutex).count, 2u);
  EXPECT_EQ(K(snap().node, LockKind::kMutex).wait.buckets[2], 1u);  // 300 ns: le=500ns
}

TEST_F(LockAggregatorTest, InterruptNestedContentionOfAnotherLock) {
  const uint64_t a = 0xa000, b = 0xb000;
  apply({begin(30, 100, a, kLcbWrite), begin(30, 200, b, kLcbSpin), end(30, 260, b),
         end(30, 1'100, a)});
  LockSnapshot s = snap();
  EXPECT_EQ(K(s.node, LockKind::kSpinlock).count, 1u);
  EXPECT_EQ(K(s.node, LockKind::kSpinlock).wait.sum, 60u);
  EXPECT_EQ(K(s.node, LockKind::kRwsemWrite).count, 1u);
  EXPECT_EQ(K(s.node, LockKind::kRwsemWrite).wait.sum, 1'000u);
  EXPECT_EQ(s.unpaired_ends, 0u);
}

TEST_F(LockAggregatorTest, UnpairedEndAndAbortedWait) {
  apply({end(30, 100, 0xa000)});  // began before tracing
  apply({begin(31, 100, 0xc000, kLcbMutex | kLcbSpin), end(31, 400, 0xc000, -4)});
  LockSnapshot s = snap();
  EXPECT_EQ(s.unpaired_ends, 1u);
  EXPECT_EQ(K(s.node, LockKind::kMutex).count, 1u);
  EXPECT_EQ(K(s.node, LockKind::kMutex).aborted, 1u);
  // An exited task's open contention is forgotten at the end of the round
  // after its exit (exits are applied one round late, see Aggregator::endRound).
  Event ex = ev(EventType::kProcessExit, 1, 500);
  ex.target_pid = 10;
  apply({ev(EventType::kMemcgReclaimBegin, 10, 10), begin(10, 450, 0xd000, kLcbSpin), ex});
  agg_->endRound();
  agg_->endRound();
  apply({end(10, 600, 0xd000)});
  EXPECT_EQ(snap().unpaired_ends, 2u);
}

TEST_F(LockAggregatorTest, InReclaimContentionChargedToTheCgroup) {
  const uint64_t l = 0xffff888000002000ull;
  apply({ev(EventType::kMemcgReclaimBegin, 10, 1'000),  // /a reclaims
         begin(10, 2'000, l, kLcbSpin), end(10, 3'000, l),
         begin(20, 2'100, l, kLcbSpin), end(20, 3'100, l),  // /b: not reclaiming
         ev(EventType::kMemcgReclaimEnd, 10, 4'000),
         begin(10, 5'000, l, kLcbSpin), end(10, 5'500, l)});  // /a after reclaim
  LockSnapshot s = snap();
  const LockCgroupSeries* a = findCg(s, "/a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(K(a->contention, LockKind::kSpinlock).count, 1u);
  EXPECT_EQ(K(a->contention, LockKind::kSpinlock).wait.sum, 1'000u);
  EXPECT_EQ(K(s.node, LockKind::kSpinlock).count, 2u);
  EXPECT_EQ(findCg(s, "/b"), nullptr);  // /b never contended inside reclaim
  // Direct reclaim counts too.
  apply({ev(EventType::kDirectReclaimBegin, 20, 6'000), begin(20, 6'100, l, kLcbRead),
         end(20, 6'200, l)});
  LockSnapshot s2 = snap();
  const LockCgroupSeries* b = findCg(s2, "/b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(K(b->contention, LockKind::kRwsemRead).count, 1u);
}

TEST_F(LockAggregatorTest, RemovedCgroupLosesItsLockSeries) {
  const uint64_t l = 0xffff888000003000ull;
  apply({ev(EventType::kMemcgReclaimBegin, 10, 1'000), begin(10, 2'000, l, kLcbSpin),
         end(10, 3'000, l), ev(EventType::kMemcgReclaimEnd, 10, 4'000)});
  LockSnapshot before = snap();
  ASSERT_NE(findCg(before, "/a"), nullptr);
  // A contention of /a still open when /a is removed ends node-wide.
  apply({ev(EventType::kMemcgReclaimBegin, 10, 5'000), begin(10, 6'000, l, kLcbSpin)});
  Event rm = ev(EventType::kCgroupRmdir, 1, 7'000);
  rm.dst_root = 4;
  rm.dst_path = "/a";
  rm.dst_id = 100;
  apply({rm, end(10, 8'000, l)});
  LockSnapshot s = snap();
  EXPECT_EQ(findCg(s, "/a"), nullptr);
  EXPECT_EQ(K(s.node, LockKind::kSpinlock).count, 1u);
  // A new cgroup reusing the slot starts from zero.
  resolver_->paths[20] = "/c";
  apply({ev(EventType::kDirectReclaimBegin, 20, 9'000), begin(20, 9'100, l, kLcbSpin),
         end(20, 9'200, l)});
  s = snap();
  const LockCgroupSeries* c = findCg(s, "/c");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(K(c->contention, LockKind::kSpinlock).count, 1u);
}

TEST_F(LockAggregatorTest, TopLocksBoundedWithOther) {
  std::vector<Event> v;
  uint64_t total = 0, total_wait = 0;
  // 2000 distinct addresses (beyond kMaxTrackedLocks), lock i waits i ns;
  // 0xffff0 is the heaviest by far.
  for (uint64_t i = 1; i <= 2000; ++i) {
    v.push_back(begin(40, 10 * i, 0x10000 + i, kLcbSpin));
    v.push_back(end(40, 10 * i + i, 0x10000 + i));
    total += 1;
    total_wait += i;
  }
  for (int i = 0; i < 3; ++i) {
    v.push_back(begin(41, 100'000 + i, 0xffff0, kLcbMutex | kLcbSpin));
    v.push_back(end(41, 200'000 + i, 0xffff0));
    total += 1;
    total_wait += 100'000;
  }
  apply(v);
  LockSnapshot s = snap();
  ASSERT_EQ(s.top_locks.size(), kTopLocks);
  EXPECT_EQ(s.top_locks[0].addr, 0xffff0u);
  EXPECT_EQ(s.top_locks[0].count, 3u);
  EXPECT_EQ(s.top_locks[0].kind, LockKind::kMutex);
  EXPECT_EQ(s.top_locks[1].addr, 0x10000u + 2000);  // the heaviest spinlock
  uint64_t n = s.other_locks.count, w = s.other_locks.wait_ns;
  for (const auto& l : s.top_locks) {
    n += l.count;
    w += l.wait_ns;
  }
  EXPECT_EQ(n, total);  // nothing lost: folded into "other"
  EXPECT_EQ(w, total_wait);
}

TEST_F(LockAggregatorTest, RstatWaitHoldAndFlushesPerCgroup) {
  apply({rstat(EventType::kRstatLockContended, 50, 1'000, 100),
         rstat(EventType::kRstatLocked, 50, 1'400, 100, true),
         rstat(EventType::kRstatUnlock, 50, 2'400, 100),
         rstat(EventType::kRstatLocked, 50, 3'000, 100, false),  // uncontended
         rstat(EventType::kRstatUnlock, 50, 3'050, 100),
         rstat(EventType::kRstatLocked, 51, 3'000, 999, false),  // unknown id
         rstat(EventType::kRstatUnlock, 51, 3'010, 999),
         rstat(EventType::kRstatLocked, 52, 3'000, 200, false, /*root=*/0),  // other hierarchy
         rstat(EventType::kRstatUnlock, 52, 3'010, 200, false, 0)});
  Event f1 = ev(EventType::kMemcgFlushStats, 50, 4'000);
  f1.cg_id = 1;
  f1.needs_flush = true;
  Event f2 = f1;
  f2.needs_flush = false;
  apply({f1, f2, f2});
  LockSnapshot s = snap();
  const LockCgroupSeries* a = findCg(s, "/a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->rstat.contended, 1u);
  EXPECT_EQ(a->rstat.wait.count, 1u);
  EXPECT_EQ(a->rstat.wait.sum, 400u);
  EXPECT_EQ(a->rstat.hold.count, 2u);
  EXPECT_EQ(a->rstat.hold.sum, 1'050u);
  const LockCgroupSeries* unk = findCg(s, "_unknown");
  ASSERT_NE(unk, nullptr);
  EXPECT_EQ(unk->rstat.hold.count, 1u);
  EXPECT_EQ(findCg(s, "/b"), nullptr);  // root 0 is not the memory hierarchy
  const LockCgroupSeries* root = findCg(s, "/");
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->rstat.flushes, 1u);
  EXPECT_EQ(root->rstat.flushes_skipped, 2u);
  EXPECT_EQ(s.rstat_unpaired, 0u);
  // Misses are walked once, then cached.
  int walks = resolver_->walks;
  apply({rstat(EventType::kRstatLocked, 51, 5'000, 999), rstat(EventType::kRstatUnlock, 51, 5'001, 999)});
  EXPECT_EQ(resolver_->walks, walks);
}

TEST_F(LockAggregatorTest, CallerStacksCountedAndBounded) {
  auto stack = [](int32_t pid, std::vector<uint64_t> frames, std::vector<uint8_t>& buf) {
    buf.resize(frames.size() * 8);
    std::memcpy(buf.data(), frames.data(), buf.size());
    Event e = ev(EventType::kKernelStack, pid, 1);
    e.stack = buf.data();
    e.stack_depth = static_cast<uint16_t>(frames.size());
    return e;
  };
  std::vector<uint8_t> b1, b2;
  apply({begin(60, 1, 0xa, kLcbWrite), stack(60, {0x1, 0x2, 0x3}, b1),
         begin(61, 1, 0xb, kLcbSpin), stack(61, {0x1, 0x2, 0x3}, b1),
         stack(61, {0x7, 0x8}, b2)});
  LockSnapshot s = snap();
  ASSERT_EQ(s.top_stacks.size(), 2u);
  EXPECT_EQ(s.top_stacks[0].count, 2u);
  EXPECT_EQ(s.top_stacks[0].kind, LockKind::kRwsemWrite);
  EXPECT_EQ(s.top_stacks[0].frames, (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(s.stacks_sampled, 3u);
  // Many distinct stacks: at most kTopStacks reported, the rest in "other".
  std::vector<std::vector<uint8_t>> bufs(1000);
  std::vector<Event> v;
  for (uint64_t i = 0; i < 1000; ++i) v.push_back(stack(62, {0x100 + i}, bufs[i]));
  apply(v);
  s = snap();
  EXPECT_EQ(s.top_stacks.size(), kTopStacks);
  uint64_t n = s.stacks_other;
  for (const auto& t : s.top_stacks) n += t.count;
  EXPECT_EQ(n, s.stacks_sampled);
  EXPECT_EQ(s.stacks_sampled, 1003u);
}

TEST(LockStatsBounds, OnlyTasksInFlightKeepState) {
  LockStats ls;
  for (int32_t pid = 1; pid <= 1000; ++pid) {
    ls.contentionBegin(begin(pid, 10, 0xa000 + pid, kLcbSpin), LockStats::kNodeWide);
    ls.contentionEnd(end(pid, 20, 0xa000 + pid));
    ls.rstat(rstat(EventType::kRstatLocked, pid, 30, 1), 0);
    ls.rstat(rstat(EventType::kRstatUnlock, pid, 40, 1), 0);
  }
  EXPECT_EQ(ls.openTasks(), 0u);
  ls.contentionBegin(begin(7, 50, 0xb000, kLcbWrite), LockStats::kNodeWide);  // in flight
  ls.rstat(rstat(EventType::kRstatLocked, 8, 50, 1), 0);
  EXPECT_EQ(ls.openTasks(), 2u);
  ls.forget(7);
  EXPECT_EQ(ls.openTasks(), 1u);
}

// --- symbols and reports ---------------------------------------------------------

TEST(Kallsyms, FixtureTextAndData) {
  auto k = Kallsyms::load(kKallsyms);
  ASSERT_TRUE(k.ok()) << k.error().message();
  ASSERT_TRUE(k->usable());
  // Data symbols need a dense table: the fixture has only a few.
  EXPECT_EQ(k->symbolizeData(0xffffffff82c41a40ull), std::nullopt);
  EXPECT_EQ(k->symbolizeText(0xffffffff8226b110ull), "down_write");
  EXPECT_EQ(k->symbolizeText(0xffffffff8226aa42ull), "rwsem_down_write_slowpath+0x52");
  EXPECT_EQ(k->textName(0xffffffff813e9551ull), "trace_event_raw_event_contention_begin");
  EXPECT_EQ(k->symbolizeText(0xffffffffc0a01010ull), "foo_lock_fn+0x10");  // module
  EXPECT_EQ(k->symbolizeText(0xffff888000001000ull), std::nullopt);  // heap: below all
  EXPECT_EQ(k->symbolizeText(0xffffffffc0a02000ull), std::nullopt);  // above the last

  auto text = readWholeFile(kKallsyms);
  ASSERT_TRUE(text.ok());
  Kallsyms dense = Kallsyms::parse(*text, /*min_data_symbols=*/1);
  EXPECT_EQ(dense.symbolizeData(0xffffffff82c41a40ull), "cgroup_mutex");
  EXPECT_EQ(dense.symbolizeData(0xffffffff82c42078ull), "init_mm+0x78");
  EXPECT_EQ(dense.symbolizeData(0xffffffff82c43000ull), std::nullopt);  // last: no bound
  EXPECT_EQ(dense.symbolizeData(0xffff888000001000ull), std::nullopt);
}

TEST(Kallsyms, HiddenAddressesAreUnusable) {
  Kallsyms k = Kallsyms::parse(
      "0000000000000000 T _stext\n0000000000000000 t mutex_lock\n0000000000000000 D x\n");
  EXPECT_FALSE(k.usable());
  EXPECT_EQ(k.symbolizeText(0xffffffff8226b110ull), std::nullopt);
  EXPECT_EQ(hexAddr(0xffff888000001000ull), "0xffff888000001000");
}

LockSnapshot reportSnapshot() {
  LockSnapshot s;
  s.enabled = true;
  s.callers = true;
  LockKindStats& sp = s.node[static_cast<size_t>(LockKind::kSpinlock)];
  sp.count = 5;
  sp.wait.observe(150);
  sp.wait.observe(2'000'000'000);  // > 1 s: +Inf only
  LockCgroupSeries c;
  c.label = "/memcg_exporter_test_x";
  c.contention[static_cast<size_t>(LockKind::kMutex)].count = 2;
  c.contention[static_cast<size_t>(LockKind::kMutex)].wait.observe(3'000);
  c.contention[static_cast<size_t>(LockKind::kMutex)].wait.observe(3'000);
  c.rstat.contended = 1;
  c.rstat.wait.observe(700);
  c.rstat.hold.observe(2'000);
  c.rstat.flushes = 3;
  c.rstat.flushes_skipped = 4;
  s.cgroups.push_back(c);
  s.top_locks.push_back({0xffffffff82c41a40ull, LockKind::kMutex, 2, 6'000});
  s.top_locks.push_back({0xffff888000001000ull, LockKind::kSpinlock, 5, 150});
  s.other_locks = {0, LockKind::kOther, 7, 900};
  TopStack st;
  st.kind = LockKind::kRwsemWrite;
  st.count = 4;
  st.frames = {0xffffffff813e9551ull, 0xffffffff8226aa42ull, 0xffffffff8226b110ull,
               0xffff888000000000ull};
  s.top_stacks.push_back(st);
  s.stacks_sampled = 9;
  s.stacks_other = 5;
  return s;
}

Kallsyms fixtureKallsyms() {
  auto text = readWholeFile(kKallsyms);
  EXPECT_TRUE(text.ok());
  return Kallsyms::parse(text.ok() ? *text : std::string(), 1);
}

TEST(LockReport, SymbolisedWithKallsyms) {
  Kallsyms k = fixtureKallsyms();
  LockIds ids;
  nlohmann::json j = lockReport(reportSnapshot(), &k, ids);
  EXPECT_EQ(j["top_locks"][0]["symbol"], "cgroup_mutex");
  EXPECT_EQ(j["top_locks"][0]["id"], "lock-1");
  EXPECT_EQ(j["top_locks"][1]["id"], "lock-2");
  EXPECT_TRUE(j["top_locks"][1]["symbol"].is_null());  // heap lock
  EXPECT_EQ(j["other_locks"]["count"], 7);
  // The tracing frame on top is dropped; unknown frames are "?".
  EXPECT_EQ(j["callers"][0]["frames"],
            (nlohmann::json{"rwsem_down_write_slowpath+0x52", "down_write", "?"}));
  EXPECT_EQ(j["callers"][0]["kind"], "rwsem_write");
  EXPECT_EQ(j["callers_sampled"], 9);
  EXPECT_EQ(j["node"]["spinlock"]["count"], 5);
  EXPECT_EQ(j["cgroups"][0]["rstat"]["flushes_skipped"], 4);
}

// A bpf backend's sample starts in its own program and the runner calling
// it, then the tracepoint's iterator: all three are dropped, as the
// stacktrace trigger's frames are.
TEST(LockReport, BpfProgramFramesDropped) {
  const Kallsyms k = Kallsyms::parse(
      "ffffffff81100000 T bpf_trace_run2\n"
      "ffffffff81200000 T __traceiter_contention_begin\n"
      "ffffffff81300000 t rwsem_down_write_slowpath\n"
      "ffffffff81400000 T down_write\n"
      "ffffffff81500000 T _etext\n"
      "ffffffffc0001000 t bpf_prog_58d3d3e80a6c8e00_contention_begin\t[bpf]\n"
      "ffffffffc0002000 t bpf_prog_ffffffffffffffff_other\t[bpf]\n");
  LockSnapshot s;
  s.enabled = s.callers = true;
  TopStack st;
  st.kind = LockKind::kRwsemWrite;
  st.count = 1;
  st.frames = {0xffffffffc0001202ull, 0xffffffff81100103ull, 0xffffffff8120002full,
               0xffffffff813003ccull, 0xffffffff81400066ull};
  s.top_stacks.push_back(st);
  s.stacks_sampled = 1;
  LockIds ids;
  const nlohmann::json j = lockReport(s, &k, ids);
  EXPECT_EQ(j["callers"][0]["frames"],
            (nlohmann::json{"rwsem_down_write_slowpath+0x3cc", "down_write+0x66"}));
}

// Every address of reportSnapshot(), as hex digits with and without "0x".
std::vector<std::string> snapshotAddresses() {
  LockSnapshot s = reportSnapshot();
  std::vector<uint64_t> all;
  for (const TopLock& l : s.top_locks) all.push_back(l.addr);
  for (const TopStack& st : s.top_stacks) all.insert(all.end(), st.frames.begin(), st.frames.end());
  std::vector<std::string> out;
  for (uint64_t a : all) out.push_back(hexAddr(a).substr(2));
  return out;
}

TEST(LockReport, NoKernelAddressesByDefault) {
  Kallsyms k = fixtureKallsyms();
  LockIds ids;
  for (const Kallsyms* syms : std::vector<const Kallsyms*>{nullptr, &k}) {
    nlohmann::json j = lockReport(reportSnapshot(), syms, ids);
    const std::string text = j.dump();
    for (const auto& row : j["top_locks"]) EXPECT_FALSE(row.contains("addr")) << row;
    for (const std::string& a : snapshotAddresses()) {
      EXPECT_EQ(text.find(a), std::string::npos) << a << " in " << text;
    }
    if (!syms) {
      // Nothing named: no hex at all ("name+0xoff" offsets only come with symbols).
      EXPECT_EQ(text.find("0x"), std::string::npos) << text;
      EXPECT_EQ(j["callers"][0]["frames"], (nlohmann::json{"?", "?", "?", "?"}));
    }
  }
}

TEST(LockReport, AddressesOnlyWhenAsked) {
  Kallsyms k = fixtureKallsyms();
  LockIds ids;
  nlohmann::json j = lockReport(reportSnapshot(), &k, ids, /*addresses=*/true);
  EXPECT_EQ(j["top_locks"][0]["addr"], "0xffffffff82c41a40");
  EXPECT_EQ(j["top_locks"][1]["addr"], "0xffff888000001000");
  EXPECT_EQ(j["top_locks"][0]["id"], "lock-1");  // ids stay, for dashboards
  EXPECT_EQ(j["callers"][0]["frames"],
            (nlohmann::json{"rwsem_down_write_slowpath+0x52", "down_write",
                            "0xffff888000000000"}));

  nlohmann::json h = lockReport(reportSnapshot(), nullptr, ids, true);
  EXPECT_FALSE(h["symbols"].get<bool>());
  EXPECT_TRUE(h["top_locks"][0]["symbol"].is_null());
  EXPECT_EQ(h["callers"][0]["frames"].size(), 4u);
  EXPECT_EQ(h["callers"][0]["frames"][0], "0xffffffff813e9551");
}

TEST(LockReport, IdsStableAcrossReports) {
  LockIds ids;
  LockSnapshot a = reportSnapshot();
  nlohmann::json j1 = lockReport(a, nullptr, ids);
  // The next report ranks the locks the other way round and adds a third.
  LockSnapshot b = a;
  std::swap(b.top_locks[0], b.top_locks[1]);
  b.top_locks.push_back({0xffff888000002000ull, LockKind::kMutex, 1, 10});
  nlohmann::json j2 = lockReport(b, nullptr, ids);
  EXPECT_EQ(j2["top_locks"][0]["id"], j1["top_locks"][1]["id"]);
  EXPECT_EQ(j2["top_locks"][1]["id"], j1["top_locks"][0]["id"]);
  EXPECT_NE(j1["top_locks"][0]["id"], j1["top_locks"][1]["id"]);
  EXPECT_EQ(j2["top_locks"][2]["id"], "lock-3");
  // Another LockIds (another process) numbers from 1 again: ids are not the address.
  LockIds other;
  EXPECT_EQ(lockReport(b, nullptr, other)["top_locks"][0]["id"], "lock-1");
}

TEST(LockIds, BoundedLeastRecentlyUsedFirstOut) {
  LockIds ids(3);
  EXPECT_EQ(ids.id(0xa000), "lock-1");
  EXPECT_EQ(ids.id(0xb000), "lock-2");
  EXPECT_EQ(ids.id(0xc000), "lock-3");
  EXPECT_EQ(ids.id(0xa000), "lock-1");  // a is now the most recent; b the least
  EXPECT_EQ(ids.id(0xd000), "lock-4");  // full: b is forgotten
  EXPECT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids.id(0xa000), "lock-1");
  EXPECT_EQ(ids.id(0xc000), "lock-3");
  EXPECT_EQ(ids.id(0xd000), "lock-4");
  EXPECT_EQ(ids.id(0xb000), "lock-5");  // back: a new id, never an old one reused
  EXPECT_EQ(ids.size(), 3u);
  EXPECT_EQ(LockIds::kCapacity, 4096u);
  LockIds big;
  for (uint64_t a = 0; a < LockIds::kCapacity + 10; ++a) big.id(0xffff888000000000ull + a * 64);
  EXPECT_EQ(big.size(), LockIds::kCapacity);
  EXPECT_EQ(big.id(0xffff888000000000ull), "lock-" + std::to_string(LockIds::kCapacity + 11));
}

TEST(LockIds, ConcurrentCallersAgree) {
  LockIds ids;
  std::vector<std::string> seen(4);
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&, t] {
      for (uint64_t a = 0; a < 1000; ++a) ids.id(0x1000 + a);
      seen[t] = ids.id(0x1000 + 500);
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(ids.size(), 1000u);
  for (const auto& s : seen) EXPECT_EQ(s, seen[0]);
}

std::string render(const LockSnapshot& l, metrics::Sink& sink) {
  TraceSnapshot s;
  s.running = true;
  s.locks = l;
  renderTraceSnapshot(s, sink);
  std::string t;
  metrics::writeText(sink.families(), t);
  return t;
}
bool hasLine(const std::string& t, const std::string& line) {
  return t.find("\n" + line + "\n") != std::string::npos || t.rfind(line + "\n", 0) == 0;
}

TEST(LockMetrics, RenderedOnlyWhenEnabled) {
  LockSnapshot off = reportSnapshot();
  off.enabled = false;
  metrics::Sink s1;
  EXPECT_EQ(render(off, s1).find("lock"), std::string::npos);

  metrics::Sink s2;
  std::string t = render(reportSnapshot(), s2);
  EXPECT_TRUE(hasLine(t, "memcg_node_lock_contentions_total{kind=\"spinlock\"} 5")) << t;
  EXPECT_TRUE(hasLine(t, "memcg_node_lock_contention_wait_seconds_bucket{kind=\"spinlock\",le=\"2.5e-07\"} 1")) << t;
  EXPECT_TRUE(hasLine(t, "memcg_node_lock_contention_wait_seconds_bucket{kind=\"spinlock\",le=\"1\"} 1")) << t;
  EXPECT_TRUE(hasLine(t, "memcg_node_lock_contention_wait_seconds_bucket{kind=\"spinlock\",le=\"+Inf\"} 2")) << t;
  EXPECT_TRUE(hasLine(t, "memcg_lock_contentions_total{cgroup=\"/memcg_exporter_test_x\",kind=\"mutex\"} 2")) << t;
  EXPECT_TRUE(hasLine(t, "memcg_cgroup_rstat_lock_contended_total{cgroup=\"/memcg_exporter_test_x\"} 1")) << t;
  EXPECT_TRUE(hasLine(t, "memcg_cgroup_rstat_lock_hold_seconds_count{cgroup=\"/memcg_exporter_test_x\"} 1")) << t;
  EXPECT_TRUE(hasLine(t, "memcg_stats_flushes_total{cgroup=\"/memcg_exporter_test_x\",outcome=\"skipped\"} 4")) << t;
  EXPECT_TRUE(hasLine(t, "memcg_lock_caller_samples_total 9")) << t;
  EXPECT_EQ(t.find("0xffff"), std::string::npos);  // no addresses in metrics
}

TEST(LockMetrics, PassesPromtool) {
#ifndef MEMCG_PROMTOOL
  GTEST_SKIP() << "promtool not found at configure time";
#else
  metrics::Sink sink;
  EXPECT_TRUE(memcg::testing::promtoolCheck(MEMCG_PROMTOOL, render(reportSnapshot(), sink)));
#endif
}

}  // namespace
}  // namespace memcg::tracing
