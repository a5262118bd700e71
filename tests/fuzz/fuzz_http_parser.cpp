// The HTTP server's request parser (web/http_server.h parseRequestHead) and
// the framing around it, as the front thread applies them to a connection's
// bytes: pipelined requests split at the blank line, the head limit, the
// Content-Length body; each complete request then goes through the route
// table and its auth policy (web/auth.h) as a worker would hand it.
//
// Input: the bytes a client sends on one connection.
// Invariants: a refusal is one of the statuses the server sends, with a
// reason; an accepted head has an upper-case method, a path starting with
// '/', at most 100 headers and a body length within the limit; the route
// table answers every request (no exception escapes), a 401/403 only on the
// token route, and its JSON answers are JSON. Seeds: tests/fuzz/seeds/http_parser.
#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/fuzz_support.h"
#include "web/auth.h"
#include "web/http_server.h"
#include "web/routes.h"

using namespace memcg;

namespace {

constexpr size_t kMaxHeadBytes = 16 * 1024;  // HttpServerOptions' default

struct Setup {
  web::AuthPolicy policy{nullptr, "s3cret"};
  http::Routes routes;
};
Setup* setup;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quietLogs();
  setup = new Setup;
  auto echo = [](const http::Request& q, http::Response& r) {
    http::replyJson(r, {{"path", q.path}, {"query", q.query}, {"body", q.body}});
  };
  setup->routes.add({"GET", "/metrics", echo});
  setup->routes.add({"GET", "/api/v1/label/*", echo});
  setup->routes.add({"POST", "/api/v1/controller/protect", echo, http::Access::kToken});
  setup->routes.add({"GET", "/api/v1/controller/state", echo, http::Access::kTokenRead});
  setup->routes.setAuth(&setup->policy);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in = fuzz::asText(data, size);
  while (!in.empty()) {
    size_t end = in.find("\r\n\r\n");
    if (end == std::string_view::npos || end + 4 > kMaxHeadBytes) break;  // wait, or 431
    http::Request req;
    http::HeadInfo info;
    std::string why;
    int status = http::parseRequestHead(in.substr(0, end), req, info, why);
    if (status != 0) {
      FUZZ_CHECK(status == 400 || status == 411 || status == 431);
      FUZZ_CHECK(!why.empty());
      break;  // the server answers and closes
    }
    FUZZ_CHECK(!req.method.empty());
    for (char ch : req.method) FUZZ_CHECK(ch >= 'A' && ch <= 'Z');
    FUZZ_CHECK(!req.path.empty() && req.path.front() == '/');
    FUZZ_CHECK(req.headers.size() <= 100);
    FUZZ_CHECK(req.body.empty());
    FUZZ_CHECK(info.bodyLen <= http::kMaxBodyBytes + 1);
    if (info.bodyLen > http::kMaxBodyBytes) break;  // 413
    in.remove_prefix(end + 4);
    if (in.size() < info.bodyLen) break;  // the body has not all come
    req.body = std::string(in.substr(0, info.bodyLen));
    in.remove_prefix(info.bodyLen);
    http::Response resp = http::dispatch(setup->routes, req);
    FUZZ_CHECK(resp.status >= 200 && resp.status < 600);
    if (resp.status == 401 || resp.status == 403)
      FUZZ_CHECK(req.path.starts_with("/api/v1/controller/"));
    if (resp.contentType == "application/json")
      FUZZ_CHECK(!nlohmann::json::parse(resp.body, nullptr, false).is_discarded());
    if (!info.keepAlive) break;
  }
  return 0;
}
