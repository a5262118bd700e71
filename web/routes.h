// Routes as a table: every part registers {method, path, handler} rows into
// one Routes; the HTTP server (http_server.h) is transport only and hands
// each request to dispatch(). A new endpoint is one row and one handler.
//
// One request and one response type, one JSON error helper
// ({"error": "..."}), one JSON serialiser that never throws (invalid UTF-8
// becomes U+FFFD), and the one request-body limit. Handlers are thin:
// validate, call one part, render. They are plain functions of Request, so
// they are tested without HTTP. Handlers hold no auth code: a row declares
// what it needs (Access) and dispatch() asks the one policy (web/auth.h).
#pragma once

#include <cstddef>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace memcg::web {
class AuthPolicy;
}

namespace memcg::http {

/// Request bodies above this are refused with 413 before any handler runs.
inline constexpr size_t kMaxBodyBytes = 64 * 1024;

struct Request {
  std::string method = "GET";
  std::string path;   ///< e.g. "/api/v1/delays" (no query)
  std::string query;  ///< raw, without '?'
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;

  /// A header's value (name case-insensitive); empty if absent.
  std::string header(std::string_view name) const;
  /// One query parameter, URL-decoded; empty if absent.
  std::string param(std::string_view name) const;
};

struct Response {
  int status = 200;
  std::string body;
  std::string contentType = "application/json";
  /// The server may gzip it when the client accepts gzip (/metrics).
  bool compressible = false;
  /// Further response headers (e.g. a 401's WWW-Authenticate).
  std::vector<std::pair<std::string, std::string>> headers{};
};

/// What a route needs before its handler runs (web/auth.h applies it).
enum class Access {
  kWebConfig,  ///< --web.config.file's basic auth when it has users (every route)
  kTokenRead,  ///< that, or the bearer token; the token too when one is configured
  kToken,      ///< that, or the bearer token; the token always (refused without one)
};

using Handler = std::function<void(const Request&, Response&)>;

struct Route {
  std::string method;  ///< "GET", "POST"
  std::string path;    ///< exact match; a trailing '*' matches any longer path with that prefix
  Handler handler;
  Access access = Access::kWebConfig;
};

class Routes {
 public:
  /// Throws std::logic_error on a duplicate {method, path} (start-up only).
  void add(Route r);
  const std::vector<Route>& all() const { return routes_; }
  /// The route for {method, path}, or null.
  const Route* find(std::string_view method, std::string_view path) const;
  /// The methods registered for `path`, comma-separated; empty if none.
  std::string methodsFor(std::string_view path) const;

  /// The policy dispatch() applies to every request (null: none, as in
  /// handler tests). Not owned; must outlive the routes' use.
  void setAuth(const web::AuthPolicy* policy) { auth_ = policy; }
  const web::AuthPolicy* auth() const { return auth_; }

 private:
  std::vector<Route> routes_;
  const web::AuthPolicy* auth_ = nullptr;
};

/// Routes a request: the auth policy's refusal (401/403/429, before
/// anything else, unknown paths included), the handler's answer, 404 for an unknown path (JSON
/// under /api/, text elsewhere), 405 for a known path with another method,
/// 413 for a body above kMaxBodyBytes, 500 if the handler throws (logged).
void dispatch(const Routes& routes, const Request& req, Response& resp);
Response dispatch(const Routes& routes, const Request& req);

/// JSON text of `j`; invalid UTF-8 in strings (paths, queries, cgroup
/// names, task comms are bytes) becomes U+FFFD instead of throwing.
std::string dumpJson(const nlohmann::json& j);

/// Sets `resp` to `j` with `status`.
void replyJson(Response& resp, const nlohmann::json& j, int status = 200);
/// {"error": why} with `status`.
void replyError(Response& resp, int status, std::string_view why);
Response jsonError(int status, std::string_view why);

/// "OK", "Not Found", ...
std::string_view statusText(int status);

/// Decodes one parameter of a raw query string (URL-decoded); empty if absent.
std::string queryParam(std::string_view query, std::string_view name);

}  // namespace memcg::http
