// history/: chunk compression round trips and size, retention, the series
// limit, staleness on a vanished cgroup, a recreated cgroup as a new series,
// selections and the filter the sampler hands the scrape. A fake CollectFn
// stands in for the Scraper (the real one is covered by the e2e tests).
#include "history/history.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "collectors/collector.h"
#include "history/chunk.h"
#include "promql/engine.h"
#include "promql/parser.h"

using namespace memcg;
using promql::Sample;

namespace {

bool sameBits(double a, double b) { return std::memcmp(&a, &b, 8) == 0; }

std::vector<Sample> roundTrip(const std::vector<Sample>& in, size_t* bytes = nullptr) {
  history::Chunk c;
  for (const auto& s : in) EXPECT_TRUE(c.append(s.t, s.v));
  if (bytes) *bytes = c.byteSize();
  std::vector<Sample> out;
  auto st = history::decodeChunk(c.bytes(), out);
  EXPECT_TRUE(st.ok()) << st.error().message();
  return out;
}

TEST(HistoryChunk, RoundTripsEveryKindOfValueAndStep) {
  std::mt19937_64 rng(42);
  std::vector<Sample> in;
  int64_t t = 1'700'000'000'000;
  const double specials[] = {
      0.0,     -0.0, 1.0, 1e308, -1e-308, INFINITY, -INFINITY, NAN, promql::staleNaN(),
      4.9e-324};
  for (int i = 0; i < 120; ++i) {
    // Steps in every dod bucket: equal, small, 14/17/20 bits and beyond.
    const int64_t steps[] = {1000, 1000, 1001, 997, 9000, 70000, 600000, 5'000'000'000};
    t += steps[i % 8];
    double v = i % 3 == 0 ? specials[i % 10]
                          : std::ldexp(double(rng() % 100000), int(rng() % 40) - 20);
    in.push_back({t, v});
  }
  auto out = roundTrip(in);
  ASSERT_EQ(out.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(out[i].t, in[i].t) << i;
    EXPECT_TRUE(sameBits(out[i].v, in[i].v)) << i << " " << in[i].v << " " << out[i].v;
  }
}

TEST(HistoryChunk, RegularCountersCostAboutOneByteASample) {
  // 1 s ticks of a counter that moves by small integers, and a constant gauge.
  std::vector<Sample> counter, gauge;
  double c = 123456;
  for (int i = 0; i < 120; ++i) {
    c += (i * 7) % 5;
    counter.push_back({1'700'000'000'000 + i * 1000, c});
    gauge.push_back({1'700'000'000'000 + i * 1000, 67108864});
  }
  size_t cb = 0, gb = 0;
  EXPECT_EQ(roundTrip(counter, &cb).size(), 120u);
  EXPECT_EQ(roundTrip(gauge, &gb).size(), 120u);
  std::printf("bytes/sample: counter %.3f, constant gauge %.3f\n", cb / 120.0,
              gb / 120.0);
  EXPECT_LE(cb / 120.0, 2.0);
  EXPECT_LE(gb / 120.0, 0.5);
}

TEST(HistoryChunk, RefusesOutOfOrderAndOverfullAndBadBytes) {
  history::Chunk c;
  EXPECT_TRUE(c.append(10, 1));
  EXPECT_FALSE(c.append(10, 2));
  EXPECT_FALSE(c.append(5, 2));
  for (int i = 1; i < history::kChunkSamples; ++i) EXPECT_TRUE(c.append(10 + i, i));
  EXPECT_FALSE(c.append(1000, 1));
  std::vector<Sample> out;
  auto bytes = c.bytes();
  bytes.resize(bytes.size() / 2);
  auto st = history::decodeChunk(bytes, out);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().detail.find("truncated"), std::string::npos) << st.error().detail;
  const uint8_t tooMany[] = {0xff, 0xff, 0};
  EXPECT_FALSE(history::decodeChunk(tooMany, out).ok());
}

// A fake scrape: cgroups (path -> inode) and one gauge per cgroup.
struct FakeSource {
  std::vector<std::pair<std::string, ino_t>> cgroups;
  double value = 1;
  size_t calls = 0;
  std::vector<std::string> lastCgroups;
  metrics::Desc usage = cgroupGauge("test_usage_bytes", "usage");
  metrics::Desc other = cgroupGauge("test_other", "other");

