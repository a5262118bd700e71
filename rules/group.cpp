#include "rules/group.h"

#include <charconv>
#include <chrono>
#include <cmath>
#include <ctime>

#include "common/log.h"
#include "rules/template.h"

namespace memcg::rules {
namespace {

using promql::Label;
using promql::Labels;

Labels withName(Labels ls, std::string_view name) {
  ls.push_back({std::string(promql::kMetricName), std::string(name)});
  return promql::makeLabels(std::move(ls));
}

Labels alertSeries(const Alert& a, const char* metric, bool withState) {
  Labels ls = a.labels;
  ls.push_back({std::string(promql::kMetricName), metric});
  if (withState) ls.push_back({"alertstate", std::string(alertStateName(a.state))});
  return promql::makeLabels(std::move(ls));
}

nlohmann::json labelsJson(const Labels& ls) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& l : ls) j[l.name] = l.value;
  return j;
}

std::string goValue(double v) {
  // Prometheus' API renders alert values with strconv 'e' (%e, shortest).
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string s(buf, r.ptr);
  size_t e = s.find('e');
  std::string mant = s.substr(0, e), ex = s.substr(e + 1);
  int x = std::stoi(ex);
  char eb[16];
  std::snprintf(eb, sizeof eb, "e%c%02d", x < 0 ? '-' : '+', std::abs(x));
  return mant + eb;
}

}  // namespace

std::string_view alertStateName(AlertState s) {
  switch (s) {
    case AlertState::kInactive: return "inactive";
    case AlertState::kPending: return "pending";
    case AlertState::kFiring: return "firing";
  }
  return "inactive";
}

