#include "rules/notifier.h"

#include <pthread.h>

#include <chrono>
#include <stdexcept>

#include "common/http_client.h"
#include "common/log.h"
#include "metrics/descriptors.h"
#include "rules/rule_file.h"

namespace memcg::rules {
namespace {

constexpr size_t kMaxBatch = 64;  // Prometheus' maxBatchSize

const metrics::Desc kSent = metrics::nodeCounter(
    "memcg_exporter_notifications_sent_total",
    "Alerts posted to each Alertmanager (also the ones that failed).", {"alertmanager"});
const metrics::Desc kErrors = metrics::nodeCounter(
    "memcg_exporter_notifications_errors_total",
    "Posts to each Alertmanager that failed (transport, TLS, timeout, not 2xx).",
    {"alertmanager"});
const metrics::Desc kDropped = metrics::nodeCounter(
    "memcg_exporter_notifications_dropped_total",
    "Alerts dropped: queue full, or no Alertmanager took their batch.");
const metrics::Desc kQueueLength = metrics::nodeGauge(
    "memcg_exporter_notifications_queue_length", "Alerts waiting to be sent.");
const metrics::Desc kQueueCapacity = metrics::nodeGauge(
    "memcg_exporter_notifications_queue_capacity", "Capacity of the alert queue.");
const metrics::Desc kLatency = metrics::nodeHistogram(
    "memcg_exporter_notifications_latency_seconds",
    "Seconds one post of alerts to each Alertmanager took (failed ones too).",
    {"alertmanager"}, Notifier::kPostSeconds.exposedBounds());
const metrics::Desc kAlertmanagers =
    metrics::nodeGauge("memcg_exporter_notifications_alertmanagers_discovered",
                       "Alertmanagers alerts are sent to.");

nlohmann::json labelObject(const promql::Labels& ls) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& l : ls) j[l.name] = l.value;
  return j;
}

}  // namespace

FlagList notifierFlags(NotifierOptions& o) {
  return {
      {"rules.alertmanager-url",
       "Alertmanager (http[s]://host:port[/prefix]) the rules' alerts are sent to, v2 API "
       "(repeatable; TLS options and auth: --rules.alertmanager-config)",
       false,
       [&o](const std::string& v) {
         if (auto u = parseClientUrl(v); !u.ok())
           throw std::invalid_argument("--rules.alertmanager-url: " + u.error().detail +
                                       ": " + v);
         o.alertmanagerUrls.push_back(v);
       },
       ""},
      {"rules.alertmanager-config",
       "file listing Alertmanagers as Prometheus' alerting.alertmanagers does (static "
       "targets or url, scheme, path_prefix, timeout, tls_config, basic_auth, "
       "authorization), beside --rules.alertmanager-url",
       false,
       [&o](const std::string& v) {
         // Checked here too, so a bad file is a bad flag (exit 2, one line).
         if (auto t = loadAlertmanagerConfig(v, o.timeoutMs); !t.ok())
           throw std::invalid_argument("--rules.alertmanager-config: " + t.error().path +
                                       ": " + t.error().detail);
         o.alertmanagerConfig = v;
       },
       ""},
      {"rules.alert.resend-delay",
       "minimum time before an alert that is still firing is sent to Alertmanager again",
       false,
       [&o](const std::string& v) {
         o.resendDelayMs = durationFlag("rules.alert.resend-delay", v, 0);
       },
       "1m"},
      {"rules.alertmanager.notification-queue-capacity",
       "alerts waiting to be sent to Alertmanager (the oldest are dropped past it)",
       false,
       [&o](const std::string& v) {
         o.queueCapacity = static_cast<size_t>(parseFlagInt(
             "rules.alertmanager.notification-queue-capacity", v, 1, 10000000));
       },
       "10000"},
      {"rules.alertmanager.timeout", "timeout of one post to an Alertmanager", false,
       [&o](const std::string& v) {
         o.timeoutMs = durationFlag("rules.alertmanager.timeout", v, 1);
       },
       "10s"},
      {"rules.external-url",
       "URL this exporter is reached at, the prefix of the alerts' generatorURL "
       "(default: http://<hostname>:<port>)",
       false,
       [&o](const std::string& v) {
         std::string u = v;
         while (!u.empty() && u.back() == '/') u.pop_back();
         o.externalUrl = u;
       },
       ""},
  };
}

std::string postableAlertsJson(const std::vector<PostableAlert>& alerts) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& a : alerts) {
    nlohmann::json j;
    j["labels"] = labelObject(a.labels);
    j["annotations"] = labelObject(a.annotations);
    j["startsAt"] = rfc3339(a.startsAtMs);
    j["endsAt"] = rfc3339(a.endsAtMs);
    j["generatorURL"] = a.generatorUrl;
    arr.push_back(std::move(j));
  }
  return arr.dump();
}