  history::CollectFn fn() {
    return [this](const ScrapeFilter& f, metrics::Sink& sink) {
      ++calls;
      auto tree = std::make_shared<CgroupTree>();
      lastCgroups.clear();
      for (const auto& [p, ino] : cgroups) {
        if (f.cgroup && !f.cgroup(p)) continue;
        Cgroup c;
        c.path = p;
        c.inode = ino;
        tree->cgroups.push_back(c);
        lastCgroups.push_back(p);
      }
      for (const auto& c : tree->cgroups) {
        if (!f.family || f.family(usage.name)) sink.add(usage, {c.path}, value);
        if (!f.family || f.family(other.name)) sink.add(other, {c.path}, 2 * value);
      }
      return std::shared_ptr<const CgroupTree>(tree);
    };
  }
};

std::unique_ptr<history::History> make(FakeSource& src, history::Options o) {
  auto h = history::History::create(std::move(o), src.fn());
  EXPECT_TRUE(h.ok()) << h.error().message();
  return std::move(*h);
}

std::vector<promql::SeriesView> selectAll(const history::History& h, std::string_view sel,
                                          int64_t mint, int64_t maxt,
                                          std::unique_ptr<promql::Querier>& q) {
  auto e = promql::parseExpr(sel);
  EXPECT_TRUE(e.ok());
  auto* vs = static_cast<promql::VectorSelector*>(e->get());
  q = h.querier(mint, maxt);
  std::vector<promql::SeriesView> out;
  q->select(vs->matchers, mint, maxt, out);
  return out;
}

constexpr int64_t kT0 = 1'700'000'001'000;  // a multiple of 3 s

TEST(History, SamplesOnlyTheSelectedFamiliesAndCgroups) {
  FakeSource src;
  src.cgroups = {{"/a", 1}, {"/b", 2}, {"/c", 3}};
  history::Options o;
  o.match = {R"(test_usage_bytes{cgroup=~"/a|/b"})"};
  auto h = make(src, o);
  for (int i = 0; i < 5; ++i) h->sampleOnce(kT0 + i * 1000);
  EXPECT_EQ(src.lastCgroups, (std::vector<std::string>{"/a", "/b"}));
  std::unique_ptr<promql::Querier> q;
  auto all = selectAll(*h, R"({__name__=~".+"})", 0, kT0 * 2, q);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(promql::labelValue(*all[0].labels, "cgroup"), "/a");
  EXPECT_EQ(all[0].samples.size(), 5u);
  EXPECT_EQ(h->stats().series, 2u);
}

TEST(History, SelectionAtItsOwnIntervalAndUnselect) {
  FakeSource src;
  src.cgroups = {{"/a", 1}};
  history::Options o;
  o.match.clear();  // not the default selection
  auto h = make(src, o);
  auto id = h->select(R"(test_other{cgroup="/a"})", 3000);
  ASSERT_TRUE(id.ok());
  for (int i = 0; i < 9; ++i) h->sampleOnce(kT0 + i * 1000);
  std::unique_ptr<promql::Querier> q;
  auto v = selectAll(*h, "test_other", 0, kT0 * 2, q);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].samples.size(), 3u);  // every third tick
  EXPECT_TRUE(selectAll(*h, "test_usage_bytes", 0, kT0 * 2, q).empty());
  h->unselect(*id);
  const size_t calls = src.calls;
  h->sampleOnce(kT0 + 20000);
  EXPECT_EQ(src.calls, calls) << "nothing selected: nothing read";
  EXPECT_FALSE(h->select("rate(x[1m])").ok());
  EXPECT_FALSE(h->select("x{", 0).ok());
}