std::string rfc3339(int64_t ms) {
  time_t sec = static_cast<time_t>(ms / 1000);
  struct tm tm {};
  gmtime_r(&sec, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[80];
  std::snprintf(out, sizeof out, "%s.%03dZ", buf, static_cast<int>(ms % 1000));
  return out;
}

Result<std::vector<std::pair<Labels, double>>> Rule::eval(
    int64_t t, const promql::Engine& engine, const promql::Storage& storage, int limit,
    const std::map<std::string, std::string>& externalLabels) {
  auto q = engine.instantQuery(storage, *cfg_.expr, t);
  if (!q.ok()) return makeError(EINVAL, cfg_.name, q.error().detail);
  // A scalar result is one sample without labels (EngineQueryFunc).
  std::vector<std::pair<Labels, double>> samples;
  if (q->type == promql::ValueType::kScalar) {
    samples.push_back({{}, q->scalar});
  } else if (q->type == promql::ValueType::kVector) {
    for (auto& s : q->series)
      if (!s.points.empty()) samples.push_back({std::move(s.labels), s.points.back().v});
  } else {
    return makeError(EINVAL, cfg_.name, "rule result is not a vector or scalar");
  }

  std::vector<std::pair<Labels, double>> out;
  if (!cfg_.alerting) {
    std::set<Labels, LabelsLess> seen;
    for (auto& [ls, v] : samples) {
      Labels l = ls;
      for (const auto& [n, val] : cfg_.labels) {
        // Not [&]: clang 14 (the fuzz build) cannot capture a structured binding.
        std::erase_if(l, [&name = n](const Label& x) { return x.name == name; });
        l.push_back({n, val});
      }
      l = withName(std::move(l), cfg_.name);
      if (!seen.insert(l).second)
        return makeError(EINVAL, cfg_.name,
                         "vector contains metrics with the same labelset after applying rule labels");
      out.push_back({std::move(l), v});
    }
    if (limit > 0 && static_cast<int>(out.size()) > limit)
      return makeError(EINVAL, cfg_.name,
                       "exceeded limit of " + std::to_string(limit) + " with " +
                           std::to_string(out.size()) + " series");
    return out;
  }

  std::map<uint64_t, Alert> fresh;
  for (auto& [ls, v] : samples) {
    std::map<std::string, std::string> lm;
    for (const auto& l : ls) lm[l.name] = l.value;
    TemplateData data{&lm, &externalLabels, v};
    auto expand = [&](const std::string& text) {
      auto r = expandTemplate(text, data);
      if (!r.ok()) {
        log::warn("expanding alert template failed",
                  "alert=" + log::quote(cfg_.name) + " err=" + log::quote(r.error().detail));
        return "<error expanding template: " + r.error().detail + ">";
      }
      return *r;
    };
    Labels l;
    for (const auto& x : ls)
      if (x.name != promql::kMetricName) l.push_back(x);
    for (const auto& [n, text] : cfg_.labels) {
      std::erase_if(l, [&name = n](const Label& x) { return x.name == name; });
      l.push_back({n, expand(text)});
    }
    std::erase_if(l, [](const Label& x) { return x.name == "alertname"; });
    l.push_back({"alertname", cfg_.name});
    l = promql::makeLabels(std::move(l));
    Labels ann;
    for (const auto& [n, text] : cfg_.annotations) ann.push_back({n, expand(text)});
    ann = promql::makeLabels(std::move(ann));
    const uint64_t h = promql::hashLabels(l);
    if (fresh.count(h))
      return makeError(EINVAL, cfg_.name,
                       "vector contains metrics with the same labelset after applying alert labels");
    Alert a;
    a.labels = std::move(l);
    a.annotations = std::move(ann);
    a.activeAtMs = t;
    a.state = AlertState::kPending;
    a.value = v;
    fresh.emplace(h, std::move(a));
  }

  std::lock_guard<std::mutex> g(mu_);
  for (auto& [h, a] : fresh) {
    auto it = active_.find(h);
    if (it != active_.end() && it->second.state != AlertState::kInactive) {
      it->second.value = a.value;
      it->second.annotations = a.annotations;
      continue;
    }
    active_[h] = std::move(a);
  }
  int numActive = 0;
  for (auto it = active_.begin(); it != active_.end();) {
    Alert& a = it->second;
    if (!fresh.count(it->first)) {
      bool keepFiring = false;
      if (a.state == AlertState::kFiring && cfg_.keepFiringForMs > 0) {
        if (a.keepFiringSinceMs == 0) a.keepFiringSinceMs = t;
        if (t - a.keepFiringSinceMs < cfg_.keepFiringForMs) keepFiring = true;
      }
      bool erase = a.state == AlertState::kPending ||
                   (a.resolvedAtMs != 0 && t - a.resolvedAtMs > kResolvedRetentionMs);
      if (a.state != AlertState::kInactive && !keepFiring) {
        a.state = AlertState::kInactive;
        a.resolvedAtMs = t;
      }
      if (erase) {
        it = active_.erase(it);
        continue;
      }
      if (!keepFiring) {
        ++it;
        continue;
      }
    } else {
      a.keepFiringSinceMs = 0;
    }
    ++numActive;
    if (a.state == AlertState::kPending && t - a.activeAtMs >= cfg_.forMs) {
      a.state = AlertState::kFiring;
      a.firedAtMs = t;
    }
    out.push_back({alertSeries(a, "ALERTS", true), 1});
    out.push_back({alertSeries(a, "ALERTS_FOR_STATE", false),
                   static_cast<double>(a.activeAtMs / 1000)});
    ++it;
  }
  if (limit > 0 && numActive > limit) {
    active_.clear();
    return makeError(EINVAL, cfg_.name,
                     "exceeded limit of " + std::to_string(limit) + " with " +
                         std::to_string(numActive) + " alerts");
  }
  return out;
}

std::vector<Alert> Rule::alerts() const {
  std::lock_guard<std::mutex> g(mu_);
  std::vector<Alert> v;
  for (const auto& [_, a] : active_) v.push_back(a);
  return v;
}

void Rule::copyStateFrom(Rule& old) {
  std::scoped_lock g(mu_, old.mu_);
  active_ = old.active_;
  previous = old.previous;
  health_ = old.health_;
  lastError_ = old.lastError_;
  lastEvalMs_ = old.lastEvalMs_;
  lastEvalSeconds_ = old.lastEvalSeconds_;
}

void Rule::setResult(int64_t t, double seconds, std::string err) {
  std::lock_guard<std::mutex> g(mu_);
  lastEvalMs_ = t;
  lastEvalSeconds_ = seconds;
  health_ = err.empty() ? "ok" : "err";
  lastError_ = std::move(err);
}

std::string Rule::health() const {
  std::lock_guard<std::mutex> g(mu_);
  return health_;
}
std::string Rule::lastError() const {
  std::lock_guard<std::mutex> g(mu_);
  return lastError_;
}
int64_t Rule::lastEvalMs() const {
  std::lock_guard<std::mutex> g(mu_);
  return lastEvalMs_;
}
double Rule::lastEvalSeconds() const {
  std::lock_guard<std::mutex> g(mu_);
  return lastEvalSeconds_;
}

Group::Group(GroupConfig cfg, int64_t defaultIntervalMs,
             std::map<std::string, std::string> externalLabels)
    : cfg_(std::move(cfg)),
      intervalMs_(cfg_.intervalMs > 0 ? cfg_.intervalMs : defaultIntervalMs),
      externalLabels_(std::move(externalLabels)) {
  for (const auto& r : cfg_.rules) rules_.push_back(std::make_unique<Rule>(r));
}

void Group::eval(int64_t t, const promql::Engine& engine, const promql::Storage& storage,
                 const AppendFn& append) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  uint64_t failures = 0;
  for (auto& r : rules_) {
    const auto rs = Clock::now();
    auto res = r->eval(t, engine, storage, cfg_.limit, externalLabels_);
    const double secs = std::chrono::duration<double>(Clock::now() - rs).count();
    if (!res.ok()) {
      ++failures;
      r->setResult(t, secs, res.error().detail);
      log::warn("rule evaluation failed", "group=" + log::quote(cfg_.name) + " rule=" +
                                              log::quote(r->name()) +
                                              " err=" + log::quote(res.error().detail));
      continue;
    }
    r->setResult(t, secs, {});
    std::set<Labels, Rule::LabelsLess> now;
    for (const auto& [ls, v] : *res) {
      append(ls, t, v);
      now.insert(ls);
    }
    for (const auto& ls : r->previous)
      if (!now.count(ls)) append(ls, t, promql::staleNaN());
    r->previous = std::move(now);
  }
  std::lock_guard<std::mutex> g(mu_);
  ++stats_.evaluations;
  stats_.failures += failures;
  stats_.lastDurationSeconds = std::chrono::duration<double>(Clock::now() - start).count();
  stats_.lastEvalMs = t;
}

