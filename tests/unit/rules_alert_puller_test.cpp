// rules/alert_puller, rules/alertmanager_config and common/http_client: the
// Alertmanager config file (Prometheus' alertmanager_config shape, strict
// keys), the client's auth headers and TLS failure class, and the fleet pull
// against loopback Alertmanagers of this test: firing protects, gone starts
// the hold, the allow-list refuses, an HA pair's answers are merged, and an
// unreachable Alertmanager protects nothing new and ends held protections
// on their hold, never sooner.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "common/http_client.h"
#include "rules/alert_puller.h"
#include "rules/alertmanager_config.h"
#include "rules/notifier.h"
#include "tests/support/fake_http_server.h"

namespace memcg::rules {
namespace {

using test::FakeHttpServer;

class FakeTarget : public ProtectTarget {
 public:
  std::optional<ActionError> protect(const ProtectRequest& p) override {
    std::lock_guard<std::mutex> g(mu);
    prots[p.cgroup] = p;
    return std::nullopt;
  }
  std::optional<ActionError> unprotect(const std::string& c) override {
    std::lock_guard<std::mutex> g(mu);
    if (!prots.erase(c))
      return ActionError{ActionError::Kind::kGone, "no"};
    return std::nullopt;
  }
  bool isProtected(const std::string& c) const override {
    std::lock_guard<std::mutex> g(mu);
    return prots.count(c);
  }
  bool allowed(const std::string& c) const override { return c.rfind("/w/", 0) == 0; }
  bool known(const std::string& c) const override {
    return c == "/w/a" || c == "/w/b" || c == "/outside";
  }
  bool has(const std::string& c) const { return isProtected(c); }
  mutable std::mutex mu;
  std::map<std::string, ProtectRequest> prots;
};

std::string alertJson(const std::string& cgroup,
                      const std::string& instance = "n1:9256") {
  nlohmann::json a = {{"labels",
                       {{"alertname", "Protect"},
                        {"action", "protect"},
                        {"cgroup", cgroup},
                        {"instance", instance}}},
                      {"annotations", nlohmann::json::object()},
                      {"fingerprint", "f" + cgroup},
                      {"status", {{"state", "active"}}}};
  return a.dump();
}

std::string answer(const std::vector<std::string>& alerts) {
  std::string s = "[";
  for (size_t i = 0; i < alerts.size(); ++i) s += (i ? "," : "") + alerts[i];
  return s + "]";
}

struct TempDir {
  std::filesystem::path p;
  TempDir() {
    char t[] = "/tmp/memcg_exporter_test_puller.XXXXXX";
    p = ::mkdtemp(t);
  }
  ~TempDir() { std::filesystem::remove_all(p); }
  std::string file(const std::string& name, const std::string& text) const {
    std::ofstream(p / name) << text;
    return (p / name).string();
  }
};

std::vector<AlertmanagerTarget> plain(const std::vector<std::string>& urls,
                                      int64_t timeoutMs = 10000) {
  auto t = alertmanagersFromUrls(urls, timeoutMs);
  EXPECT_TRUE(t.ok());
  return *t;
}

TEST(RulesAlertmanagerConfig, PrometheusShape) {
  TempDir d;
  const std::string ca = d.file("ca.pem", "x"), pw = d.file("pw", "s3cret\n");
  auto t = parseAlertmanagerConfig(
      "alerting:\n"
      "  alertmanagers:\n"
      "    - static_configs: [{targets: ['am1:9093', 'am2:9093']}]\n"
      "      scheme: https\n"
      "      path_prefix: am\n"
      "      timeout: 3s\n"
      "      api_version: v2\n"
      "      tls_config: {ca_file: " +
          ca +
          ", server_name: am.example}\n"
          "      basic_auth: {username: u, password_file: " +
          pw +
          "}\n"
          "    - url: http://[::1]:9095/x/\n"
          "      http_config:\n"
          "        authorization: {credentials: tok}\n",
      "am.yml", 10000);
  ASSERT_TRUE(t.ok()) << t.error().message();
  ASSERT_EQ(t->size(), 3u);
  EXPECT_EQ((*t)[0].url.text, "https://am1:9093/am");
  EXPECT_EQ((*t)[1].url.text, "https://am2:9093/am");
  EXPECT_EQ((*t)[0].url.path, "/am");
  EXPECT_EQ((*t)[0].timeoutMs, 3000);
  EXPECT_EQ((*t)[0].client, (*t)[1].client);  // one entry, one client
  EXPECT_EQ((*t)[0].client->config().tls.caFile, ca);
  EXPECT_EQ((*t)[0].client->config().tls.serverName, "am.example");
  EXPECT_TRUE((*t)[0].client->config().basicAuth);
  EXPECT_EQ((*t)[0].client->config().passwordFile, pw);
  EXPECT_EQ((*t)[2].url.host, "::1");
  EXPECT_EQ((*t)[2].timeoutMs, 10000);
  EXPECT_TRUE((*t)[2].client->config().authorization);
  EXPECT_EQ((*t)[2].client->config().authType, "Bearer");
  EXPECT_EQ((*t)[2].client->config().credentials, "tok");
}

TEST(RulesAlertmanagerConfig, ErrorsNameTheKey) {
  TempDir d;
  const std::string ca = d.file("ca.pem", "x");
  const std::pair<std::string, std::string> bad[] = {
      {"alertmanagers: [{url: 'http://a:1', tls_config: {cafile: x}}]", "cafile"},
      {"alertmanagers: [{url: 'http://a:1', tls_config: {ca_file: /nonexistent/ca}}]",
       "ca_file"},
      {"alertmanagers: [{url: 'https://a:1', tls_config: {cert_file: " + ca + "}}]",
       "key_file"},
      {"alertmanagers: [{url: 'http://a:1', api_version: v1}]", "api_version"},
      {"alertmanagers: [{url: 'http://a:1', basic_auth: {username: u, password: p, "
       "password_file: " +
           ca + "}}]",
       "exclusive"},
      {"alertmanagers: [{url: 'http://a:1', basic_auth: {username: u}, authorization: "
       "{credentials: t}}]",
       "exclusive"},
      {"alertmanagers: [{url: 'http://a:1'}, {static_configs: [{targets: ['a:1']}]}]",
       "twice"},
      {"alertmanagers: [{static_configs: [{targets: ['a:1']}], scheme: ftp}]", "scheme"},
      {"alertmanagers: [{url: 'http://a:1', timeout: soon}]", "timeout"},
      {"alertmanagers: []", "alertmanagers"},
      {"alertmanagers: [{scheme: http}]", "static_configs"},
      {"alertmanagers: [{url: 'http://a:1', tls_config: {min_version: TLS13}}]",
       "min_version"},
      {"alertmanagers: [{url: 'http://a:1', relabel_configs: []}]", "relabel_configs"},
      {"alertmanagers: [", "YAML"},
  };
  for (const auto& [yaml, want] : bad) {
    auto t = parseAlertmanagerConfig(yaml, "am.yml", 10000);
    ASSERT_FALSE(t.ok()) << yaml;
    EXPECT_NE(t.error().detail.find(want), std::string::npos)
        << yaml << " -> " << t.error().detail;
    EXPECT_EQ(t.error().path, "am.yml");
  }
}

TEST(RulesAlertmanagerConfig, BadFileIsABadFlag) {
  TempDir d;
  NotifierOptions o;
  FlagList fl = notifierFlags(o);
  auto set = [&](const std::string& v) {
    for (auto& f : fl)
      if (f.name == "rules.alertmanager-config") return f.set(v);
  };
  EXPECT_THROW(set((d.p / "missing.yml").string()), std::invalid_argument);
  EXPECT_THROW(set(d.file("bad.yml", "alertmanagers: [{url: 'http://a:1', x: 1}]")),
               std::invalid_argument);
  EXPECT_TRUE(o.alertmanagerConfig.empty());
  const std::string good = d.file("good.yml", "alertmanagers: [{url: 'https://a:1'}]");
  set(good);
  EXPECT_EQ(o.alertmanagerConfig, good);
  auto t = alertmanagerTargets(o);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->size(), 1u);
  EXPECT_EQ((*t)[0].url.text, "https://a:1");
  o.alertmanagerUrls = {"https://a:1"};  // the same one twice
  EXPECT_FALSE(alertmanagerTargets(o).ok());
}

TEST(RulesHttpClient, BasicAuthAndBearerHeaders) {
  FakeHttpServer s(200, "[]");
  TempDir d;
  auto u = parseClientUrl(s.url("/p"));
  ASSERT_TRUE(u.ok());
  HttpClientConfig basic;
  basic.basicAuth = true;
  basic.username = "alice";
  basic.passwordFile = d.file("pw", "wonder\n");  // the newline is not part of it
  auto r = HttpClient(basic).get(*u, "/p/api/v2/alerts", 10000, 1024);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "[]");
  HttpClientConfig bearer;
  bearer.authorization = true;
  bearer.credentialsFile = d.file("tok", "t0k\n");
  ASSERT_TRUE(HttpClient(bearer).post(*u, "/p", "application/json", "{}", 10000).ok());
  auto reqs = s.all();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].line, "GET /p/api/v2/alerts HTTP/1.1");
  // base64("alice:wonder")
  EXPECT_NE(reqs[0].head.find("Authorization: Basic YWxpY2U6d29uZGVy\r\n"),
            std::string::npos)
      << reqs[0].head;
  EXPECT_EQ(reqs[1].line, "POST /p HTTP/1.1");
  EXPECT_NE(reqs[1].head.find("Authorization: Bearer t0k\r\n"), std::string::npos)
      << reqs[1].head;
  EXPECT_EQ(reqs[1].body, "{}");

  // A body above the limit of a GET is an error, not a truncated answer.
  s.answer(200, std::string(5000, '['));
  auto big = HttpClient(HttpClientConfig{}).get(*u, "/", 10000, 1024);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().err, EMSGSIZE);
}

