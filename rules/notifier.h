// Sends alerts to Alertmanager's v2 API (POST <url>/api/v2/alerts) as
// Prometheus 2.42 does (rules/alerting.go sendAlerts, cmd/prometheus
// sendAlerts, notifier/notifier.go there):
//
// The rules' side, after each evaluation of an alerting rule at t: every
// alert that is firing or resolved-in-retention (never pending) is sent when
// it resolved since it was last sent, or when it was last sent more than
// the resend delay before t. It is sent with startsAt = when it fired,
// endsAt = when it resolved, or, while it fires, validUntil = t +
// 4 x max(group interval, resend delay) (two missed evaluations or sends
// before Alertmanager resolves it by itself), and generatorURL = the
// external URL + "/api/v1/query?query=<expr>" (the exporter's query API; it
// has no /graph page).
//
// The queue: external labels are added to each alert that lacks them; a
// batch larger than the queue capacity keeps its newest alerts, a full queue
// drops its oldest; both count as dropped. One sender thread takes up to 64
// alerts at a time and posts them to every Alertmanager at once, each under
// the timeout. A post that fails (transport error, TLS, timeout, a status
// that is not 2xx) counts an error for that Alertmanager and is logged when
// its reason differs from the last post's (a wrong CA is one line, not one
// per batch; the recovery is one line too); the batch counts as sent
// to every Alertmanager tried; it counts as dropped when no Alertmanager
// took it. Not sent again: the next resend delivers the alert's state.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/flag_spec.h"
#include "common/result.h"
#include "metrics/histogram.h"
#include "metrics/metric.h"
#include "promql/labels.h"
#include "rules/group.h"
#include "rules/alertmanager_config.h"

namespace memcg::rules {

struct NotifierOptions {
  std::vector<std::string> alertmanagerUrls;  ///< --rules.alertmanager-url (repeatable)
  std::string alertmanagerConfig;  ///< --rules.alertmanager-config (a file)
  int64_t resendDelayMs = 60 * 1000;          ///< --rules.alert.resend-delay
  size_t queueCapacity = 10000;   ///< --rules.alertmanager.notification-queue-capacity
  int64_t timeoutMs = 10 * 1000;  ///< --rules.alertmanager.timeout
  std::string externalUrl;        ///< --rules.external-url (generatorURL prefix)
  std::map<std::string, std::string> externalLabels;  ///< --rules.external-label
};

FlagList notifierFlags(NotifierOptions& o);

/// The Alertmanagers of the URLs and the config file (in that order); an
/// error names the bad URL or the file and key.
Result<std::vector<AlertmanagerTarget>> alertmanagerTargets(const NotifierOptions& o);

/// One alert as Alertmanager's v2 API takes it.
struct PostableAlert {
  promql::Labels labels;
  promql::Labels annotations;
  int64_t startsAtMs = 0;
  int64_t endsAtMs = 0;
  std::string generatorUrl;
};

/// The v2 body:
/// [{"labels":{},"annotations":{},"startsAt":..,"endsAt":..,"generatorURL":..}].
std::string postableAlertsJson(const std::vector<PostableAlert>& alerts);

/// "/api/v1/query?query=<expr, URL-escaped as a query value>".
std::string generatorPath(std::string_view expr);

class Notifier {
 public:
  /// Parses the URLs and the config file (an error names the bad one).
  static Result<std::unique_ptr<Notifier>> create(NotifierOptions opts);
  /// With the Alertmanagers already resolved (shared with the puller).
  static std::unique_ptr<Notifier> create(NotifierOptions opts,
                                          std::vector<AlertmanagerTarget> targets);
  ~Notifier();

  void start();
  /// Stops the sender (what is queued then is not sent).
  void stop();

  /// The rules' side: queues the alerts of `rule` that need sending at
  /// `nowMs` (Prometheus' needsSending) and marks them sent.
  void notifyRule(Rule& rule, int64_t nowMs, int64_t groupIntervalMs);
  /// Queues alerts (external labels added).
  void send(std::vector<PostableAlert> alerts);
  /// Waits until the queue is empty and no batch is in flight (tests, bench).
  bool waitIdle(int64_t timeoutMs);

  void collect(metrics::Sink& sink) const;
  static std::vector<const metrics::Desc*> describe();

  /// Seconds one post to an Alertmanager took (Prometheus' notifier keeps a
  /// latency summary per Alertmanager; this is a histogram).
  static constexpr metrics::BucketLayout<double, 12> kPostSeconds{
      {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10}, 1};
  using PostLatency = metrics::FixedHistogram<kPostSeconds>;

  struct Counts {
    uint64_t sent = 0, errors = 0;
    uint64_t posts = 0;  ///< observations of the latency histogram
  };
  Counts counts(const std::string& url) const;
  uint64_t dropped() const { return dropped_.load(); }
  size_t queueLength() const;

 private:
  struct Target {
    AlertmanagerTarget am;
    std::string postPath;  ///< url.path + "/api/v2/alerts"
    std::atomic<uint64_t> sent{0};
    std::atomic<uint64_t> errors{0};
    mutable std::mutex latencyMu;
    PostLatency latency;  ///< every post, failed ones too (up to the timeout)
    std::string lastError;  ///< logged once per change ("" = the last post worked)
  };
  explicit Notifier(NotifierOptions opts);
  void loop();
  bool sendAll(const std::vector<PostableAlert>& batch);
  bool postOne(Target& t, const std::string& body, size_t n);

  NotifierOptions opts_;
  std::vector<std::unique_ptr<Target>> targets_;
  mutable std::mutex mu_;  // queue_, inFlight_, stop_
  std::condition_variable cv_;
  std::condition_variable idle_;
  std::deque<PostableAlert> queue_;
  bool inFlight_ = false;
  bool stop_ = false;
  std::thread thread_;
  std::atomic<uint64_t> dropped_{0};
};

}  // namespace memcg::rules
