// The JSON API (nlohmann_json), thin: validate input, call one part, render
// its answer. Routed by HttpServer under /api/v1/; written as plain functions
// so they are tested without HTTP.
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
#include <string>
#include <string_view>

#include "exporter/scraper.h"

namespace memcg::api {

struct Response {
  int status = 200;
  std::string body;  ///< JSON
};

/// `path` is below /api/v1 (e.g. "/delays"); `query` the raw query string.
Response handleGet(Scraper& scraper, const std::string& path, const std::string& query);

/// "30s", "5m", "1h" in seconds; nullopt if malformed, 0 or above 1e9 s.
std::optional<double> parseDuration(std::string_view s);

/// Decodes one query parameter (URL-decoded); empty if absent.
std::string queryParam(const std::string& query, const std::string& name);

}  // namespace memcg::api
