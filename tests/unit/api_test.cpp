#include "web/api/v1/exporter.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/support/scrape_test_util.h"

namespace memcg {
namespace {

using nlohmann::json;

/// GET /api/v1<sub>?<query> through the route table, as the server does it.
/// The fixture scraper runs no tracer and no taskstats service.
http::Response get(Scraper& scraper, const std::string& sub, const std::string& query) {
  http::Routes routes;
  api::registerRoutes(routes, api::ApiParts{scraper});
  http::Request q;
  q.path = "/api/v1" + sub;
  q.query = query;
  return http::dispatch(routes, q);
}

TEST(Api, Cgroups) {
  test::FixtureScrape s(test::fixturePath("cgroupfs/v2"));
  s.text();  // one walk
  auto r = get(*s.scraper, "/cgroups", "");
  ASSERT_EQ(r.status, 200);
  auto j = json::parse(r.body);
  EXPECT_EQ(j["mode"], "v2");
  ASSERT_EQ(j["cgroups"].size(), 4u);
  EXPECT_EQ(j["cgroups"][1]["cgroup"], "/kubepods");  // name order: k < s
  EXPECT_EQ(j["cgroups"][3]["depth"], 2);
}

TEST(Api, MetricTable) {
  test::FixtureScrape s(test::fixturePath("cgroupfs/v2"));
  auto j = json::parse(get(*s.scraper, "/metrics", "").body);
  bool found = false;
  for (const auto& m : j["metrics"]) {
    if (m["name"] == "memcg_memory_limit_bytes") {
      found = true;
      EXPECT_EQ(m["type"], "gauge");
      EXPECT_EQ(m["labels"], json::array({"cgroup"}));
    }
  }
  EXPECT_TRUE(found);
}

TEST(Api, DelaysValidatesInput) {
  test::FixtureScrape s(test::fixturePath("cgroupfs/v2"));
  s.text();
  auto r = get(*s.scraper, "/delays", "");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(json::parse(r.body)["error"].get<std::string>().find("cgroup"), std::string::npos);
  // The fixture scraper runs no taskstats collector.
  EXPECT_EQ(get(*s.scraper, "/delays", "cgroup=%2Fkubepods").status, 503);
  EXPECT_EQ(get(*s.scraper, "/nope", "").status, 404);
}

TEST(Api, ReclaimReportNeedsTracing) {
  test::FixtureScrape s(test::fixturePath("cgroupfs/v2"));
  // No vmscan collector runs in unit tests.
  EXPECT_EQ(get(*s.scraper, "/reclaim/report", "").status, 503);
  EXPECT_EQ(api::parseDuration("5m"), 300);
  EXPECT_EQ(api::parseDuration("30s"), 30);
  EXPECT_FALSE(api::parseDuration("5 minutes"));
  EXPECT_FALSE(api::parseDuration("0s"));
  // Beyond what steady_clock's int64 ns hold: the conversion would be UB.
  EXPECT_EQ(api::parseDuration("1000000000s"), 1e9);
  EXPECT_FALSE(api::parseDuration("1000000001s"));
  EXPECT_FALSE(api::parseDuration("9999999999h"));
  EXPECT_FALSE(api::parseDuration("18446744073709551615h"));
}

// Paths, query values and cgroup names are bytes, not UTF-8: the reply must
// still be JSON (a throwing dump() in a handler ends the process).
TEST(Api, InvalidUtf8IsReplacedNotThrown) {
  test::TempTree t;
  t.copyFixture("cgroupfs/v2", "cg");
  t.mkdir("cg/bad\xff");
  test::FixtureScrape s(t.path("cg"));
  s.text();  // one walk
  http::Response r;
  ASSERT_NO_THROW(r = get(*s.scraper, "/nope\xff", ""));
  EXPECT_EQ(r.status, 404);
  EXPECT_NE(json::parse(r.body)["error"].get<std::string>().find("/nope\xef\xbf\xbd"),
            std::string::npos);
  ASSERT_NO_THROW(r = get(*s.scraper, "/cgroups", ""));
  ASSERT_EQ(r.status, 200);
  const json j = json::parse(r.body);
  bool found = false;
  for (const auto& c : j["cgroups"]) found |= c["cgroup"] == "/bad\xef\xbf\xbd";
  EXPECT_TRUE(found) << r.body;
}

TEST(Api, QueryParam) {
  EXPECT_EQ(api::queryParam("cgroup=%2Fa%2Fb+c&x=1", "cgroup"), "/a/b c");
  EXPECT_EQ(api::queryParam("x=1&cgroup=/k", "cgroup"), "/k");
  EXPECT_EQ(api::queryParam("x=1", "cgroup"), "");
  EXPECT_EQ(api::queryParam("cgroup=%zz", "cgroup"), "%zz");
}

}  // namespace
}  // namespace memcg
