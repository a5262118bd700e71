#include "exporter/app.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "collectors/registry.h"
#include "common/log.h"
#include "controller/controller_collector.h"
#include "exporter/api.h"
#include "exporter/version.h"
#include "exporter/web.h"
#include "metrics/text_format.h"

namespace memcg {
namespace {

/// The rule engine's metrics as a collector, so /metrics and /api/v1/metrics
/// list them with the rest. The engine is built after the scraper (it reads
/// the history, which samples through the scraper): it is looked up at collect.
class RulesCollector final : public Collector {
 public:
  RulesCollector(const std::unique_ptr<rules::Manager>& m,
                 const std::unique_ptr<rules::Notifier>& n, bool notifying)
      : m_(m), n_(n), notifying_(notifying) {}
  void collect(ScrapeContext&, metrics::Sink& sink) override {
    if (m_) m_->collect(sink);
    if (n_) n_->collect(sink);
  }
  std::vector<const metrics::Desc*> describe() const override {
    auto v = rules::Manager::describe();
    if (notifying_)
      for (const auto* d : rules::Notifier::describe()) v.push_back(d);
    return v;
  }

 private:
  const std::unique_ptr<rules::Manager>& m_;
  const std::unique_ptr<rules::Notifier>& n_;
  bool notifying_;
};

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
    tracing_ = startVmscanBackend(opts_.collectors.vmscan, layout, procfs);
  }
  if (enabled(on, "taskstats")) {
    // Exits of processes no scrape saw are attributed by the tracer's pid
    // cache (null while tracing is down: by sampling cgroup.procs then).
    TaskstatsExitAttribution exits;
    exits.lookup = tracing_.tracer.get();
    exits.layout = layout;
    taskstats_ = std::make_unique<TaskstatsService>(opts_.collectors.taskstats, procfs, exits);
  }
  CollectorInputs in;
  in.procfsRoot = procfs;
  in.memoryStat = opts_.collectors.memoryStat;
  in.memoryUsage = opts_.collectors.memoryUsage;
  in.memoryEvents = opts_.collectors.memoryEvents;
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
  if (controller_) {
    collectors.push_back(
        {"controller", controller::makeControllerCollector(*controller_)});
  }
  // Like the controller's, listed only when the engine can do something: rule
  // files, or a controller for the webhook's actions.
  if (!opts_.rules.files.empty() || controller_)
    collectors.push_back({"rules", std::make_unique<RulesCollector>(
                                      rules_, notifier_,
                                      !opts_.rules.notifier.alertmanagerUrls.empty())});
  collectors.push_back({"privileges", makePrivilegesCollector(capabilitiesDropped_), true});
  scraper_ = std::make_unique<Scraper>(*discovery_, std::move(collectors));
  for (const auto& n : on) log::info("collector enabled", "collector=" + n);
  if (auto t = discovery_->refresh(); !t.ok()) {
    log::warn("first cgroup discovery failed", "err=" + log::quote(t.error().message()));
  } else {
    log::info("cgroups discovered", "count=" + std::to_string((*t)->cgroups.size()) +
                                        " dropped=" + std::to_string((*t)->dropped));
  }
  walker_ = std::make_unique<DiscoveryWalker>(*discovery_);

  buildHistory();
  buildRules();
  buildRoutes();
  HttpServerOptions web;
  web.listenAddress = opts_.listenAddress;
  web.threads = opts_.webThreads;
  web.gzipLevel = opts_.gzipLevel;
  web.readTimeoutMs = opts_.webReadTimeoutSeconds * 1000;
  web.handshakeTimeoutMs = web.readTimeoutMs;
  web.maxConnections = opts_.webMaxConnections;
  if (!opts_.webConfigFile.empty()) {
    webAuth_ = std::make_unique<WebAuth>(opts_.webConfigFile);
    web.authorize = [auth = webAuth_.get()](const http::Request& r) { return auth->allowed(r); };
    if (webAuth_->tlsContext())
      web.tlsContext = [auth = webAuth_.get()] { return auth->tlsContext(); };
  }
  server_ = std::make_unique<HttpServer>(web, routes_);
  log::info("listening", "address=" + opts_.listenAddress +
                             std::string(" tls=") + (web.tlsContext ? "true" : "false") +
                             " port=" + std::to_string(server_->port()) +
                             " telemetry_path=" + opts_.telemetryPath);
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
  // The server first: no request may reach a part being torn down.
  server_.reset();
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
        c, *discovery_, controller::ActuatorOptions{}, tracing_.attribution());
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
  controllerApi_ = std::make_unique<controller::ControllerApi>(
      controller_.get(), c.tokenFile.empty()
                             ? std::string()
                             : controller::ControllerApi::readTokenFile(c.tokenFile));
}

