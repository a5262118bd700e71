// The JSON handlers: auth (the route table's policy, web/auth.h), validation,
// status codes, and the happy path.
#include <gtest/gtest.h>

#include "web/api/v1/controller.h"
#include "web/auth.h"
#include "tests/support/controller_fixture.h"

namespace memcg::controller {
namespace {

using testing::MiB;

class ControllerApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::makeV1(t_, "a", 256 * MiB, 100 * MiB, 90 * MiB);
    t_.mkdir("memory/unlim");
    t_.write("memory/unlim/cgroup.procs", "");
    t_.write("memory/unlim/memory.limit_in_bytes", "9223372036854771712\n");
    t_.write("memory/unlim/memory.usage_in_bytes", "1\n");
    DiscoveryOptions d;
    d.cgroupfsRoot = t_.root();
    d.procfsRoot = t_.path("noproc");
    discovery_ = std::make_unique<Discovery>(d);
    walks_ = std::make_unique<WalkScheduler>(*discovery_);
    ASSERT_TRUE(discovery_->refresh().ok());
    ControllerOptions o;
    o.enable = true;
    o.allow = "/a|/unlim|/missing";
    o.journal = t_.path("journal");
    controller_ = std::make_unique<Controller>(o, *walks_);
  }
  static std::string err(const HttpResult& r) {
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    return j.is_object() && j.contains("error") ? j["error"].get<std::string>() : "";
  }

  testing::TempTree t_;
  std::unique_ptr<Discovery> discovery_;
  std::unique_ptr<WalkScheduler> walks_;
  std::unique_ptr<Controller> controller_;
  const std::string auth_ = "Bearer s3cret";
};

/// A request through the route table with the auth policy (`token`).
struct Served {
  Served(const ControllerApi& api, const std::string& token) : policy(nullptr, token) {
    api.registerRoutes(routes);
    routes.setAuth(&policy);
  }
  int status(const std::string& method, const std::string& path, const std::string& body,
             const std::string& auth) const {
    http::Request q;
    q.method = method;
    q.path = path;
    q.body = body;
    if (!auth.empty()) q.headers.emplace_back("Authorization", auth);
    return http::dispatch(routes, q).status;
  }
  int protect(const std::string& body, const std::string& auth) const {
    return status("POST", "/api/v1/controller/protect", body, auth);
  }
  int unprotect(const std::string& body, const std::string& auth) const {
    return status("POST", "/api/v1/controller/unprotect", body, auth);
  }
  int state(const std::string& auth) const {
    return status("GET", "/api/v1/controller/state", "", auth);
  }
  web::AuthPolicy policy;
  http::Routes routes;
};

TEST_F(ControllerApiTest, DisabledIs503) {
  ControllerApi api(nullptr);
  Served served(api, "s3cret");
  EXPECT_EQ(served.protect("{}", auth_), 503);
  EXPECT_EQ(served.unprotect("{}", auth_), 503);
  auto r = api.handleState();
  EXPECT_EQ(r.status, 503);
  EXPECT_FALSE(err(r).empty());
}

TEST_F(ControllerApiTest, Auth) {
  ControllerApi api(controller_.get());
  Served served(api, "s3cret");
  std::string body = R"({"cgroup":"/a","start_margin_bytes":1,"target_margin_bytes":2})";
  EXPECT_EQ(served.protect(body, ""), 401);
  EXPECT_EQ(served.protect(body, "Basic abc"), 401);
  EXPECT_EQ(served.protect(body, "Bearer "), 401);
  EXPECT_EQ(served.protect(body, "Bearer wrong"), 403);
  EXPECT_EQ(served.protect(body, "Bearer s3cre"), 403);
  EXPECT_EQ(served.state(""), 401);
  EXPECT_EQ(served.state(auth_), 200);
  Served noToken(api, "");
  EXPECT_EQ(noToken.protect(body, auth_), 403);
  EXPECT_EQ(noToken.unprotect(R"({"cgroup":"/a"})", auth_), 403);
  EXPECT_EQ(noToken.state(""), 200);
}

