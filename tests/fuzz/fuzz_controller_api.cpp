// The controller API's request handling (web/api/v1/controller.h) behind the
// route table and its auth policy (web/auth.h): bearer-token check, the protect/unprotect JSON bodies (cgroup label, byte and percent
// margins, floor) and the Controller's validation behind them, on a v1 and a
// v2 fixture tree built in a scratch directory. The controller's threads are
// not started, so nothing is ever written to a cgroup.
//
// Input: "<Authorization header>\0<body>", or just the body (sent with the
// right token). The body's length picks the tree (even: v1, odd: v2).
// Invariants: answers are JSON objects (an "error" for every status but 200);
// a body that protected a cgroup unprotects it. Seeds: tests/fuzz/seeds/controller_api.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cgroupfs/discovery.h"
#include "web/api/v1/controller.h"
#include "web/auth.h"
#include "controller/controller.h"
#include "tests/support/fuzz_support.h"

using namespace memcg;
using namespace memcg::controller;

namespace {

constexpr uint64_t MiB = 1ull << 20;

struct Setup {
  fuzz::ScratchDir dir;
  std::unique_ptr<Discovery> discovery[2];
  std::unique_ptr<WalkScheduler> walks[2];
  std::unique_ptr<Controller> controller[2];
  std::unique_ptr<ControllerApi> api[2];
  web::AuthPolicy policy{nullptr, "s3cret"};
  http::Routes routes[2];
};
Setup* setup;

void makeV1(const fuzz::ScratchDir& t) {
  t.mkdir("v1");
  t.mkdir("v1/memory");
  t.write("v1/memory/cgroup.procs", "");
  t.write("v1/memory/memory.limit_in_bytes", "9223372036854771712\n");
  t.write("v1/memory/memory.usage_in_bytes", "0\n");
  for (auto [name, limit] : {std::pair<const char*, uint64_t>{"a", 256 * MiB},
                             {"b", 4096},
                             {"unlim", 9223372036854771712ull}}) {
    std::string d = std::string("v1/memory/") + name;
    t.mkdir(d);
    t.write(d + "/cgroup.procs", "");
    t.write(d + "/memory.limit_in_bytes", std::to_string(limit) + "\n");
    t.write(d + "/memory.usage_in_bytes", std::to_string(100 * MiB) + "\n");
    t.write(d + "/memory.stat", "cache 1000\nrss 0\ntotal_inactive_file 500\n");
    t.write(d + "/cgroup.event_control", "");
  }
}

void makeV2(const fuzz::ScratchDir& t) {
  t.mkdir("v2");
  t.write("v2/cgroup.controllers", "cpu io memory pids\n");
  t.write("v2/cgroup.procs", "");
  for (auto [name, max] : {std::pair<const char*, const char*>{"a", "268435456\n"},
                           {"b", "4096\n"},
                           {"unlim", "max\n"}}) {
    std::string d = std::string("v2/") + name;
    t.mkdir(d);
    t.write(d + "/cgroup.procs", "");
    t.write(d + "/memory.max", max);
    t.write(d + "/memory.high", "max\n");
    t.write(d + "/memory.current", std::to_string(100 * MiB) + "\n");
    t.write(d + "/memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n");
    t.write(d + "/memory.stat", "file 1000\nanon 0\n");
  }
}

void checkReply(const HttpResult& r) {
  auto j = nlohmann::json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  FUZZ_CHECK(j.is_object());
  FUZZ_CHECK(r.status == 200 || (j.contains("error") && j["error"].is_string()));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quietLogs();
  setup = new Setup();
  makeV1(setup->dir);
  makeV2(setup->dir);
  for (int i = 0; i < 2; ++i) {
    DiscoveryOptions d;
    d.cgroupfsRoot = setup->dir.path(i == 0 ? "v1" : "v2");
    d.procfsRoot = setup->dir.path("noproc");
    setup->discovery[i] = std::make_unique<Discovery>(d);
    FUZZ_CHECK(setup->discovery[i]->refresh().ok());
    setup->walks[i] = std::make_unique<WalkScheduler>(*setup->discovery[i]);
    ControllerOptions o;
    o.enable = true;
    o.dryRun = true;
    o.allow = "/(a|b|unlim)(/.*)?";
    o.journal = setup->dir.path(i == 0 ? "journal_v1" : "journal_v2");
    setup->controller[i] = std::make_unique<Controller>(o, *setup->walks[i]);
    setup->api[i] = std::make_unique<ControllerApi>(setup->controller[i].get());
    setup->api[i]->registerRoutes(setup->routes[i]);
    setup->routes[i].setAuth(&setup->policy);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in = fuzz::asText(data, size);
  std::string auth = "Bearer s3cret", body(in);
  if (size_t nul = in.find('\0'); nul != std::string_view::npos) {
    auth = std::string(in.substr(0, nul));
    body = std::string(in.substr(nul + 1));
  }
  const http::Routes& routes = setup->routes[body.size() & 1];
  auto serve = [&](const char* method, const char* path) {
    http::Request q;
    q.method = method;
    q.path = path;
    q.body = body;
    q.headers.emplace_back("Authorization", auth);
    return http::dispatch(routes, q);
  };
  HttpResult p = serve("POST", "/api/v1/controller/protect");
  checkReply(p);
  checkReply(serve("GET", "/api/v1/controller/state"));
  HttpResult u = serve("POST", "/api/v1/controller/unprotect");
  checkReply(u);
  if (p.status == 200) FUZZ_CHECK(u.status == 200);
  metrics::Sink sink;
  setup->controller[body.size() & 1]->collect(sink);
  return 0;
}
