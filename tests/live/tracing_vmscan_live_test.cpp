// The vmscan collector end to end on the running kernel: the tracing service
// started as the App starts it (startTracing() with tracerOptions() from the
// vmscan options and a real Discovery's layout, the host's defaults) and
// handed to makeVmscanCollector(), scraped into a Sink and rendered as text, compared with
// an independent count (a second private tracefs instance read as text; see
// tracing_live_support.h). Root, cgroup v1 memory and tracefs; skipped with the
// reason otherwise (except the "down" test, which needs nothing).
//
// Workload: a child in a fresh 64 MiB memcg streams a 256 MiB file from
// /var/tmp whose page cache was dropped first (posix_fadvise DONTNEED).
// Tolerance: reclaim count within max(1, 1%) of the reference, pages within
// max(32, 1%); both instances are on before the child starts and drained
// after it exits, so equality is expected. The stall histogram's count must
// equal the reclaim count exactly (tracing was on before any reclaim began,
// so no end is unpaired).
#include <gtest/gtest.h>

#include "collectors/collector.h"
#include "cgroupfs/discovery.h"
#include "collectors/vmscan.h"
#include "metrics/text_format.h"
#include "tests/support/tracing_live_support.h"
#include "tracing/tracer.h"

namespace memcg::tracing {
namespace {

using namespace live;  // NOLINT

struct Scraped {
  std::string text;
  size_t errors = 0;
};

Scraped scrape(Collector& c, Discovery& d) {
  auto tree = d.refresh();
  EXPECT_TRUE(tree.ok());
  Scraped out;
  if (!tree.ok()) return out;
  ScrapeContext ctx(**tree);
  metrics::Sink sink;
  c.collect(ctx, sink);
  metrics::writeText(sink.families(), out.text);
  out.errors = ctx.errors.size();
  return out;
}

TEST(VmscanCollectorLive, DownWhenTracingCannotStart) {
  // No root needed: a procfs without /proc/cgroups stops the tracer before
  // it touches tracefs.
  VmscanOptions cfg;
  cfg.instance = uniq("vmscan_down", 1);
  TracingService svc =
      startTracing(tracerOptions(cfg, MountLayout{}, "/nonexistent/memcg_exporter_test_proc"));
  EXPECT_EQ(svc.tracer, nullptr);
  auto c = makeVmscanCollector(svc.tracer.get(), svc.down);
  ASSERT_NE(c, nullptr);
  CgroupTree tree;
  for (int i = 0; i < 2; ++i) {
    ScrapeContext ctx(tree);
    metrics::Sink sink;
    c->collect(ctx, sink);
    std::string t;
    metrics::writeText(sink.families(), t);
    EXPECT_EQ(sampleValue(t, "memcg_trace_up"), 0) << t;
    EXPECT_EQ(ctx.errors.size(), 1u);  // the collector reports failed every scrape
  }
}

TEST(VmscanCollectorLive, ReclaimCountMatchesIndependentCount) {
  if (!skipReason.empty()) GTEST_SKIP() << skipReason;
  Discovery discovery{DiscoveryOptions{}};
  // v1 or hybrid (v1 memory + a cgroup2 mount without it), memory where
  // LiveEnv found it.
  ASSERT_NE(discovery.layout().mode, CgroupMode::kV2);
  ASSERT_EQ(discovery.layout().memoryRoot, kMemcgRoot);
  VmscanOptions cfg;

  RefInstance ref(uniq("ref", 20));
  ASSERT_TRUE(ref.ok) << "mkdir " << ref.dir << ": " << strerror(errno);
  ASSERT_TRUE(writeStr(ref.dir + "/buffer_size_kb", "16384"));
  ASSERT_TRUE(ref.enable("vmscan", "mm_vmscan_memcg_reclaim_end"));
  Cgroup cg(uniq("vmscan", 20));
  ASSERT_TRUE(cg.ok) << cg.path << ": " << strerror(errno);
  ASSERT_TRUE(writeStr(cg.path + "/memory.limit_in_bytes", std::to_string(64 * kMiB)));
  DataFile file("/var/tmp/" + uniq("file", 20), 256 * kMiB);
  ASSERT_TRUE(file.ok) << "cannot write " << file.path;

  cfg.instance = uniq("vmscan", 20);
  TracingService svc = startTracing(tracerOptions(cfg, discovery.layout(), "/proc"));
  ASSERT_NE(svc.tracer, nullptr) << "tracer did not start: " << svc.down.message();
  auto collector = makeVmscanCollector(svc.tracer.get(), svc.down);
  Scraped before = scrape(*collector, discovery);
  EXPECT_EQ(sampleValue(before.text, "memcg_trace_up"), 1);
  EXPECT_EQ(before.errors, 0u);

  ASSERT_TRUE(writeStr(ref.dir + "/tracing_on", "1"));
  Child kid(file.path);
  ASSERT_GT(kid.pid, 0);
  ASSERT_TRUE(writeStr(cg.path + "/cgroup.procs", std::to_string(kid.pid)));
  const pid_t child = kid.pid;
  kid.start();
  ASSERT_EQ(kid.wait(), 0);
  writeStr(ref.dir + "/tracing_on", "0");

  const std::string rel = "/" + cg.path.substr(kMemcgRoot.size() + 1);
  const std::string sel = "{cgroup=\"" + rel + "\",kind=\"memcg\"}";
  // The reference is complete now (its tracing is off): read it first.
  auto text = readWholeFile(ref.dir + "/trace");
  ASSERT_TRUE(text.ok());
  ASSERT_EQ(ref.lost(), 0u) << "reference instance lost events; enlarge its buffer";
  // Reclaim in this memcg is done by its only task (other memcgs of the host
  // may reclaim too: the reference is taken for our child's pid alone).
  const RefCount only = parseRefTrace(*text)[child];
  const double tol_n = std::max(1.0, 0.01 * static_cast<double>(only.reclaims));
  // The reader drains at its own pace (a loaded machine may starve it for
  // longer than a poll): scrape until the count has reached the reference's
  // (less the tolerance) and two scrapes agree, 60 s at most. ("Two scrapes
  // agree" alone could stop on a reader that had not run in between.)
  Scraped s;
  double prev = -2;
  for (int i = 0; i < 120; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    s = scrape(*collector, discovery);
    double v = sampleValue(s.text, "memcg_vmscan_reclaim_total" + sel);
    if (v >= 0 && v == prev && v >= static_cast<double>(only.reclaims) - tol_n) break;
    prev = v;
  }
  EXPECT_EQ(s.errors, 0u);

  // The aggregator's label is discovery's label.
  auto tree = discovery.current();
  ASSERT_NE(tree, nullptr);
  bool found = false;
  for (const auto& c : tree->cgroups) found |= c.path == rel;
  EXPECT_TRUE(found) << rel << " not in discovery's tree";

  const double reclaims = sampleValue(s.text, "memcg_vmscan_reclaim_total" + sel);
  const double pages = sampleValue(s.text, "memcg_vmscan_reclaimed_pages_total" + sel);
  const double stalls = sampleValue(s.text, "memcg_vmscan_reclaim_stall_seconds_count" + sel);
  const double stall_sum = sampleValue(s.text, "memcg_vmscan_reclaim_stall_seconds_sum" + sel);
  const double inf = sampleValue(s.text, "memcg_vmscan_reclaim_stall_seconds_bucket{cgroup=\"" +
                                             rel + "\",kind=\"memcg\",le=\"+Inf\"}");
  std::printf(
      "[ live ] %s: exporter memcg reclaims %.0f pages %.0f stalls %.0f (sum %.6f s) | "
      "reference %lu pages %lu | events %.0f lost %.0f\n",
      rel.c_str(), reclaims, pages, stalls, stall_sum, static_cast<unsigned long>(only.reclaims),
      static_cast<unsigned long>(only.pages), sampleValue(s.text, "memcg_trace_events_total"),
      sampleValue(s.text, "memcg_trace_events_lost_total"));
  ASSERT_GT(only.reclaims, 10u) << "workload did not cause memcg reclaim";
  const double tol_p = std::max(32.0, 0.01 * static_cast<double>(only.pages));
  EXPECT_NEAR(reclaims, static_cast<double>(only.reclaims), tol_n);
  EXPECT_NEAR(pages, static_cast<double>(only.pages), tol_p);
  EXPECT_EQ(stalls, reclaims);
  EXPECT_EQ(inf, stalls);
  EXPECT_GT(stall_sum, 0);
  EXPECT_EQ(sampleValue(s.text, "memcg_trace_events_lost_total"), 0);
  EXPECT_EQ(sampleValue(s.text, "memcg_cgroup_tasks_attached_total{cgroup=\"" + rel + "\"}"), 1);
  EXPECT_GT(sampleValue(s.text, "memcg_vmscan_reclaim_stat_scanned_pages_total{cgroup=\"" + rel +
                                    "\",context=\"limit\"}"),
            0);
  EXPECT_EQ(sampleValue(s.text, "memcg_vmscan_reclaim_stat_freed_pages_total{cgroup=\"" + rel +
                                    "\",context=\"limit\"}"),
            pages);

  collector.reset();
  svc.tracer.reset();  // stops the tracer and removes its instance
  EXPECT_NE(::access((kTracefs + "/instances/" + uniq("vmscan", 20)).c_str(), F_OK), 0)
      << "instance left behind";
}

}  // namespace
}  // namespace memcg::tracing
