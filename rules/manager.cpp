#include "rules/manager.h"
#include "common/clock.h"

#include <pthread.h>

#include <chrono>

#include "common/log.h"
#include "metrics/descriptors.h"

namespace memcg::rules {
namespace {


const metrics::Desc kReloadOk =
    metrics::nodeGauge("memcg_exporter_rules_config_last_reload_successful",
                       "1 when the last load of the rule files succeeded.");
const metrics::Desc kReloadTime = metrics::nodeGauge(
    "memcg_exporter_rules_config_last_reload_success_timestamp_seconds",
    "When the rule files were last loaded successfully.");
const metrics::Desc kEvalDuration = metrics::nodeGauge(
    "memcg_exporter_rule_group_last_duration_seconds",
    "Duration of the last evaluation of each rule group.", {"rule_group"});
const metrics::Desc kEvalTime =
    metrics::nodeGauge("memcg_exporter_rule_group_last_evaluation_timestamp_seconds",
                       "When each rule group was last evaluated.", {"rule_group"});
const metrics::Desc kEvals =
    metrics::nodeCounter("memcg_exporter_rule_evaluations_total",
                         "Evaluations of each rule group.", {"rule_group"});
const metrics::Desc kFailures =
    metrics::nodeCounter("memcg_exporter_rule_evaluation_failures_total",
                         "Rule evaluations that failed, by group.", {"rule_group"});
const metrics::Desc kMissed = metrics::nodeCounter(
    "memcg_exporter_rule_group_iterations_missed_total",
    "Group evaluations skipped because one ran past the next.", {"rule_group"});
const metrics::Desc kInterval =
    metrics::nodeGauge("memcg_exporter_rule_group_interval_seconds",
                       "The interval of each rule group.", {"rule_group"});
const metrics::Desc kAlerts =
    metrics::nodeGauge("memcg_exporter_alerts", "Active alerts by state.", {"state"});

/// A group's evaluation for time T runs at T + lag: the history samples on
/// the same multiples of the interval and stamps a pass with its tick, so
/// the sample stamped T is in when the group reads it (evaluating at T
/// itself races that pass and mostly reads the previous one, a whole interval
/// late). The evaluation time stays T (Prometheus' semantics).
int64_t evalLagMs(int64_t intervalMs) { return std::min<int64_t>(intervalMs / 4, 50); }

std::string groupKey(const std::string& file, const std::string& name) {
  return file + ";" + name;
}

}  // namespace

Manager::Manager(ManagerOptions opts, ManagerBackend backend)
    : opts_(std::move(opts)), backend_(std::move(backend)) {
  promql::EngineOptions eo;
  eo.defaultSubqueryStepMs = opts_.defaultIntervalMs;
  engine_ = promql::Engine(eo);
}

Result<std::unique_ptr<Manager>> Manager::create(ManagerOptions opts,
                                                 ManagerBackend backend) {
  auto cfgs = loadRuleFiles(opts.files);
  if (!cfgs.ok()) return cfgs.error();
  std::unique_ptr<Manager> m(new Manager(std::move(opts), std::move(backend)));
  m->install(std::move(*cfgs));
  m->lastReloadOkMs_ = clock::wallMs();
  return m;
}

Manager::~Manager() { stop(); }

void Manager::install(std::vector<GroupConfig> cfgs) {
  std::vector<std::shared_ptr<Group>> fresh;
  {
    std::lock_guard<std::mutex> g(mu_);
    std::map<std::string, std::shared_ptr<Group>> old;
    for (auto& gr : groups_) old[groupKey(gr->file(), gr->name())] = gr;
    for (auto& c : cfgs) {
      auto it = old.find(groupKey(c.file, c.name));
      if (it != old.end() && it->second->sameConfig(c, opts_.defaultIntervalMs)) {
        fresh.push_back(it->second);  // unchanged: keeps running as it was
        continue;
      }
      auto ng = std::make_shared<Group>(std::move(c), opts_.defaultIntervalMs,
                                        opts_.externalLabels);
      if (it != old.end()) ng->copyStateFrom(*it->second);
      fresh.push_back(std::move(ng));
    }
    std::map<const Group*, int64_t> next;
    for (auto& gr : fresh) {
      auto n = next_.find(gr.get());
      next[gr.get()] = n != next_.end() ? n->second : 0;
    }
    groups_ = fresh;
    next_ = std::move(next);
    changed_ = true;
  }
  if (backend_.unselectAll) backend_.unselectAll();
  if (backend_.select) {
    for (auto& gr : fresh)
      for (const auto& r : gr->rules()) {
        std::vector<std::vector<promql::Matcher>> sels;
        collectSelectors(*r->config().expr, sels);
        for (auto& s : sels) backend_.select(std::move(s), gr->intervalMs());
      }
  }
  cv_.notify_all();
}

Status Manager::reload() {
  auto cfgs = loadRuleFiles(opts_.files);
  if (!cfgs.ok()) {
    lastReloadOk_ = false;
    ++reloadFailures_;
    log::error("rules reload failed, keeping the old rules",
               "file=" + log::quote(cfgs.error().path) +
                   " err=" + log::quote(cfgs.error().detail));
    return cfgs.error();
  }
  size_t n = cfgs->size();
  install(std::move(*cfgs));
  lastReloadOk_ = true;
  lastReloadOkMs_ = clock::wallMs();
  log::info("rules loaded", "groups=" + std::to_string(n));
  return Ok{};
}

void Manager::start() {
  if (thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = false;
  }
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(),
                       "memcg-rules");  // its CPU is found by name (bench)
    loop();
  });
}

