#include "web/api/v1/rules.h"
#include "common/clock.h"

#include <chrono>

#include "common/log.h"

namespace memcg::rules {
namespace {


/// Bounds the dedup table: Alertmanager re-sends the same fingerprints.
constexpr size_t kMaxFingerprints = 10000;

}  // namespace

RulesApi::RulesApi(Manager& manager, Actions& actions) : manager_(manager), actions_(actions) {}

http::Response RulesApi::handleWebhook(const std::string& body) {
  auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return http::jsonError(400, "body is not a JSON object");
  if (!j.contains("version") || !j["version"].is_string() || j["version"] != "4")
    return http::jsonError(400, "expected Alertmanager's webhook payload version \"4\"");
  if (!j.contains("alerts") || !j["alerts"].is_array())
    return http::jsonError(400, "missing array field alerts");
  nlohmann::json results = nlohmann::json::array();
  const int64_t now = clock::wallMs();
  for (const auto& a : j["alerts"]) {
    if (!a.is_object() || !a.contains("labels") || !a["labels"].is_object()) {
      results.push_back({{"result", "bad alert"}});
      continue;
    }
    promql::Labels ls;
    for (const auto& [k, v] : a["labels"].items())
      if (v.is_string()) ls.push_back({k, v.get<std::string>()});
    ls = promql::makeLabels(std::move(ls));
    const std::string status = a.value("status", "");
    std::string fpr = a.value("fingerprint", "");
    if (fpr.empty()) fpr = std::to_string(promql::hashLabels(ls));
    nlohmann::json r = {{"fingerprint", fpr},
                        {"status", status},
                        {"cgroup", std::string(promql::labelValue(ls, "cgroup"))}};
    if (promql::labelValue(ls, "action") != "protect") {
      r["result"] = "no action";
      results.push_back(r);
      continue;
    }
    {
      std::lock_guard<std::mutex> g(mu_);
      auto it = seen_.find(fpr);
      if (it != seen_.end() && it->second == status && status == "resolved") {
        r["result"] = "duplicate";
        results.push_back(r);
        continue;
      }
      if (seen_.size() >= kMaxFingerprints) seen_.clear();
      seen_[fpr] = status;
    }
    if (status == "firing") {
      r["result"] = actions_.firing(ls, Actions::Source::kAlertmanager, now);
    } else if (status == "resolved") {
      actions_.resolved(ls, Actions::Source::kAlertmanager, now);
      r["result"] = "hold";
    } else {
      r["result"] = "bad status";
    }
    results.push_back(r);
  }
  http::Response resp;
  http::replyJson(resp, {{"results", results}});
  return resp;
}

http::Response RulesApi::handleReload() {
  auto s = manager_.reload();
  if (!s.ok())
    return http::jsonError(500, "reload failed, old rules kept: " + s.error().path + ": " +
                                    s.error().detail);
  http::Response resp;
  http::replyJson(resp, {{"status", "success"}, {"groups", manager_.groupCount()}});
  return resp;
}

void RulesApi::registerRoutes(http::Routes& routes) {
  routes.add({"GET", "/api/v1/rules", [this](const http::Request& q, http::Response& r) {
                const std::string type = q.param("type");
                if (!type.empty() && type != "alert" && type != "record")
                  return http::replyError(r, 400, "type must be alert or record");
                http::replyJson(r, manager_.rulesJson(type));
              }});
  routes.add({"GET", "/api/v1/alerts", [this](const http::Request&, http::Response& r) {
                http::replyJson(r, manager_.alertsJson());
              }});
  routes.add({"POST", "/-/reload",
              [this](const http::Request&, http::Response& r) { r = handleReload(); },
              http::Access::kToken});
  routes.add({"POST", "/api/v1/alertmanager",
              [this](const http::Request& q, http::Response& r) { r = handleWebhook(q.body); },
              http::Access::kToken});
}

}  // namespace memcg::rules
