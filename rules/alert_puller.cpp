#include "rules/alert_puller.h"

#include <pthread.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "common/http_client.h"
#include "common/log.h"
#include "metrics/descriptors.h"
#include "rules/rule_file.h"

namespace memcg::rules {
namespace {

// Bounds what one answer may cost: a node's protect alerts are a handful; a
// matcher that names every node's alerts is a mistake shown as an error.
constexpr size_t kMaxAnswer = 8 << 20;

const metrics::Desc kPulls =
    metrics::nodeCounter("memcg_exporter_alert_pulls_total",
                         "Reads of this node's action: protect alerts from each "
                         "Alertmanager (failed ones too).",
                         {"alertmanager"});
const metrics::Desc kPullErrors = metrics::nodeCounter(
    "memcg_exporter_alert_pull_errors_total",
    "Reads of alerts from each Alertmanager that failed (transport, TLS, timeout, not "
    "2xx, not a list of alerts).",
    {"alertmanager"});
const metrics::Desc kLastSuccess = metrics::nodeGauge(
    "memcg_exporter_alert_pull_last_success_timestamp_seconds",
    "When alerts were last read from each Alertmanager (0: never).", {"alertmanager"});
const metrics::Desc kReachable =
    metrics::nodeGauge("memcg_exporter_alert_pull_alertmanagers_reachable",
                       "Alertmanagers that answered the last read (0: pulled protections "
                       "run on their hold).");
const metrics::Desc kFiring = metrics::nodeGauge(
    "memcg_exporter_alert_pull_alerts",
    "This node's firing action: protect alerts in the last merged answer.");

int64_t wallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string hostname() {
  char h[256] = {};
  if (::gethostname(h, sizeof h - 1) != 0 || h[0] == 0) return "localhost";
  return h;
}

}  // namespace

std::string defaultNodeMatcher(const std::string& host) {
  std::string re;
  for (char c : host) {
    // Regex metacharacters a host name can hold; the matcher's value is a
    // quoted string in which "\\" stands for one backslash.
    if (std::strchr(".+*?()[]{}|^$\\", c)) re += "\\\\";
    re.push_back(c);
  }
  return "instance=~\"" + re + "(:[0-9]+)?\"";
}

Status checkAlertmanagerMatcher(const std::string& m) {
  size_t i = 0;
  while (i < m.size() && (std::isalnum(static_cast<unsigned char>(m[i])) || m[i] == '_'))
    ++i;
  if (i == 0 || std::isdigit(static_cast<unsigned char>(m[0])))
    return makeError(EINVAL, m, "matcher does not start with a label name");
  const std::string_view rest = std::string_view(m).substr(i);
  size_t op = 0;
  for (std::string_view o : {"=~", "!~", "!=", "="})
    if (rest.substr(0, o.size()) == o) {
      op = o.size();
      break;
    }
  if (op == 0) return makeError(EINVAL, m, "matcher operator must be =, !=, =~ or !~");
  const std::string_view v = rest.substr(op);
  if (v.size() < 2 || v.front() != '"' || v.back() != '"')
    return makeError(EINVAL, m, "matcher value must be double-quoted");
  return Ok{};
}

FlagList pullerFlags(PullerOptions& o) {
  return {
      switchFlag("rules.alertmanager.pull",
                 "read this node's action: protect alerts from the Alertmanagers "
                 "(--rules.alertmanager-url, --rules.alertmanager-config) and protect as "
                 "the webhook does: a central ruler drives every node",
                 o.enable),
      {"rules.alertmanager.pull-interval", "how often the alerts are read", false,
       [&o](const std::string& v) {
         o.intervalMs = durationFlag("rules.alertmanager.pull-interval", v, 100);
       },
       "5s"},
      {"rules.alertmanager.pull-matcher",
       "Alertmanager matcher naming this node's alerts, e.g. node=\"n1\" (repeatable; "
       "default instance=~\"<hostname>(:[0-9]+)?\")",
       false,
       [&o](const std::string& v) {
         if (auto s = checkAlertmanagerMatcher(v); !s.ok())
           throw std::invalid_argument(
               "--rules.alertmanager.pull-matcher: " + s.error().detail + ": " + v);
         o.matchers.push_back(v);
       },
       ""},
  };
}

std::string pullQuery(const std::vector<std::string>& matchers) {
  std::string q = "/api/v2/alerts?active=true&silenced=false&inhibited=false&filter=" +
                  queryEscape("action=\"protect\"");
  for (const auto& m : matchers) q += "&filter=" + queryEscape(m);
  return q;
}

Result<std::map<uint64_t, promql::Labels>> parseAlertsAnswer(const std::string& body) {
  auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_array())
    return makeError(EPROTO, "alerts", "answer is not a JSON list of alerts");
  std::map<uint64_t, promql::Labels> out;
  for (const auto& a : j) {
    if (!a.is_object() || !a.contains("labels") || !a["labels"].is_object())
      return makeError(EPROTO, "alerts", "an alert without a labels object");
    promql::Labels ls;
    for (const auto& [k, v] : a["labels"].items())
      if (v.is_string()) ls.push_back({k, v.get<std::string>()});
    ls = promql::makeLabels(std::move(ls));
    // The filter asked for these only; a proxy or an old Alertmanager that
    // ignores filter= must not make another node's alert act here.
    if (promql::labelValue(ls, "action") != "protect") continue;
    if (a.contains("status") && a["status"].is_object() &&
        a["status"].value("state", "active") == "suppressed")
      continue;
    out.emplace(promql::hashLabels(ls), std::move(ls));
  }
  return out;
}

