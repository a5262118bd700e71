// The fleet's pull: each exporter reads its own node's `action: protect`
// alerts from Alertmanager's v2 API and applies them as the webhook does
// (rules/api.h), so one central ruler and one Alertmanager drive every
// node's controller without a route or a webhook per node.
//
// Every --rules.alertmanager.pull-interval it asks each Alertmanager (the
// notifier's: --rules.alertmanager-url and --rules.alertmanager-config, with
// their TLS and auth) for
//   GET <prefix>/api/v2/alerts?active=true&silenced=false&inhibited=false
//       &filter=action="protect"&filter=<each --rules.alertmanager.pull-matcher>
// (default matcher: instance=~"<hostname>(:[0-9]+)?", this node's scrape
// target), merges the answers (an HA pair: an alert either one has is
// firing), and hands the result to Actions as the webhook does: each alert
// in the answer is firing (a protection, or "held" when it already has one);
// one it had before that is gone is resolved (its hold starts). Silenced and
// inhibited alerts are not in the answer, as they reach no webhook.
//
// Alertmanager unreachable (no Alertmanager answered a round): nothing new
// is protected; every protection the pull holds starts its hold then, and
// ends on it (--rules.protect-hold) unless an answer shows its alert firing
// again. Nothing is unprotected before its hold. Each Alertmanager's
// failure and recovery is one log line per change and counted in
// memcg_exporter_alert_pull_errors_total.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/flag_spec.h"
#include "common/result.h"
#include "metrics/metric.h"
#include "promql/labels.h"
#include "rules/actions.h"
#include "rules/alertmanager_config.h"

namespace memcg::rules {

struct PullerOptions {
  bool enable = false;        ///< --rules.alertmanager.pull
  int64_t intervalMs = 5000;  ///< --rules.alertmanager.pull-interval
  /// --rules.alertmanager.pull-matcher (repeatable), Alertmanager matchers
  /// naming this node's alerts; empty: instance=~"<hostname>(:[0-9]+)?".
  std::vector<std::string> matchers;
};

FlagList pullerFlags(PullerOptions& o);

/// instance=~"<host, regex-escaped>(:[0-9]+)?"
std::string defaultNodeMatcher(const std::string& hostname);

/// Checks one matcher: name, one of = != =~ !~, a double-quoted value.
Status checkAlertmanagerMatcher(const std::string& m);

/// The query of one pull: "/api/v2/alerts?active=true&...&filter=..." (no prefix).
std::string pullQuery(const std::vector<std::string>& matchers);

/// The `action: protect` alerts of a v2 GET /api/v2/alerts answer, by their
/// label set's hash. Error: the body is not a list of alerts.
Result<std::map<uint64_t, promql::Labels>> parseAlertsAnswer(const std::string& body);

class AlertPuller {
 public:
  using Clock = std::function<int64_t()>;  ///< wall-clock ms
  AlertPuller(PullerOptions opts, std::vector<AlertmanagerTarget> targets,
              Actions& actions, Clock clock = {});
  ~AlertPuller();

  void start();
  void stop();
  /// One round: ask every Alertmanager, apply the merged answer. Returns how
  /// many answered.
  size_t pullOnce();

  void collect(metrics::Sink& sink) const;
  static std::vector<const metrics::Desc*> describe();

 private:
  struct Target {
    AlertmanagerTarget am;
    std::string path;  ///< prefix + query
    std::atomic<uint64_t> pulls{0}, errors{0};
    std::atomic<int64_t> lastSuccessMs{0};
    std::string lastError;  ///< "" = the last pull worked (pull thread only)
    bool everTried = false;
  };
  void loop();

  PullerOptions opts_;
  std::vector<std::unique_ptr<Target>> targets_;
  Actions& actions_;
  Clock clock_;
  std::mutex roundMu_;                         // one round at a time (the thread, tests)
  std::map<uint64_t, promql::Labels> firing_;  // as of the last answered round
  bool reachable_ = true;
  std::atomic<size_t> answered_{0};
  std::atomic<size_t> alerts_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace memcg::rules
