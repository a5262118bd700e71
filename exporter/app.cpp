#include "exporter/app.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "collectors/process.h"
#include "collectors/registry.h"
#include "common/log.h"
#include "controller/controller_collector.h"
#include "common/version.h"

namespace memcg {
namespace {

std::string joinNames(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ",") + n;
  return s;
}

/// Prometheus' default external URL: http://<hostname>:<listen port>.
std::string defaultExternalUrl(const std::string& listenAddress) {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == 0) std::strcpy(host, "localhost");
  const size_t colon = listenAddress.rfind(':');
  const std::string port = colon == std::string::npos ? "" : listenAddress.substr(colon + 1);
  return std::string("http://") + host + (port.empty() ? "" : ":" + port);
}

bool enabled(const std::vector<std::string>& on, std::string_view name) {
  return std::find(on.begin(), on.end(), name) != on.end();
}

}  // namespace

App::App(const Options& opts) : opts_(opts) {
  discovery_ = std::make_unique<Discovery>(opts_.discovery);
  walks_ = std::make_unique<WalkScheduler>(*discovery_);
  const auto& layout = discovery_->layout();
  log::info("starting memcg_exporter",
            std::string("version=") + kVersion + " revision=" + kRevision +
                " mode=" + std::string(modeName(layout.mode)) +
                " memory_root=" + log::quote(layout.memoryRoot) +
                (layout.unifiedRoot.empty()
                     ? ""
                     : " unified_root=" + log::quote(layout.unifiedRoot)));

  const auto on = opts_.enabledCollectors();
  const std::string& procfs = opts_.discovery.procfsRoot;
  // Services before the collectors that read them.
  if (enabled(on, "vmscan")) {
    tracing_ = startVmscanBackend(opts_.collectors.vmscan, layout, procfs,
                                  /*exitCgroups=*/enabled(on, "taskstats"));
  }
  if (enabled(on, "taskstats")) {
    // Exits of processes no scrape saw are attributed by the running
    // backend: the tracefs tracer's pid cache, or the bpf backend's map of
    // exited processes' memcgs (null while tracing is down: by sampling
    // cgroup.procs then).
    TaskstatsExitAttribution exits;
    exits.lookup = tracing_.pidLookup();
    exits.layout = layout;
    taskstats_ = std::make_unique<TaskstatsService>(opts_.collectors.taskstats, procfs, exits);
  }
  CollectorInputs in;
  in.procfsRoot = procfs;
  in.memoryStat = opts_.collectors.memoryStat;
  in.memoryUsage = opts_.collectors.memoryUsage;
  in.memoryEvents = opts_.collectors.memoryEvents;
  in.kubepods = opts_.collectors.kubepods;
  in.tracer = tracing_.tracer.get();
  in.tracingDown = tracing_.down;
  in.vmscanBackend = tracing_.info();
  in.taskstats = taskstats_.get();
  std::vector<EnabledCollector> collectors;
  for (const auto& info : collectorRegistry()) {
    if (enabled(on, info.name))
      collectors.push_back({std::string(info.name), info.make(in)});
  }

  buildController();
  if (!opts_.disableExporterMetrics) {
    // The exporter's own process (client_golang's names) beside the cgroups'.
    collectors.push_back({"process", makeProcessCollector(), true});
  }
  scraper_ = std::make_unique<Scraper>(*walks_, std::move(collectors));
  // Each part registers its series once it exists (metrics/registry.h); the
  // rest register in buildHistory() and buildRules().
  metrics_.add("collectors", *scraper_);
  if (controller_) metrics_.add("controller", controller::makeControllerCollector(*controller_));
  if (!opts_.disableExporterMetrics)
    metrics_.add("privileges", makePrivilegesCollector(capabilitiesDropped_));
  for (const auto& n : on) log::info("collector enabled", "collector=" + n);
  if (auto t = walks_->walkNow(); !t.ok()) {
    log::warn("first cgroup discovery failed", "err=" + log::quote(t.error().message()));
  } else {
    log::info("cgroups discovered", "count=" + std::to_string((*t)->cgroups.size()) +
                                        " dropped=" + std::to_string((*t)->dropped));
  }
  walks_->start();

  buildHistory();
  buildRules();
  buildFront();
  front_->serve();
  dropPrivileges();
}