TEST(RulesHttpClient, TlsFailureIsItsOwnClass) {
  // https to a server that speaks plain HTTP: the handshake fails, EPROTO
  // with a "TLS:" reason (a wrong CA fails the same way; the e2e shows it).
  FakeHttpServer s(200, "[]");
  auto u = parseClientUrl("https://127.0.0.1:" + std::to_string(s.port()));
  ASSERT_TRUE(u.ok());
  auto r = HttpClient(HttpClientConfig{}).get(*u, "/", 10000, 1024);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().err, EPROTO) << r.error().detail;
  EXPECT_EQ(r.error().detail.rfind("TLS: ", 0), 0u) << r.error().detail;
}

TEST(RulesAlertPuller, MatchersAndQuery) {
  EXPECT_EQ(defaultNodeMatcher("n1.example"), "instance=~\"n1\\\\.example(:[0-9]+)?\"");
  EXPECT_TRUE(checkAlertmanagerMatcher("node=\"n1\"").ok());
  EXPECT_TRUE(checkAlertmanagerMatcher("instance=~\"n1(:[0-9]+)?\"").ok());
  for (const char* bad :
       {"node", "=\"x\"", "1a=\"x\"", "node==x", "node=x", "node~\"x\""})
    EXPECT_FALSE(checkAlertmanagerMatcher(bad).ok()) << bad;
  EXPECT_EQ(pullQuery({"node=\"n 1\""}),
            "/api/v2/alerts?active=true&silenced=false&inhibited=false"
            "&filter=action%3D%22protect%22&filter=node%3D%22n%201%22");
  PullerOptions o;
  FlagList fl = pullerFlags(o);
  for (auto& f : fl) {
    if (f.name == "rules.alertmanager.pull-matcher") {
      EXPECT_THROW(f.set("node"), std::invalid_argument);
      f.set("node=\"n1\"");
    }
    if (f.name == "rules.alertmanager.pull-interval") {
      EXPECT_THROW(f.set("10ms"), std::invalid_argument);
      f.set("2s");
    }
    if (f.name == "rules.alertmanager.pull") f.set("true");
  }
  EXPECT_TRUE(o.enable);
  EXPECT_EQ(o.intervalMs, 2000);
  EXPECT_EQ(o.matchers, std::vector<std::string>{"node=\"n1\""});
}

