// The rule engine's lifecycle: loads --rules.file (globs), evaluates every
// group at its interval on one thread (times aligned to multiples of the
// interval, each run a quarter interval, at most 50 ms, after its time so the
// history's sample of that tick is in), writes recording-rule output, ALERTS and ALERTS_FOR_STATE
// through AppendFn, hands alerts with an action label to Actions, and
// reloads (SIGHUP, POST /-/reload): an unchanged group keeps running as it
// was; in a changed one, rules matched by name and labels keep their alert
// state (Prometheus' CopyState); a file that fails to load keeps the old
// rules, logs the reason and sets
// memcg_exporter_rules_config_last_reload_successful 0.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "metrics/metric.h"
#include "promql/engine.h"
#include "promql/storage.h"
#include "rules/actions.h"
#include "rules/group.h"

namespace memcg::rules {

struct ManagerOptions {
  std::vector<std::string> files;            ///< --rules.file (repeatable, globs)
  int64_t defaultIntervalMs = 60 * 1000;     ///< --rules.evaluation-interval
  std::map<std::string, std::string> externalLabels;
};

struct ManagerBackend {
  const promql::Storage* storage = nullptr;  ///< what rules query
  AppendFn append;                           ///< where their output goes
  /// Asks the storage to keep the series a group reads at its interval
  /// (may be empty: the storage samples everything itself).
  std::function<void(std::vector<promql::Matcher>, int64_t intervalMs)> select;
  /// Drops every selection made through select() (before a reload reselects).
  std::function<void()> unselectAll;
  Actions* actions = nullptr;                ///< may be null
  /// After each evaluation of an alerting rule, for the notifier (may be
  /// empty): the rule, the evaluation time and the group's interval.
  std::function<void(Rule& rule, int64_t nowMs, int64_t intervalMs)> notify;
};

class Manager {
 public:
  /// Loads the files; an error at start-up is fatal (Error::detail says why).
  static Result<std::unique_ptr<Manager>> create(ManagerOptions opts, ManagerBackend backend);
  ~Manager();

  void start();
  void stop();
  /// Reloads the files; on error keeps the old rules (and says why).
  Status reload();
  /// One evaluation of every group at `nowMs` (tests; the thread uses its own schedule).
  void evalAll(int64_t nowMs);

  nlohmann::json rulesJson(std::string_view type) const;
  nlohmann::json alertsJson() const;
  void collect(metrics::Sink& sink) const;
  static std::vector<const metrics::Desc*> describe();
  size_t groupCount() const;

 private:
  Manager(ManagerOptions opts, ManagerBackend backend);
  void install(std::vector<GroupConfig> cfgs);
  void loop();
  void evalGroup(Group& g, int64_t t);

  ManagerOptions opts_;
  ManagerBackend backend_;
  promql::Engine engine_;
  mutable std::mutex mu_;  // groups_, next_
  std::vector<std::shared_ptr<Group>> groups_;
  std::map<const Group*, int64_t> next_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool changed_ = false;
  std::thread thread_;
  std::atomic<bool> lastReloadOk_{true};
  std::atomic<int64_t> lastReloadOkMs_{0};
  std::atomic<uint64_t> reloadFailures_{0};
};

}  // namespace memcg::rules