void App::dropPrivileges() {
  if (!opts_.dropCapabilities) {
    log::info("capabilities kept (--no-capabilities.drop)",
              "effective=" + log::quote(joinNames(effectiveCapabilities())));
    return;
  }
  PrivilegeNeeds n;
  if (tracing_.tracer) {
    const auto& s = tracing_.tracer->session();
    n.tracefsVisibleMount = s.mountedByUs() && !s.privateMount();
    n.lockSymbols = opts_.collectors.vmscan.locks || opts_.collectors.vmscan.lockCallers;
    n.tracefsInstanceNotOwned = ::geteuid() != 0;
  }
  n.taskstats = taskstats_ != nullptr;
  n.delayacctRestore = n.taskstats && opts_.collectors.taskstats.enableDelayacct;
  n.controller = controller_ != nullptr;
  auto keep = neededCapabilities(n);
  auto kept = dropCapabilities(keep);
  if (!kept) {
    log::warn("capabilities not dropped", "err=" + log::quote(kept.error().message()));
    return;
  }
  capabilitiesDropped_ = true;
  std::string why;
  for (const auto& k : keep) why += (why.empty() ? "" : "; ") + k.why;
  log::info("capabilities dropped", "kept=" + log::quote(joinNames(*kept)) +
                                        " effective=" + log::quote(joinNames(effectiveCapabilities())) +
                                        " why=" + log::quote(why));
}

App::~App() {
  // The HTTP front first: no request may reach a part being torn down.
  front_.reset();
  if (puller_) puller_->stop();
  if (rules_) rules_->stop();
  if (notifier_) notifier_->stop();
  if (history_) history_->stop();
  if (controller_) controller_->stop();
}

void App::buildController() {
  const auto& c = opts_.controller;
  // Off unless enabled. A limit a crash left lowered is put back at start
  // either way.
  if (c.enable) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(c.journal).parent_path(),
                                        ec);
    controller_ = std::make_unique<controller::Controller>(
        c, *walks_, controller::ActuatorOptions{}, tracing_.attribution());
    controller_->start();
    log::info("controller enabled", std::string("dry_run=") +
                                        (c.dryRun ? "true" : "false") +
                                        " allow=" + log::quote(c.allow));
  } else if (::access(c.journal.c_str(), F_OK) == 0) {
    auto r = controller::recoverJournal(c);
    log::info("controller journal replayed",
              "restored=" + std::to_string(r.restored) + " conflicts=" +
                  std::to_string(r.conflicts) + " failed=" + std::to_string(r.failed));
  }
}

void App::buildHistory() {
  if (!opts_.history.enable) return;
  // The sampler reads the same registry as /metrics, restricted by its filter;
  // the cgroup collectors' tree gives the series' inodes.
  auto h = history::History::create(
      opts_.history, [this](const ScrapeFilter& f, metrics::Sink& sink) {
        auto c = metrics_.collect(sink, &f);
        return std::static_pointer_cast<const CgroupTree>(c.of("collectors"));
      });
  if (!h.ok()) throw std::invalid_argument(h.error().message());
  history_ = std::move(*h);
  history::History* hp = history_.get();
  metrics_.add("history", std::make_unique<metrics::FunctionCollectable>(
                              [hp](metrics::Sink& s) { hp->collectMetrics(s); },
                              [] { return history::History::describeMetrics(); }));
  history_->start();
  std::string sel;
  for (const auto& m : opts_.history.match) sel += (sel.empty() ? "" : " ") + m;
  log::info("history started", "interval_ms=" + std::to_string(opts_.history.intervalMs) +
                                   " retention_ms=" + std::to_string(opts_.history.retentionMs) +
                                   " match=" + log::quote(sel));
}