TEST(History, RetentionDropsOldChunks) {
  FakeSource src;
  src.cgroups = {{"/a", 1}};
  history::Options o;
  o.retentionMs = 300'000;  // 5 min = 300 samples
  o.match = {"test_usage_bytes"};
  auto h = make(src, o);
  for (int i = 0; i < 1200; ++i) {
    src.value = i;
    h->sampleOnce(kT0 + i * 1000);
  }
  const auto st = h->stats();
  // Whole chunks of 120 go: between retention and retention + one chunk remain.
  EXPECT_GE(st.samples, 300u);
  EXPECT_LE(st.samples, 300u + history::kChunkSamples);
  std::unique_ptr<promql::Querier> q;
  auto v = selectAll(*h, "test_usage_bytes", 0, kT0 * 2, q);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_GE(v[0].samples.front().t, kT0 + (1199 - 300 - 120) * 1000);
  EXPECT_EQ(v[0].samples.back().v, 1199);
  EXPECT_EQ(v[0].samples.size(), st.samples);
  std::printf("bytes/sample (a counter +1 a second): %.3f\n",
              double(st.bytes) / st.samples);
  EXPECT_LE(double(st.bytes) / st.samples, 2.0);
}

// Fault: the history at its series limit. Refused series are
// counted once each (sampled ones and a recording rule's appended one, not per
// sample), the first refusal is logged once, the kept series keep their
// samples and queries over them are right, and the history's own metrics say so.
TEST(History, SeriesLimitRefusesAndCounts) {
  FakeSource src;
  for (int i = 0; i < 10; ++i)
    src.cgroups.push_back({"/c" + std::to_string(i), ino_t(i + 1)});
  history::Options o;
  o.seriesLimit = 4;
  o.match = {"test_usage_bytes"};
  auto h = make(src, o);
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 3; ++i) {
    src.value = 10 + i;
    h->sampleOnce(kT0 + i * 1000);
  }
  const auto st = h->stats();
  EXPECT_EQ(st.series, 4u);
  EXPECT_EQ(st.refused, 6u) << "each refused series counted once";
  const auto rule = promql::makeLabels({{"__name__", "rule:x"}});
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(h->append(rule, kT0 + i * 1000, 1));
  EXPECT_EQ(h->stats().refused, 7u)
      << "a refused rule series is counted once, not per sample";
  const std::string log = ::testing::internal::GetCapturedStderr();
  size_t lines = 0;
  for (size_t p = 0;
       (p = log.find("history series limit reached", p)) != std::string::npos; ++p)
    ++lines;
  std::printf("series %zu, refused %llu, log lines %zu\n", h->stats().series,
              static_cast<unsigned long long>(h->stats().refused), lines);
  EXPECT_EQ(lines, 1u) << log;
  EXPECT_NE(log.find("limit=4"), std::string::npos) << log;
  // The kept series: the first four in scrape order, every pass's value.
  std::unique_ptr<promql::Querier> q;
  auto kept = selectAll(*h, "test_usage_bytes", 0, kT0 * 2, q);
  ASSERT_EQ(kept.size(), 4u);
  for (const auto& sv : kept) {
    const std::string cg(promql::labelValue(*sv.labels, "cgroup"));
    EXPECT_TRUE(cg == "/c0" || cg == "/c1" || cg == "/c2" || cg == "/c3") << cg;
    ASSERT_EQ(sv.samples.size(), 3u) << cg;
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(sv.samples[i].t, kT0 + i * 1000);
      EXPECT_EQ(sv.samples[i].v, 10 + i);
    }
  }
  EXPECT_TRUE(selectAll(*h, R"(test_usage_bytes{cgroup="/c9"})", 0, kT0 * 2, q).empty());
  metrics::Sink sink;
  h->collectMetrics(sink);
  bool seen = false;
  for (const auto& f : sink.families()) {
    if (f.desc->name != "memcg_exporter_history_series_refused_total") continue;
    ASSERT_EQ(f.samples.size(), 1u);
    EXPECT_EQ(f.samples[0].value, 7);
    seen = true;
  }
  EXPECT_TRUE(seen);
  // Once series end and age out, a new one fits again and is not refused.
  src.cgroups.clear();
  h->sampleOnce(kT0 + 3000);
  h->sampleOnce(kT0 + 3000 + o.retentionMs + 130 * 1000);
  EXPECT_TRUE(h->append(rule, kT0 + 3000 + o.retentionMs + 131 * 1000, 1));
  EXPECT_EQ(h->stats().refused, 7u);
}

