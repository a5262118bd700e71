// The exporter's JSON API (nlohmann_json), thin: validate input, call one
// part, render its answer. Registered as rows of the route table
// (web/routes.h) by the App:
//
//   GET /api/v1/cgroups            the cgroups of the last walk
//   GET /api/v1/metrics            the metric table (name, help, type, labels)
//   GET /api/v1/delays?cgroup=/x   the getdelays table of one cgroup (taskstats)
//   GET /api/v1/locks              lock probes: top locks, sampled callers
//   GET /api/v1/reclaim/report[?window=5m]   trace-vmscan-postprocess's report,
//                                  per cgroup, from the vmscan tracepoints
//
// Errors are {"error": "..."} with 400 (bad input), 404 (unknown cgroup or
// route) or 503 (the part is not enabled or not available).
#pragma once

#include <optional>
#include <vector>
#include <string>
#include <string_view>

#include "web/routes.h"
#include "collectors/scraper.h"
#include "metrics/registry.h"

namespace memcg {
class TaskstatsService;
namespace tracing {
class Tracer;
class ReclaimReportSource;
class LockReportSource;
}
}  // namespace memcg

namespace memcg::api {

/// What the handlers read; the App owns all of it. Null: not running.
struct ApiParts {
  Scraper& scraper;
  tracing::LockReportSource* locks = nullptr;      ///< /locks (either backend)
  tracing::ReclaimReportSource* report = nullptr;  ///< /reclaim/report (either backend)
  TaskstatsService* taskstats = nullptr;  ///< /delays
  /// What /metrics serves, for /api/v1/metrics; null: the scraper's own.
  const metrics::Registry* registry = nullptr;
};

void registerRoutes(http::Routes& routes, ApiParts parts);

/// A Prometheus duration ("30s", "5m", "1h30m") in seconds; nullopt if
/// malformed, 0 or above 1e9 s.
std::optional<double> parseDuration(std::string_view s);

using http::queryParam;

}  // namespace memcg::api