/// The controller and the walk scheduler as the rule actions see them: the
/// one place rules' requests become controller types.
class App::RuleTarget final : public rules::ProtectTarget {
 public:
  RuleTarget(controller::Controller& c, WalkScheduler& w) : c_(c), w_(w) {}
  std::optional<rules::ActionError> protect(const rules::ProtectRequest& r) override {
    controller::Protection p;
    p.cgroup = r.cgroup;
    p.startMarginBytes = r.startMarginBytes;
    p.targetMarginBytes = r.targetMarginBytes;
    p.startMarginPercent = r.startMarginPercent;
    p.targetMarginPercent = r.targetMarginPercent;
    return actionError(c_.protect(p));
  }
  std::optional<rules::ActionError> unprotect(const std::string& cgroup) override {
    return actionError(c_.unprotect(cgroup));
  }
  bool isProtected(const std::string& cgroup) const override { return c_.isProtected(cgroup); }
  bool allowed(const std::string& cgroup) const override { return c_.allowed(cgroup); }
  bool known(const std::string& cgroup) const override {
    auto has = [&](const std::shared_ptr<const CgroupTree>& t) {
      if (!t) return false;
      for (const auto& cg : t->cgroups)
        if (cg.path == cgroup) return true;
      return false;
    };
    if (has(w_.current())) return true;
    // A cgroup made since the last walk: walk once more.
    auto t = w_.walkNow();
    return t.ok() && has(*t);
  }

 private:
  static std::optional<rules::ActionError> actionError(std::optional<controller::OpError> e) {
    if (!e) return std::nullopt;
    using K = rules::ActionError::Kind;
    K k = K::kFailed;
    if (e->kind == controller::ErrorKind::kForbidden || e->kind == controller::ErrorKind::kBadInput)
      k = K::kRefused;
    else if (e->kind == controller::ErrorKind::kNotFound)
      k = K::kGone;
    return rules::ActionError{k, std::move(e->message)};
  }

  controller::Controller& c_;
  WalkScheduler& w_;
};