TEST_F(ControllerApiTest, BadInputIs400) {
  ControllerApi api(controller_.get());
  for (const char* b : {"", "not json", "[1,2]", "{}", R"({"cgroup":5})",
                        R"({"cgroup":"a","start_margin_bytes":1,"target_margin_bytes":2})",
                        R"({"cgroup":"/a/../x","start_margin_bytes":1,"target_margin_bytes":2})",
                        R"({"cgroup":"/a","target_margin_bytes":2})",
                        R"({"cgroup":"/a","start_margin_bytes":-1,"target_margin_bytes":2})",
                        R"({"cgroup":"/a","start_margin_bytes":"1","target_margin_bytes":2})",
                        R"({"cgroup":"/a","start_margin_bytes":1.5,"target_margin_bytes":2})",
                        R"({"cgroup":"/a","start_margin_bytes":5,"target_margin_bytes":2})",
                        R"({"cgroup":"/a","start_margin_bytes":0,"target_margin_bytes":2})",
                        R"({"cgroup":"/a","start_margin_bytes":1,"target_margin_bytes":2,"floor_bytes":true})",
                        R"({"cgroup":"/a","start_margin_percent":0,"target_margin_percent":50})",
                        R"({"cgroup":"/a","start_margin_percent":10,"target_margin_percent":100})",
                        R"({"cgroup":"/a","start_margin_percent":-5,"target_margin_percent":50})",
                        R"({"cgroup":"/a","start_margin_percent":"10","target_margin_percent":50})",
                        R"({"cgroup":"/a","start_margin_percent":30,"target_margin_percent":20})",
                        R"({"cgroup":"/a","start_margin_percent":10,"start_margin_bytes":1,"target_margin_percent":50})",
                        R"({"cgroup":"/a","start_margin_bytes":134217728,"target_margin_percent":50})",
                        R"({"cgroup":"/a","start_margin_percent":10})"}) {
    auto r = api.handleProtect(b);
    EXPECT_EQ(r.status, 400) << b;
    EXPECT_FALSE(err(r).empty()) << b;
  }
  EXPECT_EQ(api.handleUnprotect("{}").status, 400);
  EXPECT_EQ(api.handleUnprotect("nope").status, 400);
}

TEST_F(ControllerApiTest, ProtectUnprotectFlow) {
  ControllerApi api(controller_.get());
  auto p = [&](const std::string& cg, uint64_t s, uint64_t t) {
    nlohmann::json j = {{"cgroup", cg}, {"start_margin_bytes", s}, {"target_margin_bytes", t}};
    return api.handleProtect(j.dump());
  };
  EXPECT_EQ(p("/", 64 * MiB, 128 * MiB).status, 403);
  EXPECT_EQ(p("/elsewhere", 64 * MiB, 128 * MiB).status, 403);
  EXPECT_EQ(p("/missing", 64 * MiB, 128 * MiB).status, 404);
  EXPECT_EQ(p("/unlim", 64 * MiB, 128 * MiB).status, 409);
  auto ok = p("/a", 64 * MiB, 128 * MiB);
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(p("/a", 64 * MiB, 128 * MiB).status, 200);  // idempotent
  auto conflict = p("/a", 32 * MiB, 128 * MiB);
  EXPECT_EQ(conflict.status, 409);
  EXPECT_NE(err(conflict).find("already protected"), std::string::npos);
  auto st = api.handleState();
  ASSERT_EQ(st.status, 200);
  auto j = nlohmann::json::parse(st.body);
  ASSERT_EQ(j["protections"].size(), 1u);
  EXPECT_EQ(j["protections"][0]["start_margin_bytes"], 64 * MiB);
  EXPECT_EQ(j["mode"], "v1");
  EXPECT_EQ(api.handleUnprotect(R"({"cgroup":"/a"})").status, 200);
  EXPECT_EQ(api.handleUnprotect(R"({"cgroup":"/a"})").status, 404);
}

TEST_F(ControllerApiTest, PercentMargins) {
  ControllerApi api(controller_.get());
  auto both = api.handleProtect(
      R"({"cgroup":"/a","start_margin_percent":10,"start_margin_bytes":1,"target_margin_percent":50})");
  EXPECT_EQ(both.status, 400);
  EXPECT_EQ(err(both), "give start_margin_bytes or start_margin_percent, not both");
  auto none = api.handleProtect(R"({"cgroup":"/a","target_margin_percent":50})");
  EXPECT_EQ(err(none), "missing field start_margin_bytes (or start_margin_percent)");
  auto range = api.handleProtect(
      R"({"cgroup":"/a","start_margin_percent":100,"target_margin_percent":50})");
  EXPECT_EQ(err(range),
            "start_margin_percent must be a number above 0 and below 100 (percent of the limit)");
  // Fractions are fine; mixed forms too. /a's limit is 256 MiB.
  auto ok = api.handleProtect(
      R"({"cgroup":"/a","start_margin_percent":12.5,"target_margin_bytes":134217728})");
  ASSERT_EQ(ok.status, 200) << ok.body;
  auto j = nlohmann::json::parse(ok.body);
  EXPECT_EQ(j["start_margin_percent"], 12.5);
  EXPECT_EQ(j["target_margin_bytes"], 128 * MiB);
  auto st = nlohmann::json::parse(api.handleState().body);
  EXPECT_EQ(st["protections"][0]["start_margin_bytes"], 32 * MiB);
  EXPECT_EQ(st["protections"][0]["start_margin_percent"], 12.5);
  EXPECT_EQ(st["protections"][0]["target_margin_bytes"], 128 * MiB);
}

TEST_F(ControllerApiTest, TokenFile) {
  t_.write("tok", "  abc123 \nsecond line\n");
  EXPECT_EQ(web::AuthPolicy::readTokenFile(t_.path("tok")), "abc123");
  t_.write("empty", "\n");
  EXPECT_THROW(web::AuthPolicy::readTokenFile(t_.path("empty")), std::runtime_error);
  EXPECT_THROW(web::AuthPolicy::readTokenFile(t_.path("none")), std::runtime_error);
}

}  // namespace
}  // namespace memcg::controller
