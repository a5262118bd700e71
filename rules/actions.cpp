#include "rules/actions.h"

#include <charconv>
#include <cmath>
#include <tuple>

#include "common/log.h"
#include "metrics/descriptors.h"

namespace memcg::rules {
namespace {

const metrics::Desc kActionsDesc =
    metrics::nodeCounter("memcg_exporter_rule_actions_total",
                         "Actions of alerts with an action label (rules engine and "
                         "Alertmanager webhook), by rule, action and result (ok, exists, "
                         "refused, skipped, error).",
                         {"rule", "action", "result"});
const metrics::Desc kOwnedDesc = metrics::nodeGauge(
    "memcg_exporter_rule_protections",
    "Cgroups protected by alert actions now (hand-made ones excluded).");

/// A cgroup label the actions may act on: "/a/b", no "." or ".." component,
/// no empty component, not the root.
bool cgroupLabelOk(std::string_view c, std::string& why) {
  if (c.empty()) return why = "no cgroup label", false;
  if (c.front() != '/') return why = "cgroup label is not an absolute cgroup path", false;
  if (c == "/") return why = "the root cgroup is never protected", false;
  size_t i = 1;
  while (i <= c.size()) {
    size_t j = c.find('/', i);
    if (j == std::string_view::npos) j = c.size();
    std::string_view part = c.substr(i, j - i);
    if (part.empty() || part == "." || part == "..")
      return why = "cgroup label has an empty, '.' or '..' component", false;
    i = j + 1;
  }
  if (c.find('\0') != std::string_view::npos)
    return why = "cgroup label has a NUL", false;
  return true;
}

std::string fp(const std::string& rule, const std::string& cgroup) {
  return rule + "\x1f" + cgroup;
}

}  // namespace

Status parseMargin(std::string_view text, bool start, ProtectRequest& p) {
  std::string_view t = text;
  while (!t.empty() && t.back() == ' ') t.remove_suffix(1);
  while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
  double num = 0;
  auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), num);
  if (ec != std::errc() || ptr == t.data() || !(num >= 0) || std::isinf(num))
    return makeError(EINVAL, "margin",
                     "margin \"" + std::string(text) + "\" is not a number with a unit");
  std::string_view unit = t.substr(static_cast<size_t>(ptr - t.data()));
  if (unit == "%") {
    if (!(num > 0 && num < 100))
      return makeError(EINVAL, "margin", "percent margin must be above 0 and below 100");
    (start ? p.startMarginPercent : p.targetMarginPercent) = num;
    (start ? p.startMarginBytes : p.targetMarginBytes) = 0;
    return Ok{};
  }
  static const std::pair<std::string_view, double> kUnits[] = {
      {"", 1},
      {"B", 1},
      {"KiB", 1024.0},
      {"MiB", 1024.0 * 1024},
      {"GiB", 1024.0 * 1024 * 1024},
      {"TiB", 1024.0 * 1024 * 1024 * 1024}};
  for (const auto& [u, mul] : kUnits) {
    if (unit != u) continue;
    double bytes = std::floor(num * mul);
    if (bytes < 1 || bytes > 9.2e18)
      return makeError(EINVAL, "margin", "margin out of range");
    (start ? p.startMarginBytes : p.targetMarginBytes) = static_cast<uint64_t>(bytes);
    (start ? p.startMarginPercent : p.targetMarginPercent) = 0;
    return Ok{};
  }
  return makeError(
      EINVAL, "margin",
      "margin \"" + std::string(text) + "\": unit must be B, KiB, MiB, GiB, TiB or %");
}

Actions::Actions(ActionOptions opts, ProtectTarget* target)
    : opts_(std::move(opts)), target_(target) {
  ProtectRequest p;
  if (auto s = parseMargin(opts_.defaultStartMargin, true, p); !s.ok())
    throw std::invalid_argument("--rules.default-start-margin: " + s.error().detail);
  if (auto s = parseMargin(opts_.defaultTargetMargin, false, p); !s.ok())
    throw std::invalid_argument("--rules.default-target-margin: " + s.error().detail);
}

std::string Actions::count(const std::string& rule, const char* action,
                           const std::string& result, const std::string& cgroup,
                           const std::string& why) {
  // Once per change of (rule, cgroup) result: an alert firing at every
  // evaluation is one action, not one per evaluation.
  auto& last = lastResult_[fp(rule, cgroup) + "\x1f" + action];
  if (last == result) return result;
  last = result;
  ++counts_[{rule, action, result}];
  std::string kv = "rule=" + log::quote(rule) + " action=" + action +
                   " cgroup=" + log::quote(cgroup) + " result=" + result;
  if (!why.empty()) kv += " reason=" + log::quote(why);
  if (result == "ok" || result == "exists")
    log::info("rule action", kv);
  else
    log::warn("rule action not applied", kv);
  return result;
}