void App::buildHistory() {
  if (!opts_.history.enable) return;
  Scraper& scraper = *scraper_;
  auto h = history::History::create(
      opts_.history, [&scraper](const ScrapeFilter& f, metrics::Sink& sink) {
        return scraper.scrape(sink, f);
      });
  if (!h.ok()) throw std::invalid_argument(h.error().message());
  history_ = std::move(*h);
  // The live view's series (its PromQL runs over the history).
  for (auto sel : web::kLiveViewSeries) {
    if (auto id = history_->select(sel); !id.ok())
      throw std::logic_error("live view selector: " + id.error().message());
  }
  history::ApiOptions ao;
  ao.timeoutMs = opts_.history.queryTimeoutMs;
  ao.maxSamples = opts_.history.queryMaxSamples;
  ao.version = kVersion;
  ao.revision = kRevision;
  ao.describe = [&scraper] { return scraper.describe(); };
  queryApi_ = std::make_unique<history::QueryApi>(*history_, std::move(ao));
  history_->start();
  std::string sel;
  for (const auto& m : opts_.history.match) sel += (sel.empty() ? "" : " ") + m;
  log::info("history started", "interval_ms=" + std::to_string(opts_.history.intervalMs) +
                                   " retention_ms=" + std::to_string(opts_.history.retentionMs) +
                                   " match=" + log::quote(sel));
}

/// The controller and discovery as the rule actions see them.
class App::RuleTarget final : public rules::ProtectTarget {
 public:
  RuleTarget(controller::Controller& c, Discovery& d) : c_(c), d_(d) {}
  std::optional<controller::OpError> protect(const controller::Protection& p) override {
    return c_.protect(p);
  }
  std::optional<controller::OpError> unprotect(const std::string& cgroup) override {
    return c_.unprotect(cgroup);
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
    if (has(d_.current())) return true;
    // A cgroup made since the last walk: walk once more.
    auto t = d_.refresh();
    return t.ok() && has(*t);
  }

 private:
  controller::Controller& c_;
  Discovery& d_;
};

void App::buildRules() {
  if (controller_) ruleTarget_ = std::make_unique<RuleTarget>(*controller_, *discovery_);
  ruleActions_ = std::make_unique<rules::Actions>(opts_.rules.actions, ruleTarget_.get());
  rules::ManagerOptions mo;
  mo.files = opts_.rules.files;
  mo.defaultIntervalMs = opts_.rules.evaluationIntervalMs;
  mo.externalLabels = opts_.rules.externalLabels;
  rules::ManagerBackend be;
  be.actions = ruleActions_.get();
  if (!opts_.rules.notifier.alertmanagerUrls.empty()) {
    auto no = opts_.rules.notifier;
    no.externalLabels = opts_.rules.externalLabels;
    if (no.externalUrl.empty()) no.externalUrl = defaultExternalUrl(opts_.listenAddress);
    auto n = rules::Notifier::create(std::move(no));
    if (!n.ok()) throw std::invalid_argument("--rules.alertmanager-url: " + n.error().message());
    notifier_ = std::move(*n);
    notifier_->start();
    be.notify = [n = notifier_.get()](rules::Rule& r, int64_t t, int64_t iv) {
      n->notifyRule(r, t, iv);
    };
    std::string urls;
    for (const auto& u : opts_.rules.notifier.alertmanagerUrls) urls += (urls.empty() ? "" : " ") + u;
    log::info("sending alerts to Alertmanager", "urls=" + log::quote(urls));
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
  rulesApi_ = std::make_unique<rules::RulesApi>(*rules_, *ruleActions_, *controllerApi_);
  rules_->start();
  if (!opts_.rules.files.empty())
    log::info("rules loaded", "groups=" + std::to_string(rules_->groupCount()));
}

bool App::reloadRules() { return rules_->reload().ok(); }

void App::buildRoutes() {
  Scraper& scraper = *scraper_;
  routes_.add(
      {"GET", opts_.telemetryPath, [this, &scraper](const http::Request&, http::Response& r) {
         r.body.clear();
         metrics::Sink sink;
         auto keep = scraper.scrape(sink);
         if (history_) history_->collectMetrics(sink);
         if (queryApi_) queryApi_->collectMetrics(sink);
         metrics::writeText(sink.families(), r.body);
         r.contentType = "text/plain; version=0.0.4; charset=utf-8";
         r.compressible = true;
       }});
  routes_.add({"GET", "/-/healthy", [](const http::Request&, http::Response& r) {
                 r = http::Response{200, "Healthy\n", "text/plain; charset=utf-8"};
               }});
  routes_.add({"GET", "/-/ready", [&scraper](const http::Request&, http::Response& r) {
                 r = scraper.ready()
                         ? http::Response{200, "Ready\n", "text/plain; charset=utf-8"}
                         : http::Response{503, "Not ready\n",
                                          "text/plain; charset=utf-8"};
               }});
  api::ApiParts parts{scraper, tracing_.tracer.get(), taskstats_.get()};
  if (history_) {  // served by the telemetry route above, beside the collectors'
    parts.extraMetrics = history::History::describeMetrics();
    for (const auto* d : history::QueryApi::describeMetrics()) parts.extraMetrics.push_back(d);
  }
  api::registerRoutes(routes_, std::move(parts));
  controllerApi_->registerRoutes(routes_);
  if (queryApi_) queryApi_->registerRoutes(routes_);
  rulesApi_->registerRoutes(routes_);
  web::registerRoutes(routes_,
                      web::renderIndex(opts_.telemetryPath, opts_.enabledCollectors()));
}

}  // namespace memcg
