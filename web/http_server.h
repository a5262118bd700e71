// The one HTTP server: transport only. Every request is handed to the route
// table (routes.h), which the App fills: /metrics, /-/healthy, /-/ready, the
// landing page and the JSON API, on one port.
//
// Why our own (measured, e2e.http_limits and bench/http_trial): the embedded
// server the exporter started with gave each connection a worker thread from the
// moment it was accepted until the request was complete, so N connections that
// send a partial head and wait (slowloris) starved N workers: with 4 threads, 4
// such connections stopped every scrape; with 64 threads, 1,000 of them did. No
// option of it changed that (its request timeout only bounded how long each one
// held a thread). libmicrohttpd and Boost.Beast hold the scrape bound but cost
// 6-11x our memory per slow connection (docs/design/http-server.md).
//
// So one front thread (epoll) owns every connection while it is being read:
// it accepts, reads the request line, headers and body into a bounded buffer,
// enforces the size limits and the read timeouts, and hands only complete
// requests to the workers. A slow or idle client costs a file descriptor and
// its buffer (at most kMaxHeadBytes + kMaxBodyBytes while reading), never a
// thread. Workers run the handler, write the answer (under a write timeout)
// and give a keep-alive connection back to the front.
//
// TLS (tls.h): the front thread also runs each connection's handshake,
// non-blocking; one that is not done within handshakeTimeoutMs is closed, so
// a client that opens TLS connections and stalls in the handshake costs what
// a slowloris does, a descriptor and OpenSSL's per-connection state (~30 KiB
// measured, README), never a worker. Workers encrypt the answers.
//
// Limits: request line + headers <= maxHeadBytes (431 above), body <=
// http::kMaxBodyBytes (413), head and body must arrive within
// readTimeoutMs each (408 and close), an idle keep-alive connection is closed
// after idleTimeoutMs, at most maxConnections are open (more are accepted and
// closed at once), and at most `threads` requests run at once: the rest
// queue for at most queueWaitMs and are then answered 503.
//
// /metrics is served by our own route rather than prometheus-cpp's Exposer:
// the Exposer always gzips at level 6 and its TextSerializer costs ~10x our
// writer per sample (see bench/scrape_bench and README "Performance"). A
// compressible response is gzipped when the client asks for it (Prometheus
// always does), at --web.gzip-level. Response buffers are pooled: as many as
// requests ever ran at once, not one per worker thread.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/metric.h"
#include "web/routes.h"
#include "web/tls.h"

namespace memcg {

namespace http {

/// What the head says about the rest of the request.
struct HeadInfo {
  size_t bodyLen = 0;  ///< Content-Length, capped at kMaxBodyBytes + 1
  bool keepAlive = true;
};

/// The server's request head parser, callable without a socket (fuzzed by
/// tests/fuzz/fuzz_http_parser.cpp): `head` is the request line and the
/// headers without the blank line. Fills `req` (method, URL-decoded path,
/// raw query, headers; body cleared) and `info`. 0, or the status to refuse
/// it with (400 malformed, 411 chunked, 431 too many headers), `why` set.
int parseRequestHead(std::string_view head, Request& req, HeadInfo& info, std::string& why);

}  // namespace http

struct HttpServerOptions {
  std::string listenAddress = ":9712";  ///< [host]:port, port 0 = any
  int threads = 4;                      ///< workers = requests handled at once
  int gzipLevel = 1;
  size_t maxHeadBytes = 16 * 1024;  ///< request line + headers
  int readTimeoutMs = 10000;        ///< for the head, and again for the body
  int idleTimeoutMs = 60000;        ///< keep-alive connection with nothing sent
  int writeTimeoutMs = 30000;       ///< a client that stops reading the answer
  int maxConnections = 4096;
  int queueWaitMs = 2000;  ///< a complete request waits this long for a worker
  /// If set, header lines ("Name: value\r\n" each) added to every answer
  /// (--web.config.file's http_server_config.headers). Runs on a worker.
  /// Auth is not the server's: dispatch() applies the routes' policy.
  std::function<std::string()> responseHeaders;
  /// If set, every connection speaks TLS (--web.config.file's
  /// tls_server_config): asked once per accepted connection for the current
  /// context (which a reload may replace). Runs on the front thread.
  std::function<TlsContext()> tlsContext;
  /// A TLS handshake not done within this is closed (no answer is possible
  /// before it); the request head then gets readTimeoutMs of its own.
  int handshakeTimeoutMs = 10000;
};

struct HttpServerStats {
  uint64_t refusedConnections = 0;  ///< over maxConnections
  uint64_t handshakeFailures = 0;   ///< TLS: bad hello, refused certificate, ...
  uint64_t handshakeTimeouts = 0;   ///< TLS: not done within handshakeTimeoutMs
};

class HttpServer {
 public:
  /// Starts serving `routes` (kept by reference; must outlive the server).
  /// Throws std::runtime_error if the address cannot be bound.
  HttpServer(const HttpServerOptions& opts, const http::Routes& routes);
  ~HttpServer();

  /// The port actually bound (useful with port 0).
  int port() const;

  HttpServerStats stats() const;

  /// The server's own metrics (memcg_exporter_http_*): connections accepted
  /// and open, requests refused by status code and reason, TLS handshake
  /// failures, and how long complete requests waited for a worker.
  void collect(metrics::Sink& sink) const;
  static std::vector<const metrics::Desc*> describe();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// gzip-compresses `in` into `out` (replaced) at `level`. Returns false on a
/// zlib failure.
bool gzipCompress(std::string_view in, int level, std::string& out);

}  // namespace memcg
