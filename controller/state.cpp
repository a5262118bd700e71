#include "controller/state.h"

#include "collectors/collector.h"
#include "controller/controller.h"
#include "controller/prot.h"

namespace memcg::controller {

ControllerDescs::ControllerDescs()
    : protectedCgroups(nodeGauge("memcg_controller_protected_cgroups",
                                 "Cgroups under controller protection.")),
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
  return {&protectedCgroups, &reclaimed, &actions,   &latency,   &cpu,
          &dryRun,           &restores,  &throttled, &dryRunMode};
}

nlohmann::json Controller::state() const {
  nlohmann::json prots = nlohmann::json::array();
  std::lock_guard<std::mutex> g(mu_);
  for (const auto& [label, p] : prots_) {
    const uint64_t margin = marginBytes(p->locked.lastUsage, p->locked.lastLimit);
    nlohmann::json j = {{"cgroup", label},
                        {"start_margin_bytes", p->p.startBytes(p->locked.lastLimit)},
                        {"target_margin_bytes", p->p.targetBytes(p->locked.lastLimit)},
                        {"floor_bytes", p->p.floorBytes},
                        {"usage_bytes", p->locked.lastUsage},
                        {"limit_bytes", p->locked.lastUnlimited ? nlohmann::json(nullptr)
                                                         : nlohmann::json(p->locked.lastLimit)},
                        {"margin_bytes", margin},
                        {"wake", wakeName(*p)},
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
        {"restores", journalRestores_}}},
      {"cpu_seconds", waiterCpu_.load() + workerCpu_.load()},
      {"dry_run_actions", dryRunActions_},
  };
  if (v2_) {
    s["v2_swappiness_supported"] = actuator_->v2SwappinessSupported();
    s["psi_trigger"] = opts_.v2WakePsi ? nlohmann::json(opts_.psiTrigger) : nlohmann::json(nullptr);
  }
  return s;
}

void Controller::collect(metrics::Sink& sink) const {
  std::lock_guard<std::mutex> g(mu_);
  sink.add(descs_.protectedCgroups, {}, static_cast<double>(prots_.size()));
  for (const auto& [label, c] : counters_) {
    std::string_view l = sink.keep(label);
    for (const auto& [act, bytes] : c.reclaimed) {
      sink.add(descs_.reclaimed, {l, sink.keep(act)}, static_cast<double>(bytes));
    }
    for (const auto& [k, n] : c.actions) {
      sink.add(descs_.actions, {l, sink.keep(k.first), sink.keep(k.second)}, static_cast<double>(n));
    }
  }
  for (const char* src : wakeSources_) {
    latency_.at(src).addTo(sink, descs_.latency, {src});
  }
  sink.add(descs_.cpu, {}, waiterCpu_.load() + workerCpu_.load());
  sink.add(descs_.dryRun, {}, static_cast<double>(dryRunActions_));
  sink.add(descs_.restores, {}, static_cast<double>(journalRestores_));
  for (const char* reason : {"cpu", "rate"}) {
    auto it = throttled_.find(reason);
    sink.add(descs_.throttled, {reason}, it == throttled_.end() ? 0.0 : static_cast<double>(it->second));
  }
  sink.add(descs_.dryRunMode, {}, opts_.dryRun ? 1.0 : 0.0);
}

std::vector<const metrics::Desc*> Controller::describe() const { return descs_.all(); }

}  // namespace memcg::controller
