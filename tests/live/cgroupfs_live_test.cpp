// Real-kernel integration (root, cgroup v1 memory): a 64 MiB memcg streams a
// 256 MiB file; the exporter must report failcnt > 0, page cache near the
// limit and the usage the kernel reports.
#include <gtest/gtest.h>

#include <cmath>
#include <regex>

#include "tests/support/test_cgroup.h"
#include "tests/unit/scrape_test_util.h"

namespace memcg {
namespace {

constexpr uint64_t kLimit = 64ull << 20;

double sampleOf(const std::string& text, const std::string& metric, const std::string& label) {
  std::string key = metric + "{cgroup=\"" + label + "\"} ";
  size_t p = text.find("\n" + key);
  if (p == std::string::npos) return NAN;
  p += 1 + key.size();
  return std::stod(text.substr(p, text.find('\n', p) - p));
}

std::unique_ptr<test::FixtureScrape> liveScrape(const std::string& label) {
  // Real mounts, real procfs, only our cgroup.
  DiscoveryOptions o;
  o.include = label;
  return std::make_unique<test::FixtureScrape>(o, CollectorConfig{});
}

TEST(LiveV1, StreamingThroughA64MiBLimit) {
  if (auto why = test::v1SkipReason(); !why.empty()) GTEST_SKIP() << why;
  test::TestCgroupV1 cg("live");
  cg.write("memory.limit_in_bytes", std::to_string(kLimit));
  test::WorkloadFile file(256ull << 20);
  ASSERT_EQ(cg.streamFile(file.path()), 0);

  auto s = liveScrape(cg.label());
  std::string t = s->text();
  const uint64_t failcnt = cg.readU64("memory.failcnt");
  const uint64_t usage = cg.readU64("memory.usage_in_bytes");
  const uint64_t cache = cg.stat("total_cache");

  EXPECT_GT(failcnt, 0u);
  EXPECT_EQ(sampleOf(t, "memcg_memory_failcnt_total", cg.label()), static_cast<double>(failcnt));
  EXPECT_EQ(sampleOf(t, "memcg_memory_limit_bytes", cg.label()), static_cast<double>(kLimit));
  // Usage and cache move by a few pages between two reads: 1 MiB tolerance.
  double u = sampleOf(t, "memcg_memory_usage_bytes", cg.label());
  EXPECT_NEAR(u, static_cast<double>(usage), 1 << 20);
  EXPECT_LE(u, static_cast<double>(kLimit));
  double c = sampleOf(t, "memcg_memory_stat_hierarchical_cache_bytes", cg.label());
  EXPECT_NEAR(c, static_cast<double>(cache), 1 << 20);
  // The page cache fills the cgroup up to its limit: within 8 MiB of it.
  EXPECT_GT(c, static_cast<double>(kLimit - (8ull << 20)));
  EXPECT_NE(t.find("memcg_exporter_collector_success{collector=\"memory_stat\"} 1"),
            std::string::npos);
  EXPECT_TRUE(t.find("memcg_exporter_cgroup_mode_info{mode=\"hybrid\"} 1") != std::string::npos ||
              t.find("memcg_exporter_cgroup_mode_info{mode=\"v1\"} 1") != std::string::npos);
}

// A cgroup removed while the exporter holds its descriptors: ENODEV from
// kept-open files, ENOENT from new opens; both read as "gone", never an error.
TEST(LiveV1, RemovedCgroupIsSkippedSilently) {
  if (auto why = test::v1SkipReason(); !why.empty()) GTEST_SKIP() << why;
  cgroupfs::CgroupDir::setFdBudget(1000);
  auto cg = std::make_unique<test::TestCgroupV1>("vanish");
  const std::string label = cg->label();
  auto s = liveScrape(label);
  std::string before = s->text();
  ASSERT_FALSE(std::isnan(sampleOf(before, "memcg_memory_usage_bytes", label)));
  auto tree = *s->discovery->refresh();  // holds the descriptors
  cg.reset();                            // rmdir
  CollectorConfig cfg;
  for (auto& c : test::allCollectors(cfg)) {
    ScrapeContext ctx(*tree);
    metrics::Sink sink;
    c.collector->collect(ctx, sink);
    EXPECT_TRUE(ctx.errors.empty()) << c.name << ": " << ctx.errors.front().message();
  }
  std::string after = s->text();
  EXPECT_TRUE(std::isnan(sampleOf(after, "memcg_memory_usage_bytes", label)));
  EXPECT_NE(after.find("memcg_exporter_collector_success{collector=\"memory_usage\"} 1"),
            std::string::npos);
}

}  // namespace
}  // namespace memcg
