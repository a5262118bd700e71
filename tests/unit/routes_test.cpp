// The route table: dispatch, the one JSON error shape, the body limit, the
// safe serialiser, and the landing page asset.
#include "web/routes.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "web/ui.h"

namespace memcg {
namespace {

using nlohmann::json;

http::Request req(std::string method, std::string path, std::string body = {}) {
  http::Request r;
  r.method = std::move(method);
  r.path = std::move(path);
  r.body = std::move(body);
  return r;
}

http::Routes table() {
  http::Routes t;
  t.add({"GET", "/api/v1/x", [](const http::Request& q, http::Response& r) {
           http::replyJson(
               r, json{{"q", q.param("a")}, {"auth", q.header("authorization")}});
         }});
  t.add({"POST", "/api/v1/y", [](const http::Request& q, http::Response& r) {
           http::replyJson(r, json{{"len", q.body.size()}});
         }});
  t.add({"GET", "/api/v1/boom", [](const http::Request&, http::Response&) {
           throw std::runtime_error("boom");
         }});
  t.add({"GET", "/page", [](const http::Request&, http::Response& r) {
           r.contentType = "text/plain";
           r.body = "hi";
         }});
  return t;
}

TEST(Routes, DispatchesByMethodAndPath) {
  auto t = table();
  auto q = req("GET", "/api/v1/x");
  q.query = "a=%2Fb";
  q.headers = {{"Authorization", "Bearer t"}};
  auto r = http::dispatch(t, q);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(json::parse(r.body)["q"], "/b");
  EXPECT_EQ(json::parse(r.body)["auth"],
            "Bearer t");  // header names are case-insensitive
  EXPECT_EQ(http::dispatch(t, req("POST", "/api/v1/y", "abc")).body, R"({"len":3})");
  EXPECT_EQ(http::dispatch(t, req("GET", "/page")).body, "hi");
}

TEST(Routes, UnknownPathAndWrongMethod) {
  auto t = table();
  auto r = http::dispatch(t, req("GET", "/api/v1/nope"));
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(json::parse(r.body)["error"], "no such endpoint: /api/v1/nope");
  r = http::dispatch(t, req("POST", "/api/v1/nope"));
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(json::parse(r.body)["error"], "no such endpoint for POST");
  r = http::dispatch(t, req("GET", "/api/v1/y"));
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(json::parse(r.body)["error"], "use POST");
  r = http::dispatch(t, req("GET", "/elsewhere"));
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body, "404 page not found\n");
  EXPECT_EQ(r.contentType.rfind("text/plain", 0), 0u);
  EXPECT_THROW(t.add({"GET", "/page", {}}), std::logic_error);
  EXPECT_EQ(t.methodsFor("/api/v1/y"), "POST");
}

TEST(Routes, BodyLimitIsOnePlace) {
  auto t = table();
  EXPECT_EQ(
      http::dispatch(t, req("POST", "/api/v1/y", std::string(http::kMaxBodyBytes, 'x')))
          .status,
      200);
  auto r = http::dispatch(
      t, req("POST", "/api/v1/y", std::string(http::kMaxBodyBytes + 1, 'x')));
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(json::parse(r.body)["error"], "body too large");
}

TEST(Routes, AThrowingHandlerAnswers500) {
  auto t = table();
  auto r = http::dispatch(t, req("GET", "/api/v1/boom"));
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(json::parse(r.body)["error"], "internal error, see the exporter log");
}

TEST(Routes, SerialiserReplacesInvalidUtf8) {
  std::string s;
  ASSERT_NO_THROW(s = http::dumpJson(json{{"k", "a\xff"}}));
  EXPECT_EQ(json::parse(s)["k"], "a\xef\xbf\xbd");
  auto e = http::jsonError(400, "bad \xfe");
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.contentType, "application/json");
  EXPECT_EQ(json::parse(e.body)["error"], "bad \xef\xbf\xbd");
}

TEST(Web, LandingPageIsTheTemplateFilled) {
  EXPECT_NE(web::kIndexHtml.find("{{collectors}}"), std::string_view::npos);
  std::string page = web::renderIndex("/m<x>", {"memory_stat", "vmscan"});
  EXPECT_EQ(page.find("{{"), std::string::npos);
  EXPECT_NE(page.find("<li>memory_stat</li><li>vmscan</li>"), std::string::npos);
  EXPECT_NE(page.find("href=\"/m&lt;x&gt;\""), std::string::npos);
  http::Routes t;
  web::registerRoutes(t, page);
  auto r = http::dispatch(t, req("GET", "/"));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.contentType, "text/html; charset=utf-8");
  EXPECT_EQ(r.body, page);
}

}  // namespace
}  // namespace memcg