std::string Actions::firing(const promql::Labels& labels, Source src, int64_t nowMs,
                            int64_t nextEvalMs) {
  if (promql::labelValue(labels, "action") != "protect") return {};
  const std::string rule(promql::labelValue(labels, "alertname"));
  const std::string cgroup(promql::labelValue(labels, "cgroup"));
  std::lock_guard<std::mutex> g(mu_);
  auto it = owned_.find(cgroup);
  const int64_t firingUntil = std::max(nowMs, nextEvalMs);
  if (it != owned_.end()) {
    it->second.lastFiringMs = firingUntil;
    it->second.resolvedMs = 0;
    return "held";
  }
  std::string why;
  if (!cgroupLabelOk(cgroup, why)) return count(rule, "protect", "refused", cgroup, why);
  if (!target_) return count(rule, "protect", "skipped", cgroup, "controller disabled");
  if (!target_->known(cgroup))
    return count(rule, "protect", "refused", cgroup, "no such cgroup in discovery");
  if (!target_->allowed(cgroup))
    return count(rule, "protect", "refused", cgroup,
                 "cgroup does not match --controller.allow");
  if (target_->isProtected(cgroup))
    return count(rule, "protect", "exists", cgroup, "already protected (not by a rule)");
  ProtectRequest p;
  p.cgroup = cgroup;
  std::string_view sm = promql::labelValue(labels, "start_margin");
  std::string_view tm = promql::labelValue(labels, "target_margin");
  if (auto s = parseMargin(sm.empty() ? opts_.defaultStartMargin : sm, true, p); !s.ok())
    return count(rule, "protect", "refused", cgroup, "start_margin: " + s.error().detail);
  if (auto s = parseMargin(tm.empty() ? opts_.defaultTargetMargin : tm, false, p);
      !s.ok())
    return count(rule, "protect", "refused", cgroup,
                 "target_margin: " + s.error().detail);
  auto e = target_->protect(p);
  if (e) {
    const bool refused =
        e->kind == ActionError::Kind::kRefused || e->kind == ActionError::Kind::kGone;
    return count(rule, "protect", refused ? "refused" : "error", cgroup, e->message);
  }
  owned_[cgroup] = Owned{rule, src, firingUntil, 0};
  lastResult_.erase(fp(rule, cgroup) + "\x1funprotect");
  return count(rule, "protect", "ok", cgroup, {});
}

void Actions::resolved(const promql::Labels& labels, Source, int64_t nowMs) {
  if (promql::labelValue(labels, "action") != "protect") return;
  const std::string cgroup(promql::labelValue(labels, "cgroup"));
  std::lock_guard<std::mutex> g(mu_);
  lastResult_.erase(fp(std::string(promql::labelValue(labels, "alertname")), cgroup) +
                    "\x1fprotect");
  auto it = owned_.find(cgroup);
  if (it == owned_.end() || it->second.resolvedMs != 0) return;
  it->second.resolvedMs = std::max(nowMs, it->second.lastFiringMs);
}

void Actions::tick(int64_t nowMs) {
  std::lock_guard<std::mutex> g(mu_);
  for (auto it = owned_.begin(); it != owned_.end();) {
    Owned& o = it->second;
    // From the engine, an alert that stopped firing is resolved since it last
    // fired; from Alertmanager only a resolved notification starts the hold.
    int64_t since =
        o.resolvedMs ? o.resolvedMs : (o.source == Source::kRules ? o.lastFiringMs : 0);
    // Still firing as of this tick (hold 0): kept.
    const bool firingNow =
        o.resolvedMs == 0 && o.source == Source::kRules && nowMs <= o.lastFiringMs;
    if (since == 0 || firingNow || nowMs - since < opts_.holdMs) {
      ++it;
      continue;
    }
    const std::string cgroup = it->first, rule = o.rule;
    it = owned_.erase(it);
    if (!target_) continue;
    auto e = target_->unprotect(cgroup);
    // Not protected any more (removed by hand, or the cgroup went): nothing to undo.
    const std::string result = !e                                       ? "ok"
                               : e->kind == ActionError::Kind::kGone ? "gone"
                                                                        : "error";
    count(rule, "unprotect", result, cgroup, e ? e->message : "");
    lastResult_.erase(fp(rule, cgroup) + "\x1fprotect");
  }
}

nlohmann::json Actions::state() const {
  std::lock_guard<std::mutex> g(mu_);
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& [cg, o] : owned_) {
    arr.push_back({{"cgroup", cg},
                   {"rule", o.rule},
                   {"source", o.source == Source::kRules ? "rules" : "alertmanager"},
                   {"last_firing_ms", o.lastFiringMs},
                   {"resolved_ms", o.resolvedMs},
                   {"hold_ms", opts_.holdMs}});
  }
  return arr;
}

void Actions::collect(metrics::Sink& sink) const {
  std::lock_guard<std::mutex> g(mu_);
  auto& f = sink.family(kActionsDesc);
  for (const auto& [k, n] : counts_)
    f.add(
        {sink.keep(std::get<0>(k)), sink.keep(std::get<1>(k)), sink.keep(std::get<2>(k))},
        static_cast<double>(n));
  sink.add(kOwnedDesc, {}, static_cast<double>(owned_.size()));
}

std::vector<const metrics::Desc*> Actions::describe() {
  return {&kActionsDesc, &kOwnedDesc};
}

}  // namespace memcg::rules