void App::buildRules() {
  if (controller_) ruleTarget_ = std::make_unique<RuleTarget>(*controller_, *walks_);
  ruleActions_ = std::make_unique<rules::Actions>(opts_.rules.actions, ruleTarget_.get());
  rules::ManagerOptions mo;
  mo.files = opts_.rules.files;
  mo.defaultIntervalMs = opts_.rules.evaluationIntervalMs;
  mo.externalLabels = opts_.rules.externalLabels;
  rules::ManagerBackend be;
  be.actions = ruleActions_.get();
  // One list of Alertmanagers (URLs and the config file, with their TLS and
  // auth) for the notifier and the puller.
  auto ams = rules::alertmanagerTargets(opts_.rules.notifier);
  if (!ams.ok()) throw std::invalid_argument("--rules.alertmanager: " + ams.error().message());
  if (opts_.rules.pull.enable && ams->empty())
    throw std::invalid_argument(
        "--rules.alertmanager.pull: no Alertmanager (--rules.alertmanager-url or "
        "--rules.alertmanager-config)");
  if (!ams->empty()) {
    auto no = opts_.rules.notifier;
    no.externalLabels = opts_.rules.externalLabels;
    if (no.externalUrl.empty()) no.externalUrl = defaultExternalUrl(opts_.listenAddress);
    std::string urls;
    for (const auto& a : *ams) urls += (urls.empty() ? "" : " ") + a.url.text;
    notifier_ = rules::Notifier::create(std::move(no), *ams);
    notifier_->start();
    be.notify = [n = notifier_.get()](rules::Rule& r, int64_t t, int64_t iv) {
      n->notifyRule(r, t, iv);
    };
    log::info("sending alerts to Alertmanager", "urls=" + log::quote(urls));
  }
  if (opts_.rules.pull.enable) {
    puller_ = std::make_unique<rules::AlertPuller>(opts_.rules.pull, std::move(*ams),
                                                   *ruleActions_);
  }
  if (history_) {
    history::History* h = history_.get();
    be.storage = h;
    be.append = [h](const promql::Labels& ls, int64_t t, double v) { h->append(ls, t, v); };
    be.select = [this, h](std::vector<promql::Matcher> m, int64_t iv) {
      auto id = h->select(std::move(m), iv);
      if (!id.ok()) {
        log::warn("rule selector not sampled", "err=" + log::quote(id.error().message()));
        return;
      }
      std::lock_guard<std::mutex> g(ruleSelectionsMu_);
      ruleSelections_.push_back(*id);
    };
    be.unselectAll = [this, h] {
      std::lock_guard<std::mutex> g(ruleSelectionsMu_);
      for (auto id : ruleSelections_) h->unselect(id);
      ruleSelections_.clear();
    };
  } else {
    // Without the history the rules see only their own output.
    ruleStorage_ = std::make_unique<promql::MemoryStorage>();
    promql::MemoryStorage* s = ruleStorage_.get();
    be.storage = s;
    be.append = [s](const promql::Labels& ls, int64_t t, double v) { s->append(ls, t, v); };
    if (!opts_.rules.files.empty())
      log::warn("rules run without the history: their selectors see no exporter series");
  }
  auto m = rules::Manager::create(mo, std::move(be));
  if (!m.ok()) throw std::invalid_argument("--rules.file: " + m.error().message());
  rules_ = std::move(*m);
  // Listed only when the engine can do something: rule files, a controller
  // for the webhook's actions, or the pull (its own metrics).
  if (!opts_.rules.files.empty() || controller_ || puller_) {
    rules::Manager* m = rules_.get();
    rules::Notifier* n = notifier_.get();
    rules::AlertPuller* p = puller_.get();
    metrics_.add("rules", std::make_unique<metrics::FunctionCollectable>(
                              [m, n, p](metrics::Sink& s) {
                                m->collect(s);
                                if (n) n->collect(s);
                                if (p) p->collect(s);
                              },
                              [n, p] {
                                auto v = rules::Manager::describe();
                                if (n)
                                  for (const auto* d : rules::Notifier::describe()) v.push_back(d);
                                if (p)
                                  for (const auto* d : rules::AlertPuller::describe()) v.push_back(d);
                                return v;
                              }));
  }
  rules_->start();
  // After the manager: its ticks end the holds the pull starts.
  if (puller_) puller_->start();
  if (!opts_.rules.files.empty())
    log::info("rules loaded", "groups=" + std::to_string(rules_->groupCount()));
}

bool App::reloadRules() { return rules_->reload().ok(); }

void App::buildFront() {
  web::FrontOptions fo;
  fo.listenAddress = opts_.listenAddress;
  fo.threads = opts_.webThreads;
  fo.gzipLevel = opts_.gzipLevel;
  fo.readTimeoutMs = static_cast<int>(opts_.webReadTimeoutMs);
  fo.maxConnections = opts_.webMaxConnections;
  fo.webConfigFile = opts_.webConfigFile;
  fo.telemetryPath = opts_.telemetryPath;
  fo.enabledCollectors = opts_.enabledCollectors();
  fo.controllerTokenFile = opts_.controller.tokenFile;
  fo.queryTimeoutMs = opts_.history.queryTimeoutMs;
  fo.queryMaxSamples = opts_.history.queryMaxSamples;
  fo.exporterMetrics = !opts_.disableExporterMetrics;
  web::FrontParts parts{*scraper_, metrics_};
  parts.locks = tracing_.lockSource();
  parts.report = tracing_.reportSource();
  parts.taskstats = taskstats_.get();
  parts.controller = controller_.get();
  parts.history = history_.get();
  parts.rules = rules_.get();
  parts.actions = ruleActions_.get();
  front_ = std::make_unique<web::Front>(std::move(fo), parts);
}

const http::Routes& App::routes() const { return front_->routes(); }

int App::port() const { return front_->port(); }

}  // namespace memcg
