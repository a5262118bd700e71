// --collector.vmscan.backend without root or BPF: the flag's values, the
// info metric of a backend that is down, bpf::probe()'s reasons, and the
// bpf program's shared helpers (bucket search, lock callers' budget).
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "collectors/vmscan.h"
#include "metrics/text_format.h"
#include "tracing/bpf/bpf_tracer.h"
#include "tracing/bpf/memcg_trace_bpf.h"
#include "tracing/lock_stats.h"
#include "tracing/series_table.h"

namespace memcg {
namespace {

void setFlag(VmscanOptions& o, const std::string& name, const std::string& v) {
  for (auto& f : vmscanFlags(o)) {
    if (f.name == name) {
      f.set(v);
      return;
    }
  }
  FAIL() << "no flag " << name;
}

TEST(VmscanBackendFlag, ParsesEachValueAndRejectsOthers) {
  VmscanOptions o;
  EXPECT_EQ(o.backend, VmscanBackendChoice::kTracefs);  // the reference stays the default
  setFlag(o, "collector.vmscan.backend", "bpf");
  EXPECT_EQ(o.backend, VmscanBackendChoice::kBpf);
  setFlag(o, "collector.vmscan.backend", "auto");
  EXPECT_EQ(o.backend, VmscanBackendChoice::kAuto);
  setFlag(o, "collector.vmscan.backend", "tracefs");
  EXPECT_EQ(o.backend, VmscanBackendChoice::kTracefs);
  try {
    setFlag(o, "collector.vmscan.backend", "ebpf");
    ADD_FAILURE() << "ebpf accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("tracefs, bpf or auto"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(o.backend, VmscanBackendChoice::kTracefs);  // unchanged by the bad value
}

TEST(VmscanBackendInfo, DownBackendSaysWhichAndWhy) {
  VmscanBackend b;
  b.name = "bpf";
  b.reason = "kernel has no BTF (/nonexistent not readable)";
  auto c = makeVmscanCollector(nullptr, makeError(EPERM, "bpf", b.reason), b);
  CgroupTree tree;
  ScrapeContext ctx(tree);
  metrics::Sink sink;
  c->collect(ctx, sink);
  std::string t;
  metrics::writeText(sink.families(), t);
  EXPECT_NE(
      t.find("memcg_trace_backend_info{backend=\"bpf\",reason=\"" + b.reason + "\"} 1\n"),
      std::string::npos)
      << t;
  EXPECT_NE(t.find("memcg_trace_up 0\n"), std::string::npos) << t;
  EXPECT_EQ(ctx.errors.size(), 1u);
  // Every family written is described.
  std::set<std::string> described;
  for (const auto* d : c->describe()) described.insert(d->name);
  for (const auto& f : sink.families())
    EXPECT_TRUE(described.count(f.desc->name)) << f.desc->name;
  EXPECT_TRUE(described.count("memcg_trace_bpf_map_entries"));
  EXPECT_TRUE(described.count("memcg_trace_bpf_map_max_entries"));
}

TEST(BpfProbe, SaysWhatIsMissing) {
  tracing::bpf::BpfTracerOptions o;
  o.btf_path = "/nonexistent/memcg_exporter_test_btf";
  tracing::bpf::Availability a = tracing::bpf::probe(o);
  EXPECT_FALSE(a.ok);
  if (tracing::bpf::built()) {
    EXPECT_NE(a.reason.find("no BTF"), std::string::npos) << a.reason;
  } else {
    EXPECT_NE(a.reason.find("built without BPF"), std::string::npos) << a.reason;
  }
  // start() refuses with the same reason, leaving nothing behind.
  auto t = tracing::bpf::BpfTracer::start(o);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message().find(a.reason), std::string::npos) << t.error().message();
}

// The bpf program's bucket search picks the bucket the tracefs backend's
// histograms pick, at every bound, one either side, and between.
template <class H, size_t N>
void expectSameBuckets(const std::array<uint64_t, N>& bounds) {
  static_assert(N == MT_BOUNDS);
  mt_u64 padded[MT_BOUNDS_PAD];
  for (size_t i = 0; i < MT_BOUNDS_PAD; ++i) padded[i] = i < N ? bounds[i] : ~0ull;
  std::vector<uint64_t> values = {0, 1, ~0ull - 1};
  for (uint64_t b : bounds)
    for (uint64_t v : {b - 1, b, b + 1, b + b / 3}) values.push_back(v);
  for (uint64_t v : values) {
    H h;
    h.observe(v);
    size_t want = 0;
    while (h.buckets[want] == 0) ++want;
    EXPECT_EQ(mt_bucket_of(padded, v), want) << "v=" << v;
  }
}

TEST(BpfBucketSearch, PicksTheTracefsBackendsBucket) {
  expectSameBuckets<tracing::StallHistogram>(tracing::kStallBoundsNs);
  expectSameBuckets<tracing::LockHistogram>(tracing::kLockBoundsNs);
}

// The two backends take their switches and bounds from one set of flags:
// the bpf backend's options are the tracefs backend's, field by field
// (write_folio, throttled and reclaim_pages have no flag: on in both).
TEST(VmscanBackendOptions, BpfOptionsMirrorTheTracersForEveryFlagSetting) {
  const std::vector<std::string> switches = {
      "collector.vmscan.lru-detail", "collector.vmscan.shrink-slab", "collector.vmscan.locks",
      "collector.vmscan.lock-callers", "collector.vmscan.lock-addresses"};
  for (size_t mask = 0; mask < (1u << switches.size()); ++mask) {
    VmscanOptions v;
    for (size_t i = 0; i < switches.size(); ++i)
      setFlag(v, switches[i], (mask >> i) & 1 ? "true" : "false");
    for (CgroupMode mode : {CgroupMode::kV1, CgroupMode::kV2}) {
      MountLayout layout;
      layout.mode = mode;
      layout.memoryRoot = mode == CgroupMode::kV2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory";
      const tracing::TracerOptions t = tracerOptions(v, layout, "/host/proc");
      const tracing::bpf::BpfTracerOptions b = bpfTracerOptions(v, layout, "/host/proc");
      SCOPED_TRACE("mask " + std::to_string(mask) + (mode == CgroupMode::kV2 ? " v2" : " v1"));
      EXPECT_EQ(b.procfs, "/host/proc");
      EXPECT_EQ(b.memory_root, layout.memoryRoot);
      EXPECT_EQ(b.memory_v2, mode == CgroupMode::kV2);
      EXPECT_EQ(b.locks, t.locks);
      EXPECT_EQ(b.locks, v.locks || v.lockCallers);
      EXPECT_EQ(b.lock_addresses, v.lockAddresses);
      EXPECT_EQ(b.lock_callers, t.lock_callers);
      EXPECT_EQ(b.lock_callers, v.lockCallers);
      EXPECT_EQ(b.lock_caller_samples, t.lock_caller_samples);
      EXPECT_EQ(b.lock_caller_interval, t.lock_caller_interval);
      EXPECT_EQ(b.lru_detail, v.lruDetail);
      EXPECT_EQ(b.shrink_slab, v.shrinkSlab);
      EXPECT_EQ(b.write_folio, t.write_folio);
      EXPECT_EQ(b.throttled, t.throttled);
      EXPECT_EQ(b.reclaim_pages, t.reclaim_pages);
      EXPECT_TRUE(b.write_folio && b.throttled && b.reclaim_pages);
      EXPECT_EQ(b.max_cgroups, t.aggregator.max_cgroups);
      EXPECT_EQ(b.max_pids, t.aggregator.max_pids);
      EXPECT_EQ(b.max_processes, t.aggregator.max_processes);
      EXPECT_EQ(b.max_exited_processes, t.aggregator.max_exited_processes);
      EXPECT_EQ(b.test_lock_hold_ns, 0u);
    }
  }
}

// The lock callers' budget (mt_budget_take, run by the bpf program): at most
// `samples` per window, every window from zero, a reading of an earlier
// window (another CPU's clock a little behind) takes from the current one,
// and threads taking at once never exceed it.
TEST(BpfCallerBudget, AtMostSamplesPerWindow) {
  constexpr mt_u64 kIv = 1000;
  mt_u64 st = 0;  // window 0, nothing taken
  auto takeN = [&](mt_u64 now, mt_u64 samples, int tries) {
    int n = 0;
    for (int i = 0; i < tries; ++i) n += mt_budget_take(&st, now + static_cast<mt_u64>(i), kIv, samples);
    return n;
  };
  EXPECT_EQ(takeN(0, 4, 10), 4);
  EXPECT_EQ(takeN(5000, 4, 10), 4);  // a later window: a fresh budget
  EXPECT_EQ(takeN(5500, 4, 10), 0);  // same window, spent
  EXPECT_EQ(takeN(4999, 4, 1), 0);   // an earlier reading: the current window's, spent
  EXPECT_EQ(takeN(6000, 2, 1), 1);
  EXPECT_EQ(takeN(5999, 2, 1), 1);   // an earlier reading takes from window 6
  EXPECT_EQ(takeN(6001, 2, 5), 0);
  EXPECT_EQ(st >> MT_BUDGET_COUNT_BITS, 6u);  // not moved back by the earlier reading
  mt_u64 z = 0;
  EXPECT_EQ(mt_budget_take(&z, 1, kIv, 0), 0);  // no budget
  EXPECT_EQ(mt_budget_take(&z, 1, 0, 4), 0);    // no interval
  // Real nanosecond clocks (~2^61): the window still fits beside the count.
  mt_u64 big = 0;
  const mt_u64 now = 1ull << 61;
  EXPECT_EQ(mt_budget_take(&big, now, 500'000'000, 64), 1);
  EXPECT_EQ(big >> MT_BUDGET_COUNT_BITS, now / 500'000'000);

  // Four threads on a shared clock that the test moves one window at a time
  // over 200 windows: never more than `samples` a window in all.
  constexpr mt_u64 kSamples = 8, kWindows = 200;
  mt_u64 shared = 0;
  std::atomic<mt_u64> clock{kIv};
  std::atomic<bool> done{false};
  std::atomic<uint64_t> total{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      while (!done.load()) total += mt_budget_take(&shared, clock.load(), kIv, kSamples);
    });
  }
  for (mt_u64 w = 1; w <= kWindows; ++w) {
    clock = w * kIv;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  done = true;
  for (auto& t : threads) t.join();
  std::printf("[ unit ] %lu taken in %lu windows of %lu\n", static_cast<unsigned long>(total.load()),
              static_cast<unsigned long>(kWindows), static_cast<unsigned long>(kSamples));
  EXPECT_LE(total.load(), kSamples * kWindows);
  EXPECT_GT(total.load(), 0u);
}

}  // namespace
}  // namespace memcg