AlertPuller::AlertPuller(PullerOptions opts, std::vector<AlertmanagerTarget> targets,
                         Actions& actions, Clock clock)
    : opts_(std::move(opts)), actions_(actions), clock_(std::move(clock)) {
  if (!clock_) clock_ = wallMs;
  if (opts_.matchers.empty()) opts_.matchers.push_back(defaultNodeMatcher(hostname()));
  const std::string q = pullQuery(opts_.matchers);
  for (auto& am : targets) {
    auto t = std::make_unique<Target>();
    t->path = (am.url.path == "/" ? "" : am.url.path) + q;
    t->am = std::move(am);
    targets_.push_back(std::move(t));
  }
  std::string ms;
  for (const auto& m : opts_.matchers) ms += (ms.empty() ? "" : ",") + m;
  log::info("pulling protect alerts from Alertmanager",
            "alertmanagers=" + std::to_string(targets_.size()) + " interval_ms=" +
                std::to_string(opts_.intervalMs) + " matchers=" + log::quote(ms));
}

AlertPuller::~AlertPuller() { stop(); }

void AlertPuller::start() {
  if (thread_.joinable() || targets_.empty()) return;
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = false;
  }
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "memcg-am-pull");
    loop();
  });
}

void AlertPuller::stop() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void AlertPuller::loop() {
  std::unique_lock<std::mutex> lk(mu_);
  while (!stop_) {
    lk.unlock();
    pullOnce();
    lk.lock();
    cv_.wait_for(lk, std::chrono::milliseconds(opts_.intervalMs), [&] { return stop_; });
  }
}

