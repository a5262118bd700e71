// The composition root: one App builds and owns every service and hands each
// part the narrow interface it needs. No part finds another through a global.
//
// Order (each part only reads what was built before it):
//   discovery   the hierarchy; the walk scheduler, which alone walks it
//   tracing     the tracer (vmscan options), started before the collectors
//               that read it; or the reason it is down
//   taskstats   the netlink service (with --collector.taskstats), handed the
//               tracer as a PidCgroupLookup (exits no scrape saw; null if down)
//   collectors  the enabled ones, handed their options and services
//   controller  (with --controller.enable) handed the tracer as a
//               ReclaimAttribution; otherwise the journal is replayed
//   scraper     the collectors (and the controller's metrics)
//   history     (with --history.enable, the default) the sampler, reading
//               through the scraper with a filter, and the query API over it
//   front       web/: every handler, the route table, the server (transport
//               only), handed the parts above
// Destruction runs in reverse: the server stops before anything it serves.
#pragma once

#include <atomic>
#include <memory>
#include <optional>

#include "cgroupfs/discovery.h"
#include "cgroupfs/walk_scheduler.h"
#include "collectors/taskstats.h"
#include "collectors/vmscan.h"
#include "controller/controller.h"
#include "exporter/flags.h"
#include "collectors/scraper.h"
#include "exporter/privileges.h"
#include "metrics/registry.h"
#include "history/history.h"
#include "rules/actions.h"
#include "promql/storage.h"
#include "rules/alert_puller.h"
#include "rules/manager.h"
#include "rules/notifier.h"
#include "web/front.h"

namespace memcg {

class App {
 public:
  /// Builds and starts everything. Throws (std::runtime_error,
  /// std::invalid_argument) for start-up errors such as a port in use or a
  /// bad regex; a service that is merely unavailable (no tracefs, no
  /// CAP_NET_ADMIN) is down and logged, not fatal.
  explicit App(const Options& opts);
  ~App();
  App(const App&) = delete;
  App& operator=(const App&) = delete;

  Discovery& discovery() { return *discovery_; }
  Scraper& scraper() { return *scraper_; }
  /// What /metrics, the history's sampler and /api/v1/metrics read.
  const metrics::Registry& metrics() const { return metrics_; }
  /// The route table (tests dispatch requests through it without HTTP).
  const http::Routes& routes() const;
  /// Null while tracing is down or the vmscan collector is off.
  tracing::Tracer* tracer() { return tracing_.tracer.get(); }
  /// Null unless the taskstats collector is on.
  TaskstatsService* taskstats() { return taskstats_.get(); }
  /// Null unless --controller.enable.
  controller::Controller* controller() { return controller_.get(); }
  /// Null with --no-history.enable. Rules and the live view select() their
  /// series on it and append rule results to it.
  history::History* history() { return history_.get(); }
  rules::Manager& rules() { return *rules_; }
  rules::Actions& ruleActions() { return *ruleActions_; }
  /// Null without --rules.alertmanager-url.
  rules::Notifier* notifier() { return notifier_.get(); }
  /// Reloads --rules.file (SIGHUP); false when a file is bad (old rules kept).
  bool reloadRules();
  int port() const;

 private:
  void buildController();
  void buildHistory();
  void buildRules();
  void buildFront();
  void dropPrivileges();

  Options opts_;
  /// First: declared before the parts it points at, read only while they live
  /// (the server and the sampler stop in ~App before any part goes).
  metrics::Registry metrics_;
  std::unique_ptr<Discovery> discovery_;
  /// The one owner of discovery walks; after discovery_: stops before it.
  std::unique_ptr<WalkScheduler> walks_;
  TracingService tracing_;
  std::unique_ptr<TaskstatsService> taskstats_;
  std::unique_ptr<controller::Controller> controller_;
  std::unique_ptr<Scraper> scraper_;
  std::unique_ptr<history::History> history_;
  // The rule engine: reads the history (or, with --no-history.enable, a
  // storage of its own outputs only), acts through the controller.
  class RuleTarget;
  std::unique_ptr<RuleTarget> ruleTarget_;
  std::unique_ptr<rules::Actions> ruleActions_;
  std::unique_ptr<promql::MemoryStorage> ruleStorage_;
  std::vector<history::SelectionId> ruleSelections_;
  std::mutex ruleSelectionsMu_;
  std::unique_ptr<rules::Notifier> notifier_;  ///< --rules.alertmanager-url; before rules_
  std::unique_ptr<rules::Manager> rules_;
  /// --rules.alertmanager.pull; acts through ruleActions_ (declared before it).
  std::unique_ptr<rules::AlertPuller> puller_;
  /// Every handler, the route table and the server; built last, torn down first.
  std::unique_ptr<web::Front> front_;
  std::atomic<bool> capabilitiesDropped_{false};  ///< read by the privileges collector
};

}  // namespace memcg
