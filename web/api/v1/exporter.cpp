#include "web/api/v1/exporter.h"

#include <nlohmann/json.hpp>

#include <chrono>

#include "common/duration.h"
#include "common/parse.h"
#include "tracing/lock_metrics.h"
#include "tracing/reclaim_report.h"
#include "collectors/taskstats.h"
#include "tracing/tracer.h"

namespace memcg::api {
namespace {

using nlohmann::json;

std::string_view typeName(metrics::Type t) {
  switch (t) {
    case metrics::Type::kCounter: return "counter";
    case metrics::Type::kGauge: return "gauge";
    case metrics::Type::kHistogram: return "histogram";
  }
  return "untyped";
}

}  // namespace

std::optional<double> parseDuration(std::string_view s) {
  int64_t ms = 0;
  if (!parseDurationMs(s, ms) || ms <= 0) return std::nullopt;
  // The window becomes steady_clock ticks (int64 ns, ~292 years): a longer
  // one would overflow that conversion (undefined behaviour). Any window
  // longer than the kept history means the oldest baseline anyway.
  constexpr double kMaxSeconds = 1e9;  // ~31 years
  const double secs = static_cast<double>(ms) / 1000.0;
  if (secs > kMaxSeconds) return std::nullopt;
  return secs;
}

namespace {

constexpr std::string_view kTracingDown = "vmscan tracing is not running (--collector.vmscan, root)";

void cgroups(const ApiParts& a, const http::Request&, http::Response& resp) {
  auto tree = a.scraper.discovery().current();
  json list = json::array();
  if (tree) {
    for (const auto& c : tree->cgroups) {
      list.push_back({{"cgroup", c.path}, {"id", c.inode}, {"depth", c.depth}});
    }
  }
  http::replyJson(resp, json{{"mode", std::string(modeName(a.scraper.discovery().layout().mode))},
                             {"cgroups", list},
                             {"dropped", tree ? tree->dropped : 0}});
}

void metricTable(const ApiParts& a, const http::Request&, http::Response& resp) {
  json list = json::array();
  auto descs = a.registry ? a.registry->describe() : a.scraper.describe();
  for (const auto* d : descs) {
    list.push_back({{"name", d->name},
                    {"help", d->help},
                    {"type", std::string(typeName(d->type))},
                    {"labels", d->labels}});
  }
  http::replyJson(resp, json{{"metrics", list}});
}

void delays(const ApiParts& a, const http::Request& req, http::Response& resp) {
  std::string cg = req.param("cgroup");
  if (cg.empty()) {
    return http::replyError(resp, 400, "missing query parameter cgroup (e.g. ?cgroup=/a/b)");
  }
  if (!a.taskstats) {
    return http::replyError(resp, 503,
                            "the taskstats collector is not enabled (--collector.taskstats)");
  }
  // Only cgroups discovery knows: never a raw path from the request.
  auto dir = a.scraper.discovery().find(cg);
  if (!dir) return http::replyError(resp, 404, "unknown cgroup " + cg);
  auto table = a.taskstats->delayTable(dir->path());
  if (!table.ok()) {
    return table.error().gone() ? http::replyError(resp, 404, "cgroup " + cg + " is gone")
                                : http::replyError(resp, 503, table.error().message());
  }
  http::replyJson(resp, *table);
}

void reclaimReport(const ApiParts& a, const http::Request& req, http::Response& resp) {
  if (!a.report) return http::replyError(resp, 503, kTracingDown);
  auto now = std::chrono::steady_clock::now();
  tracing::TraceSnapshot snap = a.report->snapshot();
  std::string w = req.param("window");
  if (w.empty()) return http::replyJson(resp, tracing::reclaimReport(snap));
  auto secs = parseDuration(w);
  if (!secs) {
    return http::replyError(resp, 400,
                            "window must be a duration like 30s, 5m or 1h30m, got \"" + w + "\"");
  }
  auto base = a.report->reportHistory().baseline(
      now, std::chrono::duration_cast<std::chrono::steady_clock::duration>(
               std::chrono::duration<double>(*secs)));
  if (!base) return http::replyJson(resp, tracing::reclaimReport(snap));
  http::replyJson(resp, tracing::reclaimReport(snap, &base->first, base->second));
}

void locks(const ApiParts& a, const http::Request&, http::Response& resp) {
  if (!a.locks) return http::replyError(resp, 503, kTracingDown);
  tracing::TraceSnapshot snap = a.locks->snapshot();
  if (!snap.locks.enabled) {
    return http::replyError(resp, 503,
                            "lock probes are off (--collector.vmscan.locks) or unavailable");
  }
  // Kernel symbols only for a report that has addresses to name.
  const tracing::Kallsyms* syms = snap.locks.top_locks.empty() && snap.locks.top_stacks.empty()
                                      ? nullptr
                                      : a.locks->kallsyms();
  http::replyJson(resp, tracing::lockReport(snap.locks, syms, a.locks->lockIds(),
                                            a.locks->lockAddresses()));
}

}  // namespace

void registerRoutes(http::Routes& routes, ApiParts parts) {
  using Fn = void (*)(const ApiParts&, const http::Request&, http::Response&);
  const std::pair<const char*, Fn> rows[] = {
      {"/api/v1/cgroups", cgroups},
      {"/api/v1/metrics", metricTable},
      {"/api/v1/delays", delays},
      {"/api/v1/reclaim/report", reclaimReport},
      {"/api/v1/locks", locks},
  };
  for (const auto& [path, fn] : rows) {
    routes.add({"GET", path, [parts, fn = fn](const http::Request& q, http::Response& r) {
                  fn(parts, q, r);
                }});
  }
}

}  // namespace memcg::api