size_t AlertPuller::pullOnce() {
  std::lock_guard<std::mutex> round(roundMu_);
  std::vector<Result<std::map<uint64_t, promql::Labels>>> answers(
      targets_.size(), makeError(EIO, "alerts", "not asked"));
  auto ask = [this, &answers](size_t i) {
    Target& t = *targets_[i];
    ++t.pulls;
    auto r = t.am.client->get(t.am.url, t.path, t.am.timeoutMs, kMaxAnswer);
    if (!r.ok()) {
      answers[i] =
          makeError(r.error().err, t.am.url.text,
                    r.error().detail + " (" + std::strerror(r.error().err) + ")");
    } else if (r->status / 100 != 2) {
      answers[i] =
          makeError(EPROTO, t.am.url.text,
                    "status " + std::to_string(r->status) + " " + r->body.substr(0, 200));
    } else {
      answers[i] = parseAlertsAnswer(r->body);
    }
  };
  if (targets_.size() == 1) {
    ask(0);
  } else {
    // Every Alertmanager at once: one that hangs until the timeout does not
    // delay the other's answer.
    std::vector<std::thread> ts;
    for (size_t i = 0; i < targets_.size(); ++i) ts.emplace_back(ask, i);
    for (auto& t : ts) t.join();
  }
  const int64_t now = clock_();
  std::map<uint64_t, promql::Labels> merged;
  size_t answered = 0;
  for (size_t i = 0; i < targets_.size(); ++i) {
    Target& t = *targets_[i];
    const auto& a = answers[i];
    if (a.ok()) {
      ++answered;
      t.lastSuccessMs = now;
      if (!t.lastError.empty() || !t.everTried)
        log::info("reading alerts from Alertmanager works",
                  "alertmanager=" + log::quote(t.am.url.text) +
                      " alerts=" + std::to_string(a->size()));
      t.lastError.clear();
      for (const auto& [k, ls] : *a) merged.emplace(k, ls);
    } else {
      ++t.errors;
      const std::string why = a.error().detail;
      // Keyed by the failure's class: a status's body, a timeout's measured
      // time differ per answer; a TLS failure's or a bad answer's reason does not.
      const std::string kind = why.rfind("status ", 0) == 0
                                   ? why.substr(0, why.find(' ', 7))
                               : a.error().err == EPROTO ? why
                                                         : std::strerror(a.error().err);
      if (kind != t.lastError)
        log::error(
            "error reading alerts from Alertmanager",
            "alertmanager=" + log::quote(t.am.url.text) + " err=" + log::quote(why));
      t.lastError = kind;
    }
    t.everTried = true;
  }
  answered_ = answered;
  if (answered == 0) {
    if (reachable_)
      log::warn(
          "no Alertmanager answered: no new protection; pulled protections end on "
          "their hold unless an answer shows their alert again",
          "held=" + std::to_string(firing_.size()));
    reachable_ = false;
    // What was firing is not known any more: its hold starts now, so it
    // ends --rules.protect-hold after the last answer, never sooner.
    for (const auto& [k, ls] : firing_)
      actions_.resolved(ls, Actions::Source::kAlertmanager, now);
    firing_.clear();
    alerts_ = 0;
    return 0;
  }
  reachable_ = true;
  for (const auto& [k, ls] : merged)
    actions_.firing(ls, Actions::Source::kAlertmanager, now);
  for (const auto& [k, ls] : firing_)
    if (!merged.count(k)) actions_.resolved(ls, Actions::Source::kAlertmanager, now);
  firing_ = std::move(merged);
  alerts_ = firing_.size();
  return answered;
}

void AlertPuller::collect(metrics::Sink& sink) const {
  for (const auto& t : targets_) {
    const std::string& url = t->am.url.text;
    sink.add(kPulls, {sink.keep(url)}, static_cast<double>(t->pulls.load()));
    sink.add(kPullErrors, {sink.keep(url)}, static_cast<double>(t->errors.load()));
    sink.add(kLastSuccess, {sink.keep(url)},
             static_cast<double>(t->lastSuccessMs.load()) / 1000);
  }
  sink.add(kReachable, {}, static_cast<double>(answered_.load()));
  sink.add(kFiring, {}, static_cast<double>(alerts_.load()));
}

std::vector<const metrics::Desc*> AlertPuller::describe() {
  return {&kPulls, &kPullErrors, &kLastSuccess, &kReachable, &kFiring};
}

}  // namespace memcg::rules
