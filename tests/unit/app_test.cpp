// The composition root on a fixture tree: the App builds every part, each
// registers its routes, and the server (transport only) serves them on
// loopback. No root: vmscan is off, the controller disabled.
#include "exporter/app.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "tests/support/loopback_http.h"
#include "tests/support/temp_tree.h"
#include "web/routes.h"

namespace memcg {
namespace {

Options fixtureOptions(const test::TempTree& t) {
  const std::string cg = "--path.cgroupfs=" + test::fixturePath("cgroupfs/v2");
  const std::string proc = "--path.procfs=" + test::fixturePath("procfs");
  const std::string journal = "--controller.journal=" + t.path("journal");
  std::vector<const char*> args = {"memcg_exporter",
                                   cg.c_str(),
                                   proc.c_str(),
                                   "--no-collector.vmscan",
                                   "--web.listen-address=127.0.0.1:0",
                                   journal.c_str()};
  return parseFlags(static_cast<int>(args.size()), args.data());
}

http::Response get(const App& app, const std::string& path) {
  http::Request q;
  q.path = path;
  return http::dispatch(app.routes(), q);
}

std::string exchange(int port, const std::string& request) {
  return test::loopbackExchange(port, request);
}

TEST(App, EveryPartRegistersItsRoutes) {
  test::TempTree t;
  App app(fixtureOptions(t));
  EXPECT_EQ(app.tracer(), nullptr);     // vmscan off: no tracer started
  EXPECT_EQ(app.taskstats(), nullptr);  // taskstats off by default
  EXPECT_EQ(app.controller(), nullptr);
  for (const char* p : {"/metrics", "/-/healthy", "/-/ready", "/", "/api/v1/cgroups",
                        "/api/v1/metrics", "/api/v1/delays", "/api/v1/reclaim/report",
                        "/api/v1/locks", "/api/v1/controller/state"}) {
    EXPECT_NE(app.routes().find("GET", p), nullptr) << p;
  }
  EXPECT_NE(app.routes().find("POST", "/api/v1/controller/protect"), nullptr);
  EXPECT_NE(app.routes().find("POST", "/api/v1/controller/unprotect"), nullptr);

  auto m = get(app, "/metrics");
  EXPECT_EQ(m.status, 200);
  EXPECT_TRUE(m.compressible);
  EXPECT_NE(m.body.find("memcg_memory_usage_bytes{cgroup=\"/kubepods\"}"),
            std::string::npos);
  EXPECT_EQ(m.body.find("collector=\"vmscan\""), std::string::npos);
  EXPECT_EQ(get(app, "/-/ready").status, 200);  // the App's first walk
  EXPECT_EQ(get(app, "/api/v1/reclaim/report").status, 503);
  EXPECT_EQ(get(app, "/api/v1/controller/state").status, 503);
  auto page = get(app, "/");
  EXPECT_NE(page.body.find("<li>memory_stat</li>"), std::string::npos);
  EXPECT_EQ(page.body.find("<li>vmscan</li>"), std::string::npos);
}

TEST(App, ServesTheTableOverHttp) {
  test::TempTree t;
  App app(fixtureOptions(t));
  ASSERT_GT(app.port(), 0);
  std::string r = exchange(app.port(), "GET /api/v1/nope HTTP/1.0\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 404 Not Found\r\n", 0), 0u) << r;
  EXPECT_NE(r.find("Content-Type: application/json"), std::string::npos);
  EXPECT_NE(r.find(R"({"error":"no such endpoint: /api/v1/nope"})"), std::string::npos);
  r = exchange(app.port(), "GET /metrics HTTP/1.0\r\nAccept-Encoding: gzip\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << r.substr(0, 200);
  EXPECT_NE(r.find("Content-Encoding: gzip"), std::string::npos);
  // The one body limit, enforced before the handler.
  const std::string body(http::kMaxBodyBytes + 10, 'x');
  r = exchange(app.port(),
               "POST /api/v1/controller/protect HTTP/1.0\r\nContent-Length: " +
                   std::to_string(body.size()) + "\r\n\r\n" + body);
  EXPECT_EQ(r.rfind("HTTP/1.1 413 ", 0), 0u) << r.substr(0, 200);
  r = exchange(app.port(),
               "POST /api/v1/controller/protect HTTP/1.0\r\nContent-Length: 2\r\n\r\n{}");
  // The route's auth comes before the handler: with no --controller.token-file a
  // mutating route is refused, naming the flag, whether or not the controller runs.
  EXPECT_EQ(r.rfind("HTTP/1.1 403 ", 0), 0u) << r.substr(0, 200);
  EXPECT_NE(r.find("mutating endpoints need --controller.token-file"), std::string::npos) << r;
}

}  // namespace
}  // namespace memcg

namespace memcg {
namespace {

// Every series on /metrics comes through the one registry: the parts this
// configuration builds (no controller, no rule files) are listed in order,
// each part's series reach /metrics, and /api/v1/metrics lists the same
// families (it reads the same registry).
TEST(App, EveryPartRegistersItsMetricsOnce) {
  test::TempTree t;
  App app(fixtureOptions(t));
  EXPECT_EQ(app.metrics().names(),
            (std::vector<std::string>{"collectors", "privileges", "history", "query_api", "http"}));
  auto m = get(app, "/metrics");
  ASSERT_EQ(m.status, 200);
  for (const char* series : {"memcg_memory_usage_bytes{",            // collectors
                             "memcg_exporter_collector_success{",    // collectors (own)
                             "memcg_exporter_capabilities_dropped ",  // privileges
                             "memcg_exporter_history_series ",       // history
                             "memcg_exporter_history_api_requests_total"}) {  // query_api
    EXPECT_NE(m.body.find(series), std::string::npos) << series;
  }
  auto table = nlohmann::json::parse(get(app, "/api/v1/metrics").body);
  std::set<std::string> listed;
  for (const auto& e : table.at("metrics")) listed.insert(e.value("name", ""));
  for (const auto* d : app.metrics().describe()) EXPECT_TRUE(listed.count(d->name)) << d->name;
  EXPECT_TRUE(listed.count("memcg_exporter_history_series"));
  EXPECT_TRUE(listed.count("memcg_exporter_capabilities_dropped"));
}

}  // namespace
}  // namespace memcg
