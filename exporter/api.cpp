#include "exporter/api.h"

#include <nlohmann/json.hpp>

#include <chrono>

#include "common/parse.h"
#include "tracing/lock_metrics.h"
#include "tracing/reclaim_report.h"
#include "tracing/tracer.h"

namespace memcg::api {
namespace {

using nlohmann::json;

/// Serialises a reply. Strings here can hold any bytes: the request's path
/// and query (URL-decoded), cgroup directory names, task comms. The default
/// dump() throws on invalid UTF-8, and an exception out of a civetweb handler
/// terminates the process; invalid bytes become U+FFFD instead.
std::string dumpJson(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Response error(int status, const std::string& why) {
  return {status, dumpJson(json{{"error", why}})};
}

std::string_view typeName(metrics::Type t) {
  switch (t) {
    case metrics::Type::kCounter: return "counter";
    case metrics::Type::kGauge: return "gauge";
    case metrics::Type::kHistogram: return "histogram";
  }
  return "untyped";
}

int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::optional<double> parseDuration(std::string_view s) {
  if (s.size() < 2) return std::nullopt;
  double unit = 0;
  switch (s.back()) {
    case 's': unit = 1; break;
    case 'm': unit = 60; break;
    case 'h': unit = 3600; break;
    default: return std::nullopt;
  }
  auto n = parseU64(s.substr(0, s.size() - 1));
  if (!n || *n == 0) return std::nullopt;
  // The window becomes steady_clock ticks (int64 ns, ~292 years): a longer
  // one would overflow that conversion (undefined behaviour). Any window
  // longer than the kept history means the oldest baseline anyway.
  constexpr double kMaxSeconds = 1e9;  // ~31 years
  const double secs = static_cast<double>(*n) * unit;
  if (secs > kMaxSeconds) return std::nullopt;
  return secs;
}

std::string queryParam(const std::string& query, const std::string& name) {
  size_t pos = 0;
  while (pos <= query.size()) {
    size_t amp = query.find('&', pos);
    if (amp == std::string::npos) amp = query.size();
    std::string_view kv(query.data() + pos, amp - pos);
    size_t eq = kv.find('=');
    if (kv.substr(0, eq) == name) {
      std::string out;
      std::string_view v = eq == std::string_view::npos ? std::string_view{} : kv.substr(eq + 1);
      for (size_t i = 0; i < v.size(); ++i) {
        if (v[i] == '+') {
          out += ' ';
        } else if (v[i] == '%' && i + 2 < v.size() &&
                   hex(v[i + 1]) >= 0 && hex(v[i + 2]) >= 0) {
          out += static_cast<char>(hex(v[i + 1]) * 16 + hex(v[i + 2]));
          i += 2;
        } else {
          out += v[i];
        }
      }
      return out;
    }
    pos = amp + 1;
  }
  return {};
}

Response handleGet(Scraper& scraper, const std::string& path, const std::string& query) {
  if (path == "/cgroups") {
    auto tree = scraper.discovery().current();
    json list = json::array();
    if (tree) {
      for (const auto& c : tree->cgroups) {
        list.push_back({{"cgroup", c.path}, {"id", c.inode}, {"depth", c.depth}});
      }
    }
    return {200, dumpJson(json{
                     {"mode", std::string(modeName(scraper.discovery().layout().mode))},
                     {"cgroups", list},
                     {"dropped", tree ? tree->dropped : 0}})};
  }
  if (path == "/metrics") {
    json list = json::array();
    for (const auto* d : scraper.describe()) {
      list.push_back({{"name", d->name},
                      {"help", d->help},
                      {"type", std::string(typeName(d->type))},
                      {"labels", d->labels}});
    }
    return {200, dumpJson(json{{"metrics", list}})};
  }
  if (path == "/delays") {
    std::string cg = queryParam(query, "cgroup");
    if (cg.empty()) return error(400, "missing query parameter cgroup (e.g. ?cgroup=/a/b)");
    Collector* c = scraper.collector("taskstats");
    if (!c) return error(503, "the taskstats collector is not enabled (--collector.taskstats)");
    // Only cgroups discovery knows: never a raw path from the request.
    auto dir = scraper.discovery().find(cg);
    if (!dir) return error(404, "unknown cgroup " + cg);
    auto table = taskstatsDelayTable(*c, dir->path());
    if (!table.ok()) {
      return table.error().gone() ? error(404, "cgroup " + cg + " is gone")
                                  : error(503, table.error().message());
    }
    return {200, dumpJson(*table)};
  }
  if (path == "/reclaim/report") {
    auto tracer = tracing::activeTracer();
    if (!tracer) return error(503, "vmscan tracing is not running (--collector.vmscan, root)");
    auto now = std::chrono::steady_clock::now();
    tracing::TraceSnapshot snap = tracer->snapshot();
    tracer->reportHistory().maybeRecord(now, snap);
    std::string w = queryParam(query, "window");
    if (w.empty()) return {200, dumpJson(tracing::reclaimReport(snap))};
    auto secs = parseDuration(w);
    if (!secs) return error(400, "window must be a duration like 30s, 5m or 1h, got \"" + w + "\"");
    auto base = tracer->reportHistory().baseline(
        now, std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                 std::chrono::duration<double>(*secs)));
    if (!base) return {200, dumpJson(tracing::reclaimReport(snap))};
    return {200, dumpJson(tracing::reclaimReport(snap, &base->first, base->second))};
  }
  if (path == "/locks") {
    auto tracer = tracing::activeTracer();
    if (!tracer) return error(503, "vmscan tracing is not running (--collector.vmscan, root)");
    tracing::TraceSnapshot snap = tracer->snapshot();
    if (!snap.locks.enabled) {
      return error(503, "lock probes are off (--collector.vmscan.locks) or unavailable");
    }
    // Kernel symbols only for a report that has addresses to name.
    const tracing::Kallsyms* syms =
        snap.locks.top_locks.empty() && snap.locks.top_stacks.empty()
            ? nullptr
            : tracer->kallsyms();
    return {200, dumpJson(tracing::lockReport(snap.locks, syms, tracer->lockIds(),
                                              tracer->lockAddresses()))};
  }
  return error(404, "no such endpoint: /api/v1" + path);
}

}  // namespace memcg::api