TEST(History, VanishedCgroupEndsWithStalenessMarker) {
  FakeSource src;
  src.cgroups = {{"/a", 1}, {"/b", 2}};
  history::Options o;
  o.match = {"test_usage_bytes"};
  auto h = make(src, o);
  h->sampleOnce(kT0);
  h->sampleOnce(kT0 + 1000);
  src.cgroups = {{"/a", 1}};
  h->sampleOnce(kT0 + 2000);
  h->sampleOnce(kT0 + 3000);
  std::unique_ptr<promql::Querier> q;
  auto v = selectAll(*h, R"(test_usage_bytes{cgroup="/b"})", 0, kT0 * 2, q);
  ASSERT_EQ(v.size(), 1u);
  ASSERT_EQ(v[0].samples.size(), 3u);
  EXPECT_EQ(v[0].samples[2].t, kT0 + 2000);
  EXPECT_TRUE(promql::isStaleNaN(v[0].samples[2].v));
  // The engine sees it gone at once (not for the 5 min lookback).
  auto e = promql::parseExpr("count(test_usage_bytes)");
  ASSERT_TRUE(e.ok());
  promql::Engine eng;
  auto r = eng.instantQuery(*h, **e, kT0 + 3000);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->series.size(), 1u);
  EXPECT_EQ(r->series[0].points[0].v, 1);
}

TEST(History, RecreatedCgroupIsANewSeries) {
  FakeSource src;
  src.cgroups = {{"/a", 1}};
  history::Options o;
  o.match = {"test_usage_bytes"};
  auto h = make(src, o);
  src.value = 100;
  h->sampleOnce(kT0);
  h->sampleOnce(kT0 + 1000);
  src.cgroups = {{"/a", 7}};  // removed and made again between two passes
  src.value = 1;
  h->sampleOnce(kT0 + 2000);
  h->sampleOnce(kT0 + 3000);
  EXPECT_EQ(h->stats().series, 2u);
  std::unique_ptr<promql::Querier> q;
  auto v = selectAll(*h, "test_usage_bytes", 0, kT0 * 2, q);
  ASSERT_EQ(v.size(), 1u) << "one label set";
  ASSERT_EQ(v[0].samples.size(), 5u);
  EXPECT_EQ(v[0].samples[2].t, kT0 + 1999);
  EXPECT_TRUE(promql::isStaleNaN(v[0].samples[2].v));
  EXPECT_EQ(v[0].samples[3].v, 1);
  // Vanished then back with the SAME inode is one series continued.
}

TEST(History, AppendedRuleSamples) {
  FakeSource src;
  history::Options o;
  auto h = make(src, o);
  auto ls = promql::makeLabels(
      {{"__name__", "ALERTS"}, {"alertname", "X"}, {"alertstate", "firing"}});
  EXPECT_TRUE(h->append(ls, kT0, 1));
  EXPECT_FALSE(h->append(ls, kT0, 1)) << "same timestamp";
  EXPECT_TRUE(h->append(ls, kT0 + 1000, 1));
  EXPECT_TRUE(h->append(ls, kT0 + 2000, promql::staleNaN()));
  EXPECT_TRUE(h->append(ls, kT0 + 3000, 1)) << "fires again";
  std::unique_ptr<promql::Querier> q;
  auto v = selectAll(*h, R"(ALERTS{alertstate="firing"})", 0, kT0 * 2, q);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].samples.size(), 4u);
  EXPECT_EQ(h->labelValues("alertname", {}, 0, kT0 * 2), std::vector<std::string>{"X"});
  auto names = h->labelNames({}, 0, kT0 * 2);
  EXPECT_EQ(names, (std::vector<std::string>{"__name__", "alertname", "alertstate"}));
}

}  // namespace
