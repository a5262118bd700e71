// The one HTTP server (civetweb): transport only. Every request is handed to
// the route table (routes.h), which the App fills: /metrics, /-/healthy,
// /-/ready, the landing page and the JSON API, on one port.
//
// /metrics is served by our own route rather than prometheus-cpp's Exposer:
// the Exposer always gzips at level 6 and its TextSerializer costs ~10x our
// writer per sample (see bench/scrape_bench and README "Performance"). A
// compressible response is gzipped when the client asks for it (Prometheus
// always does), at --web.gzip-level. Response buffers are pooled: as many as
// requests ever ran at once, not one per worker thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "exporter/routes.h"

class CivetServer;

namespace memcg {

struct HttpServerOptions {
  std::string listenAddress = ":9712";  ///< [host]:port (flags.h civetListeningPort)
  int threads = 4;
  int gzipLevel = 1;
};

class HttpServer {
 public:
  /// Starts serving `routes` (kept by reference; must outlive the server).
  /// Throws std::runtime_error if the port cannot be bound.
  HttpServer(const HttpServerOptions& opts, const http::Routes& routes);
  ~HttpServer();

  /// The port actually bound (useful with port 0).
  int port() const;

 private:
  struct Transport;
  std::unique_ptr<Transport> transport_;
  std::unique_ptr<CivetServer> server_;
};

/// gzip-compresses `in` into `out` (replaced) at `level`. Returns false on a
/// zlib failure.
bool gzipCompress(std::string_view in, int level, std::string& out);

}  // namespace memcg
