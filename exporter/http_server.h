// The one HTTP server (civetweb): /metrics, /-/healthy, /-/ready, the landing
// page, and the JSON API, on one port.
//
// /metrics is served by our own handler rather than prometheus-cpp's Exposer:
// the Exposer always gzips at level 6 and its TextSerializer costs ~10x our
// writer per sample (see bench/scrape_bench and README "Performance"). gzip is
// used when the client asks for it (Prometheus always does), at
// --web.gzip-level.
#pragma once

#include <memory>
#include <string>

#include "controller/api.h"
#include "exporter/flags.h"
#include "exporter/scraper.h"

class CivetServer;

namespace memcg {

class HttpServer {
 public:
  /// Starts serving. Throws std::runtime_error if the port cannot be bound.
  HttpServer(const Options& opts, Scraper& scraper,
             const controller::ControllerApi* controllerApi = nullptr);
  ~HttpServer();

  /// The port actually bound (useful with port 0).
  int port() const;

 private:
  struct Handlers;
  std::unique_ptr<Handlers> handlers_;
  std::unique_ptr<CivetServer> server_;
};

/// gzip-compresses `in` into `out` (replaced) at `level`. Returns false on a
/// zlib failure.
bool gzipCompress(std::string_view in, int level, std::string& out);

}  // namespace memcg
