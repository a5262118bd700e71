// controller/state.h: the metric table and the latency histogram's exposition.
#include <gtest/gtest.h>

#include <set>

#include "controller/state.h"
#include "metrics/text_format.h"

namespace memcg::controller {
namespace {

TEST(ControllerState, MetricTableNamesEveryMetricOnce) {
  ControllerDescs d;
  std::set<std::string> names;
  for (const auto* m : d.all()) EXPECT_TRUE(names.insert(m->name).second) << m->name;
  EXPECT_EQ(names.size(), 9u);
  EXPECT_TRUE(names.count("memcg_controller_trigger_to_reclaim_seconds"));
  EXPECT_EQ(d.latency.type, metrics::Type::kHistogram);
  EXPECT_EQ(d.latency.buckets.size(), 12u);
  EXPECT_EQ(d.latency.buckets.front(), 0.0005);
  EXPECT_EQ(d.latency.buckets.back(), 2.5);
}

TEST(ControllerState, LatencyHistogramExposition) {
  ControllerDescs d;
  LatencyHistogram h;
  h.observe(0.0005);  // on a bound: that bucket
  h.observe(0.003);
  h.observe(7.0);  // above the last bound: +Inf only
  metrics::Sink sink;
  h.addTo(sink, d.latency, {"poll"});
  std::string text;
  metrics::writeText(sink.families(), text);
  const std::string s = "memcg_controller_trigger_to_reclaim_seconds";
  EXPECT_NE(text.find(s + "_bucket{trigger=\"poll\",le=\"0.0005\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(s + "_bucket{trigger=\"poll\",le=\"0.002\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find(s + "_bucket{trigger=\"poll\",le=\"0.005\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find(s + "_bucket{trigger=\"poll\",le=\"2.5\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find(s + "_bucket{trigger=\"poll\",le=\"+Inf\"} 3\n"),
            std::string::npos);
  EXPECT_NE(text.find(s + "_count{trigger=\"poll\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find(s + "_sum{trigger=\"poll\"} 7.0035\n"), std::string::npos);
}

}  // namespace
}  // namespace memcg::controller
