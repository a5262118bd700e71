// A rule group and its rules, evaluated as Prometheus 2.42 does
// (rules/alerting.go, rules/recording.go, rules/group.go there):
//
// Alerting rule, at each evaluation time t, over the expr's instant vector
// (a scalar is one sample without labels):
//   labels = the sample's labels minus __name__, plus the rule's labels
//   (templates expanded with $labels = the sample's labels, $value), plus
//   alertname; annotations expanded the same way. Two samples with one label
//   set fail the evaluation. A new label set is pending (activeAt = t); one
//   still present keeps its state and gets the new value and annotations; a
//   pending alert fires once t - activeAt >= for. A label set gone from the
//   result: a firing alert with keep_firing_for keeps firing until
//   keep_firing_for after it was first missing; otherwise pending ones are
//   dropped and firing ones become inactive (resolvedAt = t) and are kept
//   15 m (resolvedRetention) to be reported as resolved. More active alerts
//   than the group's limit: all dropped, an error.
// Output series: ALERTS{alertstate="pending"|"firing", ...} 1 and
// ALERTS_FOR_STATE{...} activeAt (Unix seconds) for each pending/firing alert.
// Recording rule: the vector with __name__ = record and the rule's labels
// set; a duplicate label set or more series than the limit is an error.
// Series a rule wrote at its previous evaluation and not now get a staleness
// marker at t.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "promql/engine.h"
#include "promql/labels.h"
#include "promql/storage.h"
#include "rules/rule_file.h"

namespace memcg::rules {

inline constexpr int64_t kResolvedRetentionMs = 15 * 60 * 1000;

enum class AlertState { kInactive, kPending, kFiring };
std::string_view alertStateName(AlertState s);

struct Alert {
  promql::Labels labels;       ///< with alertname
  promql::Labels annotations;  ///< sorted by name
  double value = 0;
  AlertState state = AlertState::kPending;
  int64_t activeAtMs = 0;
  int64_t firedAtMs = 0;
  int64_t resolvedAtMs = 0;  ///< 0 while active
  int64_t keepFiringSinceMs = 0;
  bool sent = false;        ///< notifier: sent to Alertmanager at least once
  int64_t lastSentMs = 0;   ///< notifier: last time sent to Alertmanager
  int64_t validUntilMs = 0; ///< notifier: the endsAt it was sent with
};

/// Where rule output goes (the history, or an in-memory storage).
using AppendFn = std::function<void(const promql::Labels&, int64_t t, double v)>;

class Rule {
 public:
  explicit Rule(RuleConfig cfg) : cfg_(std::move(cfg)) {}
  const RuleConfig& config() const { return cfg_; }
  const std::string& name() const { return cfg_.name; }
  bool alerting() const { return cfg_.alerting; }

  /// Evaluates at `t`: fills `out` with the samples to write, or an error.
  Result<std::vector<std::pair<promql::Labels, double>>> eval(
      int64_t t, const promql::Engine& engine, const promql::Storage& storage, int limit,
      const std::map<std::string, std::string>& externalLabels);

  /// Copies of the active alerts (pending, firing, resolved-in-retention).
  std::vector<Alert> alerts() const;
  /// Gives the notifier its view (lastSent/validUntil) under the rule's lock.
  template <typename Fn>
  void withAlerts(Fn&& fn) {
    std::lock_guard<std::mutex> g(mu_);
    for (auto& [_, a] : active_) fn(a);
  }
  /// State transfer on reload: the active alerts of `old`.
  void copyStateFrom(Rule& old);

  // Health, as /api/v1/rules shows it.
  std::string health() const;
  std::string lastError() const;
  int64_t lastEvalMs() const;
  double lastEvalSeconds() const;

  /// Label sets written at the previous evaluation (for staleness).
  struct LabelsLess {
    bool operator()(const promql::Labels& a, const promql::Labels& b) const {
      return promql::compareLabels(a, b) < 0;
    }
  };
  std::set<promql::Labels, LabelsLess> previous;

 private:
  friend class Group;
  void setResult(int64_t t, double seconds, std::string err);

  RuleConfig cfg_;
  mutable std::mutex mu_;
  std::map<uint64_t, Alert> active_;
  std::string health_ = "unknown";
  std::string lastError_;
  int64_t lastEvalMs_ = 0;
  double lastEvalSeconds_ = 0;
};

struct GroupStats {
  uint64_t evaluations = 0;
  uint64_t failures = 0;  ///< rule evaluations that failed
  uint64_t missed = 0;    ///< iterations skipped because an evaluation ran late
  double lastDurationSeconds = 0;
  int64_t lastEvalMs = 0;
};

class Group {
 public:
  Group(GroupConfig cfg, int64_t defaultIntervalMs,
        std::map<std::string, std::string> externalLabels = {});
  const std::string& name() const { return cfg_.name; }
  const std::string& file() const { return cfg_.file; }
  int64_t intervalMs() const { return intervalMs_; }
  int limit() const { return cfg_.limit; }
  const std::vector<std::unique_ptr<Rule>>& rules() const { return rules_; }

  /// Evaluates every rule in order at `t`; each rule's output is appended
  /// before the next rule runs (a later rule sees it).
  void eval(int64_t t, const promql::Engine& engine, const promql::Storage& storage,
            const AppendFn& append);
  /// Rules matched by name and labels (as Prometheus' CopyState) take the
  /// old rules' alerts and staleness sets.
  void copyStateFrom(Group& old);
  /// Same file, name, interval, limit and rules.
  bool sameConfig(const GroupConfig& other, int64_t defaultIntervalMs) const;

  GroupStats stats() const;
  void noteMissed(uint64_t n);

 private:
  GroupConfig cfg_;
  int64_t intervalMs_;
  std::map<std::string, std::string> externalLabels_;
  std::vector<std::unique_ptr<Rule>> rules_;
  mutable std::mutex mu_;
  GroupStats stats_;
};

/// Prometheus' /api/v1/rules shape of one group (type filter: "", "alert", "record").
nlohmann::json groupJson(const Group& g, std::string_view type);
/// Prometheus' /api/v1/alerts shape of one alert.
nlohmann::json alertJson(const Alert& a);
/// RFC 3339 with milliseconds, UTC ("2026-12-01T09:40:00.123Z").
std::string rfc3339(int64_t ms);

}  // namespace memcg::rules