void Group::copyStateFrom(Group& old) {
  auto key = [](const Rule& r) {
    std::string k = r.name();
    for (const auto& [n, v] : r.config().labels) k += "\x1f" + n + "=" + v;
    return k;
  };
  std::map<std::string, Rule*> byKey;
  for (auto& r : old.rules_) byKey.emplace(key(*r), r.get());
  for (auto& r : rules_) {
    auto it = byKey.find(key(*r));
    if (it != byKey.end() && it->second->alerting() == r->alerting()) r->copyStateFrom(*it->second);
  }
  std::scoped_lock g(mu_, old.mu_);
  stats_ = old.stats_;
}

bool Group::sameConfig(const GroupConfig& o, int64_t defaultIntervalMs) const {
  if (o.file != cfg_.file || o.name != cfg_.name || o.limit != cfg_.limit ||
      (o.intervalMs > 0 ? o.intervalMs : defaultIntervalMs) != intervalMs_ ||
      o.rules.size() != cfg_.rules.size())
    return false;
  for (size_t i = 0; i < o.rules.size(); ++i)
    if (o.rules[i].key() != cfg_.rules[i].key()) return false;
  return true;
}

GroupStats Group::stats() const {
  std::lock_guard<std::mutex> g(mu_);
  return stats_;
}

void Group::noteMissed(uint64_t n) {
  std::lock_guard<std::mutex> g(mu_);
  stats_.missed += n;
}

nlohmann::json alertJson(const Alert& a) {
  nlohmann::json j;
  j["labels"] = labelsJson(a.labels);
  j["annotations"] = labelsJson(a.annotations);
  j["state"] = alertStateName(a.state);
  j["activeAt"] = rfc3339(a.activeAtMs);
  j["value"] = goValue(a.value);
  return j;
}

nlohmann::json groupJson(const Group& g, std::string_view type) {
  nlohmann::json rules = nlohmann::json::array();
  for (const auto& r : g.rules()) {
    if ((type == "alert" && !r->alerting()) || (type == "record" && r->alerting())) continue;
    const auto& c = r->config();
    nlohmann::json j;
    j["name"] = c.name;
    j["query"] = c.exprText;
    nlohmann::json labels = nlohmann::json::object();
    for (const auto& [n, v] : c.labels) labels[n] = v;
    j["labels"] = labels;
    j["health"] = r->health();
    j["lastError"] = r->lastError();
    j["evaluationTime"] = r->lastEvalSeconds();
    j["lastEvaluation"] = rfc3339(r->lastEvalMs());
    if (r->alerting()) {
      j["type"] = "alerting";
      j["duration"] = static_cast<double>(c.forMs) / 1000;
      j["keepFiringFor"] = static_cast<double>(c.keepFiringForMs) / 1000;
      nlohmann::json ann = nlohmann::json::object();
      for (const auto& [n, v] : c.annotations) ann[n] = v;
      j["annotations"] = ann;
      nlohmann::json alerts = nlohmann::json::array();
      std::string state = "inactive";
      for (const auto& a : r->alerts()) {
        if (a.state == AlertState::kInactive) continue;
        if (a.state == AlertState::kFiring) state = "firing";
        else if (state != "firing") state = "pending";
        alerts.push_back(alertJson(a));
      }
      j["state"] = state;
      j["alerts"] = alerts;
    } else {
      j["type"] = "recording";
    }
    rules.push_back(j);
  }
  const auto st = g.stats();
  nlohmann::json j;
  j["name"] = g.name();
  j["file"] = g.file();
  j["rules"] = rules;
  j["interval"] = static_cast<double>(g.intervalMs()) / 1000;
  j["limit"] = g.limit();
  j["evaluationTime"] = st.lastDurationSeconds;
  j["lastEvaluation"] = rfc3339(st.lastEvalMs);
  return j;
}

}  // namespace memcg::rules
