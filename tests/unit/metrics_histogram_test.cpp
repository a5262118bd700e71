// metrics::FixedHistogram: bucketing, merge/subtract, and its exposition,
// which must be byte-identical to what the collectors wrote by hand before
// (per-bucket counts summed into HistogramSample::cumulative, sum in seconds).
#include "metrics/histogram.h"

#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include <sstream>

#include "metrics/text_format.h"

namespace memcg::metrics {
namespace {

inline constexpr BucketLayout<uint64_t, 4> kNs{{1'000, 2'500, 10'000, 1'000'000'000}, 1e9};
using NsHistogram = FixedHistogram<kNs>;
inline constexpr BucketLayout<double, 3> kSeconds{{0.0005, 0.001, 0.25}, 1};
using SecondsHistogram = FixedHistogram<kSeconds>;

std::string text(const Sink& sink) {
  std::string out;
  writeText(sink.families(), out);
  return out;
}

TEST(FixedHistogram, BucketsAreUpperInclusive) {
  NsHistogram h;
  h.observe(0);
  h.observe(1'000);  // on the first bound: first bucket
  h.observe(1'001);
  h.observe(10'000);
  h.observe(2'000'000'000);  // above the last bound: +Inf
  EXPECT_EQ(h.buckets[0], 2u);
  EXPECT_EQ(h.buckets[1], 1u);
  EXPECT_EQ(h.buckets[2], 1u);
  EXPECT_EQ(h.buckets[3], 0u);
  EXPECT_EQ(h.buckets[4], 1u);
  EXPECT_EQ(h.count, 5u);
  EXPECT_EQ(h.sum, 2'000'012'001u);
  const auto cum = h.cumulative();
  EXPECT_EQ(cum[0], 2u);
  EXPECT_EQ(cum[2], 4u);
  EXPECT_EQ(cum[3], 4u);
  EXPECT_EQ(cum[4], 5u);
  EXPECT_EQ(h.cumulativeFinite(), (std::vector<uint64_t>{2, 3, 4, 4}));
}

TEST(FixedHistogram, ExposedUnitIsDividedOnceFromTheLayout) {
  // le is bound / per_unit (1000 ns prints "1e-06", not 1.0000000000000002e-06).
  EXPECT_EQ(kNs.exposedBound(0), 1e-6);
  EXPECT_EQ(kNs.exposedBounds(), (std::vector<double>{1e-6, 2.5e-6, 1e-5, 1.0}));
  EXPECT_EQ(NsHistogram::exposedBound(3), 1.0);
  NsHistogram h;
  h.observe(1'500);
  h.observe(3'000'000'000);
  EXPECT_EQ(h.exposedSum(), 3'000'001'500.0 * 1e-9);
  // Seconds layouts pass their values through unchanged.
  SecondsHistogram s;
  s.observe(0.0007);
  s.observe(0.3);
  EXPECT_EQ(s.exposedSum(), 0.0007 + 0.3);
  EXPECT_EQ(kSeconds.exposedBounds(), (std::vector<double>{0.0005, 0.001, 0.25}));
  EXPECT_EQ(s.buckets[1], 1u);
  EXPECT_EQ(s.buckets[3], 1u);
}

TEST(FixedHistogram, MergeAndSubtractAreInverse) {
  NsHistogram a, b;
  for (uint64_t v : {10ull, 2'000ull, 5'000ull}) a.observe(v);
  for (uint64_t v : {3'000'000'000ull, 900ull}) b.observe(v);
  NsHistogram m = a;
  m.merge(b);
  EXPECT_EQ(m.count, 5u);
  EXPECT_EQ(m.sum, a.sum + b.sum);
  EXPECT_EQ(m.buckets[0], 2u);
  EXPECT_EQ(m.buckets[4], 1u);
  NsHistogram d = m;
  d.subtract(a);
  EXPECT_EQ(d, b);
  // Not an earlier copy (a counter reset): saturates, never wraps.
  NsHistogram z = a;
  z.subtract(m);
  EXPECT_EQ(z, NsHistogram{});
}

// The exposition a histogram writes is the one the collectors built by hand
// before FixedHistogram (sum_ns * 1e-9, cumulative without +Inf), and
// TextSerializer's.
TEST(FixedHistogram, ExpositionIsByteIdenticalToTheHandWrittenOne) {
  const Desc d{"x_stall_seconds", "h", Type::kHistogram, {"cgroup", "kind"}, kNs.exposedBounds()};
  NsHistogram h;
  uint64_t manual_buckets[5] = {};
  uint64_t manual_sum = 0;
  for (uint64_t v : {0ull, 999ull, 1'234ull, 7'777ull, 123'456'789ull, 5'000'000'000ull}) {
    h.observe(v);
    size_t i = 0;
    while (i < 4 && v > kNs.bounds[i]) ++i;
    ++manual_buckets[i];
    manual_sum += v;
  }
  Sink ours;
  h.addTo(ours, d, {"/a", "memcg"});
  NsHistogram{}.addTo(ours, d, {"/b", "direct"});  // an empty series is still written
  Sink hand;
  std::vector<uint64_t> cum;
  uint64_t run = 0;
  for (size_t i = 0; i < 4; ++i) cum.push_back(run += manual_buckets[i]);
  hand.family(d).addHistogram({"/a", "memcg"}, 6, static_cast<double>(manual_sum) * 1e-9, cum);
  hand.family(d).addHistogram({"/b", "direct"}, 0, 0, {0, 0, 0, 0});
  const std::string t = text(ours);
  EXPECT_EQ(t, text(hand));
  EXPECT_NE(t.find("x_stall_seconds_bucket{cgroup=\"/a\",kind=\"memcg\",le=\"1e-06\"} 2\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("x_stall_seconds_bucket{cgroup=\"/a\",kind=\"memcg\",le=\"1\"} 5\n"),
            std::string::npos);
  EXPECT_NE(t.find("x_stall_seconds_bucket{cgroup=\"/a\",kind=\"memcg\",le=\"+Inf\"} 6\n"),
            std::string::npos);
  EXPECT_NE(t.find("x_stall_seconds_sum{cgroup=\"/a\",kind=\"memcg\"} 5.123466799\n"),
            std::string::npos);
  EXPECT_NE(t.find("x_stall_seconds_count{cgroup=\"/b\",kind=\"direct\"} 0\n"), std::string::npos);
  std::vector<prometheus::MetricFamily> pf;
  for (const auto& f : ours.families()) pf.push_back(toPrometheus(f));
  std::ostringstream ref;
  prometheus::TextSerializer().Serialize(ref, pf);
  EXPECT_EQ(t, ref.str());
}

TEST(FixedHistogram, SecondsLayoutWritesTheDoubleSum) {
  const Desc d{"x_latency_seconds", "h", Type::kHistogram, {"trigger"}, kSeconds.exposedBounds()};
  SecondsHistogram h;
  h.observe(0.0001);
  h.observe(0.1);
  Sink sink;
  h.addTo(sink.family(d), {"poll"});
  const std::string t = text(sink);
  EXPECT_NE(t.find("x_latency_seconds_bucket{trigger=\"poll\",le=\"0.0005\"} 1\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("x_latency_seconds_bucket{trigger=\"poll\",le=\"0.25\"} 2\n"),
            std::string::npos);
  EXPECT_NE(t.find("x_latency_seconds_sum{trigger=\"poll\"} 0.1001\n"), std::string::npos);
}

}  // namespace
}  // namespace memcg::metrics
