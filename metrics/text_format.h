// Prometheus text exposition format 0.0.4, written with std::to_chars.
//
// The output is byte-identical to prometheus-cpp 1.0's TextSerializer for the
// same families (tests/unit/text_format_test.cpp proves it): values as printf
// "%.16g", "+Inf"/"-Inf"/"Nan", label values escaped (\\, \", \n), histogram
// buckets with "le" last and a "+Inf" bucket. It is ~10x cheaper per sample
// (bench/scrape_bench), which matters at 100k samples per scrape.
#pragma once

#include <prometheus/metric_family.h>

#include <deque>
#include <string>
#include <vector>

#include "metrics/metric.h"

namespace memcg::metrics {

/// Appends the families to `out`.
void writeText(const std::deque<Family>& families, std::string& out);
/// Appends prometheus-cpp families (e.g. from a prometheus::Registry) to `out`.
void writeText(const std::vector<prometheus::MetricFamily>& families, std::string& out);

/// The same family in prometheus-cpp's model, for prometheus::Collectable
/// users and for the byte-identity test.
prometheus::MetricFamily toPrometheus(const Family& f);

/// Formats a value as TextSerializer does; returns the length written
/// (buffer of at least 32 bytes).
size_t formatValue(double v, char* buf);

}  // namespace memcg::metrics
