// The history's sampler through the real Scraper and collectors on fixture
// trees: a selection reads only the cgroup files that can produce its
// families, and only its cgroups when it pins the cgroup label,
// counted by the collectors' one file reader (ScrapeContext::read).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "history/history.h"
#include "promql/parser.h"
#include "tests/support/scrape_test_util.h"

namespace memcg {
namespace {

using test::FixtureScrape;
using test::TempTree;

constexpr int64_t kT0 = 1'700'000'001'000;
constexpr int kChildren = 40;

// A fixture tree with kChildren more cgroups made from one of its own.
void addChildren(const TempTree& t, const std::string& parentRel,
                 const std::string& srcFixture) {
  for (int i = 0; i < kChildren; ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "c%02d", i);
    t.copyFixture(srcFixture, parentRel + "/" + name);
  }
}

struct Sampled {
  explicit Sampled(const std::string& root) : s(root) {}
  std::unique_ptr<history::History> history(std::vector<std::string> match) {
    history::Options o;
    o.match = std::move(match);
    Scraper* scraper = s.scraper.get();
    auto h = history::History::create(
        o, [scraper](const ScrapeFilter& f, metrics::Sink& sink) {
          return scraper->scrape(sink, f);
        });
    EXPECT_TRUE(h.ok()) << h.error().message();
    return std::move(*h);
  }
  /// Files read by one sampler pass at `t`.
  uint64_t pass(history::History& h, int64_t t) {
    const uint64_t before = s.scraper->filesRead();
    h.sampleOnce(t);
    return s.scraper->filesRead() - before;
  }
  /// Files read by one /metrics scrape.
  uint64_t scrape() {
    const uint64_t before = s.scraper->filesRead();
    s.text();
    return s.scraper->filesRead() - before;
  }
  size_t cgroups() { return s.discovery->current()->cgroups.size(); }
  FixtureScrape s;
};

double value(const history::History& h, const std::string& sel) {
  auto e = promql::parseExpr(sel);
  EXPECT_TRUE(e.ok());
  auto q = h.querier(0, kT0 * 2);
  std::vector<promql::SeriesView> out;
  q->select(static_cast<promql::VectorSelector*>(e->get())->matchers, 0, kT0 * 2, out);
  EXPECT_EQ(out.size(), 1u) << sel;
  return out.empty() || out[0].samples.empty() ? -1 : out[0].samples.back().v;
}

TEST(HistorySampler, V1ReadsOnlyTheSelectedFilesAndCgroups) {
  TempTree t;
  t.copyFixture("cgroupfs/v1", "cg");
  addChildren(t, "cg/memory/web", "cgroupfs/v1/memory/system.slice");
  Sampled s(t.path("cg"));
  const uint64_t all = s.scrape();
  const size_t n = s.cgroups();
  ASSERT_GE(n, static_cast<size_t>(kChildren));

  // One cgroup's failcnt: one file, whatever the number of cgroups.
  auto one = s.history({R"(memcg_memory_failcnt_total{cgroup="/web"})"});
  EXPECT_EQ(s.pass(*one, kT0), 1u);
  EXPECT_EQ(s.pass(*one, kT0 + 1000), 1u);
  EXPECT_EQ(value(*one, "memcg_memory_failcnt_total"),
            std::stod(t.read("cg/memory/web/memory.failcnt")));

  // The default selection (usage, limit, failcnt): three files per cgroup
  // (memory.usage_in_bytes, memory.limit_in_bytes, memory.failcnt), not the
  // memsw, peak, soft limit, kmem failcnt, oom_control or memory.stat files.
  auto def = s.history({std::string(history::kDefaultMatch)});
  const uint64_t defReads = s.pass(*def, kT0);
  EXPECT_EQ(defReads, 3 * n);
  EXPECT_EQ(value(*def, R"(memcg_memory_usage_bytes{cgroup="/web"})"),
            std::stod(t.read("cg/memory/web/memory.usage_in_bytes")));
  // /metrics reads the default set (9-10 files per v1 cgroup): the sampler under a third.
  EXPECT_GT(all, 3 * defReads) << "a /metrics scrape reads " << all << " files";

  // Everything: exactly the files /metrics reads (the same reading path).
  auto every = s.history({R"({__name__=~".+"})"});
  EXPECT_EQ(s.pass(*every, kT0), all);
  std::printf(
      "v1, %zu cgroups: files read per pass: /metrics %llu, default selection %llu, "
      "one cgroup's failcnt 1\n",
      n, static_cast<unsigned long long>(all), static_cast<unsigned long long>(defReads));
}

TEST(HistorySampler, V2ReadsOnlyTheSelectedFilesAndCgroups) {
  TempTree t;
  t.copyFixture("cgroupfs/v2", "cg");
  addChildren(t, "cg/kubepods", "cgroupfs/v2/kubepods/pod-a");
  Sampled s(t.path("cg"));
  const uint64_t all = s.scrape();
  const size_t n = s.cgroups();
  ASSERT_GE(n, static_cast<size_t>(kChildren));

  // memory.events only, for two cgroups (not .local, not memory.swap.events).
  auto ev = s.history(
      {R"(memcg_memory_events_oom_kill_total{cgroup=~"/kubepods|/kubepods/c01"})"});
  EXPECT_EQ(s.pass(*ev, kT0), 2u);
  // memory.pressure of one cgroup.
  auto psi =
      s.history({R"(memcg_pressure_memory_waiting_seconds_total{cgroup="/kubepods"})"});
  EXPECT_EQ(s.pass(*psi, kT0), 1u);
  // Usage and limit (memory.current, memory.max); v2 has no failcnt file.
  auto def = s.history({std::string(history::kDefaultMatch)});
  EXPECT_EQ(s.pass(*def, kT0), 2 * n);
  EXPECT_EQ(value(*def, R"(memcg_memory_usage_bytes{cgroup="/kubepods"})"),
            std::stod(t.read("cg/kubepods/memory.current")));
  auto every = s.history({R"({__name__=~".+"})"});
  EXPECT_EQ(s.pass(*every, kT0), all);
}

// Two selections due together: the union of their files and cgroups.
TEST(HistorySampler, UnionOfDueSelections) {
  TempTree t;
  t.copyFixture("cgroupfs/v1", "cg");
  Sampled s(t.path("cg"));
  auto h = s.history({R"(memcg_memory_failcnt_total{cgroup="/web"})",
                      R"(memcg_memory_usage_bytes{cgroup="/system.slice"})"});
  // failcnt and usage for /web and /system.slice: the filter is per file and
  // per cgroup, not per (file, cgroup) pair.
  EXPECT_EQ(s.pass(*h, kT0), 4u);
  // A selection without a cgroup matcher widens to every cgroup.
  auto wide = s.history(
      {R"(memcg_memory_failcnt_total{cgroup="/web"})", "memcg_memory_usage_bytes"});
  EXPECT_EQ(s.pass(*wide, kT0), 2 * s.cgroups());
}

}  // namespace
}  // namespace memcg
