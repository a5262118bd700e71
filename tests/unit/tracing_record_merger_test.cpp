// The reader's cross-CPU order on synthesised ring-buffer
// sub-buffers: RecordMerger must hand records out in global timestamp order
// even when a CPU's record arrives a round after newer records of another
// CPU, which is what a round-by-round reader sees when a task migrates.
// No root, no tracefs.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <map>
#include <vector>

#include "tracing/record_merger.h"
#include "tracing/tracefs_session.h"

namespace memcg::tracing {
namespace {

constexpr size_t kSubbuf = 4096;
constexpr uint64_t kNoLimit = std::numeric_limits<uint64_t>::max();

// One record: what the test sink needs to pair begins with ends.
struct Rec {
  uint64_t ts;
  uint32_t kind;  // 1 begin, 2 end
  uint32_t pid;
  uint64_t seq;  // unique, to prove each record is handed out exactly once
};

// A 64-bit little-endian ring-buffer page (include/linux/ring_buffer.h,
// kernel/trace/ring_buffer.c): u64 time stamp, u64 commit (bytes of data),
// then events: a u32 header (type_len:5 = payload words, time_delta:27),
// then the payload. Deltas must fit 27 bits here (the tests' do).
std::vector<char> page(const std::vector<Rec>& recs) {
  std::vector<char> p(kSubbuf, 0);
  const uint64_t base = recs.empty() ? 0 : recs.front().ts;
  std::memcpy(p.data(), &base, 8);
  size_t off = 16;
  uint64_t prev = base;
  for (const Rec& r : recs) {
    const uint64_t delta = r.ts - prev;
    EXPECT_LT(delta, 1u << 27);
    prev = r.ts;
    const uint32_t hdr = 4u | static_cast<uint32_t>(delta << 5);  // 4 words = 16 bytes
    std::memcpy(p.data() + off, &hdr, 4);
    std::memcpy(p.data() + off + 4, &r.kind, 4);
    std::memcpy(p.data() + off + 8, &r.pid, 4);
    std::memcpy(p.data() + off + 12, &r.seq, 8);
    off += 20;
    EXPECT_LE(off, kSubbuf);
  }
  const uint64_t commit = off - 16;
  std::memcpy(p.data() + 8, &commit, 8);
  return p;
}

// Pairs each pid's begin with its next end, as the aggregator does: an end
// with no begin open is unpaired, a begin while one is open replaces it.
class PairingSink : public RecordSink {
 public:
  void onRecord(const void* data, uint32_t size, uint64_t ts, int cpu) override {
    ASSERT_EQ(size, 16u);  // the payload, after the event header
    Rec r{};
    std::memcpy(&r.kind, static_cast<const char*>(data), 4);
    std::memcpy(&r.pid, static_cast<const char*>(data) + 4, 4);
    std::memcpy(&r.seq, static_cast<const char*>(data) + 8, 8);
    r.ts = ts;
    seen.push_back(r);
    cpus.push_back(cpu);
    if (r.kind == 1) {
      if (open.count(r.pid)) ++unpaired_begins;
      open[r.pid] = ts;
    } else {
      auto it = open.find(r.pid);
      if (it == open.end()) {
        ++unpaired_ends;
        return;
      }
      ++pairs;
      stall += ts - it->second;
      open.erase(it);
    }
  }
  void onRoundEnd() override { ++rounds; }
  std::vector<Rec> seen;
  std::vector<int> cpus;
  std::map<uint32_t, uint64_t> open;
  uint64_t pairs = 0, unpaired_ends = 0, unpaired_begins = 0, stall = 0, rounds = 0;
};

void feed(RecordMerger& m, size_t cpu, const std::vector<Rec>& recs) {
  if (recs.empty()) return;
  char* dst = m.reserve(cpu);
  ASSERT_NE(dst, nullptr);
  auto p = page(recs);
  std::memcpy(dst, p.data(), p.size());
  ASSERT_TRUE(m.commit(cpu, p.size()).ok);
}

void round(RecordMerger& m, PairingSink& sink, uint64_t watermark) {
  m.emit(watermark, &sink);
  sink.onRoundEnd();
  m.compact();
}

// The read order that breaks a per-round merge: the reader reads CPU0 (the
// begin at 200 is not written yet), then CPU1 (the task moved; its end at 300
// is there). Round 2 finds the begin on CPU0.
TEST(RecordMerger, BeginReadARoundAfterItsEndIsPairedInOrder) {
  RecordMerger m(kSubbuf, 8);
  ASSERT_TRUE(m.addCpu(0, nullptr));
  ASSERT_TRUE(m.addCpu(1, nullptr));
  PairingSink sink;
  // Round 1: trace clock 150 before reading; CPU0 empty; CPU1 has the end.
  feed(m, 1, {{300, 2, 7, 1}});
  m.emit(150, &sink);
  EXPECT_EQ(m.held(), 1u);
  EXPECT_TRUE(sink.seen.empty());  // the end waits: newer than the watermark
  sink.onRoundEnd();
  m.compact();
  // Round 2: clock 1000; CPU0 has the begin.
  feed(m, 0, {{200, 1, 7, 0}});
  round(m, sink, 1000);
  ASSERT_EQ(sink.seen.size(), 2u);
  EXPECT_EQ(sink.seen[0].kind, 1u);
  EXPECT_EQ(sink.cpus[0], 0);
  EXPECT_EQ(sink.seen[1].kind, 2u);
  EXPECT_EQ(sink.cpus[1], 1);
  EXPECT_EQ(sink.pairs, 1u);
  EXPECT_EQ(sink.unpaired_ends, 0u);
  EXPECT_EQ(sink.stall, 100u);
  EXPECT_TRUE(sink.open.empty());
  EXPECT_EQ(m.outOfOrder(), 0u);
  EXPECT_EQ(m.held(), 0u);

  // The same reads merged per round only (no watermark): what the reader did
  // before, and what lost the order on the live kernel.
  RecordMerger old(kSubbuf, 8);
  ASSERT_TRUE(old.addCpu(0, nullptr));
  ASSERT_TRUE(old.addCpu(1, nullptr));
  PairingSink bad;
  feed(old, 1, {{300, 2, 7, 1}});
  round(old, bad, kNoLimit);
  feed(old, 0, {{200, 1, 7, 0}});
  round(old, bad, kNoLimit);
  EXPECT_EQ(bad.pairs, 0u);
  EXPECT_EQ(bad.unpaired_ends, 1u);
  EXPECT_EQ(old.outOfOrder(), 1u);  // and it is counted
}

// A task that moves between the two CPUs on every reclaim, read by a
// simulated round-by-round reader: CPU0 at the round's time R, CPU1 at R+40;
// each read returns what was committed by then. Watermark: R (the clock read
// before any CPU). Every pair must come out right; without the watermark the
// same reads lose and overcount stalls.
TEST(RecordMerger, MigratingTaskPairsExactlyUnderRoundByRoundReads) {
  struct Timed {
    Rec r;
    int cpu;
  };
  std::vector<Timed> all;
  uint64_t seq = 0, expect_stall = 0;
  const int kPairs = 200;
  for (int k = 0; k < kPairs; ++k) {
    const uint64_t b = 1000 + 97 * static_cast<uint64_t>(k);
    const uint64_t e = b + 30 + (k % 7) * 5;
    all.push_back({{b, 1, 42, seq++}, k % 2});
    all.push_back({{e, 2, 42, seq++}, (k + 1) % 2});  // ends on the other CPU
    expect_stall += e - b;
  }
  auto simulate = [&](bool watermark, PairingSink& sink, RecordMerger& m) {
    std::vector<size_t> next(2, 0);  // per CPU: index into its records
    std::vector<std::vector<Rec>> per_cpu(2);
    for (const auto& t : all) per_cpu[t.cpu].push_back(t.r);
    for (uint64_t R = 1000; R < 1000 + 97 * kPairs + 500; R += 71) {
      for (size_t c = 0; c < 2; ++c) {
        const uint64_t read_at = R + 40 * c;
        std::vector<Rec> batch;
        while (next[c] < per_cpu[c].size() && per_cpu[c][next[c]].ts <= read_at) {
          batch.push_back(per_cpu[c][next[c]++]);
        }
        feed(m, c, batch);
      }
      round(m, sink, watermark ? R : kNoLimit);
    }
    round(m, sink, kNoLimit);  // the final flush
  };
  PairingSink good;
  RecordMerger m(kSubbuf, 8);
  ASSERT_TRUE(m.addCpu(0, nullptr));
  ASSERT_TRUE(m.addCpu(1, nullptr));
  simulate(true, good, m);
  ASSERT_EQ(good.seen.size(), all.size());
  for (size_t i = 1; i < good.seen.size(); ++i) {
    EXPECT_LE(good.seen[i - 1].ts, good.seen[i].ts) << "at " << i;
  }
  EXPECT_EQ(good.pairs, static_cast<uint64_t>(kPairs));
  EXPECT_EQ(good.unpaired_ends, 0u);
  EXPECT_EQ(good.unpaired_begins, 0u);
  EXPECT_EQ(good.stall, expect_stall);
  EXPECT_EQ(m.outOfOrder(), 0u);

  PairingSink bad;
  RecordMerger old(kSubbuf, 8);
  ASSERT_TRUE(old.addCpu(0, nullptr));
  ASSERT_TRUE(old.addCpu(1, nullptr));
  simulate(false, bad, old);
  EXPECT_GT(bad.unpaired_ends + bad.unpaired_begins, 0u);  // the test can fail
  EXPECT_NE(bad.stall, expect_stall);
  EXPECT_GT(old.outOfOrder(), 0u);
}

// A CPU read only in part (its round's share taken) may still hold records
// older than what another CPU has: the watermark stops at its newest one.
TEST(RecordMerger, CpuNotDrainedBoundsTheWatermark) {
  RecordMerger m(kSubbuf, 8);
  ASSERT_TRUE(m.addCpu(0, nullptr));
  ASSERT_TRUE(m.addCpu(1, nullptr));
  PairingSink sink;
  feed(m, 0, {{100, 1, 1, 0}, {500, 2, 1, 1}});
  feed(m, 1, {{400, 1, 2, 2}, {600, 2, 2, 3}});
  m.setDrained(0, false);
  m.emit(10'000, &sink);
  ASSERT_EQ(sink.seen.size(), 3u);
  EXPECT_EQ(sink.seen[0].ts, 100u);
  EXPECT_EQ(sink.seen[1].ts, 400u);
  EXPECT_EQ(sink.seen[2].ts, 500u);
  EXPECT_EQ(m.held(), 1u);  // CPU1's 600
  sink.onRoundEnd();
  m.compact();
  feed(m, 0, {{550, 1, 3, 4}});  // the rest of CPU0: older than CPU1's 600
  round(m, sink, 10'000);
  ASSERT_EQ(sink.seen.size(), 5u);
  EXPECT_EQ(sink.seen[3].ts, 550u);
  EXPECT_EQ(sink.seen[4].ts, 600u);
  EXPECT_EQ(m.outOfOrder(), 0u);
}

// Held records span sub-buffers and part of one: compaction moves them to the
// front of storage and the cursor finds the same record again; each record is
// handed out once, in order.
TEST(RecordMerger, HeldRecordsSurviveCompactionAcrossPages) {
  RecordMerger m(kSubbuf, 4);
  ASSERT_TRUE(m.addCpu(0, nullptr));
  PairingSink sink;
  uint64_t seq = 0;
  auto make = [&](uint64_t from, int n) {
    std::vector<Rec> v;
    for (int i = 0; i < n; ++i) v.push_back({from + 10 * static_cast<uint64_t>(i), 1, 9, seq++});
    return v;
  };
  feed(m, 0, make(100, 5));  // 100..140
  feed(m, 0, make(150, 5));  // 150..190
  feed(m, 0, make(200, 5));  // 200..240
  round(m, sink, 165);
  EXPECT_EQ(sink.seen.size(), 7u);  // 100..160
  EXPECT_EQ(m.held(), 8u);
  feed(m, 0, make(250, 5));
  round(m, sink, 215);
  EXPECT_EQ(sink.seen.size(), 12u);
  round(m, sink, kNoLimit);
  ASSERT_EQ(sink.seen.size(), 20u);
  for (size_t i = 0; i < sink.seen.size(); ++i) EXPECT_EQ(sink.seen[i].seq, i);
  EXPECT_EQ(m.held(), 0u);
}

// A record that comes later than the bound allows is handed out and counted.
TEST(RecordMerger, LateRecordIsCountedNotDropped) {
  RecordMerger m(kSubbuf, 8);
  ASSERT_TRUE(m.addCpu(0, nullptr));
  ASSERT_TRUE(m.addCpu(1, nullptr));
  PairingSink sink;
  feed(m, 1, {{300, 2, 5, 1}});
  round(m, sink, 400);
  feed(m, 0, {{200, 1, 5, 0}});  // committed after the reader passed CPU0
  round(m, sink, 1000);
  EXPECT_EQ(sink.seen.size(), 2u);
  EXPECT_EQ(m.outOfOrder(), 1u);
}

// A stream takes at most pages_per_round sub-buffers per round, and storage
// for twice that: what waits plus one round's worth.
TEST(RecordMerger, StoragePerRoundIsBounded) {
  RecordMerger m(kSubbuf, 2);
  ASSERT_TRUE(m.addCpu(0, nullptr));
  PairingSink sink;
  feed(m, 0, {{100, 1, 1, 0}});
  feed(m, 0, {{200, 1, 1, 1}});
  EXPECT_EQ(m.reserve(0), nullptr);
  round(m, sink, 50);  // nothing handed out, both pages kept
  feed(m, 0, {{300, 1, 1, 2}});
  feed(m, 0, {{400, 1, 1, 3}});
  EXPECT_EQ(m.reserve(0), nullptr);  // full
  round(m, sink, kNoLimit);
  EXPECT_EQ(sink.seen.size(), 4u);
  EXPECT_NE(m.reserve(0), nullptr);
}

TEST(TraceClock, SelectedClockAndItsClockId) {
  EXPECT_EQ(selectedTraceClock("local global counter uptime perf [mono] mono_raw boot tai\n"),
            "mono");
  EXPECT_EQ(selectedTraceClock("[local] global counter\n"), "local");
  EXPECT_EQ(selectedTraceClock("local global\n"), "");
  EXPECT_EQ(traceClockId("mono"), CLOCK_MONOTONIC);
  EXPECT_EQ(traceClockId("boot"), CLOCK_BOOTTIME);
  EXPECT_EQ(traceClockId("local"), -1);
  EXPECT_EQ(traceClockId("global"), -1);
}

}  // namespace
}  // namespace memcg::tracing
