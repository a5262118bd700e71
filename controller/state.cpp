#include "controller/state.h"

#include "collectors/collector.h"
#include "controller/controller.h"
#include "controller/prot.h"
#include "controller/protection_table.h"

namespace memcg::controller {

ControllerDescs::ControllerDescs()
    : protectedCgroups(nodeGauge("memcg_controller_protected_cgroups",
                                 "Cgroups under controller protection.")),
      protectedCgroup(cgroupGauge("memcg_controller_protected",
                                  "1 for each cgroup under controller protection.")),
      margin(cgroupGauge(
          "memcg_controller_margin_bytes",
          "A protected cgroup's margins below its limit, bytes: start and target as "
          "configured (percent forms resolved at the last limit read), start_effective the "
          "start margin in force (the adaptive widening included).",
          {"margin"})),
      reclaimed(cgroupCounter(
          "memcg_controller_reclaimed_bytes_total",
          "Bytes reclaimed by the controller, by actuator (v1: usage before "
          "minus the lowered limit; v2: the larger of what memory.reclaim "
          "was asked for and the usage drop across the write; both lower bounds).",
          {"actuator"})),
      actions(cgroupCounter("memcg_controller_actions_total",
                            "Controller actuations by actuator and result (ok, partial, busy, "
                            "conflict, nothing, denied, gone, error).",
                            {"actuator", "result"})),
      latency(metrics::Desc{"memcg_controller_trigger_to_reclaim_seconds",
                            "Time from the controller's wake that found the margin short to the "
                            "return of the episode's first reclaiming write, by what woke it "
                            "(trigger: threshold (v1 eventfd), memory.events, psi (v2), poll).",
                            metrics::Type::kHistogram,
                            {"trigger"},
                            kLatencyLayout.exposedBounds()}),
      cpu(nodeCounter("memcg_controller_cpu_seconds_total",
                      "CPU time of the controller's waiter and worker threads.")),
      dryRun(nodeCounter("memcg_controller_dry_run_actions_total",
                         "Actuations the controller would have done in dry-run mode.")),
      restores(nodeCounter("memcg_controller_journal_restores_total",
                           "Limits a crash left lowered that the journal replay restored.")),
      throttled(nodeCounter("memcg_controller_throttled_total",
                            "Episodes cut short by a budget (reason: cpu, rate).", {"reason"})),
      dryRunMode(nodeGauge("memcg_controller_dry_run", "1 if the controller is in dry-run mode.")) {}

std::vector<const metrics::Desc*> ControllerDescs::all() const {
  return {&protectedCgroups, &protectedCgroup, &margin,   &reclaimed, &actions,   &latency,
          &cpu,              &dryRun,          &restores, &throttled, &dryRunMode};
}

nlohmann::json Controller::state() const {
  nlohmann::json prots = nlohmann::json::array();
  for (const auto& p : table_.byLabel()) {
    const std::string& label = p->p.cgroup;
    std::lock_guard<std::mutex> g(p->mu);
    const uint64_t margin = marginBytes(p->locked.lastUsage, p->locked.lastLimit);
    const uint64_t limit = p->locked.lastLimit;
    const Margins inForce = p->marginsLocked(limit, opts_.marginMaxFraction);
    const MarginAdapt& a = p->locked.adapt;
    nlohmann::json j = {{"cgroup", label},
                        {"start_margin_bytes", p->p.startBytes(p->locked.lastLimit)},
                        {"target_margin_bytes", p->p.targetBytes(p->locked.lastLimit)},
                        {"start_margin_effective_bytes", inForce.start},
                        {"target_margin_effective_bytes", inForce.target},
                        {"margin_adapt",
                         {{"enabled", opts_.marginMaxFraction > 0},
                          {"max_fraction", opts_.marginMaxFraction},
                          {"start_ceiling_bytes",
                           startCeiling(p->p, limit, opts_.marginMaxFraction)},
                          {"extra_bytes", inForce.start - p->p.startBytes(limit)},
                          {"last_overshoot_bytes", a.lastOvershoot},
                          {"max_overshoot_bytes", a.maxOvershoot},
                          {"widenings", a.widenings},
                          {"narrowings", a.narrowings}}},
                        {"floor_bytes", p->p.floorBytes},
                        {"usage_bytes", p->locked.lastUsage},
                        {"limit_bytes", p->locked.lastUnlimited ? nlohmann::json(nullptr)
                                                         : nlohmann::json(p->locked.lastLimit)},
                        {"margin_bytes", margin},
                        {"wake", waiter_->wakeName(*p)},
                        {"busy", p->locked.busy},
                        {"episodes", p->locked.episodes},
                        {"actions", p->locked.actions},
                        {"reclaimed_bytes", p->locked.reclaimed},
                        {"last_result", p->locked.lastOutcome},
                        {"protected_since_ms", p->sinceMs}};
    if (p->p.startMarginPercent > 0) j["start_margin_percent"] = p->p.startMarginPercent;
    if (p->p.targetMarginPercent > 0) j["target_margin_percent"] = p->p.targetMarginPercent;
    if (!p->locked.lastDetail.empty()) j["last_detail"] = p->locked.lastDetail;
    if (p->locked.lastActionMs) j["last_action_ms"] = p->locked.lastActionMs;
    prots.push_back(std::move(j));
  }
  nlohmann::json s = {
      {"enabled", true},
      {"dry_run", opts_.dryRun},
      {"mode", std::string(modeName(discovery_.layout().mode))},
      {"actuator", std::string(actuatorName(v2_ ? ActuatorKind::kV2MemoryReclaim
                                                : ActuatorKind::kV1LimitNudge))},
      {"allow", opts_.allow},
      {"protections", std::move(prots)},
      {"journal",
       {{"path", journal_ ? journal_->path() : ""},
        {"pending", journal_ ? journal_->pending().size() : 0},
        {"restores", stats_->journalRestores()}}},
      {"cpu_seconds", stats_->cpuSeconds()},
      {"dry_run_actions", stats_->dryRunActions()},
  };
  if (v2_) {
    s["v2_swappiness_supported"] = actuator_->v2SwappinessSupported();
    s["psi_trigger"] = opts_.v2WakePsi ? nlohmann::json(opts_.psiTrigger) : nlohmann::json(nullptr);
  }
  return s;
}

ControllerStats::ControllerStats(std::vector<const char*> wakeSources)
    : wakeSources_(std::move(wakeSources)) {
  for (const char* src : wakeSources_) latency_[src] = LatencyHistogram{};
}

void ControllerStats::recordAction(const std::string& cgroup, const std::string& actuator,
                                   const std::string& result, uint64_t reclaimed) {
  std::lock_guard<std::mutex> g(mu_);
  ActionCounters& c = counters_[cgroup];
  c.actions[{actuator, result}]++;
  c.reclaimed[actuator] += reclaimed;
}

void ControllerStats::observeLatency(const std::string& src, double seconds) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = latency_.find(src);
  if (it != latency_.end()) it->second.observe(seconds);
}

