// --collector.vmscan.backend without root or BPF: the flag's values, the
// info metric of a backend that is down, and bpf::probe()'s reasons.
#include <gtest/gtest.h>

#include <array>
#include <set>
#include <stdexcept>
#include <string>
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

}  // namespace
}  // namespace memcg
