// The read-only JSON API (web/api/v1/exporter.h) as the HTTP server hands it a request: the
// URL-decoded path below /api/v1 and the raw query string, any bytes. Every
// answer must be a JSON object (an exception here would escape the
// handler and end the process). A scraper over the committed v2 fixture tree.
//
// Input: "<path>?<query>" (no '?': the whole input is the path).
// Seeds: tests/fuzz/seeds/http_api.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "collectors/registry.h"
#include "cgroupfs/discovery.h"
#include "web/api/v1/exporter.h"
#include "collectors/scraper.h"
#include "tests/support/fuzz_support.h"

using namespace memcg;

namespace {
Discovery* discovery;
WalkScheduler* walks;
Scraper* scraper;
http::Routes* routes;
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quietLogs();
  DiscoveryOptions o;
  o.cgroupfsRoot = std::string(MEMCG_SOURCE_DIR) + "/tests/fixtures/cgroupfs/v2";
  o.procfsRoot = std::string(MEMCG_SOURCE_DIR) + "/tests/fixtures/procfs";
  CollectorInputs cfg;
  cfg.procfsRoot = o.procfsRoot;
  std::vector<EnabledCollector> cs;
  for (const auto& c : collectorRegistry()) {
    if (c.defaultEnabled && !c.live) cs.push_back({std::string(c.name), c.make(cfg)});
  }
  discovery = new Discovery(o);
  walks = new WalkScheduler(*discovery);
  scraper = new Scraper(*walks, std::move(cs));
  std::string text;
  scraper->scrapeText(text);  // one walk, so /cgroups has rows
  routes = new http::Routes;
  api::registerRoutes(*routes, api::ApiParts{*scraper});
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in = fuzz::asText(data, size);
  const size_t q = in.find('?');
  const std::string path(in.substr(0, q));
  const std::string query(q == std::string_view::npos ? std::string_view{}
                                                      : in.substr(q + 1));
  http::Request req;
  req.path = "/api/v1" + path;
  req.query = query;
  http::Response r = http::dispatch(*routes, req);
  auto j = nlohmann::json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  FUZZ_CHECK(j.is_object());
  FUZZ_CHECK(r.status == 200 || r.status == 400 || r.status == 404 || r.status == 503);
  FUZZ_CHECK(r.status == 200 || j.contains("error"));
  return 0;
}
