// The HTTP front: every handler, the route table they register into, the
// web config (basic auth, TLS) and the server, built from the parts the App
// owns. The composition root hands the parts over and starts serving; it
// includes nothing else of web/, and no domain folder includes web/ at all.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace memcg {
class Scraper;
class TaskstatsService;
namespace metrics {
class Registry;
struct Desc;
}
namespace tracing {
class Tracer;
class ReclaimReportSource;
class LockReportSource;
}
namespace controller {
class Controller;
}
namespace history {
class History;
}
namespace rules {
class Manager;
class Actions;
}  // namespace rules
namespace http {
class Routes;
}
}  // namespace memcg

namespace memcg::web {

struct FrontOptions {
  std::string listenAddress = ":9712";
  int threads = 4;
  int gzipLevel = 1;
  int readTimeoutMs = 10000;  ///< the head, again the body; also the TLS handshake
  int maxConnections = 4096;
  std::string webConfigFile;  ///< --web.config.file; empty: plain HTTP, no users
  std::string telemetryPath = "/metrics";
  std::vector<std::string> enabledCollectors;  ///< listed on the landing page
  /// --controller.token-file: the bearer token of the mutating endpoints;
  /// empty: they are refused.
  std::string controllerTokenFile;
  int64_t queryTimeoutMs = 2 * 60 * 1000;  ///< --query.timeout
  int64_t queryMaxSamples = 50'000'000;    ///< --query.max-samples
  /// The HTTP server's own counters on /metrics (off with
  /// --web.disable-exporter-metrics).
  bool exporterMetrics = true;
};

/// What the handlers read and call; the App owns all of it. Null: not running.
struct FrontParts {
  Scraper& scraper;             ///< /-/ready, /api/v1/cgroups
  metrics::Registry& metrics;   ///< /metrics, /api/v1/metrics; the query API registers here
  tracing::LockReportSource* locks = nullptr;       ///< /api/v1/locks (either backend)
  tracing::ReclaimReportSource* report = nullptr;  ///< /api/v1/reclaim/report (either backend)
  TaskstatsService* taskstats = nullptr;    ///< /api/v1/delays
  controller::Controller* controller = nullptr;  ///< /api/v1/controller/*
  history::History* history = nullptr;    ///< /api/v1/query*, the live view's series
  rules::Manager* rules = nullptr;        ///< /api/v1/rules, /api/v1/alerts, /-/reload
  rules::Actions* actions = nullptr;      ///< the Alertmanager webhook
};

class Front {
 public:
  /// Builds every handler and the route table (not yet serving). Throws
  /// (std::runtime_error, std::invalid_argument) for an unreadable token or a
  /// bad web config file: start-up errors.
  Front(FrontOptions opts, FrontParts parts);
  /// Stops the server first: no request reaches a part being torn down.
  ~Front();
  Front(const Front&) = delete;
  Front& operator=(const Front&) = delete;

  /// Binds and serves; throws when the address is unusable (a port in use).
  void serve();
  /// The HTTP server's own metrics (the "http" registry part), for references.
  static std::vector<const metrics::Desc*> describeServerMetrics();

  const http::Routes& routes() const;
  /// The bound port (after serve()).
  int port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace memcg::web
