#include "exporter/http_server.h"

#include <CivetServer.h>
#include <zlib.h>

#include <cstring>
#include <mutex>
#include <stdexcept>

#include "common/log.h"
#include "exporter/api.h"
#include "exporter/version.h"

namespace memcg {
namespace {

void reply(mg_connection* conn, int status, std::string_view statusText,
           std::string_view contentType, std::string_view body,
           std::string_view extraHeaders = {}) {
  std::string head = "HTTP/1.1 " + std::to_string(status) + " ";
  head += statusText;
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

// Exposition buffers, reused across scrapes: as many as scrapes ever ran at
// once (one, with a single Prometheus), not one per worker thread.
class BufferPool {
 public:
  struct Buffers {
    std::string text, gz;
  };
  std::unique_ptr<Buffers> acquire() {
    std::lock_guard<std::mutex> g(mu_);
    if (free_.empty()) return std::make_unique<Buffers>();
    auto b = std::move(free_.back());
    free_.pop_back();
    return b;
  }
  void release(std::unique_ptr<Buffers> b) {
    std::lock_guard<std::mutex> g(mu_);
    free_.push_back(std::move(b));
  }

 private:
  std::mutex mu_;
  std::vector<std::unique_ptr<Buffers>> free_;
};

class MetricsHandler : public CivetHandler {
 public:
  MetricsHandler(Scraper& s, int level) : scraper_(s), level_(level) {}
  bool handleGet(CivetServer*, mg_connection* conn) override {
    auto b = pool_.acquire();
    b->text.clear();
    scraper_.scrapeText(b->text);
    constexpr std::string_view kType = "text/plain; version=0.0.4; charset=utf-8";
    if (acceptsGzip(conn) && gzipCompress(b->text, level_, b->gz)) {
      reply(conn, 200, "OK", kType, b->gz, "Content-Encoding: gzip\r\nVary: Accept-Encoding\r\n");
    } else {
      reply(conn, 200, "OK", kType, b->text);
    }
    pool_.release(std::move(b));
    return true;
  }

 private:
  Scraper& scraper_;
  int level_;
  BufferPool pool_;
};

class TextHandler : public CivetHandler {
 public:
  explicit TextHandler(std::function<std::pair<int, std::string>()> f) : f_(std::move(f)) {}
  bool handleGet(CivetServer*, mg_connection* conn) override {
    auto [status, body] = f_();
    reply(conn, status, status == 200 ? "OK" : "Service Unavailable", "text/plain; charset=utf-8",
          body);
    return true;
  }

 private:
  std::function<std::pair<int, std::string>()> f_;
};

std::string_view statusText(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

// /api/v1/...: GETs go to exporter/api.h; /api/v1/controller/... to the
// controller's handlers (POST protect/unprotect, GET state).
class ApiHandler : public CivetHandler {
 public:
  ApiHandler(Scraper& s, const controller::ControllerApi* c) : scraper_(s), controller_(c) {}

  // An exception out of a civetweb handler ends the process: answer 500.
  bool handleGet(CivetServer*, mg_connection* conn) override {
    return guarded(conn, [&] { return get(conn); });
  }
  bool handlePost(CivetServer*, mg_connection* conn) override {
    return guarded(conn, [&] { return post(conn); });
  }

 private:
  template <typename F>
  static bool guarded(mg_connection* conn, F&& f) {
    try {
      return f();
    } catch (const std::exception& e) {
      log::error("API handler failed", "err=" + log::quote(e.what()));
    } catch (...) {
      log::error("API handler failed", "err=\"unknown exception\"");
    }
    return send(conn, 500, R"j({"error":"internal error, see the exporter log"})j");
  }

  bool get(mg_connection* conn) {
    const mg_request_info* ri = mg_get_request_info(conn);
    std::string path = subPath(ri);
    if (path == "/controller/state") {
      if (!controller_) return send(conn, 503, R"({"error":"controller not available"})");
      auto r = controller_->handleState(header(conn, "Authorization"));
      return send(conn, r.status, r.body);
    }
    if (path.starts_with("/controller/")) return send(conn, 405, R"({"error":"use POST"})");
    api::Response r = api::handleGet(scraper_, path, ri->query_string ? ri->query_string : "");
    return send(conn, r.status, r.body);
  }

  bool post(mg_connection* conn) {
    const mg_request_info* ri = mg_get_request_info(conn);
    std::string path = subPath(ri);
    if (path != "/controller/protect" && path != "/controller/unprotect") {
      return send(conn, path == "/controller/state" ? 405 : 404,
                  R"({"error":"no such endpoint for POST"})");
    }
    if (!controller_) return send(conn, 503, R"({"error":"controller not available"})");
    constexpr size_t kMaxBody = 64 * 1024;
    std::string body;
    char buf[4096];
    int n;
    while ((n = mg_read(conn, buf, sizeof buf)) > 0) {
      body.append(buf, static_cast<size_t>(n));
      if (body.size() > kMaxBody) return send(conn, 413, R"({"error":"body too large"})");
    }
    const std::string auth = header(conn, "Authorization");
    auto r = path == "/controller/protect" ? controller_->handleProtect(body, auth)
                                           : controller_->handleUnprotect(body, auth);
    return send(conn, r.status, r.body);
  }

  static std::string subPath(const mg_request_info* ri) {
    std::string path = ri->local_uri;
    path.erase(0, std::strlen("/api/v1"));
    return path;
  }
  static std::string header(mg_connection* conn, const char* name) {
    const char* h = mg_get_header(conn, name);
    return h ? h : "";
  }
  static bool send(mg_connection* conn, int status, std::string_view body) {
    reply(conn, status, statusText(status), "application/json", body);
    return true;
  }

  Scraper& scraper_;
  const controller::ControllerApi* controller_;
};

class LandingHandler : public CivetHandler {
 public:
  LandingHandler(const Options& o, Scraper& s) : opts_(o), scraper_(s) {}
  bool handleGet(CivetServer*, mg_connection* conn) override {
    const mg_request_info* ri = mg_get_request_info(conn);
    if (std::strcmp(ri->local_uri, "/") != 0) {
      reply(conn, 404, "Not Found", "text/plain; charset=utf-8", "404 page not found\n");
      return true;
    }
    std::string b =
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>memcg_exporter</title></head>"
        "<body><h1>memcg_exporter</h1><p>Prometheus exporter for Linux memory cgroups and "
        "their reclaim. Version ";
    b += kVersion;
    b += " (";
    b += kRevision;
    b += ").</p><ul><li><a href=\"" + opts_.telemetryPath + "\">Metrics</a></li>"
         "<li><a href=\"/-/healthy\">Health</a></li><li><a href=\"/-/ready\">Readiness</a></li>"
         "</ul><h2>Collectors</h2><ul>";
    for (const auto& n : opts_.enabledCollectors()) b += "<li>" + n + "</li>";
    b += "</ul></body></html>\n";
    reply(conn, 200, "OK", "text/html; charset=utf-8", b);
    return true;
  }

 private:
  const Options& opts_;
  Scraper& scraper_;
};

}  // namespace

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

struct HttpServer::Handlers {
  Handlers(const Options& opts, Scraper& scraper, const controller::ControllerApi* c)
      : metrics(scraper, opts.gzipLevel),
        healthy([] { return std::pair<int, std::string>(200, "Healthy\n"); }),
        ready([&scraper] {
          return scraper.ready() ? std::pair<int, std::string>(200, "Ready\n")
                                 : std::pair<int, std::string>(503, "Not ready\n");
        }),
        api(scraper, c),
        landing(opts, scraper) {}
  MetricsHandler metrics;
  TextHandler healthy;
  TextHandler ready;
  ApiHandler api;
  LandingHandler landing;
};

HttpServer::HttpServer(const Options& opts, Scraper& scraper,
                       const controller::ControllerApi* controllerApi) {
  handlers_ = std::make_unique<Handlers>(opts, scraper, controllerApi);
  std::vector<std::string> options = {
      "listening_ports", civetListeningPort(opts.listenAddress),
      "num_threads", std::to_string(opts.webThreads),
      "enable_keep_alive", "yes",
      "request_timeout_ms", "30000",
  };
  try {
    server_ = std::make_unique<CivetServer>(options);
  } catch (const CivetException& e) {
    throw std::runtime_error("cannot listen on " + opts.listenAddress + ": " + e.what());
  }
  server_->addHandler(opts.telemetryPath, handlers_->metrics);
  server_->addHandler("/-/healthy", handlers_->healthy);
  server_->addHandler("/-/ready", handlers_->ready);
  server_->addHandler("/api/v1/", handlers_->api);
  server_->addHandler("/", handlers_->landing);
}

HttpServer::~HttpServer() {
  if (server_) server_->close();
}

int HttpServer::port() const {
  auto ports = server_->getListeningPorts();
  return ports.empty() ? 0 : ports.front();
}

}  // namespace memcg