TEST(RulesAlertPuller, AnswerParsing) {
  auto a = parseAlertsAnswer(answer(
      {alertJson("/w/a"), R"({"labels":{"alertname":"Other","cgroup":"/w/b"}})",
       R"({"labels":{"alertname":"S","action":"protect","cgroup":"/w/b"},"status":{"state":"suppressed"}})"}));
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(a->size(), 1u);  // no action label, a suppressed one: not acted on
  EXPECT_EQ(promql::labelValue(a->begin()->second, "cgroup"), "/w/a");
  EXPECT_FALSE(parseAlertsAnswer("{}").ok());
  EXPECT_FALSE(parseAlertsAnswer("[{\"x\":1}]").ok());
  EXPECT_FALSE(parseAlertsAnswer("<html>").ok());
}

struct Clock {
  int64_t now = 1'000'000;
  AlertPuller::Clock fn() {
    return [this] { return now; };
  }
};

TEST(RulesAlertPuller, FiringProtectsGoneStartsTheHold) {
  FakeHttpServer am(200, answer({alertJson("/w/a"), alertJson("/outside")}));
  FakeTarget target;
  Actions actions(ActionOptions{"10%", "20%", 60000}, &target);
  Clock c;
  PullerOptions o;
  o.matchers = {"instance=~\"n1(:[0-9]+)?\""};
  AlertPuller p(o, plain({am.url("/am/")}), actions, c.fn());
  EXPECT_EQ(p.pullOnce(), 1u);
  EXPECT_TRUE(target.has("/w/a"));
  EXPECT_FALSE(target.has("/outside"));  // the allow-list applies unchanged
  auto reqs = am.all();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].line,
            "GET /am/api/v2/alerts?active=true&silenced=false&inhibited=false"
            "&filter=action%3D%22protect%22&filter=instance%3D~%22n1%28%3A%5B0-9%5D%2B%29"
            "%3F%22 HTTP/1.1");

  // Still firing: held, not protected again; ticks keep it.
  c.now += 120000;
  EXPECT_EQ(p.pullOnce(), 1u);
  actions.tick(c.now + 120000);
  EXPECT_TRUE(target.has("/w/a"));

  // Gone from the answer: the hold starts now and ends 60 s later.
  am.answer(200, "[]");
  EXPECT_EQ(p.pullOnce(), 1u);
  const int64_t gone = c.now;
  actions.tick(gone + 59999);
  EXPECT_TRUE(target.has("/w/a"));
  actions.tick(gone + 60000);
  EXPECT_FALSE(target.has("/w/a"));

  metrics::Sink sink;
  p.collect(sink);
  bool seen = false;
  for (const auto& f : sink.families())
    if (f.desc->name == "memcg_exporter_alert_pulls_total") {
      seen = true;
      ASSERT_EQ(f.samples.size(), 1u);
      EXPECT_EQ(f.samples[0].value, 3);
    }
  EXPECT_TRUE(seen);
}

