// Descriptor helpers: the one way to build a metric's Desc (metric.h), used by
// the collectors, tracing and the controller. Every per-cgroup metric carries
// the `cgroup` label first.
#pragma once

#include <string>
#include <vector>

#include "metrics/histogram.h"
#include "metrics/metric.h"

namespace memcg::metrics {

Desc cgroupGauge(std::string name, std::string help, std::vector<std::string> extraLabels = {});
Desc cgroupCounter(std::string name, std::string help,
                   std::vector<std::string> extraLabels = {});
Desc nodeGauge(std::string name, std::string help, std::vector<std::string> labels = {});
Desc nodeCounter(std::string name, std::string help, std::vector<std::string> labels = {});
/// Histograms; `buckets` are the exposed upper bounds (BucketLayout::exposedBounds()).
Desc cgroupHistogram(std::string name, std::string help, std::vector<std::string> extraLabels,
                     std::vector<double> buckets);
Desc nodeHistogram(std::string name, std::string help, std::vector<std::string> labels,
                   std::vector<double> buckets);

}  // namespace memcg::metrics
