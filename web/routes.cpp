#include "web/routes.h"

#include <strings.h>

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "common/log.h"
#include "web/auth.h"

namespace memcg::http {
namespace {

int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool isApi(std::string_view path) { return path.starts_with("/api/"); }

void notFound(const Request& req, Response& resp) {
  if (!isApi(req.path)) {
    resp = Response{404, "404 page not found\n", "text/plain; charset=utf-8"};
  } else if (req.method == "GET") {
    replyError(resp, 404, "no such endpoint: " + req.path);
  } else {
    replyError(resp, 404, "no such endpoint for " + req.method);
  }
}

}  // namespace

std::string Request::header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (k.size() == name.size() && ::strncasecmp(k.data(), name.data(), k.size()) == 0)
      return v;
  }
  return {};
}

std::string Request::param(std::string_view name) const {
  return queryParam(query, name);
}

void Routes::add(Route r) {
  if (find(r.method, r.path)) {
    throw std::logic_error("route registered twice: " + r.method + " " + r.path);
  }
  routes_.push_back(std::move(r));
}

namespace {
// A row whose path ends in '*' matches every path with that prefix
// (/api/v1/label/*/values style rows are "/api/v1/label/*").
bool pathMatches(std::string_view pattern, std::string_view path) {
  if (!pattern.empty() && pattern.back() == '*') {
    pattern.remove_suffix(1);
    return path.size() > pattern.size() && path.substr(0, pattern.size()) == pattern;
  }
  return pattern == path;
}
}  // namespace

const Route* Routes::find(std::string_view method, std::string_view path) const {
  for (const auto& r : routes_) {
    if (r.method == method && r.path == path) return &r;
  }
  for (const auto& r : routes_) {
    if (r.method == method && pathMatches(r.path, path)) return &r;
  }
  return nullptr;
}

std::string Routes::methodsFor(std::string_view path) const {
  std::string out;
  for (const auto& r : routes_) {
    if (!pathMatches(r.path, path)) continue;
    if (!out.empty()) out += ", ";
    out += r.method;
  }
  return out;
}

void dispatch(const Routes& routes, const Request& req, Response& resp) {
  const Route* r = routes.find(req.method, req.path);
  // Unknown paths and other methods are refused as any route would be, so
  // an unauthenticated client learns nothing about which paths exist.
  if (routes.auth() && routes.auth()->refuse(req, r ? r->access : Access::kWebConfig, resp))
    return;
  if (!r) {
    std::string allowed = routes.methodsFor(req.path);
    if (allowed.empty()) return notFound(req, resp);
    if (isApi(req.path)) {
      replyError(resp, 405, "use " + allowed);
    } else {
      resp = Response{405, "405 method not allowed, use " + allowed + "\n",
                      "text/plain; charset=utf-8"};
    }
    return;
  }
  if (req.body.size() > kMaxBodyBytes) return replyError(resp, 413, "body too large");
  // An exception escaping a handler would end the server's worker thread
  // and with it the process (std::terminate): answer 500 instead.
  try {
    r->handler(req, resp);
    return;
  } catch (const std::exception& e) {
    log::error("HTTP handler failed",
               "path=" + log::quote(req.path) + " err=" + log::quote(e.what()));
  } catch (...) {
    log::error("HTTP handler failed",
               "path=" + log::quote(req.path) + " err=\"unknown exception\"");
  }
  resp = Response{};
  replyError(resp, 500, "internal error, see the exporter log");
}

Response dispatch(const Routes& routes, const Request& req) {
  Response r;
  dispatch(routes, req, r);
  return r;
}

std::string dumpJson(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void replyJson(Response& resp, const nlohmann::json& j, int status) {
  resp.status = status;
  resp.contentType = "application/json";
  resp.compressible = false;
  resp.body = dumpJson(j);
}

void replyError(Response& resp, int status, std::string_view why) {
  replyJson(resp, nlohmann::json{{"error", std::string(why)}}, status);
}

Response jsonError(int status, std::string_view why) {
  Response r;
  replyError(r, status, why);
  return r;
}

std::string_view statusText(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 411:
      return "Length Required";
    case 413:
      return "Payload Too Large";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Error";
  }
}

std::string queryParam(std::string_view query, std::string_view name) {
  size_t pos = 0;
  while (pos <= query.size()) {
    size_t amp = query.find('&', pos);
    if (amp == std::string_view::npos) amp = query.size();
    std::string_view kv = query.substr(pos, amp - pos);
    size_t eq = kv.find('=');
    if (kv.substr(0, eq) == name) {
      std::string out;
      std::string_view v =
          eq == std::string_view::npos ? std::string_view{} : kv.substr(eq + 1);
      for (size_t i = 0; i < v.size(); ++i) {
        if (v[i] == '+') {
          out += ' ';
        } else if (v[i] == '%' && i + 2 < v.size() && hex(v[i + 1]) >= 0 &&
                   hex(v[i + 2]) >= 0) {
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

}  // namespace memcg::http