void Manager::stop() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Manager::evalGroup(Group& g, int64_t t) {
  g.eval(t, engine_, *backend_.storage, backend_.append);
  for (const auto& r : g.rules()) {
    if (!r->alerting()) continue;
    if (backend_.actions) {
      for (const auto& a : r->alerts()) {
        if (a.state == AlertState::kFiring)
          backend_.actions->firing(a.labels, Actions::Source::kRules, t,
                                   t + g.intervalMs());
        else if (a.state == AlertState::kInactive)
          backend_.actions->resolved(a.labels, Actions::Source::kRules, t);
      }
    }
    if (backend_.notify) backend_.notify(*r, t, g.intervalMs());
  }
  if (backend_.actions) backend_.actions->tick(t);
}

void Manager::evalAll(int64_t t) {
  std::vector<std::shared_ptr<Group>> gs;
  {
    std::lock_guard<std::mutex> g(mu_);
    gs = groups_;
  }
  for (auto& g : gs) evalGroup(*g, t);
  if (backend_.actions) backend_.actions->tick(t);
}

void Manager::loop() {
  // The actions' hold is checked at least every 100 ms even with no groups
  // (Alertmanager-only use).
  constexpr int64_t kTickMs = 100;
  std::unique_lock<std::mutex> lk(mu_);
  while (!stop_) {
    const int64_t now = clock::wallMs();
    std::vector<std::pair<std::shared_ptr<Group>, int64_t>> due;
    int64_t wake = now + kTickMs;
    for (auto& g : groups_) {
      int64_t& n = next_[g.get()];
      const int64_t iv = g->intervalMs();
      const int64_t lag = evalLagMs(iv);
      if (n == 0) n = (now / iv + 1) * iv;  // aligned to the interval
      if (n + lag <= now) {
        due.push_back({g, n});
        const int64_t missed = (now - lag - n) / iv;
        if (missed > 0) g->noteMissed(static_cast<uint64_t>(missed));
        n += (missed + 1) * iv;
      }
      wake = std::min(wake, n + lag);
    }
    changed_ = false;
    lk.unlock();
    for (auto& [g, t] : due) evalGroup(*g, t);
    if (due.empty() && backend_.actions) backend_.actions->tick(now);
    lk.lock();
    if (!due.empty() || stop_ || changed_) continue;
    cv_.wait_until(lk,
                   std::chrono::system_clock::time_point(std::chrono::milliseconds(wake)),
                   [&] { return stop_ || changed_; });
  }
}

nlohmann::json Manager::rulesJson(std::string_view type) const {
  std::vector<std::shared_ptr<Group>> gs;
  {
    std::lock_guard<std::mutex> g(mu_);
    gs = groups_;
  }
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& g : gs) arr.push_back(groupJson(*g, type));
  return {{"status", "success"}, {"data", {{"groups", arr}}}};
}

nlohmann::json Manager::alertsJson() const {
  std::vector<std::shared_ptr<Group>> gs;
  {
    std::lock_guard<std::mutex> g(mu_);
    gs = groups_;
  }
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& g : gs)
    for (const auto& r : g->rules())
      if (r->alerting())
        for (const auto& a : r->alerts())
          if (a.state != AlertState::kInactive) arr.push_back(alertJson(a));
  return {{"status", "success"}, {"data", {{"alerts", arr}}}};
}

size_t Manager::groupCount() const {
  std::lock_guard<std::mutex> g(mu_);
  return groups_.size();
}

void Manager::collect(metrics::Sink& sink) const {
  sink.add(kReloadOk, {}, lastReloadOk_ ? 1 : 0);
  sink.add(kReloadTime, {}, static_cast<double>(lastReloadOkMs_.load()) / 1000);
  std::vector<std::shared_ptr<Group>> gs;
  {
    std::lock_guard<std::mutex> g(mu_);
    gs = groups_;
  }
  double pending = 0, firing = 0;
  for (const auto& g : gs) {
    const auto st = g->stats();
    auto name = sink.keep(g->file() + ";" + g->name());
    sink.add(kEvalDuration, {name}, st.lastDurationSeconds);
    sink.add(kEvalTime, {name}, static_cast<double>(st.lastEvalMs) / 1000);
    sink.add(kEvals, {name}, static_cast<double>(st.evaluations));
    sink.add(kFailures, {name}, static_cast<double>(st.failures));
    sink.add(kMissed, {name}, static_cast<double>(st.missed));
    sink.add(kInterval, {name}, static_cast<double>(g->intervalMs()) / 1000);
    for (const auto& r : g->rules())
      if (r->alerting())
        for (const auto& a : r->alerts()) {
          if (a.state == AlertState::kPending) ++pending;
          if (a.state == AlertState::kFiring) ++firing;
        }
  }
  sink.add(kAlerts, {"pending"}, pending);
  sink.add(kAlerts, {"firing"}, firing);
  if (backend_.actions) backend_.actions->collect(sink);
}

std::vector<const metrics::Desc*> Manager::describe() {
  std::vector<const metrics::Desc*> v{&kReloadOk, &kReloadTime, &kEvalDuration,
                                      &kEvalTime, &kEvals,      &kFailures,
                                      &kMissed,   &kInterval,   &kAlerts};
  for (auto* d : Actions::describe()) v.push_back(d);
  return v;
}

}  // namespace memcg::rules
