// Collector behaviour on committed fixture trees and on trees built in temp
// dirs, including the golden exposition of each fixture.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <thread>

#include "tests/support/scrape_test_util.h"

namespace memcg {
namespace {

using test::FixtureScrape;
using test::fixturePath;
using test::normalize;

std::string readAll(const std::string& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

bool has(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

// The golden files are the reviewed exposition of each fixture tree. After an
// intended change, regenerate them with MEMCG_UPDATE_GOLDEN=1 and review the
// diff.
class Golden : public ::testing::TestWithParam<std::string> {};

// Only "1" or "true" rewrites: MEMCG_UPDATE_GOLDEN=0 (or an empty value left
// in a CI environment) must compare, never silently rewrite and skip.
bool updateGoldenRequested(const char* v) {
  return v != nullptr && (std::string_view(v) == "1" || std::string_view(v) == "true");
}

TEST(GoldenUpdate, OnlyOneOrTrueRewrites) {
  EXPECT_FALSE(updateGoldenRequested(nullptr));
  EXPECT_FALSE(updateGoldenRequested(""));
  EXPECT_FALSE(updateGoldenRequested("0"));
  EXPECT_FALSE(updateGoldenRequested("false"));
  EXPECT_FALSE(updateGoldenRequested("no"));
  EXPECT_TRUE(updateGoldenRequested("1"));
  EXPECT_TRUE(updateGoldenRequested("true"));
}

TEST_P(Golden, ExpositionIsUnchanged) {
  FixtureScrape s(fixturePath("cgroupfs/" + GetParam()));
  std::string got = normalize(s.text());
  std::string golden = std::string(MEMCG_SOURCE_DIR) + "/tests/golden/" + GetParam() + ".prom";
  if (updateGoldenRequested(std::getenv("MEMCG_UPDATE_GOLDEN"))) {
    std::ofstream(golden) << got;
    GTEST_SKIP() << "golden file rewritten: " << golden;
  }
  EXPECT_EQ(got, readAll(golden)) << "exposition of " << GetParam()
                                  << " changed; if intended, rerun with MEMCG_UPDATE_GOLDEN=1";
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Golden, ::testing::Values("v1", "v2", "hybrid"));

TEST(V1, LimitsUsageFailcntAndMax) {
  FixtureScrape s(fixturePath("cgroupfs/v1"));
  std::string t = s.text();
  EXPECT_TRUE(has(t, "memcg_memory_limit_bytes{cgroup=\"/web\"} 268435456"));
  EXPECT_TRUE(has(t, "memcg_memory_limit_bytes{cgroup=\"/\"} +Inf"));
  EXPECT_TRUE(has(t, "memcg_memory_soft_limit_bytes{cgroup=\"/web\"} 134217728"));
  EXPECT_TRUE(has(t, "memcg_memory_usage_bytes{cgroup=\"/web/frontend\"} 66584576"));
  EXPECT_TRUE(has(t, "memcg_memory_failcnt_total{cgroup=\"/web\"} 881"));
  EXPECT_TRUE(has(t, "memcg_memory_events_oom_kill_total{cgroup=\"/web/frontend\"} 1"));
  EXPECT_TRUE(has(t, "memcg_memory_stat_hierarchical_cache_bytes{cgroup=\"/web\"} 262144000"));
  // Local v1 keys are not in the default set; hierarchical ones are.
  EXPECT_EQ(t.find("memcg_memory_stat_cache_bytes"), std::string::npos);
  // memsw usage, peak and limit are opt-in (--collector.memory_usage.memsw);
  // memsw.failcnt is read where swap accounting is on, and a cgroup missing
  // it is simply not exported.
  EXPECT_EQ(t.find("memcg_memsw_usage_bytes{"), std::string::npos);
  EXPECT_TRUE(has(t, "memcg_memsw_failcnt_total{cgroup=\"/web\"} 0"));
  EXPECT_EQ(t.find("memcg_memsw_failcnt_total{cgroup=\"/web/frontend\"}"), std::string::npos);
  EXPECT_TRUE(has(t, "memcg_exporter_collector_success{collector=\"memory_stat\"} 1"));
  EXPECT_TRUE(has(t, "memcg_exporter_cgroup_mode_info{mode=\"v1\"} 1"));
}

TEST(V1, ReclaimStatFromPatchedKernel) {
  FixtureScrape s(fixturePath("cgroupfs/v1"));
  std::string t = s.text();
  EXPECT_TRUE(has(t, "memcg_reclaim_stat_scanned_pages_total{cgroup=\"/web\",context=\"limit\"} 388463"));
  EXPECT_TRUE(has(t, "memcg_reclaim_stat_freed_pages_total{cgroup=\"/web\",context=\"limit\"} 162238"));
  EXPECT_TRUE(has(t, "memcg_reclaim_stat_elapsed_seconds_total{cgroup=\"/web\",context=\"limit\"} 13.852159231"));
  EXPECT_TRUE(has(t, "memcg_reclaim_stat_recent_scan_success_ratio{cgroup=\"/web\"} 0.44"));
  // Absent on unpatched cgroups: nothing, and no failure.
  EXPECT_EQ(t.find("memcg_reclaim_stat_recent_scan_success_ratio{cgroup=\"/\"}"), std::string::npos);
  EXPECT_TRUE(has(t, "memcg_exporter_collector_success{collector=\"reclaim_stat\"} 1"));
}

TEST(V2, FilesMaxEventsAndReclaimerSplit) {
  FixtureScrape s(fixturePath("cgroupfs/v2"));
  std::string t = s.text();
  EXPECT_TRUE(has(t, "memcg_memory_limit_bytes{cgroup=\"/system.slice\"} +Inf"));
  EXPECT_TRUE(has(t, "memcg_memory_limit_bytes{cgroup=\"/kubepods\"} 268435456"));
  EXPECT_TRUE(has(t, "memcg_memory_high_bytes{cgroup=\"/kubepods\"} 201326592"));
  EXPECT_TRUE(has(t, "memcg_memory_min_bytes{cgroup=\"/kubepods\"} 33554432"));
  EXPECT_TRUE(has(t, "memcg_swap_limit_bytes{cgroup=\"/kubepods\"} +Inf"));
  EXPECT_TRUE(has(t, "memcg_memory_events_max_total{cgroup=\"/kubepods\"} 881"));
  EXPECT_TRUE(has(t, "memcg_memory_events_local_max_total{cgroup=\"/kubepods\"} 0"));
  EXPECT_TRUE(has(t, "memcg_memory_events_brand_new_event_total{cgroup=\"/kubepods/pod-a\"} 3"));
  EXPECT_TRUE(has(t, "memcg_memory_stat_pgscan_total{cgroup=\"/kubepods\",reclaimer=\"direct\"} 881"));
  EXPECT_TRUE(has(t, "memcg_memory_stat_pgsteal_total{cgroup=\"/kubepods\",reclaimer=\"kswapd\"} 90"));
  EXPECT_TRUE(has(t, "memcg_pressure_memory_waiting_seconds_total{cgroup=\"/kubepods\"} 2.5"));
  EXPECT_TRUE(has(t, "memcg_pressure_memory_stalled_seconds_total{cgroup=\"/\"} 0.065432"));
  EXPECT_TRUE(has(t, "memcg_node_pressure_memory_waiting_seconds_total 0.424242"));
  // The root has no memory.current; the pre-summed pgscan is never exported.
  EXPECT_EQ(t.find("memcg_memory_usage_bytes{cgroup=\"/\"}"), std::string::npos);
  EXPECT_EQ(t.find("memcg_memory_stat_pgscan_bytes"), std::string::npos);
  EXPECT_EQ(t.find("memcg_memory_stat_pgscan_total{cgroup=\"/kubepods\"}"), std::string::npos);
  // Swap files missing in pod-a: not exported.
  EXPECT_EQ(t.find("memcg_swap_usage_bytes{cgroup=\"/kubepods/pod-a\"}"), std::string::npos);
}

TEST(Hybrid, PressureJoinedFromCgroup2) {
  FixtureScrape s(fixturePath("cgroupfs/hybrid"));
  std::string t = s.text();
  EXPECT_TRUE(has(t, "memcg_pressure_memory_waiting_seconds_total{cgroup=\"/web\"} 5"));
  EXPECT_EQ(t.find("memcg_pressure_memory_waiting_seconds_total{cgroup=\"/web/frontend\"}"),
            std::string::npos);
  EXPECT_TRUE(has(t, "memcg_memory_failcnt_total{cgroup=\"/web\"} 881"));
  EXPECT_TRUE(has(t, "memcg_exporter_cgroup_mode_info{mode=\"hybrid\"} 1"));
}

// The v1 default set (README "Performance"), the reclaim view's files and
// oom_control: no kmem / kmem.tcp usage, peak or limit, no kmem.tcp failcnt,
// no memsw usage, peak or limit (each opt-in); kmem and memsw failcnt kept,
// memsw only with swap accounting.
TEST(MemoryUsage, KmemIsOptInAndMemswFollowsSwapAccounting) {
  FixtureScrape byDefault(fixturePath("cgroupfs/v1"));
  std::string t = byDefault.text();
  for (const char* m : {"memcg_kmem_usage_bytes", "memcg_kmem_peak_bytes", "memcg_kmem_limit_bytes",
                        "memcg_kmem_tcp_usage_bytes", "memcg_kmem_tcp_peak_bytes",
                        "memcg_kmem_tcp_limit_bytes"}) {
    EXPECT_EQ(t.find(std::string("\n") + m + "{"), std::string::npos) << m;
  }
  for (const char* m : {"memcg_kmem_tcp_failcnt_total", "memcg_memsw_usage_bytes",
                        "memcg_memsw_peak_bytes", "memcg_memsw_limit_bytes"}) {
    EXPECT_EQ(t.find(std::string("\n") + m + "{"), std::string::npos) << m;
  }
  EXPECT_NE(t.find("\nmemcg_kmem_failcnt_total{cgroup=\"/web\"}"), std::string::npos);
  EXPECT_NE(t.find("\nmemcg_memsw_failcnt_total{cgroup=\"/web\"}"), std::string::npos);
  EXPECT_NE(t.find("\nmemcg_memory_under_oom{cgroup=\"/web\"}"), std::string::npos);

  CollectorInputs cfg;
  cfg.memoryUsage.kmem = true;
  cfg.memoryUsage.memsw = true;
  cfg.memoryEvents.kmemTcp = true;
  FixtureScrape withKmem(fixturePath("cgroupfs/v1"), cfg);
  t = withKmem.text();
  for (const char* m : {"memcg_kmem_usage_bytes", "memcg_kmem_peak_bytes", "memcg_kmem_limit_bytes",
                        "memcg_kmem_tcp_usage_bytes", "memcg_kmem_tcp_peak_bytes",
                        "memcg_kmem_tcp_limit_bytes"}) {
    EXPECT_NE(t.find(std::string("\n") + m + "{cgroup=\"/web\"}"), std::string::npos) << m;
  }
  EXPECT_TRUE(has(t, "memcg_kmem_tcp_failcnt_total{cgroup=\"/web\"} 0"));
  EXPECT_TRUE(has(t, "memcg_memsw_usage_bytes{cgroup=\"/web\"} 266338304"));
  EXPECT_NE(t.find("\nmemcg_memsw_limit_bytes{cgroup=\"/web\"}"), std::string::npos);

  // No swap accounting (the root has no memory.memsw.usage_in_bytes): no
  // memsw file is read, even where a child has one and the flag is on.
  test::TempTree tree;
  tree.copyFixture("cgroupfs/v1", "cg");
  tree.remove("cg/memory/memory.memsw.usage_in_bytes");
  FixtureScrape noSwap(tree.path("cg"), cfg);
  t = noSwap.text();
  EXPECT_EQ(t.find("\nmemcg_memsw_usage_bytes{"), std::string::npos);
  EXPECT_EQ(t.find("\nmemcg_memsw_limit_bytes{"), std::string::npos);
  EXPECT_EQ(t.find("\nmemcg_memsw_failcnt_total{"), std::string::npos);
  EXPECT_NE(t.find("\nmemcg_memory_usage_bytes{cgroup=\"/web\"}"), std::string::npos);
  EXPECT_NE(t.find("memcg_exporter_collector_success{collector=\"memory_usage\"} 1"),
            std::string::npos);
}

// Keys from a newer kernel are outside the default set; selected, they are
// named by rule: event-like prefixes as counters, the rest as bytes.
TEST(Fields, UnknownKeysByNamingRule) {
  CollectorInputs cfg;
  cfg.memoryStat.fields = ".*";
  FixtureScrape v2(fixturePath("cgroupfs/v2"), cfg);
  std::string t = v2.text();
  EXPECT_TRUE(has(t, "memcg_memory_stat_pgnewevent_total{cgroup=\"/kubepods/pod-a\"} 5"));
  EXPECT_TRUE(has(t, "memcg_memory_stat_new_size_thing_bytes{cgroup=\"/kubepods/pod-a\"} 8192"));
  EXPECT_NE(t.find("# TYPE memcg_memory_stat_pgnewevent_total counter"), std::string::npos);
  FixtureScrape v1(fixturePath("cgroupfs/v1"), cfg);
  t = v1.text();
  EXPECT_TRUE(has(t, "memcg_memory_stat_hierarchical_pgnewevent_total{cgroup=\"/web/frontend\"} 17"));
  EXPECT_TRUE(has(t, "memcg_memory_stat_newthing_bytes{cgroup=\"/web/frontend\"} 4096"));
  EXPECT_TRUE(has(t, "memcg_memory_stat_hierarchical_memory_limit_bytes{cgroup=\"/\"} +Inf"));
  EXPECT_TRUE(has(t, "memcg_memory_stat_hierarchical_memory_limit_bytes{cgroup=\"/web\"} 268435456"));
}

// A key no metric name can carry (found by fuzzing: one such name makes the
// whole exposition unparseable) is skipped; the file's other keys are served.
TEST(Fields, UnknownKeysThatCannotBeNamesAreSkipped) {
  test::TempTree tree;
  tree.copyFixture("cgroupfs/v2", "cg");
  tree.write("cg/kubepods/memory.stat",
             "anon 4096\npg\xcdscan 1\nfoo-bar 2\nnew.key 3\n");
  tree.write("cg/kubepods/memory.events", "low 0\nhigh 7\nmax{x=\"1\"} 9\nnewevent 2\n");
  CollectorInputs cfg;
  cfg.memoryStat.fields = ".*";
  FixtureScrape s(tree.path("cg"), cfg);
  std::string t = s.text();
  EXPECT_TRUE(has(t, "memcg_memory_stat_anon_bytes{cgroup=\"/kubepods\"} 4096"));
  EXPECT_TRUE(has(t, "memcg_memory_events_high_total{cgroup=\"/kubepods\"} 7"));
  EXPECT_TRUE(has(t, "memcg_memory_events_newevent_total{cgroup=\"/kubepods\"} 2"));
  EXPECT_TRUE(has(t, "memcg_exporter_collector_success{collector=\"memory_stat\"} 1"));
  EXPECT_TRUE(has(t, "memcg_exporter_collector_success{collector=\"memory_events\"} 1"));
  for (const char* bad : {"\xcd", "foo-bar", "new.key", "max{"}) {
    EXPECT_EQ(t.find(bad), std::string::npos) << bad;
  }
  EXPECT_TRUE(metrics::isValidMetricName("memcg_a:b_1"));
  EXPECT_FALSE(metrics::isValidMetricName("1a"));
  EXPECT_FALSE(metrics::isValidMetricName(""));
}

TEST(Fields, RegexWidensAndNarrows) {
  CollectorInputs cfg;
  cfg.memoryStat.fields = "cache|total_cache";
  FixtureScrape s(fixturePath("cgroupfs/v1"), cfg);
  std::string t = s.text();
  EXPECT_TRUE(has(t, "memcg_memory_stat_cache_bytes{cgroup=\"/web\"} 262144000"));
  EXPECT_TRUE(has(t, "memcg_memory_stat_hierarchical_cache_bytes{cgroup=\"/web\"} 262144000"));
  EXPECT_EQ(t.find("memcg_memory_stat_hierarchical_rss_bytes"), std::string::npos);
  EXPECT_EQ(t.find("pgnewevent"), std::string::npos);
}

// A malformed file fails its collector for this scrape (metric and log), loses
// nothing else: the other cgroups and the other collectors are served.
TEST(Malformed, FailsOnlyItsCollector) {
  FixtureScrape s(fixturePath("cgroupfs/malformed"));
  std::string t = s.text();
  EXPECT_TRUE(has(t, "memcg_exporter_collector_success{collector=\"memory_stat\"} 0"));
  EXPECT_TRUE(has(t, "memcg_exporter_collector_success{collector=\"memory_usage\"} 0"));
  EXPECT_TRUE(has(t, "memcg_exporter_collector_success{collector=\"pressure\"} 1"));
  EXPECT_TRUE(has(t, "memcg_exporter_scrape_errors_total{collector=\"memory_stat\"} 1"));
  EXPECT_TRUE(has(t, "memcg_memory_stat_anon_bytes{cgroup=\"/good\"} 10"));
  EXPECT_TRUE(has(t, "memcg_memory_limit_bytes{cgroup=\"/good\"} 1000"));
  EXPECT_TRUE(has(t, "memcg_memory_usage_bytes{cgroup=\"/bad\"} 40"));
  // Nothing of the bad memory.stat, not even the line before the bad one.
  EXPECT_EQ(t.find("memcg_memory_stat_anon_bytes{cgroup=\"/bad\"}"), std::string::npos);
  EXPECT_EQ(t.find("memcg_memory_limit_bytes{cgroup=\"/bad\"}"), std::string::npos);
  // Errors are counted across scrapes.
  t = s.text();
  EXPECT_TRUE(has(t, "memcg_exporter_scrape_errors_total{collector=\"memory_stat\"} 2"));
}

// A cgroup removed after the walk and before its files are read is skipped
// silently: no error, the collector succeeds, the rest is served.
TEST(Vanish, CgroupRemovedMidScrapeIsSkipped) {
  test::TempTree tt;
  tt.copyFixture("cgroupfs/v2", "cg");
  DiscoveryOptions o;
  o.cgroupfsRoot = tt.path("cg");
  o.procfsRoot = fixturePath("procfs");
  Discovery d(o);
  auto tree = *d.refresh();
  tt.remove("cg/kubepods");
  CollectorInputs cfg;
  cfg.procfsRoot = o.procfsRoot;
  for (auto& c : test::allCollectors(cfg)) {
    ScrapeContext ctx(*tree);
    metrics::Sink sink;
    c.collector->collect(ctx, sink);
    EXPECT_TRUE(ctx.errors.empty()) << c.name << ": " << ctx.errors[0].message();
    for (const auto& f : sink.families()) {
      for (const auto& smp : f.samples) {
        EXPECT_FALSE(smp.values[0].starts_with("/kubepods")) << f.desc->name;
      }
    }
  }
}

// Concurrent scrapes each get a whole, uncorrupted exposition.
TEST(Concurrency, ParallelScrapesAgree) {
  FixtureScrape s(fixturePath("cgroupfs/v2"));
  const std::string want = normalize(s.text());
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      for (int k = 0; k < 50; ++k) {
        if (normalize(s.text()) != want) ++bad;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
}

}  // namespace
}  // namespace memcg
