// Trial server (a): the product's own web::HttpServer (web/http_server.h) with
// the trial's routes and limits. See trial_common.h for the command line.
#include <chrono>
#include <thread>

#include "bench/http_trial/trial_common.h"
#include "web/http_server.h"
#include "web/routes.h"
#include "web/tls.h"

int main(int argc, char** argv) {
  trial::Options o = trial::parseArgs(argc, argv);
  memcg::http::Routes routes;
  routes.add({"GET", "/metrics", [](const memcg::http::Request&, memcg::http::Response& r) {
                r.contentType = "text/plain; version=0.0.4; charset=utf-8";
                r.body = trial::metricsBody();
                r.compressible = true;
              }});
  routes.add({"GET", "/slow", [](const memcg::http::Request&, memcg::http::Response& r) {
                std::this_thread::sleep_for(std::chrono::milliseconds(trial::kSlowHandlerMs));
                r.contentType = "text/plain";
                r.body = "slow\n";
              }});
  routes.add({"POST", "/echo", [](const memcg::http::Request& q, memcg::http::Response& r) {
                r.contentType = "text/plain";
                r.body = std::to_string(q.body.size()) + "\n";
              }});
  memcg::HttpServerOptions so;
  so.listenAddress = "127.0.0.1:0";
  so.threads = o.threads;
  so.maxHeadBytes = trial::kMaxHeadBytes;  // the body limit is http::kMaxBodyBytes (64 KiB)
  so.readTimeoutMs = o.readTimeoutMs;
  so.idleTimeoutMs = o.idleTimeoutMs;
  so.handshakeTimeoutMs = o.readTimeoutMs;
  so.maxConnections = o.maxConn;
  so.queueWaitMs = o.queueWaitMs;
  if (!o.certFile.empty()) {
    memcg::TlsServerConfig tc;
    tc.certFile = o.certFile;
    tc.keyFile = o.keyFile;
    auto ctx = memcg::makeTlsContext(tc);
    if (!ctx.ok()) {
      std::fprintf(stderr, "tls: %s\n", ctx.error().message().c_str());
      return 1;
    }
    memcg::TlsContext c = *ctx;
    so.tlsContext = [c] { return c; };
  }
  memcg::HttpServer server(so, routes);
  trial::announce(server.port());
  trial::waitForStdinClose();
  return 0;
}