std::string generatorPath(std::string_view expr) {
  // Go's url.QueryEscape, as Prometheus builds it: a space becomes '+'.
  return "/api/v1/query?query=" + queryEscape(expr, /*spaceAsPlus=*/true);
}

Result<std::vector<AlertmanagerTarget>> alertmanagerTargets(const NotifierOptions& o) {
  auto out = alertmanagersFromUrls(o.alertmanagerUrls, o.timeoutMs);
  if (!out.ok()) return out.error();
  if (!o.alertmanagerConfig.empty()) {
    auto more = loadAlertmanagerConfig(o.alertmanagerConfig, o.timeoutMs);
    if (!more.ok()) return more.error();
    for (auto& t : *more) {
      for (const auto& have : *out)
        if (have.url.text == t.url.text)
          return makeError(EINVAL, o.alertmanagerConfig,
                           "alertmanager also given by --rules.alertmanager-url: " +
                               t.url.text);
      out->push_back(std::move(t));
    }
  }
  return out;
}

Notifier::Notifier(NotifierOptions opts) : opts_(std::move(opts)) {}

Result<std::unique_ptr<Notifier>> Notifier::create(NotifierOptions opts) {
  auto targets = alertmanagerTargets(opts);
  if (!targets.ok()) return targets.error();
  return create(std::move(opts), std::move(*targets));
}

std::unique_ptr<Notifier> Notifier::create(NotifierOptions opts,
                                           std::vector<AlertmanagerTarget> targets) {
  std::unique_ptr<Notifier> n(new Notifier(std::move(opts)));
  for (auto& am : targets) {
    auto t = std::make_unique<Target>();
    t->postPath = (am.url.path == "/" ? "" : am.url.path) + "/api/v2/alerts";
    t->am = std::move(am);
    n->targets_.push_back(std::move(t));
  }
  if (n->opts_.queueCapacity == 0) n->opts_.queueCapacity = 1;
  return n;
}

Notifier::~Notifier() { stop(); }

void Notifier::start() {
  if (thread_.joinable() || targets_.empty()) return;
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = false;
  }
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "memcg-notify");
    loop();
  });
}

void Notifier::stop() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  idle_.notify_all();
}

void Notifier::notifyRule(Rule& rule, int64_t t, int64_t groupIntervalMs) {
  if (targets_.empty() || !rule.alerting()) return;
  const int64_t delta = std::max(groupIntervalMs, opts_.resendDelayMs);
  const std::string generator = opts_.externalUrl + generatorPath(rule.config().exprText);
  std::vector<PostableAlert> out;
  rule.withAlerts([&](Alert& a) {
    if (a.state == AlertState::kPending) return;
    const bool resolvedSinceSent = a.resolvedAtMs != 0 && a.resolvedAtMs > a.lastSentMs;
    if (a.sent && !resolvedSinceSent && a.lastSentMs + opts_.resendDelayMs >= t) return;
    a.sent = true;
    a.lastSentMs = t;
    a.validUntilMs = t + 4 * delta;
    PostableAlert p;
    p.labels = a.labels;
    p.annotations = a.annotations;
    p.startsAtMs = a.firedAtMs;
    p.endsAtMs = a.resolvedAtMs != 0 ? a.resolvedAtMs : a.validUntilMs;
    p.generatorUrl = generator;
    out.push_back(std::move(p));
  });
  if (!out.empty()) send(std::move(out));
}

void Notifier::send(std::vector<PostableAlert> alerts) {
  if (targets_.empty() || alerts.empty()) return;
  for (auto& a : alerts) {
    std::vector<promql::Label> add;
    for (const auto& [n, v] : opts_.externalLabels)
      if (promql::labelValue(a.labels, n).empty()) add.push_back({n, v});
    if (!add.empty()) {
      for (auto& l : a.labels) add.push_back(std::move(l));
      a.labels = promql::makeLabels(std::move(add));
    }
  }
  const size_t cap = opts_.queueCapacity;
  uint64_t dropped = 0;
  size_t first = 0;
  if (alerts.size() > cap) {  // the newest `cap` alerts of the batch
    first = alerts.size() - cap;
    dropped += first;
    log::warn("alert batch larger than the notification queue, dropping alerts",
              "dropped=" + std::to_string(first));
  }
  {
    std::lock_guard<std::mutex> g(mu_);
    const size_t incoming = alerts.size() - first;
    if (queue_.size() + incoming > cap) {
      const size_t d = queue_.size() + incoming - cap;
      queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(d));
      dropped += d;
      log::warn("alert notification queue full, dropping the oldest alerts",
                "dropped=" + std::to_string(d));
    }
    for (size_t i = first; i < alerts.size(); ++i) queue_.push_back(std::move(alerts[i]));
  }
  dropped_ += dropped;
  cv_.notify_all();
}