void ControllerStats::countThrottle(const std::string& reason) {
  std::lock_guard<std::mutex> g(mu_);
  throttled_[reason]++;
}

void ControllerStats::countDryRun() {
  std::lock_guard<std::mutex> g(mu_);
  dryRunActions_++;
}

void ControllerStats::setJournalRestores(uint64_t n) {
  std::lock_guard<std::mutex> g(mu_);
  journalRestores_ = n;
}

uint64_t ControllerStats::dryRunActions() const {
  std::lock_guard<std::mutex> g(mu_);
  return dryRunActions_;
}

uint64_t ControllerStats::journalRestores() const {
  std::lock_guard<std::mutex> g(mu_);
  return journalRestores_;
}

void ControllerStats::collect(metrics::Sink& sink, const ControllerDescs& d) const {
  std::lock_guard<std::mutex> g(mu_);
  for (const auto& [label, c] : counters_) {
    std::string_view l = sink.keep(label);
    for (const auto& [act, bytes] : c.reclaimed) {
      sink.add(d.reclaimed, {l, sink.keep(act)}, static_cast<double>(bytes));
    }
    for (const auto& [k, n] : c.actions) {
      sink.add(d.actions, {l, sink.keep(k.first), sink.keep(k.second)}, static_cast<double>(n));
    }
  }
  for (const char* src : wakeSources_) {
    latency_.at(src).addTo(sink, d.latency, {src});
  }
  sink.add(d.cpu, {}, cpuSeconds());
  sink.add(d.dryRun, {}, static_cast<double>(dryRunActions_));
  sink.add(d.restores, {}, static_cast<double>(journalRestores_));
  for (const char* reason : {"cpu", "rate"}) {
    auto it = throttled_.find(reason);
    sink.add(d.throttled, {reason}, it == throttled_.end() ? 0.0 : static_cast<double>(it->second));
  }
}

void Controller::collect(metrics::Sink& sink) const {
  const auto prots = table_.byLabel();
  sink.add(descs_.protectedCgroups, {}, static_cast<double>(prots.size()));
  for (const auto& p : prots) {
    std::string_view l = sink.keep(p->p.cgroup);
    std::lock_guard<std::mutex> g(p->mu);
    const uint64_t limit = p->locked.lastLimit;
    const Margins inForce = p->marginsLocked(limit, opts_.marginMaxFraction);
    sink.add(descs_.protectedCgroup, {l}, 1.0);
    sink.add(descs_.margin, {l, "start"}, static_cast<double>(p->p.startBytes(limit)));
    sink.add(descs_.margin, {l, "target"}, static_cast<double>(p->p.targetBytes(limit)));
    sink.add(descs_.margin, {l, "start_effective"}, static_cast<double>(inForce.start));
  }
  stats_->collect(sink, descs_);
  sink.add(descs_.dryRunMode, {}, opts_.dryRun ? 1.0 : 0.0);
}

std::vector<const metrics::Desc*> Controller::describe() const { return descs_.all(); }

}  // namespace memcg::controller
