// rules/: templates (Go's formatting), margins, the alert state machine
// (pending, for, firing, keep_firing_for, resolved retention, limit), the
// recording rules' staleness, and the actions (hold, hand protections,
// refusals, controller off).
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <cmath>

#include "promql/parser.h"
#include "rules/actions.h"
#include "rules/group.h"
#include "rules/rule_file.h"
#include "rules/template.h"

namespace memcg::rules {
namespace {

std::string expand(const std::string& t, double v, std::map<std::string, std::string> l = {}) {
  TemplateData d{&l, nullptr, v};
  auto r = expandTemplate(t, d);
  return r.ok() ? *r : "ERR:" + r.error().detail;
}

TEST(RulesTemplate, GoFormatting) {
  EXPECT_EQ(expand("{{ $value }}", 0.95), "0.95");
  EXPECT_EQ(expand("{{ $value }}", 1e6), "1e+06");
  EXPECT_EQ(expand("{{ $value }}", 123456), "123456");
  EXPECT_EQ(expand("{{ $value | printf \"%.3g\" }}", 2), "2");
  EXPECT_EQ(expand("{{ printf \"%.2f%%\" $value }}", 12.345), "12.35%");
  EXPECT_EQ(expand("{{ $value | humanize }}", 1234567), "1.235M");
  EXPECT_EQ(expand("{{ $value | humanize }}", 0.0042), "4.2m");
  EXPECT_EQ(expand("{{ $value | humanize1024 }}", 64.0 * 1024 * 1024), "64Mi");
  EXPECT_EQ(expand("{{ $value | humanizeDuration }}", 93784), "1d 2h 3m 4s");
  EXPECT_EQ(expand("{{ $value | humanizeDuration }}", 0.25), "250ms");
  EXPECT_EQ(expand("{{ $value | humanizePercentage }}", 0.1234), "12.34%");
  EXPECT_EQ(expand("{{ $value | humanize }}", std::nan("")), "NaN");
  // $labels is a map[string]string in Prometheus: a missing key prints "" (promtool
  // agrees, tests/rules/pass_templates_fmt_test.yml)
  EXPECT_EQ(expand("{{ $labels.cgroup }}/{{ .Labels.x }}", 0, {{"cgroup", "/a"}}), "/a/");
  EXPECT_EQ(expand("{{ $value | printf \"%d\" }}", 3), "%!d(float64=3)");
  EXPECT_EQ(expand("{{ printf \"%d|%x|%s\" 42 255 3 }}", 0), "42|ff|%!s(int=3)");
  EXPECT_EQ(expand("a {{- \" b \" -}} c", 0), "a b c");
}

TEST(RulesTemplate, RefusesWhatItDoesNotImplement) {
  EXPECT_FALSE(checkTemplate("{{ if $value }}x{{ end }}").ok());
  EXPECT_FALSE(checkTemplate("{{ query \"up\" }}").ok());
  EXPECT_FALSE(checkTemplate("{{ $value").ok());
  EXPECT_TRUE(checkTemplate("{{ $value | humanize }} {{ $labels.a }}").ok());
}

TEST(RulesActions, Margins) {
  ProtectRequest p;
  ASSERT_TRUE(parseMargin("64MiB", true, p).ok());
  EXPECT_EQ(p.startMarginBytes, 64u << 20);
  ASSERT_TRUE(parseMargin("10%", false, p).ok());
  EXPECT_EQ(p.targetMarginPercent, 10);
  ASSERT_TRUE(parseMargin("1048576", true, p).ok());
  EXPECT_EQ(p.startMarginBytes, 1048576u);
  EXPECT_FALSE(parseMargin("64MB", true, p).ok());
  EXPECT_FALSE(parseMargin("100%", true, p).ok());
  EXPECT_FALSE(parseMargin("0", true, p).ok());
  EXPECT_FALSE(parseMargin("x", true, p).ok());
}

GroupConfig oneRule(const std::string& yaml) {
  auto g = parseRuleFile(yaml, "t.yml");
  EXPECT_TRUE(g.ok()) << (g.ok() ? "" : g.error().detail);
  return g.ok() ? (*g)[0] : GroupConfig{};
}

struct GroupRun {
  promql::MemoryStorage st;
  promql::Engine engine;
  std::unique_ptr<Group> g;
  explicit GroupRun(const std::string& yaml) : g(std::make_unique<Group>(oneRule(yaml), 15000)) {}
  void eval(int64_t t) {
    g->eval(t, engine, st, [this](const promql::Labels& l, int64_t ts, double v) { st.append(l, ts, v); });
  }
  std::vector<Alert> alerts() { return g->rules()[0]->alerts(); }
};

promql::Labels L(std::vector<promql::Label> v) { return promql::makeLabels(std::move(v)); }

TEST(RulesAlerting, PendingForFiringResolvedRetention) {
  GroupRun r(R"(groups:
  - name: g
    rules:
      - alert: A
        expr: x > 1
        for: 30s
        labels: {severity: w}
)");
  auto x = L({{"__name__", "x"}, {"c", "/a"}});
  for (int64_t t = 0; t <= 60000; t += 15000) r.st.append(x, t, 2);
  r.eval(0);
  ASSERT_EQ(r.alerts().size(), 1u);
  EXPECT_EQ(r.alerts()[0].state, AlertState::kPending);
  r.eval(15000);
  EXPECT_EQ(r.alerts()[0].state, AlertState::kPending);
  r.eval(30000);
  EXPECT_EQ(r.alerts()[0].state, AlertState::kFiring);
  EXPECT_EQ(r.alerts()[0].activeAtMs, 0);
  EXPECT_EQ(promql::labelValue(r.alerts()[0].labels, "alertname"), "A");
  EXPECT_EQ(promql::labelValue(r.alerts()[0].labels, "severity"), "w");
  // The value drops below: inactive, kept as resolved for 15 m, then dropped.
  r.st.append(x, 75000, 0);
  r.eval(75000);
  ASSERT_EQ(r.alerts().size(), 1u);
  EXPECT_EQ(r.alerts()[0].state, AlertState::kInactive);
  EXPECT_EQ(r.alerts()[0].resolvedAtMs, 75000);
  r.eval(75000 + kResolvedRetentionMs);
  EXPECT_EQ(r.alerts().size(), 1u);
  r.eval(75000 + kResolvedRetentionMs + 1);
  EXPECT_EQ(r.alerts().size(), 0u);
}

TEST(RulesAlerting, KeepFiringForAndPendingDropped) {
  GroupRun r(R"(groups:
  - name: g
    rules:
      - alert: A
        expr: x > 1
        keep_firing_for: 1m
)");
  auto x = L({{"__name__", "x"}});
  r.st.append(x, 0, 2);
  r.st.append(x, 15000, 0);
  r.eval(0);
  EXPECT_EQ(r.alerts()[0].state, AlertState::kFiring);  // for: 0
  r.eval(15000);
  EXPECT_EQ(r.alerts()[0].state, AlertState::kFiring);
  r.eval(74999);
  EXPECT_EQ(r.alerts()[0].state, AlertState::kFiring);
  r.eval(75000);
  EXPECT_EQ(r.alerts()[0].state, AlertState::kInactive);
}

TEST(RulesAlerting, DuplicateLabelSetAndLimitFail) {
  GroupRun r(R"(groups:
  - name: g
    limit: 1
    rules:
      - alert: A
        expr: x > 0
)");
  r.st.append(L({{"__name__", "x"}, {"a", "1"}}), 0, 1);
  r.st.append(L({{"__name__", "x"}, {"a", "2"}}), 0, 1);
  r.eval(0);
  EXPECT_EQ(r.g->rules()[0]->health(), "err");
  EXPECT_NE(r.g->rules()[0]->lastError().find("exceeded limit of 1"), std::string::npos);
  EXPECT_EQ(r.alerts().size(), 0u);
}

TEST(RulesRecording, OutputAndStaleness) {
  GroupRun r(R"(groups:
  - name: g
    rules:
      - record: y:sum
        expr: sum by (a) (x)
        labels: {src: r}
)");
  r.st.append(L({{"__name__", "x"}, {"a", "1"}}), 0, 3);
  r.eval(0);
  r.eval(400000);  // x is past the lookback: y:sum{a="1"} gets a stale marker
  auto q = promql::parseExpr("y:sum");
  ASSERT_TRUE(q.ok());
  auto at0 = r.engine.instantQuery(r.st, **q, 0);
  ASSERT_TRUE(at0.ok());
  ASSERT_EQ(at0->series.size(), 1u);
  EXPECT_EQ(promql::labelValue(at0->series[0].labels, "src"), "r");
  EXPECT_EQ(at0->series[0].points.back().v, 3);
  auto later = r.engine.instantQuery(r.st, **q, 400000);
  ASSERT_TRUE(later.ok());
  EXPECT_TRUE(later->series.empty());
}

class FakeTarget : public ProtectTarget {
 public:
  std::map<std::string, ProtectRequest> prots;
  std::set<std::string> knownSet{"/w/a", "/w/hand", "/outside"};
  std::optional<ActionError> protect(const ProtectRequest& p) override {
    prots[p.cgroup] = p;
    return std::nullopt;
  }
  std::optional<ActionError> unprotect(const std::string& c) override {
    if (!prots.erase(c)) return ActionError{ActionError::Kind::kGone, "no"};
    return std::nullopt;
  }
  bool isProtected(const std::string& c) const override { return prots.count(c); }
  bool allowed(const std::string& c) const override { return c.rfind("/w/", 0) == 0; }
  bool known(const std::string& c) const override { return knownSet.count(c); }
};

promql::Labels alert(const std::string& cg, std::string sm = "") {
  std::vector<promql::Label> v{{"alertname", "P"}, {"action", "protect"}, {"cgroup", cg}};
  if (!sm.empty()) v.push_back({"start_margin", sm});
  return L(v);
}

TEST(RulesActions, ProtectHoldUnprotect) {
  FakeTarget t;
  Actions a(ActionOptions{"10%", "20%", 10000}, &t);
  EXPECT_EQ(a.firing(alert("/w/a", "64MiB"), Actions::Source::kRules, 1000), "ok");
  ASSERT_TRUE(t.prots.count("/w/a"));
  EXPECT_EQ(t.prots["/w/a"].startMarginBytes, 64u << 20);
  EXPECT_EQ(t.prots["/w/a"].targetMarginPercent, 20);
  EXPECT_EQ(a.firing(alert("/w/a"), Actions::Source::kRules, 5000), "held");
  a.tick(14999);  // last fired at 5000: hold 10 s
  EXPECT_TRUE(t.prots.count("/w/a"));
  a.tick(15000);
  EXPECT_FALSE(t.prots.count("/w/a"));
}

TEST(RulesActions, HoldZeroKeepsAFiringAlertsProtectionUntilItsNextEvaluation) {
  FakeTarget t;
  Actions a(ActionOptions{"10%", "20%", 0}, &t);
  // Group interval 100 ms: evaluated at 1000, next at 1100.
  EXPECT_EQ(a.firing(alert("/w/a"), Actions::Source::kRules, 1000, 1100), "ok");
  a.tick(1000);
  a.tick(1050);  // between evaluations
  EXPECT_TRUE(t.prots.count("/w/a"));
  EXPECT_EQ(a.firing(alert("/w/a"), Actions::Source::kRules, 1100, 1200), "held");
  a.tick(1100);
  EXPECT_TRUE(t.prots.count("/w/a"));
  a.resolved(alert("/w/a"), Actions::Source::kRules, 1200);  // stopped firing at 1200
  a.tick(1200);
  EXPECT_FALSE(t.prots.count("/w/a"));
}

TEST(RulesActions, AlertmanagerHoldStartsAtResolved) {
  FakeTarget t;
  Actions a(ActionOptions{"10%", "20%", 10000}, &t);
  EXPECT_EQ(a.firing(alert("/w/a"), Actions::Source::kAlertmanager, 0), "ok");
  a.tick(100000);  // no resolved notification yet: still protected
  EXPECT_TRUE(t.prots.count("/w/a"));
  a.resolved(alert("/w/a"), Actions::Source::kAlertmanager, 100000);
  a.tick(105000);
  EXPECT_TRUE(t.prots.count("/w/a"));
  EXPECT_EQ(a.firing(alert("/w/a"), Actions::Source::kAlertmanager, 106000), "held");
  a.tick(200000);  // firing again: the hold was cancelled
  EXPECT_TRUE(t.prots.count("/w/a"));
  a.resolved(alert("/w/a"), Actions::Source::kAlertmanager, 200000);
  a.tick(210000);
  EXPECT_FALSE(t.prots.count("/w/a"));
}

TEST(RulesActions, RefusalsHandProtectionsAndControllerOff) {
  FakeTarget t;
  t.prots["/w/hand"] = ProtectRequest{"/w/hand"};
  Actions a(ActionOptions{"10%", "20%", 0}, &t);
  EXPECT_EQ(a.firing(alert("/w/hand"), Actions::Source::kRules, 0), "exists");
  a.tick(100000);
  EXPECT_TRUE(t.prots.count("/w/hand"));  // never removed by a rule
  for (std::string bad : {"../etc", "/", "/w/../x", "relative", "/outside", "/w/nonexistent"})
    EXPECT_EQ(a.firing(alert(bad), Actions::Source::kRules, 0), "refused") << bad;
  EXPECT_EQ(a.firing(alert("/w/a", "12 parsecs"), Actions::Source::kRules, 0), "refused");
  EXPECT_EQ(t.prots.size(), 1u);
  Actions off(ActionOptions{}, nullptr);
  EXPECT_EQ(off.firing(alert("/w/a"), Actions::Source::kRules, 0), "skipped");
}

TEST(RulesFile, Checks) {
  EXPECT_FALSE(parseRuleFile("groups: [{name: g, rules: [{alert: A, expr: 'up', bogus: 1}]}]", "f").ok());
  EXPECT_FALSE(parseRuleFile("groups: [{name: g, rules: [{record: 'a b', expr: 'up'}]}]", "f").ok());
  EXPECT_FALSE(parseRuleFile("groups: [{name: g, rules: [{record: r, expr: 'up', for: 1m}]}]", "f").ok());
  EXPECT_FALSE(parseRuleFile("groups: [{name: g, interval: 5 min, rules: []}]", "f").ok());
  EXPECT_FALSE(parseRuleFile("groups: [{name: g, rules: []}, {name: g, rules: []}]", "f").ok());
  auto ok = parseRuleFile("groups: [{name: g, interval: 1m30s, limit: 3, rules: [{alert: A, expr: 'up == 0', for: 5m, keep_firing_for: 1m}]}]", "f");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ((*ok)[0].intervalMs, 90000);
  EXPECT_EQ((*ok)[0].rules[0].forMs, 300000);
  EXPECT_EQ((*ok)[0].rules[0].keepFiringForMs, 60000);
}

}  // namespace
}  // namespace memcg::rules