bool Notifier::waitIdle(int64_t timeoutMs) {
  std::unique_lock<std::mutex> lk(mu_);
  return idle_.wait_for(lk, std::chrono::milliseconds(timeoutMs),
                        [&] { return stop_ || (queue_.empty() && !inFlight_); });
}

void Notifier::loop() {
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    cv_.wait(lk, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    const size_t n = std::min(queue_.size(), kMaxBatch);
    std::vector<PostableAlert> batch(std::make_move_iterator(queue_.begin()),
                                     std::make_move_iterator(queue_.begin() + n));
    queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
    inFlight_ = true;
    lk.unlock();
    if (!sendAll(batch)) dropped_ += batch.size();
    lk.lock();
    inFlight_ = false;
    if (queue_.empty()) idle_.notify_all();
  }
}

bool Notifier::postOne(Target& t, const std::string& body, size_t n) {
  const auto t0 = std::chrono::steady_clock::now();
  auto r = t.am.client->post(t.am.url, t.postPath, "application/json", body,
                            t.am.timeoutMs);
  {
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - t0;
    std::lock_guard<std::mutex> g(t.latencyMu);
    t.latency.observe(took.count());
  }
  t.sent += n;
  // Only the sender thread of this target writes lastError.
  if (r.ok() && r->status / 100 == 2) {
    if (!t.lastError.empty())
      log::info("sending alerts works again", "alertmanager=" + log::quote(t.am.url.text));
    t.lastError.clear();
    return true;
  }
  ++t.errors;
  const std::string why =
      r.ok() ? "status " + std::to_string(r->status) + " " + r->body.substr(0, 200)
             : r.error().detail + " (" + std::strerror(r.error().err) + ")";
  // What changes is the class of failure: a status's body, a timeout's
  // measured time differ per batch; a TLS failure's reason does not.
  const std::string kind = r.ok()                     ? "status " + std::to_string(r->status)
                           : r.error().err == EPROTO ? why
                                                     : std::strerror(r.error().err);
  if (kind != t.lastError)
    log::error("error sending alerts", "alertmanager=" + log::quote(t.am.url.text) +
                                           " count=" + std::to_string(n) +
                                           " err=" + log::quote(why));
  t.lastError = kind;
  return false;
}

bool Notifier::sendAll(const std::vector<PostableAlert>& batch) {
  if (batch.empty()) return true;
  const std::string body = postableAlertsJson(batch);
  if (targets_.size() == 1) return postOne(*targets_[0], body, batch.size());
  // Every Alertmanager at once, as Prometheus does: a slow one does not
  // delay the others beyond this batch.
  std::vector<char> ok(targets_.size(), 0);
  std::vector<std::thread> ts;
  for (size_t i = 0; i < targets_.size(); ++i)
    ts.emplace_back(
        [&, i] { ok[i] = postOne(*targets_[i], body, batch.size()) ? 1 : 0; });
  for (auto& t : ts) t.join();
  for (char c : ok)
    if (c) return true;
  return false;
}

Notifier::Counts Notifier::counts(const std::string& url) const {
  for (const auto& t : targets_)
    if (t->am.url.text == url) {
      std::lock_guard<std::mutex> g(t->latencyMu);
      return {t->sent.load(), t->errors.load(), t->latency.count};
    }
  return {};
}

size_t Notifier::queueLength() const {
  std::lock_guard<std::mutex> g(mu_);
  return queue_.size();
}

void Notifier::collect(metrics::Sink& sink) const {
  for (const auto& t : targets_) {
    const std::string& url = t->am.url.text;
    sink.add(kSent, {sink.keep(url)}, static_cast<double>(t->sent.load()));
    sink.add(kErrors, {sink.keep(url)}, static_cast<double>(t->errors.load()));
    PostLatency h;
    {
      std::lock_guard<std::mutex> g(t->latencyMu);
      h = t->latency;
    }
    h.addTo(sink, kLatency, {sink.keep(url)});
  }
  sink.add(kDropped, {}, static_cast<double>(dropped_.load()));
  sink.add(kQueueLength, {}, static_cast<double>(queueLength()));
  sink.add(kQueueCapacity, {}, static_cast<double>(opts_.queueCapacity));
  sink.add(kAlertmanagers, {}, static_cast<double>(targets_.size()));
}

std::vector<const metrics::Desc*> Notifier::describe() {
  return {&kSent,          &kErrors,          &kLatency,      &kDropped,
          &kQueueLength,   &kQueueCapacity,   &kAlertmanagers};
}

}  // namespace memcg::rules