TEST(RulesAlertPuller, UnreachableProtectsNothingNewAndEndsOnTheHold) {
  FakeHttpServer am(200, answer({alertJson("/w/a")}));
  FakeTarget target;
  Actions actions(ActionOptions{"10%", "20%", 60000}, &target);
  Clock c;
  AlertPuller p(PullerOptions{}, plain({am.url()}, 300), actions, c.fn());
  ASSERT_EQ(p.pullOnce(), 1u);
  ASSERT_TRUE(target.has("/w/a"));

  // The Alertmanager hangs (answers nothing within the timeout) and now also
  // has a new alert: nothing new is protected.
  am.answer(0, answer({alertJson("/w/a"), alertJson("/w/b")}));
  c.now += 5000;
  const int64_t lost = c.now;
  EXPECT_EQ(p.pullOnce(), 0u);
  c.now += 5000;
  EXPECT_EQ(p.pullOnce(), 0u);
  EXPECT_FALSE(target.has("/w/b"));
  actions.tick(lost + 59999);
  EXPECT_TRUE(target.has("/w/a"));  // not before its hold
  actions.tick(lost + 60000);
  EXPECT_FALSE(target.has("/w/a"));  // and not left on

  metrics::Sink sink;
  p.collect(sink);
  for (const auto& f : sink.families()) {
    if (f.desc->name == "memcg_exporter_alert_pull_errors_total") {
      EXPECT_EQ(f.samples.at(0).value, 2);
    }
    if (f.desc->name == "memcg_exporter_alert_pull_alertmanagers_reachable") {
      EXPECT_EQ(f.samples.at(0).value, 0);
    }
  }

  // Back, alert still firing: protected again.
  am.answer(200, answer({alertJson("/w/a")}));
  c.now += 120000;
  EXPECT_EQ(p.pullOnce(), 1u);
  EXPECT_TRUE(target.has("/w/a"));
}

TEST(RulesAlertPuller, UnreachableKeepsAFiringAlertUntilItsHold) {
  // The alert is back before the hold ends: the protection is kept (held).
  FakeHttpServer am(200, answer({alertJson("/w/a")}));
  FakeTarget target;
  Actions actions(ActionOptions{"10%", "20%", 60000}, &target);
  Clock c;
  AlertPuller p(PullerOptions{}, plain({am.url()}, 300), actions, c.fn());
  ASSERT_EQ(p.pullOnce(), 1u);
  am.answer(0, "");
  c.now += 5000;
  EXPECT_EQ(p.pullOnce(), 0u);
  am.answer(200, answer({alertJson("/w/a")}));
  c.now += 30000;
  EXPECT_EQ(p.pullOnce(), 1u);
  actions.tick(c.now + 600000);
  EXPECT_TRUE(target.has("/w/a"));
}

TEST(RulesAlertPuller, HaPairAnswersAreMerged) {
  FakeHttpServer am1(200, answer({alertJson("/w/a")}));
  FakeHttpServer am2(200, answer({alertJson("/w/a"), alertJson("/w/b")}));
  FakeTarget target;
  Actions actions(ActionOptions{"10%", "20%", 60000}, &target);
  Clock c;
  AlertPuller p(PullerOptions{}, plain({am1.url(), am2.url()}, 500), actions, c.fn());
  EXPECT_EQ(p.pullOnce(), 2u);
  EXPECT_TRUE(target.has("/w/a"));
  EXPECT_TRUE(target.has("/w/b"));
  // One of the pair down: the other's answer is the truth; nothing resolves.
  am1.answer(503, "");
  c.now += 5000;
  EXPECT_EQ(p.pullOnce(), 1u);
  actions.tick(c.now + 600000);
  EXPECT_TRUE(target.has("/w/a"));
  EXPECT_TRUE(target.has("/w/b"));
}

}  // namespace
}  // namespace memcg::rules
