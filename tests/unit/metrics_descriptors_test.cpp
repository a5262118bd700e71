// metrics/descriptors.h: the one way to build a Desc.
#include "metrics/descriptors.h"

#include <gtest/gtest.h>

namespace memcg::metrics {
namespace {

TEST(Descriptors, CgroupMetricsCarryTheCgroupLabelFirst) {
  const Desc g = cgroupGauge("x_bytes", "h", {"kind"});
  EXPECT_EQ(g.type, Type::kGauge);
  EXPECT_EQ(g.labels, (std::vector<std::string>{"cgroup", "kind"}));
  EXPECT_TRUE(g.buckets.empty());
  const Desc c = cgroupCounter("x_total", "h2");
  EXPECT_EQ(c.type, Type::kCounter);
  EXPECT_EQ(c.name, "x_total");
  EXPECT_EQ(c.help, "h2");
  EXPECT_EQ(c.labels, std::vector<std::string>{"cgroup"});
  const Desc h = cgroupHistogram("x_seconds", "h3", {"kind"}, {0.5, 1});
  EXPECT_EQ(h.type, Type::kHistogram);
  EXPECT_EQ(h.labels, (std::vector<std::string>{"cgroup", "kind"}));
  EXPECT_EQ(h.buckets, (std::vector<double>{0.5, 1}));
}

TEST(Descriptors, NodeMetricsHaveOnlyTheirLabels) {
  EXPECT_TRUE(nodeGauge("y", "h").labels.empty());
  EXPECT_EQ(nodeCounter("y_total", "h", {"order"}).labels, std::vector<std::string>{"order"});
  EXPECT_EQ(nodeCounter("y_total", "h").type, Type::kCounter);
  const Desc h = nodeHistogram("y_seconds", "h", {"kind"}, {1e-6});
  EXPECT_EQ(h.type, Type::kHistogram);
  EXPECT_EQ(h.labels, std::vector<std::string>{"kind"});
  EXPECT_EQ(h.buckets, std::vector<double>{1e-6});
}

}  // namespace
}  // namespace memcg::metrics
