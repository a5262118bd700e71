#include "exporter/http_server.h"

#include <CivetServer.h>
#include <zlib.h>

#include <cstring>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "exporter/flags.h"

namespace memcg {
namespace {

void reply(mg_connection* conn, int status, std::string_view contentType, std::string_view body,
           std::string_view extraHeaders = {}) {
  std::string head = "HTTP/1.1 " + std::to_string(status) + " ";
  head += http::statusText(status);
  head += "\r\nContent-Type: ";
  head += contentType;
  head += "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  head += extraHeaders;
  head += "\r\n";
  mg_write(conn, head.data(), head.size());
  mg_write(conn, body.data(), body.size());
}

bool acceptsGzip(mg_connection* conn) {
  const char* ae = mg_get_header(conn, "Accept-Encoding");
  return ae && std::strstr(ae, "gzip") != nullptr;
}

}  // namespace

// One civetweb handler for every path: request in, route table, bytes out.
struct HttpServer::Transport : public CivetHandler {
  struct Buffers {
    http::Request req;
    http::Response resp;
    std::string gz;
  };

  Transport(const http::Routes& r, int level) : routes(r), gzipLevel(level) {}

  bool handleGet(CivetServer*, mg_connection* conn) override { return serve(conn); }
  bool handlePost(CivetServer*, mg_connection* conn) override { return serve(conn); }

  bool serve(mg_connection* conn) {
    auto b = acquire();
    const mg_request_info* ri = mg_get_request_info(conn);
    http::Request& req = b->req;
    req.method = ri->request_method ? ri->request_method : "GET";
    req.path = ri->local_uri ? ri->local_uri : "/";
    req.query = ri->query_string ? ri->query_string : "";
    req.headers.clear();
    for (int i = 0; i < ri->num_headers; ++i) {
      req.headers.emplace_back(ri->http_headers[i].name ? ri->http_headers[i].name : "",
                               ri->http_headers[i].value ? ri->http_headers[i].value : "");
    }
    // Read at most one byte past the limit: dispatch() refuses the rest.
    req.body.clear();
    char buf[4096];
    int n;
    while (req.body.size() <= http::kMaxBodyBytes && (n = mg_read(conn, buf, sizeof buf)) > 0) {
      req.body.append(buf, static_cast<size_t>(n));
    }
    http::Response& resp = b->resp;
    resp.status = 200;
    resp.contentType = "application/json";
    resp.compressible = false;
    resp.body.clear();  // keeps its capacity for the next scrape
    http::dispatch(routes, req, resp);
    if (resp.compressible && acceptsGzip(conn) && gzipCompress(resp.body, gzipLevel, b->gz)) {
      reply(conn, resp.status, resp.contentType, b->gz,
            "Content-Encoding: gzip\r\nVary: Accept-Encoding\r\n");
    } else {
      reply(conn, resp.status, resp.contentType, resp.body);
    }
    release(std::move(b));
    return true;
  }

  std::unique_ptr<Buffers> acquire() {
    std::lock_guard<std::mutex> g(mu);
    if (free.empty()) return std::make_unique<Buffers>();
    auto b = std::move(free.back());
    free.pop_back();
    return b;
  }
  void release(std::unique_ptr<Buffers> b) {
    std::lock_guard<std::mutex> g(mu);
    free.push_back(std::move(b));
  }

  const http::Routes& routes;
  int gzipLevel;
  std::mutex mu;
  std::vector<std::unique_ptr<Buffers>> free;
};

bool gzipCompress(std::string_view in, int level, std::string& out) {
  z_stream zs{};
  // windowBits 15 + 16: a gzip header and trailer rather than zlib's.
  if (deflateInit2(&zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return false;
  out.resize(deflateBound(&zs, in.size()));
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return rc == Z_STREAM_END;
}

HttpServer::HttpServer(const HttpServerOptions& opts, const http::Routes& routes) {
  transport_ = std::make_unique<Transport>(routes, opts.gzipLevel);
  std::vector<std::string> options = {
      "listening_ports", civetListeningPort(opts.listenAddress),
      "num_threads", std::to_string(opts.threads),
      "enable_keep_alive", "yes",
      "request_timeout_ms", "30000",
  };
  try {
    server_ = std::make_unique<CivetServer>(options);
  } catch (const CivetException& e) {
    throw std::runtime_error("cannot listen on " + opts.listenAddress + ": " + e.what());
  }
  server_->addHandler("/", *transport_);
}

HttpServer::~HttpServer() {
  if (server_) server_->close();
}

int HttpServer::port() const {
  auto ports = server_->getListeningPorts();
  return ports.empty() ? 0 : ports.front();
}

}  // namespace memcg
