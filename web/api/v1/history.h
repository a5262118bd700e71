// Prometheus' HTTP query API over the history, as route rows: /api/v1/query,
// /api/v1/query_range, /api/v1/series, /api/v1/labels,
// /api/v1/label/<name>/values, /api/v1/metadata, /api/v1/status/buildinfo
// (and an empty /api/v1/query_exemplars, which Grafana asks for), GET and
// POST (form-encoded). Answers use Prometheus' envelope: {"status":
// "success"|"error", "data", "errorType", "error", "warnings"}; times are
// RFC 3339 or unix seconds, durations Prometheus' ("15s", "1m30s") or
// seconds, as Prometheus parses them.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "web/routes.h"
#include "history/history.h"
#include "metrics/metric.h"
#include "promql/engine.h"

namespace memcg::history {

struct ApiOptions {
  int64_t maxSamples = 50'000'000;  ///< samples one query may load (--query.max-samples)
  int64_t maxPoints = 11'000;       ///< points per series of a range query
  int64_t timeoutMs = 2 * 60 * 1000;  ///< default and upper bound of ?timeout=
  int64_t lookbackMs = 5 * 60 * 1000;
  std::string version;  ///< buildinfo
  std::string revision;
  /// Every metric the exporter can export, for /api/v1/metadata.
  std::function<std::vector<const metrics::Desc*>()> describe;
};

/// Parses a Prometheus API time: unix seconds (fractions allowed) or RFC 3339.
bool parseApiTime(std::string_view s, int64_t& ms);
/// Parses a Prometheus API duration: seconds (a float) or "1m30s" style.
bool parseApiDuration(std::string_view s, int64_t& ms);

/// The per-endpoint counters (query duration and errors), exported on /metrics.
class QueryApi {
 public:
  QueryApi(const History& history, ApiOptions opts);
  ~QueryApi();
  void registerRoutes(http::Routes& routes);
  void collectMetrics(metrics::Sink& sink) const;
  static std::vector<const metrics::Desc*> describeMetrics();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace memcg::history
